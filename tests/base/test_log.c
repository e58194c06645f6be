/* Logging: threshold by level, one line per message, control characters neutralised,
 * log_err's errno text and return value, the /dev/kmsg format. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "harness.h"

/* Captures what the logger writes through a pipe. */
static int capture_start(int fds[2])
{
	if (pipe(fds) < 0)
		return -1;
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	log_set_fd(fds[1]);
	return 0;
}

static size_t capture_end(int fds[2], char *buf, size_t cap)
{
	ssize_t n;

	log_set_fd(2);
	close(fds[1]);
	n = read(fds[0], buf, cap - 1);
	close(fds[0]);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	return (size_t)n;
}

TEST(log_threshold_drops_lower_levels)
{
	int fds[2];
	char out[512];

	CHECK(capture_start(fds) == 0);
	log_set_level(LOG_WARN);
	log_debug("d");
	log_info("i");
	log_warn("w %d", 1);
	log_error("e");
	log_set_level(LOG_INFO);
	capture_end(fds, out, sizeof out);
	CHECK(!strcmp(out, "constel-agent: warn: w 1\nconstel-agent: error: e\n"));
}

TEST(log_debug_level_shows_everything)
{
	int fds[2];
	char out[512];

	CHECK(capture_start(fds) == 0);
	log_set_level(LOG_DEBUG);
	log_debug("d");
	log_set_level(LOG_INFO);
	log_debug("hidden");
	capture_end(fds, out, sizeof out);
	CHECK(!strcmp(out, "constel-agent: debug: d\n"));
}

TEST(log_keeps_one_message_on_one_line)
{
	int fds[2];
	char out[512];

	CHECK(capture_start(fds) == 0);
	log_info("peer said: %s", "bad\nconstel-agent: info: forged\r\x1b[2J");
	capture_end(fds, out, sizeof out);
	CHECK(
	    !strcmp(out, "constel-agent: info: peer said: bad?constel-agent: info: forged??[2J\n"));
}

TEST(log_err_appends_errno_text_and_returns_it)
{
	int fds[2];
	char out[512];
	int r;

	CHECK(capture_start(fds) == 0);
	r = log_err(-ENOENT, "tpm: %s: open", "/dev/tpmrm0");
	capture_end(fds, out, sizeof out);
	CHECK(r == -ENOENT);
	CHECK(!strcmp(out,
		      "constel-agent: error: tpm: /dev/tpmrm0: open: No such file or directory\n"));
}

TEST(log_truncates_long_lines)
{
	int fds[2];
	char out[4096], big[3000];

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	CHECK(capture_start(fds) == 0);
	log_info("%s", big);
	capture_end(fds, out, sizeof out);
	CHECK(strlen(out) < 1100);
	CHECK(strstr(out, "...\n") != NULL);
}

TEST(log_kmsg_lines_carry_syslog_priority)
{
	char path[] = "/tmp/constel-test-kmsg.XXXXXX", out[256];
	int fd = mkstemp(path), fds[2];
	ssize_t n;

	CHECK(fd >= 0);
	CHECK(capture_start(fds) == 0);
	CHECK(log_open_kmsg(path) == 0);
	log_error("disk: refused");
	log_info("net: up");
	log_close_kmsg();
	capture_end(fds, out, sizeof out);
	n = pread(fd, out, sizeof out - 1, 0);
	close(fd);
	unlink(path);
	CHECK(n > 0);
	out[n] = '\0';
	CHECK(!strcmp(out, "<3>constel-agent: disk: refused\n<6>constel-agent: net: up\n"));
}
