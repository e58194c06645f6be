/* The state disk (spec §6). So far: deciding from the LUKS2 header alone what a disk is, with
 * the strict header check of §6.2 that refuses (never reformats) a header someone may have
 * swapped, e.g. for cipher_null. */
#ifndef CONSTEL_DISK_H
#define CONSTEL_DISK_H

#include <stddef.h>
#include <stdint.h>

#define LUKS2_HDR_MAX (4 * 1024 * 1024) /* binary header + JSON area, the largest LUKS2 allows */

enum disk_state {
	DISK_NEW = 0,		  /* not LUKS2: format it */
	DISK_NOT_INITIALIZED = 1, /* valid LUKS2, token 0 not "initialized": format it */
	DISK_INITIALIZED = 2,	  /* valid LUKS2 with the initialized token: the reboot path */
};

struct luks2_info {
	char uuid[40];
	uint64_t hdr_size;
};

/* Classifies the start of a disk (at least 4096 bytes; the whole header when it is LUKS2).
 * Returns an enum disk_state, or -EINVAL with one line in err naming the field when the
 * header is LUKS2 but fails the check (the caller must refuse the disk, not format it). */
int luks2_classify(const uint8_t *buf, size_t len, struct luks2_info *info, char *err,
		   size_t errlen);

#endif
