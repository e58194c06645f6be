/* The kubelet's certificate request (spec §5.4.1): PKCS#10 (RFC 2986) over a fresh P-256 key,
 * signed with ecdsa-with-SHA256, subject O=system:nodes, CN=system:node:<name>, and the node
 * IP as the only SAN, encoded the way Go's x509.CreateCertificateRequest encodes it. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "base/der.h"
#include "kube.h"

static const uint8_t oid_o[] = {0x55, 0x04, 0x0a};
static const uint8_t oid_cn[] = {0x55, 0x04, 0x03};
static const uint8_t oid_ext_req[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e};
static const uint8_t oid_san[] = {0x55, 0x1d, 0x11};
static const uint8_t oid_ecdsa_sha256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};

/* PrintableString when every character allows it, else UTF8String (Go's rule). */
static uint8_t string_tag(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("'()+,-./:=? ", c)))
			return DER_UTF8_STRING;
	}
	return DER_PRINTABLE_STRING;
}

static void put_rdn(struct der_out *d, const uint8_t *oid, size_t oid_len, const char *value)
{
	size_t set = der_begin(d), atv = der_begin(d);

	der_put_tlv(d, DER_OID, oid, oid_len);
	der_put_tlv(d, string_tag(value), value, strlen(value));
	der_end(d, atv, DER_SEQUENCE);
	der_end(d, set, DER_SET);
}

int csr_build(const struct p256_key *k, const char *node_name, const char *ip, uint8_t *out,
	      size_t cap, size_t *ret_len)
{
	struct der_out d = {.p = out, .cap = cap};
	uint8_t addr[16], hv[32], sig[80];
	size_t addr_len = 0, csr, info, s, siglen;
	char cn[300];
	br_sha256_context h;

	if (ip && *ip) {
		if (inet_pton(AF_INET, ip, addr) == 1)
			addr_len = 4;
		else if (inet_pton(AF_INET6, ip, addr) == 1)
			addr_len = 16;
		else
			return -EINVAL;
	}
	if (!*node_name || snprintf(cn, sizeof cn, "system:node:%s", node_name) >= (int)sizeof cn)
		return -EINVAL;
	csr = der_begin(&d);
	info = der_begin(&d);
	der_put_tlv(&d, DER_INTEGER, "", 1); /* version 0 */
	s = der_begin(&d);
	put_rdn(&d, oid_o, sizeof oid_o, "system:nodes");
	put_rdn(&d, oid_cn, sizeof oid_cn, cn);
	der_end(&d, s, DER_SEQUENCE);
	der_put_raw(&d, k->spki, sizeof k->spki);
	s = der_begin(&d);
	if (addr_len) {
		size_t attr = der_begin(&d), set, exts, ext, names;

		der_put_tlv(&d, DER_OID, oid_ext_req, sizeof oid_ext_req);
		set = der_begin(&d);
		exts = der_begin(&d);
		ext = der_begin(&d);
		der_put_tlv(&d, DER_OID, oid_san, sizeof oid_san);
		names = der_begin(&d);
		{
			size_t seq = der_begin(&d);

			der_put_tlv(&d, 0x87, addr, addr_len); /* [7] iPAddress */
			der_end(&d, seq, DER_SEQUENCE);
		}
		der_end(&d, names, DER_OCTET_STRING);
		der_end(&d, ext, DER_SEQUENCE);
		der_end(&d, exts, DER_SEQUENCE);
		der_end(&d, set, DER_SET);
		der_end(&d, attr, DER_SEQUENCE);
	}
	der_end(&d, s, 0xa0); /* attributes [0] */
	der_end(&d, info, DER_SEQUENCE);
	if (d.err)
		return d.err;
	br_sha256_init(&h);
	br_sha256_update(&h, out + info, d.len - info);
	br_sha256_out(&h, hv);
	siglen = p256_sign(k, &br_sha256_vtable, hv, sig + 1, sizeof sig - 1);
	if (!siglen)
		return -EIO;
	s = der_begin(&d);
	der_put_tlv(&d, DER_OID, oid_ecdsa_sha256, sizeof oid_ecdsa_sha256);
	der_end(&d, s, DER_SEQUENCE);
	sig[0] = 0;
	der_put_tlv(&d, DER_BIT_STRING, sig, siglen + 1);
	der_end(&d, csr, DER_SEQUENCE);
	if (d.err)
		return d.err;
	*ret_len = d.len;
	return 0;
}
