/* What the host tools share: the peer validator (qemu-vtpm against a measurements file, or
 * the test-only dummy variant), reading small files. Static functions in a header because
 * each tool is one program of one source file. */
#ifndef CONSTEL_TOOL_H
#define CONSTEL_TOOL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attest/attest.h"
#include "attest/vtpm.h"
#include "base/base.h"
#include "cli.h"

/* Reads a whole file of at most max bytes into a NUL-terminated buffer; -EFBIG when it is
 * larger (nothing is cut off silently). */
static inline int tool_read_file_max(const char *path, size_t max, char **ret, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = max < 65536 ? max : 65536, n = 0;
	char *b, *nb;

	if (fd < 0)
		return -errno;
	b = malloc(cap + 1);
	for (;;) {
		ssize_t r;

		if (!b) {
			close(fd);
			return -ENOMEM;
		}
		if (n == cap) {
			if (cap == max) { /* one byte more would not fit */
				char c;

				r = read(fd, &c, 1);
				if (r == 0)
					break;
				free(b);
				close(fd);
				return r < 0 ? -errno : -EFBIG;
			}
			cap = cap * 2 < max ? cap * 2 : max;
			nb = realloc(b, cap + 1);
			if (!nb)
				free(b);
			b = nb;
			continue;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(b);
			close(fd);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	*ret = b;
	*len = n;
	return 0;
}

/* A small file (configuration, keys, hashes): at most 1 MiB. */
static inline int tool_read_file(const char *path, char **ret, size_t *len)
{
	return tool_read_file_max(path, 1 << 20, ret, len);
}

/* The attestation options every tool that validates a peer shares: put TOOL_ATTEST_OPTS(&a)
 * into the tool's option table, then tool_validator(&a, ...). */
struct tool_attest {
	const char *variant;	/* --attestation V (a tool's default before parsing) */
	const char *mpath;	/* --measurements FILE: measurements or attestationConfig JSON */
	const char *amd_root;	/* --amd-root PEM: trust only this ARK (tests) */
	const char *intel_root; /* --intel-root PEM: trust only this root CA (tests) */
	const char *collateral; /* --tdx-collateral DIR */
	const char *at;		/* --at RFC3339: certificates valid at (default now) */
	const char *api;	/* --api URL: the cloud API the validator asks (GCE, EC2) */
	const char *maa_url;	/* --maa-url URL: azure-sev-snp's MAA (else the config's) */
	const char *pcs, *pcs_certs, *tdx_cache, *ca_bundle; /* without --tdx-collateral */
	struct vtpm_policy p;
	char *mtext, *root; /* what p.config and p.test_root point into */
};

#define TOOL_ATTEST_OPTS(a)                                                                      \
	{"attestation", &(a)->variant, 0}, {"measurements", &(a)->mpath, 0},                     \
	    {"amd-root", &(a)->amd_root, 0}, {"intel-root", &(a)->intel_root, 0},                \
	    {"tdx-collateral", &(a)->collateral, 0}, {"at", &(a)->at, 0}, {"api", &(a)->api, 0}, \
	    {"pcs", &(a)->pcs, 0}, {"pcs-certs", &(a)->pcs_certs, 0},                            \
	    {"tdx-cache", &(a)->tdx_cache, 0}, {"maa-url", &(a)->maa_url, 0},                    \
	{                                                                                        \
		"ca-bundle", &(a)->ca_bundle, 0                                                  \
	}

/* The usage lines of TOOL_ATTEST_OPTS. */
static inline void tool_attest_usage(FILE *f)
{
	fprintf(f,
		"Attestation: --attestation V (%s, dummy) --measurements FILE (the\n"
		"measurements JSON, or the variant's attestationConfig {\"measurements\": ...})\n"
		"[--amd-root PEM] [--intel-root PEM] (trust only this root: tests)\n"
		"[--tdx-collateral DIR] [--at YYYY-MM-DDTHH:MM:SSZ] [--api URL] (GCE/EC2 API)\n"
		"[--maa-url URL] (azure-sev-snp's MAA fallback, docs/maa.md)\n"
		"without --tdx-collateral, TDX collateral from Intel's PCS: [--pcs URL]\n"
		"[--pcs-certs URL] [--tdx-cache DIR] [--ca-bundle FILE] (docs/tdx.md; also the\n"
		"anchors of an https --api)\n",
		vtpm_check_names());
}

/* YYYY-MM-DDTHH:MM:SSZ as UTC. */
static inline int tool_parse_time(const char *s, time_t *ret)
{
	struct tm tm = {0};
	int y, mo, d, h, mi, se, n = 0;

	if (strlen(s) != 20 ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 ||
	    n != 20 || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 ||
	    mi < 0 || mi > 59 || se < 0 || se > 60)
		return -EINVAL;
	for (int i = 0; i < 20; i++)
		if (i != 4 && i != 7 && i != 10 && i != 13 && i != 16 && i != 19 &&
		    (s[i] < '0' || s[i] > '9'))
			return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	*ret = timegm(&tm);
	return 0;
}

#include "tdx-pcs.h"

/* vtpm_policy's tdx_fetch: Intel's PCS into the cache, with a's options */
static inline int tool_tdx_fetch(const struct vtpm_policy *p, const uint8_t *quote, size_t len,
				 char *dir, size_t cap, char *err, size_t errlen)
{
	const struct tool_attest *a = p->tdx_fetch_ctx;
	struct pcs_opts po = {
	    a->pcs ? a->pcs : PCS_DEFAULT,
	    a->pcs_certs ? a->pcs_certs : PCS_CERTS_DEFAULT,
	    a->tdx_cache ? a->tdx_cache : PCS_CACHE_DEFAULT,
	    a->ca_bundle ? a->ca_bundle : CA_BUNDLE_DEFAULT,
	    p->at ? p->at : time(NULL),
	};

	return pcs_collateral(&po, quote, len, dir, cap, err, errlen);
}

/* a->p for a's options (a->variant a vTPM variant; no --measurements: none). */
static inline int tool_policy(struct tool_attest *a, char *err, size_t errlen)
{
	const char *rpath = a->amd_root ? a->amd_root : a->intel_root;
	size_t len = 0;
	int r;

	if (a->amd_root && a->intel_root)
		return errbuf_set(err, errlen, "--amd-root and --intel-root exclude each other");
	if (a->mpath && (r = tool_read_file(a->mpath, &a->mtext, &len)) < 0)
		return errbuf_set(err, errlen, "%s: %s", a->mpath, strerror(-r));
	if (rpath) {
		size_t rlen;

		r = tool_read_file(rpath, &a->root, &rlen);
		if (r < 0)
			return errbuf_set(err, errlen, "%s: %s", rpath, strerror(-r));
		log_warn("trusting the root in %s instead of the vendor's: for tests only", rpath);
	}
	/* the policy's fields first: policy_init may read them */
	memset(&a->p, 0, sizeof a->p);
	a->p.test_root = a->root;
	a->p.collateral = a->collateral;
	a->p.tdx_fetch = tool_tdx_fetch;
	a->p.tdx_fetch_ctx = a;
	a->p.api = a->api;
	a->p.maa_url = a->maa_url;
	a->p.ca_bundle = a->ca_bundle;
	if (a->at && tool_parse_time(a->at, &a->p.at) < 0)
		return errbuf_set(err, errlen, "--at: YYYY-MM-DDTHH:MM:SSZ, not '%.32s'", a->at);
	return vtpm_policy_init(&a->p, a->variant, a->mtext, len, err, errlen);
}

/* The validator for a's options: the test-only dummy, or any vTPM variant with a policy from
 * the measurements file and the flags (a must outlive v). */
static inline int tool_validator(struct tool_attest *a, struct atls_validator *v, char *err,
				 size_t errlen)
{
	if (!a->variant)
		a->variant = "qemu-vtpm";
	if (!strcmp(a->variant, "dummy")) {
		log_warn("attestation variant dummy proves nothing about the node: for tests only");
		*v = attest_dummy_validator;
		return 0;
	}
	if (!vtpm_check_find(a->variant))
		return errbuf_set(err, errlen, "unknown attestation variant '%.32s' (%s, dummy)",
				  a->variant, vtpm_check_names());
	if (!a->mpath)
		return errbuf_set(err, errlen, "%s needs --measurements FILE", a->variant);
	if (tool_policy(a, err, errlen) < 0)
		return -EINVAL;
	vtpm_validator(v, &a->p);
	return 0;
}

#endif
