/* bcrypt (Provos and Mazières, 1999) as golang.org/x/crypto/bcrypt computes it: the key is
 * the password bytes plus a trailing NUL (bug compatibility with C implementations, so at
 * most 72 bytes count), 2^cost rounds of EksBlowfish, "OrpheanBeholderScryDoubt" encrypted
 * 64 times, 23 bytes of it in bcrypt's own base64. Blowfish's initial state is generated at
 * build time from pi (gen-blowfish-pi.py). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "blowfish_pi.h"

struct blowfish {
	uint32_t p[18];
	uint32_t s[4][256];
};

static uint32_t f(const struct blowfish *c, uint32_t x)
{
	return ((c->s[0][x >> 24] + c->s[1][(x >> 16) & 0xff]) ^ c->s[2][(x >> 8) & 0xff]) +
	       c->s[3][x & 0xff];
}

static void encrypt(const struct blowfish *c, uint32_t *l, uint32_t *r)
{
	uint32_t xl = *l ^ c->p[0], xr = *r;

	for (int i = 1; i < 17; i += 2) {
		xr ^= f(c, xl) ^ c->p[i];
		xl ^= f(c, xr) ^ c->p[i + 1];
	}
	*l = xr ^ c->p[17];
	*r = xl;
}

/* The next 32 bits of data, cycling through it (Blowfish's key schedule). */
static uint32_t next_word(const uint8_t *data, size_t len, size_t *pos)
{
	uint32_t w = 0;

	for (int i = 0; i < 4; i++) {
		w = w << 8 | data[*pos];
		*pos = (*pos + 1) % len;
	}
	return w;
}

/* Blowfish's key expansion, with salt mixed into the data when salt is not NULL. */
static void expand(struct blowfish *c, const uint8_t *key, size_t key_len, const uint8_t *salt,
		   size_t salt_len)
{
	size_t kp = 0, sp = 0;
	uint32_t l = 0, r = 0;

	for (int i = 0; i < 18; i++)
		c->p[i] ^= next_word(key, key_len, &kp);
	for (int i = 0; i < 18; i += 2) {
		if (salt) {
			l ^= next_word(salt, salt_len, &sp);
			r ^= next_word(salt, salt_len, &sp);
		}
		encrypt(c, &l, &r);
		c->p[i] = l;
		c->p[i + 1] = r;
	}
	for (int b = 0; b < 4; b++) {
		for (int i = 0; i < 256; i += 2) {
			if (salt) {
				l ^= next_word(salt, salt_len, &sp);
				r ^= next_word(salt, salt_len, &sp);
			}
			encrypt(c, &l, &r);
			c->s[b][i] = l;
			c->s[b][i + 1] = r;
		}
	}
}

static const char alphabet[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/* bcrypt's base64: its own alphabet, no padding; trailing bits are ignored, as in Go. */
static void b64_encode(const uint8_t *src, size_t len, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)src[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)src[i + 1] << 8;
		if (i + 2 < len)
			v |= src[i + 2];
		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		if (i + 1 < len)
			out[o++] = alphabet[(v >> 6) & 63];
		if (i + 2 < len)
			out[o++] = alphabet[v & 63];
	}
	out[o] = '\0';
}

static int b64_decode(const char *src, size_t n, uint8_t *out, size_t out_len)
{
	uint32_t acc = 0;
	size_t bits = 0, o = 0;

	for (size_t i = 0; i < n; i++) {
		const char *p = src[i] ? strchr(alphabet, src[i]) : NULL;

		if (!p)
			return -EINVAL;
		acc = acc << 6 | (uint32_t)(p - alphabet);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o < out_len)
				out[o++] = (uint8_t)(acc >> bits);
		}
	}
	return o == out_len ? 0 : -EINVAL;
}

/* The 23 bytes bcrypt keeps of its ciphertext. */
static int bcrypt_raw(const void *pw, size_t pw_len, int cost, const uint8_t salt[16],
		      uint8_t out[23])
{
	static const char magic[] = "OrpheanBeholderScryDoubt";
	struct blowfish *c;
	uint8_t *key;
	uint32_t ct[6];
	size_t key_len = pw_len + 1;

	if (pw_len > 4096)
		return -EINVAL;
	c = malloc(sizeof *c);
	key = malloc(key_len);
	if (!c || !key) {
		free(c);
		free(key);
		return -ENOMEM;
	}
	memcpy(key, pw, pw_len);
	key[pw_len] = 0;
	if (key_len > 72)
		key_len = 72; /* only 18 words of key ever reach the P-array */
	memcpy(c->p, blowfish_p_init, sizeof c->p);
	memcpy(c->s, blowfish_s_init, sizeof c->s);
	expand(c, key, key_len, salt, 16);
	for (uint64_t i = 0; i < (uint64_t)1 << cost; i++) {
		expand(c, key, key_len, NULL, 0);
		expand(c, salt, 16, NULL, 0);
	}
	for (int i = 0; i < 6; i++) {
		const uint8_t *m = (const uint8_t *)magic + 4 * i;

		ct[i] = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 | (uint32_t)m[2] << 8 | m[3];
	}
	for (int n = 0; n < 64; n++)
		for (int i = 0; i < 6; i += 2)
			encrypt(c, &ct[i], &ct[i + 1]);
	for (int i = 0; i < 23; i++)
		out[i] = (uint8_t)(ct[i / 4] >> (24 - 8 * (i % 4)));
	secret_wipe(ct, sizeof ct);
	secret_wipe(c, sizeof *c);
	secret_wipe(key, pw_len + 1);
	free(c);
	free(key);
	return 0;
}

int bcrypt_hash(const void *pw, size_t pw_len, int cost, const uint8_t salt[16],
		char out[BCRYPT_HASH_LEN + 1])
{
	uint8_t raw[23];
	int r;

	if (cost < BCRYPT_MIN_COST || cost > BCRYPT_MAX_COST)
		return -EINVAL;
	r = bcrypt_raw(pw, pw_len, cost, salt, raw);
	if (r < 0)
		return r;
	snprintf(out, 8, "$2a$%02d$", cost);
	b64_encode(salt, 16, out + 7);
	b64_encode(raw, 23, out + 29);
	secret_wipe(raw, sizeof raw);
	return 0;
}

int bcrypt_check(const char *hash, size_t len, const void *pw, size_t pw_len, char *err,
		 size_t errlen)
{
	uint8_t salt[16], want[23], got[23], diff = 0;
	int cost, r;

	if (len != BCRYPT_HASH_LEN)
		return errbuf_set(err, errlen, "bcrypt hash: %zu characters, want %d", len,
				  BCRYPT_HASH_LEN);
	if (hash[0] != '$' || hash[1] != '2' || !strchr("aby", hash[2]) || hash[2] == '\0' ||
	    hash[3] != '$' || hash[6] != '$')
		return errbuf_set(err, errlen,
				  "bcrypt hash: does not start with $2a$, $2b$ or $2y$");
	if (hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9')
		return errbuf_set(err, errlen, "bcrypt hash: cost is not two digits");
	cost = (hash[4] - '0') * 10 + (hash[5] - '0');
	if (cost < BCRYPT_MIN_COST || cost > BCRYPT_MAX_COST)
		return errbuf_set(err, errlen, "bcrypt hash: cost %d outside %d..%d", cost,
				  BCRYPT_MIN_COST, BCRYPT_MAX_COST);
	if (b64_decode(hash + 7, 22, salt, sizeof salt) < 0 ||
	    b64_decode(hash + 29, 31, want, sizeof want) < 0)
		return errbuf_set(err, errlen, "bcrypt hash: salt or digest is not bcrypt base64");
	r = bcrypt_raw(pw, pw_len, cost, salt, got);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof got; i++)
		diff |= got[i] ^ want[i];
	secret_wipe(got, sizeof got);
	return diff ? -EACCES : 0;
}
