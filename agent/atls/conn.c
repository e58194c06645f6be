/* aTLS connections: a BearSSL client or server engine over a non-blocking socket, with the
 * certificate made during the handshake (client: in the client-certificate callback, after the
 * server nonce arrived; server: in the policy's choose(), after the SNI nonce arrived) and the
 * peer's certificate checked the way Go's aTLS does (spec §1). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <bearssl.h>

#include "atls.h"
#include "base/base.h"
#include "conn_internal.h"

static const uint16_t suites[] = {
    BR_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    BR_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    BR_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
};

/* Offered and selected: exactly h2 (spec §1.8; offering http/1.1 too makes Go pick it). */
static const char *alpn[] = {"h2"};

static void set_error(struct atls_conn *c, const char *fmt, const char *detail)
{
	if (!c->error[0])
		errbuf_set(c->error, sizeof c->error, fmt, detail);
}

static void engine_common(struct atls_conn *c, br_ssl_engine_context *eng)
{
	br_ssl_engine_set_versions(eng, BR_TLS12, BR_TLS12);
	br_ssl_engine_set_suites(eng, suites, sizeof suites / sizeof suites[0]);
	atls_engine_algorithms(c, eng);
	br_ssl_engine_set_protocol_names(eng, alpn, 1);
	br_ssl_engine_add_flags(eng, BR_OPT_NO_RENEGOTIATION);
	br_ssl_engine_set_buffer(eng, c->iobuf, sizeof c->iobuf, 1);
}

int atls_client_new(const struct atls_config *cfg, int fd, struct atls_conn **ret)
{
	struct atls_conn *c = calloc(1, sizeof *c);
	char sni[BASE64_ENCODED_LEN(ATLS_NONCE_LEN) + 1];
	int r;

	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->is_server = 0;
	c->cfg = *cfg;
	c->eng = &c->u.client.eng;
	r = random_bytes(c->own_nonce, ATLS_NONCE_LEN);
	if (r < 0)
		goto fail;
	atls_peer_setup(c);
	br_ssl_client_zero(&c->u.client);
	engine_common(c, c->eng);
	br_ssl_engine_set_x509(c->eng, &c->x509.vtable);
	atls_ccert_setup(c);
	br_ssl_client_set_client_certificate(&c->u.client, &c->ccert);
	base64_encode(BASE64_STD, c->own_nonce, ATLS_NONCE_LEN, sni, sizeof sni);
	if (!br_ssl_client_reset(&c->u.client, sni, 0)) {
		r = -EPROTO;
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	atls_free(c);
	return r;
}

int atls_server_new(const struct atls_config *cfg, int fd, struct atls_conn **ret)
{
	struct atls_conn *c = calloc(1, sizeof *c);
	int r;

	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->is_server = 1;
	c->cfg = *cfg;
	c->eng = &c->u.server.eng;
	br_ssl_server_zero(&c->u.server);
	engine_common(c, c->eng);
	atls_policy_setup(c);
	br_ssl_server_set_policy(&c->u.server, &c->policy);
	if (cfg->n_validators > 0) {
		/* RequireAnyClientCert with the server nonce as the one acceptable-CA DN. */
		r = random_bytes(c->own_nonce, ATLS_NONCE_LEN);
		if (r < 0)
			goto fail;
		r = atls_nonce_dn_build(c->own_nonce, ATLS_NONCE_LEN, c->dn, sizeof c->dn,
					&c->dn_name.len);
		if (r < 0)
			goto fail;
		c->dn_name.data = c->dn;
		br_ssl_server_set_trust_anchor_names(&c->u.server, &c->dn_name, 1);
		atls_peer_setup(c);
		br_ssl_engine_set_x509(c->eng, &c->x509.vtable);
	}
	if (!br_ssl_server_reset(&c->u.server)) {
		r = -EPROTO;
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	atls_free(c);
	return r;
}

void atls_free(struct atls_conn *c)
{
	if (!c)
		return;
	atls_conn_wipe_keys(c);
	free(c->cert);
	atls_peer_free(&c->x509);
	secret_wipe(c, sizeof *c);
	free(c);
}

/* Why the engine closed, as one line. */
static void engine_closed(struct atls_conn *c)
{
	int err = br_ssl_engine_last_error(c->eng);
	char detail[96];

	if (err == BR_ERR_OK) {
		set_error(c, "%s", "connection closed by peer");
		return;
	}
	if (err >= BR_ERR_RECV_FATAL_ALERT && err < BR_ERR_RECV_FATAL_ALERT + 256)
		snprintf(detail, sizeof detail, "peer sent fatal alert %d%s",
			 err - BR_ERR_RECV_FATAL_ALERT,
			 err - BR_ERR_RECV_FATAL_ALERT == 42 || err - BR_ERR_RECV_FATAL_ALERT == 46
			     ? " (it refused our certificate or attestation)"
			     : "");
	else if (err >= BR_ERR_SEND_FATAL_ALERT && err < BR_ERR_SEND_FATAL_ALERT + 256)
		snprintf(detail, sizeof detail, "we sent fatal alert %d",
			 err - BR_ERR_SEND_FATAL_ALERT);
	else if (err == BR_ERR_NO_CLIENT_AUTH)
		snprintf(detail, sizeof detail, "peer sent no client certificate");
	else if (err == BR_ERR_BAD_SIGNATURE)
		snprintf(detail, sizeof detail, "peer's handshake signature does not verify");
	else
		snprintf(detail, sizeof detail, "TLS error %d", err);
	set_error(c, "handshake: %s", detail);
}

/* After the handshake: the server's signature if it is still unchecked (algs.c), and what
 * Go's gRPC credentials insist on (ALPN). */
static int handshake_finished(struct atls_conn *c)
{
	const char *proto = br_ssl_engine_get_selected_protocol(c->eng);
	int r = atls_ske_check(c);

	if (r < 0)
		return r;
	if (!proto || strcmp(proto, "h2")) {
		set_error(c, "%s", "handshake: peer negotiated no ALPN h2");
		return -EPROTO;
	}
	c->established = 1;
	return 0;
}

/* Moves records between BearSSL and the socket until it would block. Incoming records are
 * read during the handshake and when the caller wants application data (read != 0), so that
 * a peer that closes right after our last write does not turn a write into an error.
 * Returns 0 or -errno. */
static int pump(struct atls_conn *c, int read)
{
	for (;;) {
		unsigned st = br_ssl_engine_current_state(c->eng);
		unsigned char *buf;
		size_t len;
		ssize_t n;

		if (st & BR_SSL_CLOSED) {
			engine_closed(c);
			return br_ssl_engine_last_error(c->eng) == BR_ERR_OK ? -ECONNRESET
									     : -EPROTO;
		}
		if (!c->established && (st & (BR_SSL_SENDAPP | BR_SSL_RECVAPP))) {
			int r = handshake_finished(c);

			if (r < 0) {
				br_ssl_engine_close(c->eng);
				return r;
			}
		}
		if (st & BR_SSL_SENDREC) {
			buf = br_ssl_engine_sendrec_buf(c->eng, &len);
			n = send(c->fd, buf, len, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				c->want = POLLOUT;
				return 0;
			}
			if (n < 0) {
				int r = -errno;

				set_error(c, "send: %s", strerror(-r));
				return r;
			}
			br_ssl_engine_sendrec_ack(c->eng, (size_t)n);
			continue;
		}
		if ((st & BR_SSL_RECVREC) && !(st & BR_SSL_RECVAPP) && (read || !c->established)) {
			buf = br_ssl_engine_recvrec_buf(c->eng, &len);
			n = recv(c->fd, buf, len, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				/* nothing in yet, the peer computes: our work that needs none of
				 * it, one step at a time, looking for its answer after each */
				if (!c->established && atls_idle_work(c)) {
					if (c->ske.failed) {
						br_ssl_engine_close(c->eng);
						return -EPROTO;
					}
					continue;
				}
				c->want = POLLIN;
				return 0;
			}
			if (n == 0) {
				/* a peer that refuses our attestation just hangs up (Go sends an
				 * alert first): say what that usually means */
				set_error(c, "%s",
					  c->established
					      ? "connection closed by peer"
					      : "handshake: connection closed by peer (did "
						"it refuse our attestation?)");
				return -ECONNRESET;
			}
			if (n < 0) {
				int r = -errno;

				set_error(c, "recv: %s", strerror(-r));
				return r;
			}
			br_ssl_engine_recvrec_ack(c->eng, (size_t)n);
			continue;
		}
		c->want = (st & BR_SSL_RECVREC) ? POLLIN : 0;
		return 0;
	}
}

ssize_t atls_read(struct atls_conn *c, void *buf, size_t len)
{
	int r = pump(c, 1);
	unsigned char *app;
	size_t avail;

	if (r < 0)
		return r;
	if (!(br_ssl_engine_current_state(c->eng) & BR_SSL_RECVAPP))
		return -EAGAIN;
	app = br_ssl_engine_recvapp_buf(c->eng, &avail);
	if (avail > len)
		avail = len;
	memcpy(buf, app, avail);
	br_ssl_engine_recvapp_ack(c->eng, avail);
	return (ssize_t)avail;
}

ssize_t atls_write(struct atls_conn *c, const void *buf, size_t len)
{
	unsigned char *app;
	size_t room;
	int r = pump(c, 0);

	if (r < 0)
		return r;
	if (!(br_ssl_engine_current_state(c->eng) & BR_SSL_SENDAPP))
		return -EAGAIN;
	app = br_ssl_engine_sendapp_buf(c->eng, &room);
	if (room > len)
		room = len;
	memcpy(app, buf, room);
	br_ssl_engine_sendapp_ack(c->eng, room);
	br_ssl_engine_flush(c->eng, 0);
	r = pump(c, 0);
	if (r < 0)
		return r;
	return (ssize_t)room;
}

int atls_flush(struct atls_conn *c)
{
	br_ssl_engine_flush(c->eng, 0);
	return pump(c, 0);
}

short atls_events(const struct atls_conn *c)
{
	unsigned st = br_ssl_engine_current_state(c->eng);
	short ev = 0;

	if (st & BR_SSL_SENDREC)
		ev |= POLLOUT;
	if (st & BR_SSL_RECVREC)
		ev |= POLLIN;
	return ev;
}

int atls_writable(const struct atls_conn *c)
{
	unsigned st = br_ssl_engine_current_state(c->eng);

	return c->established && (st & BR_SSL_SENDAPP) && !(st & BR_SSL_CLOSED);
}

int atls_established(const struct atls_conn *c)
{
	return c->established;
}

const char *atls_error(const struct atls_conn *c)
{
	return c->error[0] ? c->error : "no error";
}
