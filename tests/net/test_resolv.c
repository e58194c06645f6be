/* The lease's DNS servers carried into the real root before switch_root (net/resolv.c): in a
 * private mount namespace, a read-only "real root" whose /etc/resolv.conf is a file gets the
 * lease's file bind-mounted over it (and rewritable in place, for a renewal); one whose
 * /etc/resolv.conf points into /run gets the target written in the run directory; without a
 * lease file nothing changes. Needs root (mounts); says so and passes trivially without it. */
#define _GNU_SOURCE /* unshare */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "harness.h"
#include "net/net.h"

static const char lease[] = "# from the DHCP lease\nnameserver 10.0.2.3\n";

static int in_own_mount_ns(void)
{
	static int state; /* 0 unknown, 1 yes, -1 no */

	if (!state)
		state = geteuid() == 0 && unshare(CLONE_NEWNS) == 0 &&
				mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0
			    ? 1
			    : -1;
	if (state < 0)
		printf("# not root or no mount namespace: skipped\n");
	return state > 0;
}

static int slurp_is(const char *path, const char *want)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return 0;
	buf[n] = 0;
	return !strcmp(buf, want);
}

/* dir/root: a tmpfs "real root" with etc/resolv.conf made by mk, then made read-only. */
static const char *ro_root(const char *dir, void (*mk)(const char *root))
{
	static char root[256];

	snprintf(root, sizeof root, "%s/root", dir);
	mkdir(root, 0755);
	if (mount("tmpfs", root, "tmpfs", 0, "mode=0755") < 0)
		return NULL;
	mk(root);
	if (mount(NULL, root, NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
		return NULL;
	return root;
}

static void mk_file(const char *root)
{
	mkdir(harness_path(root, "etc"), 0755);
	write_file_excl(harness_path(root, "etc/resolv.conf"), "nameserver 127.0.0.53\n", 22, 0644);
}

static void mk_link(const char *root)
{
	mkdir(harness_path(root, "etc"), 0755);
	symlink("../run/systemd/resolve/stub-resolv.conf", harness_path(root, "etc/resolv.conf"));
}

static void mk_none(const char *root)
{
	mkdir(harness_path(root, "etc"), 0755);
}

static void undo(const char *root)
{
	umount2(harness_path(root, "etc/resolv.conf"), MNT_DETACH);
	umount2(root, MNT_DETACH);
}

TEST(resolv_lease_covers_the_read_only_roots_file)
{
	char dir[64], src[256], run[256];
	const char *root, *etc;
	int fd;

	if (!in_own_mount_ns())
		return;
	harness_tmpdir(dir, "resolv");
	snprintf(src, sizeof src, "%s", harness_path(dir, "lease.conf"));
	snprintf(run, sizeof run, "%s", harness_path(dir, "run"));
	CHECK(write_file_excl(src, lease, strlen(lease), 0644) == 0);
	CHECK((root = ro_root(dir, mk_file)));
	etc = harness_path(root, "etc/resolv.conf");
	CHECK(write_file_excl(harness_path(root, "x"), "x", 1, 0644) == -EROFS);
	CHECK(resolv_conf_carry(src, root, run) == 0);
	CHECK(slurp_is(etc, lease));
	/* a renewal rewrites it in place */
	fd = open(etc, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0 && write(fd, "nameserver 10.0.2.4\n", 20) == 20);
	close(fd);
	CHECK(slurp_is(harness_path(run, "constel/resolv.conf"), "nameserver 10.0.2.4\n"));
	undo(root);
	harness_rmtree(dir);
}

TEST(resolv_lease_written_where_a_symlink_into_run_points)
{
	char dir[64], src[256], run[256];
	const char *root;

	if (!in_own_mount_ns())
		return;
	harness_tmpdir(dir, "resolv");
	snprintf(src, sizeof src, "%s", harness_path(dir, "lease.conf"));
	snprintf(run, sizeof run, "%s", harness_path(dir, "run"));
	CHECK(write_file_excl(src, lease, strlen(lease), 0644) == 0);
	CHECK((root = ro_root(dir, mk_link)));
	CHECK(resolv_conf_carry(src, root, run) == 0);
	CHECK(slurp_is(harness_path(run, "systemd/resolve/stub-resolv.conf"), lease));
	undo(root);
	harness_rmtree(dir);
}

TEST(resolv_without_lease_or_target_changes_nothing)
{
	char dir[64], src[256], run[256];
	const char *root;
	struct stat st;

	if (!in_own_mount_ns())
		return;
	harness_tmpdir(dir, "resolv");
	snprintf(src, sizeof src, "%s", harness_path(dir, "lease.conf"));
	snprintf(run, sizeof run, "%s", harness_path(dir, "run"));
	CHECK((root = ro_root(dir, mk_file)));
	CHECK(resolv_conf_carry(src, root, run) == 0); /* no lease file */
	CHECK(slurp_is(harness_path(root, "etc/resolv.conf"), "nameserver 127.0.0.53\n"));
	undo(root);
	CHECK(write_file_excl(src, lease, strlen(lease), 0644) == 0);
	CHECK((root = ro_root(dir, mk_none)));
	CHECK(resolv_conf_carry(src, root, run) == 0); /* read-only /etc without the file */
	CHECK(lstat(harness_path(root, "etc/resolv.conf"), &st) < 0);
	undo(root);
	harness_rmtree(dir);
}
