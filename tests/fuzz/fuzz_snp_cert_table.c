/* libFuzzer target: the certificate table of an SEV-SNP extended report (GHCB spec; the
 * buffer SNP_GET_EXT_REPORT fills, or configfs-tsm's auxblob): {GUID, offset, length}
 * entries ended by a zero entry. Every entry it returns must lie inside the input after the
 * entries, and each certificate it finds goes through the VCEK/VLEK parser. Seed: a table
 * with a VCEK and an ASK entry. */
#include <stdint.h>
#include <stdlib.h>

#include "attest/snp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snp_cert_entry e[SNP_CERT_TABLE_MAX];
	struct snp_signer_info si;
	char err[256];
	size_t n;

	if (size > 3 * 16384)
		return 0;
	if (snp_cert_table_parse(data, size, e, SNP_CERT_TABLE_MAX, &n, err, sizeof err) < 0)
		return 0;
	if (n > SNP_CERT_TABLE_MAX)
		abort();
	for (size_t i = 0; i < n; i++) {
		if (e[i].der < data + 24 * (n + 1) || e[i].len > size ||
		    e[i].der + e[i].len > data + size || !e[i].len)
			abort();
		(void)snp_signer_parse(e[i].der, e[i].len, &si);
	}
	return 0;
}
