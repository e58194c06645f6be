/* Our side of an aTLS handshake: a fresh P-256 key per connection, the attestation document
 * for the peer's nonce, the self-signed certificate that carries it, and the signatures the
 * handshake asks for. The private key is wiped with the connection. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <bearssl.h>

#include "atls.h"
#include "base/base.h"
#include "conn_internal.h"

int atls_make_cert(struct atls_conn *c)
{
	uint8_t user_data[ATLS_USER_DATA_LEN];
	uint8_t *doc = NULL;
	size_t doc_len = 0;
	char err[200];
	int r;

	if (!c->key_ready) {
		r = p256_generate(&c->key);
		if (r < 0) {
			errbuf_set(c->error, sizeof c->error, "handshake: key generation failed");
			return r;
		}
		c->key_ready = 1;
	}
	atls_key_user_data(&c->key, user_data);
	if (c->cfg.issuer) {
		doc = malloc(ATLS_DOC_MAX);
		if (!doc)
			return -ENOMEM;
		r = c->cfg.issuer->issue(c->cfg.issuer->ctx, user_data, c->peer_nonce,
					 c->peer_nonce_len, doc, ATLS_DOC_MAX, &doc_len, err,
					 sizeof err);
		if (r < 0) {
			errbuf_set(c->error, sizeof c->error, "handshake: attestation: %s", err);
			free(doc);
			return r;
		}
	}
	c->cert_len = doc_len + 1024;
	c->cert = malloc(c->cert_len);
	if (!c->cert) {
		free(doc);
		return -ENOMEM;
	}
	r = atls_cert_build(&c->key, c->cfg.now ? c->cfg.now() : time(NULL),
			    c->cfg.issuer ? c->cfg.issuer->oid : NULL,
			    c->cfg.issuer ? c->cfg.issuer->oid_len : 0, doc, doc_len, c->cert,
			    c->cert_len, &c->cert_len);
	free(doc);
	if (r < 0) {
		errbuf_set(c->error, sizeof c->error, "handshake: certificate: %s", strerror(-r));
		return r;
	}
	c->chain.data = c->cert;
	c->chain.data_len = c->cert_len;
	return 0;
}

size_t atls_sign(struct atls_conn *c, int hash_id, size_t hv_len, unsigned char *data, size_t len)
{
	const br_hash_class *h;
	unsigned char hv[64], sig[80];
	size_t n;

	switch (hash_id) {
	case br_sha256_ID:
		h = &br_sha256_vtable;
		break;
	case br_sha384_ID:
		h = &br_sha384_vtable;
		break;
	case br_sha512_ID:
		h = &br_sha512_vtable;
		break;
	default:
		return 0;
	}
	if (hv_len > sizeof hv)
		return 0;
	memcpy(hv, data, hv_len);
	n = p256_sign_presigned(&c->key, h, hv, sig, sizeof sig);
	if (n == 0 || n > len)
		return 0;
	memcpy(data, sig, n);
	return n;
}

/* One step of our work that needs nothing from the peer; conn.c calls it when a read finds
 * nothing in, so it runs while the peer computes. A client checks the server's signature
 * once it is in (the engine went on as if it held): normally while the server answers our
 * second flight. A client with an issuer makes its certificate key and the nonces of its
 * two signatures (certificate, CertificateVerify) while the server computes its first
 * flight: one key per connection, made once (a failure is left for atls_make_cert to
 * report); a nonce not made in time is made when signing. 1 after a step, 0 when none is
 * left. */
int atls_idle_work(struct atls_conn *c)
{
	if (c->is_server)
		return 0;
	if (c->ske.pending) {
		(void)atls_ske_check(c); /* a failure: conn.c ends the handshake */
		return 1;
	}
	if (!c->cfg.issuer || c->cert)
		return 0;
	if (!c->key_ready && !c->key_tried) {
		c->key_tried = 1;
		c->key_ready = p256_generate(&c->key) == 0;
		return 1;
	}
	if (c->key_ready && c->presigns < 2) {
		c->presigns++;
		(void)p256_presign(&c->key);
		return 1;
	}
	return 0;
}

void atls_conn_wipe_keys(struct atls_conn *c)
{
	secret_wipe(&c->key, sizeof c->key);
	c->key_ready = 0;
}
