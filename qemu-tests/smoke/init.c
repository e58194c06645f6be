/* The smallest /init that exercises the harness (qemu-tests/smoke.sh): it speaks vm.py's
 * console protocol (@@INIT_START, @@RESULT name PASS|FAIL detail, @@INIT_DONE rc=N) and checks
 * that the devices the harness attaches reach the guest: the first virtio disk and the TPM.
 * With "smoke.hang" on the kernel command line it stops after its results and waits to be
 * killed (the --kill-on and timeout cases); with "smoke.exit" it exits, which panics the kernel
 * (the fail-fast case).
 *   musl-gcc -static -Os -o init qemu-tests/smoke/init.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int failures;

/* One write() a line, so kernel messages cannot land inside a protocol line. */
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';
	(void)!write(1, line, n);
}

static void result(const char *name, int ok, const char *detail)
{
	failures += !ok;
	say("@@RESULT %s %s %s", name, ok ? "PASS" : "FAIL", detail);
}

/* devtmpfs creates the node while the driver probes, so it is there when finit_module (or,
 * for the built-in TPM, the kernel) returns; the 3 s are only a margin for a slow TCG host. */
static int wait_for(const char *path)
{
	struct timespec step = {0, 50 * 1000 * 1000};
	for (int i = 0; i < 60; i++) {
		if (access(path, F_OK) == 0)
			return 1;
		nanosleep(&step, NULL);
	}
	return 0;
}

/* The guest has no modprobe: load exactly the files mkinitrd.sh listed, dependencies first.
 * EEXIST (already loaded) and ENODEV (e.g. a CPU feature the vCPU lacks) are not errors. */
static void load_modules(void)
{
	char path[512], detail[600] = "";
	int loaded = 0, bad = 0;
	FILE *f = fopen("/etc/modules.list", "r");
	if (!f) {
		result("modules", 0, "no /etc/modules.list");
		return;
	}
	while (fgets(path, sizeof path, f)) {
		path[strcspn(path, "\n")] = 0;
		if (!path[0])
			continue;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST &&
			       errno != ENODEV)) {
			if (!bad++)
				snprintf(detail, sizeof detail, "%s: %s", path, strerror(errno));
		} else {
			loaded++;
		}
		if (fd >= 0)
			close(fd);
	}
	fclose(f);
	if (!bad)
		snprintf(detail, sizeof detail, "%d loaded", loaded);
	result("modules", !bad, detail);
}

static int cmdline_has(const char *word)
{
	char buf[4096];
	int fd = open("/proc/cmdline", O_RDONLY), n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	for (char *save, *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (strcmp(w, word) == 0)
			return 1;
	return 0;
}

int main(void)
{
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	if (fcntl(1, F_GETFD) < 0) { /* no console from the kernel: take it from devtmpfs */
		int fd = open("/dev/console", O_RDWR);
		dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
	}
	say("@@INIT_START");
	load_modules();
	result("vda", wait_for("/dev/vda"), "/dev/vda");
	result("tpm", wait_for("/dev/tpm0"), "/dev/tpm0");
	if (cmdline_has("smoke.exit"))
		return 1; /* "Attempted to kill init" */
	if (cmdline_has("smoke.hang")) {
		say("@@HANG");
		for (;;)
			pause();
	}
	say("@@INIT_DONE rc=%d", failures);
	sync();
	reboot(RB_POWER_OFF);
	for (;;) /* /init must never exit: that is a kernel panic */
		pause();
}
