/* A measuring /init for the modules phase (tests/bench/modules-vm.sh): loads the modules of
 * /etc/modules.list one after the other like the agent's sequential loader did, and prints per
 * module the time to read the file, the time of finit_module (signature check, layout,
 * relocation and symbol resolution, then the module's init with any driver probe), and the
 * kernel's own figure for the init call (initcall_debug on the command line: "initcall X
 * returned 0 after N usecs" from /dev/kmsg). With "modtime.mem" it loads each file from memory
 * with init_module instead; with "modtime.async" it passes the module parameter async_probe;
 * with "modtime.list=PATH" it reads another list; with "modtime.agent" it runs the agent's own
 * loader (modules_load_list: in parallel when there is more than one CPU) instead; with
 * "modtime.kmsg" it prints every kernel line. Speaks vm.py's console protocol (@@INIT_START,
 * @@INIT_DONE).
 *   musl-gcc -static -O2 -Iagent -o init tests/initrd/modtime.c agent/boot/modules.c
 *       agent/boot/cmdline.c agent/base/log.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "boot/boot.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static char buf[8 << 20];

/* Drains /dev/kmsg (non-blocking) and prints its initcall lines. */
static int kmsg_all;

static void kmsg_initcalls(int kfd)
{
	char rec[2048];
	ssize_t n;
	while ((n = read(kfd, rec, sizeof rec - 1)) > 0) {
		rec[n] = 0;
		char *m = strchr(rec, ';');
		if (m && (kmsg_all || (strstr(m, "initcall ") && strstr(m, "returned"))))
			printf("@@KINIT %s", kmsg_all ? rec : m + 1); /* with "prio,seq,usec,-;" */
	}
}

/* What a node needs from its modules, there once the last one returned: the disks, the NIC,
 * dm-crypt/integrity/verity and the file systems. */
static void devices(void)
{
	static const char *const need[] = {"/dev/vda",
					   "/dev/vdb",
					   "/sys/class/net/eth0",
					   "/sys/module/dm_crypt",
					   "/sys/module/dm_integrity",
					   "/sys/module/dm_verity",
					   "/sys/module/ext4",
					   "/sys/module/overlay",
					   "/sys/module/algif_aead",
					   "/sys/module/aesni_intel"};
	char missing[512] = "";

	for (size_t i = 0; i < sizeof need / sizeof *need; i++)
		if (access(need[i], F_OK) != 0)
			snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s",
				 need[i]);
	printf("@@DEVICES %s%s\n", missing[0] ? "missing" : "ok", missing);
}

int main(void)
{
	char path[512], cmd[4096] = "";
	int mem = 0, n = 0;
	double all0, all1, rd = 0, ld = 0;

	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	int cfd = open("/proc/cmdline", O_RDONLY);
	if (cfd >= 0) {
		ssize_t k = read(cfd, cmd, sizeof cmd - 1);
		cmd[k > 0 ? k : 0] = 0;
		close(cfd);
	}
	mem = strstr(cmd, "modtime.mem") != NULL;
	kmsg_all = strstr(cmd, "modtime.kmsg") != NULL;
	const char *params = strstr(cmd, "modtime.async") ? "async_probe" : "";
	char list[256] = "/etc/modules.list", *l = strstr(cmd, "modtime.list=");
	if (l) {
		snprintf(list, sizeof list, "%s", l + 13);
		list[strcspn(list, " \n")] = 0;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("@@INIT_START\n");
	int kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kfd >= 0 && !kmsg_all)
		lseek(kfd, 0, SEEK_END);
	FILE *f = fopen(list, "r");
	if (!f) {
		printf("@@INIT_DONE rc=1\n");
		goto out;
	}
	all0 = now_ms();
	if (strstr(cmd, "modtime.agent")) {
		/* the agent's own loader (agent/boot/modules.c), per-module times at debug level */
		log_set_fd(1);
		log_set_level(LOG_DEBUG);
		fclose(f);
		int failed = modules_load_list(list);
		all1 = now_ms();
		devices();
		printf("@@TOTAL %d failed %.1f ms mode agent cpus %ld list %s\n", failed,
		       all1 - all0, sysconf(_SC_NPROCESSORS_ONLN), list);
		printf("@@INIT_DONE rc=0\n");
		goto out;
	}
	while (fgets(path, sizeof path, f)) {
		path[strcspn(path, " \t\n")] = 0;
		if (!path[0] || path[0] == '#')
			continue;
		double t0 = now_ms(), t1, t2;
		int fd = open(path, O_RDONLY | O_CLOEXEC), r;
		ssize_t size = 0;
		if (mem) {
			ssize_t k;
			while (fd >= 0 && (k = read(fd, buf + size, sizeof buf - size)) > 0)
				size += k;
		}
		t1 = now_ms();
		if (mem)
			r = syscall(SYS_init_module, buf, (unsigned long)size, params);
		else
			r = syscall(SYS_finit_module, fd, params, 0);
		t2 = now_ms();
		int e = r < 0 ? errno : 0;
		if (fd >= 0)
			close(fd);
		const char *base = strrchr(path, '/');
		printf("@@MOD %-24s read %7.2f ms load %8.2f ms %s\n", base ? base + 1 : path,
		       t1 - t0, t2 - t1, e ? strerror(e) : "ok");
		rd += t1 - t0;
		ld += t2 - t1;
		n++;
	}
	all1 = now_ms();
	fclose(f);
	if (kfd >= 0)
		kmsg_initcalls(kfd);
	devices();
	printf("@@TOTAL %d modules %.1f ms (read %.1f, load %.1f) mode %s%s list %s\n", n,
	       all1 - all0, rd, ld, mem ? "init_module" : "finit_module",
	       *params ? " async_probe" : "", list);
	printf("@@INIT_DONE rc=0\n");
out:
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
