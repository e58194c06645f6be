/* azure-tdx (OID 1.3.9900.4.3), the issuer's side: the vTPM core (vtpm.c) with Azure's HCL
 * AK (persistent 0x81000003) and, as InstanceInfo, the TD quote Azure's IMDS makes of the
 * TDREPORT in the HCL report, with the HCL report's runtime data. As Constellation's
 * internal/attestation/azure/tdx/issuer.go (docs/tdx.md):
 *   - the HCL report from NV 0x01400001; its IGVM request data at 1216: report type (+8)
 *     must be 4 (TDX), runtime data size (+16), runtime data (+20); the TDREPORT is
 *     bytes 32..1056;
 *   - POST <imds>/acc/tdquote, Metadata: true, {"report": base64url(TDREPORT), unpadded}
 *     -> 200 {"quote": base64url(quote), unpadded};
 *   - InstanceInfo = {"AttestationReport":"<base64>","RuntimeData":"<base64>"} (Go's
 *     encoding/json of struct{AttestationReport, RuntimeData []byte}: standard, padded).
 * The validator's side is azure_tdx_verify.c (tools only). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "attest/azure_tdx.h"
#include "attest/hcl.h"
#include "attest/vtpm.h"
#include "base/base.h"
#include "net/net.h"
#include "tpm/tpm.h"

#define HCL_NV_MAX	 (16 * 1024) /* Azure's is 2600 bytes; a TPM's NV index is smaller */
#define TDQUOTE_TIMEOUT	 10000	     /* ms; IMDS answers in well under a second */
#define TDQUOTE_RESP_MAX (128 * 1024)

static uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int azure_tdx_hcl_parse(const uint8_t *b, size_t len, const uint8_t **tdreport,
			const uint8_t **runtime, size_t *runtime_len, char *err, size_t errlen)
{
	uint32_t type, size;

	if (len < AZURE_TDX_HCL_TYPE_OFF + 4)
		return errbuf_set(err, errlen, "HCL report of %zu bytes has no report type at %d",
				  len, AZURE_TDX_HCL_TYPE_OFF);
	type = le32_get(b + AZURE_TDX_HCL_TYPE_OFF);
	if (type != AZURE_TDX_HCL_TYPE_TDX)
		return errbuf_set(err, errlen, "HCL report type %u, not 4 (TDX): not a TDX VM",
				  type);
	if (len < AZURE_TDX_HCL_RT_SIZE_OFF + 4)
		return errbuf_set(err, errlen, "HCL report of %zu bytes has no runtime data size",
				  len);
	size = le32_get(b + AZURE_TDX_HCL_RT_SIZE_OFF);
	if (size > len - AZURE_TDX_HCL_RT_OFF)
		return errbuf_set(err, errlen,
				  "HCL runtime data of %u bytes at %d is past the report's "
				  "%zu bytes",
				  size, AZURE_TDX_HCL_RT_OFF, len);
	*tdreport = b + AZURE_TDX_TDREPORT_OFF;
	*runtime = b + AZURE_TDX_HCL_RT_OFF;
	*runtime_len = size;
	return 0;
}

int azure_tdx_tdquote_answer(const char *body, size_t len, uint8_t *quote, size_t cap,
			     size_t *quote_len, char *err, size_t errlen)
{
	struct json_object *o, *v;
	const char *s;
	size_t n;
	char *padded;
	int r;

	o = json_parse_exact(body, len);
	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "quote", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		json_object_put(o);
		return errbuf_set(err, errlen, "IMDS tdquote: no {\"quote\": string}");
	}
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	/* base64url without padding, as Go's RawURLEncoding: '=' is refused */
	if (!n || n % 4 == 1 || memchr(s, '=', n) || n > BASE64_ENCODED_LEN(TDX_QUOTE_MAX)) {
		json_object_put(o);
		return errbuf_set(err, errlen,
				  "IMDS tdquote: the quote is not unpadded base64url of "
				  "at most %d bytes",
				  TDX_QUOTE_MAX);
	}
	padded = malloc(n + 4);
	if (!padded) {
		json_object_put(o);
		return -ENOMEM;
	}
	memcpy(padded, s, n);
	while (n % 4)
		padded[n++] = '=';
	r = base64_decode(BASE64_URL, padded, n, quote, cap, quote_len);
	free(padded);
	json_object_put(o);
	if (r < 0)
		return errbuf_set(err, errlen,
				  "IMDS tdquote: the quote is not base64url (or larger "
				  "than %zu bytes)",
				  cap);
	return 0;
}

int azure_tdx_instance_info(const uint8_t *quote, size_t qlen, const uint8_t *runtime, size_t rlen,
			    uint8_t *out, size_t cap, size_t *len)
{
	static const char k1[] = "{\"AttestationReport\":\"", k2[] = "\",\"RuntimeData\":\"";
	size_t need =
	    sizeof k1 - 1 + base64_encoded_len(qlen) + sizeof k2 - 1 + base64_encoded_len(rlen) + 2;
	char *p = (char *)out;

	if (need + 1 > cap)
		return -ENOBUFS;
	memcpy(p, k1, sizeof k1 - 1);
	p += sizeof k1 - 1;
	base64_encode(BASE64_STD, quote, qlen, p, base64_encoded_len(qlen) + 1);
	p += base64_encoded_len(qlen);
	memcpy(p, k2, sizeof k2 - 1);
	p += sizeof k2 - 1;
	base64_encode(BASE64_STD, runtime, rlen, p, base64_encoded_len(rlen) + 1);
	p += base64_encoded_len(rlen);
	memcpy(p, "\"}", 2);
	*len = need;
	return 0;
}

static int instance_info(const struct vtpm_issue *in, uint8_t *out, size_t cap, size_t *len,
			 char *err, size_t errlen)
{
	const uint8_t *td, *rt;
	uint8_t *hcl = malloc(HCL_NV_MAX), *quote = malloc(TDX_QUOTE_MAX);
	char *body = malloc(16 + BASE64_ENCODED_LEN(AZURE_TDX_TDREPORT_LEN)), url[256], why[200];
	struct http_response resp = {0};
	struct http_req rq = {
	    .method = "POST",
	    .headers = "Metadata: true\r\nContent-Type: application/json\r\n",
	};
	size_t hl, rl, ql, bl;
	int r = -ENOMEM;

	if (!hcl || !quote || !body)
		goto out;
	if ((r = tpm_nv_read(in->tpm, HCL_NV_INDEX, hcl, HCL_NV_MAX, &hl, why, sizeof why)) < 0) {
		errbuf_set(err, errlen, "HCL report (NV 0x%08x): %s", HCL_NV_INDEX, why);
		goto out;
	}
	if ((r = azure_tdx_hcl_parse(hcl, hl, &td, &rt, &rl, err, errlen)) < 0)
		goto out;
	/* {"report":"<base64url, unpadded>"} */
	bl = (size_t)sprintf(body, "{\"report\":\"");
	base64_encode(BASE64_URL, td, AZURE_TDX_TDREPORT_LEN, body + bl,
		      BASE64_ENCODED_LEN(AZURE_TDX_TDREPORT_LEN) + 1);
	bl += base64_encoded_len(AZURE_TDX_TDREPORT_LEN);
	while (body[bl - 1] == '=')
		bl--;
	memcpy(body + bl, "\"}", 2);
	bl += 2;
	rq.body = body;
	rq.body_len = bl;
	snprintf(url, sizeof url, "%s/acc/tdquote", in->env->imds);
	if ((r = http_request(url, &rq, TDQUOTE_TIMEOUT, TDQUOTE_RESP_MAX, &resp, why,
			      sizeof why)) < 0) {
		errbuf_set(err, errlen, "IMDS tdquote: %s", why);
		goto out;
	}
	if (resp.status != 200) {
		errbuf_set(err, errlen, "IMDS tdquote: HTTP status %d", resp.status);
		r = -EIO;
		goto out;
	}
	if ((r = azure_tdx_tdquote_answer(resp.body, resp.len, quote, TDX_QUOTE_MAX, &ql, err,
					  errlen)) < 0)
		goto out;
	if ((r = azure_tdx_instance_info(quote, ql, rt, rl, out, cap, len)) < 0)
		errbuf_set(err, errlen, "InstanceInfo larger than %zu bytes", cap);
out:
	http_response_free(&resp);
	free(hcl);
	free(quote);
	free(body);
	return r;
}

const struct vtpm_variant vtpm_azure_tdx = {
    .name = "azure-tdx",
    .oid = {0x2b, 0xcd, 0x2c, 0x04, 0x03}, /* 1.3.9900.4.3 */
    .oid_len = 5,
    .ak = VTPM_AK_HCL,
    .instance_info = instance_info,
};
