/* Stand-ins for libcryptsetup's three foreign on-disk formats (TrueCrypt/VeraCrypt, BitLocker,
 * FileVault2), which the agent never opens: it loads, formats and activates only LUKS2 (with
 * dm-integrity) and dm-verity. deps/build.sh compiles this file against the cryptsetup build's own
 * headers (so every prototype is checked against the real one) and puts it into libcryptsetup.a
 * in place of tcrypt.o, bitlk.o and fvault2.o. setup.c is their only caller, and only for a
 * device of that type (CRYPT_TCRYPT, CRYPT_BITLK, CRYPT_FVAULT2 or a TCRYPT-* device-mapper
 * UUID); there each call now fails with -ENOTSUP and one log line. Dropping them takes ~75 KiB out
 * of the agent: the three formats' code and the POSIX regex engine that only fvault2.o calls.
 * A newer cryptsetup that calls another function of these formats fails to link (the member is
 * gone), never silently. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libcryptsetup.h>

#include "bitlk/bitlk.h"
#include "fvault2/fvault2.h"
#include "tcrypt/tcrypt.h"

static int not_built(struct crypt_device *cd, const char *format)
{
	char msg[160];

	snprintf(msg, sizeof msg,
		 "%s devices are not supported by this libcryptsetup (constel-agent builds it for "
		 "LUKS2 and dm-verity only).\n",
		 format);
	crypt_log(cd, CRYPT_LOG_ERROR, msg);
	return -ENOTSUP;
}

int TCRYPT_read_phdr(struct crypt_device *cd, struct tcrypt_phdr *hdr,
		     struct crypt_params_tcrypt *params)
{
	(void)hdr;
	(void)params;
	return not_built(cd, "TCRYPT");
}

int TCRYPT_init_by_name(struct crypt_device *cd, const char *name, const char *uuid,
			const struct dm_target *tgt, struct device **device,
			struct crypt_params_tcrypt *tcrypt_params, struct tcrypt_phdr *tcrypt_hdr)
{
	(void)name;
	(void)uuid;
	(void)tgt;
	(void)device;
	(void)tcrypt_params;
	(void)tcrypt_hdr;
	return not_built(cd, "TCRYPT");
}

int TCRYPT_activate(struct crypt_device *cd, const char *name, struct tcrypt_phdr *hdr,
		    struct crypt_params_tcrypt *params, uint32_t flags)
{
	(void)name;
	(void)hdr;
	(void)params;
	(void)flags;
	return not_built(cd, "TCRYPT");
}

int TCRYPT_deactivate(struct crypt_device *cd, const char *name, uint32_t flags)
{
	(void)name;
	(void)flags;
	return not_built(cd, "TCRYPT");
}

uint64_t TCRYPT_get_data_offset(struct crypt_device *cd, struct tcrypt_phdr *hdr,
				struct crypt_params_tcrypt *params)
{
	(void)cd;
	(void)hdr;
	(void)params;
	return 0;
}

uint64_t TCRYPT_get_iv_offset(struct crypt_device *cd, struct tcrypt_phdr *hdr,
			      struct crypt_params_tcrypt *params)
{
	(void)cd;
	(void)hdr;
	(void)params;
	return 0;
}

int TCRYPT_get_volume_key(struct crypt_device *cd, struct tcrypt_phdr *hdr,
			  struct crypt_params_tcrypt *params, struct volume_key **vk)
{
	(void)hdr;
	(void)params;
	(void)vk;
	return not_built(cd, "TCRYPT");
}

int TCRYPT_dump(struct crypt_device *cd, struct tcrypt_phdr *hdr,
		struct crypt_params_tcrypt *params)
{
	(void)hdr;
	(void)params;
	return not_built(cd, "TCRYPT");
}

int BITLK_read_sb(struct crypt_device *cd, struct bitlk_metadata *params)
{
	(void)params;
	return not_built(cd, "BITLK");
}

int BITLK_dump(struct crypt_device *cd, struct device *device, struct bitlk_metadata *params)
{
	(void)device;
	(void)params;
	return not_built(cd, "BITLK");
}

int BITLK_get_volume_key(struct crypt_device *cd, const char *password, size_t passwordLen,
			 const struct bitlk_metadata *params, struct volume_key **open_fvek_key)
{
	(void)password;
	(void)passwordLen;
	(void)params;
	(void)open_fvek_key;
	return not_built(cd, "BITLK");
}

int BITLK_activate_by_passphrase(struct crypt_device *cd, const char *name, const char *password,
				 size_t passwordLen, const struct bitlk_metadata *params,
				 uint32_t flags)
{
	(void)name;
	(void)password;
	(void)passwordLen;
	(void)params;
	(void)flags;
	return not_built(cd, "BITLK");
}

int BITLK_activate_by_volume_key(struct crypt_device *cd, const char *name, const char *volume_key,
				 size_t volume_key_size, const struct bitlk_metadata *params,
				 uint32_t flags)
{
	(void)name;
	(void)volume_key;
	(void)volume_key_size;
	(void)params;
	(void)flags;
	return not_built(cd, "BITLK");
}

/* Nothing was ever read into a BITLK context, so there is nothing to free. */
void BITLK_bitlk_fvek_free(struct bitlk_fvek *fvek)
{
	(void)fvek;
}

void BITLK_bitlk_vmk_free(struct bitlk_vmk *vmk)
{
	(void)vmk;
}

void BITLK_bitlk_metadata_free(struct bitlk_metadata *params)
{
	(void)params;
}

int FVAULT2_read_metadata(struct crypt_device *cd, struct fvault2_params *params)
{
	(void)params;
	return not_built(cd, "FVAULT2");
}

int FVAULT2_get_volume_key(struct crypt_device *cd, const char *passphrase, size_t passphrase_len,
			   const struct fvault2_params *params, struct volume_key **vol_key)
{
	(void)passphrase;
	(void)passphrase_len;
	(void)params;
	(void)vol_key;
	return not_built(cd, "FVAULT2");
}

int FVAULT2_dump(struct crypt_device *cd, struct device *device,
		 const struct fvault2_params *params)
{
	(void)device;
	(void)params;
	return not_built(cd, "FVAULT2");
}

int FVAULT2_activate_by_passphrase(struct crypt_device *cd, const char *name,
				   const char *passphrase, size_t passphrase_len,
				   const struct fvault2_params *params, uint32_t flags)
{
	(void)name;
	(void)passphrase;
	(void)passphrase_len;
	(void)params;
	(void)flags;
	return not_built(cd, "FVAULT2");
}

int FVAULT2_activate_by_volume_key(struct crypt_device *cd, const char *name, const char *key,
				   size_t key_size, const struct fvault2_params *params,
				   uint32_t flags)
{
	(void)name;
	(void)key;
	(void)key_size;
	(void)params;
	(void)flags;
	return not_built(cd, "FVAULT2");
}
