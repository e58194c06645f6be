/* Test helper: tests/attest/fake_maa.py on 127.0.0.1 (a port of the test's own) as Microsoft
 * Azure Attestation, and its test-only /test/token minting, for the MAA fallback's tests. Run
 * from the repository's top (as tests/run.sh does). */
#ifndef CONSTEL_TEST_MAA_FAKE_H
#define CONSTEL_TEST_MAA_FAKE_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/net.h"

struct maa_fake {
	pid_t pid;
	char base[64]; /* "http://127.0.0.1:PORT" */
};

static inline void maa_fake_stop(struct maa_fake *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGTERM);
		waitpid(f->pid, NULL, 0);
		f->pid = 0;
	}
}

/* 0 once the fake says "ready" */
static inline int maa_fake_start(struct maa_fake *f)
{
	static int starts;
	char listen[32], line[8] = {0};
	int fd[2], port = 40000 + (int)(getpid() % 6000) * 4 + starts++ % 4;
	size_t got = 0;
	ssize_t k;

	snprintf(f->base, sizeof f->base, "http://127.0.0.1:%d", port);
	snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
	if (pipe(fd) < 0)
		return -1;
	if ((f->pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* gone with the test */
		dup2(fd[1], 1);
		close(fd[0]);
		execlp("python3", "python3", "tests/attest/fake_maa.py", "--listen", listen,
		       (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (f->pid > 0 && got < 6 && (k = read(fd[0], line + got, 6 - got)) > 0)
		got += (size_t)k;
	close(fd[0]);
	if (got != 6 || strncmp(line, "ready\n", 6)) {
		fprintf(stderr, "fake_maa.py did not start (%zu bytes)\n", got);
		maa_fake_stop(f);
		return -1;
	}
	return 0;
}

/* A token from the fake's /test/token for the JSON request req (fake_maa.py's header), into a
 * malloc'd string; NULL on failure. */
static inline char *maa_fake_token(const struct maa_fake *f, const char *req)
{
	struct http_req rq = {"POST", "Content-Type: application/json\r\n", req, strlen(req)};
	struct http_response resp = {0};
	char url[128], err[256], *tok = NULL;

	snprintf(url, sizeof url, "%s/test/token", f->base);
	if (http_request(url, &rq, 10000, 1 << 16, &resp, err, sizeof err) < 0) {
		fprintf(stderr, "fake_maa.py: %s\n", err);
		return NULL;
	}
	if (resp.status == 200 && (tok = malloc(resp.len + 1))) {
		memcpy(tok, resp.body, resp.len);
		tok[resp.len] = 0;
	}
	http_response_free(&resp);
	return tok;
}

#endif
