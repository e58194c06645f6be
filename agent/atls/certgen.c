/* Making aTLS certificates: a fresh P-256 key, its SPKI and user data (SHA-256 of the SPKI),
 * the self-signed certificate of spec §1.4 with the attestation extension, and the nonce DN
 * of §1.3. A small forward DER writer whose constructed elements get their length once
 * their content is known. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <bearssl.h>

#include "atls.h"
#include "base/base.h"
#include "conn_internal.h"

/* ---- the DER writer ---- */

struct dout {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static size_t len_octets(size_t n)
{
	return n < 0x80 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x1000000 ? 4 : 5;
}

static void put_len(uint8_t *p, size_t n)
{
	size_t k = len_octets(n);

	if (k == 1) {
		p[0] = (uint8_t)n;
		return;
	}
	p[0] = (uint8_t)(0x80 | (k - 1));
	for (size_t i = 1; i < k; i++)
		p[i] = (uint8_t)(n >> (8 * (k - 1 - i)));
}

static void put_raw(struct dout *d, const void *src, size_t n)
{
	if (d->err || n > d->cap - d->len) {
		d->err = -ENOBUFS;
		return;
	}
	memcpy(d->p + d->len, src, n);
	d->len += n;
}

static void put_tlv(struct dout *d, uint8_t tag, const void *src, size_t n)
{
	uint8_t h[6];

	h[0] = tag;
	put_len(h + 1, n);
	put_raw(d, h, 1 + len_octets(n));
	put_raw(d, src, n);
}

/* A constructed element: begin() remembers where its content starts, end() inserts the tag
 * and length in front of it. */
static size_t begin(struct dout *d)
{
	return d->len;
}

static void end(struct dout *d, size_t start, uint8_t tag)
{
	size_t n = d->len - start, h = 1 + len_octets(n);

	if (d->err || h > d->cap - d->len) {
		d->err = -ENOBUFS;
		return;
	}
	memmove(d->p + start + h, d->p + start, n);
	d->p[start] = tag;
	put_len(d->p + start + 1, n);
	d->len += h;
}

/* An INTEGER from unsigned big-endian bytes, minimally encoded and positive. */
static void put_uint(struct dout *d, const uint8_t *b, size_t n)
{
	size_t start;

	while (n > 1 && b[0] == 0) {
		b++;
		n--;
	}
	start = begin(d);
	if (b[0] & 0x80)
		put_raw(d, "", 1);
	put_raw(d, b, n);
	end(d, start, 0x02);
}

static void put_time(struct dout *d, time_t t)
{
	struct tm tm;
	char s[20];

	gmtime_r(&t, &tm);
	/* RFC 5280: UTCTime through 2049, GeneralizedTime from 2050 on. */
	if (tm.tm_year + 1900 < 2050) {
		strftime(s, sizeof s, "%y%m%d%H%M%SZ", &tm);
		put_tlv(d, 0x17, s, strlen(s));
	} else {
		strftime(s, sizeof s, "%Y%m%d%H%M%SZ", &tm);
		put_tlv(d, 0x18, s, strlen(s));
	}
}

static const uint8_t oid_ecdsa_sha256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};
static const uint8_t oid_cn[] = {0x55, 0x04, 0x03};

/* Name = SEQUENCE { SET { SEQUENCE { OID 2.5.4.3, PrintableString value } } } */
static void put_cn_name(struct dout *d, const char *value, size_t n)
{
	size_t seq = begin(d), set, atv;

	set = begin(d);
	atv = begin(d);
	put_tlv(d, 0x06, oid_cn, sizeof oid_cn);
	put_tlv(d, 0x13, value, n);
	end(d, atv, 0x30);
	end(d, set, 0x31);
	end(d, seq, 0x30);
}

static void put_sigalg(struct dout *d)
{
	size_t s = begin(d);

	put_tlv(d, 0x06, oid_ecdsa_sha256, sizeof oid_ecdsa_sha256);
	end(d, s, 0x30);
}

/* ---- keys ---- */

static const uint8_t spki_p256_prefix[26] = {
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
};

int atls_key_generate(struct atls_key *k)
{
	br_hmac_drbg_context rng;
	uint8_t seed[48];
	br_ec_public_key pk;
	unsigned char pkbuf[BR_EC_KBUF_PUB_MAX_SIZE];
	int r;

	r = atls_random(seed, sizeof seed);
	if (r < 0)
		return r;
	br_hmac_drbg_init(&rng, &br_sha256_vtable, seed, sizeof seed);
	secret_wipe(seed, sizeof seed);
	if (!br_ec_keygen(&rng.vtable, br_ec_get_default(), &k->priv, k->sk, BR_EC_secp256r1) ||
	    br_ec_compute_pub(br_ec_get_default(), &pk, pkbuf, &k->priv) != 65) {
		secret_wipe(&rng, sizeof rng);
		return -EIO;
	}
	secret_wipe(&rng, sizeof rng);
	memcpy(k->spki, spki_p256_prefix, sizeof spki_p256_prefix);
	memcpy(k->spki + sizeof spki_p256_prefix, pkbuf, 65);
	return 0;
}

void atls_key_user_data(const struct atls_key *k, uint8_t out[ATLS_USER_DATA_LEN])
{
	br_sha256_context h;

	br_sha256_init(&h);
	br_sha256_update(&h, k->spki, sizeof k->spki);
	br_sha256_out(&h, out);
}

size_t atls_key_sign(const struct atls_key *k, const br_hash_class *h, const uint8_t *hv,
		     uint8_t *sig, size_t cap)
{
	uint8_t tmp[80];
	size_t n = br_ecdsa_sign_asn1_get_default()(br_ec_get_default(), h, hv, &k->priv, tmp);

	if (n == 0 || n > cap)
		return 0;
	memcpy(sig, tmp, n);
	return n;
}

/* ---- the certificate (§1.4) ---- */

int atls_cert_build(const struct atls_key *k, time_t now, const uint8_t *oid, size_t oid_len,
		    const uint8_t *doc, size_t doc_len, uint8_t *out, size_t cap, size_t *ret_len)
{
	struct dout d = {.p = out, .cap = cap};
	uint8_t serial[16], hv[32], sig[80];
	size_t cert, tbs, s, tbs_len, siglen;
	br_sha256_context h;
	int r;

	r = atls_random(serial, sizeof serial);
	if (r < 0)
		return r;
	/* Positive and minimal with the top byte in 0x40..0x7f (Go rejects other forms). */
	serial[0] = (uint8_t)(0x40 | (serial[0] & 0x3f));

	cert = begin(&d);
	tbs = begin(&d);
	s = begin(&d);
	put_tlv(&d, 0x02, "\x02", 1); /* v3 */
	end(&d, s, 0xa0);
	put_uint(&d, serial, sizeof serial);
	put_sigalg(&d);
	put_cn_name(&d, "Constellation", 13);
	s = begin(&d);
	put_time(&d, now - 2 * 3600);
	put_time(&d, now + 2 * 3600);
	end(&d, s, 0x30);
	put_cn_name(&d, "Constellation", 13);
	put_raw(&d, k->spki, sizeof k->spki);
	if (oid) {
		size_t exts = begin(&d), seq = begin(&d), ext = begin(&d);

		put_tlv(&d, 0x06, oid, oid_len);
		/* not critical: the BOOLEAN is left out (DER omits the default FALSE) */
		put_tlv(&d, 0x04, doc, doc_len);
		end(&d, ext, 0x30);
		end(&d, seq, 0x30);
		end(&d, exts, 0xa3);
	}
	end(&d, tbs, 0x30);
	if (d.err)
		return d.err;
	tbs_len = d.len - tbs;
	br_sha256_init(&h);
	br_sha256_update(&h, out + tbs, tbs_len);
	br_sha256_out(&h, hv);
	siglen = atls_key_sign(k, &br_sha256_vtable, hv, sig + 1, sizeof sig - 1);
	if (siglen == 0)
		return -EIO;
	put_sigalg(&d);
	sig[0] = 0; /* BIT STRING: no unused bits */
	put_tlv(&d, 0x03, sig, siglen + 1);
	end(&d, cert, 0x30);
	if (d.err)
		return d.err;
	*ret_len = d.len;
	return 0;
}

/* ---- the nonce DN (§1.3) ---- */

int atls_nonce_dn_build(const uint8_t *nonce, size_t len, uint8_t *out, size_t cap, size_t *ret_len)
{
	char b64[BASE64_ENCODED_LEN(ATLS_NONCE_LEN) + 1];
	struct dout d = {.p = out, .cap = cap};

	if (len != ATLS_NONCE_LEN)
		return -EINVAL;
	base64_encode(BASE64_STD, nonce, len, b64, sizeof b64);
	put_cn_name(&d, b64, strlen(b64));
	if (d.err)
		return d.err;
	*ret_len = d.len;
	return 0;
}
