/* libFuzzer target: the CA bundle loader behind https:// (net/cabundle.c). Whatever it keeps
 * must be a bounded set of anchors with a DN and a key of a known type; a refusal is one line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[200] = "";
	struct ca_bundle b;

	if (ca_bundle_parse((const char *)data, size, &b, err, sizeof err) < 0) {
		if (!err[0] || strchr(err, '\n') || b.ta || b.n)
			abort();
		return 0;
	}
	if (b.n == 0 || b.n > CA_BUNDLE_MAX)
		abort();
	for (size_t i = 0; i < b.n; i++) {
		const br_x509_trust_anchor *ta = &b.ta[i];

		if (!ta->dn.len || ta->dn.len > 1024 || ta->flags != BR_X509_TA_CA)
			abort();
		if (ta->pkey.key_type == BR_KEYTYPE_RSA) {
			if (!ta->pkey.key.rsa.nlen || !ta->pkey.key.rsa.elen)
				abort();
		} else if (ta->pkey.key_type != BR_KEYTYPE_EC || !ta->pkey.key.ec.qlen) {
			abort();
		}
	}
	ca_bundle_free(&b);
	return 0;
}
