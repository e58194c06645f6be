/* The attestation layer: issuers and validators for the aTLS layer, one per variant.
 * Only the dummy variant exists so far; qemu-vtpm comes with the TPM issue. */
#ifndef CONSTEL_ATTEST_H
#define CONSTEL_ATTEST_H

#include "atls/atls.h"

/* The `dummy` variant (OID 1.3.9900.1.1), for tests only: the document is the JSON
 * {"UserData":"<base64>","Nonce":"<base64>"} (Go's encoding/json of two []byte fields), so
 * it binds user data and nonce but proves nothing about the machine. */
extern const struct atls_issuer attest_dummy_issuer;
extern const struct atls_validator attest_dummy_validator;

#define DUMMY_DOC_MAX	512
#define DUMMY_FIELD_MAX 64 /* decoded bytes of UserData or Nonce */

/* Exposed for tests and fuzzing: parses a dummy document strictly (exactly the two keys, in
 * Go's order, standard padded base64, no white space). */
int attest_dummy_parse(const uint8_t *doc, size_t len, uint8_t *user_data, size_t *user_data_len,
		       uint8_t *nonce, size_t *nonce_len, char *err, size_t errlen);

#endif
