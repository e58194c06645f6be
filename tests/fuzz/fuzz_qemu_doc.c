/* libFuzzer target: the qemu-vtpm document parser and validator (JSON, base64, TPM
 * structures, PCR maps, event log, measurements), half of the time with measurements. Each
 * input is validated as it is (nothing the fuzzer makes up verifies), then, when it parses
 * as a document, re-signed with the fixed test AK of tests/attest/qemu_test_ak.h: ak_pub
 * replaced, and every quote that unmarshals given our nonce, the digest of its pcrs map and
 * a signature, as fuzz_luks2 fixes the LUKS2 checksum. So the fuzzer gets past the
 * signature to the selection, digest, event-log and measurement checks and to success.
 * Refusals carry one line. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "attest/attest.h"
#include "attest/qemu_test_ak.h"
#include "base/base.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* tpm2-tss logs every unmarshalling error to stderr: silenced, as noise and cost */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	setenv("TSS2_LOG", "all+NONE", 1);
	return 0;
}

static const uint8_t nonce[32];

/* The base64 string field name of o, decoded into a malloc'd buffer (NULL when absent). */
static uint8_t *b64(json_object *o, const char *name, size_t *len)
{
	json_object *v;
	uint8_t *out;
	size_t n;

	*len = 0;
	if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	n = (size_t)json_object_get_string_len(v);
	out = malloc(n / 4 * 3 + 1);
	if (out &&
	    base64_decode(BASE64_STD, json_object_get_string(v), n, out, n / 4 * 3 + 1, len) < 0) {
		free(out);
		return NULL;
	}
	return out;
}

static void set_b64(json_object *o, const char *name, const uint8_t *b, size_t len)
{
	char *s = malloc(base64_encoded_len(len) + 1);

	if (s && base64_encode(BASE64_STD, b, len, s, base64_encoded_len(len) + 1) == 0)
		json_object_object_add(o, name, json_object_new_string(s));
	free(s);
}

/* One quote: extraData and digest made right for its pcrs map, then signed. */
static void resign_quote(json_object *q, const uint8_t tpm_nonce[32])
{
	json_object *pcrs, *map;
	TPMS_ATTEST a;
	br_sha256_context h;
	uint8_t *raw, out[TPM_ATTEST_MAX], sig[TPM_SIGNATURE_MAX];
	size_t len, off = 0, out_len = 0, sig_len;
	uint32_t sel = 0;

	if (!json_object_is_type(q, json_type_object) || !(raw = b64(q, "quote", &len)))
		return;
	if (Tss2_MU_TPMS_ATTEST_Unmarshal(raw, len, &off, &a) != TSS2_RC_SUCCESS) {
		free(raw);
		return;
	}
	free(raw);
	a.extraData.size = 32;
	memcpy(a.extraData.buffer, tpm_nonce, 32);
	if (a.attested.quote.pcrSelect.count >= 1)
		for (int i = 0;
		     i < a.attested.quote.pcrSelect.pcrSelections[0].sizeofSelect && i < 4; i++)
			sel |= (uint32_t)a.attested.quote.pcrSelect.pcrSelections[0].pcrSelect[i]
			       << (8 * i);
	br_sha256_init(&h);
	if (json_object_object_get_ex(q, "pcrs", &pcrs) &&
	    json_object_object_get_ex(pcrs, "pcrs", &map) &&
	    json_object_is_type(map, json_type_object))
		for (int i = 0; i < TPM_PCRS; i++) {
			char key[4];
			uint8_t *v;
			size_t vlen;

			if (!(sel & (1u << i)))
				continue;
			snprintf(key, sizeof key, "%d", i);
			if ((v = b64(map, key, &vlen)))
				br_sha256_update(&h, v, vlen);
			free(v);
		}
	br_sha256_out(&h, a.attested.quote.pcrDigest.buffer);
	a.attested.quote.pcrDigest.size = 32;
	if (Tss2_MU_TPMS_ATTEST_Marshal(&a, out, sizeof out, &out_len) != TSS2_RC_SUCCESS ||
	    test_ak_sign(out, out_len, sig, sizeof sig, &sig_len) < 0)
		return;
	set_b64(q, "quote", out, out_len);
	set_b64(q, "raw_sig", sig, sig_len);
}

/* The document re-signed with the test AK for our nonce, or NULL. */
static char *resign(const uint8_t *data, size_t size)
{
	json_object *root = json_parse_exact((const char *)data, size), *att, *quotes;
	uint8_t ak[512], extra[32], tpm_nonce[32], *ud = NULL, *ii = NULL;
	size_t ak_len, ud_len, ii_len;
	br_sha256_context h;
	char *out = NULL;

	if (!root || !json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "Attestation", &att) ||
	    !json_object_is_type(att, json_type_object) ||
	    test_ak_public(ak, sizeof ak, &ak_len) < 0)
		goto done;
	ud = b64(root, "UserData", &ud_len);
	ii = b64(root, "InstanceInfo", &ii_len);
	br_sha256_init(&h);
	br_sha256_update(&h, ud, ud_len);
	br_sha256_update(&h, nonce, sizeof nonce);
	br_sha256_out(&h, extra);
	br_sha256_init(&h);
	br_sha256_update(&h, ii, ii_len);
	br_sha256_update(&h, extra, sizeof extra);
	br_sha256_out(&h, tpm_nonce);
	set_b64(att, "ak_pub", ak, ak_len);
	if (json_object_object_get_ex(att, "quotes", &quotes) &&
	    json_object_is_type(quotes, json_type_array))
		for (size_t i = 0; i < json_object_array_length(quotes) && i < 8; i++)
			resign_quote(json_object_array_get_idx(quotes, i), tpm_nonce);
	out = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
done:
	free(ud);
	free(ii);
	json_object_put(root);
	return out;
}

static void check(const uint8_t *doc, size_t len, const struct measurements *m)
{
	uint8_t ud[64];
	size_t n;
	char err[400] = "";
	int r = qemu_vtpm_validate(doc, len, nonce, sizeof nonce, m, ud, sizeof ud, &n, err,
				   sizeof err);

	if (r < 0 && (!err[0] || strchr(err, '\n')))
		abort();
	if (r == 0 && n > sizeof ud)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct measurements m = {.n = 1, .m = {{.pcr = 15, .len = 32}}};
	const struct measurements *mp = size % 2 ? &m : NULL;
	char *doc;

	if (size > 65536)
		return 0;
	check(data, size, mp);
	if ((doc = resign(data, size))) {
		check((const uint8_t *)doc, strlen(doc), mp);
		free(doc);
	}
	return 0;
}
