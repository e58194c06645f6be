/* The JoinService's kubelet certificates (spec §7 step 7, §5.4.2): a node's PKCS#10 request
 * is parsed strictly and checked (DER, ECDSA P-256 or RSA key, signature, exactly one
 * O=system:nodes, CN starting with system:node:), then a certificate is signed with the
 * cluster CA (RSA as kubeadm makes it, or EC): the request's subject, key and IP SANs,
 * validity now-2h to now+365d, key usage digitalSignature+keyEncipherment, extended key
 * usage clientAuth+serverAuth. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>

#include "base/base.h"
#include "base/der.h"
#include "kube.h"

static const uint8_t oid_o[] = {0x55, 0x04, 0x0a};
static const uint8_t oid_cn[] = {0x55, 0x04, 0x03};
static const uint8_t oid_ext_req[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e};
static const uint8_t oid_san[] = {0x55, 0x1d, 0x11};
static const uint8_t oid_ku[] = {0x55, 0x1d, 0x0f};
static const uint8_t oid_eku[] = {0x55, 0x1d, 0x25};
static const uint8_t oid_bc[] = {0x55, 0x1d, 0x13};
static const uint8_t oid_ecdsa_sha256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};
static const uint8_t oid_rsa_sha256[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b};
static const uint8_t oid_ec_key[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01};
static const uint8_t oid_p256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
static const uint8_t eku_client_server[] = {0x30, 0x14, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x05,
					    0x05, 0x07, 0x03, 0x02, 0x06, 0x08, 0x2b, 0x06,
					    0x01, 0x05, 0x05, 0x07, 0x03, 0x01};

/* Reads the RDNs of a Name: the number of O values and the CN. */
static int read_name(struct der_in name, int *n_org, char *org, char *cn, size_t cap)
{
	struct der_in set, atv, oid, val;
	uint8_t tag;

	*n_org = 0;
	cn[0] = org[0] = '\0';
	while (name.len) {
		if (der_expect(&name, DER_SET, &set, NULL) < 0)
			return -EBADMSG;
		while (set.len) {
			if (der_expect(&set, DER_SEQUENCE, &atv, NULL) < 0 ||
			    der_expect(&atv, DER_OID, &oid, NULL) < 0 ||
			    der_next(&atv, &tag, &val, NULL) < 0 || atv.len)
				return -EBADMSG;
			if (tag != DER_PRINTABLE_STRING && tag != DER_UTF8_STRING)
				continue;
			if (der_oid_is(&oid, oid_o, sizeof oid_o)) {
				(*n_org)++;
				snprintf(org, cap, "%.*s", (int)val.len, (const char *)val.p);
			} else if (der_oid_is(&oid, oid_cn, sizeof oid_cn)) {
				snprintf(cn, cap, "%.*s", (int)val.len, (const char *)val.p);
			}
		}
	}
	return 0;
}

/* The IP SANs of a request's extensionRequest attribute. */
static int read_sans(struct der_in attrs, struct csr_info *c)
{
	struct der_in attr, oid, set, exts, ext, eoid, val, names, gn;
	uint8_t tag;

	while (attrs.len) {
		if (der_expect(&attrs, DER_SEQUENCE, &attr, NULL) < 0 ||
		    der_expect(&attr, DER_OID, &oid, NULL) < 0 ||
		    der_expect(&attr, DER_SET, &set, NULL) < 0)
			return -EBADMSG;
		if (!der_oid_is(&oid, oid_ext_req, sizeof oid_ext_req))
			continue;
		if (der_expect(&set, DER_SEQUENCE, &exts, NULL) < 0)
			return -EBADMSG;
		while (exts.len) {
			if (der_expect(&exts, DER_SEQUENCE, &ext, NULL) < 0 ||
			    der_expect(&ext, DER_OID, &eoid, NULL) < 0)
				return -EBADMSG;
			if (!der_oid_is(&eoid, oid_san, sizeof oid_san))
				continue;
			(void)der_expect(&ext, 0x01, &val, NULL); /* an optional critical flag */
			if (der_expect(&ext, DER_OCTET_STRING, &val, NULL) < 0 ||
			    der_expect(&val, DER_SEQUENCE, &names, NULL) < 0)
				return -EBADMSG;
			while (names.len) {
				if (der_next(&names, &tag, &gn, NULL) < 0)
					return -EBADMSG;
				if (tag != 0x87)
					continue; /* only IP SANs are copied, as Go's kubernetesca
						   */
				if ((gn.len != 4 && gn.len != 16) || c->n_ips == CSR_IPS_MAX)
					return -EBADMSG;
				memcpy(c->ips[c->n_ips].addr, gn.p, gn.len);
				c->ips[c->n_ips++].len = gn.len;
			}
		}
	}
	return 0;
}

int csr_parse(const uint8_t *der, size_t len, struct csr_info *c, char *err, size_t errlen)
{
	struct der_in in = {der, len}, req, info, info_raw, ver, subj, subj_raw, spki, spki_raw,
		      alg, algid, keyalg, curve, point, attrs, sigalg, sig;
	uint8_t hv[32];
	br_sha256_context h;
	br_ec_public_key pk;
	int n_org;

	memset(c, 0, sizeof *c);
	if (der_expect(&in, DER_SEQUENCE, &req, NULL) < 0 || in.len ||
	    der_expect(&req, DER_SEQUENCE, &info, &info_raw) < 0 ||
	    der_expect(&req, DER_SEQUENCE, &sigalg, NULL) < 0 ||
	    der_expect(&req, DER_BIT_STRING, &sig, NULL) < 0 || req.len ||
	    der_expect(&info, DER_INTEGER, &ver, NULL) < 0 || ver.len != 1 || ver.p[0] != 0 ||
	    der_expect(&info, DER_SEQUENCE, &subj, &subj_raw) < 0 ||
	    der_expect(&info, DER_SEQUENCE, &spki, &spki_raw) < 0 ||
	    der_expect(&info, 0xa0, &attrs, NULL) < 0 || info.len)
		return errbuf_set(err, errlen, "certificate request: not a DER PKCS#10 request");
	if (der_expect(&spki, DER_SEQUENCE, &alg, NULL) < 0 ||
	    der_expect(&alg, DER_OID, &keyalg, NULL) < 0 ||
	    !der_oid_is(&keyalg, oid_ec_key, sizeof oid_ec_key) ||
	    der_expect(&alg, DER_OID, &curve, NULL) < 0 ||
	    !der_oid_is(&curve, oid_p256, sizeof oid_p256) ||
	    der_expect(&spki, DER_BIT_STRING, &point, NULL) < 0 || point.len != 66 ||
	    point.p[0] != 0 || point.p[1] != 4)
		return errbuf_set(err, errlen, "certificate request: the key is not ECDSA P-256");
	if (der_expect(&sigalg, DER_OID, &algid, NULL) < 0 ||
	    !der_oid_is(&algid, oid_ecdsa_sha256, sizeof oid_ecdsa_sha256) || sig.len < 2 ||
	    sig.p[0] != 0)
		return errbuf_set(err, errlen,
				  "certificate request: not signed with ecdsa-with-SHA256");
	br_sha256_init(&h);
	br_sha256_update(&h, info_raw.p, info_raw.len);
	br_sha256_out(&h, hv);
	pk = (br_ec_public_key){BR_EC_secp256r1, (unsigned char *)point.p + 1, 65};
	if (!br_ecdsa_vrfy_asn1_get_default()(br_ec_get_default(), hv, sizeof hv, &pk, sig.p + 1,
					      sig.len - 1))
		return errbuf_set(err, errlen, "certificate request: signature does not verify");
	if (read_name(subj, &n_org, c->org, c->cn, sizeof c->cn) < 0 || read_sans(attrs, c) < 0)
		return errbuf_set(err, errlen, "certificate request: malformed subject or SANs");
	if (n_org != 1 || strcmp(c->org, "system:nodes"))
		return errbuf_set(err, errlen,
				  "certificate request: want exactly one O=system:nodes, got %d",
				  n_org);
	if (strncmp(c->cn, "system:node:", 12) || !c->cn[12])
		return errbuf_set(
		    err, errlen,
		    "certificate request: CN '%.64s' does not start with system:node:", c->cn);
	c->subject = subj_raw.p;
	c->subject_len = subj_raw.len;
	c->spki = spki_raw.p;
	c->spki_len = spki_raw.len;
	return 0;
}

int ca_load(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
	    struct ca *ca, char *err, size_t errlen)
{
	struct der_in in, cert, tbs, x, issuer, validity, subj, subj_raw, spki_raw, spki;
	uint8_t *keyder = malloc(key_len);
	size_t n;
	br_skey_decoder_context dc;
	int r;

	memset(ca, 0, sizeof *ca);
	if (!keyder)
		return -ENOMEM;
	if (pem_decode(cert_pem, cert_len, "CERTIFICATE", ca->cert, sizeof ca->cert,
		       &ca->cert_len) < 0) {
		free(keyder);
		return errbuf_set(err, errlen, "CA: no PEM CERTIFICATE");
	}
	in = (struct der_in){ca->cert, ca->cert_len};
	if (der_expect(&in, DER_SEQUENCE, &cert, NULL) < 0 ||
	    der_expect(&cert, DER_SEQUENCE, &tbs, NULL) < 0 ||
	    (der_expect(&tbs, 0xa0, &x, NULL), der_expect(&tbs, DER_INTEGER, &x, NULL)) < 0 ||
	    der_expect(&tbs, DER_SEQUENCE, &x, NULL) < 0 ||
	    der_expect(&tbs, DER_SEQUENCE, &issuer, NULL) < 0 ||
	    der_expect(&tbs, DER_SEQUENCE, &validity, NULL) < 0 ||
	    der_expect(&tbs, DER_SEQUENCE, &subj, &subj_raw) < 0 ||
	    der_expect(&tbs, DER_SEQUENCE, &spki, &spki_raw) < 0) {
		free(keyder);
		return errbuf_set(err, errlen, "CA: certificate does not parse");
	}
	ca->subject_raw.p = subj_raw.p;
	ca->subject_raw.len = subj_raw.len;
	{
		br_sha256_context h;

		br_sha256_init(&h);
		br_sha256_update(&h, spki_raw.p, spki_raw.len);
		br_sha256_out(&h, ca->spki_hash);
	}
	r = pem_decode(key_pem, key_len, "PRIVATE KEY", keyder, key_len, &n);
	if (r == -ENOENT)
		r = pem_decode(key_pem, key_len, "RSA PRIVATE KEY", keyder, key_len, &n);
	if (r == -ENOENT)
		r = pem_decode(key_pem, key_len, "EC PRIVATE KEY", keyder, key_len, &n);
	if (r < 0) {
		free(keyder);
		return errbuf_set(err, errlen, "CA: no PEM private key");
	}
	br_skey_decoder_init(&dc);
	br_skey_decoder_push(&dc, keyder, n);
	secret_wipe(keyder, key_len);
	free(keyder);
	if (br_skey_decoder_last_error(&dc) != 0)
		return errbuf_set(err, errlen, "CA: private key does not decode");
	ca->key_type = br_skey_decoder_key_type(&dc);
	if (ca->key_type == BR_KEYTYPE_RSA) {
		const br_rsa_private_key *k = br_skey_decoder_get_rsa(&dc);
		uint8_t *p = ca->key_buf;
		const struct {
			unsigned char **dst;
			size_t *dlen;
			const unsigned char *src;
			size_t len;
		} parts[] = {{&ca->rsa.p, &ca->rsa.plen, k->p, k->plen},
			     {&ca->rsa.q, &ca->rsa.qlen, k->q, k->qlen},
			     {&ca->rsa.dp, &ca->rsa.dplen, k->dp, k->dplen},
			     {&ca->rsa.dq, &ca->rsa.dqlen, k->dq, k->dqlen},
			     {&ca->rsa.iq, &ca->rsa.iqlen, k->iq, k->iqlen}};

		ca->rsa.n_bitlen = k->n_bitlen;
		for (size_t i = 0; i < 5; i++) {
			if (p + parts[i].len > ca->key_buf + sizeof ca->key_buf)
				return errbuf_set(err, errlen, "CA: RSA key too large");
			memcpy(p, parts[i].src, parts[i].len);
			*parts[i].dst = p;
			*parts[i].dlen = parts[i].len;
			p += parts[i].len;
		}
	} else if (ca->key_type == BR_KEYTYPE_EC) {
		const br_ec_private_key *k = br_skey_decoder_get_ec(&dc);

		if (k->xlen > sizeof ca->key_buf)
			return errbuf_set(err, errlen, "CA: EC key too large");
		memcpy(ca->key_buf, k->x, k->xlen);
		ca->ec = (br_ec_private_key){k->curve, ca->key_buf, k->xlen};
	} else {
		return errbuf_set(err, errlen, "CA: unsupported key type");
	}
	secret_wipe(&dc, sizeof dc);
	return 0;
}

void ca_wipe(struct ca *ca)
{
	secret_wipe(ca, sizeof *ca);
}

/* The signature AlgorithmIdentifier for the CA's key (in the TBS and around the signature). */
static void put_sigalg(struct der_out *d, const struct ca *ca)
{
	size_t s = der_begin(d);

	if (ca->key_type == BR_KEYTYPE_RSA) {
		der_put_tlv(d, DER_OID, oid_rsa_sha256, sizeof oid_rsa_sha256);
		der_put_tlv(d, DER_NULL, NULL, 0);
	} else {
		der_put_tlv(d, DER_OID, oid_ecdsa_sha256, sizeof oid_ecdsa_sha256);
	}
	der_end(d, s, DER_SEQUENCE);
}

int ca_sign_kubelet(const struct ca *ca, const struct csr_info *c, time_t now, char *pem,
		    size_t cap)
{
	uint8_t *out = malloc(8192), serial[16], hv[32], sig[600];
	struct der_out d = {.p = out, .cap = 8192};
	size_t cert, tbs, s, siglen, tbs_len;
	br_sha256_context h;
	int r;

	if (!out)
		return -ENOMEM;
	if ((r = random_bytes(serial, sizeof serial)) < 0)
		goto out;
	serial[0] = (uint8_t)(0x40 | (serial[0] & 0x3f));
	cert = der_begin(&d);
	tbs = der_begin(&d);
	s = der_begin(&d);
	der_put_tlv(&d, DER_INTEGER, "\x02", 1);
	der_end(&d, s, 0xa0);
	der_put_uint(&d, serial, sizeof serial);
	put_sigalg(&d, ca);
	der_put_raw(&d, ca->subject_raw.p, ca->subject_raw.len);
	s = der_begin(&d);
	der_put_time(&d, now - 2 * 3600);
	der_put_time(&d, now + 365 * 24 * 3600);
	der_end(&d, s, DER_SEQUENCE);
	der_put_raw(&d, c->subject, c->subject_len);
	der_put_raw(&d, c->spki, c->spki_len);
	{
		size_t exts = der_begin(&d), seq = der_begin(&d), e, v;

		e = der_begin(&d); /* key usage, critical: digitalSignature, keyEncipherment */
		der_put_tlv(&d, DER_OID, oid_ku, sizeof oid_ku);
		der_put_tlv(&d, 0x01, "\xff", 1);
		der_put_tlv(&d, DER_OCTET_STRING, "\x03\x02\x05\xa0", 4);
		der_end(&d, e, DER_SEQUENCE);
		e = der_begin(&d);
		der_put_tlv(&d, DER_OID, oid_eku, sizeof oid_eku);
		der_put_tlv(&d, DER_OCTET_STRING, eku_client_server, sizeof eku_client_server);
		der_end(&d, e, DER_SEQUENCE);
		e = der_begin(&d); /* basic constraints, critical: not a CA */
		der_put_tlv(&d, DER_OID, oid_bc, sizeof oid_bc);
		der_put_tlv(&d, 0x01, "\xff", 1);
		der_put_tlv(&d, DER_OCTET_STRING, "\x30\x00", 2);
		der_end(&d, e, DER_SEQUENCE);
		if (c->n_ips) {
			e = der_begin(&d);
			der_put_tlv(&d, DER_OID, oid_san, sizeof oid_san);
			v = der_begin(&d);
			s = der_begin(&d);
			for (size_t i = 0; i < c->n_ips; i++)
				der_put_tlv(&d, 0x87, c->ips[i].addr, c->ips[i].len);
			der_end(&d, s, DER_SEQUENCE);
			der_end(&d, v, DER_OCTET_STRING);
			der_end(&d, e, DER_SEQUENCE);
		}
		der_end(&d, seq, DER_SEQUENCE);
		der_end(&d, exts, 0xa3);
	}
	der_end(&d, tbs, DER_SEQUENCE);
	if ((r = d.err) < 0)
		goto out;
	tbs_len = d.len - tbs;
	br_sha256_init(&h);
	br_sha256_update(&h, out + tbs, tbs_len);
	br_sha256_out(&h, hv);
	sig[0] = 0;
	if (ca->key_type == BR_KEYTYPE_RSA) {
		siglen = (ca->rsa.n_bitlen + 7) / 8;
		if (siglen + 1 > sizeof sig || !br_rsa_pkcs1_sign_get_default()(
						   BR_HASH_OID_SHA256, hv, 32, &ca->rsa, sig + 1)) {
			r = -EIO;
			goto out;
		}
	} else {
		siglen = br_ecdsa_sign_asn1_get_default()(br_ec_get_default(), &br_sha256_vtable,
							  hv, &ca->ec, sig + 1);
		if (!siglen) {
			r = -EIO;
			goto out;
		}
	}
	put_sigalg(&d, ca);
	der_put_tlv(&d, DER_BIT_STRING, sig, siglen + 1);
	der_end(&d, cert, DER_SEQUENCE);
	if ((r = d.err) < 0)
		goto out;
	r = pem_encode("CERTIFICATE", out, d.len, pem, cap);
	r = r < 0 ? r : 0;
out:
	free(out);
	return r;
}
