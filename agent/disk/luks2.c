/* The LUKS2 header check of spec §6.2, on a copy of the header: the binary header (magic,
 * version, size, checksum), then the JSON metadata decoded strictly (no field beyond what
 * LUKS2 defines) with Constellation's rules for every keyslot, segment and digest, then
 * token 0. The Go disk-mapper refuses the same headers, so a swapped header (cipher_null, a
 * weak KDF, no integrity key) stops the boot instead of being used or reformatted. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bearssl.h>
#include <json-c/json.h>

#include "base/base.h"
#include "disk.h"

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* Every key of o must be in the NULL-ended list. */
static int only(json_object *o, const char *const *keys, const char *where, char *err,
		size_t errlen)
{
	if (!json_object_is_type(o, json_type_object))
		return errbuf_set(err, errlen, "LUKS2 header: %s is not an object", where);
	json_object_object_foreach(o, k, v)
	{
		const char *const *p;

		(void)v;
		for (p = keys; *p && strcmp(*p, k); p++)
			;
		if (!*p)
			return errbuf_set(err, errlen, "LUKS2 header: %s: unknown field '%.32s'",
					  where, k);
	}
	return 0;
}

static const char *str(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : "";
}

static int64_t num(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_int)
		   ? json_object_get_int64(v)
		   : -1;
}

static json_object *obj(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* A LUKS2 size or offset: a decimal string (the JSON number range is too small for them), at
 * most max; else -1. */
static int64_t u64str(json_object *o, const char *k, uint64_t max)
{
	const char *s = str(o, k);
	uint64_t v = 0;

	if (!*s || strlen(s) > 19)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v <= max ? (int64_t)v : -1;
}

#define WANT(cond, ...)                                              \
	do {                                                         \
		if (!(cond))                                         \
			return errbuf_set(err, errlen, __VA_ARGS__); \
	} while (0)

static int check_keyslot(const char *id, json_object *k, char *err, size_t errlen)
{
	static const char *const ks[] = {"type", "key_size", "af", "area", "kdf", "priority", NULL};
	static const char *const af[] = {"type", "stripes", "hash", NULL};
	static const char *const area[] = {"type",	 "offset",   "size",
					   "encryption", "key_size", NULL};
	static const char *const kdf[] = {"type", "time", "memory",	"cpus",
					  "salt", "hash", "iterations", NULL};
	char where[64];
	int r;

	snprintf(where, sizeof where, "keyslot %.8s", id);
	if ((r = only(k, ks, where, err, errlen)) < 0 ||
	    (r = only(obj(k, "af"), af, "keyslot af", err, errlen)) < 0 ||
	    (r = only(obj(k, "area"), area, "keyslot area", err, errlen)) < 0 ||
	    (r = only(obj(k, "kdf"), kdf, "keyslot kdf", err, errlen)) < 0)
		return r;
	WANT(!strcmp(str(k, "type"), "luks2"), "LUKS2 header: %s: type is not luks2", where);
	WANT(num(k, "key_size") == 64 || num(k, "key_size") == 96,
	     "LUKS2 header: %s: key_size %lld, want 64 or 96", where,
	     (long long)num(k, "key_size"));
	WANT(!strcmp(str(obj(k, "af"), "type"), "luks1") && num(obj(k, "af"), "stripes") == 4000 &&
		 !strcmp(str(obj(k, "af"), "hash"), "sha256"),
	     "LUKS2 header: %s: af is not luks1 with 4000 stripes and sha256", where);
	WANT(!strcmp(str(obj(k, "area"), "type"), "raw") &&
		 !strcmp(str(obj(k, "area"), "encryption"), "aes-xts-plain64") &&
		 num(obj(k, "area"), "key_size") == 64,
	     "LUKS2 header: %s: area is not raw aes-xts-plain64 with key_size 64", where);
	WANT(!strcmp(str(obj(k, "kdf"), "type"), "argon2id") && num(obj(k, "kdf"), "memory") > 0 &&
		 str(obj(k, "kdf"), "salt")[0],
	     "LUKS2 header: %s: kdf is not argon2id with memory and a salt", where);
	return 0;
}

static int check_segment(const char *id, json_object *s, char *err, size_t errlen)
{
	static const char *const seg[] = {"type",      "offset",     "size",
					  "iv_tweak",  "encryption", "sector_size",
					  "integrity", "flags",	     NULL};
	static const char *const integ[] = {"type", "journal_encryption", "journal_integrity",
					    NULL};
	json_object *in = obj(s, "integrity");
	char where[64];
	int r;

	snprintf(where, sizeof where, "segment %.8s", id);
	if ((r = only(s, seg, where, err, errlen)) < 0 ||
	    (in && (r = only(in, integ, "segment integrity", err, errlen)) < 0))
		return r;
	WANT(!strcmp(str(s, "type"), "crypt"), "LUKS2 header: %s: type is not crypt", where);
	WANT(num(s, "sector_size") == 4096, "LUKS2 header: %s: sector_size %lld, want 4096", where,
	     (long long)num(s, "sector_size"));
	WANT(!strcmp(str(s, "iv_tweak"), "0"), "LUKS2 header: %s: iv_tweak is not \"0\"", where);
	WANT(!strcmp(str(s, "encryption"), "aes-xts-plain64"),
	     "LUKS2 header: %s: encryption '%.32s', want aes-xts-plain64", where,
	     str(s, "encryption"));
	WANT(!in || (!strcmp(str(in, "type"), "hmac(sha256)") &&
		     !strcmp(str(in, "journal_encryption"), "none") &&
		     !strcmp(str(in, "journal_integrity"), "none")),
	     "LUKS2 header: %s: integrity is not hmac(sha256) without journal", where);
	return 0;
}

static int check_digest(const char *id, json_object *d, char *err, size_t errlen)
{
	static const char *const dig[] = {"type",	"keyslots", "segments", "hash",
					  "iterations", "salt",	    "digest",	NULL};
	char where[64];
	int r;

	snprintf(where, sizeof where, "digest %.8s", id);
	if ((r = only(d, dig, where, err, errlen)) < 0)
		return r;
	WANT(!strcmp(str(d, "type"), "pbkdf2") && !strcmp(str(d, "hash"), "sha256") &&
		 str(d, "salt")[0] && str(d, "digest")[0],
	     "LUKS2 header: %s: not pbkdf2 sha256 with a salt and a digest", where);
	return 0;
}

static int initialized_token(json_object *tokens)
{
	json_object *t = obj(tokens, "0"), *ks, *init;

	return t && json_object_is_type(t, json_type_object) &&
	       !strcmp(str(t, "type"), "constellation-state-disk") && (ks = obj(t, "keyslots")) &&
	       json_object_is_type(ks, json_type_array) && (init = obj(t, "diskIsInitialized")) &&
	       json_object_is_type(init, json_type_boolean) && json_object_get_boolean(init);
}

/* libcryptsetup's offsets of the secondary header, scanned in this order when the primary
 * is unusable (its LUKS2_HDR2_OFFSETS: 16 KiB * 2^k up to 4 MiB). */
static const uint64_t hdr2_offsets[] = {0x4000,	 0x8000,   0x10000,  0x20000, 0x40000,
					0x80000, 0x100000, 0x200000, 0x400000};

/* What one header copy is, as libcryptsetup would see it. */
enum copy {
	COPY_ABSENT = 0, /* no magic: not a header */
	COPY_DAMAGED =
	    1,		/* magic, but its binary fields or checksum fail: libcryptsetup skips it */
	COPY_VALID = 2, /* checksum verified: decided by the strict check */
};

/* The binary checks libcryptsetup makes before it trusts a copy (magic, version, hdr_offset,
 * hdr_size, checksum) on the copy at off (h = buf + off, room bytes readable). Returns the
 * enum copy, or -EINVAL for a checksum algorithm we cannot verify (libcryptsetup might trust
 * it, so the disk is refused rather than judged by the other copy). */
static int check_binary(const uint8_t *h, size_t room, uint64_t off, int secondary,
			const char *which, uint64_t *hdr_size, char *err, size_t errlen)
{
	uint8_t csum[32], zero[64] = {0};
	br_sha256_context c;
	uint64_t size;

	if (room < 4096 || memcmp(h, secondary ? "SKUL\xba\xbe" : "LUKS\xba\xbe", 6))
		return COPY_ABSENT;
	if (h[6] != 0 || h[7] != 2)
		return errbuf_set(err, errlen, "LUKS2 header: %s: version %u, want 2", which,
				  (unsigned)(h[6] << 8 | h[7])),
		       COPY_DAMAGED;
	size = be64(h + 8);
	if (be64(h + 256) != off || size < 16384 || size > LUKS2_HDR_MAX || size % 4096 ||
	    size > room || (secondary && size != off))
		return errbuf_set(err, errlen,
				  "LUKS2 header: %s: hdr_size %llu or hdr_offset %llu is invalid "
				  "or truncated",
				  which, (unsigned long long)size,
				  (unsigned long long)be64(h + 256)),
		       COPY_DAMAGED;
	if (strncmp((const char *)h + 72, "sha256", 32))
		return errbuf_set(err, errlen, "LUKS2 header: %s: checksum_alg is not sha256",
				  which);
	/* The checksum covers the whole header area with the csum field (at 448) zeroed. */
	br_sha256_init(&c);
	br_sha256_update(&c, h, 448);
	br_sha256_update(&c, zero, 64);
	br_sha256_update(&c, h + 512, (size_t)size - 512);
	br_sha256_out(&c, csum);
	if (memcmp(csum, h + 448, 32))
		return errbuf_set(err, errlen, "LUKS2 header: %s: checksum mismatch", which),
		       COPY_DAMAGED;
	*hdr_size = size;
	return COPY_VALID;
}

/* The bytes beyond the two header copies that libcryptsetup reads: the keyslot areas, which
 * lie in [2 hdr_size, 2 hdr_size + keyslots_size) (libcryptsetup refuses a header whose
 * areas do not). */
struct extents {
	uint64_t keyslots_size, areas_end;
};

/* config.keyslots_size and the end of the furthest keyslot area, both bounded by
 * libcryptsetup's own limit on the keyslots area (128 MiB). */
static int json_extents(json_object *root, uint64_t size, struct extents *x, char *err,
			size_t errlen)
{
	const uint64_t max = 128u << 20;
	int64_t ks = u64str(obj(root, "config"), "keyslots_size", max);

	WANT(ks >= 0 && ks % 4096 == 0, "LUKS2 header: config: keyslots_size is invalid");
	x->keyslots_size = (uint64_t)ks;
	x->areas_end = 2 * size;
	json_object_object_foreach(obj(root, "keyslots"), kid, kv)
	{
		int64_t off = u64str(obj(kv, "area"), "offset", max + 2 * LUKS2_HDR_MAX);
		int64_t len = u64str(obj(kv, "area"), "size", max);

		WANT(off >= 0 && len >= 0 && (uint64_t)off >= 2 * size &&
			 (uint64_t)(off + len) <= 2 * size + x->keyslots_size,
		     "LUKS2 header: keyslot %.8s: area outside the keyslots area", kid);
		if ((uint64_t)(off + len) > x->areas_end)
			x->areas_end = (uint64_t)(off + len);
	}
	return 0;
}

/* The strict check of the JSON area of a copy that passed check_binary (h points at it, size
 * bytes): its enum disk_state, or -EINVAL with the field in err. */
static int check_json(const uint8_t *h, uint64_t size, struct extents *x, char *err, size_t errlen)
{
	static const char *const top[] = {"keyslots", "tokens", "segments",
					  "digests",  "config", NULL};
	static const char *const config[] = {"json_size", "keyslots_size", "flags", "requirements",
					     NULL};
	json_object *root, *part;
	size_t jlen;
	int r;

	jlen = strnlen((const char *)h + 4096, (size_t)size - 4096);
	root = json_parse_exact((const char *)h + 4096, jlen);
	r = -EINVAL;
	if (!root) {
		errbuf_set(err, errlen, "LUKS2 header: the JSON area does not parse");
		goto out;
	}
	if ((r = only(root, top, "metadata", err, errlen)) < 0 ||
	    (r = only(obj(root, "config"), config, "config", err, errlen)) < 0)
		goto out;
	r = -EINVAL;
	if (!(part = obj(root, "keyslots")) || !json_object_is_type(part, json_type_object) ||
	    !obj(root, "segments") || !obj(root, "digests") || !obj(root, "tokens")) {
		errbuf_set(err, errlen,
			   "LUKS2 header: keyslots, segments, digests or tokens missing");
		goto out;
	}
	json_object_object_foreach(part, kid,
				   kv) if ((r = check_keyslot(kid, kv, err, errlen)) < 0) goto out;
	part = obj(root, "segments");
	if (!json_object_is_type(part, json_type_object) || !json_object_object_length(part)) {
		r = errbuf_set(err, errlen, "LUKS2 header: no segments");
		goto out;
	}
	json_object_object_foreach(part, sid,
				   sv) if ((r = check_segment(sid, sv, err, errlen)) < 0) goto out;
	part = obj(root, "digests");
	if (!json_object_is_type(part, json_type_object)) {
		r = errbuf_set(err, errlen, "LUKS2 header: digests is not an object");
		goto out;
	}
	json_object_object_foreach(part, did,
				   dv) if ((r = check_digest(did, dv, err, errlen)) < 0) goto out;
	if ((r = json_extents(root, size, x, err, errlen)) < 0)
		goto out;
	r = initialized_token(obj(root, "tokens")) ? DISK_INITIALIZED : DISK_NOT_INITIALIZED;
out:
	json_object_put(root);
	return r;
}

/* The secondary copy libcryptsetup would find when the primary is unusable: the first offset
 * whose copy passes check_binary. Returns COPY_VALID (*off set), or the worst state seen
 * (COPY_DAMAGED when some offset held a damaged copy), or -EINVAL. */
static int scan_secondary(const uint8_t *buf, size_t len, uint64_t *off, uint64_t *size, char *err,
			  size_t errlen)
{
	int worst = COPY_ABSENT;

	for (size_t i = 0; i < sizeof hdr2_offsets / sizeof hdr2_offsets[0]; i++) {
		char where[40];
		int c;

		if (hdr2_offsets[i] >= len)
			break;
		snprintf(where, sizeof where, "secondary at 0x%llx",
			 (unsigned long long)hdr2_offsets[i]);
		c = check_binary(buf + hdr2_offsets[i], len - hdr2_offsets[i], hdr2_offsets[i], 1,
				 where, size, err, errlen);
		if (c < 0 || c == COPY_VALID) {
			*off = hdr2_offsets[i];
			return c;
		}
		if (c > worst)
			worst = c;
	}
	return worst;
}

int luks2_classify(const uint8_t *buf, size_t len, struct luks2_info *info, char *err,
		   size_t errlen)
{
	uint64_t size = 0, size2 = 0, off2 = 0, use = 0;
	struct extents x = {0}, x2 = {0};
	char err1[200] = "", err2[200] = "";
	int c1, c2, r = -EINVAL;

	c1 = check_binary(buf, len, 0, 0, "primary", &size, err1, sizeof err1);
	if (c1 < 0)
		return errbuf_set(err, errlen, "%s", err1);
	if (c1 == COPY_VALID) {
		/* libcryptsetup reads the secondary right after the primary and uses the copy
		 * with the higher sequence number, so a valid secondary must pass the same
		 * check; a damaged one is ignored (libcryptsetup repairs it from the primary). */
		off2 = size;
		c2 = off2 < len ? check_binary(buf + off2, len - off2, off2, 1, "secondary", &size2,
					       err2, sizeof err2)
				: COPY_ABSENT;
	} else {
		/* The primary is missing or damaged: libcryptsetup scans the secondary's offsets
		 * and recovers the primary from the first valid copy. Decide by that copy; never
		 * NEW while any copy of a header is on the disk. */
		c2 = scan_secondary(buf, len, &off2, &size2, err2, sizeof err2);
	}
	if (c2 < 0)
		return errbuf_set(err, errlen, "%s", err2);
	if (c1 != COPY_VALID && c2 != COPY_VALID) {
		if (c1 == COPY_ABSENT && c2 == COPY_ABSENT)
			return DISK_NEW;
		return errbuf_set(err, errlen, "%s%s%s (no intact copy of the header)",
				  c1 ? err1 : "LUKS2 header: primary: no magic", c2 ? "; " : "",
				  c2 ? err2 + 14 : "");
	}
	if (c1 == COPY_VALID && (r = check_json(buf, size, &x, err, errlen)) < 0)
		return r;
	if (c2 == COPY_VALID) {
		int r2 = check_json(buf + off2, size2, &x2, err2, sizeof err2);

		if (r2 < 0)
			return errbuf_set(err, errlen, "LUKS2 header: %s copy: %s",
					  c1 == COPY_VALID ? "secondary" : "recovered secondary",
					  err2 + 14);
		if (c1 != COPY_VALID || be64(buf + off2 + 16) > be64(buf + 16)) {
			r = r2;
			use = off2;
			size = size2;
			x = x2;
		}
	}
	if (info) {
		snprintf(info->uuid, sizeof info->uuid, "%.*s", 39, (const char *)buf + use + 168);
		info->hdr_size = size;
		info->damaged = c1 != COPY_VALID || c2 != COPY_VALID;
		info->keyslots_size = x.keyslots_size;
		info->areas_end = x.areas_end;
	}
	return r;
}
