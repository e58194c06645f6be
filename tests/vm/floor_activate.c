/* The floor of the rejoin boot's no-peer phases root, disk and activate (test program, runs as
 * /init of a test initrd; tests/bench/floor-vm.sh boots it on a node's machine). In a rejoin
 * boot the agent mounts the real root read-only (root), checks the state disk's header (disk),
 * and after the rejoin ticket (activate, agent/flow/node.c) unlocks the state disk with the key
 * (libcryptsetup: keyslot with argon2id, AF merge, digest; dm-integrity and dm-crypt tables),
 * mounts its ext4, reads the node-state file, marks PCR 15, then switches to the real root,
 * sets the hostname and starts containerd and kubelet.
 *
 * floor.way=setup makes a state disk the way a node's first boot leaves it, with the agent's
 * disk code (argon2id at least cost, ext4, the node-state file, keyslot 0 changed to the key,
 * token initialized). Each later boot first does what the boot did before these phases (the
 * modules, the root mounted read-only: timed, the root floor; PCR 15 read), then floor.n rounds
 * (the first one cold, as in a boot) of one way on that disk:
 *   floor  only the calls the work needs: disk: libcryptsetup crypt_init + crypt_load;
 *          activate: crypt_activate_by_passphrase with the key (keyslot and tables, the
 *          agent's flags), mount(2), one read of the node-state file, one TPM2_PCR_Event
 *          written to /dev/tpmrm0 by hand (PCR 16, the resettable debug PCR);
 *   split  the floor with the keyslot (crypt_volume_key_get) and the tables
 *          (crypt_activate_by_volume_key) timed apart, for the breakdown;
 *   agent  the agent's own code for the same steps: disk_open; disk_unlock, the same mount,
 *          node_state_read, tpm_open + tpm_pcr_event.
 * Between the disk and the activate steps the guest idles floor.gap_ms (default 250: about the
 * metadata and rejoin phases of a boot), as the agent's boot gives the kernel that time for its
 * background work. Between rounds the mount and the mapping are removed (not timed). The times come
 * out as
 * "@@DATA floor_<way>_<step>_ms t1,t2,..." lines. switch_root, the hostname and the services
 * have no floor here: the bench counts them as the agent's own work.
 *
 * Command line: floor.way=setup|floor|split|agent, floor.dev=/dev/vdb, floor.key=HEX (32 bytes),
 * floor.n=ROUNDS (default 3), floor.gap_ms=MS (default 250). The real root is /dev/vda (ext4). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libcryptsetup.h>

#include "base/base.h"
#include "boot/boot.h"
#include "disk/disk.h"
#include "guest.h"
#include "tpm/tpm.h"

#define MKE2FS	   "/sbin/mke2fs"
#define MAPPER	   "/dev/mapper/" DISK_MAPPING
#define STATE_FILE DISK_MOUNT "/" NODE_STATE_PATH
#define TPM_DEV	   "/dev/tpmrm0"
#define ROUNDS_MAX 20
#define FLAGS	   (CRYPT_ACTIVATE_NO_READ_WORKQUEUE | CRYPT_ACTIVATE_NO_WRITE_WORKQUEUE)

enum { S_DISK, S_KEYSLOT, S_TABLES, S_MOUNT, S_READ, S_TPM, S_ACTIVATE, N_STEPS };
static const char *const step_name[N_STEPS] = {"disk", "keyslot", "tables",  "mount",
					       "read", "tpm",	  "activate"};
enum { W_FLOOR, W_SPLIT, W_AGENT, N_WAYS };
static const char *const way_name[N_WAYS] = {"floor", "split", "agent"};

static double ms[N_WAYS][N_STEPS][ROUNDS_MAX];
static double root_ms;
static int gap_ms; /* the peer-bound phases' time between disk and activate, idle here */
static uint8_t key[DISK_KEY_LEN];

static double since(uint64_t *t)
{
	uint64_t now = monotonic_ns();
	double d = (double)(now - *t) / 1e6;

	*t = now;
	return d;
}

/* One TPM command as raw bytes through the kernel's resource manager; 0 when the TPM
 * answered TPM_RC_SUCCESS. */
static int tpm_raw(const uint8_t *cmd, size_t len)
{
	uint8_t rsp[4096];
	ssize_t n;
	int fd = open(TPM_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = write(fd, cmd, len);
	n = n == (ssize_t)len ? read(fd, rsp, sizeof rsp) : -1;
	close(fd);
	if (n < 10)
		return -EIO;
	return rsp[6] | rsp[7] | rsp[8] | rsp[9] ? -EIO : 0;
}

/* TPM2_PCR_Event on PCR 16 (the resettable debug PCR) with a password session and 32 bytes of
 * event data: the TPM's part of the node lock's mark, nothing else. */
static int tpm_event_raw(void)
{
	uint8_t cmd[61] = {
	    0x80, 0x02, 0, 0,  0,    61, 0, 0, 0x01, 0x3c,	    /* ST_SESSIONS, PCR_Event */
	    0,	  0,	0, 16,					    /* PCR 16 */
	    0,	  0,	0, 9,  0x40, 0,	 0, 9, 0,    0,	   0, 0, 0, /* TPM_RS_PW */
	    0,	  32};

	memset(cmd + 29, 0x5a, 32);
	return tpm_raw(cmd, sizeof cmd);
}

/* TPM2_PCR_Read of PCR 15 in SHA-256: what the node-lock check before the root reads. */
static int tpm_read_raw(void)
{
	static const uint8_t cmd[20] = {0x80, 0x01, 0, 0, 0, 20,   0, 0, 0x01, 0x7e, /* PCR_Read */
					0,    0,    0, 1, 0, 0x0b, 3, 0, 0x80, 0};

	return tpm_raw(cmd, sizeof cmd);
}

/* The rejoin's place between the disk and activate steps: the guest idles (the kernel's
 * background work gets the CPU, as it does while the agent waits for its peers); untimed. */
static void gap(uint64_t *t)
{
	struct timespec ts = {gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L};

	while (gap_ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	*t = monotonic_ns();
}

static int read_small(const char *path)
{
	char buf[512];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read_full(fd, buf, sizeof buf);
	close(fd);
	return n > 0 ? 0 : -EIO;
}

static void teardown(void)
{
	umount(DISK_MOUNT);
	disk_deactivate(DISK_MAPPING);
}

/* The floor: only the calls the work needs. disk: the header loaded and checked by
 * libcryptsetup; activate: the key through the keyslot and the tables (the agent's flags) in
 * one call, the mount, the node-state file, the PCR mark. split: the same with the keyslot
 * (crypt_volume_key_get) and the tables (crypt_activate_by_volume_key, which checks the
 * volume key's digest once more) timed apart. */
static int round_lib(const char *dev, int i, int w)
{
	double *m[N_STEPS];
	struct crypt_device *cd = NULL;
	char vk[256];
	size_t vklen = sizeof vk;
	uint64_t t = monotonic_ns(), t1;
	int r;

	for (int s = 0; s < N_STEPS; s++)
		m[s] = &ms[w][s][i];
	if ((r = crypt_init(&cd, dev)) < 0)
		return r;
	crypt_metadata_locking(cd, 0);
	if ((r = crypt_load(cd, CRYPT_LUKS2, NULL)) < 0)
		goto out;
	*m[S_DISK] = since(&t);
	gap(&t);
	t1 = t;
	if (w == W_FLOOR) {
		r = crypt_activate_by_passphrase(cd, DISK_MAPPING, CRYPT_ANY_SLOT,
						 (const char *)key, sizeof key, FLAGS);
		if (r < 0)
			goto out;
		*m[S_KEYSLOT] = since(&t); /* keyslot and tables */
	} else {
		r = crypt_volume_key_get(cd, CRYPT_ANY_SLOT, vk, &vklen, (const char *)key,
					 sizeof key);
		if (r < 0)
			goto out;
		*m[S_KEYSLOT] = since(&t);
		r = crypt_activate_by_volume_key(cd, DISK_MAPPING, vk, vklen, FLAGS);
		secret_wipe(vk, sizeof vk);
		if (r < 0)
			goto out;
		*m[S_TABLES] = since(&t);
	}
	if (mount(MAPPER, DISK_MOUNT, "ext4", 0, NULL) < 0) {
		r = -errno;
		goto out;
	}
	*m[S_MOUNT] = since(&t);
	if ((r = read_small(STATE_FILE)) < 0)
		goto out;
	*m[S_READ] = since(&t);
	if ((r = tpm_event_raw()) < 0)
		goto out;
	*m[S_TPM] = since(&t);
	*m[S_ACTIVATE] = (double)(t - t1) / 1e6;
out:
	if (cd)
		crypt_free(cd);
	secret_wipe(vk, sizeof vk);
	return r < 0 ? r : 0;
}

static int round_floor(const char *dev, int i)
{
	return round_lib(dev, i, W_FLOOR);
}

static int round_split(const char *dev, int i)
{
	return round_lib(dev, i, W_SPLIT);
}

/* The agent's code for the same steps (agent/disk, agent/flow/node_ops.c, agent/flow/lock.c):
 * disk: disk_open, as the disk phase calls it; activate: disk_unlock (keyslot and tables in
 * one, with whatever the agent adds), the same mount, node_state_read, tpm_open +
 * tpm_pcr_event. */
static int round_agent(const char *dev, int i)
{
	static struct tcti_spec tpm;
	static int parsed;
	struct secret *k = secret_from(key, sizeof key);
	uint8_t salt[32];
	struct disk d;
	struct tpm *tp;
	char err[200];
	uint64_t t = monotonic_ns(), t1;
	int r;

	if (!k)
		return -ENOMEM;
	r = disk_open(&d, dev, NULL, DISK_KDF_MIN);
	if (r != DISK_INITIALIZED) {
		r = r < 0 ? r : -EINVAL;
		goto out;
	}
	ms[W_AGENT][S_DISK][i] = since(&t);
	gap(&t);
	t1 = t;
	if ((r = disk_unlock(&d, k)) < 0)
		goto out;
	ms[W_AGENT][S_KEYSLOT][i] = since(&t);
	if (mount(MAPPER, DISK_MOUNT, "ext4", 0, NULL) < 0) {
		r = log_err(-errno, "mounting %s", MAPPER);
		goto out;
	}
	ms[W_AGENT][S_MOUNT][i] = since(&t);
	if ((r = node_state_read(STATE_FILE, salt)) < 0)
		goto out;
	ms[W_AGENT][S_READ][i] = since(&t);
	if (!parsed && (r = tcti_spec_parse("device:" TPM_DEV, &tpm, err, sizeof err)) < 0)
		goto out;
	parsed = 1;
	if ((r = tpm_open(&tpm, &tp, err, sizeof err)) < 0)
		goto out;
	r = tpm_pcr_event(tp, 16, salt, 32);
	tpm_close(tp);
	if (r < 0)
		goto out;
	ms[W_AGENT][S_TPM][i] = since(&t);
	ms[W_AGENT][S_ACTIVATE][i] = (double)(t - t1) / 1e6;
out:
	disk_close(&d);
	secret_free(k);
	return r < 0 ? r : 0;
}

/* The state disk as a node's first boot leaves it, made by the agent's disk code. */
static int setup(const char *dev)
{
	struct secret *k = secret_from(key, sizeof key);
	uint8_t salt[32];
	struct disk d;
	int r;

	if (!k)
		return -ENOMEM;
	r = disk_prepare(&d, dev, NULL, DISK_KDF_MIN);
	if (r != DISK_NOT_INITIALIZED) {
		r = r < 0 ? r : -EEXIST;
		goto out;
	}
	random_bytes(salt, sizeof salt);
	if ((r = disk_mkfs(MKE2FS, MAPPER)) < 0 || (r = mkdir_parents(DISK_MOUNT, 0755)) < 0)
		goto out;
	if (mount(MAPPER, DISK_MOUNT, "ext4", 0, NULL) < 0) {
		r = -errno;
		goto out;
	}
	r = node_state_write(STATE_FILE, "Worker", salt);
	if (umount(DISK_MOUNT) < 0 && r == 0)
		r = -errno;
	if (r == 0 && (r = disk_set_key(&d, k)) == 0)
		r = disk_mark_initialized(&d);
out:
	disk_close(&d);
	disk_deactivate(DISK_MAPPING);
	secret_free(k);
	return r;
}

static void print_way(int w, int n)
{
	for (int s = 0; s < N_STEPS; s++) {
		char line[ROUNDS_MAX * 12] = "";
		size_t off = 0;
		int any = 0;

		for (int i = 0; i < n; i++)
			any |= ms[w][s][i] > 0;
		if (!any)
			continue;
		for (int i = 0; i < n && off < sizeof line; i++)
			off += (size_t)snprintf(line + off, sizeof line - off, "%s%.2f",
						i ? "," : "", ms[w][s][i]);
		printf("@@DATA floor_%s_%s_ms %s\n", way_name[w], step_name[s], line);
	}
}

int main(void)
{
	static int (*const way_fn[N_WAYS])(const char *, int) = {round_floor, round_split,
								 round_agent};
	const char *dev, *hex, *way;
	size_t klen = 0;
	int n, w, r;

	guest_start("floor_activate", 1);
	modules_load_list("/etc/modules.list");
	dev = guest_arg("floor.dev", "/dev/vdb");
	hex = guest_arg("floor.key", "");
	way = guest_arg("floor.way", "setup");
	n = atoi(guest_arg("floor.n", "3"));
	gap_ms = atoi(guest_arg("floor.gap_ms", "250"));
	if (gap_ms < 0 || gap_ms > 10000)
		gap_ms = 250;
	if (n < 1 || n > ROUNDS_MAX)
		n = 3;
	if (hex_decode(hex, strlen(hex), key, sizeof key, &klen) < 0 || klen != sizeof key) {
		guest_result("key", 0, "floor.key must be 64 hex digits");
		guest_done();
	}
	disk_crypt_log_setup();
	mkdir_parents(DISK_MOUNT, 0755);
	if (!strcmp(way, "setup")) {
		r = setup(dev);
		guest_result("setup", r == 0, "state disk made by the agent's disk code: %d", r);
		guest_done();
	}
	for (w = 0; w < N_WAYS && strcmp(way, way_name[w]); w++)
		;
	if (w == N_WAYS) {
		guest_result("way", 0, "floor.way must be setup, floor, split or agent");
		guest_done();
	}
	/* what the boot did before: the real root mounted read-only (the root phase, same call
	 * both ways, timed), PCR 15 read (the node-lock check, untimed) */
	mkdir("/sysroot", 0755);
	{
		uint64_t t = monotonic_ns();

		r = mount("/dev/vda", "/sysroot", "ext4", MS_RDONLY, NULL);
		root_ms = since(&t);
	}
	if (r < 0 || tpm_read_raw() < 0) {
		guest_result("prelude", 0, "root mount %d (%s), PCR read", r, strerror(errno));
		guest_done();
	}
	printf("@@DATA floor_%s_root_ms %.2f\n", way, root_ms);
	for (int i = 0; i < n; i++) {
		r = way_fn[w](dev, i);
		teardown();
		if (r < 0) {
			guest_result("round", 0, "round %d, %s: %s", i + 1, way, strerror(-r));
			guest_done();
		}
	}
	guest_result("rounds", 1, "%d rounds of %s, the first one cold", n, way);
	print_way(w, n);
	guest_done();
}
