/* Kernel modules from the initrd, in the order the initrd writer resolved from modules.dep.
 * Plain .ko files only: Debian's 6.1 kernel has no in-kernel decompression
 * (../shared/notes/qemu.md §2). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "boot.h"

static int load_one(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return log_err(-errno, "modules: %s", path);
	if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST && errno != ENODEV)
		r = log_err(-errno, "modules: loading %s", path);
	close(fd);
	return r;
}

int modules_load_list(const char *list)
{
	char line[512];
	struct timespec t0, t1;
	int failed = 0, n = 0;
	FILE *f = fopen(list, "re");

	if (!f)
		return log_err(-errno, "modules: %s", list);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		n++;
		if (load_one(line) < 0)
			failed++;
	}
	fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("modules: %d loaded, %d failed, in %ld ms", n - failed, failed,
		 (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
	return failed;
}
