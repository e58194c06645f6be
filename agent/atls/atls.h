/* The aTLS layer: TLS 1.2 on BearSSL where certificates carry attestation documents
 * (spec §1). A connection is a BearSSL client or server engine over a non-blocking socket,
 * with Constellation's two nonce channels: the client's nonce travels as the SNI (standard
 * base64), the server's as the single acceptable-CA DN of the CertificateRequest. */
#ifndef CONSTEL_ATLS_H
#define CONSTEL_ATLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define ATLS_NONCE_LEN	   32
#define ATLS_USER_DATA_LEN 32		/* SHA-256 of the certificate's SPKI */
#define ATLS_DOC_MAX	   (200 * 1024) /* under Go's 256 KiB Certificate message limit */
#define ATLS_OID_MAX	   16		/* DER content bytes of an OID */

/* Makes an attestation document that binds user_data to the peer's nonce. The document is
 * written into doc (cap bytes); *ret_len is set on success. Returns 0 or -errno and, on
 * failure, one line in err. */
struct atls_issuer {
	uint8_t oid[ATLS_OID_MAX]; /* the variant's OID, DER content bytes (no tag, no length) */
	size_t oid_len;
	int (*issue)(void *ctx, const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
		     size_t nonce_len, uint8_t *doc, size_t cap, size_t *ret_len, char *err,
		     size_t errlen);
	void *ctx;
};

/* Checks a document against our own nonce and returns the user data it vouches for. */
struct atls_validator {
	uint8_t oid[ATLS_OID_MAX];
	size_t oid_len;
	int (*validate)(void *ctx, const uint8_t *doc, size_t len, const uint8_t *nonce,
			size_t nonce_len, uint8_t ret_user_data[ATLS_USER_DATA_LEN], char *err,
			size_t errlen);
	void *ctx;
};

struct atls_config {
	const struct atls_issuer *issuer;	 /* NULL: our certificate carries no attestation */
	const struct atls_validator *validators; /* checked against the peer's certificate */
	size_t n_validators;			 /* 0: the peer is not attested (as Go) */
	time_t (*now)(void);			 /* clock for certificates; NULL: time() */
};

struct atls_conn;

/* A client connection on the connected, non-blocking socket fd (the caller keeps fd and
 * closes it after atls_free). A fresh 32-byte nonce goes out as the SNI. */
int atls_client_new(const struct atls_config *cfg, int fd, struct atls_conn **ret);
/* A server connection on an accepted, non-blocking socket. With validators it requests a
 * client certificate with a fresh server nonce as the one acceptable-CA name. */
int atls_server_new(const struct atls_config *cfg, int fd, struct atls_conn **ret);
void atls_free(struct atls_conn *c);

/* Application data. They drive the handshake first; -EAGAIN means "poll for
 * atls_events() and call again". Other errors are final; atls_error() says why. */
ssize_t atls_read(struct atls_conn *c, void *buf, size_t len);
ssize_t atls_write(struct atls_conn *c, const void *buf, size_t len);
int atls_flush(struct atls_conn *c);
/* POLLIN and/or POLLOUT: what the engine waits for on the socket (BR_SSL_RECVREC,
 * BR_SSL_SENDREC), nothing else: poll on exactly this. */
short atls_events(const struct atls_conn *c);
/* 1 when atls_write would take application data now (handshake done, BR_SSL_SENDAPP). */
int atls_writable(const struct atls_conn *c);
int atls_established(const struct atls_conn *c);
/* One line: why the connection failed ("handshake: peer sent fatal alert 42", ...). */
const char *atls_error(const struct atls_conn *c);

/* Exposed for tests and fuzzing: the nonce DN of a CertificateRequest (spec §1.3). */
int atls_nonce_dn_build(const uint8_t *nonce, size_t len, uint8_t *out, size_t cap,
			size_t *ret_len);
int atls_nonce_dn_decode(const uint8_t *dn, size_t len, uint8_t *nonce, size_t cap, size_t *ret_len,
			 char *err, size_t errlen);

#endif
