/* Inside an aTLS connection: shared by conn.c (I/O), handshake.c (BearSSL callbacks),
 * peer.c (the peer-certificate check) and keys.c (our key and certificate). */
#ifndef CONSTEL_ATLS_CONN_INTERNAL_H
#define CONSTEL_ATLS_CONN_INTERNAL_H

#include <stddef.h>
#include <time.h>

#include <bearssl.h>

#include "atls.h"
#include "base/p256.h"

#define ATLS_PEER_CERT_MAX (256 * 1024) /* Go's limit for the Certificate message */
#define ATLS_EXT_MAX	   16

/* What atls_cert_check found in a certificate; pointers into the checked DER. */
struct atls_cert_info {
	const uint8_t *spki;
	size_t spki_len;
	size_t n_ext;
	struct {
		const uint8_t *oid, *value;
		size_t oid_len, value_len;
	} ext[ATLS_EXT_MAX];
};

struct atls_conn;

/* The peer-certificate check, a br_x509_class (peer.c). */
struct atls_peer {
	const br_x509_class *vtable;
	struct atls_conn *conn;
	int ncert;
	unsigned err;
	uint8_t *der;
	size_t len, cap;
	br_x509_pkey pkey;
	unsigned char q[BR_EC_KBUF_PUB_MAX_SIZE];
	int attested;
};

struct atls_conn {
	int fd;
	int is_server;
	int established;
	short want;
	struct atls_config cfg;
	union {
		br_ssl_client_context client;
		br_ssl_server_context server;
	} u;
	br_ssl_engine_context *eng;
	unsigned char iobuf[BR_SSL_BUFSIZE_BIDI];

	uint8_t own_nonce[ATLS_NONCE_LEN];
	uint8_t peer_nonce[192]; /* an SNI of up to 255 base64 characters */
	size_t peer_nonce_len;

	/* Our fresh P-256 key and self-signed certificate (made during the handshake). A client
	 * makes the key as soon as its ClientHello is out (key_ready). */
	struct p256_key key;
	int key_ready, key_tried, presigns;
	unsigned char *cert;
	size_t cert_len;
	br_x509_certificate chain;

	/* Server with validators: the one acceptable-CA DN that carries our nonce. */
	unsigned char dn[160];
	br_x500_name dn_name;

	/* Client: the first DN of the server's CertificateRequest. */
	unsigned char ca_dn[1024];
	size_t ca_dn_len;
	int ca_dn_count;
	int ca_dn_overflow;

	/* The engine's curves and signature check: our own copy of atls_ec_client/server, so
	 * that the check, which BearSSL hands only this pointer, finds its connection. */
	br_ec_impl ec;
	/* Client: the server's ServerKeyExchange signature. Checking it costs ~0.2 ms; it is
	 * done while the server answers our second flight (atls_idle_work), and in any case
	 * before the handshake counts as finished and before any application data goes out or
	 * is taken in (conn.c). Public values: the server's key, hash value and signature. */
	struct {
		int pending, failed;
		uint8_t q[P256_POINT_LEN], hv[64], sig[72];
		size_t hv_len, sig_len;
	} ske;

	const br_ssl_client_certificate_class *ccert;
	const br_ssl_server_policy_class *policy;
	struct atls_peer x509; /* the peer-certificate check (peer.c) */

	char error[384];
};

void atls_key_user_data(const struct p256_key *k, uint8_t out[ATLS_USER_DATA_LEN]);
int atls_cert_build(struct p256_key *k, time_t now, const uint8_t *oid, size_t oid_len,
		    const uint8_t *doc, size_t doc_len, uint8_t *out, size_t cap, size_t *ret_len);
void atls_peer_setup(struct atls_conn *c);
/* The Go-like certificate check of §1.7 (without the attestation); exposed for fuzzing. */
int atls_cert_check(const uint8_t *der, size_t len, time_t now, struct atls_cert_info *info,
		    char *err, size_t errlen);
void atls_peer_free(struct atls_peer *p);
void atls_ccert_setup(struct atls_conn *c);
void atls_policy_setup(struct atls_conn *c);
/* Fresh key, attestation document for the peer's nonce (when we have an issuer), certificate. */
int atls_make_cert(struct atls_conn *c);
size_t atls_sign(struct atls_conn *c, int hash_id, size_t hv_len, unsigned char *data, size_t len);
void atls_conn_wipe_keys(struct atls_conn *c);
/* One step of our work that needs nothing from the peer, done while it computes (when a read
 * finds nothing); 1 after a step, 0 when none is left. */
int atls_idle_work(struct atls_conn *c);
/* The engine's algorithms (algs.c): SHA-256/384, AES-GCM and ChaCha20-Poly1305 with the CPU's
 * implementations chosen once, X25519 (libsodium) and P-256 for ECDHE, P-256 ECDSA checks. */
void atls_engine_algorithms(struct atls_conn *c, br_ssl_engine_context *eng);
/* Client: the deferred check of the server's ServerKeyExchange signature, run once; 0 when it
 * holds (or there is none), -EPROTO with the connection's error set when not. */
int atls_ske_check(struct atls_conn *c);
extern const br_ec_impl atls_ec_client, atls_ec_server;

#endif
