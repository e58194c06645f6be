/* The SEV-SNP guest's extended attestation report, as go-sev-guest's leveled quote provider
 * gets it: configfs-tsm when the kernel has it (Linux 6.7 on), else the /dev/sev-guest ioctl
 * (Linux 6.6, which Constellation's AWS and GCP images run). Issuer side: linked into the
 * agent. Kernel ABI: include/uapi/linux/sev-guest.h, drivers/virt/coco/sev-guest/sev-guest.c,
 * Documentation/ABI/testing/configfs-tsm; docs/snp.md "Getting a report". */
#ifndef CONSTEL_ATTEST_SEV_GUEST_H
#define CONSTEL_ATTEST_SEV_GUEST_H

#include <stddef.h>
#include <stdint.h>

#define SEV_GUEST_DEV	    "/dev/sev-guest"
#define SEV_TSM_REPORT	    "/sys/kernel/config/tsm/report"
#define SEV_REPORT_DATA_LEN 64
#define SEV_REPORT_LEN	    1184	/* ATTESTATION_REPORT, versions 2 to 5 */
#define SEV_CERTS_FIRST	    (16 * 1024) /* SEV_FW_BLOB_MAX_SIZE of the 6.x drivers */
#define SEV_CERTS_MAX	    (64 * 1024) /* the most a host may ask for (it says in pages) */
#define SEV_TSM_GEN_TRIES   3		/* another writer of our entry: tries before giving up */
#define SEV_REQ_SPACING_MS  2000	/* between two ioctl requests (go-sev-guest's throttle) */

/* The certificate table's GUIDs, in wire order (GHCB spec 4.1.8.1; go-sev-guest abi.go). */
extern const uint8_t sev_guid_vcek[16], sev_guid_vlek[16], sev_guid_ask[16], sev_guid_ark[16];

/* The extended report for data: the 1184-byte report into report and the certificate table
 * (the host's, may be empty: *certs_len 0) into certs (certs_cap >= SEV_CERTS_MAX; NULL/0:
 * no certificates wanted, SNP_GET_REPORT). At VMPL 0. tsm_dir (NULL: none) is tried first: if
 * it does not exist, dev. 0, or a negative errno with one line in err naming the interface
 * and the firmware's or the kernel's error. One request at a time; never retried after a
 * firmware error (the kernel then disables the guest's message key until reboot). */
int sev_guest_ext_report(const char *tsm_dir, const char *dev,
			 const uint8_t data[SEV_REPORT_DATA_LEN], uint8_t report[SEV_REPORT_LEN],
			 uint8_t *certs, size_t certs_cap, size_t *certs_len, char *err,
			 size_t errlen);

/* The certificate with GUID guid in the table (certs, len): 0 with *der and *der_len pointing
 * into certs, -ENOENT if there is none, -EBADMSG (one line in err) for a table whose
 * entries or offsets do not fit its buffer. */
int sev_cert_table_find(const uint8_t *certs, size_t len, const uint8_t guid[16],
			const uint8_t **der, size_t *der_len, char *err, size_t errlen);

/* The name of a firmware status (SEV_RET_*) for error lines. */
const char *sev_fw_error_name(uint32_t code);

#endif
