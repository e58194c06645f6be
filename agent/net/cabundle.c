/* Trust anchors for https://: a PEM bundle as ca-certificates writes it
 * (/etc/ssl/certs/ca-certificates.crt), each CERTIFICATE object decoded with BearSSL's PEM and
 * X.509 decoders into the subject DN and public key that br_x509_minimal checks chains
 * against. Bounded in file size, anchor count and certificate size. A certificate that does
 * not decode is skipped and counted, as OpenSSL-based clients skip what they cannot use; a
 * bundle without a single anchor is refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bearssl.h>

#include "base/base.h"
#include "net.h"

#define CERT_DER_MAX 16384 /* the largest roots in Debian's bundle are below 2 KiB */
#define DN_MAX	     1024

struct der_buf {
	uint8_t der[CERT_DER_MAX];
	size_t len;
	int overflow;
};

static void der_append(void *ctx, const void *p, size_t n)
{
	struct der_buf *d = ctx;

	if (d->overflow || n > sizeof d->der - d->len) {
		d->overflow = 1;
		return;
	}
	memcpy(d->der + d->len, p, n);
	d->len += n;
}

struct dn_buf {
	uint8_t dn[DN_MAX];
	size_t len;
	int overflow;
};

static void dn_append(void *ctx, const void *p, size_t n)
{
	struct dn_buf *d = ctx;

	if (d->overflow || n > sizeof d->dn - d->len) {
		d->overflow = 1;
		return;
	}
	memcpy(d->dn + d->len, p, n);
	d->len += n;
}

/* Copies the decoded key (which points into the decoder) into one allocation with the DN. */
static int anchor_add(struct ca_bundle *b, const struct dn_buf *dn, const br_x509_pkey *pk)
{
	br_x509_trust_anchor *ta = &b->ta[b->n];
	size_t klen =
	    pk->key_type == BR_KEYTYPE_RSA ? pk->key.rsa.nlen + pk->key.rsa.elen : pk->key.ec.qlen;
	uint8_t *mem = malloc(dn->len + klen + 1);

	if (!mem)
		return -ENOMEM;
	memcpy(mem, dn->dn, dn->len);
	ta->dn.data = mem;
	ta->dn.len = dn->len;
	/* a CA bundle: every anchor may issue, as OpenSSL treats its trust store (old v1 roots
	 * carry no Basic Constraints) */
	ta->flags = BR_X509_TA_CA;
	ta->pkey.key_type = pk->key_type;
	if (pk->key_type == BR_KEYTYPE_RSA) {
		ta->pkey.key.rsa.n = mem + dn->len;
		ta->pkey.key.rsa.nlen = pk->key.rsa.nlen;
		memcpy(ta->pkey.key.rsa.n, pk->key.rsa.n, pk->key.rsa.nlen);
		ta->pkey.key.rsa.e = mem + dn->len + pk->key.rsa.nlen;
		ta->pkey.key.rsa.elen = pk->key.rsa.elen;
		memcpy(ta->pkey.key.rsa.e, pk->key.rsa.e, pk->key.rsa.elen);
	} else {
		ta->pkey.key.ec.curve = pk->key.ec.curve;
		ta->pkey.key.ec.q = mem + dn->len;
		ta->pkey.key.ec.qlen = pk->key.ec.qlen;
		memcpy(ta->pkey.key.ec.q, pk->key.ec.q, pk->key.ec.qlen);
	}
	b->n++;
	return 0;
}

/* BearSSL keeps what follows "BEGIN " up to the line end, without trailing dashes; a CRLF file
 * leaves "CERTIFICATE-----\r". */
static int name_is_cert(const char *name)
{
	size_t n = strlen(name);

	while (n > 0 && (name[n - 1] == '-' || (unsigned char)name[n - 1] <= ' '))
		n--;
	return (n == 11 && !strncmp(name, "CERTIFICATE", 11)) ||
	       (n == 16 && !strncmp(name, "X509 CERTIFICATE", 16));
}

/* One decoded CERTIFICATE object: an anchor, or counted as skipped. */
static int cert_add(struct ca_bundle *b, const struct der_buf *d)
{
	br_x509_decoder_context *x = malloc(sizeof *x);
	struct dn_buf *dn = malloc(sizeof *dn);
	br_x509_pkey *pk;
	int r = 0;

	if (!x || !dn) {
		r = -ENOMEM;
		goto out;
	}
	dn->len = 0;
	dn->overflow = 0;
	br_x509_decoder_init(x, dn_append, dn);
	br_x509_decoder_push(x, d->der, d->len);
	pk = br_x509_decoder_get_pkey(x);
	if (d->overflow || !pk || dn->overflow || dn->len == 0 ||
	    (pk->key_type != BR_KEYTYPE_RSA && pk->key_type != BR_KEYTYPE_EC))
		b->skipped++;
	else
		r = anchor_add(b, dn, pk);
out:
	free(x);
	free(dn);
	return r;
}

int ca_bundle_parse(const char *pem, size_t len, struct ca_bundle *b, char *err, size_t errlen)
{
	br_pem_decoder_context *pc = malloc(sizeof *pc);
	struct der_buf *d = malloc(sizeof *d);
	size_t off = 0;
	int in_cert = 0, in_obj = 0, r = 0, tail = 0;

	memset(b, 0, sizeof *b);
	b->ta = calloc(CA_BUNDLE_MAX, sizeof *b->ta);
	if (!pc || !d || !b->ta) {
		r = -ENOMEM;
		goto out;
	}
	br_pem_decoder_init(pc);
	/* a final newline closes an END line that the file left unterminated */
	while (!r && (off < len || !tail)) {
		const char *p = off < len ? pem + off : "\n";
		size_t n = off < len ? len - off : 1;
		size_t k = br_pem_decoder_push(pc, p, n);
		int ev;

		if (off < len)
			off += k;
		else
			tail = 1;
		ev = br_pem_decoder_event(pc);
		if (k == 0 && ev == 0) { /* no progress and no event: never seen, but bounded */
			r = errbuf_set(err, errlen, "PEM decoder stuck at byte %zu", off);
			break;
		}
		switch (ev) {
		case BR_PEM_BEGIN_OBJ:
			in_obj = 1;
			in_cert = name_is_cert(br_pem_decoder_name(pc));
			d->len = 0;
			d->overflow = 0;
			br_pem_decoder_setdest(pc, in_cert ? der_append : NULL, d);
			break;
		case BR_PEM_END_OBJ:
			if (in_cert && b->n == CA_BUNDLE_MAX)
				r = errbuf_set(err, errlen, "more than %d certificates",
					       CA_BUNDLE_MAX);
			else if (in_cert)
				r = cert_add(b, d);
			in_obj = in_cert = 0;
			break;
		case BR_PEM_ERROR:
			if (in_cert)
				b->skipped++;
			in_obj = in_cert = 0;
			break;
		default:
			break;
		}
	}
	if (!r && in_obj && in_cert)
		b->skipped++; /* cut off before its END line */
	if (!r && b->n == 0)
		r = errbuf_set(err, errlen, "no usable certificate (%u skipped)", b->skipped);
	if (r == -ENOMEM)
		errbuf_set(err, errlen, "out of memory");
out:
	free(pc);
	free(d);
	if (r < 0)
		ca_bundle_free(b);
	return r;
}

int ca_bundle_load(const char *path, struct ca_bundle *b, char *err, size_t errlen)
{
	struct stat st;
	char *text;
	ssize_t n;
	int fd, r;

	memset(b, 0, sizeof *b);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		errbuf_set(err, errlen, "CA bundle %.200s: %s", path, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > CA_BUNDLE_FILE_MAX) {
		close(fd);
		errbuf_set(err, errlen, "CA bundle %.200s: %s", path,
			   S_ISREG(st.st_mode) ? "larger than 4 MiB" : "not a regular file");
		return -EFBIG;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		return -ENOMEM;
	}
	n = read_full(fd, text, (size_t)st.st_size + 1);
	close(fd);
	if (n < 0 || n > st.st_size) {
		free(text);
		errbuf_set(err, errlen, "CA bundle %.200s: %s", path,
			   n < 0 ? strerror((int)-n) : "grew while read");
		return n < 0 ? (int)n : -EIO;
	}
	r = ca_bundle_parse(text, (size_t)n, b, err, errlen);
	free(text);
	if (r < 0) {
		char why[160];

		snprintf(why, sizeof why, "%s", err ? err : "");
		errbuf_set(err, errlen, "CA bundle %.200s: %s", path, why);
	}
	return r;
}

void ca_bundle_free(struct ca_bundle *b)
{
	if (b->ta)
		for (size_t i = 0; i < b->n; i++)
			free(b->ta[i].dn.data); /* the key lives in the same allocation */
	free(b->ta);
	memset(b, 0, sizeof *b);
}
