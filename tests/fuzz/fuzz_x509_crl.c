/* libFuzzer target: the X.509 v2 CRL parser (attest/x509.c), as the TDX verifier reads Intel
 * PCS's PCK and root CA CRLs, and the revoked-serial lookup over what it accepted. Seed: a CRL
 * made with openssl by a test CA, one certificate revoked (not a recorded CRL). */
#include <stdint.h>
#include <stdlib.h>

#include "attest/x509.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t three = 3;
	struct der_in serial = {&three, 1};
	struct x509_crl crl;

	if (size > 1 << 20)
		return 0;
	if (x509_crl_parse(data, size, &crl) < 0)
		return 0;
	if (crl.tbs_raw.p < data || crl.tbs_raw.p + crl.tbs_raw.len > data + size ||
	    crl.sig.p + crl.sig.len > data + size)
		abort();
	(void)x509_crl_revokes(&crl, &serial);
	if (crl.tbs_raw.len)
		(void)x509_crl_revokes(&crl, &(struct der_in){crl.tbs_raw.p, crl.tbs_raw.len % 21});
	return 0;
}
