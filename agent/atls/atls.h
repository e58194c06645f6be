/* The aTLS layer: TLS 1.2 on BearSSL where certificates carry attestation documents
 * (spec §1). A connection is a BearSSL client or server engine over a non-blocking socket,
 * with Constellation's two nonce channels: the client's nonce travels as the SNI (standard
 * base64), the server's as the single acceptable-CA DN of the CertificateRequest. */
#ifndef CONSTEL_ATLS_H
#define CONSTEL_ATLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

#endif
