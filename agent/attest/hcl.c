/* Azure's HCL report (hcl.h): parsing with explicit bounds, the runtime-data binding and the
 * AK in the runtime data, as go-azguestattestation and Constellation's HCLAkValidator read
 * them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>
#include <json-c/json.h>

#include "base/base.h"
#include "hcl.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int hcl_report_parse(const uint8_t *b, size_t len, struct hcl_report *h, char *err, size_t errlen)
{
	uint32_t data_size, igvm_version, var;
	const uint8_t *nul;

	memset(h, 0, sizeof *h);
	if (len < HCL_RUNTIME_OFFSET)
		return errbuf_set(err, errlen, "hcl: report is %zu bytes, less than its headers",
				  len);
	if (memcmp(b, "HCLA", 4))
		return errbuf_set(err, errlen, "hcl: no HCLA magic");
	h->version = le32(b + 4);
	h->report_size = le32(b + 8);
	h->request_type = le32(b + 12);
	data_size = le32(b + HCL_IGVM_OFFSET);
	igvm_version = le32(b + HCL_IGVM_OFFSET + 4);
	h->report_type = le32(b + HCL_IGVM_OFFSET + 8);
	h->hash_type = le32(b + HCL_IGVM_OFFSET + 12);
	var = le32(b + HCL_IGVM_OFFSET + 16);
	if (igvm_version != 1)
		return errbuf_set(err, errlen, "hcl: IGVM request data version %u, not 1",
				  igvm_version);
	if (h->report_type == HCL_TYPE_SNP) {
		h->hw_len = 1184;
		h->report_data = b + HCL_HW_OFFSET + 0x50;
	} else if (h->report_type == HCL_TYPE_TDX) {
		h->hw_len = 1024;
		h->report_data = b + HCL_HW_OFFSET + 0x80; /* REPORTMACSTRUCT.REPORTDATA */
	} else {
		return errbuf_set(err, errlen, "hcl: report type %u (2 SNP, 4 TDX are known)",
				  h->report_type);
	}
	h->hw = b + HCL_HW_OFFSET;
	if (var > HCL_RUNTIME_MAX || var > len - HCL_RUNTIME_OFFSET || data_size != 20 + var)
		return errbuf_set(
		    err, errlen,
		    "hcl: runtime data of %u bytes (request data %u) does not fit the "
		    "%zu-byte report",
		    var, data_size, len);
	if (h->report_size < HCL_RUNTIME_OFFSET + var || h->report_size > len)
		return errbuf_set(err, errlen, "hcl: report size %u outside the %zu bytes read",
				  h->report_size, len);
	h->runtime = b + HCL_RUNTIME_OFFSET;
	nul = memchr(h->runtime, 0, var);
	h->runtime_len = nul ? (size_t)(nul - h->runtime) : var;
	return 0;
}

int hcl_check_runtime_hash(const uint8_t *runtime, size_t len, const uint8_t report_data[64],
			   char *err, size_t errlen)
{
	br_sha256_context sc;
	uint8_t d[32];

	br_sha256_init(&sc);
	br_sha256_update(&sc, runtime, len);
	br_sha256_out(&sc, d);
	if (memcmp(d, report_data, 32))
		return errbuf_set(err, errlen,
				  "hcl: REPORT_DATA[0:32] is not the SHA-256 of the runtime data");
	return 0;
}

int hcl_check_binding(const struct hcl_report *h, char *err, size_t errlen)
{
	if (h->hash_type != 1)
		return errbuf_set(err, errlen, "hcl: hash type %u, not 1 (SHA-256)", h->hash_type);
	return hcl_check_runtime_hash(h->runtime, h->runtime_len, h->report_data, err, errlen);
}

/* base64url without padding (a JWK's n and e, Go's base64.RawURLEncoding) */
static int b64url_raw(const char *s, size_t len, uint8_t *out, size_t cap, size_t *ret)
{
	char buf[1400];

	if (len % 4 == 1 || len + 3 > sizeof buf || memchr(s, '=', len))
		return -EINVAL;
	memcpy(buf, s, len);
	while (len % 4)
		buf[len++] = '=';
	return base64_decode(BASE64_URL, buf, len, out, cap, ret) < 0 ? -EINVAL : 0;
}

static int b64url_field(json_object *k, const char *name, uint8_t *out, size_t cap, size_t *ret)
{
	json_object *v;

	if (!json_object_object_get_ex(k, name, &v) || !json_object_is_type(v, json_type_string))
		return -EINVAL;
	return b64url_raw(json_object_get_string(v), (size_t)json_object_get_string_len(v), out,
			  cap, ret);
}

int hcl_check_ak(const uint8_t *runtime, size_t len, const uint8_t *n, size_t nlen, uint32_t e,
		 char *err, size_t errlen)
{
	json_tokener *tok;
	json_object *root, *keys, *k, *v;
	uint8_t gn[1024], ge[8], want_e[4];
	size_t gnl, gel, i, j;
	int r = -EINVAL;

	if (len > HCL_RUNTIME_MAX || len > INT32_MAX)
		return errbuf_set(err, errlen, "hcl: runtime data too long");
	tok = json_tokener_new_ex(16);
	if (!tok)
		return -ENOMEM;
	root = json_tokener_parse_ex(tok, (const char *)runtime, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    (size_t)json_tokener_get_parse_end(tok) != len) {
		errbuf_set(err, errlen, "hcl: runtime data is not one JSON value");
		goto out;
	}
	if (!json_object_object_get_ex(root, "keys", &keys) ||
	    !json_object_is_type(keys, json_type_array) || !json_object_array_length(keys) ||
	    !(k = json_object_array_get_idx(keys, 0)) ||
	    !json_object_is_type(k, json_type_object)) {
		errbuf_set(err, errlen, "hcl: runtime data has no keys[0]");
		goto out;
	}
	if (!json_object_object_get_ex(k, "kid", &v) || !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "HCLAkPub") ||
	    !json_object_object_get_ex(k, "kty", &v) || !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "RSA")) {
		errbuf_set(err, errlen, "hcl: runtime data keys[0] is not the RSA key HCLAkPub");
		goto out;
	}
	if (b64url_field(k, "n", gn, sizeof gn, &gnl) < 0 ||
	    b64url_field(k, "e", ge, sizeof ge, &gel) < 0) {
		errbuf_set(err, errlen, "hcl: HCLAkPub's n or e is not base64url");
		goto out;
	}
	for (i = 0; i < gnl && !gn[i]; i++)
		;
	for (j = 0; j < nlen && !n[j]; j++)
		;
	if (gnl - i != nlen - j || memcmp(gn + i, n + j, nlen - j)) {
		errbuf_set(err, errlen, "hcl: HCLAkPub's modulus is not the quoting AK's");
		goto out;
	}
	if (!e)
		e = 65537;
	want_e[0] = (uint8_t)(e >> 24);
	want_e[1] = (uint8_t)(e >> 16);
	want_e[2] = (uint8_t)(e >> 8);
	want_e[3] = (uint8_t)e;
	for (i = 0; i < gel && !ge[i]; i++)
		;
	for (j = 0; j < 4 && !want_e[j]; j++)
		;
	if (gel - i != 4 - j || memcmp(ge + i, want_e + j, 4 - j)) {
		errbuf_set(err, errlen, "hcl: HCLAkPub's exponent is not the quoting AK's");
		goto out;
	}
	r = 0;
out:
	if (root)
		json_object_put(root);
	json_tokener_free(tok);
	return r;
}
