/* TCP endpoints: numeric addresses or names from getaddrinfo, non-blocking sockets, a
 * bounded connect. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base.h"
#include "net.h"

int hostport_split(const char *s, char *host, size_t hcap, char *port, size_t pcap)
{
	const char *colon, *h = s;
	size_t hl;

	if (s[0] == '[') {
		const char *close_br = strchr(s, ']');

		if (!close_br || close_br[1] != ':')
			return -EINVAL;
		h = s + 1;
		hl = (size_t)(close_br - h);
		colon = close_br + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return -EINVAL;
		hl = (size_t)(colon - s);
	}
	if (hl >= hcap || strlen(colon + 1) >= pcap || !colon[1])
		return -EINVAL;
	for (const char *p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

static int resolve(const char *hostport, int passive, struct addrinfo **ret, char *err,
		   size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
	char host[256], port[8];
	int r;

	if (hostport_split(hostport, host, sizeof host, port, sizeof port) < 0)
		return errbuf_set(err, errlen, "'%.64s' is not HOST:PORT", hostport);
	if (passive)
		hints.ai_flags = AI_PASSIVE;
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, ret);
	if (r != 0)
		return errbuf_set(err, errlen, "%.64s: %s", hostport, gai_strerror(r));
	return 0;
}

void tcp_nodelay(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int tcp_dial(const char *hostport, int timeout_ms, char *err, size_t errlen)
{
	struct addrinfo *ai;
	int fd, r = resolve(hostport, 0, &ai, err, errlen);
	struct pollfd pfd;
	socklen_t sl = sizeof r;

	if (r < 0)
		return r;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		freeaddrinfo(ai);
		errbuf_set(err, errlen, "%.64s: socket: %s", hostport, strerror(-r));
		return r;
	}
	r = connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 ? -errno : 0;
	freeaddrinfo(ai);
	if (r == -EINPROGRESS) {
		pfd = (struct pollfd){fd, POLLOUT, 0};
		r = poll(&pfd, 1, timeout_ms);
		if (r == 0)
			r = -ETIMEDOUT;
		else if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &sl) < 0)
			r = -errno;
		else
			r = -r;
	}
	if (r < 0) {
		close(fd);
		errbuf_set(err, errlen, "dial %.64s: %s", hostport, strerror(-r));
		return r;
	}
	tcp_nodelay(fd);
	return fd;
}

int tcp_listen_on(const char *hostport, char *err, size_t errlen)
{
	struct addrinfo *ai;
	int fd, one = 1, r = resolve(hostport, 1, &ai, err, errlen);

	if (r < 0)
		return r;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 16) < 0) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		errbuf_set(err, errlen, "listen %.64s: %s", hostport, strerror(-r));
		return r;
	}
	freeaddrinfo(ai);
	return fd;
}

int tcp_local_port(int fd)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof a;

	if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return -errno;
	if (a.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&a)->sin_port);
	if (a.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
	return -EAFNOSUPPORT;
}
