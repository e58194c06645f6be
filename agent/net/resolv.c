/* Names after switch_root. musl's resolver (and containerd's, kubelet's) reads /etc/resolv.conf
 * at every lookup; the initramfs's copy, written from the DHCP lease, is freed at switch_root
 * and the real root's /etc is read-only (verity). So before switch_root the lease's file is
 * copied into the /run tmpfs, which moves into the new root, and the new root's
 * /etc/resolv.conf is made to show it: a regular file is covered by a bind mount of the copy
 * (as container runtimes do), a symlink into /run (systemd-resolved's layout) gets its target
 * written there. Any program on the node then resolves through the DHCP-given DNS server, and
 * `cat /etc/resolv.conf` tells the truth. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "net.h"

#define RESOLV_MAX 65536

/* The target of a /etc/resolv.conf symlink as a path below /run ("systemd/resolve/x"), or NULL
 * when it points elsewhere. */
static const char *below_run(const char *target)
{
	if (!strncmp(target, "/run/", 5))
		return target + 5;
	if (!strncmp(target, "../run/", 7)) /* relative to /etc */
		return target + 7;
	return NULL;
}

int resolv_conf_carry(const char *src, const char *newroot, const char *rundir)
{
	char text[RESOLV_MAX], copy[4096], dst[4096], target[4096], where[4096];
	const char *rel;
	struct stat st;
	ssize_t n;
	int fd, r;

	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		log_info("dns: no %s from the lease: %s/etc/resolv.conf stays as the image has it",
			 src, newroot);
		return 0;
	}
	n = read_full(fd, text, sizeof text);
	close(fd);
	if (n < 0 || n == (ssize_t)sizeof text)
		return log_err(n < 0 ? (int)n : -EFBIG, "dns: reading %s", src);
	if (snprintf(copy, sizeof copy, "%s/constel/resolv.conf", rundir) >= (int)sizeof copy ||
	    snprintf(dst, sizeof dst, "%s/etc/resolv.conf", newroot) >= (int)sizeof dst)
		return log_err(-ENAMETOOLONG, "dns: paths too long");
	if ((r = write_file_replace(copy, text, (size_t)n, 0644)) < 0)
		return log_err(r, "dns: writing %s", copy);
	if (lstat(dst, &st) == 0 && S_ISLNK(st.st_mode)) {
		ssize_t k = readlink(dst, target, sizeof target - 1);

		if (k < 0)
			return log_err(-errno, "dns: readlink %s", dst);
		target[k] = 0;
		if (!(rel = below_run(target)) || strstr(rel, "..")) {
			log_warn("dns: %s -> %s is outside /run: names resolve as the image says",
				 dst, target);
			return 0;
		}
		if (snprintf(where, sizeof where, "%s/%s", rundir, rel) >= (int)sizeof where)
			return log_err(-ENAMETOOLONG, "dns: path too long");
		if ((r = write_file_replace(where, text, (size_t)n, 0644)) < 0)
			return log_err(r, "dns: writing %s (the target of %s)", where, dst);
		log_info("dns: the lease's servers in %s, where %s points", where, dst);
		return 0;
	}
	if (lstat(dst, &st) < 0) { /* none in the image: only a writable /etc can get one */
		fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0) {
			log_warn("dns: %s: %s: names resolve only through /etc/hosts", dst,
				 strerror(errno));
			return 0;
		}
		close(fd);
	} else if (!S_ISREG(st.st_mode)) {
		log_warn("dns: %s is not a file: names resolve as the image says", dst);
		return 0;
	}
	if (mount(copy, dst, NULL, MS_BIND, NULL) < 0)
		return log_err(-errno, "dns: bind-mounting %s on %s", copy, dst);
	log_info("dns: %s shows the lease's servers (a bind mount of %s)", dst, copy);
	return 0;
}
