/* The state disk through libcryptsetup (spec §6.1, §6.3, §6.4, §5.4 step 4): format on first
 * boot, keyslot 0 from the temporary passphrase to the cluster's key, unlock on reboot, the
 * reset after a fatal error. Every decision starts from a read of the header checked by
 * luks2_classify(); libcryptsetup loads exactly the bytes of that read, never the disk's
 * header again (see read_checked). */
#define _GNU_SOURCE /* memfd_create, SEEK_DATA */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libcryptsetup.h>

#include "base/base.h"
#include "disk.h"

#define WIPE_BLOCK	  (64u << 20) /* the Go disk-mapper's wipe block */
#define WIPE_MAPPING	  "tmp-cryptsetup-integrity"
#define PROGRESS_EVERY_NS (5ull * 1000000000ull)

/* Activation flags of the state mapping (§6.3 step 6), also on the reboot path. */
#define STATE_FLAGS (CRYPT_ACTIVATE_NO_READ_WORKQUEUE | CRYPT_ACTIVATE_NO_WRITE_WORKQUEUE)

static const char token_json[2][80] = {
    "{\"type\":\"constellation-state-disk\",\"keyslots\":[],\"diskIsInitialized\":false}",
    "{\"type\":\"constellation-state-disk\",\"keyslots\":[],\"diskIsInitialized\":true}",
};

/* libcryptsetup's own messages are details behind our one line: debug level only. They never
 * carry key material. */
static void cs_log(int level, const char *msg, void *usrptr)
{
	size_t n = strlen(msg);

	(void)usrptr;
	if (level == CRYPT_LOG_DEBUG)
		return;
	while (n && msg[n - 1] == '\n')
		n--;
	log_debug("libcryptsetup: %.*s", (int)n, msg);
}

void disk_crypt_log_setup(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	crypt_set_log_callback(NULL, cs_log, NULL);
}

int disk_kdf_parse(const char *s, enum disk_kdf *kdf)
{
	if (!strcmp(s, "min"))
		*kdf = DISK_KDF_MIN;
	else if (!strcmp(s, "constellation"))
		*kdf = DISK_KDF_CONSTELLATION;
	else
		return -EINVAL;
	return 0;
}

static const struct crypt_pbkdf_type *pbkdf_of(enum disk_kdf kdf)
{
	/* libcryptsetup's least argon2 cost: 4 iterations, 32 KiB, 1 thread, no benchmark. */
	static const struct crypt_pbkdf_type min = {
	    .type = CRYPT_KDF_ARGON2ID,
	    .hash = "sha256",
	    .iterations = 4,
	    .max_memory_kb = 32,
	    .parallel_threads = 1,
	    .flags = CRYPT_PBKDF_NO_BENCHMARK,
	};
	/* The Go disk-mapper's: benchmarked towards 2 s within 64 MiB and 4 threads. */
	static const struct crypt_pbkdf_type constellation = {
	    .type = CRYPT_KDF_ARGON2ID,
	    .hash = "sha256",
	    .time_ms = 2000,
	    .iterations = 3,
	    .max_memory_kb = 65536,
	    .parallel_threads = 4,
	};

	return kdf == DISK_KDF_CONSTELLATION ? &constellation : &min;
}

int disk_wipe_parse(const char *s, enum disk_wipe *w)
{
	if (!strcmp(s, "full"))
		*w = DISK_WIPE_FULL;
	else if (!strcmp(s, "sync"))
		*w = DISK_WIPE_SYNC;
	else if (!strcmp(s, "none"))
		*w = DISK_WIPE_NONE;
	else
		return -EINVAL;
	return 0;
}

int disk_find(const char *csp, const char *override, char *out, size_t outlen)
{
	static const struct {
		const char *csp, *path;
	} table[] = {
	    {"qemu", "/dev/vdb"},
	    {"openstack", "/dev/vdb"},
	    {"aws", "/dev/sdb"},
	    {"azure", "/dev/disk/azure/scsi1/lun0"},
	    {"gcp", "/dev/disk/by-id/google-state-disk"},
	};
	const char *path = override && *override ? override : NULL;
	char real[PATH_MAX];

	for (size_t i = 0; !path && csp && i < sizeof table / sizeof table[0]; i++)
		if (!strcmp(csp, table[i].csp))
			path = table[i].path;
	if (!path)
		return log_err(-ENOENT, "disk: no state disk known for CSP '%.32s'",
			       csp ? csp : "(none)");
	if (!realpath(path, real))
		return log_err(-errno, "disk: state disk %s", path);
	if (strlen(real) >= outlen)
		return log_err(-ENAMETOOLONG, "disk: state disk %s: path too long", path);
	strcpy(out, real);
	return 0;
}

/* The binary header's hdr_size when buf starts with a primary LUKS2 magic and a size in
 * range, else 0. Only a hint for how much to read: luks2_classify checks it. */
static size_t primary_size(const uint8_t *buf, size_t len)
{
	uint64_t size = 0;

	if (len < 4096 || memcmp(buf, "LUKS\xba\xbe", 6))
		return 0;
	for (int i = 8; i < 16; i++)
		size = size << 8 | buf[i];
	return size >= 16384 && size <= LUKS2_HDR_MAX && size % 4096 == 0 ? (size_t)size : 0;
}

/* Reads the headers from fd and classifies them; the bytes read stay in *bufp (*np of them,
 * the caller frees). With an intact primary of hdr_size S, the secondary sits at S with the
 * same size (§6.2), so the first 2 S bytes (32 KiB for our disks) decide exactly as the whole
 * 8 MiB would: luks2_classify reads nothing beyond the two copies when the primary is valid.
 * Only when the prefix shows a missing or damaged copy (the secondary is then searched up to
 * 4 MiB) or a refusal is the whole area read and classified again. */
static int classify_fd(int fd, const char *path, uint8_t **bufp, size_t *np,
		       struct luks2_info *info, char *err, size_t errlen)
{
	size_t cap = 2 * (size_t)LUKS2_HDR_MAX, want;
	struct luks2_info local = {0};
	uint8_t *buf;
	ssize_t n, m = 0;
	int r = -EINVAL;

	buf = malloc(cap);
	/* a copy of the headers: only read */
	n = buf ? read_full(fd, buf, 4096) : -ENOMEM;
	want = n == 4096 ? 2 * primary_size(buf, 4096) : 0;
	if (want) {
		m = read_full(fd, buf + 4096, want - 4096);
		if (m >= 0) {
			n += m;
			r = luks2_classify(buf, (size_t)n, &local, err, errlen);
		}
	}
	if (n >= 0 && m >= 0 && (!want || r < 0 || local.damaged)) {
		m = (size_t)n < cap ? read_full(fd, buf + n, cap - (size_t)n) : 0;
		if (m >= 0) {
			n += m;
			r = luks2_classify(buf, (size_t)n, &local, err, errlen);
		}
	}
	if (n < 0 || m < 0) {
		free(buf);
		n = n < 0 ? n : m;
		return errbuf_set(err, errlen, "%s: read: %s", path, strerror((int)-n)), (int)n;
	}
	*bufp = buf;
	*np = (size_t)n;
	if (info && r >= 0)
		*info = local;
	return r;
}

int disk_classify(const char *path, struct luks2_info *info, char *err, size_t errlen)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return r = -errno, errbuf_set(err, errlen, "%s: %s", path, strerror(-r)), r;
	r = classify_fd(fd, path, &buf, &n, info, err, errlen);
	close(fd);
	free(buf);
	return r;
}

/* ---- libcryptsetup loads the bytes the check read, never the disk's header again ----
 *
 * The disk belongs to the host, which can answer two reads of the same sector differently:
 * checking one read and letting libcryptsetup read the header again (crypt_init on the disk,
 * crypt_load) loads whatever the second read returns. So libcryptsetup never gets the disk as
 * its header device. It gets a detached header (crypt_init_data_device): a memfd holding the
 * bytes classify_fd read and checked (both copies, as read), and the keyslot areas the
 * checked JSON names, read once right after at the same offsets; the disk is only its data
 * device. What libcryptsetup 2.6 reads of the header, it reads from the metadata device: the
 * load (crypt_load, both copies and the secondary scan), the recovery of a damaged copy
 * (crypt_repair), the keyslot areas when a key is checked, and the sequence-number check
 * before a write (which metadata locking off skips anyway). Of the data device it reads only
 * the size and, for an integrity segment, the dm-integrity superblock the kernel reads too.
 * Its header writes (the token, the repair) land in the memfd; hdr_write_back copies them to
 * the disk. Keyslot areas are decrypted through AF_ALG (algif_skcipher is in the initrd); the
 * fallback, a temporary dm-crypt mapping, needs a block device and would fail on the memfd,
 * not read the disk. Formatting is the one exception, and safe: crypt_format writes a new
 * header without reading the old one, and the handle keeps the header it made in memory. */

/* Frees the handle and the detached header. */
static void hdr_drop(struct disk *d)
{
	if (d->cd)
		crypt_free(d->cd);
	d->cd = NULL;
	if (d->hdr_fd > 0)
		close(d->hdr_fd - 1);
	d->hdr_fd = 0;
	d->hdr_area = 0;
}

static int pwrite_all(int fd, const uint8_t *p, size_t len, off_t off)
{
	while (len) {
		ssize_t w = pwrite(fd, p, len, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
		off += w;
	}
	return 0;
}

/* Copies [from, to) of in to the same offsets of out, through buf (cap bytes). */
static int copy_range(int in, int out, uint64_t from, uint64_t to, uint8_t *buf, size_t cap)
{
	while (from < to) {
		size_t want = to - from < cap ? (size_t)(to - from) : cap;
		ssize_t n = pread(in, buf, want, (off_t)from);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		if ((r = pwrite_all(out, buf, (size_t)n, (off_t)from)) < 0)
			return r;
		from += (uint64_t)n;
	}
	return 0;
}

static void hdr_dev_path(const struct disk *d, char *out, size_t len)
{
	snprintf(out, len, "/proc/self/fd/%d", d->hdr_fd - 1);
}

/* One read of the disk's headers, checked; when its state is load_if, libcryptsetup gets
 * exactly those bytes as a detached header (d->cd, d->hdr_fd). want >= 0: any other state is
 * refused with -ESTALE. Returns the enum disk_state or a negative errno with one line
 * in err; nothing is written to the disk. */
static int read_checked(struct disk *d, int want, int load_if, struct luks2_info *info, char *err,
			size_t errlen)
{
	struct luks2_info local = {0};
	char hp[32];
	uint8_t *buf = NULL;
	size_t n = 0;
	uint64_t size;
	int fd, mfd = -1, r, st;

	hdr_drop(d);
	fd = open(d->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return r = -errno, errbuf_set(err, errlen, "%s: %s", d->path, strerror(-r)), r;
	st = r = classify_fd(fd, d->path, &buf, &n, &local, err, errlen);
	if (r >= 0 && want >= 0 && r != want)
		r = (errbuf_set(err, errlen, "the header changed since it was read"), -ESTALE);
	if (r < 0 || r != load_if || r == DISK_NEW)
		goto out;
	size = 2 * local.hdr_size + local.keyslots_size;
	mfd = memfd_create("luks2-header", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, (off_t)(size > n ? size : n)) < 0 ||
	    (r = pwrite_all(mfd, buf, n, 0)) < 0 ||
	    (local.areas_end > n &&
	     (r = copy_range(fd, mfd, n, local.areas_end, buf, 2 * (size_t)LUKS2_HDR_MAX)) < 0)) {
		r = r < 0 ? r : -errno;
		errbuf_set(err, errlen, "copying the checked header: %s", strerror(-r));
		goto out;
	}
	d->hdr_fd = mfd + 1;
	d->hdr_area = size;
	mfd = -1;
	hdr_dev_path(d, hp, sizeof hp);
	r = crypt_init_data_device(&d->cd, hp, d->path);
	if (r == 0) {
		crypt_metadata_locking(d->cd, 0); /* the agent is the only user of the disk */
		r = crypt_load(d->cd, CRYPT_LUKS2, NULL);
	} else
		d->cd = NULL;
	if (r < 0) {
		errbuf_set(err, errlen, "loading the checked LUKS2 header: %s", strerror(-r));
		hdr_drop(d);
		goto out;
	}
	r = st;
out:
	if (mfd >= 0)
		close(mfd);
	close(fd);
	free(buf);
	if (info && r >= 0)
		*info = local;
	return r;
}
/* The UUID as the join service derives the key from it: lowercase. */
static void set_uuid(struct disk *d, const char *uuid)
{
	size_t i = 0;

	for (; uuid[i] && i < sizeof d->uuid - 1; i++)
		d->uuid[i] = (char)tolower((unsigned char)uuid[i]);
	d->uuid[i] = '\0';
}

/* The header libcryptsetup holds written to the disk: every part of the memfd that holds data
 * (the copies as read and as libcryptsetup rewrote them, the keyslot areas) within the
 * metadata area, which ends at or before the data segment (a damaged header had the whole
 * 8 MiB read; beyond the area nothing is written back), in offset order (primary before
 * secondary, as libcryptsetup writes them), then synced. */
static int hdr_write_back(struct disk *d)
{
	const size_t cap = 1u << 20;
	uint8_t *buf = NULL;
	off_t pos = 0, end;
	int fd, r = 0;

	if (d->hdr_fd <= 0)
		return -EBADF;
	fd = open(d->path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!(buf = malloc(cap)))
		r = -ENOMEM;
	while (r == 0 && (uint64_t)pos < d->hdr_area &&
	       (pos = lseek(d->hdr_fd - 1, pos, SEEK_DATA)) >= 0) {
		if ((end = lseek(d->hdr_fd - 1, pos, SEEK_HOLE)) < 0)
			r = -errno;
		else if ((uint64_t)pos < d->hdr_area)
			r = copy_range(d->hdr_fd - 1, fd, (uint64_t)pos,
				       (uint64_t)end < d->hdr_area ? (uint64_t)end : d->hdr_area,
				       buf, cap);
		pos = end;
	}
	if (r == 0 && pos < 0 && errno != ENXIO)
		r = -errno;
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	free(buf);
	return r;
}

/* Loads the header into a libcryptsetup handle from a fresh read that passes the check and
 * still says want. A handle disk_open loaded is kept. */
static int load(struct disk *d, enum disk_state want)
{
	char err[256];
	int r;

	if (d->cd)
		return 0;
	r = read_checked(d, (int)want, (int)want, NULL, err, sizeof err);
	if (r < 0)
		return log_error("disk: %s: refused: %s", d->path, err), r;
	return 0;
}

int disk_open(struct disk *d, const char *path, const char *name, enum disk_kdf kdf)
{
	struct luks2_info info = {0};
	char err[256];
	int r;

	memset(d, 0, sizeof *d);
	disk_crypt_log_setup();
	if (strlen(path) >= sizeof d->path || (name && strlen(name) >= sizeof d->name))
		return log_err(-ENAMETOOLONG, "disk: %s: name too long", path);
	strcpy(d->path, path);
	strcpy(d->name, name ? name : DISK_MAPPING);
	d->kdf = kdf;
	/* An initialized disk is unlocked next (the reboot path): libcryptsetup gets the checked
	 * bytes now, from this one read, instead of a second read at the unlock (~20 ms of the
	 * rejoin's activate phase under TCG). A new or not-initialized disk is formatted next:
	 * nothing to load. */
	r = read_checked(d, -1, DISK_INITIALIZED, &info, err, sizeof err);
	if (r < 0) {
		log_error("disk: %s: refused: %s", path, err);
		return r;
	}
	d->state = (enum disk_state)r;
	d->damaged = r != DISK_NEW && info.damaged;
	set_uuid(d, info.uuid);
	if (d->damaged)
		log_warn("disk: %s: one LUKS2 header copy is missing or damaged; the intact copy "
			 "decides",
			 path);
	return r;
}

static int set_token(struct disk *d, int initialized)
{
	/* One header write replaces token 0: no moment without a token. A detached header is
	 * then written to the disk. */
	int r = crypt_token_json_set(d->cd, 0, token_json[!!initialized]);

	if (r >= 0 && d->hdr_fd > 0)
		r = hdr_write_back(d);
	return r < 0 ? r : 0;
}

struct wipe_progress {
	uint64_t start, last;
	const char *path;
	int report_fd;
};

/* A report to the node (the overlapped wipe's child): one line, shorter than PIPE_BUF, so a
 * write is whole or not at all; a full pipe drops a progress line, never blocks the wipe. */
static void report(int fd, const char *fmt, unsigned long long a, unsigned long long b)
{
	char line[64];
	int k;

	if (fd < 0)
		return;
	k = snprintf(line, sizeof line, fmt, a, b);
	if (k > 0 && (size_t)k < sizeof line)
		(void)!write(fd, line, (size_t)k);
}

static int wipe_progress(uint64_t size, uint64_t offset, void *usrptr)
{
	struct wipe_progress *p = usrptr;
	uint64_t t = monotonic_ns();

	if (offset < size && t - p->last < PROGRESS_EVERY_NS)
		return 0;
	p->last = t;
	if (offset < size && size) {
		log_info("disk: wiping %s: %u%% (%.1f MB/s)", p->path,
			 (unsigned)(offset * 100 / size),
			 t > p->start ? (double)offset * 1e3 / (double)(t - p->start) : 0.0);
		report(p->report_fd, "P %llu %llu\n", (unsigned long long)offset,
		       (unsigned long long)size);
	}
	return 0;
}

/* The data segment as a private mapping of its own (dm-integrity without journal for the
 * wipe, with it for mke2fs alone), activated from the volume key libcryptsetup kept from the
 * format: what the wipe and mke2fs write through, while nothing writes the LUKS2 header. Its
 * size in *bytes. */
static int private_activate(struct disk *d, char *dev, size_t len, uint64_t *bytes)
{
	off_t end;
	int fd, r;

	if (!d->cd || d->no_dm)
		return log_err(-EINVAL, "disk: %s: nothing formatted to prepare", d->path);
	/* the wipe's large sequential writes without dm-integrity's journal (each sector
	 * written once); mke2fs's small scattered ones of a disk not wiped through it, as the
	 * state mapping writes them (its removal writes the journal back) */
	r = crypt_activate_by_volume_key(d->cd, WIPE_MAPPING, NULL, 0,
					 CRYPT_ACTIVATE_PRIVATE |
					     (d->no_wipe ? 0 : CRYPT_ACTIVATE_NO_JOURNAL));
	if (r < 0)
		return log_err(r, "disk: %s: activating the mapping %s", d->path, WIPE_MAPPING);
	snprintf(dev, len, "/dev/mapper/%s", WIPE_MAPPING);
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	end = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
	if (fd >= 0)
		close(fd);
	*bytes = end > 0 ? (uint64_t)end : 0;
	return 0;
}

static int private_remove(struct disk *d)
{
	int r = crypt_deactivate_by_name(d->cd, WIPE_MAPPING, 0);

	return r < 0 ? log_err(r, "disk: %s: removing the mapping %s", d->path, WIPE_MAPPING) : 0;
}

/* Zeroes the whole data area through dev, which writes valid integrity tags for every sector
 * (§6.3 step 4); "E BYTES NS" reported at its end. The volume key stays inside
 * libcryptsetup. */
static int wipe_through(struct disk *d, const char *dev, int report_fd)
{
	struct wipe_progress p = {.path = d->path, .report_fd = report_fd};
	int r;

	log_info("disk: wiping %s: %llu MiB to initialise the integrity tags", d->path,
		 (unsigned long long)(d->wipe_bytes >> 20));
	p.start = p.last = monotonic_ns();
	r = crypt_wipe(d->cd, dev, CRYPT_WIPE_ZERO, 0, 0, WIPE_BLOCK, 0, wipe_progress, &p);
	d->wipe_ns = monotonic_ns() - p.start;
	if (r < 0)
		return log_err(r, "disk: %s: wiping", d->path);
	log_info("disk: wiped %s: %llu MiB in %.1f s (%.1f MB/s)", d->path,
		 (unsigned long long)(d->wipe_bytes >> 20), (double)d->wipe_ns / 1e9,
		 d->wipe_ns ? (double)d->wipe_bytes * 1e3 / (double)d->wipe_ns : 0.0);
	report(report_fd, "E %llu %llu\n", (unsigned long long)d->wipe_bytes,
	       (unsigned long long)d->wipe_ns);
	return 0;
}

int disk_wipe(struct disk *d, int report_fd)
{
	char dev[96];
	int r;

	if ((r = private_activate(d, dev, sizeof dev, &d->wipe_bytes)) < 0)
		return r;
	r = wipe_through(d, dev, report_fd);
	if (private_remove(d) < 0 && r == 0)
		r = -EIO;
	return r;
}

int disk_prepare_data(struct disk *d, const char *mke2fs, int report_fd)
{
	uint64_t t0, bytes;
	char dev[96];
	int r;

	if ((r = private_activate(d, dev, sizeof dev, &bytes)) < 0)
		return r;
	d->wipe_bytes = bytes;
	r = d->no_wipe ? 0 : wipe_through(d, dev, report_fd);
	if (r == 0 && d->no_wipe)
		r = disk_zero_for_mkfs(dev);
	t0 = monotonic_ns();
	if (r == 0)
		r = disk_mkfs_opts(mke2fs, dev, d->no_wipe);
	t0 = monotonic_ns() - t0;
	/* mke2fs closed the device after its fsync; the removal flushes dm-integrity */
	if (private_remove(d) < 0 && r == 0)
		r = -EIO;
	if (r < 0)
		return r;
	log_info("disk: %s: ext4 made in %.1f s%s", d->path, (double)t0 / 1e9,
		 d->no_wipe ? " (not wiped)" : "");
	/* last: the node takes this line, with the exit status 0, as the end */
	report(report_fd, "M %llu %llu\n", (unsigned long long)bytes, (unsigned long long)t0);
	return 0;
}

int disk_format_header(struct disk *d)
{
	struct crypt_params_luks2 params = {
	    .integrity = "hmac(sha256)",
	    .sector_size = 4096,
	};
	char err[256];
	int r;

	d->format_t0 = monotonic_ns();
	/* The one place that formats: read the header again, right now, and refuse anything
	 * but a new or not-initialized disk. */
	r = disk_classify(d->path, NULL, err, sizeof err);
	if (r < 0)
		return log_error("disk: %s: refused: %s", d->path, err), r;
	if (r == DISK_INITIALIZED || d->state == DISK_INITIALIZED)
		return log_err(-EEXIST, "disk: %s: refusing to format an initialized disk",
			       d->path);
	hdr_drop(d);
	secret_free(d->pass);
	if ((r = secret_random(DISK_KEY_LEN, &d->pass)) < 0)
		return log_err(r, "disk: random passphrase");
	log_info("disk: %s: formatting a new state disk (LUKS2, aes-xts-plain64, hmac(sha256), "
		 "argon2id %s)",
		 d->path,
		 d->kdf == DISK_KDF_CONSTELLATION ? "at Constellation's cost" : "at least cost");
	if ((r = crypt_init(&d->cd, d->path)) < 0)
		return log_err(r, "disk: %s: open", d->path);
	crypt_metadata_locking(d->cd, 0);
	params.pbkdf = pbkdf_of(d->kdf);
	if ((r = crypt_set_pbkdf_type(d->cd, params.pbkdf)) < 0)
		return log_err(r, "disk: %s: PBKDF parameters", d->path);
	if (d->no_dm) /* dm-integrity's superblock is written through device-mapper */
		params.integrity = NULL;
	r = crypt_format(d->cd, CRYPT_LUKS2, "aes", "xts-plain64", NULL, NULL, d->no_dm ? 64 : 96,
			 &params);
	if (r < 0)
		return log_err(r, "disk: %s: formatting LUKS2", d->path);
	r = crypt_keyslot_add_by_volume_key(d->cd, 0, NULL, 0, (const char *)d->pass->bytes,
					    d->pass->len);
	if (r < 0)
		return log_err(r, "disk: %s: adding keyslot 0", d->path);
	/* the UUID the join asks its key for, known from here on */
	set_uuid(d, crypt_get_uuid(d->cd) ? crypt_get_uuid(d->cd) : "");
	return 0;
}

int disk_format_finish(struct disk *d)
{
	int r;

	if (!d->cd || !d->pass)
		return log_err(-EINVAL, "disk: %s: not formatted by this boot", d->path);
	/* Only now is the disk usable; before this a power cut leaves no token: new again. */
	if ((r = set_token(d, 0)) < 0)
		return log_err(r, "disk: %s: writing token 0", d->path);
	r = d->no_dm ? 0
		     : crypt_activate_by_passphrase(d->cd, d->name, 0, (const char *)d->pass->bytes,
						    d->pass->len, STATE_FLAGS);
	if (r < 0)
		return log_err(r, "disk: %s: activating %s", d->path, d->name);
	set_uuid(d, crypt_get_uuid(d->cd) ? crypt_get_uuid(d->cd) : "");
	d->state = DISK_NOT_INITIALIZED;
	d->format_ns = monotonic_ns() - d->format_t0;
	log_info("disk: %s: formatted (uuid %s) and open as /dev/mapper/%s in %.1f s", d->path,
		 d->uuid, d->name, (double)d->format_ns / 1e9);
	return 0;
}

int disk_format(struct disk *d)
{
	char dev[96];
	int r;

	if ((r = disk_format_header(d)) < 0)
		return r;
	if (d->no_dm)
		log_warn("disk: %s: host mode without device-mapper: no dm-integrity, data area "
			 "not wiped, not activated",
			 d->path);
	else if (!d->no_wipe && (r = disk_wipe(d, -1)) < 0)
		return r;
	if ((r = disk_format_finish(d)) < 0 || !d->no_wipe || d->no_dm)
		return r;
	snprintf(dev, sizeof dev, "/dev/mapper/%s", d->name);
	return disk_zero_for_mkfs(dev);
}

int disk_zero_for_mkfs(const char *dev)
{
	const uint64_t mib = 1u << 20, ends = 2 * mib, group = 32768ull * 4096;
	uint64_t size = 0, t0 = monotonic_ns();
	void *b = NULL;
	int fd, r = 0;

	fd = open(dev, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return log_err(-errno, "disk: %s: open for zeroing", dev);
	if (ioctl(fd, BLKGETSIZE64, &size) < 0 || size < 2 * ends ||
	    posix_memalign(&b, 4096, mib)) {
		close(fd);
		return log_err(-EINVAL, "disk: %s: no size or too small to zero its ends", dev);
	}
	memset(b, 0, mib);
	for (uint64_t off = 0; off < ends && !r; off += mib)
		if (pwrite(fd, b, mib, (off_t)off) != (ssize_t)mib ||
		    pwrite(fd, b, mib, (off_t)(size - off - mib)) != (ssize_t)mib)
			r = -EIO;
	for (uint64_t off = group; off < size && !r; off += group)
		if (pwrite(fd, b, 4096, (off_t)off) != 4096)
			r = -EIO;
	if (!r && fsync(fd) < 0)
		r = -errno;
	free(b);
	close(fd);
	if (r < 0)
		return log_err(r, "disk: %s: zeroing what mke2fs reads", dev);
	log_info("disk: %s not wiped: its ends and %llu group starts zeroed in %.1f s", dev,
		 (unsigned long long)(size / group), (double)(monotonic_ns() - t0) / 1e9);
	return 0;
}

int disk_prepare(struct disk *d, const char *path, const char *name, enum disk_kdf kdf)
{
	int r = disk_open(d, path, name, kdf);

	if (r < 0 || r == DISK_INITIALIZED)
		return r;
	log_info("disk: %s: %s", path,
		 r == DISK_NEW ? "not LUKS2: a new disk"
			       : "LUKS2 without the initialized token: its data is disposable");
	r = disk_format(d);
	return r < 0 ? r : DISK_NOT_INITIALIZED;
}

int disk_set_key(struct disk *d, const struct secret *key)
{
	int r;

	if (!d->pass || !d->cd)
		return log_err(-EINVAL, "disk: %s: no first-boot passphrase to replace", d->path);
	if (key->len != DISK_KEY_LEN)
		return log_err(-EINVAL, "disk: key is %zu bytes, want %d", key->len, DISK_KEY_LEN);
	if ((r = crypt_set_pbkdf_type(d->cd, pbkdf_of(d->kdf))) < 0)
		return log_err(r, "disk: %s: PBKDF parameters", d->path);
	r = crypt_keyslot_change_by_passphrase(d->cd, 0, 0, (const char *)d->pass->bytes,
					       d->pass->len, (const char *)key->bytes, key->len);
	if (r < 0)
		return log_err(r, "disk: %s: changing keyslot 0 to the cluster's key", d->path);
	secret_free(d->pass);
	d->pass = NULL;
	log_info("disk: %s: keyslot 0 holds the cluster's key", d->path);
	return 0;
}

int disk_mark_initialized(struct disk *d)
{
	int r;

	if (d->pass || !d->cd)
		return log_err(-EINVAL, "disk: %s: keyslot 0 does not hold the cluster's key yet",
			       d->path);
	if ((r = set_token(d, 1)) < 0)
		return log_err(r, "disk: %s: marking the disk initialized", d->path);
	d->state = DISK_INITIALIZED;
	log_info("disk: %s: disk initialized", d->path);
	return 0;
}

int disk_check_key(struct disk *d, const void *key, size_t len)
{
	int r;

	uint64_t t0;

	if ((r = load(d, d->state)) < 0)
		return r;
	t0 = monotonic_ns();
	r = crypt_activate_by_passphrase(d->cd, NULL, 0, key, len, 0);
	d->unlock_ns = monotonic_ns() - t0;
	return r < 0 ? (r == -EPERM ? -EPERM : r) : 0;
}

/* The damaged header copy rewritten from the intact one, once the key has opened the disk:
 * libcryptsetup skips its own recovery with locking disabled; crypt_repair does it, on the
 * detached header (the checked bytes), and hdr_write_back puts the result on the disk, which
 * is then read and checked again. */
static void repair(struct disk *d)
{
	struct crypt_device *cd;
	char err[256] = "", hp[32];
	int r;

	if (!d->damaged)
		return;
	d->damaged = 0;
	if (d->hdr_fd <= 0) {
		r = -EBADF;
		goto out;
	}
	hdr_dev_path(d, hp, sizeof hp);
	if ((r = crypt_init_data_device(&cd, hp, d->path)) == 0) {
		r = crypt_repair(cd, CRYPT_LUKS2, NULL);
		crypt_free(cd);
	}
	if (r == 0)
		r = hdr_write_back(d);
	if (r == 0 && (r = disk_classify(d->path, NULL, err, sizeof err)) != DISK_INITIALIZED)
		r = r < 0 ? r : -EIO;
out:
	if (r < 0)
		log_warn("disk: %s: the damaged LUKS2 header copy was not repaired (%s); the "
			 "intact copy stays in use",
			 d->path, strerror(-r));
	else
		log_info(
		    "disk: %s: the damaged LUKS2 header copy was rewritten from the intact one",
		    d->path);
}

int disk_unlock(struct disk *d, const struct secret *key)
{
	uint64_t t0, t1;
	int r, loaded;

	if (d->state != DISK_INITIALIZED)
		return log_err(-EINVAL, "disk: %s: not initialized; nothing to unlock", d->path);
	if (d->no_dm) {
		r = disk_check_key(d, key->bytes, key->len);
		if (r == -EPERM)
			return log_err(-EPERM, "disk: %s: the key does not open the disk", d->path);
		if (r < 0)
			return log_err(r, "disk: %s: checking the key", d->path);
		repair(d);
		return 0;
	}
	t0 = monotonic_ns();
	loaded = d->cd != NULL;
	if ((r = load(d, DISK_INITIALIZED)) < 0)
		return r;
	t1 = monotonic_ns();
	r = crypt_activate_by_passphrase(d->cd, d->name, CRYPT_ANY_SLOT, (const char *)key->bytes,
					 key->len, STATE_FLAGS);
	d->unlock_ns = monotonic_ns() - t1;
	if (r == -EPERM)
		return log_err(-EPERM, "disk: %s: the key does not open the disk", d->path);
	if (r < 0)
		return log_err(r, "disk: %s: activating %s", d->path, d->name);
	if (loaded)
		log_info("disk: %s: unlocked as /dev/mapper/%s in %llu ms (header loaded when the "
			 "disk was opened)",
			 d->path, d->name, (unsigned long long)(d->unlock_ns / 1000000));
	else
		log_info("disk: %s: unlocked as /dev/mapper/%s in %llu ms (header checked and "
			 "loaded in %llu ms)",
			 d->path, d->name, (unsigned long long)(d->unlock_ns / 1000000),
			 (unsigned long long)((t1 - t0) / 1000000));
	repair(d);
	return 0;
}

int disk_reset(const char *path)
{
	struct disk d;
	int r;

	r = disk_open(&d, path, NULL, DISK_KDF_MIN);
	if (r < 0)
		return r;
	if (r == DISK_NEW)
		return 0; /* nothing to reset */
	if ((r = load(&d, d.state)) < 0)
		return r;
	r = set_token(&d, 0);
	disk_close(&d);
	if (r < 0)
		return log_err(r, "disk: %s: resetting token 0", path);
	log_warn("disk: %s: marked not initialized; the next boot formats it", path);
	return 0;
}

void disk_close(struct disk *d)
{
	hdr_drop(d);
	secret_free(d->pass);
	d->pass = NULL;
}

int disk_deactivate(const char *name)
{
	int r = crypt_deactivate_by_name(NULL, name, 0);

	if (r < 0 && r != -ENODEV)
		return log_err(r, "disk: closing /dev/mapper/%s", name);
	return 0;
}

int disk_mkfs(const char *mke2fs, const char *dev)
{
	return disk_mkfs_opts(mke2fs, dev, 0);
}

int disk_mkfs_opts(const char *mke2fs, const char *dev, int no_wipe)
{
	char *argv[12];
	uint64_t size = 0;
	int k = 0, fd, status;
	pid_t pid;

	argv[k++] = (char *)"mke2fs";
	argv[k++] = (char *)"-q";
	argv[k++] = (char *)"-F";
	argv[k++] = (char *)"-t";
	argv[k++] = (char *)"ext4";
	if (no_wipe) {
		argv[k++] = (char *)"-E";
		argv[k++] = (char *)DISK_MKFS_NO_WIPE;
		/* the journal mke2fs writes whole: bounded, not growing with the disk */
		fd = open(dev, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && ioctl(fd, BLKGETSIZE64, &size) < 0) {
			off_t end = lseek(fd, 0, SEEK_END); /* an image file */

			size = end > 0 ? (uint64_t)end : 0;
		}
		if (fd >= 0)
			close(fd);
		if (size >= DISK_MKFS_JOURNAL_FROM) {
			argv[k++] = (char *)"-J";
			argv[k++] = (char *)DISK_MKFS_JOURNAL;
		}
	}
	argv[k++] = (char *)dev;
	argv[k] = NULL;

	pid = fork();
	if (pid < 0)
		return log_err(-errno, "disk: mke2fs: fork");
	if (pid == 0) {
		execv(mke2fs, argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return log_err(-errno, "disk: mke2fs: wait");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return log_err(-EIO, "disk: %s %s: failed (status %d)", mke2fs, dev,
			       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	log_info("disk: ext4 created on %s", dev);
	return 0;
}
