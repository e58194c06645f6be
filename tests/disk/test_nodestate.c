/* The node-state file of spec §6.5 (written as Go's json.MarshalIndent with tabs, read back
 * with a strict 32-byte salt), the PBKDF option and the state-disk lookup of §6.1. The disk
 * operations themselves need device-mapper and run in the guest (tests/vm). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "disk/disk.h"
#include "harness.h"

static char dir[64];

static void tmpdir(void)
{
	snprintf(dir, sizeof dir, "/tmp/constel-ns-XXXXXX");
	if (!mkdtemp(dir))
		abort();
}

TEST(node_state_is_written_as_go_marshal_indent_with_mode_0600)
{
	uint8_t salt[32];
	char path[128], buf[512];
	struct stat st;
	ssize_t n;
	int fd;

	for (int i = 0; i < 32; i++)
		salt[i] = (uint8_t)i;
	tmpdir();
	snprintf(path, sizeof path, "%s/constellation/node_state.json", dir);
	CHECK(node_state_write(path, "ControlPlane", salt) == 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	CHECK(n > 0);
	buf[n] = 0;
	CHECK(!strcmp(buf, "{\n\t\"Role\": \"ControlPlane\",\n\t\"MeasurementSalt\": "
			   "\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"\n}"));
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	/* written again (a second init on a reformatted disk): replaced whole */
	CHECK(node_state_write(path, "Worker", salt) == 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	CHECK(node_state_write(path, "worker", salt) == -EINVAL);
	unlink(path);
	snprintf(path, sizeof path, "%s/constellation", dir);
	rmdir(path);
	rmdir(dir);
}

TEST(node_state_read_round_trips_the_salt)
{
	uint8_t salt[32], got[32] = {0};
	char path[128];

	for (int i = 0; i < 32; i++)
		salt[i] = (uint8_t)(0xa0 + i);
	tmpdir();
	snprintf(path, sizeof path, "%s/node_state.json", dir);
	CHECK(node_state_write(path, "Worker", salt) == 0);
	CHECK(node_state_read(path, got) == 0);
	CHECK_BYTES(got, salt, 32);
	unlink(path);
	rmdir(dir);
}

TEST(node_state_parse_wants_exactly_32_salt_bytes)
{
	static const char *const bad[] = {
	    "",
	    "{}",
	    "[1]",
	    "{\"MeasurementSalt\": 5}",
	    "{\"MeasurementSalt\": \"AAEC\"}", /* 3 bytes */
	    "{\"MeasurementSalt\": "
	    "\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIQ==\"}",		      /* 34 bytes */
	    "{\"MeasurementSalt\": \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\"}", /* no pad */
	    "{\"MeasurementSalt\": \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"} x",
	};
	const char *good = "{\"Role\":\"Worker\",\"Extra\":1,\"MeasurementSalt\":"
			   "\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"}";
	uint8_t salt[32];
	char err[160];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		CHECK(node_state_parse(bad[i], strlen(bad[i]), salt, err, sizeof err) == -EINVAL);
		CHECK(!strncmp(err, "node state: ", 12) && !strchr(err, '\n'));
	}
	CHECK(node_state_parse(good, strlen(good), salt, err, sizeof err) == 0);
	CHECK(salt[0] == 0 && salt[31] == 31);
}

TEST(disk_kdf_parse_knows_min_and_constellation)
{
	enum disk_kdf k = DISK_KDF_CONSTELLATION;

	CHECK(disk_kdf_parse("min", &k) == 0 && k == DISK_KDF_MIN);
	CHECK(disk_kdf_parse("constellation", &k) == 0 && k == DISK_KDF_CONSTELLATION);
	CHECK(disk_kdf_parse("fast", &k) == -EINVAL);
	CHECK(disk_kdf_parse("", &k) == -EINVAL);
}

TEST(disk_find_resolves_the_override_and_refuses_unknown_csps)
{
	char target[128], link[128], out[PATH_MAX];
	int fd;

	tmpdir();
	snprintf(target, sizeof target, "%s/disk", dir);
	snprintf(link, sizeof link, "%s/by-id", dir);
	fd = open(target, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK(symlink(target, link) == 0);
	CHECK(disk_find("qemu", link, out, sizeof out) == 0);
	CHECK(!strcmp(out, target));
	CHECK(disk_find("vsphere", NULL, out, sizeof out) == -ENOENT);
	CHECK(disk_find(NULL, NULL, out, sizeof out) == -ENOENT);
	CHECK(disk_find("qemu", link, out, 8) == -ENAMETOOLONG);
	unlink(link);
	unlink(target);
	CHECK(disk_find("qemu", link, out, sizeof out) == -ENOENT);
	rmdir(dir);
}
