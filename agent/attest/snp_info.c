/* snp.InstanceInfo's JSON, written as Go writes it and read back only in that form; the AK
 * digest of aws-sev-snp. See snp_info.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>
#include <json-c/json.h>
#include <tss2/tss2_mu.h>

#include "attest/snp_info.h"
#include "base/base.h"
#include "base/der.h"

struct jw {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void put(struct jw *j, const char *s, size_t n)
{
	if (j->err || n > j->cap - j->len) {
		j->err = -ENOBUFS;
		return;
	}
	memcpy(j->p + j->len, s, n);
	j->len += n;
}

static void puts_(struct jw *j, const char *s)
{
	put(j, s, strlen(s));
}

static void put_b64(struct jw *j, const void *b, size_t n)
{
	size_t need = base64_encoded_len(n) + 3;

	if (j->err || need > j->cap - j->len) {
		j->err = -ENOBUFS;
		return;
	}
	j->p[j->len++] = '"';
	base64_encode(BASE64_STD, b, n, (char *)j->p + j->len, j->cap - j->len);
	j->len += base64_encoded_len(n);
	j->p[j->len++] = '"';
}

/* A certificate as the base64 of its PEM (pem.EncodeToMemory), or null. */
static void put_pem(struct jw *j, const uint8_t *der, size_t len)
{
	char *pem;
	size_t cap = base64_encoded_len(len) + len / 48 + 80;
	int n;

	if (!der) {
		puts_(j, "null");
		return;
	}
	if (!(pem = malloc(cap))) {
		j->err = -ENOMEM;
		return;
	}
	n = pem_encode("CERTIFICATE", der, len, pem, cap);
	if (n < 0)
		j->err = n;
	else
		put_b64(j, pem, (size_t)n);
	free(pem);
}

/* A string Go writes as it is: printable ASCII but the characters it escapes. */
static int go_plain(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e || strchr("\"\\<>&", *s))
			return 0;
	return 1;
}

static void put_field(struct jw *j, int *first, const char *key, const char *v)
{
	if (!*v)
		return; /* omitempty */
	puts_(j, *first ? "\"" : ",\"");
	*first = 0;
	puts_(j, key);
	puts_(j, "\":\"");
	puts_(j, v);
	puts_(j, "\"");
}

int snp_info_build(const uint8_t report[SNP_INFO_REPORT_LEN], const uint8_t *signer,
		   size_t signer_len, const uint8_t *ask, size_t ask_len,
		   const struct snp_gce_info *gcp, uint8_t *out, size_t cap, size_t *len)
{
	struct jw j = {out, 0, cap, 0};

	if (gcp &&
	    (!go_plain(gcp->zone) || !go_plain(gcp->project_id) || !go_plain(gcp->instance_name)))
		return -EINVAL;
	puts_(&j, "{\"ReportSigner\":");
	if (signer)
		put_pem(&j, signer, signer_len);
	else
		puts_(&j, "null");
	puts_(&j, ",\"CertChain\":");
	put_pem(&j, ask, ask_len);
	puts_(&j, ",\"AttestationReport\":");
	put_b64(&j, report, SNP_INFO_REPORT_LEN);
	puts_(&j, ",\"Azure\":null,\"GCP\":");
	if (gcp) {
		int first = 1;

		puts_(&j, "{");
		put_field(&j, &first, "zone", gcp->zone);
		put_field(&j, &first, "project_id", gcp->project_id);
		put_field(&j, &first, "instance_name", gcp->instance_name);
		puts_(&j, "}");
	} else {
		puts_(&j, "null");
	}
	puts_(&j, "}");
	if (j.err)
		return j.err;
	*len = j.len;
	return 0;
}

/* A []byte field: NULL for null, else its decoded bytes (malloc'd, *n). */
static int get_bytes(struct json_object *o, const char *key, uint8_t **b, size_t *n, char *err,
		     size_t errlen)
{
	struct json_object *v;
	const char *s;
	size_t sl;
	int r;

	*b = NULL;
	*n = 0;
	if (!json_object_object_get_ex(o, key, &v))
		return errbuf_set(err, errlen, "InstanceInfo: no %s", key), -EINVAL;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return errbuf_set(err, errlen, "InstanceInfo: %s is not a string", key), -EINVAL;
	s = json_object_get_string(v);
	sl = (size_t)json_object_get_string_len(v);
	if (sl > SNP_INFO_MAX)
		return errbuf_set(err, errlen, "InstanceInfo: %s too long", key), -EINVAL;
	if (!(*b = malloc(sl / 4 * 3 + 1)))
		return -ENOMEM;
	r = base64_decode(BASE64_STD, s, sl, *b, sl / 4 * 3 + 1, n);
	if (r < 0) {
		free(*b);
		*b = NULL;
		return errbuf_set(err, errlen, "InstanceInfo: %s is not base64", key), -EINVAL;
	}
	return 0;
}

static int get_cert(const uint8_t *pem, size_t pem_len, const char *key, uint8_t *der,
		    size_t *der_len, char *err, size_t errlen)
{
	char *t = malloc(pem_len + 1);
	int r;

	if (!t)
		return -ENOMEM;
	memcpy(t, pem, pem_len);
	t[pem_len] = 0;
	r = pem_decode(t, pem_len, "CERTIFICATE", der, SNP_INFO_CERT_MAX, der_len);
	free(t);
	if (r < 0)
		return errbuf_set(err, errlen, "InstanceInfo: %s: no PEM CERTIFICATE (%s)", key,
				  r == -ENOBUFS ? "too long" : "malformed"),
		       -EINVAL;
	return 0;
}

static int get_gce(struct json_object *o, struct snp_info *ii, char *err, size_t errlen)
{
	static const char *const keys[3] = {"zone", "project_id", "instance_name"};
	char *dst[3] = {ii->gcp.zone, ii->gcp.project_id, ii->gcp.instance_name};
	struct json_object *v;

	if (!json_object_object_get_ex(o, "GCP", &v))
		return errbuf_set(err, errlen, "InstanceInfo: no GCP"), -EINVAL;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return errbuf_set(err, errlen, "InstanceInfo: GCP is not an object"), -EINVAL;
	ii->have_gcp = 1;
	for (int i = 0; i < 3; i++) {
		struct json_object *s;

		if (!json_object_object_get_ex(v, keys[i], &s))
			continue;
		if (!json_object_is_type(s, json_type_string) ||
		    (size_t)json_object_get_string_len(s) >= SNP_INFO_GCE_MAX)
			return errbuf_set(err, errlen, "InstanceInfo: GCP.%s is not a short string",
					  keys[i]),
			       -EINVAL;
		memcpy(dst[i], json_object_get_string(s),
		       (size_t)json_object_get_string_len(s) + 1);
	}
	return 0;
}

int snp_info_parse(const uint8_t *json, size_t len, struct snp_info *ii, char *err, size_t errlen)
{
	struct json_object *o, *az;
	uint8_t *signer = NULL, *chain = NULL, *report = NULL, *again = NULL;
	size_t signer_n, chain_n, report_n, again_n;
	int r;

	memset(ii, 0, sizeof *ii);
	if (len > SNP_INFO_MAX)
		return errbuf_set(err, errlen, "InstanceInfo: %zu bytes, more than %d", len,
				  SNP_INFO_MAX),
		       -EINVAL;
	o = json_parse_exact((const char *)json, len);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return errbuf_set(err, errlen, "InstanceInfo: not a JSON object"), -EINVAL;
	}
	if ((r = get_bytes(o, "ReportSigner", &signer, &signer_n, err, errlen)) < 0 ||
	    (r = get_bytes(o, "CertChain", &chain, &chain_n, err, errlen)) < 0 ||
	    (r = get_bytes(o, "AttestationReport", &report, &report_n, err, errlen)) < 0 ||
	    (r = get_gce(o, ii, err, errlen)) < 0)
		goto out;
	r = -EINVAL;
	if (!json_object_object_get_ex(o, "Azure", &az) || az) {
		errbuf_set(err, errlen, "InstanceInfo: Azure is not null");
		goto out;
	}
	if (!report || report_n != SNP_INFO_REPORT_LEN) {
		errbuf_set(err, errlen, "InstanceInfo: AttestationReport of %zu bytes, not %d",
			   report_n, SNP_INFO_REPORT_LEN);
		goto out;
	}
	memcpy(ii->report, report, SNP_INFO_REPORT_LEN);
	if (!signer) {
		errbuf_set(err, errlen, "InstanceInfo: no ReportSigner (VCEK or VLEK)");
		goto out;
	}
	if ((r = get_cert(signer, signer_n, "ReportSigner", ii->signer, &ii->signer_len, err,
			  errlen)) < 0)
		goto out;
	if (chain &&
	    (r = get_cert(chain, chain_n, "CertChain", ii->ask, &ii->ask_len, err, errlen)) < 0)
		goto out;
	/* Go's bytes: rebuilt from what was read, they must be the text we got */
	r = -ENOMEM;
	if (!(again = malloc(SNP_INFO_MAX)))
		goto out;
	r = snp_info_build(ii->report, ii->signer, ii->signer_len, chain ? ii->ask : NULL,
			   ii->ask_len, ii->have_gcp ? &ii->gcp : NULL, again, SNP_INFO_MAX,
			   &again_n);
	if (r < 0 || again_n != len || memcmp(again, json, len)) {
		errbuf_set(err, errlen,
			   "InstanceInfo: not as Go's encoding/json writes snp.InstanceInfo "
			   "(order, spacing, PEM or extra data)");
		r = -EINVAL;
		goto out;
	}
	r = 0;
out:
	free(signer);
	free(chain);
	free(report);
	free(again);
	json_object_put(o);
	if (r < 0 && r != -ENOMEM)
		r = -EINVAL;
	return r;
}

int snp_ak_digest(const uint8_t *tpmt_public, size_t len, uint8_t out[64], char *err, size_t errlen)
{
	static const uint8_t rsa_oid[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01};
	TPMT_PUBLIC pub;
	size_t off = 0, a, b, c;
	uint8_t e[4], der[600];
	struct der_out d = {der, 0, sizeof der, 0};
	uint32_t exp;
	br_sha512_context h;

	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(tpmt_public, len, &off, &pub) != TSS2_RC_SUCCESS ||
	    off != len)
		return errbuf_set(err, errlen, "AK: not a TPMT_PUBLIC"), -EINVAL;
	if (pub.type != TPM2_ALG_RSA || pub.unique.rsa.size == 0)
		return errbuf_set(err, errlen, "AK: not an RSA key"), -EINVAL;
	exp = pub.parameters.rsaDetail.exponent ? pub.parameters.rsaDetail.exponent : 65537;
	e[0] = (uint8_t)(exp >> 24);
	e[1] = (uint8_t)(exp >> 16);
	e[2] = (uint8_t)(exp >> 8);
	e[3] = (uint8_t)exp;
	a = der_begin(&d);
	b = der_begin(&d);
	der_put_tlv(&d, DER_OID, rsa_oid, sizeof rsa_oid);
	der_put_tlv(&d, DER_NULL, NULL, 0);
	der_end(&d, b, DER_SEQUENCE);
	b = der_begin(&d);
	der_put_raw(&d, "", 1); /* no unused bits */
	c = der_begin(&d);
	der_put_uint(&d, pub.unique.rsa.buffer, pub.unique.rsa.size);
	der_put_uint(&d, e, sizeof e);
	der_end(&d, c, DER_SEQUENCE);
	der_end(&d, b, DER_BIT_STRING);
	der_end(&d, a, DER_SEQUENCE);
	if (d.err)
		return errbuf_set(err, errlen, "AK: key too large"), -EINVAL;
	br_sha512_init(&h);
	br_sha512_update(&h, der, d.len);
	br_sha512_out(&h, out);
	return 0;
}
