/* libFuzzer target: a TDX quote v4 (attest/tdx_quote.c) and its verification
 * (attest/tdx_verify.c): the parser, the PEM chain split, the certificate parser, the chain
 * (which stops at the root: no fuzzed chain ends in Intel's), then once more trusting the
 * chain's own last certificate so that the chain's signatures, the QE report and the quote's
 * signature are reached. Seed: a quote made for it with openssl (not a recorded one): a PCK
 * chain of three P-256 certificates named as Intel's under a test root, the QE report signed by
 * that PCK and binding a test attestation key, which signs the quote; it verifies in full
 * against its own root. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/tdx.h"
#include "base/base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tdx_verify_opts o;
	struct tdx_quote q;
	char err[256];

	if (size > TDX_QUOTE_MAX)
		return 0;
	tdx_verify_opts_init(&o);
	o.at = 1688173200;
	if (tdx_quote_parse(data, size, &q, err, sizeof err) == 0 && q.len > size)
		abort();
	if (tdx_verify(data, size, &o, &q, err, sizeof err) == 0)
		abort(); /* nothing fuzzed is signed by Intel */
	if (strlen(err) >= sizeof err)
		abort();
	/* again trusting the quote's own last certificate, to reach the chain's signatures,
	 * the QE report and the quote signature */
	if (tdx_quote_parse(data, size, &q, err, sizeof err) == 0) {
		static uint8_t root[4096];
		const char *last = NULL;
		size_t rl;

		for (const uint8_t *p = q.pck_pem; p;) {
			p = memmem(p, q.pck_pem_len - (size_t)(p - q.pck_pem), "-----BEGIN", 10);
			if (p)
				last = (const char *)p++;
		}
		if (last &&
		    pem_decode(last, q.pck_pem_len - (size_t)(last - (const char *)q.pck_pem),
			       "CERTIFICATE", root, sizeof root, &rl) == 0) {
			o.root = root;
			o.root_len = rl;
			o.at = 1800000000; /* 2027-01-15: the seed's chain is valid */
			(void)tdx_verify(data, size, &o, &q, err, sizeof err);
		}
	}
	return 0;
}
