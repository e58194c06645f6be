/* Leveled logging to stderr and /dev/kmsg. Each message is one line written with a single
 * write(), so lines from the agent and the kernel do not interleave mid-line; control
 * characters from outside input are replaced so one message is always one line. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base.h"

#define LOG_LINE_MAX 1024

static const char *program = "constel-agent";
static int threshold = LOG_INFO;
static int err_fd = STDERR_FILENO;
static int kmsg_fd = -1;

void log_set_program(const char *name)
{
	program = name;
}

void log_set_level(int level)
{
	threshold = level;
}

int log_get_level(void)
{
	return threshold;
}

void log_set_fd(int fd)
{
	err_fd = fd;
}

int log_open_kmsg(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	log_close_kmsg();
	kmsg_fd = fd;
	return 0;
}

void log_close_kmsg(void)
{
	if (kmsg_fd >= 0)
		close(kmsg_fd);
	kmsg_fd = -1;
}

static const char *level_name(int level)
{
	if (level <= LOG_DEBUG)
		return "debug";
	if (level == LOG_INFO)
		return "info";
	if (level == LOG_WARN)
		return "warn";
	return "error";
}

/* syslog priorities for /dev/kmsg: err, warning, info, debug. */
static int kmsg_priority(int level)
{
	if (level <= LOG_DEBUG)
		return 7;
	if (level == LOG_INFO)
		return 6;
	if (level == LOG_WARN)
		return 4;
	return 3;
}

static size_t sanitize(char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f)
			s[i] = '?';
	}
	return len;
}

/* The last LOG_RING_SIZE bytes of log lines, for the logs the init server returns after a
 * failure (the Go bootstrapper sends its journal there). */
static char ring[LOG_RING_SIZE];
static size_t ring_head, ring_used;

static void ring_put(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ring[ring_head] = s[i];
		ring_head = (ring_head + 1) % LOG_RING_SIZE;
	}
	ring_used = ring_used + n > LOG_RING_SIZE ? LOG_RING_SIZE : ring_used + n;
}

size_t log_ring_copy(char *buf, size_t cap)
{
	size_t n = ring_used < cap ? ring_used : cap;
	size_t start = (ring_head + LOG_RING_SIZE - n) % LOG_RING_SIZE;

	for (size_t i = 0; i < n; i++)
		buf[i] = ring[(start + i) % LOG_RING_SIZE];
	return n;
}

void log_vmsg(int level, const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX], line[LOG_LINE_MAX + 64];
	int saved = errno, n, m;

	if (level < threshold)
		return;
	n = vsnprintf(msg, sizeof msg, fmt, ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof msg) {
		n = sizeof msg - 1;
		memcpy(msg + n - 3, "...", 3);
	}
	sanitize(msg, (size_t)n);

	m = snprintf(line, sizeof line, "%s: %s: %.*s\n", program, level_name(level), n, msg);
	ring_put(line, (size_t)m < sizeof line ? (size_t)m : sizeof line - 1);
	if (err_fd >= 0) {
		m = snprintf(line, sizeof line, "%s: %s: %.*s\n", program, level_name(level), n,
			     msg);
		(void)write_all(err_fd, line,
				(size_t)m < sizeof line ? (size_t)m : sizeof line - 1);
	}
	if (kmsg_fd >= 0) {
		m = snprintf(line, sizeof line, "<%d>%s: %.*s\n", kmsg_priority(level), program, n,
			     msg);
		(void)write_all(kmsg_fd, line,
				(size_t)m < sizeof line ? (size_t)m : sizeof line - 1);
	}
	errno = saved;
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

int errbuf_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !errlen)
		return -EINVAL;
	va_start(ap, fmt);
	n = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (n < 0)
		err[0] = '\0';
	sanitize(err, strlen(err));
	return -EINVAL;
}

int log_err(int err, const char *fmt, ...)
{
	char msg[LOG_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (err < 0)
		log_msg(LOG_ERROR, "%s: %s", msg, strerror(-err));
	else
		log_msg(LOG_ERROR, "%s", msg);
	return err;
}
