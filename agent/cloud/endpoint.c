/* The node-local endpoints' one client: agent/net's HTTP client with the cloud's headers, a
 * body bound, and retries with back-off for what a busy endpoint answers (a connection
 * refused while the guest network settles, 429, 5xx), all within one deadline. Only 200 is
 * a result; the status of the last try is in the one line otherwise. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cloud.h"
#include "net/net.h"

#define TRIES_MAX 5

static int retryable(int r, int status)
{
	return r == -ECONNREFUSED || r == -ETIMEDOUT || r == -EHOSTUNREACH || r == -ENETUNREACH ||
	       r == -ECONNRESET || (r == 0 && (status == 429 || status >= 500));
}

int cloud_http(const struct cloud *cl, const char *method, const char *url, const char *headers,
	       const void *body, size_t body_len, size_t max, struct http_response *resp)
{
	uint64_t end = monotonic_ms() + (uint64_t)cl->timeout_ms;
	struct http_req rq = {method, headers, body, body_len};
	char err[256] = "";
	int r = -ETIMEDOUT, wait = 200;

	for (int i = 1; i <= TRIES_MAX; i++) {
		uint64_t now = monotonic_ms();

		if (now >= end)
			break;
		r = http_request(url, &rq, (int)(end - now), max, resp, err, sizeof err);
		if (r == 0 && resp->status == 200)
			return 0;
		if (r == 0)
			snprintf(err, sizeof err, "HTTP %d", resp->status);
		if (!retryable(r, resp->status) || i == TRIES_MAX ||
		    monotonic_ms() + (uint64_t)wait >= end) {
			if (r == 0) {
				http_response_free(resp);
				r = -EPROTO;
			}
			break;
		}
		http_response_free(resp);
		log_debug("%s %s: %s; again in %d ms", method ? method : "GET", url, err, wait);
		poll(NULL, 0, wait);
		wait *= 2;
	}
	log_error("%s: %s %.200s: %s", cl->ops->name, method ? method : "GET", url,
		  err[0] ? err : "no time left");
	return r;
}
