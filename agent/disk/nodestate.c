/* The node-state file of spec §6.5 on the state disk: {"Role", "MeasurementSalt"} as Go's
 * json.MarshalIndent(v, "", "\t") writes it, mode 0600. On the reboot path only the salt is
 * read, and it must be exactly 32 bytes (it feeds the cluster ID that marks PCR 15). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "base/base.h"
#include "disk.h"

#define NODE_STATE_MAX 4096

int node_state_write(const char *path, const char *role, const uint8_t salt[32])
{
	char b64[BASE64_ENCODED_LEN(32) + 1], doc[256];
	int n, r;

	if (strcmp(role, "ControlPlane") && strcmp(role, "Worker"))
		return log_err(-EINVAL,
			       "node state: role '%.32s' is neither ControlPlane nor Worker", role);
	base64_encode(BASE64_STD, salt, 32, b64, sizeof b64);
	n = snprintf(doc, sizeof doc, "{\n\t\"Role\": \"%s\",\n\t\"MeasurementSalt\": \"%s\"\n}",
		     role, b64);
	/* written aside and renamed: a reader finds the old file or the whole new one */
	if ((r = write_file_replace(path, doc, (size_t)n, 0600)) < 0)
		return log_err(r, "node state: %s", path);
	return 0;
}

int node_state_parse(const char *buf, size_t len, uint8_t salt[32], char *err, size_t errlen)
{
	json_object *root, *v;
	uint8_t out[48];
	size_t n = 0;
	int r = -EINVAL;

	if (len > NODE_STATE_MAX)
		return errbuf_set(err, errlen, "node state: %zu bytes, at most %d", len,
				  NODE_STATE_MAX);
	root = json_parse_exact(buf, len);
	if (!root || !json_object_is_type(root, json_type_object)) {
		errbuf_set(err, errlen, "node state: not a JSON object");
	} else if (!json_object_object_get_ex(root, "MeasurementSalt", &v) ||
		   !json_object_is_type(v, json_type_string)) {
		errbuf_set(err, errlen, "node state: MeasurementSalt missing or not a string");
	} else if (base64_decode(BASE64_STD, json_object_get_string(v),
				 (size_t)json_object_get_string_len(v), out, sizeof out, &n) < 0 ||
		   n != 32) {
		errbuf_set(err, errlen, "node state: MeasurementSalt is not 32 bytes of base64");
	} else {
		memcpy(salt, out, 32);
		r = 0;
	}
	secret_wipe(out, sizeof out);
	json_object_put(root);
	return r;
}

int node_state_read(const char *path, uint8_t salt[32])
{
	char buf[NODE_STATE_MAX + 1], err[160];
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return log_err(-errno, "node state: %s", path);
	n = read_full(fd, buf, sizeof buf); /* one byte more than allowed: too long shows */
	close(fd);
	if (n < 0)
		return log_err((int)n, "node state: %s", path);
	r = node_state_parse(buf, (size_t)n, salt, err, sizeof err);
	if (r < 0)
		log_error("%s (%s)", err, path);
	return r;
}
