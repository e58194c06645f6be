/* One unary gRPC call over aTLS to an endpoint, as the join and rejoin clients make it: a
 * fresh connection per call (spec §5.4), the deadline covering dial, handshake and call. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "flow.h"
#include "net/net.h"

int flow_call(const char *endpoint, const struct atls_issuer *issuer, const char *path,
	      const uint8_t *req, size_t len, int timeout_ms, struct grpc_result *result)
{
	struct atls_config cfg = {.issuer = issuer};
	struct atls_conn *c;
	struct rpc_io io;
	int64_t start = rpc_now_ms();
	char err[200];
	int fd, r, left;

	memset(result, 0, sizeof *result);
	fd = tcp_dial(endpoint, timeout_ms, err, sizeof err);
	if (fd < 0) {
		result->status = GRPC_UNAVAILABLE;
		snprintf(result->message, sizeof result->message, "%s", err);
		return 0;
	}
	r = atls_client_new(&cfg, fd, &c);
	if (r < 0) {
		close(fd);
		return r;
	}
	rpc_io_atls(&io, c);
	left = timeout_ms - (int)(rpc_now_ms() - start);
	r = grpc_unary_call(&io, fd, endpoint, path, req, len, left > 0 ? left : 1, result);
	if (r == 0 && result->status == GRPC_UNAVAILABLE && !atls_established(c))
		snprintf(result->message, sizeof result->message, "aTLS: %s", atls_error(c));
	atls_free(c);
	close(fd);
	return r;
}
