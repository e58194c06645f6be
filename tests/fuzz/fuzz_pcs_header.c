/* libFuzzer target: the PCS client's parsing (tools/pcs-parse.h) on an HTTP response's header
 * block from the input: the URL-decoding of the issuer-chain headers Intel's PCS sends
 * (TCB-Info-Issuer-Chain, SGX-Enclave-Identity-Issuer-Chain, SGX-PCK-CRL-Issuer-Chain), each
 * into a small and a large buffer, and a JSON answer's nextUpdate. A value must be
 * NUL-terminated inside its buffer with no NUL before its length; a smaller buffer may only
 * fail with -EFBIG where a larger one succeeded with a longer value. A 429 answer's
 * Retry-After (bounded). The input as a CRL distribution points extension's value: its URI
 * is printable and NUL-terminated, and the root CA CRL URL made from it keeps to Intel's
 * hosts or the configured ones (it starts with one of the bases or is the URI itself). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/pcs-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"TCB-Info-Issuer-Chain",
					    "SGX-Enclave-Identity-Issuer-Chain",
					    "SGX-PCK-CRL-Issuer-Chain"};
	char *in = malloc(size ? size : 1), big[4096], small[16], nu[32];
	size_t blen = 0, slen = 0;

	if (!in)
		return 0;
	memcpy(in, data, size);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		int rb = pcs_header_decode(in, size, names[i], big, sizeof big, &blen);
		int rs = pcs_header_decode(in, size, names[i], small, sizeof small, &slen);

		if (rb == 0 && (blen >= sizeof big || big[blen] || strlen(big) != blen))
			abort();
		if (rs == 0 && (slen >= sizeof small || small[slen] || strlen(small) != slen ||
				rb != 0 || slen != blen || memcmp(small, big, slen)))
			abort();
		if (rs == -EFBIG && rb == 0 && blen < sizeof small - 1)
			abort();
	}
	if (pcs_json_next_update(in, size, nu, sizeof nu) == 0 && strlen(nu) >= sizeof nu)
		abort();
	{
		static const char pcs[] = "https://127.0.0.1:8443/pcs",
				  certs[] = "https://certs.test";
		char uri[PCS_URL_MAX], url[PCS_URL_MAX + 64];
		unsigned secs;

		if (pcs_retry_after(in, size, 1700000000, &secs) == 0 && secs > 999999999u)
			abort();
		if (pcs_cdp_uri(data, size, uri, sizeof uri) == 0) {
			size_t n = strlen(uri);

			for (size_t i = 0; i < n; i++)
				if (uri[i] < 0x21 || uri[i] > 0x7e)
					abort();
			if (pcs_root_crl_url(uri, pcs, certs, url, sizeof url) == 0 &&
			    strncmp(url, pcs, sizeof pcs - 1) &&
			    strncmp(url, certs, sizeof certs - 1) && strcmp(url, uri))
				abort();
			if (pcs_root_crl_url(uri, pcs, certs, url, sizeof url) == 0 &&
			    !strcmp(url, uri) && strncmp(uri, "https://127.0.0.1:8443", 22) &&
			    strncasecmp(uri, "https://certs.test", 18))
				abort();
		}
	}
	free(in);
	return 0;
}
