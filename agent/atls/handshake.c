/* The handshake callbacks of an aTLS connection: BearSSL's client-certificate class (reads
 * the server nonce from the CertificateRequest's single DN, then makes our certificate) and
 * server policy class (reads the client nonce from the SNI, then makes our certificate). */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <bearssl.h>

#include "atls.h"
#include "base/base.h"
#include "conn_internal.h"

#define CONN_OF(pctx, member) \
	((struct atls_conn *)((char *)(pctx)-offsetof(struct atls_conn, member)))

/* ---- client: the client-certificate class ---- */

static void cc_start_name_list(const br_ssl_client_certificate_class **pctx)
{
	struct atls_conn *c = CONN_OF(pctx, ccert);

	c->ca_dn_count = 0;
	c->ca_dn_len = 0;
	c->ca_dn_overflow = 0;
}

static void cc_start_name(const br_ssl_client_certificate_class **pctx, size_t len)
{
	struct atls_conn *c = CONN_OF(pctx, ccert);

	(void)len;
	c->ca_dn_count++;
}

/* DNs arrive in chunks of at most 256 bytes; only the first one matters (and there must be
 * exactly one, as Go's decodeNonceFromAcceptableCAs insists). */
static void cc_append_name(const br_ssl_client_certificate_class **pctx, const unsigned char *data,
			   size_t len)
{
	struct atls_conn *c = CONN_OF(pctx, ccert);

	if (c->ca_dn_count != 1)
		return;
	if (len > sizeof c->ca_dn - c->ca_dn_len) {
		c->ca_dn_overflow = 1;
		return;
	}
	memcpy(c->ca_dn + c->ca_dn_len, data, len);
	c->ca_dn_len += len;
}

static void cc_end_name(const br_ssl_client_certificate_class **pctx)
{
	(void)pctx;
}

static void cc_end_name_list(const br_ssl_client_certificate_class **pctx)
{
	(void)pctx;
}

static void cc_choose(const br_ssl_client_certificate_class **pctx, const br_ssl_client_context *cc,
		      uint32_t auth_types, br_ssl_client_certificate *choices)
{
	struct atls_conn *c = CONN_OF(pctx, ccert);
	char err[160];

	(void)cc;
	memset(choices, 0, sizeof *choices);
	if (!c->cfg.issuer)
		return;	  /* no certificate: an empty Certificate message, as Go without issuer */
	(void)auth_types; /* Go's servers accept ECDSA with SHA-256; BearSSL checks it too */
	if (c->ca_dn_count != 1 || c->ca_dn_overflow) {
		errbuf_set(c->error, sizeof c->error,
			   "handshake: server sent %d acceptable-CA names, want exactly 1",
			   c->ca_dn_count);
		return;
	}
	if (atls_nonce_dn_decode(c->ca_dn, c->ca_dn_len, c->peer_nonce, sizeof c->peer_nonce,
				 &c->peer_nonce_len, err, sizeof err) < 0) {
		errbuf_set(c->error, sizeof c->error, "handshake: server nonce: %s", err);
		return;
	}
	if (atls_make_cert(c) < 0)
		return;
	choices->auth_type = BR_AUTH_ECDSA;
	choices->hash_id = br_sha256_ID;
	choices->chain = &c->chain;
	choices->chain_len = 1;
}

static uint32_t cc_do_keyx(const br_ssl_client_certificate_class **pctx, unsigned char *data,
			   size_t *len)
{
	(void)pctx;
	(void)data;
	(void)len;
	return 0; /* ECDHE suites only: never called */
}

static size_t cc_do_sign(const br_ssl_client_certificate_class **pctx, int hash_id, size_t hv_len,
			 unsigned char *data, size_t len)
{
	return atls_sign(CONN_OF(pctx, ccert), hash_id, hv_len, data, len);
}

static const br_ssl_client_certificate_class ccert_vtable = {
    .context_size = sizeof(const br_ssl_client_certificate_class *),
    .start_name_list = cc_start_name_list,
    .start_name = cc_start_name,
    .append_name = cc_append_name,
    .end_name = cc_end_name,
    .end_name_list = cc_end_name_list,
    .choose = cc_choose,
    .do_keyx = cc_do_keyx,
    .do_sign = cc_do_sign,
};

void atls_ccert_setup(struct atls_conn *c)
{
	c->ccert = &ccert_vtable;
}

/* ---- server: the policy class ---- */

static int pol_choose(const br_ssl_server_policy_class **pctx, const br_ssl_server_context *cc,
		      br_ssl_server_choices *choices)
{
	struct atls_conn *c = CONN_OF(pctx, policy);
	const char *sni = br_ssl_engine_get_server_name(&cc->eng);
	const br_suite_translated *st;
	size_t n, slen = strlen(sni);

	/* The client nonce is the SNI in standard base64; invalid base64 aborts (as in Go). No SNI
	 * means an empty nonce, which only a validator can object to. */
	if (base64_decode(BASE64_STD, sni, slen, c->peer_nonce, sizeof c->peer_nonce,
			  &c->peer_nonce_len) < 0) {
		errbuf_set(c->error, sizeof c->error,
			   "handshake: client SNI is not standard base64 (%zu characters)", slen);
		return 0;
	}
	if ((br_ssl_server_get_client_hashes(cc) & (1u << (8 + br_sha256_ID))) == 0 &&
	    (br_ssl_server_get_client_hashes(cc) & (1u << br_sha256_ID)) == 0) {
		errbuf_set(c->error, sizeof c->error, "%s",
			   "handshake: client accepts no ECDSA-SHA256 signature");
		return 0;
	}
	st = br_ssl_server_get_client_suites(cc, &n);
	if (n == 0) {
		errbuf_set(c->error, sizeof c->error, "%s",
			   "handshake: no common cipher suite (want ECDHE-ECDSA with AEAD)");
		return 0;
	}
	if (atls_make_cert(c) < 0)
		return 0;
	choices->cipher_suite = st[0][0];
	choices->algo_id = 0xFF00 + br_sha256_ID;
	choices->chain = &c->chain;
	choices->chain_len = 1;
	return 1;
}

static uint32_t pol_do_keyx(const br_ssl_server_policy_class **pctx, unsigned char *data,
			    size_t *len)
{
	(void)pctx;
	(void)data;
	(void)len;
	return 0;
}

static size_t pol_do_sign(const br_ssl_server_policy_class **pctx, unsigned algo_id,
			  unsigned char *data, size_t hv_len, size_t len)
{
	return atls_sign(CONN_OF(pctx, policy), (int)(algo_id & 0xFF), hv_len, data, len);
}

static const br_ssl_server_policy_class policy_vtable = {
    .context_size = sizeof(const br_ssl_server_policy_class *),
    .choose = pol_choose,
    .do_keyx = pol_do_keyx,
    .do_sign = pol_do_sign,
};

void atls_policy_setup(struct atls_conn *c)
{
	c->policy = &policy_vtable;
}
