/* The base layer: logging, secret buffers, hex and base64, HKDF. Everything above builds on
 * it; it depends only on libc and BearSSL. Functions return 0 or a negative errno value and
 * write their out-parameters only on success. */
#ifndef CONSTEL_BASE_H
#define CONSTEL_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <sys/types.h>

/* ---- logging (log.c) ----
 * Levels follow the Go disk-mapper and bootstrapper this agent replaces (-v flag):
 * -1 debug, 0 info (default), 1 warn, 2 error. A line is written when its level is at or
 * above the threshold, to stderr and, once log_open_kmsg() succeeded, to /dev/kmsg.
 * Never pass a secret to these functions: they have no way to redact it. */
enum log_level {
	LOG_DEBUG = -1,
	LOG_INFO = 0,
	LOG_WARN = 1,
	LOG_ERROR = 2,
};

void log_set_program(const char *name);
void log_set_level(int level);
int log_get_level(void);
/* Copies every line to /dev/kmsg too (PID 1 in the initramfs). Returns 0 or -errno. */
int log_open_kmsg(const char *path);
void log_close_kmsg(void);
/* Redirects the stderr copy to fd (tests); -1 silences it. */
void log_set_fd(int fd);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(int level, const char *fmt, va_list ap);
/* Logs at error level with ": <strerror(-err)>" appended when err < 0, and returns err, so a
 * failing call site stays one line: return log_err(r, "disk: %s: open", path); */
int log_err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Formats a one-line error for the caller into err (when err is not NULL), with control
 * characters replaced as in log lines, and returns -EINVAL. Parsers use it to say what was
 * wrong with input that may itself contain anything. */
int errbuf_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The newest log lines, up to LOG_RING_SIZE bytes, oldest first; returns the length. */
#define LOG_RING_SIZE (64 * 1024)
size_t log_ring_copy(char *buf, size_t cap);

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* ---- secrets (secret.c) ----
 * A secret is a heap buffer that is locked in memory when the kernel allows it and wiped
 * when freed. Disk keys, master and measurement secrets, tokens, private keys and the init
 * secret live only in secrets. */
struct secret {
	size_t len;
	unsigned char bytes[];
};

/* A zero-filled secret of len bytes (len may be 0); NULL when out of memory. */
struct secret *secret_new(size_t len);
/* A secret holding a copy of len bytes at src. */
struct secret *secret_from(const void *src, size_t len);
/* Fills buf with len bytes from getrandom() (blocks until the kernel's pool is ready). */
int random_bytes(void *buf, size_t len);
/* Fills a new secret with len bytes from getrandom(); *ret set only on success. */
int secret_random(size_t len, struct secret **ret);
/* Constant-time comparison: 1 when both hold the same bytes, else 0. */
int secret_equal(const struct secret *a, const struct secret *b);
/* Wipes and frees; NULL is allowed. */
void secret_free(struct secret *s);
/* Wipes any memory that held secret material (a stack copy, a decode buffer). */
void secret_wipe(void *p, size_t len);

static inline void secret_freep(struct secret **s)
{
	secret_free(*s);
	*s = NULL;
}
#define _cleanup_secret_ __attribute__((cleanup(secret_freep)))

/* ---- hex (hex.c) ---- lower-case output; input of either case. */
/* Writes 2*len hex digits and a NUL into out (cap >= 2*len+1). */
int hex_encode(const void *src, size_t len, char *out, size_t cap);
/* The value of one hex digit of either case, or -1. */
int hex_digit(char c);
/* Decodes exactly srclen characters (even, all hex digits) into out. -EINVAL for bad input,
 * -ENOBUFS when out is too small. */
int hex_decode(const char *src, size_t srclen, void *out, size_t cap, size_t *ret_len);

/* ---- base64 (base64.c) ----
 * The two alphabets Go's encoding/base64 uses on the Constellation wire, both with '='
 * padding: STD (SNI nonce, JSON []byte) and URL (the cluster-KMS URI). Decoding is strict:
 * the length must be a multiple of 4, padding only at the end, no white space. Like Go's
 * default decoder, non-zero bits after the last full byte are ignored. */
enum base64_alphabet {
	BASE64_STD,
	BASE64_URL,
};

#define BASE64_ENCODED_LEN(n) (((n) + 2) / 3 * 4) /* a constant for array sizes */
static inline size_t base64_encoded_len(size_t len)
{
	return BASE64_ENCODED_LEN(len);
}
/* Writes the encoding and a NUL into out (cap >= base64_encoded_len(len)+1). */
int base64_encode(enum base64_alphabet a, const void *src, size_t len, char *out, size_t cap);
/* Decodes srclen characters into out. -EINVAL for malformed input, -ENOBUFS when out is too
 * small for the decoded bytes. The lookup is free of data-dependent branches and table
 * indexing, so decoding a key does not leak it through timing. */
int base64_decode(enum base64_alphabet a, const char *src, size_t srclen, void *out, size_t cap,
		  size_t *ret_len);

/* PEM: "-----BEGIN label-----", 64-character base64 lines, "-----END label-----". Returns
 * the length written (NUL-terminated) or -ENOBUFS. The buffer is wiped (keys pass here). */
int pem_encode(const char *label, const void *der, size_t len, char *out, size_t cap);

/* The first PEM block with this label ("CERTIFICATE", "PRIVATE KEY", ...) in text, decoded
 * into out. -ENOENT when there is none, -EINVAL when it is malformed. */
int pem_decode(const char *text, size_t len, const char *label, uint8_t *out, size_t cap,
	       size_t *ret_len);

/* ---- HKDF (hkdf.c) ----
 * RFC 5869 HKDF-SHA256 (extract then expand), as golang.org/x/crypto/hkdf computes it.
 * salt may be NULL (a zero salt, as Go's nil); info may be NULL with info_len 0. out_len is
 * at most 255*32; -EINVAL otherwise. Constellation's DeriveKey(secret, salt, info, L) is
 * exactly this function. */
int hkdf_sha256(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len,
		const void *info, size_t info_len, void *out, size_t out_len);

/* ---- files (file.c) ---- */
/* Creates path (O_EXCL: an existing file is an error) with mode and writes data, synced. */
int write_file_excl(const char *path, const void *data, size_t len, mode_t mode);
/* mkdir -p with mode for every missing component. */
int mkdir_parents(const char *path, mode_t mode);
/* Replaces path whole: the parent directories are made (0755), data goes to "path.tmp"
 * (a stale one from a power cut is removed first), synced, then renamed over path, so a
 * reader finds the old file or the complete new one. */
int write_file_replace(const char *path, const void *data, size_t len, mode_t mode);
/* Reads from fd until end of file or cap bytes; the count, or -errno. */
ssize_t read_full(int fd, void *buf, size_t cap);
/* Writes all len bytes to fd (EINTR retried); 0 or -errno (-EIO for a zero-length write).
 * Inline: libtss2-tcti-swtpm exports a write_all of its own into the static link. */
ssize_t write(int fd, const void *buf, size_t len); /* <unistd.h> */
static inline int write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
/* root followed by path ("/x" + "/etc/y") into out; -ENAMETOOLONG with one line when it
 * does not fit. */
int path_in(char *out, size_t cap, const char *root, const char *path);
/* An nftw() callback (FTW_DEPTH | FTW_PHYS) that removes every entry it is given: with
 * nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) the whole tree, dir included. */
struct stat;
struct FTW;
int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f);

/* ---- JSON (json.c) ---- */
struct json_object;
/* The one JSON value that is exactly buf[0..len) (json-c), or NULL when it does not parse,
 * has anything after the value, or is too long. Release it with json_object_put. */
struct json_object *json_parse_exact(const char *buf, size_t len);
/* The string member key of object o copied into out: -ENOENT when absent (or o is no object),
 * -EINVAL when it is no string, holds a NUL or does not fit in cap with its terminator. */
int json_str_member(struct json_object *o, const char *key, char *out, size_t cap);
/* The member key of object o when it has the json_type type, else NULL. */
struct json_object *json_member(struct json_object *o, const char *key, int type);
/* The member key of object o as Go's encoding/json finds a struct field: matched
 * case-insensitively, the last match in the text wins (a later null too); NULL when absent. */
struct json_object *json_member_go(struct json_object *o, const char *key);

/* ---- time (file.c) ---- */
/* CLOCK_MONOTONIC in nanoseconds, for deadlines and durations. */
uint64_t monotonic_ns(void);
static inline uint64_t monotonic_ms(void)
{
	return monotonic_ns() / 1000000;
}

/* ---- bcrypt (bcrypt.c) ----
 * The init secret's check (spec §5.5): golang.org/x/crypto/bcrypt's CompareHashAndPassword.
 * Costs above BCRYPT_MAX_COST are refused (Go allows 31: days of CPU for a bad config). */
#define BCRYPT_HASH_LEN 60
#define BCRYPT_MIN_COST 4
#define BCRYPT_MAX_COST 16

/* 0 when pw matches the 60-character hash ($2a$, $2b$ or $2y$); -EACCES when it does not;
 * -EINVAL with one line in err for a malformed hash. */
int bcrypt_check(const char *hash, size_t len, const void *pw, size_t pw_len, char *err,
		 size_t errlen);
/* A $2a$ hash of pw with the given cost and 16-byte salt (tests and tools). */
int bcrypt_hash(const void *pw, size_t pw_len, int cost, const uint8_t salt[16],
		char out[BCRYPT_HASH_LEN + 1]);

#endif
