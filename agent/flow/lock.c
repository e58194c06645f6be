/* The node lock of spec §5.3: one transition from unlocked to locked, taken by whichever
 * flow (init or join) gets its keys first, and marked in the TPM by extending PCR 15 with
 * the cluster ID. The qemu-vtpm issuer refuses to attest once PCR 15 is not zero, so a
 * locked node never attests again before a reboot. Without a TPM (the dummy variant in
 * tests) the lock is only in memory. */
#include <errno.h>
#include <string.h>

#include "flow.h"
#include "tpm/tpm.h"

int lock_check_unmarked(const struct tcti_spec *tcti, char *err, size_t errlen)
{
	static const uint8_t zero[32];
	uint8_t v[TPM_PCRS][TPM_DIGEST_MAX];
	struct tpm *t;
	size_t dlen;
	int r = tpm_open(tcti, &t, err, errlen);

	if (r < 0)
		return r;
	r = tpm_pcr_read(t, TPM_ALG_SHA256, 1u << 15, v, &dlen);
	tpm_close(t);
	if (r < 0)
		return errbuf_set(err, errlen, "node lock: PCR 15 cannot be read");
	if (memcmp(v[15], zero, 32))
		return errbuf_set(err, errlen,
				  "node lock: PCR 15 is not zero: this node was already marked "
				  "in this boot and must reboot before it can attest");
	return 0;
}

int lock_try_once(struct node_lock *l, const uint8_t cluster_id[32])
{
	struct tpm *t;
	char err[200];
	int r;

	if (l->locked)
		return 0;
	l->locked = 1;
	if (!l->tcti) {
		log_info("node lock: locked (no TPM with this attestation variant: PCR 15 not "
			 "marked)");
		return 1;
	}
	r = tpm_open(l->tcti, &t, err, sizeof err);
	if (r < 0) {
		log_error("%s", err);
		return r;
	}
	r = tpm_pcr_event(t, 15, cluster_id, 32);
	tpm_close(t);
	if (r < 0)
		return log_err(r, "node lock: marking PCR 15");
	log_info("node lock: locked, PCR 15 marked with the cluster ID");
	return 1;
}
