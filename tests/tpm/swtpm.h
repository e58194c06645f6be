/* Test helper: a swtpm (TPM 2.0 simulator) for one test, on 127.0.0.1 with a state
 * directory of its own; started and stopped by the test, bounded waits only. */
#ifndef CONSTEL_TEST_SWTPM_H
#define CONSTEL_TEST_SWTPM_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tpm/tpm.h"

struct swtpm {
	pid_t pid;
	int port;
	char dir[64];
	struct tcti_spec tcti;
};

/* bind (0) or connect (1) to 127.0.0.1:port succeeds. */
static inline int swtpm_port_try(int port, int conn)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && (conn ? connect(fd, (struct sockaddr *)&a, sizeof a)
			      : bind(fd, (struct sockaddr *)&a, sizeof a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static inline int swtpm_port_free(int port)
{
	return swtpm_port_try(port, 0);
}

/* Something accepts connections on 127.0.0.1:port (bound is not yet listening). */
static inline int swtpm_port_listening(int port)
{
	return swtpm_port_try(port, 1);
}

/* Starts swtpm on the state in s->dir (made when empty). */
static inline int swtpm_start(struct swtpm *s)
{
	char server[96], ctrl[96], state[96], log[96];

	if (!s->dir[0]) {
		strcpy(s->dir, "/tmp/constel-swtpm-XXXXXX");
		if (!mkdtemp(s->dir))
			return -1;
	}
	for (int tries = 0; tries < 50; tries++) {
		int p = 20000 + (int)(random() % 20000);

		if (swtpm_port_free(p) && swtpm_port_free(p + 1)) {
			s->port = p;
			break;
		}
	}
	if (!s->port)
		return -1;
	snprintf(server, sizeof server, "type=tcp,port=%d,bindaddr=127.0.0.1", s->port);
	snprintf(ctrl, sizeof ctrl, "type=tcp,port=%d,bindaddr=127.0.0.1", s->port + 1);
	snprintf(state, sizeof state, "dir=%s", s->dir);
	snprintf(log, sizeof log, "file=%s.log", s->dir);
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		/* Never outlive the test, and never hold its output pipe (the runner reads it). */
		int devnull = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execlp("swtpm", "swtpm", "socket", "--tpm2", "--server", server, "--ctrl", ctrl,
		       "--tpmstate", state, "--flags", "not-need-init,startup-clear", "--log", log,
		       (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100 && !swtpm_port_listening(s->port); i++) /* 5 s: the command port */
		usleep(50000);
	s->tcti = (struct tcti_spec){.kind = TCTI_SWTPM, .port = (uint16_t)s->port};
	strcpy(s->tcti.host, "127.0.0.1");
	return 0;
}

static inline void swtpm_stop(struct swtpm *s)
{
	int st;

	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	for (int i = 0; i < 50 && waitpid(s->pid, &st, WNOHANG) == 0; i++)
		usleep(100000);
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &st, 0);
	s->pid = 0;
	s->port = 0;
}

/* Stops it and removes its state. */
static inline void swtpm_destroy(struct swtpm *s)
{
	char cmd[160];

	swtpm_stop(s);
	if (s->dir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf %s %s.log", s->dir, s->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", s->dir);
		s->dir[0] = '\0';
	}
}

#endif
