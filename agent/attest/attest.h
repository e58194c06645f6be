/* The attestation layer: issuers and validators for the aTLS layer, one per variant.
 * qemu-vtpm issues documents from the TPM; dummy is for tests. */
#ifndef CONSTEL_ATTEST_H
#define CONSTEL_ATTEST_H

#include "atls/atls.h"
#include "tpm/tpm.h"

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

/* ---- qemu-vtpm (qemu_vtpm.c), OID 1.3.9900.5.1, spec §2 ---- */
#define QEMU_VTPM_EVENT_LOG "/sys/kernel/security/tpm0/binary_bios_measurements"

struct qemu_vtpm {
	struct tcti_spec tcti;
	const char *event_log; /* QEMU_VTPM_EVENT_LOG; a missing file means no log */
};

/* An issuer that opens the TPM of cfg for every document (cfg must outlive it). */
void qemu_vtpm_issuer(struct atls_issuer *is, struct qemu_vtpm *cfg);
/* tpmNonce = H(instanceInfo || H(userData || nonce)), instanceInfo empty (spec §2.1). */
void qemu_vtpm_tpm_nonce(const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
			 size_t nonce_len, uint8_t out[32]);
/* The JSON document of spec §2.2–2.3 from its parts. */
int qemu_vtpm_document(const uint8_t *ak_pub, size_t ak_len, const struct tpm_quote *quotes,
		       size_t n_quotes, const uint8_t *event_log, size_t ev_len,
		       const uint8_t user_data[ATLS_USER_DATA_LEN], uint8_t *doc, size_t cap,
		       size_t *ret_len);

/* ---- the qemu-vtpm validator (qemu_vtpm_verify.c), spec §2.6-2.7 ---- */
struct measurement {
	int pcr;
	uint8_t expected[48];
	size_t len;
	int warn_only;
};

struct measurements {
	struct measurement m[TPM_PCRS];
	size_t n;
};

/* {"<pcr>": {"expected": "<hex>", "warnOnly": bool} | "<hex>"}, optionally wrapped in
 * {"measurements": ...} as in the join-config attestationConfig. */
int measurements_parse(const char *buf, size_t len, struct measurements *ret, char *err,
		       size_t errlen);
/* Checks doc against our nonce and the measurements (NULL: none) and returns its user data.
 * -EINVAL with one line in err naming what failed. */
int qemu_vtpm_validate(const uint8_t *doc, size_t len, const uint8_t *nonce, size_t nonce_len,
		       const struct measurements *m, uint8_t *user_data, size_t cap,
		       size_t *user_data_len, char *err, size_t errlen);
/* An aTLS validator for qemu-vtpm with these measurements (m must outlive it). */
void qemu_vtpm_validator(struct atls_validator *v, const struct measurements *m);

#endif
