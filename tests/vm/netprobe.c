/* The network probe (test program, runs as /init of a test initrd): how long one TCP connect
 * and one small HTTP request take from the guest, through whatever network the harness gave
 * it (QEMU user networking with guestfwd rules, or a tap on a bridge in a network namespace;
 * tests/bench/boot-vm.sh boots it on both). The agent's own code does the work: its DHCP
 * client (net_up), tcp_dial, a GET like its metadata calls.
 *
 * Command line: probe.http=ADDR:PORT/PATH (probe.n rounds of connect + "GET PATH HTTP/1.0" +
 * the whole answer), probe.tcp=ADDR:PORT (probe.n rounds of connect + close; either may be
 * absent), probe.n=N (1..100, default 10).
 * Console: @@INIT_START, @@DATA lines, @@RESULT name PASS|FAIL, @@INIT_DONE rc=N (vm.py):
 *   @@DATA probe_dhcp_ms MS
 *   @@DATA probe_http_connect_ms MS,...  (connect() done)
 *   @@DATA probe_http_firstbyte_ms MS,... (the answer's first byte)
 *   @@DATA probe_http_total_ms MS,...     (the answer's end: the server's FIN)
 *   @@DATA probe_tcp_connect_ms MS,MS,... */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "boot/boot.h"
#include "guest.h"
#include "net/net.h"

#define PROBE_MAX_N	 100
#define PROBE_TIMEOUT_MS 10000 /* one connect or one answer */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Sends req and reads until EOF, *first set to the time the first byte came; bounded by
 * PROBE_TIMEOUT_MS. 0 or -errno. */
static int exchange(int fd, const char *req, double *first)
{
	double end = now_ms() + PROBE_TIMEOUT_MS;
	char buf[4096];
	size_t off = 0, len = strlen(req);

	while (off < len) {
		ssize_t n = write(fd, req + off, len - off);

		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n > 0)
			off += (size_t)n;
		else if (now_ms() > end)
			return -ETIMEDOUT;
		else
			poll(&(struct pollfd){fd, POLLOUT, 0}, 1, 100);
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		int left = (int)(end - now_ms());

		if (n == 0)
			return 0;
		if (n > 0) {
			if (*first == 0)
				*first = now_ms();
			continue;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (left <= 0)
			return -ETIMEDOUT;
		poll(&(struct pollfd){fd, POLLIN, 0}, 1, left);
	}
}

/* n rounds against hostport: connect (and, with path, one GET); prints the lists. */
static void rounds(const char *what, const char *hostport, const char *path, int n)
{
	char conn[PROBE_MAX_N * 12] = "", total[PROBE_MAX_N * 12] = "", byte[PROBE_MAX_N * 12] = "";
	char req[600], err[200];
	size_t cl = 0, tl = 0, bl = 0;

	snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path ? path : "",
		 hostport);
	for (int i = 0; i < n; i++) {
		double t0 = now_ms(), t1, t2, first = 0;
		int fd = tcp_dial(hostport, PROBE_TIMEOUT_MS, err, sizeof err), r = 0;

		t1 = now_ms();
		if (fd < 0) {
			guest_result(what, 0, "round %d: %s", i + 1, err);
			return;
		}
		if (path)
			r = exchange(fd, req, &first);
		t2 = now_ms();
		close(fd);
		if (r < 0) {
			guest_result(what, 0, "round %d: %s: %s", i + 1, hostport, strerror(-r));
			return;
		}
		cl +=
		    (size_t)snprintf(conn + cl, sizeof conn - cl, "%s%.2f", i ? "," : "", t1 - t0);
		tl += (size_t)snprintf(total + tl, sizeof total - tl, "%s%.2f", i ? "," : "",
				       t2 - t0);
		bl += (size_t)snprintf(byte + bl, sizeof byte - bl, "%s%.2f", i ? "," : "",
				       (first ? first : t2) - t0);
	}
	printf("@@DATA probe_%s_connect_ms %s\n", what, conn);
	if (path) {
		printf("@@DATA probe_%s_firstbyte_ms %s\n", what, byte);
		printf("@@DATA probe_%s_total_ms %s\n", what, total);
	}
	guest_result(what, 1, "%d rounds against %s", n, hostport);
}

int main(void)
{
	struct ip_config ic;
	char err[200], http[512];
	const char *tcp, *slash;
	double t0;
	int n;

	guest_start("netprobe", 0);
	modules_load_list("/etc/modules.list");
	n = atoi(guest_arg("probe.n", "10"));
	if (n < 1 || n > PROBE_MAX_N)
		n = 10;
	t0 = now_ms();
	if (ip_config_parse("dhcp", &ic, err, sizeof err) < 0 || net_up(&ic, NULL) < 0) {
		guest_result("dhcp", 0, "no lease");
	} else {
		printf("@@DATA probe_dhcp_ms %.2f\n", now_ms() - t0);
		snprintf(http, sizeof http, "%s", guest_arg("probe.http", ""));
		if (http[0] && (slash = strchr(http, '/'))) {
			char hostport[128];

			snprintf(hostport, sizeof hostport, "%.*s", (int)(slash - http), http);
			rounds("http", hostport, slash, n);
		}
		tcp = guest_arg("probe.tcp", "");
		if (tcp[0])
			rounds("tcp", tcp, NULL, n);
	}
	/* the link down before poweroff: the known virtio-net poweroff hang (notes §9.2) */
	{
		struct nl_link l;

		if (nl_first_ethernet(&l) == 0)
			nl_link_set(l.index, 0);
	}
	guest_done();
}
