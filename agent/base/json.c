/* Parsing outside JSON strictly: the whole buffer must be exactly one JSON value (no NUL
 * terminator needed, nothing after the value). Every parser of documents, headers and
 * metadata starts here. */
#include <limits.h>

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
