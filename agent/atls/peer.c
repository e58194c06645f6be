/* Checking the peer's aTLS certificate the way Go's aTLS does (spec §1.7): the first
 * certificate only, strict DER, a positive serial, "now" inside the validity window, no
 * critical extension we do not handle, an EKU (if any) that allows serverAuth, and then the
 * attestation extension through a validator, whose user data must equal SHA-256(SPKI). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bearssl.h>

#include "atls.h"
#include "base/base.h"
#include "base/der.h"
#include "conn_internal.h"

static const uint8_t oid_eku[] = {0x55, 0x1d, 0x25};
static const uint8_t oid_ku[] = {0x55, 0x1d, 0x0f};
static const uint8_t oid_bc[] = {0x55, 0x1d, 0x13};
static const uint8_t oid_san[] = {0x55, 0x1d, 0x11};
static const uint8_t oid_any_eku[] = {0x55, 0x1d, 0x25, 0x00};
static const uint8_t oid_server_auth[] = {0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01};

static int eku_allows_server_auth(struct der_in v)
{
	struct der_in seq, oid;

	if (der_expect(&v, 0x30, &seq, NULL) < 0 || v.len)
		return 0;
	while (seq.len) {
		if (der_expect(&seq, 0x06, &oid, NULL) < 0)
			return 0;
		if (der_oid_is(&oid, oid_server_auth, sizeof oid_server_auth) ||
		    der_oid_is(&oid, oid_any_eku, sizeof oid_any_eku))
			return 1;
	}
	return 0;
}

int atls_cert_check(const uint8_t *der, size_t len, time_t now, struct atls_cert_info *info,
		    char *err, size_t errlen)
{
	struct der_in in = {der, len}, cert, tbs, el, raw, exts;
	struct atls_cert_info ci = {0};
	time_t nb, na;

	if (der_expect(&in, 0x30, &cert, NULL) < 0 || in.len)
		return errbuf_set(err, errlen, "certificate: not a DER SEQUENCE");
	if (der_expect(&cert, 0x30, &tbs, NULL) < 0)
		return errbuf_set(err, errlen, "certificate: no TBSCertificate");
	if (der_expect(&tbs, 0xa0, &el, NULL) == -EBADMSG)
		return errbuf_set(err, errlen, "certificate: bad version");
	if (der_expect(&tbs, 0x02, &el, NULL) < 0 || el.len == 0 || el.len > 21 ||
	    (el.p[0] & 0x80) || (el.len > 1 && el.p[0] == 0 && !(el.p[1] & 0x80)))
		return errbuf_set(err, errlen,
				  "certificate: serial is not a positive minimal INTEGER");
	if (der_expect(&tbs, 0x30, &el, NULL) < 0 || der_expect(&tbs, 0x30, &el, NULL) < 0)
		return errbuf_set(err, errlen, "certificate: bad signature algorithm or issuer");
	if (der_expect(&tbs, 0x30, &el, NULL) < 0 || der_time(&el, &nb) < 0 ||
	    der_time(&el, &na) < 0 || el.len)
		return errbuf_set(err, errlen, "certificate: bad validity");
	if (now < nb || now > na)
		return errbuf_set(err, errlen,
				  "certificate: not valid now (valid from %lld to %lld, now %lld)",
				  (long long)nb, (long long)na, (long long)now);
	if (der_expect(&tbs, 0x30, &el, NULL) < 0)
		return errbuf_set(err, errlen, "certificate: bad subject");
	if (der_expect(&tbs, 0x30, &el, &raw) < 0)
		return errbuf_set(err, errlen, "certificate: bad subject public key info");
	ci.spki = raw.p;
	ci.spki_len = raw.len;
	der_expect(&tbs, 0x81, &el, NULL);
	der_expect(&tbs, 0x82, &el, NULL);
	if (der_expect(&tbs, 0xa3, &el, NULL) == 0) {
		if (der_expect(&el, 0x30, &exts, NULL) < 0 || el.len)
			return errbuf_set(err, errlen, "certificate: bad extensions");
		while (exts.len) {
			struct der_in ext, oid, crit, val;
			int critical = 0;

			if (der_expect(&exts, 0x30, &ext, NULL) < 0 ||
			    der_expect(&ext, 0x06, &oid, NULL) < 0)
				return errbuf_set(err, errlen, "certificate: bad extension");
			if (der_expect(&ext, 0x01, &crit, NULL) == 0) {
				if (crit.len != 1 || (crit.p[0] != 0 && crit.p[0] != 0xff))
					return errbuf_set(err, errlen,
							  "certificate: bad critical flag");
				critical = crit.p[0] != 0;
			}
			if (der_expect(&ext, 0x04, &val, NULL) < 0 || ext.len)
				return errbuf_set(err, errlen, "certificate: bad extension value");
			if (der_oid_is(&oid, oid_eku, sizeof oid_eku) &&
			    !eku_allows_server_auth(val))
				return errbuf_set(
				    err, errlen,
				    "certificate: extended key usage excludes serverAuth");
			if (critical && !der_oid_is(&oid, oid_eku, sizeof oid_eku) &&
			    !der_oid_is(&oid, oid_ku, sizeof oid_ku) &&
			    !der_oid_is(&oid, oid_bc, sizeof oid_bc) &&
			    !der_oid_is(&oid, oid_san, sizeof oid_san))
				return errbuf_set(err, errlen,
						  "certificate: unhandled critical extension");
			if (ci.n_ext < ATLS_EXT_MAX) {
				ci.ext[ci.n_ext].oid = oid.p;
				ci.ext[ci.n_ext].oid_len = oid.len;
				ci.ext[ci.n_ext].value = val.p;
				ci.ext[ci.n_ext].value_len = val.len;
				ci.n_ext++;
			}
		}
	}
	if (tbs.len)
		return errbuf_set(err, errlen, "certificate: trailing data in TBSCertificate");
	*info = ci;
	return 0;
}

int atls_nonce_dn_decode(const uint8_t *dn, size_t len, uint8_t *nonce, size_t cap, size_t *ret_len,
			 char *err, size_t errlen)
{
	struct der_in in = {dn, len}, rdns, set, atv, oid, val;
	uint8_t tag;

	if (der_expect(&in, 0x30, &rdns, NULL) < 0 || in.len)
		return errbuf_set(err, errlen, "DN is not a DER SEQUENCE");
	while (rdns.len) {
		if (der_expect(&rdns, 0x31, &set, NULL) < 0)
			return errbuf_set(err, errlen, "DN: bad RDN");
		while (set.len) {
			if (der_expect(&set, 0x30, &atv, NULL) < 0 ||
			    der_expect(&atv, 0x06, &oid, NULL) < 0 ||
			    der_next(&atv, &tag, &val, NULL) < 0)
				return errbuf_set(err, errlen, "DN: bad attribute");
			if (oid.len != 3 || memcmp(oid.p, "\x55\x04\x03", 3))
				continue;
			if (tag != 0x13 && tag != 0x0c && tag != 0x16 && tag != 0x14)
				continue;
			if (base64_decode(BASE64_STD, (const char *)val.p, val.len, nonce, cap,
					  ret_len) < 0)
				return errbuf_set(err, errlen, "DN: CN is not standard base64");
			return 0;
		}
	}
	return errbuf_set(err, errlen, "DN has no CN");
}

/* ---- the BearSSL X.509 class ---- */

#define PEER_OF(pctx) ((struct atls_peer *)(void *)(pctx))

static void px_start_chain(const br_x509_class **ctx, const char *server_name)
{
	struct atls_peer *p = PEER_OF(ctx);

	(void)server_name;
	p->ncert = 0;
	p->len = 0;
	p->err = 0;
}

static void px_start_cert(const br_x509_class **ctx, uint32_t length)
{
	struct atls_peer *p = PEER_OF(ctx);

	p->ncert++;
	if (p->ncert != 1)
		return;
	if (length > ATLS_PEER_CERT_MAX) {
		p->err = BR_ERR_X509_LIMIT_EXCEEDED;
		errbuf_set(p->conn->error, sizeof p->conn->error,
			   "handshake: peer certificate of %u bytes exceeds %d", (unsigned)length,
			   ATLS_PEER_CERT_MAX);
		return;
	}
	free(p->der);
	p->der = malloc(length ? length : 1);
	if (!p->der)
		p->err = BR_ERR_X509_LIMIT_EXCEEDED;
	p->cap = length;
}

static void px_append(const br_x509_class **ctx, const unsigned char *buf, size_t len)
{
	struct atls_peer *p = PEER_OF(ctx);

	if (p->ncert != 1 || p->err)
		return;
	if (len > p->cap - p->len) {
		p->err = BR_ERR_X509_LIMIT_EXCEEDED;
		return;
	}
	memcpy(p->der + p->len, buf, len);
	p->len += len;
}

static void px_end_cert(const br_x509_class **ctx)
{
	(void)ctx;
}

static unsigned px_end_chain(const br_x509_class **ctx)
{
	struct atls_peer *p = PEER_OF(ctx);
	struct atls_conn *c = p->conn;
	struct atls_cert_info ci;
	br_x509_decoder_context dc;
	const br_x509_pkey *pk;
	uint8_t user_data[ATLS_USER_DATA_LEN], spki_hash[32];
	char err[320]; /* a measurement refusal: two PCR values and the PCRs that differ */
	br_sha256_context h;

	if (p->err)
		return p->err;
	if (p->ncert == 0) {
		errbuf_set(c->error, sizeof c->error, "%s", "handshake: peer sent no certificate");
		return BR_ERR_X509_EMPTY_CHAIN;
	}
	br_x509_decoder_init(&dc, NULL, NULL);
	br_x509_decoder_push(&dc, p->der, p->len);
	pk = br_x509_decoder_get_pkey(&dc);
	if (!pk || pk->key_type != BR_KEYTYPE_EC || pk->key.ec.curve != BR_EC_secp256r1 ||
	    pk->key.ec.qlen > sizeof p->q) {
		/* aTLS keys are P-256 (spec §1.4); the handshake signature is checked on P-256 */
		errbuf_set(c->error, sizeof c->error, "handshake: peer certificate: %s",
			   pk ? "key is not ECDSA P-256" : "undecodable");
		return BR_ERR_X509_INVALID_VALUE;
	}
	/* The decoder's key points into its context: copy it out. */
	memcpy(p->q, pk->key.ec.q, pk->key.ec.qlen);
	p->pkey.key_type = BR_KEYTYPE_EC;
	p->pkey.key.ec.curve = pk->key.ec.curve;
	p->pkey.key.ec.q = p->q;
	p->pkey.key.ec.qlen = pk->key.ec.qlen;

	if (atls_cert_check(p->der, p->len, c->cfg.now ? c->cfg.now() : time(NULL), &ci, err,
			    sizeof err) < 0) {
		errbuf_set(c->error, sizeof c->error, "handshake: peer %s", err);
		return BR_ERR_X509_INVALID_VALUE;
	}
	if (c->cfg.n_validators == 0)
		return 0; /* as Go: no validators, no attestation check */
	for (size_t i = 0; i < ci.n_ext; i++) {
		for (size_t v = 0; v < c->cfg.n_validators; v++) {
			const struct atls_validator *val = &c->cfg.validators[v];

			if (ci.ext[i].oid_len != val->oid_len ||
			    memcmp(ci.ext[i].oid, val->oid, val->oid_len))
				continue;
			if (val->validate(val->ctx, ci.ext[i].value, ci.ext[i].value_len,
					  c->own_nonce, ATLS_NONCE_LEN, user_data, err,
					  sizeof err) < 0) {
				errbuf_set(c->error, sizeof c->error,
					   "handshake: peer attestation: %s", err);
				return BR_ERR_X509_NOT_TRUSTED;
			}
			br_sha256_init(&h);
			br_sha256_update(&h, ci.spki, ci.spki_len);
			br_sha256_out(&h, spki_hash);
			if (memcmp(spki_hash, user_data, 32)) {
				errbuf_set(
				    c->error, sizeof c->error, "%s",
				    "handshake: peer certificate hash does not match user data");
				return BR_ERR_X509_NOT_TRUSTED;
			}
			p->attested = 1;
			return 0;
		}
	}
	errbuf_set(c->error, sizeof c->error,
		   "handshake: peer certificate has no attestation extension for our validators "
		   "(%zu extensions)",
		   ci.n_ext);
	return BR_ERR_X509_NOT_TRUSTED;
}

static const br_x509_pkey *px_get_pkey(const br_x509_class *const *ctx, unsigned *usages)
{
	struct atls_peer *p = (struct atls_peer *)(void *)ctx;

	if (usages)
		*usages = BR_KEYTYPE_KEYX | BR_KEYTYPE_SIGN;
	return &p->pkey;
}

static const br_x509_class peer_vtable = {
    .context_size = sizeof(struct atls_peer),
    .start_chain = px_start_chain,
    .start_cert = px_start_cert,
    .append = px_append,
    .end_cert = px_end_cert,
    .end_chain = px_end_chain,
    .get_pkey = px_get_pkey,
};

void atls_peer_setup(struct atls_conn *c)
{
	c->x509.vtable = &peer_vtable;
	c->x509.conn = c;
}

void atls_peer_free(struct atls_peer *p)
{
	free(p->der);
	p->der = NULL;
}
