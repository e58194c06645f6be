/* The harness's runner: main() runs every TEST of the binary, optionally only those whose
 * name contains argv[1], and exits 1 when any failed. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_TESTS 512

static struct {
	const char *name;
	test_fn fn;
} tests[MAX_TESTS];
static int ntests;
static int current_failed;
static const char *current_name = "?";

void harness_register(const char *name, test_fn fn)
{
	if (ntests == MAX_TESTS) {
		fprintf(stderr, "harness: more than %d tests in one binary\n", MAX_TESTS);
		exit(2);
	}
	tests[ntests].name = name;
	tests[ntests].fn = fn;
	ntests++;
}

int harness_failed(void)
{
	return current_failed;
}

void harness_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (current_failed)
		return;
	current_failed = 1;
	printf("FAIL %s: %s:%d: ", current_name, file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

int harness_check_bytes(const char *file, int line, const void *got, const void *want, size_t len)
{
	const unsigned char *g = got, *w = want;

	if (!memcmp(got, want, len))
		return 1;
	harness_fail(file, line, "bytes differ");
	printf("  got:  ");
	for (size_t i = 0; i < len; i++)
		printf("%02x", g[i]);
	printf("\n  want: ");
	for (size_t i = 0; i < len; i++)
		printf("%02x", w[i]);
	printf("\n");
	return 0;
}

size_t harness_unhex(const char *hex, unsigned char *out, size_t cap)
{
	size_t n = strlen(hex) / 2;

	if (strlen(hex) % 2 || n > cap) {
		fprintf(stderr, "harness: bad hex literal '%s'\n", hex);
		exit(2);
	}
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
			fprintf(stderr, "harness: bad hex literal '%s'\n", hex);
			exit(2);
		}
		out[i] = (unsigned char)v;
	}
	return n;
}

int main(int argc, char **argv)
{
	int failed = 0;

	for (int i = 0; i < ntests; i++) {
		if (argc > 1 && !strstr(tests[i].name, argv[1]))
			continue;
		current_failed = 0;
		current_name = tests[i].name;
		printf("---- %s\n", tests[i].name);
		fflush(stdout);
		tests[i].fn();
		if (current_failed)
			failed++;
		else
			printf("PASS %s\n", tests[i].name);
		fflush(stdout);
	}
	return failed ? 1 : 0;
}

void harness_tmpdir(char dir[64], const char *name)
{
	if ((size_t)snprintf(dir, 64, "/tmp/constel-%s-XXXXXX", name) >= 64 || !mkdtemp(dir))
		abort();
}

const char *harness_path(const char *dir, const char *name)
{
	static char p[8][300];
	static int i;

	i = (i + 1) % 8;
	snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
	return p[i];
}

void harness_rmtree(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "harness: could not remove %s\n", dir);
}

unsigned char *harness_vector(const char *rel, size_t *len)
{
	const char *dir = getenv("CONSTEL_VECTORS");
	char path[512];
	unsigned char *b;
	FILE *f;
	long n;

	snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "../shared/vectors", rel);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: evidence %s missing (set CONSTEL_VECTORS)\n", current_name,
			path);
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	b = malloc((size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	if (b)
		b[n] = 0;
	*len = (size_t)n;
	return b;
}
