/* Fixtures of the disk tests: LUKS2 images made by Debian's cryptsetup, as a node's state disk
 * looks after its first boot. */
#ifndef CONSTEL_TEST_LUKS_FIXTURE_H
#define CONSTEL_TEST_LUKS_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

/* A 20 MiB initialized LUKS2 image at path (as tests/disk/test_disk_state.sh makes it):
 * passphrase "pass", 4096-byte sectors, Constellation's token saying diskIsInitialized. */
static inline int luks_fixture_initialized(const char *path)
{
	char cmd[2048];

	snprintf(
	    cmd, sizeof cmd,
	    "truncate -s 20M %s && printf pass | cryptsetup luksFormat --type luks2 "
	    "--batch-mode --cipher aes-xts-plain64 --key-size 512 --sector-size 4096 "
	    "--pbkdf argon2id --pbkdf-memory 32 --pbkdf-force-iterations 4 --key-file - %s "
	    ">/dev/null 2>&1 && printf '%s' | cryptsetup token import --token-id 0 "
	    "--token-replace %s >/dev/null 2>&1",
	    path, path,
	    "{\"type\":\"constellation-state-disk\",\"keyslots\":[],\"diskIsInitialized\":true}",
	    path);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
