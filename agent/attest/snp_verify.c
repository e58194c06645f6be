/* The SEV-SNP validator: a report, its signer (VCEK or VLEK), the chain to AMD's root, the
 * report's signature and what the firmware vouches for. The checks of go-sev-guest's
 * verify.SnpAttestation and validate.SnpAttestation as Constellation configures them, for
 * Milan, Genoa and Turin (docs/snp.md). Every refusal is one line naming the check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>

#include "base/base.h"
#include "base/der.h"
#include "x509.h"
#include "snp.h"

/* RSASSA-PSS, SHA-384, MGF1 SHA-384, salt 48, as AMD's certificates carry it: with the
 * trailer field spelt out (AMD) or left at its default (OpenSSL). */
static const uint8_t pss_alg_amd[] = {
    0x30, 0x46, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a, 0x30, 0x39,
    0xa0, 0x0f, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
    0x05, 0x00, 0xa1, 0x1c, 0x30, 0x1a, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01,
    0x01, 0x08, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
    0x05, 0x00, 0xa2, 0x03, 0x02, 0x01, 0x30, 0xa3, 0x03, 0x02, 0x01, 0x01};
static const uint8_t pss_alg_default_trailer[] = {
    0x30, 0x41, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a, 0x30,
    0x34, 0xa0, 0x0f, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
    0x02, 0x02, 0x05, 0x00, 0xa1, 0x1c, 0x30, 0x1a, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86,
    0xf7, 0x0d, 0x01, 0x01, 0x08, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65,
    0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0xa2, 0x03, 0x02, 0x01, 0x30};

static const uint8_t oid_rsa[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01};
static const uint8_t oid_ec[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01};
static const uint8_t oid_p384[] = {0x2b, 0x81, 0x04, 0x00, 0x22};
/* 1.3.6.1.4.1.3704.1: AMD's VCEK/VLEK extensions; .3.N the TCB parts, .4 the hardware ID */
static const uint8_t oid_amd[] = {0x2b, 0x06, 0x01, 0x04, 0x01, 0x9c, 0x78, 0x01};

enum { KEY_RSA = 1, KEY_P384 };

struct cert {
	struct x509_cert x;
	struct der_in n, e, point;
	int key;
	/* AMD extensions: spl[1..9] = 1.3.6.1.4.1.3704.1.3.N */
	int have_spl[10];
	uint8_t spl[10];
	struct der_in hwid;
};

/* One small INTEGER 0..255 (DER content), as the TCB extensions hold them. */
static int small_uint(struct der_in v, uint8_t *ret)
{
	struct der_in i;

	if (der_expect(&v, DER_INTEGER, &i, NULL) < 0 || v.len || !i.len || i.len > 2 ||
	    (i.p[0] & 0x80) || (i.len == 2 && (i.p[0] || !(i.p[1] & 0x80))))
		return -EBADMSG;
	*ret = i.p[i.len - 1];
	return 0;
}

static int parse_ext(struct cert *c)
{
	struct der_in exts = c->x.exts, val;
	struct x509_ext e;
	int r;

	while ((r = x509_ext_next(&exts, &e)) > 0) {
		struct der_in oid = e.oid;

		val = e.val;
		if (oid.len < sizeof oid_amd || memcmp(oid.p, oid_amd, sizeof oid_amd))
			continue;
		if (oid.len == sizeof oid_amd + 2 && oid.p[sizeof oid_amd] == 3 &&
		    oid.p[sizeof oid_amd + 1] >= 1 && oid.p[sizeof oid_amd + 1] <= 9) {
			int k = oid.p[sizeof oid_amd + 1];

			if (c->have_spl[k] || small_uint(val, &c->spl[k]) < 0)
				return -EBADMSG;
			c->have_spl[k] = 1;
		} else if (oid.len == sizeof oid_amd + 1 && oid.p[sizeof oid_amd] == 4) {
			if (c->hwid.p)
				return -EBADMSG;
			/* the raw bytes (KDS puts no tag inside), or an OCTET STRING of them */
			if ((val.len == 66 && val.p[0] == DER_OCTET_STRING && val.p[1] == 64) ||
			    (val.len == 10 && val.p[0] == DER_OCTET_STRING && val.p[1] == 8)) {
				val.p += 2;
				val.len -= 2;
			}
			c->hwid = val;
		}
	}
	return r;
}

static int parse_spki(struct cert *c)
{
	struct der_in alg = c->x.key_alg_params, bits = c->x.key, key, param, tmp;

	if (der_oid_is(&c->x.key_alg_oid, oid_ec, sizeof oid_ec)) {
		if (der_expect(&alg, DER_OID, &param, NULL) < 0 || alg.len ||
		    !der_oid_is(&param, oid_p384, sizeof oid_p384) || bits.len != 97 ||
		    bits.p[0] != 0x04)
			return -EBADMSG;
		c->point = bits;
		c->key = KEY_P384;
		return 0;
	}
	if (!der_oid_is(&c->x.key_alg_oid, oid_rsa, sizeof oid_rsa))
		return -EBADMSG;
	if (der_expect(&alg, DER_NULL, &param, NULL) < 0 || alg.len || param.len ||
	    der_expect(&bits, DER_SEQUENCE, &key, NULL) < 0 || bits.len ||
	    der_expect(&key, DER_INTEGER, &c->n, NULL) < 0 ||
	    der_expect(&key, DER_INTEGER, &c->e, NULL) < 0 || key.len)
		return -EBADMSG;
	/* positive, leading zero dropped; at most 4096 bits (BearSSL's bound) */
	tmp = c->n;
	if (!tmp.len || (tmp.p[0] & 0x80))
		return -EBADMSG;
	if (!tmp.p[0]) {
		tmp.p++;
		tmp.len--;
	}
	if (tmp.len < 256 || tmp.len > 512 || !c->e.len || c->e.len > 4 || (c->e.p[0] & 0x80))
		return -EBADMSG;
	c->n = tmp;
	c->key = KEY_RSA;
	return 0;
}

/* An AMD certificate: X.509 v3 (x509.c) signed with RSASSA-PSS SHA-384, an RSA or P-384 key,
 * AMD's TCB and hardware-ID extensions. */
static int cert_parse(const uint8_t *der, size_t len, struct cert *c)
{
	const struct der_in *alg = &c->x.sigalg_raw;

	memset(c, 0, sizeof *c);
	if (x509_parse(der, len, &c->x) < 0)
		return -EBADMSG;
	if (!((alg->len == sizeof pss_alg_amd &&
	       !memcmp(alg->p, pss_alg_amd, sizeof pss_alg_amd)) ||
	      (alg->len == sizeof pss_alg_default_trailer &&
	       !memcmp(alg->p, pss_alg_default_trailer, sizeof pss_alg_default_trailer))))
		return -ENOTSUP;
	if (parse_spki(c) < 0 || parse_ext(c) < 0)
		return -EBADMSG;
	return 0;
}

static void mgf1_sha384_xor(const uint8_t *seed, uint8_t *out, size_t len)
{
	uint8_t ctr[4], h[48];
	br_sha384_context sc;

	for (uint32_t i = 0, done = 0; done < len; i++) {
		ctr[0] = (uint8_t)(i >> 24);
		ctr[1] = (uint8_t)(i >> 16);
		ctr[2] = (uint8_t)(i >> 8);
		ctr[3] = (uint8_t)i;
		br_sha384_init(&sc);
		br_sha384_update(&sc, seed, 48);
		br_sha384_update(&sc, ctr, 4);
		br_sha384_out(&sc, h);
		for (size_t j = 0; j < 48 && done < len; j++)
			out[done++] ^= h[j];
	}
}

int snp_rsa_pss_sha384_verify(const uint8_t *n, size_t nlen, const uint8_t *e, size_t elen,
			      const uint8_t *sig, size_t sig_len, const uint8_t hash[48])
{
	enum { HLEN = 48, SLEN = 48 };
	uint8_t em[512], h2[48];
	br_rsa_public_key pk = {(unsigned char *)n, nlen, (unsigned char *)e, elen};
	br_sha384_context sc;
	size_t embits, emlen, dblen, i;
	uint8_t *m, top_mask;
	static const uint8_t zeros[8];

	if (!nlen || !n[0] || nlen > sizeof em || sig_len != nlen)
		return -EBADMSG;
	memcpy(em, sig, nlen);
	if (!br_rsa_i31_public(em, nlen, &pk))
		return -EBADMSG;
	/* emBits = modBits - 1 */
	embits = nlen * 8 - 1;
	for (uint8_t t = n[0]; !(t & 0x80); t <<= 1)
		embits--;
	emlen = (embits + 7) / 8;
	m = em + (nlen - emlen);
	if (nlen != emlen && em[0])
		return -EBADMSG;
	if (emlen < HLEN + SLEN + 2 || m[emlen - 1] != 0xbc)
		return -EBADMSG;
	dblen = emlen - HLEN - 1;
	top_mask = (uint8_t)(0xff >> (8 * emlen - embits));
	if (m[0] & ~top_mask)
		return -EBADMSG;
	mgf1_sha384_xor(m + dblen, m, dblen);
	m[0] &= top_mask;
	for (i = 0; i < dblen - SLEN - 1; i++)
		if (m[i])
			return -EBADMSG;
	if (m[i] != 0x01)
		return -EBADMSG;
	br_sha384_init(&sc);
	br_sha384_update(&sc, zeros, 8);
	br_sha384_update(&sc, hash, HLEN);
	br_sha384_update(&sc, m + dblen - SLEN, SLEN);
	br_sha384_out(&sc, h2);
	return memcmp(h2, m + dblen, HLEN) ? -EBADMSG : 0;
}

/* Signatures that verified, by the SHA-256 of what the check covered: a validator sees the
 * same ASK, ARK and VCEKs again and again (one thread; a plain ring). */
#define SIG_CACHE 16
static uint8_t sig_cache[SIG_CACHE][32];
static unsigned sig_cache_next;

/* c's signature by issuer's RSA key */
static int cert_signed_by(const struct cert *c, const struct cert *issuer)
{
	uint8_t h[48];
	br_sha384_context sc;

	uint8_t key[32];
	br_sha256_context kc;
	size_t i;

	if (issuer->key != KEY_RSA || !x509_issued_by(&c->x, &issuer->x))
		return -EBADMSG;
	br_sha384_init(&sc);
	br_sha384_update(&sc, c->x.tbs_raw.p, c->x.tbs_raw.len);
	br_sha384_out(&sc, h);
	/* everything the check depends on: the signed hash, the signature, the issuer's key */
	br_sha256_init(&kc);
	br_sha256_update(&kc, h, sizeof h);
	br_sha256_update(&kc, c->x.sig.p, c->x.sig.len);
	br_sha256_update(&kc, issuer->n.p, issuer->n.len);
	br_sha256_update(&kc, issuer->e.p, issuer->e.len);
	br_sha256_out(&kc, key);
	for (i = 0; i < SIG_CACHE; i++)
		if (!memcmp(sig_cache[i], key, sizeof key))
			return 0;
	if (snp_rsa_pss_sha384_verify(issuer->n.p, issuer->n.len, issuer->e.p, issuer->e.len,
				      c->x.sig.p, c->x.sig.len, h) < 0)
		return -EBADMSG;
	memcpy(sig_cache[sig_cache_next++ % SIG_CACHE], key, sizeof key);
	return 0;
}

static int cn_is(const struct cert *c, const char *prefix, const char *product)
{
	size_t pl = strlen(prefix), ql = product ? strlen(product) : 0;

	return c->x.cn.len == pl + ql && !memcmp(c->x.cn.p, prefix, pl) &&
	       (!ql || !memcmp(c->x.cn.p + pl, product, ql));
}

static int valid_at(const struct cert *c, time_t at)
{
	return x509_valid_at(&c->x, at);
}

static const char *role(int k)
{
	return k == SNP_KEY_VLEK ? "VLEK" : "VCEK";
}

/* ECDSA P-384 with hogweed (12 times BearSSL's i31 speed here: 0.6 against 7.4 ms): point
 * uncompressed (0x04 x y), r and s little-endian. */
static int ecdsa_p384_verify(const uint8_t *point, const uint8_t h[48], const uint8_t *r_le,
			     const uint8_t *s_le)
{
	struct ecc_point pub;
	struct dsa_signature sig;
	mpz_t x, y;
	int ok;

	ecc_point_init(&pub, nettle_get_secp_384r1());
	mpz_init(x);
	mpz_init(y);
	dsa_signature_init(&sig);
	mpz_import(x, 48, 1, 1, 1, 0, point + 1);
	mpz_import(y, 48, 1, 1, 1, 0, point + 49);
	mpz_import(sig.r, 48, -1, 1, 1, 0, r_le);
	mpz_import(sig.s, 48, -1, 1, 1, 0, s_le);
	ok = ecc_point_set(&pub, x, y) && ecdsa_verify(&pub, 48, h, &sig);
	dsa_signature_clear(&sig);
	mpz_clear(x);
	mpz_clear(y);
	ecc_point_clear(&pub);
	return ok ? 0 : -EBADMSG;
}

int snp_signer_parse(const uint8_t *der, size_t len, struct snp_signer_info *si)
{
	struct cert c;
	int r = cert_parse(der, len, &c);

	memset(si, 0, sizeof *si);
	if (r < 0)
		return r;
	si->hwid = c.hwid.p;
	si->hwid_len = c.hwid.len;
	memcpy(si->have_spl, c.have_spl, sizeof si->have_spl);
	memcpy(si->spl, c.spl, sizeof si->spl);
	return c.key == KEY_P384 ? 0 : -EBADMSG;
}

void snp_verify_opts_init(struct snp_verify_opts *o)
{
	memset(o, 0, sizeof *o);
	o->at = time(NULL);
	o->vmpl = 0;
}

static int tcb_ge(const struct snp_tcb *a, const struct snp_tcb *b)
{
	return a->fmc >= b->fmc && a->bootloader >= b->bootloader && a->tee >= b->tee &&
	       a->snp >= b->snp && a->microcode >= b->microcode;
}

/* every byte of a no larger than b's (all parts, reserved ones too, as go-sev-guest's LE) */
static int tcb_le_raw(uint64_t a, uint64_t b)
{
	for (int i = 0; i < 64; i += 8)
		if ((uint8_t)(a >> i) > (uint8_t)(b >> i))
			return 0;
	return 1;
}

static int tcb_fmt(const struct snp_tcb *t, enum snp_product p, char *buf, size_t cap)
{
	if (p == SNP_TURIN)
		return snprintf(buf, cap, "fmc=%u,bl=%u,tee=%u,snp=%u,ucode=%u", t->fmc,
				t->bootloader, t->tee, t->snp, t->microcode);
	return snprintf(buf, cap, "bl=%u,tee=%u,snp=%u,ucode=%u", t->bootloader, t->tee, t->snp,
			t->microcode);
}

/* The chain: signer <- an intermediate (given or built in) <- a trusted ARK. */
static int check_chain(const struct cert *signer, int key, const struct snp_verify_opts *o,
		       enum snp_product *product, char *err, size_t errlen)
{
	struct cert inter, root;
	int found_inter = 0;
	size_t ni = o->n_chain + 2 * 3;

	for (size_t i = 0; i < ni; i++) {
		const uint8_t *der;
		size_t len;

		if (i < o->n_chain) {
			der = o->chain[i];
			len = o->chain_len[i];
		} else {
			const struct snp_builtin *b = &snp_builtins[(i - o->n_chain) / 2];

			der = (i - o->n_chain) % 2 ? b->asvk : b->ask;
			len = (i - o->n_chain) % 2 ? b->asvk_len : b->ask_len;
		}
		if (cert_parse(der, len, &inter) < 0) {
			if (i < o->n_chain)
				return errbuf_set(err, errlen,
						  "snp: chain certificate %zu does not parse as "
						  "an AMD certificate",
						  i + 1);
			continue;
		}
		if (cert_signed_by(signer, &inter) < 0)
			continue;
		found_inter = 1;
		/* the roots: --ark alone, or the built-in ARKs */
		for (size_t j = 0; j < (o->ark ? 1u : 3u); j++) {
			const uint8_t *rd = o->ark ? o->ark : snp_builtins[j].ark;
			size_t rl = o->ark ? o->ark_len : snp_builtins[j].ark_len;
			enum snp_product p = o->ark ? 0 : snp_builtins[j].product;
			const char *pn;

			if (cert_parse(rd, rl, &root) < 0)
				return errbuf_set(err, errlen,
						  "snp: the trusted ARK does not parse");
			if (!p) { /* a test root names its product: ARK-<product> */
				for (p = SNP_MILAN; p <= SNP_TURIN; p++)
					if (cn_is(&root, "ARK-", snp_product_name(p)))
						break;
				if (p > SNP_TURIN)
					return errbuf_set(err, errlen,
							  "snp: the trusted ARK's CN is not "
							  "ARK-Milan, ARK-Genoa or ARK-Turin");
			}
			if (cert_signed_by(&inter, &root) < 0)
				continue;
			pn = snp_product_name(p);
			if (cert_signed_by(&root, &root) < 0)
				return errbuf_set(err, errlen, "snp: ARK-%s is not self-signed",
						  pn);
			if (!valid_at(&root, o->at))
				return errbuf_set(err, errlen,
						  "snp: validity: ARK-%s is not valid at the time "
						  "of the check",
						  pn);
			if (!valid_at(&inter, o->at))
				return errbuf_set(err, errlen,
						  "snp: validity: the %s's issuer is not valid at "
						  "the time of the check",
						  role(key));
			if (!cn_is(&inter, key == SNP_KEY_VLEK ? "SEV-VLEK-" : "SEV-", pn))
				return errbuf_set(
				    err, errlen, "snp: chain: the %s's issuer is not SEV-%s%s",
				    role(key), key == SNP_KEY_VLEK ? "VLEK-" : "", pn);
			*product = p;
			return 0;
		}
	}
	if (found_inter)
		return errbuf_set(err, errlen,
				  "snp: chain: the %s's issuer is not signed by a trusted ARK",
				  role(key));
	return errbuf_set(err, errlen, "snp: chain: no ASK/ASVK (given or built in) signed the %s",
			  role(key));
}

int snp_verify(const uint8_t *report, size_t len, const uint8_t *signer, size_t signer_len,
	       const struct snp_verify_opts *o, struct snp_report *r, enum snp_product *product,
	       char *err, size_t errlen)
{
	struct cert s;
	struct snp_signer_info si;
	br_sha384_context sc;
	uint8_t h[48];
	enum snp_product p = 0;
	int key, r_;

	if ((r_ = snp_report_parse(report, len, r, err, errlen)) < 0)
		return r_;
	key = (int)SNP_SIGNER_KEY(r->signer_info);
	if (key == SNP_KEY_NONE)
		return errbuf_set(err, errlen, "snp: signature: the report is not signed");
	r_ = cert_parse(signer, signer_len, &s);
	if (r_ == -ENOTSUP)
		return errbuf_set(err, errlen,
				  "snp: the %s is not signed with RSA-PSS SHA-384 salt 48",
				  role(key));
	if (r_ < 0)
		return errbuf_set(err, errlen, "snp: the %s does not parse as an AMD certificate",
				  role(key));
	if (s.key != KEY_P384)
		return errbuf_set(err, errlen, "snp: the %s's key is not ECDSA P-384", role(key));
	if (!cn_is(&s, key == SNP_KEY_VLEK ? "SEV-VLEK" : "SEV-VCEK", NULL))
		return errbuf_set(err, errlen,
				  "snp: signer: the report is signed by a %s, the certificate's "
				  "CN is not SEV-%s",
				  role(key), role(key));
	if (!valid_at(&s, o->at))
		return errbuf_set(err, errlen,
				  "snp: validity: the %s is not valid at the time of the check",
				  role(key));
	if ((r_ = check_chain(&s, key, o, &p, err, errlen)) < 0)
		return r_;

	/* the report's signature: r and s little-endian, 72 bytes, of which 48 carry the value */
	for (int i = 48; i < SNP_SIG_COMP; i++)
		if (r->sig_r[i] || r->sig_s[i])
			return errbuf_set(err, errlen,
					  "snp: signature: r or s does not fit in 48 bytes");
	br_sha384_init(&sc);
	br_sha384_update(&sc, report, SNP_SIGNED_LEN);
	br_sha384_out(&sc, h);
	if (ecdsa_p384_verify(s.point.p, h, r->sig_r, r->sig_s) < 0)
		return errbuf_set(err, errlen,
				  "snp: signature: the report's ECDSA P-384 signature does not "
				  "verify with the %s",
				  role(key));

	*product = p;
	si.hwid = s.hwid.p;
	si.hwid_len = s.hwid.len;
	memcpy(si.have_spl, s.have_spl, sizeof si.have_spl);
	memcpy(si.spl, s.spl, sizeof si.spl);
	return snp_report_check(r, p, &si, o, err, errlen);
}

int snp_report_check(const struct snp_report *r, enum snp_product p,
		     const struct snp_signer_info *si, const struct snp_verify_opts *o, char *err,
		     size_t errlen)
{
	struct snp_tcb cur, com, rep, lau, crt;
	uint64_t cert_tcb;
	char buf1[64], buf2[64];
	int key = (int)SNP_SIGNER_KEY(r->signer_info);
	static const uint8_t zero64[64];

	/* the generation: a version 3 report names its CPU family */
	if (r->version >= 3 && r->cpuid_fam_id != (p == SNP_TURIN ? 0x1a : 0x19))
		return errbuf_set(err, errlen, "snp: product: CPU family 0x%02x is not %s's",
				  r->cpuid_fam_id, snp_product_name(p));

	/* the signer's TCB and hardware ID against the report */
	for (int k = 1; k <= 9; k++)
		if (!si->have_spl[k] && (k <= 3 || k == 8 || (k == 9 && p == SNP_TURIN)))
			return errbuf_set(err, errlen,
					  "snp: tcb: the %s has no TCB extension "
					  "1.3.6.1.4.1.3704.1.3.%d",
					  role(key), k);
	/* the certificate's TCB as the 64-bit value the report carries (go-sev-guest's
	 * TCBVersionV0/V1), the reserved parts included */
	if (p == SNP_TURIN)
		cert_tcb = (uint64_t)si->spl[9] | (uint64_t)si->spl[1] << 8 |
			   (uint64_t)si->spl[2] << 16 | (uint64_t)si->spl[3] << 24 |
			   (uint64_t)si->spl[5] << 32 | (uint64_t)si->spl[6] << 40 |
			   (uint64_t)si->spl[7] << 48 | (uint64_t)si->spl[8] << 56;
	else
		cert_tcb = (uint64_t)si->spl[1] | (uint64_t)si->spl[2] << 8 |
			   (uint64_t)si->spl[4] << 16 | (uint64_t)si->spl[5] << 24 |
			   (uint64_t)si->spl[6] << 32 | (uint64_t)si->spl[7] << 40 |
			   (uint64_t)si->spl[3] << 48 | (uint64_t)si->spl[8] << 56;
	snp_tcb_decode(p, r->current_tcb, &cur);
	snp_tcb_decode(p, r->committed_tcb, &com);
	snp_tcb_decode(p, r->reported_tcb, &rep);
	snp_tcb_decode(p, r->launch_tcb, &lau);
	if (cert_tcb != r->reported_tcb) {
		snp_tcb_decode(p, cert_tcb, &crt);
		tcb_fmt(&crt, p, buf1, sizeof buf1);
		tcb_fmt(&rep, p, buf2, sizeof buf2);
		return errbuf_set(
		    err, errlen,
		    "snp: tcb: the %s's TCB %s (0x%016llx) is not the reported TCB %s "
		    "(0x%016llx)",
		    role(key), buf1, (unsigned long long)cert_tcb, buf2,
		    (unsigned long long)r->reported_tcb);
	}
	if (key == SNP_KEY_VCEK && !(r->signer_info & SNP_SIGNER_MASK_CHIP_KEY) &&
	    memcmp(r->chip_id, zero64, 64)) {
		size_t hl = si->hwid_len;

		if (!si->hwid)
			return errbuf_set(err, errlen, "snp: chip id: the VCEK has no hardware ID");
		if (!((hl == 64 || (p == SNP_TURIN && hl == 8)) &&
		      !memcmp(r->chip_id, si->hwid, hl)))
			return errbuf_set(err, errlen,
					  "snp: chip id: the report's CHIP_ID is not the VCEK's "
					  "hardware ID");
	}
	if (!tcb_le_raw(r->reported_tcb, r->current_tcb))
		return errbuf_set(err, errlen, "snp: tcb: the reported TCB is above the current");
	if (!tcb_le_raw(r->committed_tcb, r->current_tcb))
		return errbuf_set(err, errlen, "snp: tcb: the committed TCB is above the current");
	if (r->committed_major > r->current_major ||
	    (r->committed_major == r->current_major &&
	     (r->committed_minor > r->current_minor ||
	      (r->committed_minor == r->current_minor && r->committed_build > r->current_build))))
		return errbuf_set(err, errlen,
				  "snp: tcb: the committed firmware %u.%u.%u is above the current "
				  "%u.%u.%u",
				  r->committed_major, r->committed_minor, r->committed_build,
				  r->current_major, r->current_minor, r->current_build);
	if (o->have_min_tcb) {
		tcb_fmt(&o->min_tcb, p, buf1, sizeof buf1);
		if (!tcb_ge(&cur, &o->min_tcb))
			return errbuf_set(
			    err, errlen, "snp: tcb: the current TCB is below the minimum %s", buf1);
		if (!tcb_ge(&com, &o->min_tcb))
			return errbuf_set(err, errlen,
					  "snp: tcb: the committed TCB is below the minimum %s",
					  buf1);
		if (!tcb_ge(&rep, &o->min_tcb))
			return errbuf_set(err, errlen,
					  "snp: tcb: the reported TCB is below the minimum %s",
					  buf1);
	}
	if (o->have_min_launch_tcb && !tcb_ge(&lau, &o->min_launch_tcb)) {
		tcb_fmt(&o->min_launch_tcb, p, buf1, sizeof buf1);
		return errbuf_set(err, errlen, "snp: tcb: the launch TCB is below the minimum %s",
				  buf1);
	}

	/* the guest policy and the VMPL */
	if (!(r->policy & SNP_POLICY_RESERVED1))
		return errbuf_set(err, errlen, "snp: policy: reserved bit 17 is not set");
	if ((r->policy & SNP_POLICY_DEBUG) && !o->allow_debug)
		return errbuf_set(err, errlen, "snp: policy: the guest allows debugging");
	if ((r->policy & SNP_POLICY_MIGRATE_MA) && !o->allow_migrate_ma)
		return errbuf_set(err, errlen, "snp: policy: the guest allows a migration agent");
	if ((r->policy & SNP_POLICY_CXL_ALLOW) && !o->allow_cxl)
		return errbuf_set(err, errlen, "snp: policy: the guest allows CXL memory");
	if (o->vmpl >= 0 && r->vmpl != (uint32_t)o->vmpl)
		return errbuf_set(err, errlen, "snp: vmpl: the report is from VMPL %u, not %d",
				  r->vmpl, o->vmpl);
	if (o->n_id_key_digests) {
		size_t i;

		for (i = 0; i < o->n_id_key_digests; i++)
			if (!memcmp(o->id_key_digests[i], r->id_key_digest, 48))
				break;
		if (i == o->n_id_key_digests)
			return errbuf_set(err, errlen,
					  "snp: id key: ID_KEY_DIGEST is not an accepted one");
	}
	if (o->report_data && memcmp(o->report_data, r->report_data, 64))
		return errbuf_set(err, errlen,
				  "snp: report data: REPORT_DATA is not what it must bind");
	return 0;
}
