/* Test helper: tests/cloud/fake_cloud.py --csp azure on 127.0.0.1 (a port of the test's
 * own), as Azure IMDS with THIM and the VM's tags, for azure-sev-snp's tests. Run from the
 * repository's top (as tests/run.sh does). */
#ifndef CONSTEL_TEST_AZURE_IMDS_FAKE_H
#define CONSTEL_TEST_AZURE_IMDS_FAKE_H

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct imds_fake {
	pid_t pid;
	char base[64]; /* "http://127.0.0.1:PORT" */
};

static inline void imds_fake_stop(struct imds_fake *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGTERM);
		waitpid(f->pid, NULL, 0);
		f->pid = 0;
	}
}

/* THIM serves the PEM files vcek and chain (NULL: THIM answers 404); maa, when not NULL, is
 * the VM's constellation-maa-url tag. 0 once the fake says "ready". */
static inline int imds_fake_start(struct imds_fake *f, const char *vcek, const char *chain,
				  const char *maa)
{
	static int starts;
	char listen[32], v[640], c[640], tag[256], line[8] = {0};
	const char *argv[16];
	int fd[2], n = 0, port = 20000 + (int)(getpid() % 10000) * 4 + starts++ % 4;
	size_t got = 0;
	ssize_t k;

	snprintf(f->base, sizeof f->base, "http://127.0.0.1:%d", port);
	snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
	snprintf(v, sizeof v, "thim_vcek=%s", vcek ? vcek : "");
	snprintf(c, sizeof c, "thim_chain=%s", chain ? chain : "");
	snprintf(tag, sizeof tag, "maa_url=%s", maa ? maa : "");
	argv[n++] = "python3";
	argv[n++] = "tests/cloud/fake_cloud.py";
	argv[n++] = "--csp";
	argv[n++] = "azure";
	argv[n++] = "--listen";
	argv[n++] = listen;
	argv[n++] = "--set";
	argv[n++] = v;
	argv[n++] = "--set";
	argv[n++] = c;
	argv[n++] = "--set";
	argv[n++] = tag;
	argv[n] = NULL;
	if (pipe(fd) < 0)
		return -1;
	if ((f->pid = fork()) == 0) {
		/* gone with the test, also when a failed CHECK skips imds_fake_stop */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(fd[1], 1);
		close(fd[0]);
		execvp("python3", (char *const *)argv);
		_exit(127);
	}
	close(fd[1]);
	while (f->pid > 0 && got < 6 && (k = read(fd[0], line + got, 6 - got)) > 0)
		got += (size_t)k;
	close(fd[0]);
	if (got != 6 || strncmp(line, "ready\n", 6)) {
		fprintf(stderr, "fake_cloud.py did not start (%zu bytes)\n", got);
		imds_fake_stop(f);
		return -1;
	}
	return 0;
}

#endif
