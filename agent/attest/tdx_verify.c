/* The TDX quote verifier, its signature part (tdx.h): the PCK chain to Intel's SGX Root CA,
 * the QE report's signature by the PCK, the QE report data binding the attestation key, the
 * quote's signature by the attestation key. The checks of go-tdx-guest's verify.TdxQuote and
 * Intel's QVL that need no collateral (docs/tdx.md says what is not checked yet). */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <bearssl.h>
#include <json-c/json.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>

#include "base/base.h"
#include "base/der.h"
#include "base/p256.h"
#include "tdx.h"
#include "x509.h"

/* ecdsa-with-SHA256, id-ecPublicKey, prime256v1, basicConstraints */
static const uint8_t oid_ecdsa_sha256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};
static const uint8_t oid_ec[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01};
static const uint8_t oid_p256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
static const uint8_t oid_basic_constraints[] = {0x55, 0x1d, 0x13};

void tdx_verify_opts_init(struct tdx_verify_opts *o)
{
	memset(o, 0, sizeof *o);
	o->at = time(NULL);
}

/* An Intel certificate: X.509 v3, ECDSA SHA-256 signed (no parameters), a P-256 key. */
static int cert_parse(const uint8_t *der, size_t len, struct x509_cert *c)
{
	struct der_in params, curve;

	if (x509_parse(der, len, c) < 0)
		return -EBADMSG;
	params = c->key_alg_params;
	if (!der_oid_is(&c->sigalg_oid, oid_ecdsa_sha256, sizeof oid_ecdsa_sha256) ||
	    c->sigalg_raw.len != 2 + 2 + sizeof oid_ecdsa_sha256 ||
	    !der_oid_is(&c->key_alg_oid, oid_ec, sizeof oid_ec) ||
	    der_expect(&params, DER_OID, &curve, NULL) < 0 || params.len ||
	    !der_oid_is(&curve, oid_p256, sizeof oid_p256) || c->key.len != P256_POINT_LEN ||
	    c->key.p[0] != 0x04)
		return -EBADMSG;
	return 0;
}

/* basicConstraints with cA TRUE */
static int is_ca(const struct x509_cert *c)
{
	struct der_in exts = c->exts, v, seq, b;
	struct x509_ext e;

	while (x509_ext_next(&exts, &e) > 0) {
		if (!der_oid_is(&e.oid, oid_basic_constraints, sizeof oid_basic_constraints))
			continue;
		v = e.val;
		return der_expect(&v, DER_SEQUENCE, &seq, NULL) == 0 && !v.len &&
		       der_expect(&seq, 0x01, &b, NULL) == 0 && b.len == 1 && b.p[0] == 0xff;
	}
	return 0;
}

/* Certificate signatures that verified, by the SHA-256 of what the check covered: a verifier
 * sees the same root, CAs and PCKs again and again (one thread; a plain ring). */
#define SIG_CACHE 16
static uint8_t sig_cache[SIG_CACHE][32];
static unsigned sig_cache_next;

static int cert_signed_by(const struct x509_cert *c, const struct x509_cert *issuer)
{
	uint8_t h[32], key[32];
	br_sha256_context sc;

	if (!x509_issued_by(c, issuer))
		return -EBADMSG;
	br_sha256_init(&sc);
	br_sha256_update(&sc, c->tbs_raw.p, c->tbs_raw.len);
	br_sha256_out(&sc, h);
	/* everything the check depends on: the signed hash, the signature, the issuer's key */
	br_sha256_init(&sc);
	br_sha256_update(&sc, h, sizeof h);
	br_sha256_update(&sc, c->sig.p, c->sig.len);
	br_sha256_update(&sc, issuer->key.p, issuer->key.len);
	br_sha256_out(&sc, key);
	for (size_t i = 0; i < SIG_CACHE; i++)
		if (!memcmp(sig_cache[i], key, sizeof key))
			return 0;
	if (!p256_verify_asn1(issuer->key.p, issuer->key.len, h, sizeof h, c->sig.p, c->sig.len))
		return -EBADMSG;
	memcpy(sig_cache[sig_cache_next++ % SIG_CACHE], key, sizeof key);
	return 0;
}

/* A CRL of issuer: signed by it with ECDSA SHA-256, current at at, not revoking serial. */
static int check_crl(const uint8_t *der, size_t len, const char *what,
		     const struct x509_cert *issuer, const struct der_in *serial,
		     const char *serial_of, time_t at, char *err, size_t errlen)
{
	struct x509_crl crl;
	br_sha256_context sc;
	uint8_t h[32];

	if (x509_crl_parse(der, len, &crl) < 0)
		return errbuf_set(err, errlen, "tdx: crl: the %s does not parse as an X.509 v2 CRL",
				  what);
	if (!der_oid_is(&crl.sigalg_oid, oid_ecdsa_sha256, sizeof oid_ecdsa_sha256) ||
	    crl.sigalg_raw.len != 2 + 2 + sizeof oid_ecdsa_sha256)
		return errbuf_set(err, errlen, "tdx: crl: the %s is not signed with ECDSA SHA-256",
				  what);
	if (crl.issuer_raw.len != issuer->subject_raw.len ||
	    memcmp(crl.issuer_raw.p, issuer->subject_raw.p, crl.issuer_raw.len))
		return errbuf_set(err, errlen, "tdx: crl: the %s is not issued by the %s's issuer",
				  what, serial_of);
	br_sha256_init(&sc);
	br_sha256_update(&sc, crl.tbs_raw.p, crl.tbs_raw.len);
	br_sha256_out(&sc, h);
	if (!p256_verify_asn1(issuer->key.p, issuer->key.len, h, sizeof h, crl.sig.p, crl.sig.len))
		return errbuf_set(err, errlen,
				  "tdx: crl: the %s's signature does not verify with its issuer's "
				  "key",
				  what);
	if (at < crl.this_update)
		return errbuf_set(err, errlen,
				  "tdx: crl: the %s's thisUpdate is after the time of the check",
				  what);
	if (at > crl.next_update)
		return errbuf_set(err, errlen,
				  "tdx: crl: the %s's nextUpdate has passed at the time of the "
				  "check: it is out of date",
				  what);
	if (x509_crl_revokes(&crl, serial))
		return errbuf_set(err, errlen, "tdx: crl: the %s is revoked by the %s", serial_of,
				  what);
	return 0;
}

/* ECDSA P-256 over SHA-256(msg): key x || y and signature r || s, big-endian, as the quote
 * carries them. */
static int ecdsa_p256_raw_verify(const uint8_t *xy, const uint8_t *msg, size_t len,
				 const uint8_t *rs)
{
	struct ecc_point pub;
	struct dsa_signature sig;
	br_sha256_context sc;
	uint8_t h[32];
	mpz_t x, y;
	int ok;

	br_sha256_init(&sc);
	br_sha256_update(&sc, msg, len);
	br_sha256_out(&sc, h);
	ecc_point_init(&pub, nettle_get_secp_256r1());
	mpz_init(x);
	mpz_init(y);
	dsa_signature_init(&sig);
	mpz_import(x, 32, 1, 1, 1, 0, xy);
	mpz_import(y, 32, 1, 1, 1, 0, xy + 32);
	mpz_import(sig.r, 32, 1, 1, 1, 0, rs);
	mpz_import(sig.s, 32, 1, 1, 1, 0, rs + 32);
	ok = ecc_point_set(&pub, x, y) && ecdsa_verify(&pub, sizeof h, h, &sig);
	dsa_signature_clear(&sig);
	mpz_clear(x);
	mpz_clear(y);
	ecc_point_clear(&pub);
	return ok ? 0 : -EBADMSG;
}

static int cn_is(const struct x509_cert *c, const char *s)
{
	return c->cn.len == strlen(s) && !memcmp(c->cn.p, s, c->cn.len);
}

#define PCK_DER_MAX 4096
static const char pem_end[] = "-----END CERTIFICATE-----";

/* A PEM chain of exactly want certificates (the quote's: PCK, CA, root; PCS's issuer chains:
 * signer, root). */
static int split_chain(const uint8_t *pem, size_t len, uint8_t der[][PCK_DER_MAX], size_t *der_len,
		       size_t want, const char *what, char *err, size_t errlen)
{
	size_t off = 0, n = 0;

	for (;;) {
		const uint8_t *end;
		int r;

		if (n == want) {
			if (memmem(pem + off, len - off, "-----BEGIN", 10))
				return errbuf_set(
				    err, errlen, "tdx: %s: more than %zu certificates", what, want);
			return 0;
		}
		r = pem_decode((const char *)pem + off, len - off, "CERTIFICATE", der[n],
			       PCK_DER_MAX, &der_len[n]);
		if (r == -ENOENT)
			return errbuf_set(err, errlen, "tdx: %s: %zu certificates, not %zu", what,
					  n, want);
		if (r < 0)
			return errbuf_set(err, errlen, "tdx: %s: certificate %zu is not valid PEM",
					  what, n + 1);
		end = memmem(pem + off, len - off, pem_end, sizeof pem_end - 1);
		if (!end)
			return errbuf_set(err, errlen, "tdx: %s: certificate %zu has no end line",
					  what, n + 1);
		off = (size_t)(end - pem) + sizeof pem_end - 1;
		n++;
	}
}

static int check_chain(const struct tdx_quote *q, const struct tdx_verify_opts *o,
		       struct x509_cert *pck, char *err, size_t errlen)
{
	static uint8_t der[TDX_PCK_CHAIN_MAX][PCK_DER_MAX];
	size_t der_len[TDX_PCK_CHAIN_MAX];
	struct x509_cert ca, root, trusted;
	const uint8_t *tr = o->root ? o->root : tdx_intel_sgx_root;
	size_t trl = o->root ? o->root_len : tdx_intel_sgx_root_len;
	int r;

	if ((r = split_chain(q->pck_pem, q->pck_pem_len, der, der_len, TDX_PCK_CHAIN_MAX,
			     "pck chain", err, errlen)) < 0)
		return r;
	if (cert_parse(tr, trl, &trusted) < 0)
		return errbuf_set(err, errlen,
				  "tdx: the trusted root is not an ECDSA P-256 X.509 certificate");
	if (cert_parse(der[0], der_len[0], pck) < 0)
		return errbuf_set(err, errlen,
				  "tdx: pck chain: the PCK certificate does not parse (X.509 v3, "
				  "ECDSA P-256, SHA-256)");
	if (cert_parse(der[1], der_len[1], &ca) < 0)
		return errbuf_set(err, errlen, "tdx: pck chain: the PCK's CA does not parse");
	if (cert_parse(der[2], der_len[2], &root) < 0)
		return errbuf_set(err, errlen, "tdx: pck chain: the root does not parse");
	if (der_len[2] != trl || memcmp(der[2], tr, trl))
		return errbuf_set(err, errlen,
				  "tdx: pck chain: the root is not the trusted Intel SGX Root CA");
	if (cert_signed_by(&trusted, &trusted) < 0 || !is_ca(&trusted))
		return errbuf_set(err, errlen,
				  "tdx: pck chain: the trusted root is not a self-signed CA");
	if (!cn_is(pck, "Intel SGX PCK Certificate"))
		return errbuf_set(err, errlen,
				  "tdx: pck chain: the first certificate's CN is not Intel SGX "
				  "PCK Certificate");
	if (!cn_is(&ca, "Intel SGX PCK Platform CA") && !cn_is(&ca, "Intel SGX PCK Processor CA"))
		return errbuf_set(err, errlen,
				  "tdx: pck chain: the PCK's issuer is not Intel SGX PCK Platform "
				  "CA or Processor CA");
	if (!is_ca(&ca))
		return errbuf_set(err, errlen, "tdx: pck chain: the PCK's issuer is not a CA");
	if (cert_signed_by(&ca, &trusted) < 0)
		return errbuf_set(err, errlen,
				  "tdx: pck chain: the PCK's CA is not signed by the root");
	if (cert_signed_by(pck, &ca) < 0)
		return errbuf_set(err, errlen,
				  "tdx: pck chain: the PCK certificate is not signed by its CA");
	if (!x509_valid_at(&trusted, o->at))
		return errbuf_set(err, errlen,
				  "tdx: validity: the root is not valid at the time of the check");
	if (!x509_valid_at(&ca, o->at))
		return errbuf_set(err, errlen,
				  "tdx: validity: the PCK's CA is not valid at the time of the "
				  "check");
	if (!x509_valid_at(pck, o->at))
		return errbuf_set(err, errlen,
				  "tdx: validity: the PCK certificate is not valid at the time of "
				  "the check");
	if (o->root_crl && (r = check_crl(o->root_crl, o->root_crl_len, "root CA CRL", &trusted,
					  &ca.serial, "PCK's CA", o->at, err, errlen)) < 0)
		return r;
	if (o->pck_crl_chain) {
		static uint8_t cder[2][PCK_DER_MAX];
		size_t cl[2];

		if ((r = split_chain((const uint8_t *)o->pck_crl_chain, o->pck_crl_chain_len, cder,
				     cl, 2, "pck crl issuer chain", err, errlen)) < 0)
			return r;
		if (cl[0] != der_len[1] || memcmp(cder[0], der[1], cl[0]) || cl[1] != trl ||
		    memcmp(cder[1], tr, trl))
			return errbuf_set(err, errlen,
					  "tdx: pck crl issuer chain: not the quote's PCK CA and "
					  "the trusted root");
	}
	if (o->pck_crl && (r = check_crl(o->pck_crl, o->pck_crl_len, "PCK CRL", &ca, &pck->serial,
					 "PCK certificate", o->at, err, errlen)) < 0)
		return r;
	return 0;
}

/* ---- collateral signed by Intel's TCB signing key (QE identity; TCB info later) ---- */

/* "YYYY-MM-DDTHH:MM:SSZ", as PCS writes issueDate and nextUpdate */
static int rfc3339_utc(const char *s, time_t *ret)
{
	struct tm tm;
	int n = 0;

	memset(&tm, 0, sizeof tm);
	if (!s || strlen(s) != 20 ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 ||
	    n != 20 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -EINVAL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*ret = timegm(&tm);
	return 0;
}

/* PCS's signed JSON: {"<name>":{...},"signature":"<128 hex digits>"}, the signature (r || s)
 * over the bytes of the {...} exactly as sent, by the TCB signing certificate of the issuer
 * chain (Intel SGX TCB Signing, signed by the trusted root). On success *body is the signed
 * object, parsed. */
static int signed_json(const char *doc, size_t len, const char *name, const char *chain,
		       size_t chain_len, const struct tdx_verify_opts *o, struct json_object **body,
		       char *err, size_t errlen)
{
	static uint8_t der[2][PCK_DER_MAX];
	size_t der_len[2], pl;
	struct x509_cert signer, root;
	const uint8_t *tr = o->root ? o->root : tdx_intel_sgx_root;
	size_t trl = o->root ? o->root_len : tdx_intel_sgx_root_len;
	static const char sig_key[] = ",\"signature\":\"";
	char prefix[64];
	uint8_t sig[64];
	struct json_object *all;
	int r;

	*body = NULL;
	if ((r = split_chain((const uint8_t *)chain, chain_len, der, der_len, 2, name, err,
			     errlen)) < 0)
		return r;
	if (cert_parse(der[0], der_len[0], &signer) < 0 ||
	    cert_parse(der[1], der_len[1], &root) < 0)
		return errbuf_set(err, errlen, "tdx: %s: its issuer chain does not parse", name);
	if (der_len[1] != trl || memcmp(der[1], tr, trl))
		return errbuf_set(err, errlen,
				  "tdx: %s: its issuer chain's root is not the trusted Intel SGX "
				  "Root CA",
				  name);
	if (!cn_is(&signer, "Intel SGX TCB Signing") || cert_signed_by(&signer, &root) < 0)
		return errbuf_set(err, errlen,
				  "tdx: %s: its signer is not an Intel SGX TCB Signing certificate "
				  "signed by the root",
				  name);
	if (!x509_valid_at(&signer, o->at) || !x509_valid_at(&root, o->at))
		return errbuf_set(err, errlen,
				  "tdx: %s: its issuer chain is not valid at the time of the check",
				  name);
	/* the layout: prefix, the signed object, the signature, "}", maybe a line end */
	while (len && (doc[len - 1] == '\n' || doc[len - 1] == '\r'))
		len--;
	pl = (size_t)snprintf(prefix, sizeof prefix, "{\"%s\":", name);
	if (len < pl + sizeof sig_key - 1 + 128 + 2 || memcmp(doc, prefix, pl) ||
	    memcmp(doc + len - 2, "\"}", 2) ||
	    memcmp(doc + len - 2 - 128 - (sizeof sig_key - 1), sig_key, sizeof sig_key - 1) ||
	    hex_decode(doc + len - 2 - 128, 128, sig, sizeof sig, NULL) < 0)
		return errbuf_set(err, errlen,
				  "tdx: %s: not {\"%s\":{...},\"signature\":\"<128 hex>\"}", name,
				  name);
	all = json_parse_exact(doc, len);
	if (!all)
		return errbuf_set(err, errlen, "tdx: %s: not valid JSON", name);
	json_object_put(all);
	if (ecdsa_p256_raw_verify(signer.key.p + 1, (const uint8_t *)doc + pl,
				  len - pl - 2 - 128 - (sizeof sig_key - 1), sig) < 0)
		return errbuf_set(err, errlen,
				  "tdx: %s: its signature does not verify with the TCB signing key",
				  name);
	*body = json_parse_exact(doc + pl, len - pl - 2 - 128 - (sizeof sig_key - 1));
	if (!*body || !json_object_is_type(*body, json_type_object)) {
		json_object_put(*body);
		*body = NULL;
		return errbuf_set(err, errlen, "tdx: %s: the signed part is not a JSON object",
				  name);
	}
	return 0;
}

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : NULL;
}

static int jint(struct json_object *o, const char *k, int64_t *ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return -EINVAL;
	*ret = json_object_get_int64(v);
	return 0;
}

/* hex of exactly n bytes */
static int jhex(struct json_object *o, const char *k, uint8_t *out, size_t n)
{
	const char *s = jstr(o, k);

	return s && strlen(s) == 2 * n && hex_decode(s, 2 * n, out, n, NULL) == 0 ? 0 : -EINVAL;
}

/* The QE identity (Intel's "Enclave Identity" v2 for the TD QE): current at o->at, the QE
 * report's MISCSELECT, ATTRIBUTES (under their masks), MRSIGNER and ISVPRODID, and the TCB
 * level of its ISVSVN: the first level whose isvsvn the QE's reaches. */
static int check_qe_identity(struct tdx_quote *q, const struct tdx_verify_opts *o, char *err,
			     size_t errlen)
{
	struct json_object *id, *levels;
	const struct tdx_qe_report *qr = &q->qe_report;
	uint8_t misc[4], misc_mask[4], attr[16], attr_mask[16], mrsigner[32];
	int64_t version, prodid;
	time_t issue, next;
	const char *status = NULL;
	size_t i;
	int r = 0;

	if ((r = signed_json(o->qe_identity, o->qe_identity_len, "enclaveIdentity",
			     o->qe_identity_chain, o->qe_identity_chain_len, o, &id, err, errlen)) <
	    0)
		return r;
	if (!jstr(id, "id") || strcmp(jstr(id, "id"), "TD_QE") || jint(id, "version", &version) ||
	    version != 2) {
		r = errbuf_set(err, errlen, "tdx: qe identity: not id TD_QE version 2");
		goto out;
	}
	if (rfc3339_utc(jstr(id, "issueDate"), &issue) < 0 ||
	    rfc3339_utc(jstr(id, "nextUpdate"), &next) < 0) {
		r = errbuf_set(err, errlen, "tdx: qe identity: issueDate or nextUpdate malformed");
		goto out;
	}
	if (o->at < issue) {
		r = errbuf_set(err, errlen, "tdx: qe identity: issued after the time of the check");
		goto out;
	}
	if (o->at > next) {
		r = errbuf_set(err, errlen,
			       "tdx: qe identity: its nextUpdate %s has passed at the time of the "
			       "check: it is out of date",
			       jstr(id, "nextUpdate"));
		goto out;
	}
	if (jhex(id, "miscselect", misc, 4) || jhex(id, "miscselectMask", misc_mask, 4) ||
	    jhex(id, "attributes", attr, 16) || jhex(id, "attributesMask", attr_mask, 16) ||
	    jhex(id, "mrsigner", mrsigner, 32) || jint(id, "isvprodid", &prodid) ||
	    !json_object_object_get_ex(id, "tcbLevels", &levels) ||
	    !json_object_is_type(levels, json_type_array)) {
		r = errbuf_set(err, errlen, "tdx: qe identity: a field is missing or malformed");
		goto out;
	}
	/* MISCSELECT is little-endian in the report, big-endian hex in the identity */
	for (i = 0; i < 4; i++)
		if ((((qr->misc_select >> (8 * (3 - i))) & 0xff) & misc_mask[i]) != misc[i]) {
			r = errbuf_set(
			    err, errlen,
			    "tdx: qe identity: the QE's MISCSELECT is not the identity's");
			goto out;
		}
	for (i = 0; i < 16; i++)
		if ((qr->attributes[i] & attr_mask[i]) != attr[i]) {
			r = errbuf_set(
			    err, errlen,
			    "tdx: qe identity: the QE's ATTRIBUTES are not the identity's");
			goto out;
		}
	if (memcmp(qr->mr_signer, mrsigner, 32)) {
		r = errbuf_set(err, errlen,
			       "tdx: qe identity: the QE's MRSIGNER is not the identity's");
		goto out;
	}
	if (prodid != qr->isv_prod_id) {
		r = errbuf_set(err, errlen,
			       "tdx: qe identity: the QE's ISVPRODID %u is not the identity's %lld",
			       qr->isv_prod_id, (long long)prodid);
		goto out;
	}
	for (i = 0; i < json_object_array_length(levels) && i < 64; i++) {
		struct json_object *l = json_object_array_get_idx(levels, i), *tcb;
		int64_t svn;

		if (!json_object_object_get_ex(l, "tcb", &tcb) || jint(tcb, "isvsvn", &svn) ||
		    !jstr(l, "tcbStatus")) {
			r = errbuf_set(err, errlen, "tdx: qe identity: TCB level %zu malformed", i);
			goto out;
		}
		if (qr->isv_svn >= svn) {
			status = jstr(l, "tcbStatus");
			break;
		}
	}
	if (!status) {
		r = errbuf_set(err, errlen,
			       "tdx: qe identity: the QE's ISVSVN %u is below every TCB level",
			       qr->isv_svn);
		goto out;
	}
	snprintf(q->qe_tcb_status, sizeof q->qe_tcb_status, "%s", status);
	if (!strcmp(status, "UpToDate"))
		goto out;
	if (strcmp(status, "Revoked") && o->allow_qe_out_of_date)
		goto out;
	r = errbuf_set(err, errlen, "tdx: qe identity: the QE's TCB level (ISVSVN %u) is %s",
		       qr->isv_svn, status);
out:
	json_object_put(id);
	return r < 0 ? r : 0;
}

/* The PCK certificate's SGX extensions (Intel's "SGX PCK Certificate and CRL Profile",
 * 1.2.840.113741.1.13.1): the TCB (16 component SVNs, PCE SVN), the PCE ID and the FMSPC. */
struct pck_ext {
	uint8_t comp[16];
	int64_t pcesvn;
	uint8_t pceid[2], fmspc[6];
	unsigned have; /* bit k: comp k; 16 pcesvn; 17 pceid; 18 fmspc */
};

static const uint8_t oid_sgx[] = {0x2a, 0x86, 0x48, 0x86, 0xf8, 0x4d, 0x01, 0x0d, 0x01};

static int small_int(struct der_in v, int64_t *ret)
{
	if (!v.len || v.len > 3 || (v.p[0] & 0x80))
		return -EBADMSG;
	*ret = 0;
	for (size_t i = 0; i < v.len; i++)
		*ret = *ret << 8 | v.p[i];
	return 0;
}

static int pck_ext_parse(const struct x509_cert *c, struct pck_ext *x)
{
	struct der_in exts = c->exts, v, seq, ent, oid, val, tcb, te, toid, tval;
	struct x509_ext e;
	uint8_t tag;
	int64_t n;

	memset(x, 0, sizeof *x);
	while (x509_ext_next(&exts, &e) > 0) {
		if (!der_oid_is(&e.oid, oid_sgx, sizeof oid_sgx))
			continue;
		v = e.val;
		if (der_expect(&v, DER_SEQUENCE, &seq, NULL) < 0 || v.len)
			return -EBADMSG;
		while (seq.len) {
			if (der_expect(&seq, DER_SEQUENCE, &ent, NULL) < 0 ||
			    der_expect(&ent, DER_OID, &oid, NULL) < 0 ||
			    der_next(&ent, &tag, &val, NULL) < 0 || ent.len)
				return -EBADMSG;
			if (oid.len != sizeof oid_sgx + 1 || memcmp(oid.p, oid_sgx, sizeof oid_sgx))
				continue;
			switch (oid.p[sizeof oid_sgx]) {
			case 2: /* TCB */
				if (tag != DER_SEQUENCE)
					return -EBADMSG;
				tcb = val;
				while (tcb.len) {
					unsigned k;

					if (der_expect(&tcb, DER_SEQUENCE, &te, NULL) < 0 ||
					    der_expect(&te, DER_OID, &toid, NULL) < 0 ||
					    der_next(&te, &tag, &tval, NULL) < 0 || te.len)
						return -EBADMSG;
					if (toid.len != sizeof oid_sgx + 2 ||
					    memcmp(toid.p, oid_sgx, sizeof oid_sgx) ||
					    toid.p[sizeof oid_sgx] != 2)
						continue;
					k = toid.p[sizeof oid_sgx + 1];
					if (k >= 1 && k <= 17) {
						if (tag != DER_INTEGER || small_int(tval, &n) < 0 ||
						    (k <= 16 && n > 255))
							return -EBADMSG;
						if (k <= 16)
							x->comp[k - 1] = (uint8_t)n;
						else
							x->pcesvn = n;
						x->have |= 1u << (k - 1);
					}
				}
				break;
			case 3:
				if (tag != DER_OCTET_STRING || val.len != 2)
					return -EBADMSG;
				memcpy(x->pceid, val.p, 2);
				x->have |= 1u << 17;
				break;
			case 4:
				if (tag != DER_OCTET_STRING || val.len != 6)
					return -EBADMSG;
				memcpy(x->fmspc, val.p, 6);
				x->have |= 1u << 18;
				break;
			}
		}
	}
	return x->have == (1u << 19) - 1 ? 0 : -EBADMSG;
}

/* the 16 "svn" of a JSON array of components */
static int jcomps(struct json_object *tcb, const char *k, uint8_t out[16])
{
	struct json_object *a;

	if (!json_object_object_get_ex(tcb, k, &a) || !json_object_is_type(a, json_type_array) ||
	    json_object_array_length(a) != 16)
		return -EINVAL;
	for (size_t i = 0; i < 16; i++) {
		int64_t v;

		if (jint(json_object_array_get_idx(a, i), "svn", &v) || v < 0 || v > 255)
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	return 0;
}

/* The TCB info (TDX, version 3): current at o->at, for the PCK's FMSPC and PCE ID, the TDX
 * module's signer and attributes, and the TCB level: the first whose SGX components and PCE
 * SVN the PCK's reach and whose TDX components the quote's TEE TCB SVN reaches (from index 2
 * when TEE_TCB_SVN[1] is not 0). */
static int check_tcb_info(struct tdx_quote *q, const struct x509_cert *pck,
			  const struct tdx_verify_opts *o, char *err, size_t errlen)
{
	struct json_object *ti, *mod, *levels;
	struct pck_ext x;
	uint8_t fmspc[6], pceid[2], mrsigner[48], attr[8], mask[8];
	int64_t version;
	time_t issue, next;
	const char *status = NULL;
	size_t i, from = q->body.tee_tcb_svn[1] ? 2 : 0;
	int r;

	if (pck_ext_parse(pck, &x) < 0)
		return errbuf_set(
		    err, errlen,
		    "tdx: pck: its SGX extensions (TCB, PCE ID, FMSPC) are missing or "
		    "malformed");
	if ((r = signed_json(o->tcb_info, o->tcb_info_len, "tcbInfo", o->tcb_info_chain,
			     o->tcb_info_chain_len, o, &ti, err, errlen)) < 0)
		return r;
	r = 0;
	if (!jstr(ti, "id") || strcmp(jstr(ti, "id"), "TDX") || jint(ti, "version", &version) ||
	    version != 3) {
		r = errbuf_set(err, errlen, "tdx: tcb info: not id TDX version 3");
		goto out;
	}
	if (rfc3339_utc(jstr(ti, "issueDate"), &issue) < 0 ||
	    rfc3339_utc(jstr(ti, "nextUpdate"), &next) < 0) {
		r = errbuf_set(err, errlen, "tdx: tcb info: issueDate or nextUpdate malformed");
		goto out;
	}
	if (o->at < issue) {
		r = errbuf_set(err, errlen, "tdx: tcb info: issued after the time of the check");
		goto out;
	}
	if (o->at > next) {
		r = errbuf_set(err, errlen,
			       "tdx: tcb info: its nextUpdate %s has passed at the time of the "
			       "check: it is out of date",
			       jstr(ti, "nextUpdate"));
		goto out;
	}
	if (jhex(ti, "fmspc", fmspc, 6) || jhex(ti, "pceId", pceid, 2) ||
	    !json_object_object_get_ex(ti, "tdxModule", &mod) ||
	    jhex(mod, "mrsigner", mrsigner, 48) || jhex(mod, "attributes", attr, 8) ||
	    jhex(mod, "attributesMask", mask, 8) ||
	    !json_object_object_get_ex(ti, "tcbLevels", &levels) ||
	    !json_object_is_type(levels, json_type_array)) {
		r = errbuf_set(err, errlen, "tdx: tcb info: a field is missing or malformed");
		goto out;
	}
	if (memcmp(fmspc, x.fmspc, 6) || memcmp(pceid, x.pceid, 2)) {
		r = errbuf_set(err, errlen,
			       "tdx: tcb info: its FMSPC or PCE ID is not the PCK certificate's");
		goto out;
	}
	if (memcmp(mrsigner, q->body.mr_signer_seam, 48)) {
		r = errbuf_set(err, errlen,
			       "tdx: tcb info: MRSIGNERSEAM is not the TDX module's signer");
		goto out;
	}
	for (i = 0; i < 8; i++)
		if ((q->body.seam_attributes[i] & mask[i]) != attr[i]) {
			r = errbuf_set(err, errlen,
				       "tdx: tcb info: SEAMATTRIBUTES are not the TDX module's");
			goto out;
		}
	for (i = 0; i < json_object_array_length(levels) && i < 128; i++) {
		struct json_object *l = json_object_array_get_idx(levels, i), *tcb;
		uint8_t sgx[16], tdx[16];
		int64_t pcesvn;
		size_t k;

		if (!json_object_object_get_ex(l, "tcb", &tcb) ||
		    jcomps(tcb, "sgxtcbcomponents", sgx) || jcomps(tcb, "tdxtcbcomponents", tdx) ||
		    jint(tcb, "pcesvn", &pcesvn) || !jstr(l, "tcbStatus")) {
			r = errbuf_set(err, errlen, "tdx: tcb info: TCB level %zu malformed", i);
			goto out;
		}
		for (k = 0; k < 16 && x.comp[k] >= sgx[k]; k++)
			;
		if (k < 16 || x.pcesvn < pcesvn)
			continue;
		for (k = from; k < 16 && q->body.tee_tcb_svn[k] >= tdx[k]; k++)
			;
		if (k < 16)
			continue;
		status = jstr(l, "tcbStatus");
		break;
	}
	if (!status) {
		r = errbuf_set(err, errlen,
			       "tdx: tcb info: no TCB level that the platform reaches (PCK CPU SVN "
			       "%u,%u,%u,%u,%u,%u,%u,%u..., PCE SVN %lld, TEE TCB SVN "
			       "%02x%02x%02x%02x...)",
			       x.comp[0], x.comp[1], x.comp[2], x.comp[3], x.comp[4], x.comp[5],
			       x.comp[6], x.comp[7], (long long)x.pcesvn, q->body.tee_tcb_svn[0],
			       q->body.tee_tcb_svn[1], q->body.tee_tcb_svn[2],
			       q->body.tee_tcb_svn[3]);
		goto out;
	}
	snprintf(q->tcb_status, sizeof q->tcb_status, "%s", status);
	if (strcmp(status, "UpToDate"))
		r = errbuf_set(err, errlen, "tdx: tcb info: the platform's TCB level is %s",
			       status);
out:
	json_object_put(ti);
	return r < 0 ? r : 0;
}

int tdx_verify(const uint8_t *b, size_t len, const struct tdx_verify_opts *o, struct tdx_quote *q,
	       char *err, size_t errlen)
{
	static const uint8_t zero32[32];
	struct x509_cert pck;
	br_sha256_context sc;
	uint8_t h[32];
	int r;

	if ((r = tdx_quote_parse(b, len, q, err, errlen)) < 0)
		return r;
	if ((r = check_chain(q, o, &pck, err, errlen)) < 0)
		return r;
	if (ecdsa_p256_raw_verify(pck.key.p + 1, q->qe_report_raw, TDX_QE_REPORT_LEN,
				  q->qe_report_sig) < 0)
		return errbuf_set(err, errlen,
				  "tdx: qe report: its signature does not verify with the PCK key");
	br_sha256_init(&sc);
	br_sha256_update(&sc, q->ak, 64);
	br_sha256_update(&sc, q->qe_auth, q->qe_auth_len);
	br_sha256_out(&sc, h);
	if (memcmp(q->qe_report.report_data, h, 32) ||
	    memcmp(q->qe_report.report_data + 32, zero32, 32))
		return errbuf_set(err, errlen,
				  "tdx: qe report: its report data is not SHA-256(attestation key "
				  "|| QE authentication data) || 32 zero bytes");
	if (ecdsa_p256_raw_verify(q->ak, q->signed_part, TDX_SIGNED_LEN, q->sig) < 0)
		return errbuf_set(err, errlen,
				  "tdx: signature: the quote's ECDSA P-256 signature does not "
				  "verify with the attestation key");
	if (o->qe_identity && (r = check_qe_identity(q, o, err, errlen)) < 0)
		return r;
	if (o->tcb_info && (r = check_tcb_info(q, &pck, o, err, errlen)) < 0)
		return r;
	return 0;
}

/* ---- the policy ---- */

static int policy_hex(struct json_object *o, const char *k, uint8_t *out, size_t n, int *has,
		      char *err, size_t errlen)
{
	struct json_object *v;
	const char *s;

	if (!json_object_object_get_ex(o, k, &v))
		return 0;
	s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
	if (s && !strcmp(s, "latest"))
		return errbuf_set(err, errlen,
				  "tdx: policy: %s is \"latest\": resolve it to a value first", k);
	if (!s || strlen(s) != 2 * n || hex_decode(s, 2 * n, out, n, NULL) < 0)
		return errbuf_set(err, errlen, "tdx: policy: %s is not %zu bytes in hex", k, n);
	if (has)
		*has = 1;
	return 0;
}

static int policy_svn(struct json_object *o, const char *k, uint16_t *out, char *err, size_t errlen)
{
	struct json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(o, k, &v))
		return 0;
	if (json_object_is_type(v, json_type_string) &&
	    !strcmp(json_object_get_string(v), "latest"))
		return errbuf_set(err, errlen,
				  "tdx: policy: %s is \"latest\": resolve it to a value first", k);
	if (!json_object_is_type(v, json_type_int) || (n = json_object_get_int64(v)) < 0 ||
	    n > 0xffff)
		return errbuf_set(err, errlen, "tdx: policy: %s is not a number from 0 to 65535",
				  k);
	*out = (uint16_t)n;
	return 0;
}

int tdx_policy_parse(const char *json, size_t len, struct tdx_policy *p, char *err, size_t errlen)
{
	struct json_object *o;
	int r;

	memset(p, 0, sizeof *p);
	while (len && (json[len - 1] == '\n' || json[len - 1] == '\r' || json[len - 1] == ' '))
		len--;
	o = json_parse_exact(json, len);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return errbuf_set(err, errlen, "tdx: policy: not a JSON object");
	}
	if ((r = policy_svn(o, "qeSVN", &p->min_qe_svn, err, errlen)) < 0 ||
	    (r = policy_svn(o, "pceSVN", &p->min_pce_svn, err, errlen)) < 0 ||
	    (r = policy_hex(o, "teeTCBSVN", p->min_tee_tcb_svn, 16, NULL, err, errlen)) < 0 ||
	    (r = policy_hex(o, "qeVendorID", p->qe_vendor_id, 16, &p->has_qe_vendor_id, err,
			    errlen)) < 0 ||
	    (r = policy_hex(o, "mrSeam", p->mr_seam, 48, &p->has_mr_seam, err, errlen)) < 0 ||
	    (r = policy_hex(o, "xfam", p->xfam, 8, &p->has_xfam, err, errlen)) < 0) {
		json_object_put(o);
		return r;
	}
	json_object_put(o);
	return 0;
}

static int policy_refuse(char *err, size_t errlen, const char *field, const uint8_t *got,
			 const uint8_t *want, size_t n, const char *how)
{
	char g[97], w[97];

	hex_encode(got, n, g, sizeof g);
	hex_encode(want, n, w, sizeof w);
	errbuf_set(err, errlen, "tdx: policy: %s %s is %s the policy's %s", field, g, how, w);
	return -EACCES;
}

int tdx_policy_check(const struct tdx_quote *q, const struct tdx_policy *p, char *err,
		     size_t errlen)
{
	if (q->header.qe_svn < p->min_qe_svn) {
		errbuf_set(err, errlen, "tdx: policy: qeSVN %u is below the policy's minimum %u",
			   q->header.qe_svn, p->min_qe_svn);
		return -EACCES;
	}
	if (q->header.pce_svn < p->min_pce_svn) {
		errbuf_set(err, errlen, "tdx: policy: pceSVN %u is below the policy's minimum %u",
			   q->header.pce_svn, p->min_pce_svn);
		return -EACCES;
	}
	for (int i = 0; i < 16; i++)
		if (q->body.tee_tcb_svn[i] < p->min_tee_tcb_svn[i])
			return policy_refuse(err, errlen, "teeTCBSVN", q->body.tee_tcb_svn,
					     p->min_tee_tcb_svn, 16, "below (byte by byte)");
	if (p->has_qe_vendor_id && memcmp(q->header.qe_vendor_id, p->qe_vendor_id, 16))
		return policy_refuse(err, errlen, "qeVendorID", q->header.qe_vendor_id,
				     p->qe_vendor_id, 16, "not");
	if (p->has_mr_seam && memcmp(q->body.mr_seam, p->mr_seam, 48))
		return policy_refuse(err, errlen, "mrSeam", q->body.mr_seam, p->mr_seam, 48, "not");
	if (p->has_xfam && memcmp(q->body.xfam, p->xfam, 8))
		return policy_refuse(err, errlen, "xfam", q->body.xfam, p->xfam, 8, "not");
	return 0;
}
