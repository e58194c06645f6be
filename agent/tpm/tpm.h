/* The TPM layer. For now: where the TPM is. A TCTI string names the transport the way
 * tpm2-tools and tpm2-tss do: "device:/dev/tpmrm0" in the VM, "swtpm:host=H,port=P" on the
 * host. Quotes, PCRs and the attestation key come with the TPM issue. */
#ifndef CONSTEL_TPM_H
#define CONSTEL_TPM_H

#include <stdint.h>

#define TCTI_DEFAULT  "device:/dev/tpmrm0"
#define TCTI_PATH_MAX 256
#define TCTI_HOST_MAX 64

enum tcti_kind {
	TCTI_DEVICE,
	TCTI_SWTPM,
};

struct tcti_spec {
	enum tcti_kind kind;
	char path[TCTI_PATH_MAX]; /* device: absolute path of the character device */
	char host[TCTI_HOST_MAX]; /* swtpm: host of the command port */
	uint16_t port;		  /* swtpm: command port; the control port is port+1 */
};

/* Parses a TCTI string. "device" alone (or "device:") means /dev/tpmrm0; "swtpm" alone
 * means host=127.0.0.1,port=2321, as tpm2-tss defaults. On -EINVAL, err (if not NULL)
 * holds one line saying what is wrong; *ret is written only on success. */
int tcti_spec_parse(const char *s, struct tcti_spec *ret, char *err, size_t errlen);

#endif
