/* The vTPM attestation document every TPM-based variant shares, and the variants on it.
 *
 * Every variant but qemu-tdx uses Constellation's vtpm.Issuer / vtpm.Validator
 * (internal/attestation/vtpm/attestation.go): the document is Go's encoding/json of
 * AttestationDocument{Attestation, InstanceInfo, UserData}. A variant differs only in
 *   - its attestation key (where the AK comes from),
 *   - the InstanceInfo the issuer adds (itself JSON, so base64 of JSON in the document),
 *   - the key its validator trusts and the checks it makes of InstanceInfo (validateCVM),
 *   - the PCRs it enforces by default.
 * Issue: extraData = SHA-256(userData || nonce); instanceInfo = variant(extraData);
 * tpmNonce = SHA-256(instanceInfo || extraData); quotes of every bank with tpmNonce.
 * Validate: parse, extraData, trusted AK (variant), quote signature/nonce/digest/event log,
 * validate_cvm (variant), measurements, user data.
 *
 * The tables of variants are in variants.c (issuers) and variants_check.c (validators); issuers and
 * validators are built from it by name (constel.attestation-variant= in the agent, --attestation in
 * tools/). */
#ifndef CONSTEL_ATTEST_VTPM_H
#define CONSTEL_ATTEST_VTPM_H

#include <time.h>

#include "attest/attest.h"

enum vtpm_ak_kind {
	VTPM_AK_NONE = 0, /* no TPM (dummy) */
	VTPM_AK_OWNER,	  /* go-tpm-tools AttestationKeyRSA at 0x81008F01, made if absent
			     (qemu-vtpm, aws-*) */
	VTPM_AK_HCL,	  /* Azure's HCL AK at persistent handle 0x81000003, never made */
	VTPM_AK_GCE,	  /* primary key in the endorsement hierarchy from the template in NV
			     0x01c10001 (gcp-*) */
};

/* Where an issuer's outside inputs are; the defaults are the real paths, tests point them
 * at fakes. */
struct vtpm_env {
	const struct vtpm_variant *variant;
	struct tcti_spec tcti;
	const char *event_log;	/* QEMU_VTPM_EVENT_LOG */
	const char *imds;	/* "http://169.254.169.254" (GCE metadata, AWS IMDS, Azure IMDS) */
	const char *sev_guest;	/* "/dev/sev-guest" */
	const char *tsm_report; /* "/sys/kernel/config/tsm/report" */
};

/* What an issuer's instance_info hook gets. */
struct vtpm_issue {
	const struct vtpm_env *env;
	struct tpm *tpm;       /* open, for NV reads (Azure's HCL report) */
	const uint8_t *ak_pub; /* the AK's marshalled TPMT_PUBLIC, as in the document */
	size_t ak_len;
	uint8_t extra[32]; /* extraData = SHA-256(userData || nonce) */
};

/* What a validator's hooks get: the document's parts, parsed, before the quote check. */
struct vtpm_view {
	const uint8_t *instance_info; /* decoded InstanceInfo (JSON), may be empty */
	size_t instance_info_len;
	const uint8_t *ak_pub; /* the document's TPMT_PUBLIC */
	size_t ak_len;
	const uint8_t *event_log;
	size_t event_log_len;
	uint8_t extra[32];
};

/* The validator's side: measurements and whatever the variant's checks need. Tools fill it
 * from --measurements FILE (the measurements alone, or the variant's attestationConfig JSON
 * as in the join-config, {"measurements": {...}, "amdRootKey": ..., ...}) and their flags. */
struct vtpm_policy {
	const struct vtpm_variant *variant;
	const struct vtpm_check *check;
	struct measurements m;
	const char *config; /* the attestationConfig JSON text, NULL: measurements only */
	size_t config_len;
	time_t at;		/* certificates and collateral must be valid at; 0: now */
	const char *test_root;	/* --amd-root / --intel-root PEM: trust only this root (tests) */
	const char *collateral; /* --tdx-collateral DIR */
	/* Without collateral: the folder of a TDX quote's collateral into dir (the tools fetch
	 * it from Intel's PCS into a cache, tools/tdx-pcs.h); NULL: collateral is required.
	 * 0, or a negative errno with one line in err. */
	int (*tdx_fetch)(const struct vtpm_policy *p, const uint8_t *quote, size_t len, char *dir,
			 size_t cap, char *err, size_t errlen);
	const void *tdx_fetch_ctx; /* for tdx_fetch */
	const char *api;	   /* --api URL: the cloud API a validator asks (GCE, EC2) */
	void *priv;		   /* the variant's parsed configuration (its policy_init) */
	const char *maa_url;	   /* --maa-url: azure-sev-snp's MAA (else the config's) */
	const char *ca_bundle;	   /* --ca-bundle: anchors of an https api (NULL: the system's) */
};

/* The issuer's side of a variant (linked into the agent). */
struct vtpm_variant {
	const char *name; /* as in constel.attestation-variant= */
	uint8_t oid[ATLS_OID_MAX];
	size_t oid_len;
	enum vtpm_ak_kind ak;
	/* Issuer: InstanceInfo into out (NULL hook: empty, as qemu-vtpm). */
	int (*instance_info)(const struct vtpm_issue *in, uint8_t *out, size_t cap, size_t *len,
			     char *err, size_t errlen);
};

/* The validator's side of a variant (tools/ and tests only: the agent never validates, and
 * --gc-sections keeps the roots and verifiers out of it). */
struct vtpm_check {
	const char *name;     /* the variant's name */
	const char *enforced; /* default enforced PCRs, "4,8,9,11,12,13,15" */
	/* Before the quote check: whether the document's AK (v->ak_pub) is one to trust, e.g.
	 * equal to the key GCE's getShieldedInstanceIdentity gives, or bound by the HCL report
	 * (NULL hook: trusted as it is, as qemu-vtpm and aws-*). */
	int (*trusted_key)(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
			   size_t errlen);
	/* After the quote check: the variant's checks of InstanceInfo and the platform (NULL:
	 * none). */
	int (*validate_cvm)(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
			    size_t errlen);
	/* Parses p->config etc. into p->priv (NULL: nothing to parse); policy_free undoes it. */
	int (*policy_init)(struct vtpm_policy *p, char *err, size_t errlen);
	void (*policy_free)(struct vtpm_policy *p);
};

/* The variant named name, or NULL (variants.c: one table, one line per variant, each
 * variant's `const struct vtpm_variant vtpm_<name>` in its own file). */
const struct vtpm_variant *vtpm_variant_find(const char *name);
/* Its validator's side, or NULL (variants_check.c: the same for `vtpm_check_<name>`). */
const struct vtpm_check *vtpm_check_find(const char *name);
/* "aws-nitro-tpm, aws-sev-snp, ..." for usage and error lines. */
const char *vtpm_variant_names(void);

/* Fills env with the real paths for variant v. */
void vtpm_env_default(struct vtpm_env *env, const struct vtpm_variant *v);
/* An issuer for env->variant that opens the TPM of env for every document (env must outlive
 * it). */
void vtpm_issuer(struct atls_issuer *is, const struct vtpm_env *env);
/* Checks a document; see qemu_vtpm_validate for the contract. */
int vtpm_validate(const struct vtpm_policy *p, const uint8_t *doc, size_t len, const uint8_t *nonce,
		  size_t nonce_len, uint8_t *user_data, size_t cap, size_t *user_data_len,
		  char *err, size_t errlen);
/* An aTLS validator for p->variant with policy p (p must outlive it; policy_init done). */
void vtpm_validator(struct atls_validator *v, const struct vtpm_policy *p);

/* ---- added with the core (vtpm.c, vtpm_verify.c) ---- */
/* The largest InstanceInfo an issuer hook may write (cap it gets). */
#define VTPM_INSTANCE_INFO_MAX (64 * 1024)
/* Hooks write err without the variant's name: the core puts "<name>: " in front. */

/* extraData = SHA-256(userData || nonce). */
void vtpm_extra_data(const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
		     size_t nonce_len, uint8_t out[32]);
/* tpmNonce = SHA-256(instanceInfo || extraData). */
void vtpm_tpm_nonce(const uint8_t *instance_info, size_t ii_len, const uint8_t extra[32],
		    uint8_t out[32]);
/* The JSON document from its parts; instance_info NULL: "InstanceInfo":null. */
int vtpm_document(const uint8_t *ak_pub, size_t ak_len, const struct tpm_quote *quotes,
		  size_t n_quotes, const uint8_t *event_log, size_t ev_len,
		  const uint8_t *instance_info, size_t ii_len,
		  const uint8_t user_data[ATLS_USER_DATA_LEN], uint8_t *doc, size_t cap,
		  size_t *ret_len);
/* One document for env->variant (what vtpm_issuer's issue does). */
int vtpm_issue(const struct vtpm_env *env, const uint8_t user_data[ATLS_USER_DATA_LEN],
	       const uint8_t *nonce, size_t nonce_len, uint8_t *doc, size_t cap, size_t *ret_len,
	       char *err, size_t errlen);
/* Fills p for the variant named name: check, variant, measurements and config from the
 * text of a measurements file (the measurements alone or the variant's attestationConfig
 * JSON; NULL: no measurements; text must outlive p), then the variant's policy_init. The
 * caller sets at, test_root (the PEM text of --amd-root/--intel-root), collateral and api
 * before. -EINVAL, one line in err. */
int vtpm_policy_init(struct vtpm_policy *p, const char *name, const char *text, size_t len,
		     char *err, size_t errlen);
void vtpm_policy_free(struct vtpm_policy *p);
/* vtpm_validate with the quotes' qualifying data given as it is (recorded evidence made with
 * a nonce of its own, e.g. go-tpm-tools' GCE test data), not made from a nonce and the user
 * data; everything else is checked the same. */
int vtpm_validate_raw(const struct vtpm_policy *p, const uint8_t *doc, size_t len,
		      const uint8_t *tpm_nonce, size_t tn_len, char *err, size_t errlen);
/* The GCE platform as go-tpm-tools reads it from PCR 0's SHA-256 events before the separator
 * (gcp_es_verify.c; tools and tests): the GCE firmware version (-1: none) and the
 * confidential technology of the NonHostInfo event (-1: none; 1 AMD SEV, 2 SEV-ES, 3 TDX,
 * 4 SEV-SNP). -EINVAL, one line in err, for a log that does not parse or a forged PCR 0 event.
 * Call it only on a log already replayed against a verified quote. */
int gce_platform(const uint8_t *log, size_t len, long *version, int *tech, char *err,
		 size_t errlen);
/* The IMDS instance identity document body re-encoded as Go encodes aws-sdk-go-v2's
 * imds.InstanceIdentityDocument (aws_nitro.c, in the agent): aws-nitro-tpm's InstanceInfo. */
int aws_identity_document_go(const char *body, size_t len, uint8_t *out, size_t cap, size_t *ret,
			     char *err, size_t errlen);
/* Every variant's validator name ("aws-nitro-tpm, ..."), for tools' usage lines. */
const char *vtpm_check_names(void);

#endif
