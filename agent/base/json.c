/* Parsing outside JSON strictly: the whole buffer must be exactly one JSON value (no NUL
 * terminator needed, nothing after the value). Every parser of documents, headers and
 * metadata starts here. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "base.h"

struct json_object *json_parse_exact(const char *buf, size_t len)
{
	json_tokener *tok;
	json_object *root;

	if (len > INT_MAX || !(tok = json_tokener_new()))
		return NULL;
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (root && json_tokener_get_parse_end(tok) != len) {
		json_object_put(root);
		root = NULL;
	}
	json_tokener_free(tok);
	return root;
}

int json_str_member(json_object *o, const char *key, char *out, size_t cap)
{
	json_object *v;
	size_t n;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v))
		return -ENOENT;
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap || memchr(json_object_get_string(v), 0, n))
		return -EINVAL;
	memcpy(out, json_object_get_string(v), n + 1);
	return 0;
}

json_object *json_member(json_object *o, const char *key, int type)
{
	json_object *v = NULL;

	if (o && json_object_is_type(o, json_type_object) &&
	    json_object_object_get_ex(o, key, &v) && json_object_is_type(v, (json_type)type))
		return v;
	return NULL;
}

json_object *json_member_go(json_object *o, const char *key)
{
	json_object *found = NULL;

	if (!json_object_is_type(o, json_type_object))
		return NULL;
	json_object_object_foreach(o, k, v)
	{
		if (!strcasecmp(k, key))
			found = v;
	}
	return found;
}
