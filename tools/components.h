/* The Kubernetes components list the join service hands out in a ticket and the CLI sends in
 * InitRequest (spec §9): a JSON file, [{"url", "hash", "install_path", "extract"}, ...],
 * encoded as repeated components.Component. Static functions in a header: each tool is one
 * program of one source file. */
#ifndef CONSTEL_TOOL_COMPONENTS_H
#define CONSTEL_TOOL_COMPONENTS_H

#include <json-c/json.h>
#include <pb_encode.h>

#include "components.pb.h"
#include "tool.h"

/* The array in path, or NULL after one line saying why. */
static inline json_object *tool_components_load(const char *path)
{
	json_object *a = NULL;
	char *text = NULL;
	size_t n;

	if (tool_read_file(path, &text, &n) == 0)
		a = json_tokener_parse(text);
	free(text);
	if (!a || !json_object_is_type(a, json_type_array)) {
		log_error("%s: not a JSON array of components", path);
		json_object_put(a);
		return NULL;
	}
	return a;
}

/* nanopb encode callback for a repeated Component field; *arg is the json array (or NULL). */
static inline bool tool_components_encode(pb_ostream_t *os, const pb_field_t *f, void *const *arg)
{
	json_object *list = *arg;

	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		json_object *o = json_object_array_get_idx(list, i), *v;
		components_Component c = components_Component_init_zero;

		if (json_object_object_get_ex(o, "url", &v))
			snprintf(c.url, sizeof c.url, "%s", json_object_get_string(v));
		if (json_object_object_get_ex(o, "hash", &v))
			snprintf(c.hash, sizeof c.hash, "%s", json_object_get_string(v));
		if (json_object_object_get_ex(o, "install_path", &v))
			snprintf(c.install_path, sizeof c.install_path, "%s",
				 json_object_get_string(v));
		if (json_object_object_get_ex(o, "extract", &v))
			c.extract = json_object_get_boolean(v);
		if (!pb_encode_tag_for_field(os, f) ||
		    !pb_encode_submessage(os, components_Component_fields, &c))
			return false;
	}
	return true;
}

#endif
