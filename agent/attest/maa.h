/* Microsoft Azure Attestation (MAA) tokens, as Constellation's azure-sev-snp validator checks
 * them (internal/attestation/azure/snp/maa.go with go-azguestattestation's maa.GetKeySet and
 * maa.ValidateToken on go-jose v3): the token is a compact JWS signed RS256 by one of the keys
 * MAA publishes at <maa>/certs (a JWKS whose keys are the x5c[0] certificates' public keys,
 * picked by the header's kid), its exp/nbf/iat checked with go-jose's one-minute leeway, and
 * its claim x-ms-runtime.client-payload.nonce must be the standard base64 of the validator's
 * extra data. Tools only (maa_check.c): the agent references nothing here. */
#ifndef CONSTEL_ATTEST_MAA_H
#define CONSTEL_ATTEST_MAA_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define MAA_JWKS_MAX   (256u << 10) /* <maa>/certs: a few KiB today */
#define MAA_TOKEN_MAX  (64u << 10)  /* a token with Azure's claims: ~6 KiB */
#define MAA_KEYS_MAX   32	    /* keys kept from one JWKS; more is refused */
#define MAA_KID_MAX    128
#define MAA_LEEWAY     60 /* go-jose's jwt.DefaultLeeway */
#define MAA_TIMEOUT_MS 10000

struct maa_key {
	char kid[MAA_KID_MAX];
	uint8_t *n; /* the RSA modulus (no leading zero), NULL: the certificate's key is no RSA */
	size_t n_len;
	uint8_t e[4];
	size_t e_len;
};
struct maa_jwks {
	struct maa_key keys[MAA_KEYS_MAX];
	size_t n;
};

/* A JWKS as go-azguestattestation reads it ({"keys":[{"kid","x5c":[b64 DER,...]}]}, members
 * case-insensitive as Go's encoding/json; keys without x5c skipped; a first certificate that
 * is no X.509 v3 refuses the whole set). 0, or a negative errno with one line in err. */
int maa_jwks_parse(const char *body, size_t len, struct maa_jwks *ks, char *err, size_t errlen);
void maa_jwks_free(struct maa_jwks *ks);

/* The token's signature by the key named by its kid, its times at `at`, and the nonce claim
 * against extra. 0, or -EKEYREJECTED (-EINVAL for a malformed token) with one line in err. */
int maa_token_check(const char *token, size_t len, const struct maa_jwks *ks, time_t at,
		    const uint8_t *extra, size_t extra_len, char *err, size_t errlen);

/* GET <maa_url>/certs (http://, or https:// with the system's CA bundle), then
 * maa_token_check. */
int maa_validate(const char *maa_url, const char *token, time_t at, const uint8_t *extra,
		 size_t extra_len, char *err, size_t errlen);

#endif
