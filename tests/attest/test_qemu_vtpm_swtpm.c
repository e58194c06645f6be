/* The qemu-vtpm validator in C against documents from swtpm, with a firmware-style event log
 * that the test writes and replays into the TPM: the valid case, then every refusal of spec
 * §2.6–2.7 made on purpose (another nonce, changed user data, a PCR changed, an enforced
 * measurement wrong, a SHA-1-only document, a tampered event log). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/vtpm_fixture.h"

static const char event_data[] = "constel test event";
static uint8_t event_log[512];
static size_t event_log_len;

/* The Spec ID event, then one event on PCR 8 (EV_POST_CODE) with the digests of event_data in
 * four banks, as TPM2_PCR_Event(8, event_data) extends them. */
static void build_event_log(void)
{
	const struct vtpm_fx_event ev = {8, 1, event_data, strlen(event_data)};

	event_log_len = vtpm_fx_event_log(&ev, 1, event_log, sizeof event_log);
}

struct fixture {
	struct swtpm sw;
	uint8_t ak[TPM_PUBLIC_MAX];
	size_t ak_len, n;
	struct tpm_quote q[TPM_BANKS_MAX];
	uint8_t nonce[32], ud[32];
	uint8_t *doc;
	size_t doc_len;
};

/* swtpm with the event replayed into PCR 8, the AK, and one quote per bank. */
static int setup(struct fixture *f)
{
	struct tpm *t;
	struct tpm_bank banks[TPM_BANKS_MAX];
	uint8_t qdata[32];

	memset(f, 0, sizeof *f);
	memset(f->nonce, 0x5a, 32);
	memset(f->ud, 0xc3, 32);
	build_event_log();
	f->doc = malloc(ATLS_DOC_MAX);
	if (!f->doc || swtpm_start(&f->sw) < 0 || tpm_open(&f->sw.tcti, &t, NULL, 0) < 0)
		return -1;
	qemu_vtpm_tpm_nonce(f->ud, f->nonce, 32, qdata);
	if (tpm_pcr_event(t, 8, event_data, strlen(event_data)) < 0 ||
	    tpm_ak(t, f->ak, sizeof f->ak, &f->ak_len) < 0 ||
	    tpm_banks(t, banks, TPM_BANKS_MAX, &f->n) < 0) {
		tpm_close(t);
		return -1;
	}
	for (size_t i = 0; i < f->n; i++)
		if (tpm_quote(t, banks[i].alg, banks[i].pcrs, qdata, 32, &f->q[i]) < 0) {
			tpm_close(t);
			return -1;
		}
	tpm_close(t);
	return 0;
}

static void teardown(struct fixture *f)
{
	free(f->doc);
	swtpm_destroy(&f->sw);
}

/* Builds the document from the fixture's parts (quotes q[from..from+n)) and validates it. */
static int check(struct fixture *f, size_t from, size_t n, const uint8_t *log, size_t log_len,
		 const uint8_t *nonce, const struct measurements *m, char *err, size_t errlen)
{
	uint8_t ud[64];
	size_t ud_len;
	int r;

	if (qemu_vtpm_document(f->ak, f->ak_len, f->q + from, n, log, log_len, f->ud, f->doc,
			       ATLS_DOC_MAX, &f->doc_len) < 0)
		return -100;
	r = qemu_vtpm_validate(f->doc, f->doc_len, nonce, 32, m, ud, sizeof ud, &ud_len, err,
			       errlen);
	if (r == 0 && (ud_len != 32 || memcmp(ud, f->ud, 32)))
		return -101;
	return r;
}

static int has(const char *err, const char *want)
{
	if (strstr(err, want))
		return 1;
	fprintf(stderr, "error was: %s\n", err);
	return 0;
}

static void refusals(struct fixture *f);

TEST(qemu_vtpm_validate_accepts_and_refuses_what_go_does)
{
	struct fixture f;

	if (setup(&f) == 0)
		refusals(&f);
	else
		harness_fail(__FILE__, __LINE__, "swtpm setup failed");
	teardown(&f);
}

static void refusals(struct fixture *fp)
{
#define f (*fp)
	struct measurements m;
	char err[400], mj[512], hex8[65];
	uint8_t other[32], log2[512];
	size_t sha1 = 0;

	/* valid, with the event log replayed */
	err[0] = '\0';
	if (check(&f, 0, f.n, event_log, event_log_len, f.nonce, NULL, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "valid document refused: %s", err);
	/* measurements: PCR 8 as the log replays it (enforced) and PCR 15 zero */
	for (size_t i = 0; i < f.n; i++)
		if (f.q[i].alg == TPM_ALG_SHA256)
			hex_encode(f.q[i].values[8], 32, hex8, sizeof hex8);
		else if (f.q[i].alg == TPM_ALG_SHA1)
			sha1 = i;
	snprintf(
	    mj, sizeof mj,
	    "{\"measurements\":{\"8\":{\"expected\":\"%s\",\"warnOnly\":false},\"15\":\"%064d\"}}",
	    hex8, 0);
	CHECK(measurements_parse(mj, strlen(mj), &m, err, sizeof err) == 0 && m.n == 2);
	CHECK(check(&f, 0, f.n, event_log, event_log_len, f.nonce, &m, err, sizeof err) == 0);
	/* another nonce */
	memset(other, 0x5b, sizeof other);
	CHECK(check(&f, 0, f.n, event_log, event_log_len, other, NULL, err, sizeof err) == -EINVAL);
	CHECK(has(err, "quote nonce does not match ours"));
	/* changed user data: the nonce chain breaks */
	f.ud[0] ^= 1;
	CHECK(check(&f, 0, f.n, event_log, event_log_len, f.nonce, NULL, err, sizeof err) ==
	      -EINVAL);
	CHECK(has(err, "quote nonce does not match ours"));
	f.ud[0] ^= 1;
	/* enforced measurement wrong; the same one warn-only passes */
	snprintf(mj, sizeof mj,
		 "{\"4\":{\"expected\":\"%064d\",\"warnOnly\":false},"
		 "\"9\":{\"expected\":\"%s\",\"warnOnly\":false}}",
		 0, hex8);
	CHECK(measurements_parse(mj, strlen(mj), &m, err, sizeof err) == 0);
	CHECK(check(&f, 0, f.n, event_log, event_log_len, f.nonce, &m, err, sizeof err) == -EINVAL);
	CHECK(has(err, "measurement validation failed: PCR 9: expected"));
	m.m[1].warn_only = 1;
	CHECK(check(&f, 0, f.n, event_log, event_log_len, f.nonce, &m, err, sizeof err) == 0);
	/* SHA-1 only */
	CHECK(check(&f, sha1, 1, event_log, event_log_len, f.nonce, NULL, err, sizeof err) ==
	      -EINVAL);
	CHECK(has(err, "SHA-1 quotes are not accepted"));
	/* event log tampered: the event's digest in every bank (the first bank that passes
	 * would win otherwise, as in Go) */
	memcpy(log2, event_log, event_log_len);
	for (size_t off = 32 + 45 + 12 + 2, i = 0; i < 4; i++) {
		static const size_t size[] = {20, 32, 48, 64};

		log2[off] ^= 1;
		off += size[i] + 2;
	}
	CHECK(check(&f, 0, f.n, log2, event_log_len, f.nonce, NULL, err, sizeof err) == -EINVAL);
	CHECK(has(err, "event log: PCR 8 replays to"));
	/* a PCR value changed after the quote */
	for (size_t i = 0; i < f.n; i++)
		f.q[i].values[4][0] ^= 1;
	CHECK(check(&f, 0, f.n, event_log, event_log_len, f.nonce, NULL, err, sizeof err) ==
	      -EINVAL);
	CHECK(has(err, "PCR values do not match the quoted digest"));
#undef f
}

TEST(measurements_parse_refuses_with_one_line)
{
	const char *bad[] = {"[]",
			     "{\"x\":\"00\"}",
			     "{\"24\":\"00\"}",
			     "{\"4\":\"0011\"}",
			     "{\"4\":{\"warnOnly\":true}}",
			     "{\"4\":\"" /* 32 bytes then 48 */
			     "0000000000000000000000000000000000000000000000000000000000000000\","
			     "\"5\":\"000000000000000000000000000000000000000000000000000000000000"
			     "000000000000000000000000000000000000\"}"};
	struct measurements m;
	char err[200];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		if (measurements_parse(bad[i], strlen(bad[i]), &m, err, sizeof err) != -EINVAL ||
		    strncmp(err, "measurements: ", 14)) {
			harness_fail(__FILE__, __LINE__, "case %zu: '%s'", i, err);
			return;
		}
	}
}
