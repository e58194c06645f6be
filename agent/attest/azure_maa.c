/* azure-sev-snp's MAA token (azure_snp.h azure_maa_token), as Constellation's issuer gets it
 * through go-azguestattestation: maa.NewParameters (a quote of PCRs 0-7 by the HCL AK over
 * the extra data, the AK certificate of NV 0x01C101D0, the PCR-bound decryption key certified
 * by the AK), maa.GetEncryptedToken (the AzureGuest AttestationInfo, POSTed to
 * <maa>/attest/AzureGuest?api-version=2020-10-01) and maa.DecryptToken (the token's AES-GCM
 * key decrypted inside the TPM). The JSON is written as Go's encoding/json writes those
 * structs: fields in declaration order, []byte as standard base64, the report and the whole
 * AttestationInfo as unpadded base64url strings, the proof as a base64 string of its JSON. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <bearssl.h>
#include <json-c/json.h>

#include "attest/azure_snp.h"
#include "attest/hcl.h"
#include "base/base.h"
#include "base/eventlog.h"
#include "cloud/api_http.h"
#include "cloud/cloud.h"
#include "net/net.h"
#include "tpm/tpm.h"

#define AK_CERT_NV	0x01C101D0u
#define MAA_PCRS	0xffu /* PCRs 0-7 */
#define MAA_EVLOG_MAX	(1u << 20)
#define MAA_ANSWER_MAX	(256u << 10)
#define MAA_TIMEOUT	20000
#define MAA_API_VERSION "2020-10-01"

/* a growing text; oom sticks */
struct sb {
	char *p;
	size_t len, cap;
	int oom;
};

static void sb_put(struct sb *s, const void *d, size_t n)
{
	if (s->oom)
		return;
	if (s->len + n + 1 > s->cap) {
		size_t c = (s->len + n + 1) * 2;
		char *q = realloc(s->p, c);

		if (!q) {
			s->oom = 1;
			return;
		}
		s->p = q;
		s->cap = c;
	}
	memcpy(s->p + s->len, d, n);
	s->len += n;
	s->p[s->len] = 0;
}

static void sb_str(struct sb *s, const char *str)
{
	sb_put(s, str, strlen(str));
}

/* base64 of d (raw: base64url without padding, as Go's RawURLEncoding) */
static void sb_b64(struct sb *s, const void *d, size_t n, int raw)
{
	size_t el = BASE64_ENCODED_LEN(n);
	char *e = malloc(el + 1);

	if (!e) {
		s->oom = 1;
		return;
	}
	base64_encode(raw ? BASE64_URL : BASE64_STD, d, n, e, el + 1);
	if (raw)
		while (el && e[el - 1] == '=')
			el--;
	sb_put(s, e, el);
	free(e);
}

/* "name":"base64", */
static void sb_field(struct sb *s, const char *name, const void *d, size_t n)
{
	sb_str(s, "\"");
	sb_str(s, name);
	sb_str(s, "\":\"");
	sb_b64(s, d, n, 0);
	sb_str(s, "\"");
}

/* go-tpm's tpmutil.U16Bytes: a 16-bit size, then the bytes */
static void sb_field_u16(struct sb *s, const char *name, const uint8_t *d, size_t n)
{
	uint8_t *b = malloc(n + 2);

	if (!b || n > 0xffff) {
		free(b);
		s->oom = 1;
		return;
	}
	b[0] = (uint8_t)(n >> 8);
	b[1] = (uint8_t)n;
	memcpy(b + 2, d, n);
	sb_field(s, name, b, n + 2);
	free(b);
}

/* ---- the event log, cut as maa/eventlog.go cuts it ---- */
static int strip_event(void *ctx, uint32_t pcr, uint32_t type, const uint8_t *digest,
		       size_t digest_len, const uint8_t *data, size_t data_len)
{
	struct sb *s = ctx;
	uint8_t h[14];

	if (pcr > 7 || !digest_len)
		return 0;
	/* index, type, one digest, SHA-256: little-endian as binary.Write */
	memcpy(h, &pcr, 4);
	memcpy(h + 4, &type, 4);
	memcpy(h + 8, (const uint8_t[]){1, 0, 0, 0, 0x0b, 0}, 6);
	sb_put(s, h, sizeof h);
	sb_put(s, digest, digest_len);
	h[0] = (uint8_t)data_len;
	h[1] = (uint8_t)(data_len >> 8);
	h[2] = (uint8_t)(data_len >> 16);
	h[3] = (uint8_t)(data_len >> 24);
	sb_put(s, h, 4);
	sb_put(s, data, data_len);
	return 0;
}

static const uint8_t spec_id_event[] = {
    0,	 0,   0,   0,	3,   0,	  0,   0,   0,	 0,   0,    0,	 0,   0,   0,	0, 0, 0,
    0,	 0,   0,   0,	0,   0,	  0,   0,   0,	 0,   0,    0,	 0,   0,   33,	0, 0, 0,
    'S', 'p', 'e', 'c', ' ', 'I', 'D', ' ', 'E', 'v', 'e',  'n', 't', '0', '3', 0, 0, 0,
    0,	 0,   0,   2,	0,   2,	  1,   0,   0,	 0,   0x0b, 0,	 32,  0,   0};

static int stripped_log(const char *path, struct sb *out, char *err, size_t errlen)
{
	struct eventlog_pcrs pcrs;
	uint8_t *log = NULL;
	size_t n = 0;
	ssize_t k;
	int fd, r = 0;

	sb_put(out, spec_id_event, sizeof spec_id_event);
	if (!path || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (path && errno != ENOENT)
			return errbuf_set(err, errlen, "MAA: event log %s: %s", path,
					  strerror(errno));
		return 0; /* no firmware log (swtpm): the Spec ID event alone */
	}
	if (!(log = malloc(MAA_EVLOG_MAX))) {
		close(fd);
		return -ENOMEM;
	}
	while (n < MAA_EVLOG_MAX && (k = read(fd, log + n, MAA_EVLOG_MAX - n)) > 0)
		n += (size_t)k;
	close(fd);
	if (n == MAA_EVLOG_MAX)
		r = errbuf_set(err, errlen, "MAA: event log %s larger than %u bytes", path,
			       MAA_EVLOG_MAX);
	else if (n)
		r = eventlog_walk(log, n, 0x000b, &pcrs, strip_event, out, err, errlen);
	free(log);
	return r;
}

/* ---- the request ---- */
struct maa_evidence {
	uint8_t akcert[TPM_NV_MAX], encpub[TPM_PUBLIC_MAX], certinfo[TPM_ATTEST_MAX], certsig[512];
	size_t akcert_len, encpub_len, certinfo_len, certsig_len;
	struct tpm_quote q;
	uint8_t pcr_digest[32];
};

static void attestation_info(struct sb *s, const struct azure_maa_in *in,
			     const struct maa_evidence *ev, const struct sb *tcg,
			     const struct hcl_report *h)
{
	struct sb proof = {0}, chain = {0};
	char num[16];

	/* proof: {"SnpReport":"<raw base64url>","VcekCertChain":"<b64 of VCEK PEM ‖ chain PEM>"} */
	sb_str(&proof, "{\"SnpReport\":\"");
	sb_b64(&proof, h->hw, h->hw_len, 1);
	sb_str(&proof, "\",");
	sb_put(&chain, in->thim->vcek, in->thim->vcek_len);
	sb_put(&chain, in->thim->chain, in->thim->chain_len);
	if (!chain.oom)
		sb_field(&proof, "VcekCertChain", chain.p, chain.len);
	sb_str(&proof, "}");
	s->oom |= proof.oom | chain.oom;

	sb_str(s, "{\"AttestationProtocolVersion\":\"2.0\",\"ClientPayload\":{");
	sb_field(s, "nonce", in->extra, 32);
	sb_str(s, "},\"IsolationInfo\":{\"Evidence\":{");
	if (!proof.oom)
		sb_field(s, "Proof", proof.p, proof.len);
	sb_str(s, ",");
	{ /* as NewParameters cuts it: from 0x4d4 to the first NUL of the NV bytes */
		const uint8_t *rt = in->hcl + HCL_RUNTIME_OFFSET,
			      *nul = memchr(rt, 0, in->hcl_len - HCL_RUNTIME_OFFSET);

		sb_field(s, "RunTimeData", rt,
			 nul ? (size_t)(nul - rt) : in->hcl_len - HCL_RUNTIME_OFFSET);
	}
	sb_str(s, "},\"Type\":\"SevSnp\"},");
	sb_field(s, "OSBuild", "Edgeless", 8);
	sb_str(s, ",");
	sb_field(s, "OSDistro", "Edgeless", 8);
	sb_str(s, ",");
	sb_field(s, "OSType", "Edgeless", 8);
	sb_str(s, ",\"OSVersionMajor\":0,\"OSVersionMinor\":0,");
	sb_field(s, "TcgLogs", tcg->p, tcg->len);
	sb_str(s, ",\"TpmInfo\":{");
	sb_field(s, "AikCert", ev->akcert, ev->akcert_len);
	sb_str(s, ",");
	sb_field_u16(s, "AikPub", in->ak_pub, in->ak_len);
	sb_str(s, ",");
	sb_field(s, "EncKeyCertifyInfo", ev->certinfo, ev->certinfo_len);
	sb_str(s, ",");
	sb_field(s, "EncKeyCertifyInfoSignature", ev->certsig, ev->certsig_len);
	sb_str(s, ",");
	sb_field_u16(s, "EncKeyPub", ev->encpub, ev->encpub_len);
	sb_str(s, ",\"PCRs\":[");
	for (int i = 0; i < 8; i++) {
		sb_str(s, i ? ",{" : "{");
		sb_field(s, "Digest", ev->q.values[i], 32);
		snprintf(num, sizeof num, ",\"Index\":%d}", i);
		sb_str(s, num);
	}
	sb_str(s, "],");
	sb_field(s, "PcrQuote", ev->q.attest, ev->q.attest_len);
	sb_str(s, ",\"PcrSet\":[0,1,2,3,4,5,6,7],");
	/* the TPMT_SIGNATURE's RSA signature: after sigAlg, hash and size */
	sb_field(s, "PcrSignature", ev->q.sig + 6, ev->q.sig_len > 6 ? ev->q.sig_len - 6 : 0);
	sb_str(s, "}}");
	free(proof.p);
	free(chain.p);
}

/* ---- the answer: {"token": base64url(JSON{Jwt, EncryptedInnerKey, EncryptionParams{Iv},
 * AuthenticationData})} ---- */
/* a []byte member into a malloc'd buffer; -EINVAL when absent or no base64 */
static int bytes_member(json_object *o, const char *name, uint8_t **out, size_t *len)
{
	json_object *v = json_member_go(o, name);
	size_t n;

	if (!v || !json_object_is_type(v, json_type_string))
		return -EINVAL;
	n = (size_t)json_object_get_string_len(v);
	if (!(*out = malloc(n / 4 * 3 + 3)))
		return -ENOMEM;
	if (base64_decode(BASE64_STD, json_object_get_string(v), n, *out, n / 4 * 3 + 3, len) < 0) {
		free(*out);
		*out = NULL;
		return -EINVAL;
	}
	return 0;
}

static int decrypt_answer(struct tpm *t, const uint8_t digest[32], const char *body, size_t len,
			  char **token, char *err, size_t errlen)
{
	json_object *a = NULL, *inner = NULL, *tok, *ep;
	uint8_t *raw = NULL, *jwt = NULL, *ek = NULL, *iv = NULL, *tag = NULL, key[256];
	size_t raw_len, jwt_len, ek_len, iv_len, tag_len, key_len = 0, tl;
	const char *ts;
	int r = -EINVAL;

	if (!(a = json_parse_exact(body, len)) || !(tok = json_member_go(a, "token")) ||
	    !json_object_is_type(tok, json_type_string)) {
		errbuf_set(err, errlen, "MAA: the answer has no token");
		goto out;
	}
	ts = json_object_get_string(tok);
	tl = (size_t)json_object_get_string_len(tok);
	{ /* RawURLEncoding */
		char *pad = malloc(tl + 4);

		if (!pad || !(raw = malloc(tl / 4 * 3 + 4))) {
			free(pad);
			r = -ENOMEM;
			goto out;
		}
		memcpy(pad, ts, tl);
		while (tl % 4)
			pad[tl++] = '=';
		r = base64_decode(BASE64_URL, pad, tl, raw, tl / 4 * 3 + 3, &raw_len);
		free(pad);
		if (r < 0) {
			r = errbuf_set(err, errlen, "MAA: the token is not base64url");
			goto out;
		}
	}
	r = -EINVAL;
	if (!(inner = json_parse_exact((const char *)raw, raw_len)) ||
	    bytes_member(inner, "Jwt", &jwt, &jwt_len) < 0 ||
	    bytes_member(inner, "EncryptedInnerKey", &ek, &ek_len) < 0 ||
	    bytes_member(inner, "AuthenticationData", &tag, &tag_len) < 0 ||
	    !(ep = json_member_go(inner, "EncryptionParams")) ||
	    bytes_member(ep, "Iv", &iv, &iv_len) < 0) {
		errbuf_set(err, errlen, "MAA: the encrypted token is malformed");
		goto out;
	}
	if (iv_len != 12 || tag_len != 16) {
		errbuf_set(err, errlen, "MAA: IV of %zu bytes or tag of %zu bytes", iv_len,
			   tag_len);
		goto out;
	}
	if ((r = tpm_pcr_key_decrypt(t, MAA_PCRS, digest, ek, ek_len, key, sizeof key, &key_len,
				     err, errlen)) < 0)
		goto out;
	r = -EINVAL;
	if (key_len != 16 && key_len != 24 && key_len != 32) {
		errbuf_set(err, errlen, "MAA: inner key of %zu bytes", key_len);
		goto out;
	}
	{
		br_aes_ct64_ctr_keys ac;
		br_gcm_context gc;

		br_aes_ct64_ctr_init(&ac, key, key_len);
		br_gcm_init(&gc, &ac.vtable, br_ghash_ctmul64);
		br_gcm_reset(&gc, iv, iv_len);
		br_gcm_aad_inject(&gc, "Transport Key", 13);
		br_gcm_flip(&gc);
		br_gcm_run(&gc, 0, jwt, jwt_len);
		if (!br_gcm_check_tag(&gc, tag)) {
			errbuf_set(err, errlen, "MAA: the token does not decrypt (GCM tag)");
			goto out;
		}
	}
	/* the JWT goes into JSON as it is: only base64url and dots, which Go does not escape */
	if (!jwt_len)
		goto bad;
	for (size_t i = 0; i < jwt_len; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.",
			    jwt[i]) ||
		    !jwt[i])
			goto bad;
	if (!(*token = strndup((const char *)jwt, jwt_len))) {
		r = -ENOMEM;
		goto out;
	}
	r = 0;
	goto out;
bad:
	errbuf_set(err, errlen, "MAA: the decrypted token is not a compact JWS");
out:
	secret_wipe(key, sizeof key);
	json_object_put(a);
	json_object_put(inner);
	free(raw);
	free(jwt);
	free(ek);
	free(iv);
	free(tag);
	return r;
}

int azure_maa_token(const struct azure_maa_in *in, char **token, char *err, size_t errlen)
{
	struct maa_evidence *ev = calloc(1, sizeof *ev);
	struct sb info = {0}, tcg = {0}, req = {0};
	struct http_response resp = {0};
	size_t ul;
	char url[700], hdr[600], hostport[300];
	struct hcl_report h;
	br_sha256_context sc;
	int r;

	*token = NULL;
	if (!ev)
		return -ENOMEM;
	if ((r = hcl_report_parse(in->hcl, in->hcl_len, &h, err, errlen)) < 0)
		goto out;
	if (h.report_type != HCL_TYPE_SNP || h.hw_len != HCL_HW_AREA) {
		r = errbuf_set(err, errlen, "MAA: the HCL report holds no SNP report");
		goto out;
	}
	if ((r = tpm_nv_read(in->tpm, AK_CERT_NV, ev->akcert, sizeof ev->akcert, &ev->akcert_len,
			     err, errlen)) < 0)
		goto out;
	if ((r = tpm_quote(in->tpm, TPM_ALG_SHA256, MAA_PCRS, in->extra, 32, &ev->q)) < 0) {
		errbuf_set(err, errlen, "MAA: the quote of PCRs 0-7 failed");
		goto out;
	}
	br_sha256_init(&sc);
	for (int i = 0; i < 8; i++)
		br_sha256_update(&sc, ev->q.values[i], 32);
	br_sha256_out(&sc, ev->pcr_digest);
	if ((r = tpm_pcr_key_certify(in->tpm, MAA_PCRS, ev->pcr_digest, ev->encpub,
				     sizeof ev->encpub, &ev->encpub_len, ev->certinfo,
				     sizeof ev->certinfo, &ev->certinfo_len, ev->certsig,
				     sizeof ev->certsig, &ev->certsig_len, err, errlen)) < 0)
		goto out;
	if ((r = stripped_log(in->event_log, &tcg, err, errlen)) < 0)
		goto out;
	attestation_info(&info, in, ev, &tcg, &h);
	sb_str(&req, "{\"AttestationInfo\":\"");
	if (!info.oom)
		sb_b64(&req, info.p, info.len, 1);
	sb_str(&req, "\"}");
	if (info.oom || tcg.oom || req.oom) {
		r = -ENOMEM;
		goto out;
	}
	/* url.JoinPath(maaURL, "attest/AzureGuest") + "?api-version=..." */
	ul = strlen(in->maa_url);
	while (ul && in->maa_url[ul - 1] == '/')
		ul--;
	if ((size_t)snprintf(url, sizeof url, "%.*s/attest/AzureGuest?api-version=%s", (int)ul,
			     in->maa_url, MAA_API_VERSION) >= sizeof url ||
	    (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))) {
		r = errbuf_set(err, errlen, "MAA URL '%.64s' is not an http(s) URL", in->maa_url);
		goto out;
	}
	{ /* Host: the URL's host[:port] */
		const char *host = strstr(url, "://") + 3;
		size_t hl = strcspn(host, "/?");

		if (hl >= sizeof hostport) {
			r = errbuf_set(err, errlen, "MAA URL host too long");
			goto out;
		}
		memcpy(hostport, host, hl);
		hostport[hl] = 0;
	}
	snprintf(hdr, sizeof hdr, "Host: %s\r\nContent-Type: application/json\r\n", hostport);
	r = cloud_api_request("POST", strncmp(url, "https://", 8) ? NULL : api_ca_bundle(NULL), url,
			      hdr, req.p, req.len, MAA_ANSWER_MAX, MAA_TIMEOUT, &resp, err, errlen);
	if (r < 0)
		goto out;
	if (resp.status != 200) {
		r = errbuf_set(err, errlen, "MAA %s: HTTP %d: %.120s", hostport, resp.status,
			       resp.body ? resp.body : "");
		goto out;
	}
	r = decrypt_answer(in->tpm, ev->pcr_digest, resp.body, resp.len, token, err, errlen);
out:
	http_response_free(&resp);
	free(info.p);
	free(tcg.p);
	free(req.p);
	free(ev);
	return r;
}
