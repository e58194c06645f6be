/* --version: the agent's version and, for every dependency, the pinned Debian source
 * version it was built from (deps/versions.txt, compiled in) and the version the linked
 * library reports about itself, where it has a way to. */
#include <stdio.h>
#include <string.h>

#include <json-c/json_c_version.h>
#include <libdevmapper.h>
#include <nghttp2/nghttp2.h>
#include <sodium.h>
#include <zlib.h>

#include "deps_versions.h" /* generated: DEPS_PINNED, CONSTEL_VERSION */
#include "version.h"

struct pinned {
	const char *name, *source, *version;
};

static const struct pinned pinned[] = {DEPS_PINNED};

static const char *reported(const char *name, char *buf, size_t len)
{
	if (!strcmp(name, "nghttp2"))
		return nghttp2_version(0)->version_str;
	if (!strcmp(name, "json-c"))
		return json_c_version();
	if (!strcmp(name, "libsodium"))
		return sodium_version_string();
	if (!strcmp(name, "zlib"))
		return zlibVersion();
	if (!strcmp(name, "libdm") && dm_get_library_version(buf, len))
		return buf;
	return "-";
}

void version_print(FILE *f)
{
	char buf[64];

	fprintf(f, "constel-agent %s\n", CONSTEL_VERSION);
	fprintf(f, "%-11s %-12s %-22s %s\n", "dependency", "source", "debian-version", "reported");
	for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
		fprintf(f, "%-11s %-12s %-22s %s\n", pinned[i].name, pinned[i].source,
			pinned[i].version, reported(pinned[i].name, buf, sizeof buf));
}
