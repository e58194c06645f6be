/* The vTPM validator every TPM-based variant shares (vtpm.h, spec §2.6, §2.7), in C, for
 * tools/ and tests: the JSON document, the variant's trusted-key check of the AK (RSA or
 * ECC; qemu-vtpm takes it on trust), each quote in the order SHA-512, SHA-384, SHA-256 (SHA-1
 * refused) until one passes signature, magic, type, nonce, selection, PCR digest and
 * event-log replay; then the variant's checks of InstanceInfo and the platform; then the
 * expected measurements against the SHA-256 quote, enforced or warn-only, once that quote
 * passed the same checks (Go compares the SHA-256 quote's values even when another bank's
 * quote was the one that verified). Every refusal is one line, "<variant>: " and what
 * differs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>
#include <json-c/json.h>
#include <tss2/tss2_mu.h>

#include "attest.h"
#include "vtpm.h"
#include "base/base.h"
#include "base/eventlog.h"

#define QUOTES_MAX 8

/* A PCR index as a JSON key: decimal digits only (no blanks, sign or leading zero, as
 * strtol would accept), below TPM_PCRS; -1 otherwise. */
static int pcr_index(const char *key)
{
	if (key[0] >= '0' && key[0] <= '9' && !key[1])
		return key[0] - '0';
	if (key[0] >= '1' && key[0] <= '9' && key[1] >= '0' && key[1] <= '9' && !key[2] &&
	    (key[0] - '0') * 10 + (key[1] - '0') < TPM_PCRS)
		return (key[0] - '0') * 10 + (key[1] - '0');
	return -1;
}

struct quote {
	uint8_t *quote, *sig;
	size_t quote_len, sig_len;
	int hash;
	uint32_t pcrs; /* keys present */
	uint8_t value[TPM_PCRS][TPM_DIGEST_MAX];
	size_t value_len[TPM_PCRS];
};

struct doc {
	uint8_t *ak, *event_log, *user_data, *instance_info;
	size_t ak_len, event_log_len, user_data_len, instance_info_len;
	struct quote q[QUOTES_MAX];
	size_t n;
};

static void doc_free(struct doc *d)
{
	free(d->ak);
	free(d->event_log);
	free(d->user_data);
	free(d->instance_info);
	for (size_t i = 0; i < d->n; i++) {
		free(d->q[i].quote);
		free(d->q[i].sig);
	}
}

/* A JSON base64 string ([]byte in Go); null gives nothing. */
static int b64_field(json_object *o, const char *name, uint8_t **ret, size_t *len, int required,
		     char *err, size_t errlen)
{
	json_object *v;
	const char *s;
	size_t n;

	*ret = NULL;
	*len = 0;
	if (!json_object_object_get_ex(o, name, &v) || json_object_is_type(v, json_type_null))
		return required ? errbuf_set(err, errlen, "no %s", name) : 0;
	if (!json_object_is_type(v, json_type_string))
		return errbuf_set(err, errlen, "%s is not a string", name);
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	*ret = malloc(n / 4 * 3 + 1);
	if (!*ret)
		return -ENOMEM;
	if (base64_decode(BASE64_STD, s, n, *ret, n / 4 * 3 + 1, len) < 0) {
		free(*ret);
		*ret = NULL;
		return errbuf_set(err, errlen, "%s is not standard padded base64", name);
	}
	return 0;
}

static int parse_quote(json_object *o, struct quote *q, char *err, size_t errlen)
{
	json_object *pcrs, *hash, *map;
	int r;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "pcrs", &pcrs) ||
	    !json_object_is_type(pcrs, json_type_object))
		return errbuf_set(err, errlen, "a quote without pcrs");
	if ((r = b64_field(o, "quote", &q->quote, &q->quote_len, 1, err, errlen)) < 0 ||
	    (r = b64_field(o, "raw_sig", &q->sig, &q->sig_len, 1, err, errlen)) < 0)
		return r;
	if (!json_object_object_get_ex(pcrs, "hash", &hash) ||
	    !json_object_is_type(hash, json_type_int))
		return errbuf_set(err, errlen, "pcrs.hash is not a number");
	q->hash = json_object_get_int(hash);
	if (!json_object_object_get_ex(pcrs, "pcrs", &map) ||
	    !json_object_is_type(map, json_type_object))
		return errbuf_set(err, errlen, "pcrs.pcrs is not an object");
	json_object_object_foreach(map, key, val)
	{
		int i = pcr_index(key);
		size_t n;

		if (i < 0 || !json_object_is_type(val, json_type_string) ||
		    base64_decode(BASE64_STD, json_object_get_string(val),
				  (size_t)json_object_get_string_len(val), q->value[i],
				  TPM_DIGEST_MAX, &n) < 0)
			return errbuf_set(err, errlen, "PCR entry '%.8s' malformed", key);
		q->pcrs |= 1u << i;
		q->value_len[i] = n;
	}
	return 0;
}

static int parse_doc(const uint8_t *buf, size_t len, struct doc *d, char *err, size_t errlen)
{
	json_object *root = json_parse_exact((const char *)buf, len), *att, *quotes;
	int r = -EINVAL;

	if (!root || !json_object_is_type(root, json_type_object)) {
		errbuf_set(err, errlen, "the document is not one JSON object");
		goto out;
	}
	if (!json_object_object_get_ex(root, "Attestation", &att) ||
	    !json_object_is_type(att, json_type_object)) {
		errbuf_set(err, errlen, "no Attestation object");
		goto out;
	}
	if ((r = b64_field(root, "UserData", &d->user_data, &d->user_data_len, 1, err, errlen)) <
		0 ||
	    (r = b64_field(root, "InstanceInfo", &d->instance_info, &d->instance_info_len, 0, err,
			   errlen)) < 0 ||
	    (r = b64_field(att, "ak_pub", &d->ak, &d->ak_len, 1, err, errlen)) < 0 ||
	    (r = b64_field(att, "event_log", &d->event_log, &d->event_log_len, 0, err, errlen)) < 0)
		goto out;
	r = -EINVAL;
	if (!json_object_object_get_ex(att, "quotes", &quotes) ||
	    !json_object_is_type(quotes, json_type_array) || !json_object_array_length(quotes) ||
	    json_object_array_length(quotes) > QUOTES_MAX) {
		errbuf_set(err, errlen, "quotes must be 1 to %d entries", QUOTES_MAX);
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(quotes); i++) {
		d->n = i + 1;
		if ((r = parse_quote(json_object_array_get_idx(quotes, i), &d->q[i], err, errlen)) <
		    0)
			goto out;
	}
	r = 0;
out:
	json_object_put(root);
	return r;
}

static const unsigned char *hash_oid(int alg)
{
	switch (alg) {
	case TPM_ALG_SHA256:
		return BR_HASH_OID_SHA256;
	case TPM_ALG_SHA384:
		return BR_HASH_OID_SHA384;
	case TPM_ALG_SHA512:
		return BR_HASH_OID_SHA512;
	}
	return NULL;
}

/* The signature of q under the AK; hv is H_sig(quote), set on success with its hash. */
static int check_signature(const TPMT_PUBLIC *ak, const struct quote *q, uint16_t *sig_hash,
			   char *err, size_t errlen)
{
	TPMT_SIGNATURE sig;
	const br_hash_class *hc;
	br_hash_compat_context h;
	uint8_t hv[64], got[64];
	size_t off = 0, hlen;

	if (Tss2_MU_TPMT_SIGNATURE_Unmarshal(q->sig, q->sig_len, &off, &sig) != TSS2_RC_SUCCESS ||
	    off != q->sig_len)
		return errbuf_set(err, errlen, "raw_sig is not a TPMT_SIGNATURE");
	*sig_hash = ak->type == TPM2_ALG_RSA ? sig.signature.rsassa.hash : sig.signature.ecdsa.hash;
	if (!hash_oid(*sig_hash) || !(hc = eventlog_hash(*sig_hash)))
		return errbuf_set(err, errlen, "signature hash 0x%04x is not SHA-256/384/512",
				  *sig_hash);
	hlen = (hc->desc >> BR_HASHDESC_OUT_OFF) & BR_HASHDESC_OUT_MASK;
	hc->init(&h.vtable);
	hc->update(&h.vtable, q->quote, q->quote_len);
	hc->out(&h.vtable, hv);
	if (ak->type == TPM2_ALG_RSA) {
		br_rsa_public_key pk;
		uint8_t e[4] = {0, 1, 0, 1};
		uint32_t ev = ak->parameters.rsaDetail.exponent;

		if (sig.sigAlg != TPM2_ALG_RSASSA)
			return errbuf_set(err, errlen, "RSA key but signature is not RSASSA");
		if (ev)
			e[0] = (uint8_t)(ev >> 24), e[1] = (uint8_t)(ev >> 16),
			e[2] = (uint8_t)(ev >> 8), e[3] = (uint8_t)ev;
		pk = (br_rsa_public_key){(unsigned char *)ak->unique.rsa.buffer,
					 ak->unique.rsa.size, e, 4};
		if (!br_rsa_pkcs1_vrfy_get_default()(sig.signature.rsassa.sig.buffer,
						     sig.signature.rsassa.sig.size,
						     hash_oid(*sig_hash), hlen, &pk, got) ||
		    memcmp(got, hv, hlen))
			return errbuf_set(err, errlen, "quote signature does not verify");
		return 0;
	}
	if (ak->type == TPM2_ALG_ECC) {
		uint8_t q_pt[1 + 2 * 66], rs[2 * 66];
		size_t clen = ak->unique.ecc.x.size;
		int curve = ak->parameters.eccDetail.curveID == TPM2_ECC_NIST_P256 ? BR_EC_secp256r1
			    : ak->parameters.eccDetail.curveID == TPM2_ECC_NIST_P384
				? BR_EC_secp384r1
				: 0;
		br_ec_public_key pk;

		if (sig.sigAlg != TPM2_ALG_ECDSA || !curve || clen > 66 ||
		    ak->unique.ecc.y.size != clen || sig.signature.ecdsa.signatureR.size > clen ||
		    sig.signature.ecdsa.signatureS.size > clen)
			return errbuf_set(err, errlen, "ECC key without a usable ECDSA signature");
		q_pt[0] = 4;
		memcpy(q_pt + 1, ak->unique.ecc.x.buffer, clen);
		memcpy(q_pt + 1 + clen, ak->unique.ecc.y.buffer, clen);
		memset(rs, 0, sizeof rs);
		memcpy(rs + clen - sig.signature.ecdsa.signatureR.size,
		       sig.signature.ecdsa.signatureR.buffer, sig.signature.ecdsa.signatureR.size);
		memcpy(rs + 2 * clen - sig.signature.ecdsa.signatureS.size,
		       sig.signature.ecdsa.signatureS.buffer, sig.signature.ecdsa.signatureS.size);
		pk = (br_ec_public_key){curve, q_pt, 1 + 2 * clen};
		if (!br_ecdsa_vrfy_raw_get_default()(br_ec_get_default(), hv, hlen, &pk, rs,
						     2 * clen))
			return errbuf_set(err, errlen, "quote signature does not verify");
		return 0;
	}
	return errbuf_set(err, errlen, "AK type 0x%04x", ak->type);
}

static void hex_of(const uint8_t *b, size_t n, char *out, size_t cap)
{
	if (hex_encode(b, n, out, cap) < 0)
		snprintf(out, cap, "(%zu bytes)", n);
}

static int check_quote(const TPMT_PUBLIC *ak, const struct doc *d, const struct quote *q,
		       const uint8_t *tpm_nonce, size_t tn_len, char *err, size_t errlen)
{
	TPMS_ATTEST att;
	const br_hash_class *hc;
	br_hash_compat_context h;
	uint8_t digest[64];
	uint16_t sig_hash = 0;
	size_t off = 0, dlen = tpm_alg_digest_len((uint16_t)q->hash);
	uint32_t sel;
	int r;

	if ((r = check_signature(ak, q, &sig_hash, err, errlen)) < 0)
		return r;
	if (Tss2_MU_TPMS_ATTEST_Unmarshal(q->quote, q->quote_len, &off, &att) != TSS2_RC_SUCCESS ||
	    off != q->quote_len)
		return errbuf_set(err, errlen, "quote is not a TPMS_ATTEST");
	if (att.magic != TPM2_GENERATED_VALUE || att.type != TPM2_ST_ATTEST_QUOTE)
		return errbuf_set(err, errlen, "quote magic 0x%08x or type 0x%04x wrong", att.magic,
				  att.type);
	if (att.extraData.size != tn_len || memcmp(att.extraData.buffer, tpm_nonce, tn_len))
		return errbuf_set(err, errlen, "quote nonce does not match ours");
	if (att.attested.quote.pcrSelect.count != 1 ||
	    att.attested.quote.pcrSelect.pcrSelections[0].hash != q->hash)
		return errbuf_set(err, errlen, "quote selection is not the one bank 0x%04x",
				  q->hash);
	sel = 0;
	for (int i = 0; i < att.attested.quote.pcrSelect.pcrSelections[0].sizeofSelect && i < 4;
	     i++)
		sel |= (uint32_t)att.attested.quote.pcrSelect.pcrSelections[0].pcrSelect[i]
		       << (8 * i);
	if (sel != q->pcrs)
		return errbuf_set(err, errlen,
				  "quote selects PCRs 0x%06x, the pcrs map holds 0x%06x", sel,
				  q->pcrs);
	hc = eventlog_hash(sig_hash);
	hc->init(&h.vtable);
	for (int i = 0; i < TPM_PCRS; i++)
		if (q->pcrs & (1u << i)) {
			if (q->value_len[i] != dlen)
				return errbuf_set(err, errlen, "PCR %d has %zu bytes, want %zu", i,
						  q->value_len[i], dlen);
			hc->update(&h.vtable, q->value[i], dlen);
		}
	hc->out(&h.vtable, digest);
	if (att.attested.quote.pcrDigest.size !=
		((hc->desc >> BR_HASHDESC_OUT_OFF) & BR_HASHDESC_OUT_MASK) ||
	    memcmp(att.attested.quote.pcrDigest.buffer, digest, att.attested.quote.pcrDigest.size))
		return errbuf_set(err, errlen, "PCR values do not match the quoted digest");
	if (d->event_log_len) {
		struct eventlog_pcrs *ev = malloc(sizeof *ev);
		char want[130], got[130];

		if (!ev)
			return -ENOMEM;
		r = eventlog_replay(d->event_log, d->event_log_len, (uint16_t)q->hash, ev, err,
				    errlen);
		for (int i = 0; r == 0 && i < TPM_PCRS; i++) {
			if (!(ev->extended & (1u << i)))
				continue;
			if (!(q->pcrs & (1u << i)) || memcmp(ev->value[i], q->value[i], dlen)) {
				hex_of(ev->value[i], dlen, want, sizeof want);
				hex_of(q->value[i], dlen, got, sizeof got);
				r = errbuf_set(err, errlen,
					       "event log: PCR %d replays to %s, the quote has %s",
					       i, want, got);
			}
		}
		free(ev);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Every entry is compared, as Go's measurements.Compare does: each warn-only mismatch is logged;
 * the refusal names the first enforced mismatch with both values and, when there are more,
 * every enforced PCR that differs. */
static int check_measurements(const char *name, const struct quote *q256,
			      const struct measurements *m, char *err, size_t errlen)
{
	char want[130], got[130], first[300] = "", list[TPM_PCRS * 4] = "";
	size_t n = 0, used = 0;

	for (size_t i = 0; m && i < m->n; i++) {
		const struct measurement *e = &m->m[i];
		int have = q256->pcrs & (1u << e->pcr);

		if (have && q256->value_len[e->pcr] == e->len &&
		    !memcmp(q256->value[e->pcr], e->expected, e->len))
			continue;
		hex_of(e->expected, e->len, want, sizeof want);
		if (have)
			hex_of(q256->value[e->pcr], q256->value_len[e->pcr], got, sizeof got);
		else
			snprintf(got, sizeof got, "nothing");
		if (e->warn_only) {
			log_warn("%s: PCR %d: expected %s, got %s (warn only)", name, e->pcr, want,
				 got);
			continue;
		}
		if (n++ == 0)
			snprintf(first, sizeof first, "PCR %d: expected %s, got %s", e->pcr, want,
				 got);
		if (used < sizeof list)
			used += (size_t)snprintf(list + used, sizeof list - used, "%s%d",
						 used ? ", " : "", e->pcr);
	}
	if (n == 1)
		return errbuf_set(err, errlen, "measurement validation failed: %s", first);
	if (n > 1)
		return errbuf_set(err, errlen,
				  "measurement validation failed: %s (PCRs that differ: %s)", first,
				  list);
	return 0;
}

/* "<name>: " in front of the line in err. */
static int prefixed(int r, const char *name, char *err, size_t errlen)
{
	char line[512];

	if (r >= 0 || !err || !errlen)
		return r;
	snprintf(line, sizeof line, "%s", err);
	snprintf(err, errlen, "%s: %s", name, line);
	return r;
}

/* raw: the TPM nonce itself (recorded evidence), else made from the nonce as Go does. */
static int validate_doc(const struct vtpm_policy *p, const uint8_t *buf, size_t len,
			const uint8_t *nonce, size_t nonce_len, const uint8_t *raw, size_t raw_len,
			uint8_t *user_data, size_t cap, size_t *user_data_len, char *err,
			size_t errlen)
{
	size_t tn_len = 32;
	const char *name = p->check->name;
	struct vtpm_view view;
	static const int order[] = {TPM_ALG_SHA512, TPM_ALG_SHA384, TPM_ALG_SHA256, TPM_ALG_SHA1};
	struct doc *d = calloc(1, sizeof *d);
	TPMT_PUBLIC ak;
	uint8_t extra[32], tpm_nonce[64];
	const struct quote *q256 = NULL, *verified = NULL;
	char why[256] = "no quote of a known bank";
	br_sha256_context h;
	size_t off = 0;
	int r, ok = 0, tried = 0;

	if (!d)
		return -ENOMEM;
	r = parse_doc(buf, len, d, err, errlen);
	if (r < 0)
		goto out;
	r = -EINVAL;
	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(d->ak, d->ak_len, &off, &ak) != TSS2_RC_SUCCESS ||
	    off != d->ak_len) {
		errbuf_set(err, errlen, "ak_pub is not a TPMT_PUBLIC");
		goto out;
	}
	br_sha256_init(&h);
	br_sha256_update(&h, d->user_data, d->user_data_len);
	br_sha256_update(&h, nonce, nonce_len);
	br_sha256_out(&h, extra);
	vtpm_tpm_nonce(d->instance_info, d->instance_info_len, extra, tpm_nonce);
	if (raw && raw_len <= sizeof tpm_nonce) {
		memcpy(tpm_nonce, raw, raw_len);
		tn_len = raw_len;
	}
	view = (struct vtpm_view){
	    .instance_info = d->instance_info,
	    .instance_info_len = d->instance_info_len,
	    .ak_pub = d->ak,
	    .ak_len = d->ak_len,
	    .event_log = d->event_log,
	    .event_log_len = d->event_log_len,
	};
	memcpy(view.extra, extra, sizeof extra);
	if (p->check->trusted_key && (r = p->check->trusted_key(p, &view, err, errlen)) < 0)
		goto out;
	r = -EINVAL;
	for (size_t o = 0; o < sizeof order / sizeof order[0] && !ok; o++)
		for (size_t i = 0; i < d->n && !ok; i++) {
			char e[200];

			if (d->q[i].hash != order[o])
				continue;
			/* the reason from the most preferred bank is the one reported */
			if (order[o] == TPM_ALG_SHA1) {
				if (!tried)
					snprintf(why, sizeof why, "SHA-1 quotes are not accepted");
				continue;
			}
			if (check_quote(&ak, d, &d->q[i], tpm_nonce, tn_len, e, sizeof e) < 0) {
				if (!tried++)
					snprintf(why, sizeof why, "bank 0x%04x: %s", order[o], e);
				continue;
			}
			ok = 1;
			verified = &d->q[i];
		}
	if (!ok) {
		errbuf_set(err, errlen, "no quote verifies (%s)", why);
		goto out;
	}
	/* Go reads the measurements from the SHA-256 quote (GetSHA256QuoteIndex: the last one)
	 * whichever quote verified above; here that quote must itself pass every check
	 * (signature, nonce, selection, digest, event log), or its PCR values are only claims. */
	for (size_t i = 0; i < d->n; i++)
		if (d->q[i].hash == TPM_ALG_SHA256)
			q256 = &d->q[i];
	if (!q256) {
		errbuf_set(err, errlen, "no SHA-256 quote for the measurements");
		goto out;
	}
	if (q256 != verified) {
		char e[200];

		if (check_quote(&ak, d, q256, tpm_nonce, tn_len, e, sizeof e) < 0) {
			errbuf_set(err, errlen,
				   "the SHA-256 quote that holds the measurements does "
				   "not verify (%s)",
				   e);
			goto out;
		}
	}
	if (p->check->validate_cvm && (r = p->check->validate_cvm(p, &view, err, errlen)) < 0)
		goto out;
	if ((r = check_measurements(name, q256, &p->m, err, errlen)) < 0)
		goto out;
	r = -ENOBUFS;
	if (d->user_data_len > cap) {
		errbuf_set(err, errlen, "user data of %zu bytes", d->user_data_len);
		goto out;
	}
	memcpy(user_data, d->user_data, d->user_data_len);
	*user_data_len = d->user_data_len;
	r = 0;
out:
	doc_free(d);
	free(d);
	return r;
}

int vtpm_validate(const struct vtpm_policy *p, const uint8_t *doc, size_t len, const uint8_t *nonce,
		  size_t nonce_len, uint8_t *user_data, size_t cap, size_t *user_data_len,
		  char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	return prefixed(validate_doc(p, doc, len, nonce, nonce_len, NULL, 0, user_data, cap,
				     user_data_len, err, errlen),
			p->check->name, err, errlen);
}

int vtpm_validate_raw(const struct vtpm_policy *p, const uint8_t *doc, size_t len,
		      const uint8_t *tpm_nonce, size_t tn_len, char *err, size_t errlen)
{
	uint8_t ud[256];
	size_t n;

	if (err && errlen)
		err[0] = '\0';
	if (!tn_len || tn_len > 64)
		return errbuf_set(err, errlen, "%s: a TPM nonce of %zu bytes", p->check->name,
				  tn_len);
	return prefixed(
	    validate_doc(p, doc, len, NULL, 0, tpm_nonce, tn_len, ud, sizeof ud, &n, err, errlen),
	    p->check->name, err, errlen);
}

/* ---- measurements: {"<pcr>": {"expected": "<hex>", "warnOnly": bool}} or "<hex>" ---- */

int measurements_parse(const char *buf, size_t len, struct measurements *ret, char *err,
		       size_t errlen)
{
	json_object *root, *obj;
	struct measurements m = {0};
	size_t want_len = 0;
	int r = -EINVAL;

	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--; /* a file's trailing newline */
	root = json_parse_exact(buf, len);
	if (!root || !json_object_is_type(root, json_type_object)) {
		errbuf_set(err, errlen, "measurements: not one JSON object");
		goto out;
	}
	obj = root;
	if (json_object_object_get_ex(root, "measurements", &obj) &&
	    !json_object_is_type(obj, json_type_object)) {
		errbuf_set(err, errlen, "measurements: \"measurements\" is not an object");
		goto out;
	}
	if (!json_object_object_get_ex(root, "measurements", NULL))
		obj = root;
	json_object_object_foreach(obj, key, val)
	{
		struct measurement *e;
		json_object *x = val, *w;
		int pcr = pcr_index(key);

		if (pcr < 0 || m.n == TPM_PCRS) {
			errbuf_set(err, errlen, "measurements: key '%.16s' is not a PCR index",
				   key);
			goto out;
		}
		e = &m.m[m.n++];
		e->pcr = (int)pcr;
		if (json_object_is_type(val, json_type_object)) {
			if (!json_object_object_get_ex(val, "expected", &x)) {
				errbuf_set(err, errlen, "measurements: PCR %d has no expected",
					   pcr);
				goto out;
			}
			if (json_object_object_get_ex(val, "warnOnly", &w))
				e->warn_only = json_object_get_boolean(w);
		}
		if (!json_object_is_type(x, json_type_string) ||
		    hex_decode(json_object_get_string(x), (size_t)json_object_get_string_len(x),
			       e->expected, sizeof e->expected, &e->len) < 0 ||
		    (e->len != 32 && e->len != 48) || (want_len && e->len != want_len)) {
			errbuf_set(err, errlen,
				   "measurements: PCR %d: expected must be 32 or 48 bytes of hex, "
				   "the same for all",
				   pcr);
			goto out;
		}
		want_len = e->len;
	}
	*ret = m;
	r = 0;
out:
	json_object_put(root);
	return r;
}

static int validate(void *ctx, const uint8_t *doc, size_t len, const uint8_t *nonce,
		    size_t nonce_len, uint8_t ret_user_data[ATLS_USER_DATA_LEN], char *err,
		    size_t errlen)
{
	const struct vtpm_policy *p = ctx;
	uint8_t ud[64];
	size_t n;
	int r = vtpm_validate(p, doc, len, nonce, nonce_len, ud, sizeof ud, &n, err, errlen);

	if (r < 0)
		return r;
	if (n != ATLS_USER_DATA_LEN)
		return errbuf_set(err, errlen, "%s: user data is %zu bytes, want 32",
				  p->check->name, n);
	memcpy(ret_user_data, ud, n);
	return 0;
}

void vtpm_validator(struct atls_validator *v, const struct vtpm_policy *p)
{
	memset(v, 0, sizeof *v);
	memcpy(v->oid, p->variant->oid, p->variant->oid_len);
	v->oid_len = p->variant->oid_len;
	v->validate = validate;
	v->ctx = (void *)p;
}

int vtpm_policy_init(struct vtpm_policy *p, const char *name, const char *text, size_t len,
		     char *err, size_t errlen)
{
	int r;

	memset(&p->m, 0, sizeof p->m);
	p->config = NULL;
	p->config_len = 0;
	p->priv = NULL;
	p->check = vtpm_check_find(name);
	p->variant = vtpm_variant_find(name);
	if (!p->check || !p->variant)
		return errbuf_set(err, errlen, "unknown attestation variant '%.32s' (%s)", name,
				  vtpm_check_names());
	if (text) {
		json_object *root;

		while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
			len--; /* a file's trailing newline */
		r = measurements_parse(text, len, &p->m, err, errlen);
		if (r < 0)
			return r;
		/* {"measurements": {...}, ...}: the variant's attestationConfig */
		root = json_parse_exact(text, len);
		if (root && json_object_object_get_ex(root, "measurements", NULL)) {
			p->config = text;
			p->config_len = len;
		}
		json_object_put(root);
	}
	if (p->check->policy_init && (r = p->check->policy_init(p, err, errlen)) < 0)
		return prefixed(r, name, err, errlen);
	return 0;
}

void vtpm_policy_free(struct vtpm_policy *p)
{
	if (p->check && p->check->policy_free)
		p->check->policy_free(p);
	p->priv = NULL;
}
