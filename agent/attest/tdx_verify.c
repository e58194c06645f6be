/* The TDX quote verifier, its signature part (tdx.h): the PCK chain to Intel's SGX Root CA,
 * the QE report's signature by the PCK, the QE report data binding the attestation key, the
 * quote's signature by the attestation key. The checks of go-tdx-guest's verify.TdxQuote and
 * Intel's QVL that need no collateral (docs/tdx.md says what is not checked yet). */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bearssl.h>
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

/* The PEM chain of the certification data: exactly PCK, CA, root. */
static int split_chain(const uint8_t *pem, size_t len, uint8_t der[][PCK_DER_MAX], size_t *der_len,
		       char *err, size_t errlen)
{
	size_t off = 0, n = 0;

	for (;;) {
		const uint8_t *end;
		int r;

		if (n == TDX_PCK_CHAIN_MAX) {
			if (memmem(pem + off, len - off, "-----BEGIN", 10))
				return errbuf_set(err, errlen,
						  "tdx: pck chain: more than %d certificates",
						  TDX_PCK_CHAIN_MAX);
			return 0;
		}
		r = pem_decode((const char *)pem + off, len - off, "CERTIFICATE", der[n],
			       PCK_DER_MAX, &der_len[n]);
		if (r == -ENOENT)
			return errbuf_set(err, errlen,
					  "tdx: pck chain: %zu certificates, not PCK, CA and root",
					  n);
		if (r < 0)
			return errbuf_set(
			    err, errlen, "tdx: pck chain: certificate %zu is not valid PEM", n + 1);
		end = memmem(pem + off, len - off, pem_end, sizeof pem_end - 1);
		if (!end)
			return errbuf_set(err, errlen,
					  "tdx: pck chain: certificate %zu has no end line", n + 1);
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

	if ((r = split_chain(q->pck_pem, q->pck_pem_len, der, der_len, err, errlen)) < 0)
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
	if (o->pck_crl && (r = check_crl(o->pck_crl, o->pck_crl_len, "PCK CRL", &ca, &pck->serial,
					 "PCK certificate", o->at, err, errlen)) < 0)
		return r;
	return 0;
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
	return 0;
}
