/* The harness side of a test /init (guest.h). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "boot/boot.h"
#include "guest.h"

static int failures;
static char cmdline[4096];

void guest_start(const char *program, int with_run)
{
	int fd;

	mkdir("/proc", 0555);
	mkdir("/sys", 0555);
	mkdir("/dev", 0755);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	if (with_run) {
		mkdir("/run", 0755);
		mount("tmpfs", "/run", "tmpfs", 0, "mode=0755");
		mkdir("/tmp", 01777);
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, cmdline, sizeof cmdline - 1);

		cmdline[n > 0 ? n : 0] = 0;
		close(fd);
	}
	log_set_program(program);
	printf("@@INIT_START\n");
}

const char *guest_arg(const char *key, const char *def)
{
	static char val[8][512];
	static int slot;
	char *v = val[slot++ % 8];

	return cmdline_get(cmdline, key, v, 512) == 1 ? v : def;
}

void guest_result(const char *name, int ok, const char *fmt, ...)
{
	char detail[512] = "";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(detail, sizeof detail, fmt, ap);
		va_end(ap);
	}
	printf("@@RESULT %s %s %s\n", name, ok ? "PASS" : "FAIL", detail);
	fflush(stdout);
	if (!ok)
		failures++;
}

void guest_done(void)
{
	sync();
	printf("@@INIT_DONE rc=%d\n", failures ? 1 : 0);
	reboot(RB_POWER_OFF);
	_exit(0);
}
