/* The state-disk tests inside a QEMU guest (test program, runs as /init of a test initrd):
 * the host has no usable device-mapper, the guest has Debian's kernel with dm-crypt and
 * dm-integrity. One boot runs one case, chosen on the kernel command line; the host script
 * (tests/vm/test_disk_vm.sh) boots the cases one after another on the same disk images and
 * compares what they print. Protocol on the console: @@INIT_START, @@RESULT name PASS|FAIL
 * detail, @@INIT_DONE rc=N (see qemu-tests/vm.py); @@DATA lines carry values for the host.
 *
 * Command line: disk.case=first|reboot|reset|refuse|bench|floor, disk.key=HEX (the test's 32-byte
 * cluster key), disk.dev=/dev/vdb (refuse, bench: several, comma separated), and the
 * agent's own constel.disk-kdf=min|constellation. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bearssl.h>
#include <libcryptsetup.h>

#include "base/base.h"
#include "boot/boot.h"
#include "guest.h"
#include "disk/disk.h"

#define MKE2FS	  "/sbin/mke2fs"
#define AGENT	  "/bin/constel-agent"
#define DATA_FILE DISK_MOUNT "/data.bin"

/* sha256 (hex) of len bytes of path from offset 0; len 0: the whole file. */
static int sha_file(const char *path, uint64_t len, char hex[65])
{
	br_sha256_context h;
	uint8_t buf[65536], d[32];
	uint64_t done = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	br_sha256_init(&h);
	for (;;) {
		size_t want = len && len - done < sizeof buf ? (size_t)(len - done) : sizeof buf;
		ssize_t n = want ? read(fd, buf, want) : 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		br_sha256_update(&h, buf, (size_t)n);
		done += (uint64_t)n;
	}
	close(fd);
	br_sha256_out(&h, d);
	hex_encode(d, 32, hex, 65);
	return 0;
}

/* The header area of a disk: both LUKS2 headers and the keyslot area (16 MiB by default). */
static int sha_header(const char *dev, char hex[65])
{
	return sha_file(dev, 16u << 20, hex);
}

static struct secret *key_arg(int flip)
{
	const char *h = guest_arg("disk.key", "");
	uint8_t k[DISK_KEY_LEN];
	size_t n = 0;
	struct secret *s;

	if (hex_decode(h, strlen(h), k, sizeof k, &n) < 0 || n != sizeof k)
		return NULL;
	if (flip)
		k[DISK_KEY_LEN - 1] ^= 1;
	s = secret_from(k, sizeof k);
	secret_wipe(k, sizeof k);
	return s;
}

static int run(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static const char *state_name(int r)
{
	return r == DISK_NEW		   ? "new"
	       : r == DISK_NOT_INITIALIZED ? "not-initialized"
	       : r == DISK_INITIALIZED	   ? "initialized"
					   : "refused";
}

/* First boot: format, filesystem, node state and data, then the key change. The host kills
 * the VM on the wipe line or on @@TOKEN_TRUE for its power-cut cases. */
static void case_first(const char *dev, enum disk_kdf kdf)
{
	struct secret *key = key_arg(0);
	struct disk d;
	uint8_t salt[32], data[1 << 16];
	char hex[65], err[256], old[DISK_KEY_LEN];
	int r, fd, ok;

	r = disk_classify(dev, NULL, err, sizeof err);
	printf("@@DATA found %s\n", state_name(r));

	r = disk_prepare(&d, dev, NULL, kdf);
	guest_result("format", r == DISK_NOT_INITIALIZED, "disk_prepare %d", r);
	if (r != DISK_NOT_INITIALIZED || !key)
		return;
	printf("@@DATA uuid %s\n@@DATA wipe_mbps %.1f\n", d.uuid,
	       d.wipe_ns ? (double)d.wipe_bytes * 1e3 / (double)d.wipe_ns : 0.0);
	r = disk_classify(dev, NULL, err, sizeof err);
	guest_result("token_false_after_format", r == DISK_NOT_INITIALIZED, "%s", state_name(r));
	guest_result("mapping_active", access("/dev/mapper/" DISK_MAPPING, F_OK) == 0, NULL);
	ok = disk_mkfs(MKE2FS, "/dev/mapper/" DISK_MAPPING) == 0 &&
	     mkdir_parents(DISK_MOUNT, 0755) == 0 &&
	     mount("/dev/mapper/" DISK_MAPPING, DISK_MOUNT, "ext4", 0, NULL) == 0;
	guest_result("ext4_mounted", ok, "%s", ok ? "" : strerror(errno));
	if (!ok)
		return;
	random_bytes(salt, sizeof salt);
	r = node_state_write(DISK_MOUNT "/" NODE_STATE_PATH, "Worker", salt);
	guest_result("node_state_written", r == 0, NULL);
	fd = open(DATA_FILE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	for (int i = 0; fd >= 0 && i < 16; i++) { /* 1 MiB the reboot must find again */
		random_bytes(data, sizeof data);
		if (write(fd, data, sizeof data) != (ssize_t)sizeof data)
			break;
	}
	ok = fd >= 0 && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	sha_file(DATA_FILE, 0, hex);
	printf("@@DATA data_sha %s\n", hex);
	hex_encode(salt, 32, hex, sizeof hex);
	printf("@@DATA salt %s\n", hex);
	ok = ok && umount(DISK_MOUNT) == 0;
	guest_result("data_written", ok, NULL);
	memcpy(old, d.pass->bytes, sizeof old);
	r = disk_set_key(&d, key);
	guest_result("key_change", r == 0, "%d", r);
	r = disk_classify(dev, NULL, err, sizeof err);
	guest_result("token_false_until_marked", r == DISK_NOT_INITIALIZED, "%s", state_name(r));
	r = disk_mark_initialized(&d);
	guest_result("mark_initialized", r == 0, "%d", r);
	r = disk_classify(dev, NULL, err, sizeof err);
	guest_result("token_true_after_key_change", r == DISK_INITIALIZED, "%s", state_name(r));
	if (r == DISK_INITIALIZED) {
		printf("@@TOKEN_TRUE\n");
		fflush(stdout);
		sync();
		sleep(1); /* the host's power cut lands here */
	}
	r = disk_check_key(&d, old, sizeof old);
	guest_result("old_passphrase_refused", r == -EPERM, "%d", r);
	secret_wipe(old, sizeof old);
	r = disk_check_key(&d, key->bytes, key->len);
	guest_result("new_key_opens", r == 0, "%d", r);
	disk_close(&d);
	guest_result("deactivate", disk_deactivate(DISK_MAPPING) == 0, NULL);
	secret_free(key);
}

/* Each entry point that could format must refuse an initialized disk, bytes unchanged. */
static void entry_points_refuse(const char *dev)
{
	char before[65], after[65];
	struct disk d;
	int r;

	sha_header(dev, before);
	r = disk_open(&d, dev, "entry", DISK_KDF_MIN);
	d.state = DISK_NOT_INITIALIZED; /* a caller holding a stale answer */
	r = r < 0 ? r : disk_format(&d);
	disk_close(&d);
	sha_header(dev, after);
	guest_result("entry_disk_format_refuses_initialized",
		     r == -EEXIST && !strcmp(before, after), "%d", r);
	r = disk_prepare(&d, dev, "entry", DISK_KDF_MIN);
	disk_close(&d);
	sha_header(dev, after);
	guest_result("entry_disk_prepare_leaves_initialized",
		     r == DISK_INITIALIZED && !strcmp(before, after) &&
			 access("/dev/mapper/entry", F_OK) != 0,
		     "%d", r);
	r = run((char *const[]){(char *)AGENT, (char *)"disk-prepare", (char *)dev,
				(char *)"--mapping", (char *)"entry", NULL});
	sha_header(dev, after);
	guest_result("entry_command_leaves_initialized", r == 0 && !strcmp(before, after),
		     "exit %d", r);
}

/* Reboot: the initialized disk opens with the key; a wrong key first changes nothing. */
static void case_reboot(const char *dev)
{
	struct secret *key = key_arg(0), *wrong = key_arg(1);
	char before[65], after[65], hex[65];
	uint8_t salt[32];
	struct disk d;
	int r, ok;

	if (!key || !wrong) {
		guest_result("key_argument", 0, "disk.key missing");
		return;
	}
	entry_points_refuse(dev);
	r = disk_open(&d, dev, NULL, DISK_KDF_MIN);
	guest_result("rejoin_path", r == DISK_INITIALIZED, "%s", state_name(r));
	if (r != DISK_INITIALIZED)
		return;
	printf("@@DATA uuid %s\n", d.uuid);
	sha_header(dev, before);
	r = disk_unlock(&d, wrong);
	sha_header(dev, after);
	guest_result("wrong_key_refused",
		     r == -EPERM && access("/dev/mapper/" DISK_MAPPING, F_OK) != 0, "%d", r);
	guest_result("wrong_key_changes_nothing", !strcmp(before, after), NULL);
	r = disk_unlock(&d, key);
	guest_result("unlock", r == 0, "%d", r);
	printf("@@DATA unlock_ms %.2f\n", (double)d.unlock_ns / 1e6);
	ok = r == 0 && mkdir_parents(DISK_MOUNT, 0755) == 0 &&
	     mount("/dev/mapper/" DISK_MAPPING, DISK_MOUNT, "ext4", MS_RDONLY, NULL) == 0;
	guest_result("mounted_read_only", ok, "%s", ok ? "" : strerror(errno));
	if (ok) {
		r = node_state_read(DISK_MOUNT "/" NODE_STATE_PATH, salt);
		guest_result("node_state_salt", r == 0, NULL);
		hex_encode(salt, 32, hex, sizeof hex);
		printf("@@DATA salt %s\n", hex);
		sha_file(DATA_FILE, 0, hex);
		printf("@@DATA data_sha %s\n", hex);
		umount(DISK_MOUNT);
	}
	disk_close(&d);
	guest_result("deactivate", disk_deactivate(DISK_MAPPING) == 0, NULL);
	secret_free(key);
	secret_free(wrong);
}

/* A fatal error after the lock: the disk is unlocked, then reset for the next boot. */
static void case_reset(const char *dev)
{
	struct secret *key = key_arg(0);
	char err[256];
	struct disk d;
	int r;

	r = disk_open(&d, dev, NULL, DISK_KDF_MIN);
	r = r == DISK_INITIALIZED && key ? disk_unlock(&d, key) : -EINVAL;
	disk_close(&d);
	guest_result("unlock_before_reset", r == 0, "%d", r);
	r = disk_reset(dev);
	guest_result("reset", r == 0, "%d", r);
	r = disk_classify(dev, NULL, err, sizeof err);
	guest_result("token_false_after_reset", r == DISK_NOT_INITIALIZED, "%s", state_name(r));
	disk_deactivate(DISK_MAPPING);
	secret_free(key);
}

/* Headers changed on the host: every entry point refuses, nothing is written (the host
 * compares the images). */
static void case_refuse(const char *devs)
{
	char list[512], *save = NULL;

	snprintf(list, sizeof list, "%s", devs);
	for (char *dev = strtok_r(list, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
		struct disk d;
		char name[80];
		int r1, r2, r3;

		r1 = disk_open(&d, dev, NULL, DISK_KDF_MIN);
		disk_close(&d);
		r2 = disk_prepare(&d, dev, NULL, DISK_KDF_MIN);
		disk_close(&d);
		r3 = run((char *const[]){(char *)AGENT, (char *)"disk-prepare", dev, NULL});
		snprintf(name, sizeof name, "refused_%s", strrchr(dev, '/') + 1);
		guest_result(name, r1 == -EINVAL && r2 == -EINVAL && r3 == 1, "%d %d exit %d", r1,
			     r2, r3);
	}
}

/* The bench: unlock time of our PBKDF against the Go disk-mapper's, on two disks formatted
 * in this boot, and the wipe throughput. */
static void case_bench(const char *devs)
{
	struct secret *key = key_arg(0);
	char list[512], *save = NULL, err[256];
	enum disk_kdf kdfs[2] = {DISK_KDF_MIN, DISK_KDF_CONSTELLATION};
	int i = 0;

	snprintf(list, sizeof list, "%s", devs);
	for (char *dev = strtok_r(list, ",", &save); dev && i < 2 && key;
	     dev = strtok_r(NULL, ",", &save), i++) {
		const char *kn = kdfs[i] == DISK_KDF_MIN ? "min" : "constellation";
		struct disk d;
		uint64_t best = UINT64_MAX;
		int r;

		r = disk_prepare(&d, dev, NULL, kdfs[i]);
		r = r == DISK_NOT_INITIALIZED ? disk_set_key(&d, key) : -1;
		r = r == 0 ? disk_mark_initialized(&d) : r;
		printf("@@DATA bench_%s_format_s %.2f\n@@DATA bench_%s_wipe_mbps %.1f\n", kn,
		       (double)d.format_ns / 1e9, kn,
		       d.wipe_ns ? (double)d.wipe_bytes * 1e3 / (double)d.wipe_ns : 0.0);
		disk_close(&d);
		disk_deactivate(DISK_MAPPING);
		r = r == 0 ? disk_classify(dev, NULL, err, sizeof err) : r;
		guest_result(kdfs[i] == DISK_KDF_MIN ? "bench_min_header_passes_check"
						     : "bench_constellation_header_passes_check",
			     r == DISK_INITIALIZED, "%s", r < 0 ? err : "");
		printf("@@DATA bench_%s_unlock_samples_ms ", kn);
		for (int k = 0; k < 5 && r == DISK_INITIALIZED; k++) { /* keyslot unlock */
			disk_open(&d, dev, NULL, kdfs[i]);
			if (disk_check_key(&d, key->bytes, key->len) == 0) {
				printf("%s%.2f", k ? "," : "", (double)d.unlock_ns / 1e6);
				if (d.unlock_ns < best)
					best = d.unlock_ns;
			}
			disk_close(&d);
		}
		printf("\n@@DATA bench_%s_unlock_ms %.2f\n", kn, (double)best / 1e6);
		if (r == DISK_INITIALIZED &&
		    disk_open(&d, dev, NULL, kdfs[i]) == DISK_INITIALIZED &&
		    disk_unlock(&d, key) == 0)
			printf("@@DATA bench_%s_activate_ms %.2f\n", kn, (double)d.unlock_ns / 1e6);
		disk_close(&d);
		disk_deactivate(DISK_MAPPING);
	}
	secret_free(key);
}

/* The wipe's floor (tests/bench/first-boot.sh): on a blank disk, the data area written twice
 * through the same stack (dm-crypt on dm-integrity without journal, 4096-byte sectors):
 * once by disk_wipe (libcryptsetup's crypt_wipe, as the agent does), once as
 * `dd if=/dev/zero of=/dev/mapper/X bs=1M oflag=direct` would, 1 MiB writes from a buffer of
 * zeros, then fsync. */
static void case_floor(const char *dev)
{
	static const char name[] = "floor-dd";
	char path[64];
	struct disk d;
	uint64_t t0, bytes = 0;
	void *buf = NULL;
	int fd, r;

	r = disk_open(&d, dev, NULL, DISK_KDF_MIN);
	r = r == DISK_NEW ? disk_format_header(&d) : -EEXIST;
	r = r == 0 ? disk_wipe(&d, -1) : r;
	guest_result("floor_wipe", r == 0, "%d", r);
	printf("@@DATA floor_wipe_mib %llu\n@@DATA floor_wipe_s %.2f\n",
	       (unsigned long long)(d.wipe_bytes >> 20), (double)d.wipe_ns / 1e9);
	r = r == 0 ? crypt_activate_by_volume_key(
			 d.cd, name, NULL, 0, CRYPT_ACTIVATE_PRIVATE | CRYPT_ACTIVATE_NO_JOURNAL)
		   : r;
	snprintf(path, sizeof path, "/dev/mapper/%s", name);
	fd = r >= 0 ? open(path, O_WRONLY | O_DIRECT | O_CLOEXEC) : -1;
	if (fd >= 0 && posix_memalign(&buf, 4096, 1 << 20) == 0) {
		memset(buf, 0, 1 << 20);
		t0 = monotonic_ns();
		for (ssize_t k; (k = write(fd, buf, 1 << 20)) > 0;)
			bytes += (uint64_t)k;
		fsync(fd);
		printf("@@DATA floor_dd_mib %llu\n@@DATA floor_dd_s %.2f\n",
		       (unsigned long long)(bytes >> 20), (double)(monotonic_ns() - t0) / 1e9);
	}
	guest_result("floor_dd", fd >= 0 && bytes > 0, "%d", r);
	if (fd >= 0)
		close(fd);
	free(buf);
	disk_deactivate(name);
	disk_close(&d);
}

int main(void)
{
	enum disk_kdf kdf = DISK_KDF_MIN;
	const char *c, *dev;

	guest_start("guest", 1);
	log_set_level(atoi(guest_arg("disk.v", "0")));
	modules_load_list("/etc/modules.list");
	if (!strcmp(guest_arg("disk.tpm", "0"), "1")) /* the harness attached swtpm */
		guest_result("tpm_device_present", access("/dev/tpmrm0", F_OK) == 0, NULL);
	c = guest_arg("disk.case", "");
	dev = guest_arg("disk.dev", "/dev/vdb");
	if (disk_kdf_parse(guest_arg("constel.disk-kdf", "min"), &kdf) < 0)
		guest_result("kdf", 0, "constel.disk-kdf: min or constellation");
	if (!strcmp(c, "first"))
		case_first(dev, kdf);
	else if (!strcmp(c, "reboot"))
		case_reboot(dev);
	else if (!strcmp(c, "reset"))
		case_reset(dev);
	else if (!strcmp(c, "refuse"))
		case_refuse(dev);
	else if (!strcmp(c, "bench"))
		case_bench(dev);
	else if (!strcmp(c, "floor"))
		case_floor(dev);
	else
		guest_result("case", 0, "unknown disk.case '%s'", c);
	guest_done();
}
