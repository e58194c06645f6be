/* azure-sev-snp's issuer (azure_snp.h; OID 1.3.9900.4.1), as Constellation's
 * internal/attestation/azure/snp/issuer.go with go-azguestattestation's maa.NewParameters:
 * the HCL report from NV 0x01400001, the VCEK and its chain from Azure IMDS THIM, the tag
 * constellation-maa-url from IMDS instance metadata (a set tag asks for an MAA token:
 * azure_maa.c). The parsers here are also what the validator and the fuzz targets use. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "attest/azure_snp.h"
#include "attest/hcl.h"
#include "base/base.h"
#include "net/net.h"
#include "tpm/tpm.h"

#define IMDS_TIMEOUT_MS 10000

/* The member of object o whose key equals name case-insensitively, the last one in the text
 * (Go's encoding/json: exact or case-folded match, a later key overwrites). */
static json_object *member(json_object *o, const char *name)
{
	json_object *found = NULL;

	if (!json_object_is_type(o, json_type_object))
		return NULL;
	json_object_object_foreach(o, k, v)
	{
		if (!strcasecmp(k, name))
			found = v ? v : found;
	}
	return found;
}

static int dup_string(json_object *v, char **out, size_t *len)
{
	int n;

	if (!v || !json_object_is_type(v, json_type_string))
		return -EINVAL;
	n = json_object_get_string_len(v);
	if (n <= 0)
		return -EINVAL;
	*out = malloc((size_t)n + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, json_object_get_string(v), (size_t)n);
	(*out)[n] = 0;
	*len = (size_t)n;
	return 0;
}

void azure_thim_free(struct azure_thim *t)
{
	free(t->vcek);
	free(t->chain);
	memset(t, 0, sizeof *t);
}

int azure_thim_parse(const char *body, size_t len, struct azure_thim *t, char *err, size_t errlen)
{
	json_object *root;
	int r;

	memset(t, 0, sizeof *t);
	if (len > AZURE_THIM_MAX || !(root = json_parse_exact(body, len)))
		return errbuf_set(err, errlen, "THIM: the answer (%zu bytes) is not one JSON value",
				  len);
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return errbuf_set(err, errlen, "THIM: the answer is not a JSON object");
	}
	if ((r = dup_string(member(root, "vcekCert"), &t->vcek, &t->vcek_len)) < 0 ||
	    (r = dup_string(member(root, "certificateChain"), &t->chain, &t->chain_len)) < 0) {
		json_object_put(root);
		azure_thim_free(t);
		return r == -ENOMEM
			   ? -ENOMEM
			   : errbuf_set(err, errlen,
					"THIM: no vcekCert or certificateChain in the answer");
	}
	json_object_put(root);
	return 0;
}

int azure_imds_maa_url(const char *body, size_t len, char *url, size_t cap, char *err,
		       size_t errlen)
{
	json_object *root, *tags;
	int r = 0;

	url[0] = 0;
	if (len > AZURE_IMDS_MAX || !(root = json_parse_exact(body, len)))
		return errbuf_set(err, errlen, "IMDS: instance metadata is not one JSON value");
	tags = member(member(root, "compute"), "tagsList");
	if (tags && json_object_is_type(tags, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(tags); i++) {
			json_object *t = json_object_array_get_idx(tags, i), *n, *v;

			n = member(t, "name");
			v = member(t, "value");
			if (!n || !json_object_is_type(n, json_type_string) ||
			    strcmp(json_object_get_string(n), AZURE_MAA_TAG))
				continue;
			if (!v || !json_object_is_type(v, json_type_string)) {
				url[0] = 0;
				continue;
			}
			if ((size_t)json_object_get_string_len(v) >= cap) {
				r = errbuf_set(err, errlen, "IMDS: the %s tag is too long",
					       AZURE_MAA_TAG);
				break;
			}
			snprintf(url, cap, "%s", json_object_get_string(v));
		}
	}
	json_object_put(root);
	return r;
}

struct jw {
	uint8_t *p;
	size_t cap, len;
	int over;
};

static void put(struct jw *w, const char *s)
{
	size_t n = strlen(s);

	if (w->over || n > w->cap - w->len) {
		w->over = 1;
		return;
	}
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

/* "base64" (Go's []byte): std alphabet with padding */
static void put_b64(struct jw *w, const void *b, size_t n)
{
	size_t need = base64_encoded_len(n) + 1;

	put(w, "\"");
	if (w->over || need + 1 > w->cap - w->len) {
		w->over = 1;
		return;
	}
	base64_encode(BASE64_STD, b, n, (char *)w->p + w->len, need);
	w->len += need - 1;
	put(w, "\"");
}

/* tok: the MAA token (base64url and dots only: written as Go writes it, unescaped) or NULL */
static int info_build(const uint8_t *hcl, size_t hcl_len, const struct azure_thim *t,
		      const char *tok, uint8_t *out, size_t cap, size_t *len, char *err,
		      size_t errlen)
{
	struct hcl_report h;
	const uint8_t *rt, *nul;
	size_t rt_len;
	struct jw w = {out, cap, 0, 0};
	int r;

	if ((r = hcl_report_parse(hcl, hcl_len, &h, err, errlen)) < 0)
		return r;
	if (h.report_type != HCL_TYPE_SNP)
		return errbuf_set(err, errlen, "HCL report of type %u, not 2 (SEV-SNP)",
				  h.report_type);
	/* go-azguestattestation: hcl[0x20+0x4a0+0x14:] up to the first NUL */
	rt = hcl + HCL_RUNTIME_OFFSET;
	nul = memchr(rt, 0, hcl_len - HCL_RUNTIME_OFFSET);
	rt_len = nul ? (size_t)(nul - rt) : hcl_len - HCL_RUNTIME_OFFSET;
	put(&w, "{\"ReportSigner\":");
	put_b64(&w, t->vcek, t->vcek_len);
	put(&w, ",\"CertChain\":");
	put_b64(&w, t->chain, t->chain_len);
	put(&w, ",\"AttestationReport\":");
	put_b64(&w, hcl + HCL_HW_OFFSET, HCL_HW_AREA);
	put(&w, ",\"Azure\":{\"RuntimeData\":");
	put_b64(&w, rt, rt_len);
	put(&w, ",\"MAAToken\":\"");
	put(&w, tok ? tok : "");
	put(&w, "\"},\"GCP\":null}");
	if (w.over)
		return errbuf_set(err, errlen, "InstanceInfo longer than %zu bytes", cap);
	*len = w.len;
	return 0;
}

int azure_snp_info_build(const uint8_t *hcl, size_t hcl_len, const struct azure_thim *t,
			 uint8_t *out, size_t cap, size_t *len, char *err, size_t errlen)
{
	return info_build(hcl, hcl_len, t, NULL, out, cap, len, err, errlen);
}

/* GET base+path with "Metadata: true" (THIM and IMDS refuse a request without it), status
 * 200 demanded. */
static int imds_get(const char *base, const char *path, size_t max, struct http_response *resp,
		    char *err, size_t errlen)
{
	char url[512], e[160];
	struct http_req rq = {.headers = "Metadata: true\r\n"};
	int r;

	if ((size_t)snprintf(url, sizeof url, "%s%s", base, path) >= sizeof url)
		return errbuf_set(err, errlen, "IMDS URL %s too long", base);
	if ((r = http_request(url, &rq, IMDS_TIMEOUT_MS, max, resp, e, sizeof e)) < 0) {
		errbuf_set(err, errlen, "GET %s: %s", url, e);
		return r;
	}
	if (resp->status != 200) {
		errbuf_set(err, errlen, "GET %s: status %d", url, resp->status);
		http_response_free(resp);
		return -EIO;
	}
	return 0;
}

int azure_snp_info_fetch(const char *imds, const uint8_t *hcl, size_t hcl_len, uint8_t *out,
			 size_t cap, size_t *len, char *err, size_t errlen)
{
	return azure_snp_info_fetch_maa(imds, hcl, hcl_len, NULL, out, cap, len, err, errlen);
}

int azure_snp_info_fetch_maa(const char *imds, const uint8_t *hcl, size_t hcl_len,
			     const struct azure_maa_in *m, uint8_t *out, size_t cap, size_t *len,
			     char *err, size_t errlen)
{
	struct http_response resp;
	struct azure_thim t = {0};
	struct azure_maa_in mi;
	char maa[512], *tok = NULL;
	int r;

	if ((r = imds_get(imds, AZURE_THIM_PATH, AZURE_THIM_MAX, &resp, err, errlen)) < 0)
		return r;
	r = azure_thim_parse(resp.body, resp.len, &t, err, errlen);
	http_response_free(&resp);
	if (r < 0)
		return r;
	if ((r = imds_get(imds, AZURE_IMDS_INSTANCE, AZURE_IMDS_MAX, &resp, err, errlen)) < 0)
		goto out;
	r = azure_imds_maa_url(resp.body, resp.len, maa, sizeof maa, err, errlen);
	http_response_free(&resp);
	if (r < 0)
		goto out;
	if (maa[0] && !m) {
		r = errbuf_set(err, errlen,
			       "the VM's %s tag asks for an MAA token from %s; MAA is not "
			       "supported by this agent",
			       AZURE_MAA_TAG, maa);
		goto out;
	}
	if (maa[0]) {
		mi = *m;
		mi.maa_url = maa;
		mi.hcl = hcl;
		mi.hcl_len = hcl_len;
		mi.thim = &t;
		if ((r = azure_maa_token(&mi, &tok, err, errlen)) < 0)
			goto out;
	}
	r = info_build(hcl, hcl_len, &t, tok, out, cap, len, err, errlen);
out:
	free(tok);
	azure_thim_free(&t);
	return r;
}

static int instance_info(const struct vtpm_issue *in, uint8_t *out, size_t cap, size_t *len,
			 char *err, size_t errlen)
{
	uint8_t *hcl;
	size_t hcl_len;
	int r;

	if (!(hcl = malloc(TPM_NV_MAX)))
		return -ENOMEM;
	struct azure_maa_in m = {.tpm = in->tpm,
				 .extra = in->extra,
				 .ak_pub = in->ak_pub,
				 .ak_len = in->ak_len,
				 .event_log = in->env->event_log};

	r = tpm_nv_read(in->tpm, HCL_NV_INDEX, hcl, TPM_NV_MAX, &hcl_len, err, errlen);
	if (r == 0)
		r = azure_snp_info_fetch_maa(in->env->imds ? in->env->imds
							   : "http://169.254.169.254",
					     hcl, hcl_len, &m, out, cap, len, err, errlen);
	free(hcl);
	return r;
}

const struct vtpm_variant vtpm_azure_sev_snp = {
    .name = "azure-sev-snp",
    .oid = {0x2b, 0xcd, 0x2c, 0x04, 0x01}, /* 1.3.9900.4.1 */
    .oid_len = 5,
    .ak = VTPM_AK_HCL,
    .instance_info = instance_info,
};
