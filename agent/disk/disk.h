/* The state disk (spec §6): finding it, deciding from a copy of its LUKS2 header what it is
 * (the strict check of §6.2 refuses, never reformats, a header someone may have swapped, e.g.
 * for cipher_null), formatting a new or not-initialized disk, changing keyslot 0 to the key
 * the cluster hands out, unlocking an initialized disk, the reset after a fatal error, the
 * filesystem and the node-state file of §6.5.
 *
 * Data safety rule: the only code that formats is disk_format(), and it reads the header
 * again right before formatting and refuses when the token says initialized or the header
 * fails the check. The token becomes "initialized" only after keyslot 0 holds the key and the
 * node's files are written (disk_mark_initialized). */
#ifndef CONSTEL_DISK_H
#define CONSTEL_DISK_H

#include <stddef.h>
#include <stdint.h>

struct secret;
struct crypt_device;

#define LUKS2_HDR_MAX	(4 * 1024 * 1024) /* binary header + JSON area, the largest LUKS2 allows */
#define DISK_KEY_LEN	32		  /* the state-disk key and the first boot's passphrase */
#define DISK_MAPPING	"state"		  /* /dev/mapper/state */
#define DISK_MOUNT	"/run/state"
#define NODE_STATE_PATH "constellation/node_state.json" /* under the mount */

enum disk_state {
	DISK_NEW = 0,		  /* not LUKS2: format it */
	DISK_NOT_INITIALIZED = 1, /* valid LUKS2, token 0 not "initialized": format it */
	DISK_INITIALIZED = 2,	  /* valid LUKS2 with the initialized token: the reboot path */
};

struct luks2_info {
	char uuid[40];
	uint64_t hdr_size;
	int damaged; /* one header copy is missing or damaged; the decision used the other */
	/* of the copy that decides: config.keyslots_size, and the end of the furthest keyslot
	 * area (>= 2 hdr_size): libcryptsetup reads nothing of the header device beyond it */
	uint64_t keyslots_size, areas_end;
};

/* Routes libcryptsetup's messages (one process-wide callback) to our log at debug level;
 * every user of libcryptsetup calls this first. */
void disk_crypt_log_setup(void);

/* Classifies the start of a disk (at least 4096 bytes; both headers when it is LUKS2), as
 * libcryptsetup reads it: a missing or damaged primary is recovered from the secondary found
 * at libcryptsetup's offsets (16 KiB * 2^k up to 4 MiB), and the disk decided by the copy
 * libcryptsetup would use, under the same strict check. Never DISK_NEW while a copy of a
 * header is on the disk. Returns an enum disk_state, or -EINVAL with one line in err naming
 * the field when a header fails the check or no copy is intact (the caller must refuse the
 * disk, not format it). */
int luks2_classify(const uint8_t *buf, size_t len, struct luks2_info *info, char *err,
		   size_t errlen);

/* The state disk of a CSP (§6.1), or override when set; symlinks resolved. -ENOENT with one
 * line logged when the CSP is unknown or the device is missing. */
int disk_find(const char *csp, const char *override, char *out, size_t outlen);
/* Reads a copy of both LUKS2 headers and classifies it as luks2_classify does: 2 x hdr_size
 * bytes when both copies are intact, else the whole 2 * LUKS2_HDR_MAX bytes (the same
 * decision either way). The disk is only read. */
int disk_classify(const char *path, struct luks2_info *info, char *err, size_t errlen);

/* The PBKDF of our keyslots. Their passphrases are 32 random bytes, so a slow KDF buys
 * nothing: MIN is argon2id at libcryptsetup's least cost; CONSTELLATION is the Go
 * disk-mapper's (argon2id benchmarked to 2 s, 64 MiB, 4 threads). */
enum disk_kdf {
	DISK_KDF_MIN = 0,
	DISK_KDF_CONSTELLATION = 1,
};
/* "min" or "constellation" -> enum; -EINVAL otherwise. */
int disk_kdf_parse(const char *s, enum disk_kdf *kdf);

struct disk {
	char path[256];
	char name[64]; /* the mapping: DISK_MAPPING unless a test names another */
	char uuid[40]; /* lowercase, as the join service derives the key from it */
	enum disk_state state;
	enum disk_kdf kdf;
	struct crypt_device *cd;
	/* The detached header cd was loaded from (a memfd with the bytes the check read), plus
	 * one; 0: none (cd made by the format works on the disk itself). state.c says why. */
	int hdr_fd;
	uint64_t
	    hdr_area; /* its metadata area (2 hdr_size + keyslots_size): what is written back */
	/* Host mode (an image file, no device-mapper): the header work is real, but there is no
	 * dm-integrity (its superblock needs device-mapper: 64-byte key, which §6.2 allows),
	 * nothing is wiped or activated, and unlocking only checks the key. Set after
	 * disk_open. */
	int no_dm;
	struct secret *pass; /* first boot: keyslot 0's temporary passphrase until disk_set_key */
	int damaged;	     /* one header copy needs the repair disk_unlock makes */
	int no_wipe;	     /* constel.disk-wipe=none: disk_format skips the wipe */
	/* measured, for the boot timeline and the bench */
	uint64_t wipe_bytes, wipe_ns, format_ns, format_t0;
	uint64_t unlock_ns; /* the last disk_unlock (activation) or disk_check_key (keyslot) */
};

/* Classifies path and fills d (name NULL: DISK_MAPPING); an initialized disk's header is then
 * loaded into libcryptsetup from the bytes the check read (a detached header: libcryptsetup
 * never reads the disk's header itself), for disk_unlock. Returns the enum
 * disk_state, or -EINVAL when the header is refused (one line logged naming the field;
 * nothing written). */
int disk_open(struct disk *d, const char *path, const char *name, enum disk_kdf kdf);
/* First boot (§6.3) on a new or not-initialized disk: LUKS2 with aes-xts-plain64 and
 * hmac(sha256) integrity, 4096-byte sectors, keyslot 0 with a random passphrase, the data
 * area wiped (progress lines), token 0 not initialized, mapping d->name activated. */
int disk_format(struct disk *d);
/* disk_format in its three steps, for a wipe that runs beside the race for the key (the
 * node's first boot, agent/flow/node_wipe.c):
 *   disk_format_header: the check of disk_format, LUKS2 and keyslot 0 with a random
 *     passphrase, d->uuid set; no token, nothing activated, nothing of the data area written
 *     but dm-integrity's superblock.
 *   disk_wipe: the data area zeroed through a temporary mapping of its own, activated from
 *     the volume key in d->cd and removed again (in the node's wipe child: a copy of d). With
 *     report_fd >= 0, "P OFFSET SIZE\n" lines every 5 s and "E BYTES NS\n" at a successful end,
 *     each one write; progress lines on the console either way.
 *   disk_format_finish: token 0 not initialized, mapping d->name activated (the passphrase):
 *     only after the wipe has ended, so the LUKS2 header is never written while the wipe
 *     mapping is active; a power cut before this leaves a disk without token, formatted
 *     again at the next boot. */
int disk_format_header(struct disk *d);
int disk_wipe(struct disk *d, int report_fd);
int disk_format_finish(struct disk *d);
/* After disk_format_header, the first boot's whole preparation of the data area in the same
 * private mapping disk_wipe uses (the node's child, beside the race): the wipe (unless
 * d->no_wipe; "E" reported), or disk_zero_for_mkfs; then ext4 by mke2fs (-E DISK_MKFS_NO_WIPE
 * when d->no_wipe); the mapping removed; "M BYTES NS\n" (the mapping's size, mke2fs's time)
 * reported last. disk_format_finish and a mount follow it; no mkfs after it. */
int disk_prepare_data(struct disk *d, const char *mke2fs, int report_fd);

/* How a first boot wipes (constel.disk-wipe=): FULL, every sector, then mke2fs, in a child
 * while the node races for its key; SYNC, every sector and mke2fs before the race (the path
 * before issue 28, for the bench); NONE, the default (node_config_defaults): no wipe, mke2fs in
 * the child. -EINVAL for another word. */
enum disk_wipe {
	DISK_WIPE_FULL = 0,
	DISK_WIPE_SYNC = 1,
	/* no wipe: the data area's tags stay uninitialised; only what mke2fs reads before it
	 * writes it is zeroed (disk_zero_for_mkfs), ext4 made with DISK_MKFS_NO_WIPE (the audit:
	 * tests/vm/test_disk_audit.sh, docs/wipe.md) */
	DISK_WIPE_NONE = 2,
};
int disk_wipe_parse(const char *s, enum disk_wipe *w);

/* The mke2fs -E options a disk that was not wiped needs: the journal written by mke2fs (a
 * journal replay reads past the last commit), no discard; the inode tables may be left to the
 * kernel's lazy init (it and e2fsck read only the used part of a table: the audit, 3 runs). */
#define DISK_MKFS_NO_WIPE "lazy_itable_init=1,lazy_journal_init=0,nodiscard"
/* ...and its journal, which mke2fs writes whole: 32 MiB on a device of DISK_MKFS_JOURNAL_FROM
 * bytes or more (-J DISK_MKFS_JOURNAL; mke2fs's own size for 1 to 2 GiB, at most 16 MiB below
 * 1 GiB), so what the first boot writes does not grow with the disk: mke2fs's default grows
 * to 64 MiB at 8 GiB, 128 MiB at 16 GiB and 1 GiB at 128 GiB. The journal holds metadata only
 * (data=ordered). */
#define DISK_MKFS_JOURNAL      "size=32"
#define DISK_MKFS_JOURNAL_FROM (512ull << 20)
/* Before mke2fs on a mapping that was not wiped: zeros over the first and the last 2 MiB (what
 * mke2fs and blkid probe) and the first 4096-byte block of every 128 MiB group (where mke2fs
 * writes each backup superblock, 1024 bytes read-modify-written). 0 or < 0 after one line. */
int disk_zero_for_mkfs(const char *dev);

/* The boot path's entry: disk_open, then disk_format unless the disk is initialized. Returns
 * DISK_INITIALIZED (unlock it with the key the cluster returns) or DISK_NOT_INITIALIZED
 * (freshly formatted and open; give it the key with disk_set_key). */
int disk_prepare(struct disk *d, const char *path, const char *name, enum disk_kdf kdf);
/* The key arrived (join, init): keyslot 0 changes from the passphrase to key. Token 0 still
 * says not initialized: a crash before disk_mark_initialized formats the disk again. */
int disk_set_key(struct disk *d, const struct secret *key);
/* Token 0 says initialized. Called last, once the node state, PKI, kubelet and SSH files are
 * on the state disk (the mapping is open), so an initialized disk always has them. -EINVAL
 * when disk_set_key has not succeeded. */
int disk_mark_initialized(struct disk *d);
/* Reboot path: an initialized disk activated as d->name with key. A wrong key: -EPERM with one
 * line, nothing changed. Once the key opened it, a damaged header copy is rewritten from the
 * intact one (crypt_repair, as cryptsetup repair does). */
int disk_unlock(struct disk *d, const struct secret *key);
/* Whether key opens keyslot 0, without activating anything (0 yes, -EPERM no); the time the
 * keyslot took (PBKDF and volume-key check) is in d->unlock_ns. */
int disk_check_key(struct disk *d, const void *key, size_t len);
/* The reset of §6.2 after a fatal error past the node lock: token 0 set to not initialized,
 * so the next boot formats. Refuses a header that fails the check. */
int disk_reset(const char *path);
/* Frees the libcryptsetup handle and the passphrase; the mapping stays active. */
void disk_close(struct disk *d);
/* Removes the mapping name (if active). */
int disk_deactivate(const char *name);

/* ext4 on the mapping (first boot) with the mke2fs binary at mke2fs; no_wipe: with
 * -E DISK_MKFS_NO_WIPE (and -J DISK_MKFS_JOURNAL from DISK_MKFS_JOURNAL_FROM bytes). */
int disk_mkfs(const char *mke2fs, const char *dev);
int disk_mkfs_opts(const char *mke2fs, const char *dev, int no_wipe);

/* The node-state file of §6.5, as Go's json.MarshalIndent with tabs writes it (mode 0600).
 * role is "ControlPlane" or "Worker". */
int node_state_write(const char *path, const char *role, const uint8_t salt[32]);
/* Parses a node-state file; MeasurementSalt must decode to exactly 32 bytes. -EINVAL with
 * one line in err otherwise. */
int node_state_parse(const char *buf, size_t len, uint8_t salt[32], char *err, size_t errlen);
int node_state_read(const char *path, uint8_t salt[32]);

#endif
