/* The CLI's master-secret file, constellation-mastersecret.json (spec §3.4): the 32-byte key
 * and salt in standard base64, as Go's WriteJSON writes it (MarshalIndent with a tab). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "flow.h"

int master_secret_write(const char *path, const uint8_t key[32], const uint8_t salt[32])
{
	char k[BASE64_ENCODED_LEN(32) + 1], s[BASE64_ENCODED_LEN(32) + 1], buf[256];
	int n, r;

	base64_encode(BASE64_STD, key, 32, k, sizeof k);
	base64_encode(BASE64_STD, salt, 32, s, sizeof s);
	n = snprintf(buf, sizeof buf, "{\n\t\"key\": \"%s\",\n\t\"salt\": \"%s\"\n}", k, s);
	r = write_file_excl(path, buf, (size_t)n, 0600);
	secret_wipe(k, sizeof k);
	secret_wipe(buf, sizeof buf);
	return r;
}

static int field(json_object *o, const char *name, uint8_t out[32], char *err, size_t errlen)
{
	json_object *v;
	size_t n;

	if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string) ||
	    base64_decode(BASE64_STD, json_object_get_string(v),
			  (size_t)json_object_get_string_len(v), out, 32, &n) < 0 ||
	    n != 32)
		return errbuf_set(err, errlen, "master secret: \"%s\" is not 32 bytes of base64",
				  name);
	return 0;
}

int master_secret_read(const char *path, uint8_t key[32], uint8_t salt[32], char *err,
		       size_t errlen)
{
	char buf[1024];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;
	json_object *o;

	if (fd < 0)
		return errbuf_set(err, errlen, "master secret: %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0 || (size_t)n == sizeof buf - 1)
		return errbuf_set(err, errlen, "master secret: %s: empty or too large", path);
	buf[n] = '\0';
	o = json_tokener_parse(buf);
	secret_wipe(buf, sizeof buf);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return errbuf_set(err, errlen, "master secret: %s is not a JSON object", path);
	}
	r = field(o, "key", key, err, errlen);
	if (r == 0)
		r = field(o, "salt", salt, err, errlen);
	json_object_put(o); /* json-c does not wipe its strings: the file is ours to guard */
	return r;
}
