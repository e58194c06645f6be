/* No secret left in freed heap by the rpc layer: an Init-shaped call (the init secret and the
 * master secret in a 100 KiB request, a streamed log line and an admin kubeconfig with its
 * client key in the answer) and a Recover-shaped call (the master secret in a kms_uri) run
 * between our client and server over aTLS in this process; after both are freed, every
 * private writable mapping of the process (heap, anonymous mmaps) is read through
 * /proc/self/mem and must hold none of the three secrets. The test's own copies live in
 * static storage, which is skipped. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "atls/atls.h"
#include "attest/attest.h"
#include "base/base.h"
#include "harness.h"
#include "rpc/rpc.h"

#define REQ_LEN (100 * 1024)

static struct {
	uint8_t init_secret[32], master_secret[32];
	char client_key[65]; /* base64 of 48 random bytes, as in client-key-data */
	uint8_t probe[16];
} secrets;
static uint8_t scan_buf[1 << 20];

/* The handlers check what they got in place and answer from the stack, wiped after. */
static void init_handler(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	char kubeconfig[40 * 1024];
	const char log[] = "kubeadm: [init] Using Kubernetes version: v1.30.0";
	size_t n;

	(void)ctx;
	if (len != REQ_LEN || memcmp(req + 1000, secrets.init_secret, 32) ||
	    memcmp(req + 50000, secrets.master_secret, 32)) {
		grpc_stream_finish(s, GRPC_INVALID_ARGUMENT, "wrong request");
		return;
	}
	grpc_stream_send(s, (const uint8_t *)log, sizeof log - 1);
	n = (size_t)snprintf(kubeconfig, sizeof kubeconfig,
			     "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n"
			     "    client-key-data: %s\n",
			     secrets.client_key);
	/* a kubeconfig of realistic size: the certificates take most of it */
	memset(kubeconfig + n, 'A', sizeof kubeconfig - n);
	grpc_stream_send(s, (const uint8_t *)kubeconfig, sizeof kubeconfig);
	secret_wipe(kubeconfig, sizeof kubeconfig);
	grpc_stream_finish(s, GRPC_OK, NULL);
}

static void recover_handler(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	if (len != 200 || memcmp(req + 32, secrets.master_secret, 32)) {
		grpc_stream_finish(s, GRPC_INVALID_ARGUMENT, "wrong request");
		return;
	}
	grpc_stream_send(s, (const uint8_t *)"", 0); /* an empty RecoverResponse */
	grpc_stream_finish(s, GRPC_OK, NULL);
}

static const struct grpc_method methods[] = {{"/init.API/Init", init_handler, NULL},
					     {"/recover.API/Recover", recover_handler, NULL}};

struct streamed {
	int n, key_seen;
};

static void on_message(void *arg, const uint8_t *msg, size_t len)
{
	struct streamed *st = arg;

	st->n++;
	if (len > 200 && memmem(msg, len, secrets.client_key, 64))
		st->key_seen = 1;
}

/* One call over aTLS on a socketpair, everything freed after; the result's status. */
static int call(const char *path, uint8_t *req, size_t len, struct streamed *st)
{
	struct atls_config ccfg = {0};
	struct atls_config scfg = {.issuer = &attest_dummy_issuer};
	int fd[2], done = 0, server_done = 0, status = -1;
	struct atls_conn *ca, *sa;
	struct rpc_io cio, sio;
	struct grpc_client *cl;
	struct grpc_server_conn *sv;
	struct grpc_result res;
	int64_t start = rpc_now_ms();

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) < 0)
		return -errno;
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
	if (atls_client_new(&ccfg, fd[0], &ca) < 0 || atls_server_new(&scfg, fd[1], &sa) < 0)
		return -ENOMEM;
	rpc_io_atls(&cio, ca);
	rpc_io_atls(&sio, sa);
	if (grpc_client_new(&cio, "node", &cl) < 0 ||
	    grpc_server_conn_new(&sio, methods, 2, &sv) < 0)
		return -ENOMEM;
	if (st)
		grpc_client_on_message(cl, on_message, st);
	grpc_client_call(cl, path, req, len, start + 10000);
	while (!done && rpc_now_ms() - start < 11000) {
		struct pollfd pfd[2] = {{fd[0], grpc_client_events(cl), 0},
					{server_done ? -1 : fd[1], grpc_server_conn_events(sv), 0}};

		if (!server_done && grpc_server_conn_step(sv) != 0) {
			server_done = 1;
			shutdown(fd[1], SHUT_RDWR);
		}
		done = grpc_client_step(cl, &res);
		if (!done)
			poll(pfd, 2, 10);
	}
	if (done) {
		status = res.status;
		if (res.response) {
			secret_wipe(res.response, res.response_len);
			free(res.response);
		}
	}
	grpc_client_free(cl);
	grpc_server_conn_free(sv);
	atls_free(ca);
	atls_free(sa);
	close(fd[0]);
	close(fd[1]);
	return status;
}

/* Where one of the needles occurs in the process's private writable mappings outside static
 * storage, as "needle at address", or "" when nowhere. */
static void scan(const uint8_t *const needles[], const size_t lens[], size_t n, char *found,
		 size_t cap)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	int mem = open("/proc/self/mem", O_RDONLY);
	char line[512];

	found[0] = '\0';
	if (!maps || mem < 0) {
		snprintf(found, cap, "cannot read /proc/self/maps or mem");
		goto out;
	}
	while (fgets(line, sizeof line, maps)) {
		unsigned long lo, hi;
		char perms[8], path[256] = "";

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) < 3)
			continue;
		if (strcmp(perms, "rw-p") || (path[0] && strcmp(path, "[heap]")))
			continue;
		/* static storage (our own copies), and reservations too big to be heap */
		if (((unsigned long)&secrets >= lo && (unsigned long)&secrets < hi) ||
		    ((unsigned long)scan_buf >= lo && (unsigned long)scan_buf < hi) ||
		    hi - lo > (1UL << 30))
			continue;
		for (unsigned long at = lo; at < hi;) {
			size_t want = hi - at < sizeof scan_buf ? hi - at : sizeof scan_buf;
			ssize_t got = pread(mem, scan_buf, want, (off_t)at);

			if (got <= 0)
				break;
			for (size_t i = 0; i < n; i++) {
				uint8_t *p = memmem(scan_buf, (size_t)got, needles[i], lens[i]);

				if (p && !found[0])
					snprintf(found, cap, "secret %zu at %#lx", i,
						 at + (unsigned long)(p - scan_buf));
			}
			/* overlap so that a needle across two reads is seen */
			at += (size_t)got > 64 ? (size_t)got - 64 : (size_t)got;
		}
	}
out:
	if (maps)
		fclose(maps);
	if (mem >= 0)
		close(mem);
}

TEST(rpc_init_and_recover_leave_no_secret_in_freed_heap)
{
	uint8_t key_raw[48];
	uint8_t *req;
	struct streamed st = {0};
	char found[128];
	/* slices from the middle: a freed block's first bytes hold allocator pointers */
	const uint8_t *needles[] = {secrets.init_secret + 8, secrets.master_secret + 8,
				    (const uint8_t *)secrets.client_key + 16};
	const size_t lens[] = {16, 16, 24};
	int r;

	CHECK(random_bytes(secrets.init_secret, 32) == 0);
	CHECK(random_bytes(secrets.master_secret, 32) == 0);
	CHECK(random_bytes(key_raw, sizeof key_raw) == 0);
	base64_encode(BASE64_STD, key_raw, sizeof key_raw, secrets.client_key,
		      sizeof secrets.client_key);
	secret_wipe(key_raw, sizeof key_raw);

	/* Init: the secrets in a large request, the key in a large streamed answer */
	req = calloc(1, REQ_LEN);
	CHECK(req != NULL);
	memcpy(req + 1000, secrets.init_secret, 32);
	memcpy(req + 50000, secrets.master_secret, 32);
	r = call("/init.API/Init", req, REQ_LEN, &st);
	secret_wipe(req, REQ_LEN);
	free(req);
	if (r != GRPC_OK || st.n != 2 || !st.key_seen)
		harness_fail(__FILE__, __LINE__, "init: status %d, %d messages, key seen %d", r,
			     st.n, st.key_seen);
	CHECK(r == GRPC_OK && st.n == 2 && st.key_seen);

	/* Recover: the master secret in a kms_uri */
	req = calloc(1, 200);
	CHECK(req != NULL);
	memcpy(req, "kms://cluster-kms?key=", 22);
	memcpy(req + 32, secrets.master_secret, 32);
	r = call("/recover.API/Recover", req, 200, NULL);
	if (r != GRPC_OK)
		harness_fail(__FILE__, __LINE__, "recover: status %d", r);
	secret_wipe(req, 200);
	free(req);
	CHECK(r == GRPC_OK);

	scan(needles, lens, 3, found, sizeof found);
	if (found[0])
		harness_fail(__FILE__, __LINE__, "heap after Init and Recover: %s", found);
	CHECK(!found[0]);
}

/* The scan sees a secret that is left behind (so that its silence above means something). */
TEST(rpc_heap_scan_finds_a_secret_left_in_freed_heap)
{
	const uint8_t *needles[1];
	const size_t lens[] = {16};
	uint8_t *p = malloc(4096);
	char found[128];

	CHECK(p != NULL);
	CHECK(random_bytes(p, 64) == 0);
	needles[0] = secrets.probe;
	memcpy(secrets.probe, p + 16, 16);
	free(p);
	scan(needles, lens, 1, found, sizeof found);
	CHECK(found[0]);
}
