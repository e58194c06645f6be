/* X.509 v3 certificates (RFC 5280 §4.1), the generic part the attestation validators share
 * (SEV-SNP's VCEK/ASK/ARK, TDX's PCK chain): the signed TBS, the signature algorithm and value,
 * issuer and subject, validity, the SubjectPublicKeyInfo and the extensions. The reader is
 * der.h's strict DER; nothing is copied (every field points into the certificate) and nothing
 * is allocated. What a key or an extension means is the caller's business. */
#ifndef CONSTEL_ATTEST_X509_H
#define CONSTEL_ATTEST_X509_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/der.h"

struct x509_cert {
	struct der_in tbs_raw;	  /* the TBSCertificate TLV: what the signature covers */
	struct der_in sigalg_raw; /* the outer AlgorithmIdentifier TLV (= the TBS's one) */
	struct der_in sigalg_oid; /* its OID's content */
	struct der_in sig;	  /* the signatureValue's bits (the unused-bits byte dropped) */
	struct der_in serial;	  /* the INTEGER's content */
	struct der_in issuer_raw, subject_raw; /* the Name TLVs */
	struct der_in cn;		       /* the subject's (last) CN value, or empty */
	time_t not_before, not_after;
	struct der_in spki_raw;	      /* the SubjectPublicKeyInfo TLV */
	struct der_in key_alg_oid;    /* its algorithm's OID content */
	struct der_in key_alg_params; /* what follows the OID in its AlgorithmIdentifier */
	struct der_in key;	      /* the subjectPublicKey's bits (unused-bits byte dropped) */
	struct der_in exts;	      /* the content of the Extensions SEQUENCE, or empty */
};

/* A v3 certificate, nothing after it: 0 or -EBADMSG. The TBS's signature algorithm must be
 * the outer one, byte for byte. */
int x509_parse(const uint8_t *der, size_t len, struct x509_cert *c);

struct x509_ext {
	struct der_in oid; /* content */
	struct der_in val; /* the extnValue OCTET STRING's content */
	int critical;
};
/* The next extension of *exts (start with a copy of c->exts): 1 and *e, 0 at the end,
 * -EBADMSG. */
int x509_ext_next(struct der_in *exts, struct x509_ext *e);

/* The CN of a Name's content (the last one, if several); empty when it has none. */
int x509_name_cn(struct der_in name, struct der_in *cn);
/* notBefore <= at <= notAfter */
int x509_valid_at(const struct x509_cert *c, time_t at);
/* c's issuer Name is issuer's subject Name, byte for byte */
int x509_issued_by(const struct x509_cert *c, const struct x509_cert *issuer);

/* A CRL (RFC 5280 §5.1), v2: the signed TBS, the signature, its issuer Name, thisUpdate and
 * nextUpdate (required here, as in every CRL Intel's PCS issues), the revoked serials. */
struct x509_crl {
	struct der_in tbs_raw, sigalg_raw, sigalg_oid, sig, issuer_raw;
	time_t this_update, next_update;
	struct der_in revoked; /* the content of revokedCertificates, or empty */
};
/* 0 or -EBADMSG; every revoked entry is well formed. */
int x509_crl_parse(const uint8_t *der, size_t len, struct x509_crl *c);
/* 1 when serial (an INTEGER's content, as in struct x509_cert) is in the CRL, else 0. */
int x509_crl_revokes(const struct x509_crl *c, const struct der_in *serial);

#endif
