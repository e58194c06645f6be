/* Test helpers for the interop tests: start atlspeer (the Go peer, built by
 * build-atlspeer.sh), read its lines, wait for it, and open loopback sockets. Static
 * functions in a header, because each test file is its own binary. */
#ifndef CONSTEL_TEST_INTEROP_PEER_H
#define CONSTEL_TEST_INTEROP_PEER_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct peer {
	pid_t pid;
	FILE *out;
	char line[512]; /* the last line it printed */
};

static inline const char *peer_path(void)
{
	static char path[512];
	FILE *p;

	if (path[0])
		return path;
	p = popen("tests/interop/build-atlspeer.sh", "r");
	if (!p || !fgets(path, sizeof path, p)) {
		if (p)
			pclose(p);
		return NULL;
	}
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	return path;
}

/* Starts atlspeer with args; its stdout is read through peer->out. */
static inline int peer_start(struct peer *pr, char *const args[])
{
	int fds[2];

	if (!peer_path() || pipe(fds) < 0)
		return -1;
	pr->pid = fork();
	if (pr->pid < 0)
		return -1;
	if (pr->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execv(peer_path(), args);
		_exit(127);
	}
	close(fds[1]);
	pr->out = fdopen(fds[0], "r");
	pr->line[0] = '\0';
	return pr->out ? 0 : -1;
}

/* Reads the peer's next line within 15 s. */
static inline int peer_line(struct peer *pr)
{
	struct pollfd pfd = {fileno(pr->out), POLLIN, 0};

	if (poll(&pfd, 1, 15000) <= 0 || !fgets(pr->line, sizeof pr->line, pr->out))
		return -1;
	pr->line[strcspn(pr->line, "\n")] = '\0';
	return 0;
}

/* Waits (at most 15 s) for the peer to exit; kills it after that. Returns its exit status. */
static inline int peer_wait(struct peer *pr)
{
	int st = 0;

	for (int i = 0; i < 150; i++) {
		if (waitpid(pr->pid, &st, WNOHANG) == pr->pid) {
			fclose(pr->out);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
		}
		usleep(100000);
	}
	kill(pr->pid, SIGKILL);
	waitpid(pr->pid, &st, 0);
	fclose(pr->out);
	return 128;
}

static inline int tcp_connect(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		return -1;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static inline int tcp_listen(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 1) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

#endif
