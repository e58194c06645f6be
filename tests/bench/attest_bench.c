/* make bench: each attestation variant's document size and issuing time on swtpm, with the
 * fixtures of the issuers' tests (tests/attest/vtpm_fixture.h: swtpm provisioned as the cloud
 * provisions its vTPM, the cloud's IMDS, GCE's API, the fake configfs-tsm, the TDX quote
 * endpoint, all on 127.0.0.1). Every variant's fixture is up at once and the documents are
 * issued in rounds, one per variant a round, so that a busy machine weighs on all alike;
 * tests/bench/attest-variants.sh takes the ratios to qemu-vtpm of the same run.
 *   ATTEST_BENCH_N (default 15)      documents per variant
 *   ATTEST_BENCH_VARIANTS (all)      a comma-separated subset
 * Prints, per variant, "BENCH variant=V doc_bytes=B median_ms=M min_ms=A max_ms=Z n=N
 * first_ms=F" or "BENCH variant=V failed: why"; the first document (F: the AK made or loaded,
 * the fakes' first answers) is issued before the rounds and not among the N. Built like the unit
 * tests (ASan + UBSan, host gcc): the issuing time is mostly swtpm's (a process of its own) and the
 * fakes', the same for all. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/vtpm_fixture.h"

static const char *const variants[] = {"qemu-vtpm",   "gcp-sev-es",  "aws-nitro-tpm",
				       "aws-sev-snp", "gcp-sev-snp", "azure-sev-snp",
				       "azure-tdx"};
#define NV    (sizeof variants / sizeof variants[0])
#define N_MAX 1000

static int cmp_ms(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000 + (double)ts.tv_nsec / 1e6;
}

static int wanted(const char *v)
{
	const char *list = getenv("ATTEST_BENCH_VARIANTS"), *p;
	size_t n = strlen(v);

	if (!list || !*list)
		return 1;
	for (p = list; (p = strstr(p, v)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

struct row {
	struct vtpm_fx fx;
	int up, failed;
	size_t bytes;
	double first, ms[N_MAX];
};

static struct row rows[NV];
static uint8_t doc[ATLS_DOC_MAX];

TEST(attest_variants_document_size_and_issuing_time)
{
	const char *ns = getenv("ATTEST_BENCH_N");
	int n = ns ? atoi(ns) : 15, any = 0;
	char err[400];

	CHECK(n >= 1 && n <= N_MAX);
	if (getenv("ATTEST_BENCH_VARIANTS")) { /* a name that is no variant is an error */
		char list[256], *save = NULL;

		snprintf(list, sizeof list, "%s", getenv("ATTEST_BENCH_VARIANTS"));
		for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
			size_t v = 0;

			while (v < NV && strcmp(variants[v], w))
				v++;
			if (v == NV) {
				printf("BENCH variant=%s failed: no such variant\n", w);
				harness_fail(__FILE__, __LINE__, "no variant %s", w);
			}
		}
	}
	for (size_t v = 0; v < NV; v++) {
		if (!wanted(variants[v]))
			continue;
		any = 1;
		rows[v].up = vtpm_fx_start(&rows[v].fx, variants[v], 0x5a, 0xc3) == 0;
		if (!rows[v].up) {
			printf("BENCH variant=%s failed: fixture set-up (see stderr)\n",
			       variants[v]);
			harness_fail(__FILE__, __LINE__, "%s: set-up failed", variants[v]);
		}
	}
	CHECK(any);
	for (int i = -1; i < n; i++)
		for (size_t v = 0; v < NV; v++) {
			struct row *r = &rows[v];
			size_t len = 0;
			double t0;

			if (!r->up || r->failed)
				continue;
			t0 = now_ms();
			if (vtpm_fx_issue(&r->fx, doc, sizeof doc, &len, err, sizeof err) < 0) {
				printf("BENCH variant=%s failed: %s\n", variants[v], err);
				r->failed = 1;
				continue;
			}
			if (i < 0)
				r->first = now_ms() - t0;
			else
				r->ms[i] = now_ms() - t0;
			r->bytes = len > r->bytes ? len : r->bytes;
		}
	for (size_t v = 0; v < NV; v++) {
		struct row *r = &rows[v];

		if (r->up && !r->failed) {
			qsort(r->ms, (size_t)n, sizeof r->ms[0], cmp_ms);
			printf(
			    "BENCH variant=%s doc_bytes=%zu median_ms=%.1f min_ms=%.1f max_ms=%.1f "
			    "n=%d first_ms=%.1f\n",
			    variants[v], r->bytes, r->ms[n / 2], r->ms[0], r->ms[n - 1], n,
			    r->first);
		}
		if (wanted(variants[v]))
			vtpm_fx_stop(&r->fx);
		if (r->failed)
			harness_fail(__FILE__, __LINE__, "%s: issuing failed", variants[v]);
	}
	fflush(stdout);
}
