/* SEV-SNP attestation reports and their validation (snp_report.c, snp_verify.c, the AMD
 * roots in snp_roots.c). Validators only: linked by tools/ and the tests, never by the agent
 * (nothing of the agent references these symbols; --gc-sections drops them).
 * Layout: AMD SEV-SNP Firmware ABI, "ATTESTATION_REPORT Structure" (version 2 and 3; later
 * versions keep these offsets). */
#ifndef CONSTEL_ATTEST_SNP_H
#define CONSTEL_ATTEST_SNP_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SNP_REPORT_LEN 1184
#define SNP_SIGNED_LEN 0x2a0 /* the signature covers bytes 0x000-0x29f */
#define SNP_SIG_COMP   72    /* r and s: little-endian, 72 bytes each at 0x2a0 */

/* signer info (0x48) */
#define SNP_SIGNER_AUTHOR_KEY_EN 0x1u
#define SNP_SIGNER_MASK_CHIP_KEY 0x2u
#define SNP_SIGNER_KEY(info)	 (((info) >> 2) & 7u)
enum { SNP_KEY_VCEK = 0, SNP_KEY_VLEK = 1, SNP_KEY_NONE = 7 };

/* guest policy (0x08) */
#define SNP_POLICY_SMT		 (1ull << 16)
#define SNP_POLICY_RESERVED1	 (1ull << 17) /* must be 1 */
#define SNP_POLICY_MIGRATE_MA	 (1ull << 18)
#define SNP_POLICY_DEBUG	 (1ull << 19)
#define SNP_POLICY_SINGLE_SOCKET (1ull << 20)
#define SNP_POLICY_CXL_ALLOW	 (1ull << 21)

struct snp_report {
	uint32_t version;				/* 0x000 */
	uint32_t guest_svn;				/* 0x004 */
	uint64_t policy;				/* 0x008 */
	uint8_t family_id[16];				/* 0x010 */
	uint8_t image_id[16];				/* 0x020 */
	uint32_t vmpl;					/* 0x030 */
	uint32_t signature_algo;			/* 0x034: 1 = ECDSA P-384 with SHA-384 */
	uint64_t current_tcb;				/* 0x038 */
	uint64_t platform_info;				/* 0x040 */
	uint32_t signer_info;				/* 0x048 */
	uint8_t report_data[64];			/* 0x050 */
	uint8_t measurement[48];			/* 0x090 */
	uint8_t host_data[32];				/* 0x0c0 */
	uint8_t id_key_digest[48];			/* 0x0e0 */
	uint8_t author_key_digest[48];			/* 0x110 */
	uint8_t report_id[32];				/* 0x140 */
	uint8_t report_id_ma[32];			/* 0x160 */
	uint64_t reported_tcb;				/* 0x180 */
	uint8_t cpuid_fam_id, cpuid_mod_id, cpuid_step; /* 0x188 (version 3 on; 0 before) */
	uint8_t chip_id[64];				/* 0x1a0 */
	uint64_t committed_tcb;				/* 0x1e0 */
	uint8_t current_build, current_minor, current_major;	   /* 0x1e8 */
	uint8_t committed_build, committed_minor, committed_major; /* 0x1ec */
	uint64_t launch_tcb;					   /* 0x1f0 */
	uint8_t sig_r[SNP_SIG_COMP], sig_s[SNP_SIG_COMP];	   /* 0x2a0, 0x2e8 */
};

/* Parses the first SNP_REPORT_LEN bytes of b (more are ignored): versions 2 to 5, signature
 * algorithm 1, a signing key VCEK, VLEK or none. -EINVAL with one line in err otherwise. */
int snp_report_parse(const uint8_t *b, size_t len, struct snp_report *r, char *err, size_t errlen);

/* The processor generations whose roots are built in. */
enum snp_product { SNP_MILAN = 1, SNP_GENOA, SNP_TURIN };
const char *snp_product_name(enum snp_product p);

/* A TCB_VERSION in its parts; the layout of the u64 depends on the product (Turin has an FMC
 * byte and moves the others up). */
struct snp_tcb {
	uint8_t fmc, bootloader, tee, snp, microcode;
};
void snp_tcb_decode(enum snp_product p, uint64_t raw, struct snp_tcb *t);
/* "bl=N,tee=N,snp=N,ucode=N[,fmc=N]" (each part 0-255, any order, each at most once, missing
 * ones 0). */
int snp_tcb_parse(const char *s, struct snp_tcb *t);

/* ---- the certificate table of an extended report (GHCB spec, SNP_GET_EXT_REPORT) ----
 * Entries of {GUID[16], u32 offset, u32 length} (little-endian), ended by an all-zero entry;
 * every certificate lies inside the table's buffer after the entries. */
#define SNP_CERT_TABLE_MAX 16
enum snp_cert_kind { SNP_CERT_OTHER, SNP_CERT_VCEK, SNP_CERT_VLEK, SNP_CERT_ASK, SNP_CERT_ARK };
struct snp_cert_entry {
	uint8_t guid[16];
	enum snp_cert_kind kind;
	const uint8_t *der;
	size_t len;
};
int snp_cert_table_parse(const uint8_t *b, size_t len, struct snp_cert_entry *ents, size_t max,
			 size_t *n, char *err, size_t errlen);

/* ---- validation (snp_verify.c) ---- */
#define SNP_CHAIN_MAX 8

struct snp_verify_opts {
	time_t at;			     /* validity of every certificate at this time */
	const uint8_t *chain[SNP_CHAIN_MAX]; /* extra DER intermediates (ASK/ASVK), may be 0 */
	size_t chain_len[SNP_CHAIN_MAX];
	size_t n_chain;
	const uint8_t *ark; /* DER: trust only this root (tests); NULL: AMD's built-in ARKs */
	size_t ark_len;
	int vmpl;				      /* the VMPL the report must have; -1: any */
	int allow_debug, allow_migrate_ma, allow_cxl; /* policy bits refused unless allowed */
	int have_min_tcb, have_min_launch_tcb;
	struct snp_tcb min_tcb;	       /* current, committed and reported TCB at least this */
	struct snp_tcb min_launch_tcb; /* launch TCB at least this */
	const uint8_t *report_data;    /* the 64 bytes REPORT_DATA must hold, or NULL */
	/* ID_KEY_DIGEST must be one of these (Constellation's acceptedKeyDigests); none: any */
	const uint8_t (*id_key_digests)[48];
	size_t n_id_key_digests;
};

/* Defaults: now, the built-in roots, VMPL 0, debug/migration agent/CXL refused. */
void snp_verify_opts_init(struct snp_verify_opts *o);

/* Verifies report (SNP_REPORT_LEN bytes, parsed into *r) against its signer certificate
 * (DER, a VCEK or VLEK): the signer chain to an ARK (RSA-PSS SHA-384 salt 48), validity at
 * o->at, the report's ECDSA P-384 signature, the signer's TCB and hardware-ID extensions
 * against the report, TCB relations and minimums, policy, VMPL, report data. On success
 * *product says whose root it was. -EINVAL (or -ENOMEM) with one line in err naming the
 * check that failed. */
int snp_verify(const uint8_t *report, size_t len, const uint8_t *signer, size_t signer_len,
	       const struct snp_verify_opts *o, struct snp_report *r, enum snp_product *product,
	       char *err, size_t errlen);

/* What the checks after the signatures use of the signer's certificate: its TCB extensions
 * (spl[N] = 1.3.6.1.4.1.3704.1.3.N) and hardware ID (1.3.6.1.4.1.3704.1.4). */
struct snp_signer_info {
	int have_spl[10];
	uint8_t spl[10];
	const uint8_t *hwid;
	size_t hwid_len;
};
/* Parses a VCEK/VLEK (X.509 v3, RSA-PSS SHA-384 signed, ECDSA P-384 key): 0 or -EBADMSG /
 * -ENOTSUP (another signature algorithm). Exposed for fuzzing. */
int snp_signer_parse(const uint8_t *der, size_t len, struct snp_signer_info *si);
/* The checks of snp_verify after the chain and the signature have passed: CPU family,
 * signer TCB and hardware ID against the report, TCB relations and minimums, policy, VMPL,
 * report data. Exposed for fuzzing; snp_verify is the entry point. */
int snp_report_check(const struct snp_report *r, enum snp_product p,
		     const struct snp_signer_info *si, const struct snp_verify_opts *o, char *err,
		     size_t errlen);

/* The built-in AMD certificates (snp_roots.c), DER. */
struct snp_builtin {
	enum snp_product product;
	const uint8_t *ark, *ask, *asvk;
	size_t ark_len, ask_len, asvk_len;
};
extern const struct snp_builtin snp_builtins[3];

/* RSASSA-PSS verification (RFC 8017 §8.1.2, MGF1) with SHA-384 and a 48-byte salt, on
 * BearSSL's RSA public operation (BearSSL 0.6 has no PSS). 0 or -EBADMSG. */
int snp_rsa_pss_sha384_verify(const uint8_t *n, size_t nlen, const uint8_t *e, size_t elen,
			      const uint8_t *sig, size_t sig_len, const uint8_t hash[48]);

#endif
