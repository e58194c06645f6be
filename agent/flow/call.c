/* One gRPC call over aTLS to an endpoint, as the join and rejoin clients make it (a fresh
 * connection per call, spec §5.4) and as the CLI's init and recover steps make theirs (with
 * validators, and for Init a stream of answers). The deadline covers dial, handshake and
 * call. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "flow.h"
#include "net/net.h"

int flow_call_ex(const char *endpoint, const struct atls_config *cfg, const char *path,
		 const uint8_t *req, size_t len, int timeout_ms,
		 void (*on_message)(void *arg, const uint8_t *msg, size_t len), void *arg,
		 struct grpc_result *result, int *established)
{
	struct atls_conn *c;
	struct grpc_client *cl;
	struct rpc_io io;
	int64_t deadline = rpc_now_ms() + timeout_ms;
	char err[200];
	int fd, r;

	memset(result, 0, sizeof *result);
	if (established)
		*established = 0;
	fd = tcp_dial(endpoint, timeout_ms, err, sizeof err);
	if (fd < 0) {
		result->status = GRPC_UNAVAILABLE;
		snprintf(result->message, sizeof result->message, "%s", err);
		return 0;
	}
	r = atls_client_new(cfg, fd, &c);
	if (r < 0) {
		close(fd);
		return r;
	}
	rpc_io_atls(&io, c);
	r = grpc_client_new(&io, endpoint, &cl);
	if (r < 0)
		goto out;
	if (on_message)
		grpc_client_on_message(cl, on_message, arg);
	r = grpc_client_call(cl, path, req, len, deadline);
	while (r == 0) {
		struct pollfd pfd = {fd, grpc_client_events(cl), 0};

		r = grpc_client_step(cl, result);
		if (r != 0)
			break;
		poll(&pfd, 1, grpc_client_timeout_ms(cl));
	}
	grpc_client_free(cl);
	r = r < 0 ? r : 0;
	if (r == 0 && result->status == GRPC_UNAVAILABLE && !atls_established(c))
		snprintf(result->message, sizeof result->message, "aTLS: %s", atls_error(c));
	if (established)
		*established = atls_established(c);
out:
	atls_free(c);
	close(fd);
	return r;
}

int flow_call(const char *endpoint, const struct atls_issuer *issuer, const char *path,
	      const uint8_t *req, size_t len, int timeout_ms, struct grpc_result *result)
{
	struct atls_config cfg = {.issuer = issuer};

	return flow_call_ex(endpoint, &cfg, path, req, len, timeout_ms, NULL, NULL, result, NULL);
}
