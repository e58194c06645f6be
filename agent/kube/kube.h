/* The node layer's Kubernetes side: the kubelet CSR, the SSH host key, and (later) kubeadm
 * configuration and components. */
#ifndef CONSTEL_KUBE_H
#define CONSTEL_KUBE_H

#include <stddef.h>
#include <stdint.h>

#include "base/p256.h"

/* A DER PKCS#10 request for the kubelet (spec §5.4.1); ip may be NULL or "" (no SAN).
 * -EINVAL for an empty name or an unparsable IP. */
int csr_build(const struct p256_key *k, const char *node_name, const char *ip, uint8_t *out,
	      size_t cap, size_t *ret_len);

/* An ed25519 key: sk is libsodium's 64 bytes (seed || public key). Wipe after use. */
struct ssh_key {
	uint8_t sk[64];
	uint8_t pk[32];
};

#define SSH_PUBKEY_WIRE_LEN 51 /* string "ssh-ed25519", string key32 */

size_t ssh_pubkey_wire(const uint8_t pk[32], uint8_t out[SSH_PUBKEY_WIRE_LEN]);
/* "ssh-ed25519 <base64 wire>\n", an authorized_keys line. */
int ssh_authorized_key(const uint8_t pk[32], char *out, size_t cap);
int ssh_key_generate(struct ssh_key *k);
/* OpenSSH's unencrypted private-key format (PEM armor, openssh-key-v1). */
int ssh_key_format(const struct ssh_key *k, char *out, size_t cap);
int ssh_key_parse(const char *text, size_t len, struct ssh_key *ret, char *err, size_t errlen);
/* Reads the key at path; with create, makes a new one (mode 0600) when the file is missing. */
int ssh_host_key_load(const char *path, int create, struct ssh_key *ret, char *err, size_t errlen);

#endif
