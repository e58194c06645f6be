/* The node's ed25519 SSH host key (spec §5.4): kept in OpenSSH's private-key format, as
 * `ssh-keygen -t ed25519` writes it (unencrypted), and sent to the JoinService in SSH wire
 * format (RFC 4253 §6.6). nettle's hogweed does the ed25519 work. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nettle/eddsa.h>

#include "base/base.h"
#include "base/p256.h"
#include "kube.h"

static const char armor_begin[] = "-----BEGIN OPENSSH PRIVATE KEY-----\n";
static const char armor_end[] = "-----END OPENSSH PRIVATE KEY-----";
static const char magic[] = "openssh-key-v1"; /* with its NUL */

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static size_t put_string(uint8_t *p, const void *s, size_t n)
{
	put_u32(p, (uint32_t)n);
	memcpy(p + 4, s, n);
	return 4 + n;
}

size_t ssh_pubkey_wire(const uint8_t pk[32], uint8_t out[SSH_PUBKEY_WIRE_LEN])
{
	size_t n = put_string(out, "ssh-ed25519", 11);

	return n + put_string(out + n, pk, 32);
}

int ssh_authorized_key(const uint8_t pk[32], char *out, size_t cap)
{
	uint8_t wire[SSH_PUBKEY_WIRE_LEN];
	char b64[BASE64_ENCODED_LEN(SSH_PUBKEY_WIRE_LEN) + 1];
	int n;

	ssh_pubkey_wire(pk, wire);
	base64_encode(BASE64_STD, wire, sizeof wire, b64, sizeof b64);
	n = snprintf(out, cap, "ssh-ed25519 %s\n", b64);
	return n > 0 && (size_t)n < cap ? 0 : -ENOBUFS;
}

/* ---- reading ---- */

struct rd {
	const uint8_t *p;
	size_t len;
};

static int get_u32(struct rd *r, uint32_t *v)
{
	if (r->len < 4)
		return -EBADMSG;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->len -= 4;
	return 0;
}

static int get_string(struct rd *r, struct rd *s)
{
	uint32_t n;

	if (get_u32(r, &n) < 0 || n > r->len)
		return -EBADMSG;
	s->p = r->p;
	s->len = n;
	r->p += n;
	r->len -= n;
	return 0;
}

static int is(const struct rd *s, const char *want)
{
	return s->len == strlen(want) && !memcmp(s->p, want, s->len);
}

int ssh_key_parse(const char *text, size_t len, struct ssh_key *ret, char *err, size_t errlen)
{
	size_t blen = 0, cap = len, n;
	char *b64 = malloc(len + 1);
	uint8_t *bin = malloc(len + 1);
	const char *p = text, *end = text + len;
	struct rd r, s, pub, priv, pk, sk;
	uint8_t wire[SSH_PUBKEY_WIRE_LEN];
	uint32_t v, c1, c2;
	struct ssh_key k;
	int rc = -EINVAL;

	if (!b64 || !bin) {
		free(b64);
		free(bin);
		return -ENOMEM;
	}
	if (len < sizeof armor_begin - 1 || memcmp(p, armor_begin, sizeof armor_begin - 1)) {
		errbuf_set(err, errlen, "ssh key: no OPENSSH PRIVATE KEY header");
		goto out;
	}
	p += sizeof armor_begin - 1;
	for (;;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (l == sizeof armor_end - 1 && !memcmp(p, armor_end, l))
			break;
		if (!nl || l == 0) {
			errbuf_set(err, errlen, "ssh key: no END line");
			goto out;
		}
		memcpy(b64 + blen, p, l);
		blen += l;
		p = nl + 1;
	}
	if (base64_decode(BASE64_STD, b64, blen, bin, cap, &n) < 0) {
		errbuf_set(err, errlen, "ssh key: body is not base64");
		goto out;
	}
	r = (struct rd){bin, n};
	if (r.len < sizeof magic || memcmp(r.p, magic, sizeof magic)) {
		errbuf_set(err, errlen, "ssh key: not openssh-key-v1");
		goto out;
	}
	r.p += sizeof magic;
	r.len -= sizeof magic;
	if (get_string(&r, &s) < 0 || !is(&s, "none") || get_string(&r, &s) < 0 ||
	    !is(&s, "none") || get_string(&r, &s) < 0 || s.len != 0) {
		errbuf_set(err, errlen, "ssh key: encrypted keys are not supported");
		goto out;
	}
	if (get_u32(&r, &v) < 0 || v != 1 || get_string(&r, &pub) < 0 ||
	    get_string(&r, &priv) < 0 || r.len != 0) {
		errbuf_set(err, errlen, "ssh key: want exactly one key");
		goto out;
	}
	if (get_u32(&priv, &c1) < 0 || get_u32(&priv, &c2) < 0 || c1 != c2 ||
	    get_string(&priv, &s) < 0 || !is(&s, "ssh-ed25519") || get_string(&priv, &pk) < 0 ||
	    pk.len != 32 || get_string(&priv, &sk) < 0 || sk.len != 64 ||
	    get_string(&priv, &s) < 0 || priv.len >= 8) {
		errbuf_set(err, errlen, "ssh key: not a well-formed ed25519 private key");
		goto out;
	}
	for (size_t i = 0; i < priv.len; i++)
		if (priv.p[i] != i + 1) {
			errbuf_set(err, errlen, "ssh key: bad padding");
			goto out;
		}
	if (ssh_key_from_seed(&k, sk.p) != 0 || memcmp(k.pk, pk.p, 32) || memcmp(k.sk, sk.p, 64) ||
	    pub.len != ssh_pubkey_wire(k.pk, wire) || memcmp(pub.p, wire, pub.len)) {
		errbuf_set(err, errlen, "ssh key: public key does not match the private key");
		goto out;
	}
	*ret = k;
	rc = 0;
out:
	secret_wipe(&k, sizeof k);
	secret_wipe(b64, len + 1);
	secret_wipe(bin, len + 1);
	free(b64);
	free(bin);
	return rc;
}

/* ---- writing ---- */

int ssh_key_format(const struct ssh_key *k, char *out, size_t cap)
{
	uint8_t bin[512], *p = bin, *priv;
	uint32_t check;
	size_t n, plen;
	int r = -ENOBUFS;

	if (random_bytes(&check, sizeof check) < 0)
		return -EIO;
	memcpy(p, magic, sizeof magic);
	p += sizeof magic;
	p += put_string(p, "none", 4);
	p += put_string(p, "none", 4);
	p += put_string(p, "", 0);
	put_u32(p, 1);
	p += 4;
	put_u32(p, SSH_PUBKEY_WIRE_LEN);
	p += 4;
	p += ssh_pubkey_wire(k->pk, p);
	priv = p + 4; /* its length goes in front once known */
	put_u32(priv, check);
	put_u32(priv + 4, check);
	plen = 8;
	plen += put_string(priv + plen, "ssh-ed25519", 11);
	plen += put_string(priv + plen, k->pk, 32);
	plen += put_string(priv + plen, k->sk, 64);
	plen += put_string(priv + plen, "constel-agent", 13);
	for (uint8_t i = 1; plen % 8; i++)
		priv[plen++] = i;
	put_u32(p, (uint32_t)plen);
	n = (size_t)(priv + plen - bin);
	{
		char b64[BASE64_ENCODED_LEN(sizeof bin) + 1];
		size_t o, blen;

		base64_encode(BASE64_STD, bin, n, b64, sizeof b64);
		blen = strlen(b64);
		o = strlen(armor_begin);
		if (o + blen + blen / 70 + sizeof armor_end + 2 > cap)
			goto out;
		memcpy(out, armor_begin, o);
		for (size_t i = 0; i < blen; i += 70) {
			size_t l = blen - i < 70 ? blen - i : 70;

			memcpy(out + o, b64 + i, l);
			o += l;
			out[o++] = '\n';
		}
		memcpy(out + o, armor_end, sizeof armor_end - 1);
		o += sizeof armor_end - 1;
		out[o++] = '\n';
		out[o] = '\0';
		secret_wipe(b64, sizeof b64);
		r = 0;
	}
out:
	secret_wipe(bin, sizeof bin);
	return r;
}

/* ---- ed25519 on hogweed ----
 * hogweed, already linked for P-256, instead of libsodium's ed25519 (whose 30 KiB table of
 * base-point multiples the agent then no longer carries; docs/size.md). Its scratch comes
 * from p256.c's wiped heap (hogweed_call); the seed's SHA-512 (the secret scalar and the
 * nonce key) that it leaves in its stack frames is wiped by stack_scrub, called from the
 * frame that made the call, so it covers the frames below it. */

struct ed_call {
	const uint8_t *seed, *pk, *msg;
	size_t len;
	uint8_t *out;
};

static void ed_pubkey(void *arg)
{
	struct ed_call *c = arg;

	nettle_ed25519_sha512_public_key(c->out, c->seed);
}

static void ed_sign(void *arg)
{
	struct ed_call *c = arg;

	nettle_ed25519_sha512_sign(c->pk, c->seed, c->len, c->msg, c->out);
}

/* hogweed's ed25519 calls use about 1 KiB of stack (measured: docs/size.md) */
static __attribute__((noinline)) void stack_scrub(void)
{
	uint8_t pad[4096];

	secret_wipe(pad, sizeof pad);
	__asm__ volatile("" : : "r"(pad) : "memory");
}

int ssh_key_from_seed(struct ssh_key *k, const uint8_t seed[32])
{
	struct ed_call c = {.seed = seed, .out = k->pk};
	int r = hogweed_call(ed_pubkey, &c);

	stack_scrub();
	if (r < 0) {
		secret_wipe(k, sizeof *k);
		return r;
	}
	memmove(k->sk, seed, 32);
	memcpy(k->sk + 32, k->pk, 32);
	return 0;
}

int ssh_ed25519_sign(const struct ssh_key *k, const uint8_t *msg, size_t len, uint8_t sig[64])
{
	struct ed_call c = {.seed = k->sk, .pk = k->pk, .msg = msg, .len = len, .out = sig};
	int r = hogweed_call(ed_sign, &c);

	stack_scrub();
	if (r < 0)
		memset(sig, 0, 64);
	return r;
}

/* A fresh seed from getrandom(). */
int ssh_key_generate(struct ssh_key *k)
{
	uint8_t seed[32];
	int r = random_bytes(seed, sizeof seed);

	if (r == 0)
		r = ssh_key_from_seed(k, seed);
	secret_wipe(seed, sizeof seed);
	return r;
}

int ssh_host_key_load(const char *path, int create, struct ssh_key *ret, char *err, size_t errlen)
{
	char buf[4096];
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		struct ssh_key k;

		r = ssh_key_generate(&k);
		if (r == 0)
			r = ssh_key_format(&k, buf, sizeof buf);
		if (r == 0)
			r = write_file_excl(path, buf, strlen(buf), 0600);
		secret_wipe(buf, sizeof buf);
		if (r < 0) {
			secret_wipe(&k, sizeof k);
			errbuf_set(err, errlen, "ssh key: %s: cannot create: %s", path,
				   strerror(-r));
			return r;
		}
		log_info("ssh: created host key %s", path);
		*ret = k;
		secret_wipe(&k, sizeof k);
		return 0;
	}
	if (fd < 0) {
		r = -errno;
		errbuf_set(err, errlen, "ssh key: %s: %s", path, strerror(errno));
		return r;
	}
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n < 0 || (size_t)n == sizeof buf) {
		errbuf_set(err, errlen, "ssh key: %s: %s", path,
			   n < 0 ? strerror(errno) : "larger than 4 KiB");
		return -EINVAL;
	}
	r = ssh_key_parse(buf, (size_t)n, ret, err, errlen);
	secret_wipe(buf, sizeof buf);
	return r;
}
