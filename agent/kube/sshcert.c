/* OpenSSH host certificates (PROTOCOL.certkeys) signed by the emergency SSH CA (spec §5.5
 * step 9, §7 step 4): ssh-ed25519-cert-v01@openssh.com over an ed25519 host key, type host,
 * key ID = the first principal, valid from now to forever, no critical options and no
 * extensions, signed with the ed25519 CA derived from its 32-byte seed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "kube.h"

#define CERT_MAX 4096

struct wb {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void put(struct wb *w, const void *b, size_t n)
{
	if (w->err || n > w->cap - w->len) {
		w->err = -ENOBUFS;
		return;
	}
	memcpy(w->p + w->len, b, n);
	w->len += n;
}

static void u32(struct wb *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};

	put(w, b, 4);
}

static void u64(struct wb *w, uint64_t v)
{
	u32(w, (uint32_t)(v >> 32));
	u32(w, (uint32_t)v);
}

static void string(struct wb *w, const void *b, size_t n)
{
	u32(w, (uint32_t)n);
	put(w, b, n);
}

int ssh_pubkey_from_wire(const uint8_t *wire, size_t len, uint8_t pk[32])
{
	static const uint8_t prefix[] = {0,   0,   0,	11,  's', 's', 'h', '-', 'e', 'd',
					 '2', '5', '5', '1', '9', 0,   0,   0,	 32};

	if (len != SSH_PUBKEY_WIRE_LEN || memcmp(wire, prefix, sizeof prefix))
		return -EINVAL;
	memcpy(pk, wire + sizeof prefix, 32);
	return 0;
}

int ssh_host_cert_sign(const uint8_t ca_seed[32], const uint8_t host_pk[32],
		       const char *const *principals, size_t n, time_t now, char *out, size_t cap)
{
	static const char type[] = "ssh-ed25519-cert-v01@openssh.com";
	uint8_t buf[CERT_MAX], pbuf[2048], nonce[32], ca_wire[64], sig[64];
	struct ssh_key ca;
	struct wb w = {buf, 0, sizeof buf, 0}, pw = {pbuf, 0, sizeof pbuf, 0}, sw;
	uint8_t sigbuf[128];
	char *b64;
	size_t b64len;
	int r;

	if (!n || random_bytes(nonce, sizeof nonce) < 0 || ssh_key_from_seed(&ca, ca_seed) != 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		string(&pw, principals[i], strlen(principals[i]));
	string(&w, type, sizeof type - 1);
	string(&w, nonce, sizeof nonce);
	string(&w, host_pk, 32);
	u64(&w, 0);					  /* serial */
	u32(&w, 2);					  /* SSH2_CERT_TYPE_HOST */
	string(&w, principals[0], strlen(principals[0])); /* key ID */
	string(&w, pbuf, pw.len);
	u64(&w, (uint64_t)now);
	u64(&w, UINT64_MAX); /* forever */
	string(&w, "", 0);   /* critical options */
	string(&w, "", 0);   /* extensions */
	string(&w, "", 0);   /* reserved */
	string(&w, ca_wire, ssh_pubkey_wire(ca.pk, ca_wire));
	if (w.err || pw.err) {
		secret_wipe(&ca, sizeof ca);
		return -ENOBUFS;
	}
	r = ssh_ed25519_sign(&ca, buf, w.len, sig);
	secret_wipe(&ca, sizeof ca);
	if (r < 0)
		return r;
	sw = (struct wb){sigbuf, 0, sizeof sigbuf, 0};
	string(&sw, "ssh-ed25519", 11);
	string(&sw, sig, sizeof sig);
	string(&w, sigbuf, sw.len);
	if (w.err)
		return -ENOBUFS;
	b64len = base64_encoded_len(w.len);
	if (sizeof type + b64len + 2 > cap)
		return -ENOBUFS;
	memcpy(out, type, sizeof type - 1);
	out[sizeof type - 1] = ' ';
	b64 = out + sizeof type;
	r = base64_encode(BASE64_STD, buf, w.len, b64, cap - sizeof type);
	if (r < 0)
		return r;
	strcpy(b64 + b64len, "\n");
	return 0;
}
