/* A small unit-test harness. Each test binary runs its registered tests in order and prints
 * one line per test, "PASS name" or "FAIL name: file:line: what", which tests/run.sh counts.
 *
 *   TEST(hex_decode_rejects_odd_length) { CHECK(hex_decode("abc", 3, b, 8, NULL) == -EINVAL); }
 */
#ifndef CONSTEL_TEST_HARNESS_H
#define CONSTEL_TEST_HARNESS_H

#include <stddef.h>

typedef void (*test_fn)(void);

void harness_register(const char *name, test_fn fn);
void harness_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int harness_failed(void);
/* Compares two byte strings; on a difference records a failure showing both in hex. */
int harness_check_bytes(const char *file, int line, const void *got, const void *want, size_t len);
/* Decodes a hex literal for test vectors; aborts the test binary on a malformed literal. */
size_t harness_unhex(const char *hex, unsigned char *out, size_t cap);
/* Reads recorded evidence REL from ${CONSTEL_VECTORS:-../shared/vectors} (tests run from the
 * repository) into a new NUL-terminated buffer of *len bytes; NULL, with a line on stderr,
 * when it is missing (the caller's test then fails). */
unsigned char *harness_vector(const char *rel, size_t *len);

/* A test's fixture directory: a fresh /tmp/constel-<name>-XXXXXX into dir (aborts when it
 * cannot be made), paths in it (one of 8 rotating buffers, so a few can be used at once), and
 * its removal with everything in it (a failure is reported on stderr). */
void harness_tmpdir(char dir[64], const char *name);
const char *harness_path(const char *dir, const char *name);
void harness_rmtree(const char *dir);

#define TEST(name)                                                     \
	static void name(void);                                        \
	__attribute__((constructor)) static void register_##name(void) \
	{                                                              \
		harness_register(#name, name);                         \
	}                                                              \
	static void name(void)

/* On failure records where and what, then leaves the test function. */
#define CHECK(cond)                                                    \
	do {                                                           \
		if (!(cond)) {                                         \
			harness_fail(__FILE__, __LINE__, "%s", #cond); \
			return;                                        \
		}                                                      \
	} while (0)

#define CHECK_BYTES(got, want, len)                                                 \
	do {                                                                        \
		if (!harness_check_bytes(__FILE__, __LINE__, (got), (want), (len))) \
			return;                                                     \
	} while (0)

#endif
