/* The slimmed static libcryptsetup of the deps prefix still verifies dm-verity (the agent's
 * verity root, agent/boot/mount.c) and refuses the foreign formats it was built without.
 * Built by tests/deps/test_deps_verity.sh with musl against the prefix, as the agent is.
 *   verity_check verity DATA HASH ROOTHASH_HEX: crypt_load(CRYPT_VERITY) with the hash device,
 *     then the root hash checked over every block in userspace (no device-mapper needed);
 *     prints "verity N" with N the return value (0 good, -1 = -EPERM mismatch)
 *   verity_check tcrypt FILE: crypt_load(CRYPT_TCRYPT); prints "tcrypt N" */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libcryptsetup.h>

static void log_line(int level, const char *msg, void *usrptr)
{
	(void)usrptr;
	if (level == CRYPT_LOG_ERROR)
		fprintf(stderr, "cryptsetup: %s", msg);
}

static int unhex(const char *hex, unsigned char *out, size_t max, size_t *len)
{
	size_t n = strlen(hex);

	if (n % 2 || n / 2 > max)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (unsigned char)v;
	}
	*len = n / 2;
	return 0;
}

static int verity(const char *data, const char *hash, const char *roothash)
{
	struct crypt_params_verity params = {.flags = CRYPT_VERITY_CHECK_HASH};
	unsigned char rh[64];
	struct crypt_device *cd;
	size_t len;
	int r;

	if (unhex(roothash, rh, sizeof rh, &len) < 0)
		return -EINVAL;
	if ((r = crypt_init_data_device(&cd, hash, data)) < 0)
		return r;
	r = crypt_load(cd, CRYPT_VERITY, &params);
	if (r == 0)
		r = crypt_activate_by_volume_key(cd, NULL, (const char *)rh, len, 0);
	crypt_free(cd);
	return r;
}

static int tcrypt(const char *file)
{
	struct crypt_params_tcrypt params = {.passphrase = "x", .passphrase_size = 1};
	struct crypt_device *cd;
	int r;

	if ((r = crypt_init(&cd, file)) < 0)
		return r;
	r = crypt_load(cd, CRYPT_TCRYPT, &params);
	crypt_free(cd);
	return r;
}

int main(int argc, char **argv)
{
	crypt_set_log_callback(NULL, log_line, NULL);
	if (argc == 5 && strcmp(argv[1], "verity") == 0) {
		printf("verity %d\n", verity(argv[2], argv[3], argv[4]));
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "tcrypt") == 0) {
		printf("tcrypt %d\n", tcrypt(argv[2]));
		return 0;
	}
	fprintf(stderr, "usage: verity_check verity DATA HASH ROOTHASH | tcrypt FILE\n");
	return 2;
}
