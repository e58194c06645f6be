/* The TLS client under https://: ordinary web PKI, unlike aTLS. BearSSL's full client profile
 * narrowed to TLS 1.2 with ECDHE and AEAD suites, set up piece by piece (client_init) so that
 * the agent does not link what br_ssl_client_init_full brings for other suites and versions
 * (3DES, CBC, CCM, MD5, RSA key exchange: about 14 KB) (what GitHub, CDNs and Python's ssl all
 * offer), the server name sent as SNI and checked by br_x509_minimal against the chain, the
 * chain checked against the CA bundle's anchors at the system clock's time (an address host
 * against the certificate's iPAddress names, below). The engine is driven over a non-blocking
 * socket with poll, every wait bounded by the caller's deadline. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bearssl.h>

#include "base/base.h"
#include "base/der.h"
#include "net.h"

#define EE_CERT_MAX 16384 /* the server's own certificate, kept for the address check */

/* For https://ADDRESS: br_x509_minimal checks the chain with no name (it matches DNS names
 * only), and end_chain then requires ADDRESS among the iPAddress names of the server's
 * certificate, as Go's crypto/x509 and OpenSSL do. No SNI is sent for an address (RFC 6066). */
struct ip_check {
	const br_x509_class *vtable;
	br_x509_minimal_context *inner;
	uint8_t ip[16];
	size_t iplen;
	int ncert, overflow;
	size_t ee_len;
	uint8_t ee[EE_CERT_MAX];
};

struct tls_client {
	int fd;
	char host[256];
	br_ssl_client_context sc;
	br_x509_minimal_context xc;
	struct ip_check ipc;
	unsigned char iobuf[BR_SSL_BUFSIZE_BIDI];
};

/* br_ssl_client_init_full for TLS 1.2 and the suites below only: ECDHE (X25519, P-256,
 * P-384, P-521) with RSA or ECDSA signatures, AES-GCM and ChaCha20-Poly1305, the TLS 1.2 PRFs,
 * the chain checked by br_x509_minimal with the same hashes and signature algorithms. */
static void client_init(br_ssl_client_context *cc, br_x509_minimal_context *xc,
			const br_x509_trust_anchor *ta, size_t n)
{
	static const br_hash_class *const hashes[] = {
	    &br_sha1_vtable,   &br_sha224_vtable, &br_sha256_vtable,
	    &br_sha384_vtable, &br_sha512_vtable,
	};

	br_ssl_client_zero(cc);
	br_ssl_engine_set_versions(&cc->eng, BR_TLS12, BR_TLS12);
	br_x509_minimal_init(xc, &br_sha256_vtable, ta, n);
	br_ssl_engine_set_default_rsavrfy(&cc->eng);
	br_ssl_engine_set_default_ecdsa(&cc->eng);
	br_x509_minimal_set_rsa(xc, br_ssl_engine_get_rsavrfy(&cc->eng));
	br_x509_minimal_set_ecdsa(xc, br_ssl_engine_get_ec(&cc->eng),
				  br_ssl_engine_get_ecdsa(&cc->eng));
	for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++) {
		int id = (int)((hashes[i]->desc >> BR_HASHDESC_ID_OFF) & BR_HASHDESC_ID_MASK);

		br_ssl_engine_set_hash(&cc->eng, id, hashes[i]);
		br_x509_minimal_set_hash(xc, id, hashes[i]);
	}
	br_ssl_engine_set_x509(&cc->eng, &xc->vtable);
	br_ssl_engine_set_prf_sha256(&cc->eng, &br_tls12_sha256_prf);
	br_ssl_engine_set_prf_sha384(&cc->eng, &br_tls12_sha384_prf);
	br_ssl_engine_set_default_aes_gcm(&cc->eng);
	br_ssl_engine_set_default_chapol(&cc->eng);
}

static const uint16_t suites[] = {
    BR_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    BR_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    BR_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    BR_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    BR_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    BR_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
};

/* Why the engine stopped, in words an operator can act on. */
static void tls_why(struct tls_client *c, int e, char *err, size_t errlen)
{
	const char *h = c->host;

	switch (e) {
	case BR_ERR_X509_NOT_TRUSTED:
		errbuf_set(err, errlen, "%s: certificate not issued by a CA of the bundle", h);
		break;
	case BR_ERR_X509_BAD_SERVER_NAME:
		errbuf_set(err, errlen, "%s: certificate is not for this host %s", h,
			   c->ipc.iplen ? "address" : "name");
		break;
	case BR_ERR_X509_EXPIRED: { /* a node whose clock is wrong sees this for every server */
		char now[32] = "?";
		time_t t = time(NULL);
		struct tm tm;

		if (gmtime_r(&t, &tm))
			snprintf(now, sizeof now, "%04d-%02d-%02dT%02d:%02d:%02dZ",
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
				 tm.tm_min, tm.tm_sec);
		errbuf_set(err, errlen, "%s: certificate expired or not yet valid (system time %s)",
			   h, now);
		break;
	}
	case BR_ERR_X509_NOT_CA:
	case BR_ERR_X509_FORBIDDEN_KEY_USAGE:
	case BR_ERR_X509_DN_MISMATCH:
	case BR_ERR_X509_BAD_SIGNATURE:
	case BR_ERR_X509_WEAK_PUBLIC_KEY:
	case BR_ERR_X509_CRITICAL_EXTENSION:
		errbuf_set(err, errlen, "%s: certificate chain refused (X.509 error %d)", h, e);
		break;
	default:
		if (e >= BR_ERR_RECV_FATAL_ALERT && e < BR_ERR_RECV_FATAL_ALERT + 256)
			errbuf_set(err, errlen, "%s: TLS: server sent fatal alert %d", h,
				   e - BR_ERR_RECV_FATAL_ALERT);
		else if (e >= BR_ERR_SEND_FATAL_ALERT && e < BR_ERR_SEND_FATAL_ALERT + 256)
			errbuf_set(err, errlen, "%s: TLS: we sent fatal alert %d", h,
				   e - BR_ERR_SEND_FATAL_ALERT);
		else if (e >= 32 && e < 64)
			errbuf_set(err, errlen, "%s: certificate refused (X.509 error %d)", h, e);
		else
			errbuf_set(err, errlen, "%s: TLS error %d", h, e);
	}
}

static int is_cert_error(int e)
{
	return e >= 32 && e < 64; /* BearSSL's X.509 status range */
}

/* Moves records until the engine offers one of the state bits in want, within deadline.
 * 0, -ECONNRESET on a clean close (close_notify or EOF after the handshake), -EKEYREJECTED when
 * the certificate was refused, other -errno with one line in err. */
static int pump(struct tls_client *c, unsigned want, uint64_t deadline, char *err, size_t errlen)
{
	br_ssl_engine_context *eng = &c->sc.eng;

	for (;;) {
		unsigned st = br_ssl_engine_current_state(eng);
		struct pollfd p = {.fd = c->fd};
		uint64_t now;
		ssize_t k;
		size_t len;
		unsigned char *buf;

		if (st & BR_SSL_CLOSED) {
			int e = br_ssl_engine_last_error(eng);

			if (e == BR_ERR_OK)
				return -ECONNRESET;
			tls_why(c, e, err, errlen);
			return is_cert_error(e) ? -EKEYREJECTED : -EPROTO;
		}
		if (st & BR_SSL_SENDREC) {
			buf = br_ssl_engine_sendrec_buf(eng, &len);
			k = send(c->fd, buf, len, MSG_NOSIGNAL);
			if (k > 0) {
				br_ssl_engine_sendrec_ack(eng, (size_t)k);
				continue;
			}
			if (k < 0 && errno != EAGAIN && errno != EINTR) {
				int r = -errno;

				errbuf_set(err, errlen, "%s: TLS: send: %s", c->host, strerror(-r));
				return r;
			}
			p.events = POLLOUT;
		} else if (st & want) {
			return 0;
		} else if (st & BR_SSL_RECVREC) {
			buf = br_ssl_engine_recvrec_buf(eng, &len);
			k = recv(c->fd, buf, len, 0);
			if (k > 0) {
				br_ssl_engine_recvrec_ack(eng, (size_t)k);
				continue;
			}
			if (k == 0) {
				if (br_ssl_engine_current_state(eng) & BR_SSL_SENDAPP)
					return -ECONNRESET; /* EOF without close_notify, see http.c
							     */
				errbuf_set(err, errlen,
					   "%s: TLS: connection closed during the handshake",
					   c->host);
				return -ECONNRESET;
			}
			if (errno != EAGAIN && errno != EINTR) {
				int r = -errno;

				errbuf_set(err, errlen, "%s: TLS: recv: %s", c->host, strerror(-r));
				return r;
			}
			p.events = POLLIN;
		} else {
			errbuf_set(err, errlen, "%s: TLS: engine stalled (state %#x)", c->host, st);
			return -EPROTO;
		}
		now = monotonic_ms();
		if (now >= deadline) {
			errbuf_set(err, errlen, "%s: TLS: timed out", c->host);
			return -ETIMEDOUT;
		}
		(void)poll(&p, 1, (int)(deadline - now));
	}
}

int x509_has_ip_san(const uint8_t *der, size_t len, const uint8_t *ip, size_t iplen)
{
	static const uint8_t san_oid[] = {0x55, 0x1d, 0x11}; /* 2.5.29.17 */
	struct der_in in = {der, len}, cert, tbs, el, exts;
	uint8_t tag;

	if (der_expect(&in, 0x30, &cert, NULL) < 0 || der_expect(&cert, 0x30, &tbs, NULL) < 0)
		return 0;
	do { /* version, serial, algorithm, issuer, validity, subject, key, unique IDs */
		if (der_next(&tbs, &tag, &el, NULL) < 0)
			return 0;
	} while (tag != 0xa3);
	if (der_expect(&el, 0x30, &exts, NULL) < 0)
		return 0;
	while (exts.len) {
		struct der_in ext, oid, val, names, name;

		if (der_expect(&exts, 0x30, &ext, NULL) < 0 ||
		    der_expect(&ext, 0x06, &oid, NULL) < 0)
			return 0;
		if (!der_oid_is(&oid, san_oid, sizeof san_oid))
			continue;
		(void)der_expect(&ext, 0x01, &val, NULL); /* critical, when present */
		if (der_expect(&ext, 0x04, &val, NULL) < 0 ||
		    der_expect(&val, 0x30, &names, NULL) < 0)
			return 0;
		while (names.len) {
			if (der_next(&names, &tag, &name, NULL) < 0)
				return 0;
			if (tag == 0x87 && name.len == iplen && !memcmp(name.p, ip, iplen))
				return 1;
		}
		return 0;
	}
	return 0;
}

static void ipc_start_chain(const br_x509_class **ctx, const char *server_name)
{
	struct ip_check *c = (struct ip_check *)ctx;

	(void)server_name;
	c->ncert = c->overflow = 0;
	c->ee_len = 0;
	c->inner->vtable->start_chain(&c->inner->vtable, NULL);
}

static void ipc_start_cert(const br_x509_class **ctx, uint32_t length)
{
	struct ip_check *c = (struct ip_check *)ctx;

	if (++c->ncert == 1 && length > sizeof c->ee)
		c->overflow = 1;
	c->inner->vtable->start_cert(&c->inner->vtable, length);
}

static void ipc_append(const br_x509_class **ctx, const unsigned char *buf, size_t len)
{
	struct ip_check *c = (struct ip_check *)ctx;

	if (c->ncert == 1 && !c->overflow) {
		if (len > sizeof c->ee - c->ee_len)
			c->overflow = 1;
		else
			memcpy(c->ee + c->ee_len, buf, len), c->ee_len += len;
	}
	c->inner->vtable->append(&c->inner->vtable, buf, len);
}

static void ipc_end_cert(const br_x509_class **ctx)
{
	struct ip_check *c = (struct ip_check *)ctx;

	c->inner->vtable->end_cert(&c->inner->vtable);
}

static unsigned ipc_end_chain(const br_x509_class **ctx)
{
	struct ip_check *c = (struct ip_check *)ctx;
	unsigned r = c->inner->vtable->end_chain(&c->inner->vtable);

	if (r)
		return r;
	if (c->overflow || !x509_has_ip_san(c->ee, c->ee_len, c->ip, c->iplen))
		return BR_ERR_X509_BAD_SERVER_NAME;
	return 0;
}

static const br_x509_pkey *ipc_get_pkey(const br_x509_class *const *ctx, unsigned *usages)
{
	const struct ip_check *c = (const struct ip_check *)ctx;

	return c->inner->vtable->get_pkey(&c->inner->vtable, usages);
}

static const br_x509_class ipc_class = {
    sizeof(struct ip_check), ipc_start_chain, ipc_start_cert, ipc_append, ipc_end_cert,
    ipc_end_chain,	     ipc_get_pkey,
};

/* The address of an IP literal host in ipc; 0 when host is a name. */
static int ip_literal(const char *host, struct ip_check *ipc)
{
	if (inet_pton(AF_INET, host, ipc->ip) == 1)
		ipc->iplen = 4;
	else if (inet_pton(AF_INET6, host, ipc->ip) == 1)
		ipc->iplen = 16;
	return ipc->iplen != 0;
}

int tls_client_open(int fd, const char *host, const struct ca_bundle *ca, uint64_t deadline,
		    struct tls_client **ret, char *err, size_t errlen)
{
	struct tls_client *c;
	struct timespec now;
	int r;

	if (strlen(host) == 0 || strlen(host) >= sizeof c->host)
		return errbuf_set(err, errlen, "https: bad host name");
	if (clock_gettime(CLOCK_REALTIME, &now) < 0) {
		errbuf_set(err, errlen, "%s: no system time for the certificate check", host);
		return -EIO;
	}
	c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	snprintf(c->host, sizeof c->host, "%s", host);
	client_init(&c->sc, &c->xc, ca->ta, ca->n);
	br_ssl_engine_set_suites(&c->sc.eng, suites, sizeof suites / sizeof suites[0]);
	br_ssl_engine_add_flags(&c->sc.eng, BR_OPT_NO_RENEGOTIATION);
	/* days since 0000-01-01 (proleptic Gregorian) as BearSSL counts: 719528 at the epoch */
	br_x509_minimal_set_time(&c->xc, (uint32_t)(now.tv_sec / 86400) + 719528,
				 (uint32_t)(now.tv_sec % 86400));
	br_ssl_engine_set_buffer(&c->sc.eng, c->iobuf, sizeof c->iobuf, 1);
	if (ip_literal(host, &c->ipc)) {
		c->ipc.vtable = &ipc_class;
		c->ipc.inner = &c->xc;
		br_ssl_engine_set_x509(&c->sc.eng, &c->ipc.vtable);
	}
	if (!br_ssl_client_reset(&c->sc, c->ipc.iplen ? NULL : c->host, 0)) {
		tls_why(c, br_ssl_engine_last_error(&c->sc.eng), err, errlen);
		tls_client_free(c);
		return -EPROTO;
	}
	r = pump(c, BR_SSL_SENDAPP, deadline, err, errlen);
	if (r < 0) {
		tls_client_free(c); /* the handshake's secrets wiped too */
		return r;
	}
	*ret = c;
	return 0;
}

int tls_client_write(struct tls_client *c, const void *data, size_t len, uint64_t deadline,
		     char *err, size_t errlen)
{
	br_ssl_engine_context *eng = &c->sc.eng;
	const uint8_t *p = data;
	int r;

	while (len) {
		size_t cap;
		unsigned char *buf;

		r = pump(c, BR_SSL_SENDAPP, deadline, err, errlen);
		if (r == -ECONNRESET)
			errbuf_set(err, errlen, "%s: TLS: closed by the server", c->host);
		if (r < 0)
			return r;
		buf = br_ssl_engine_sendapp_buf(eng, &cap);
		if (cap > len)
			cap = len;
		memcpy(buf, p, cap);
		br_ssl_engine_sendapp_ack(eng, cap);
		p += cap, len -= cap;
	}
	br_ssl_engine_flush(eng, 0);
	/* pump returns only once no record waits to be sent */
	r = pump(c, BR_SSL_SENDAPP | BR_SSL_RECVAPP, deadline, err, errlen);
	return r == -ECONNRESET ? 0 : r;
}

ssize_t tls_client_read(struct tls_client *c, void *out, size_t cap, uint64_t deadline, char *err,
			size_t errlen)
{
	br_ssl_engine_context *eng = &c->sc.eng;
	unsigned char *buf;
	size_t len;
	int r = pump(c, BR_SSL_RECVAPP, deadline, err, errlen);

	if (r == -ECONNRESET)
		return 0;
	if (r < 0)
		return r;
	buf = br_ssl_engine_recvapp_buf(eng, &len);
	if (len > cap)
		len = cap;
	memcpy(out, buf, len);
	br_ssl_engine_recvapp_ack(eng, len);
	return (ssize_t)len;
}

void tls_client_free(struct tls_client *c)
{
	if (!c)
		return;
	secret_wipe(c, sizeof *c); /* session keys */
	free(c);
}
