/* Intel PCS collateral for a TDX quote, fetched over https into a cache (docs/tdx.md), in the
 * folder layout of --tdx-collateral (attest/tdx.h, tdx_collateral_load). Tools only: the agent
 * never fetches collateral. Intel's PCS API v4 (api.portal.trustedservices.intel.com,
 * "Intel SGX and Intel TDX services: Provisioning Certification Service API"):
 *   GET {pcs}/tdx/certification/v4/tcb?fmspc=HEX   body, header TCB-Info-Issuer-Chain
 *   GET {pcs}/tdx/certification/v4/qe/identity     body, header SGX-Enclave-Identity-Issuer-Chain
 *   GET {pcs}/sgx/certification/v4/pckcrl?ca=processor|platform&encoding=der
 *                                                   body, header SGX-PCK-CRL-Issuer-Chain
 *   GET {certs}/IntelSGXRootCA.der                  the SGX Root CA's CRL: the URI of the CRL
 *                                                   distribution point of the root certificate
 *                                                   of the QE identity's issuer chain (as
 *                                                   go-tdx-guest reads it), under the rule of
 *                                                   pcs_root_crl_url (Intel's hosts only)
 * Each issuer-chain header is URL-encoded PEM. A 429 or 503 answer's Retry-After is waited for
 * (at most PCS_RETRY_AFTER_MAX s, and only within PCS_TOTAL_MS). The cache holds one folder per
 * FMSPC and PCK CA
 * ({cache}/{fmspc}-{processor|platform}), reused while the nextUpdate of the TCB info, the QE
 * identity and both CRLs lies after the check's time, and replaced whole (a temporary folder
 * renamed into place) otherwise. */
#ifndef CONSTEL_TOOL_TDX_PCS_H
#define CONSTEL_TOOL_TDX_PCS_H

#include <dirent.h>
#include <sys/stat.h>

#include "attest/tdx.h"
#include "attest/x509.h"
#include "base/base.h"
#include "net/net.h"
#include "pcs-parse.h"
#include "tool.h"

#define PCS_DEFAULT	    "https://" PCS_INTEL_API_HOST
#define PCS_CERTS_DEFAULT   "https://" PCS_INTEL_CERTS_HOST
#define PCS_CACHE_DEFAULT   "/var/cache/constel-tdx"
#define PCS_TIMEOUT_MS	    30000  /* each request, redirects included */
#define PCS_TRIES	    4	   /* per URL; 429 and 5xx retried after 1, 2, 4 s */
#define PCS_RETRY_AFTER_MAX 30	   /* s: a longer Retry-After gives up at once */
#define PCS_TOTAL_MS	    120000 /* all four URLs of one fetch, retries included */
#define PCS_CHAIN_MAX	    (16 << 10)

struct pcs_opts {
	const char *pcs;       /* --pcs URL (PCS_DEFAULT) */
	const char *certs;     /* --pcs-certs URL (PCS_CERTS_DEFAULT) */
	const char *cache;     /* --tdx-cache DIR (PCS_CACHE_DEFAULT) */
	const char *ca_bundle; /* --ca-bundle FILE (CA_BUNDLE_DEFAULT) */
	time_t at;	       /* the check's time */
};

/* needle in hay, or NULL (memmem, which musl hides without _GNU_SOURCE) */
static inline const uint8_t *pcs_find(const uint8_t *hay, size_t n, const void *needle, size_t k)
{
	for (size_t i = 0; k <= n && i <= n - k; i++)
		if (!memcmp(hay + i, needle, k))
			return hay + i;
	return NULL;
}

/* The quote's FMSPC (12 hex digits) and its PCK CA ("processor" or "platform"), from the PCK
 * certificate of its certification data. tdx_verify checks later that the TCB info is for
 * that FMSPC and the CRL's chain is the quote's CA; this only names what to fetch. */
static inline int pcs_quote_key(const uint8_t *quote, size_t len, char fmspc[13], const char **ca,
				char *err, size_t errlen)
{
	static const uint8_t sgx_oid[] = {0x2a, 0x86, 0x48, 0x86, 0xf8, 0x4d, 0x01, 0x0d, 0x01};
	static const uint8_t fmspc_tlv[] = {0x06, 0x0a, 0x2a, 0x86, 0x48, 0x86, 0xf8,
					    0x4d, 0x01, 0x0d, 0x01, 0x04, 0x04, 0x06};
	static uint8_t der[8192];
	struct x509_cert c;
	struct x509_ext e;
	struct der_in exts;
	struct tdx_quote q;
	size_t dlen;
	int r;

	if (tdx_quote_parse(quote, len, &q, err, errlen) < 0)
		return -EINVAL;
	if (pem_decode((const char *)q.pck_pem, q.pck_pem_len, "CERTIFICATE", der, sizeof der,
		       &dlen) < 0 ||
	    x509_parse(der, dlen, &c) < 0)
		return errbuf_set(err, errlen, "pcs: the quote's PCK certificate does not decode");
	if (pcs_find(c.issuer_raw.p, c.issuer_raw.len, "Intel SGX PCK Processor CA", 26))
		*ca = "processor";
	else if (pcs_find(c.issuer_raw.p, c.issuer_raw.len, "Intel SGX PCK Platform CA", 25))
		*ca = "platform";
	else
		return errbuf_set(err, errlen,
				  "pcs: the quote's PCK certificate is issued by neither Intel SGX "
				  "PCK Processor CA nor Platform CA");
	exts = c.exts;
	while ((r = x509_ext_next(&exts, &e)) > 0) {
		const uint8_t *f;

		if (e.oid.len != sizeof sgx_oid || memcmp(e.oid.p, sgx_oid, sizeof sgx_oid))
			continue;
		f = pcs_find(e.val.p, e.val.len, fmspc_tlv, sizeof fmspc_tlv);
		if (f && (size_t)(e.val.p + e.val.len - f) >= sizeof fmspc_tlv + 6) {
			hex_encode(f + sizeof fmspc_tlv, 6, fmspc, 13);
			return 0;
		}
	}
	return errbuf_set(err, errlen, "pcs: the quote's PCK certificate names no FMSPC");
}

/* A CRL's nextUpdate (DER) or a JSON answer's, after at: 1; not: 0. */
static inline int pcs_current(const char *data, size_t len, int der, time_t at)
{
	char s[32];
	time_t t;

	if (der) {
		struct x509_crl crl;

		return x509_crl_parse((const uint8_t *)data, len, &crl) == 0 &&
		       crl.next_update > at;
	}
	return pcs_json_next_update(data, len, s, sizeof s) == 0 && tool_parse_time(s, &t) == 0 &&
	       t > at;
}

/* Sleeps ms milliseconds (signals do not cut it short). */
static inline void pcs_sleep_ms(uint64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* GET url: 200's body (at most max bytes) into *body, and with hdr, that header decoded into
 * *chain. 429 and 5xx and network errors retried (PCS_TRIES, back-off 1, 2, 4 s, or longer when
 * the answer's Retry-After asks for it: at most PCS_RETRY_AFTER_MAX s); one line naming the
 * URL in err otherwise; nothing goes on past end (monotonic_ms). */
static inline int pcs_get(const char *url, const struct ca_bundle *ca, size_t max, const char *hdr,
			  char **body, size_t *blen, char **chain, size_t *clen, char *err,
			  size_t errlen, uint64_t end)
{
	char e[512] = "";
	int status = 0;
	uint64_t wait_ms = 0; /* what the last answer's Retry-After asked for */

	for (int t = 0; t < PCS_TRIES; t++) {
		struct http_response resp;
		int r;
		uint64_t now, w = t ? (uint64_t)1000 << (t - 1) : 0;

		if (wait_ms > w)
			w = wait_ms;
		if (w && monotonic_ms() + w + 1000 >= end)
			return errbuf_set(
				   err, errlen,
				   "pcs: GET %s: %s; no time left to wait %llu s more (%d s for "
				   "all of PCS's answers)",
				   url, e, (unsigned long long)(w / 1000), PCS_TOTAL_MS / 1000),
			       -ETIMEDOUT;
		pcs_sleep_ms(w);
		wait_ms = 0;
		now = monotonic_ms();
		if (now + 1000 >= end)
			return errbuf_set(err, errlen,
					  "pcs: GET %s: %s%sno time left (%d s for all of PCS's "
					  "answers)",
					  url, e, *e ? "; " : "", PCS_TOTAL_MS / 1000),
			       -ETIMEDOUT;
		r = http_fetch(url, ca,
			       end - now < PCS_TIMEOUT_MS ? (int)(end - now) : PCS_TIMEOUT_MS, max,
			       &resp, e, sizeof e);
		if (r == -EKEYREJECTED || r == -EFBIG || r == -EINVAL || r == -EPERM ||
		    r == -ELOOP || r == -ENOKEY)
			return errbuf_set(err, errlen, "pcs: GET %s: %s", url, e), r;
		if (r < 0)
			continue;
		status = resp.status;
		if (status == 429 || status >= 500) {
			unsigned ra;

			if (pcs_retry_after(resp.buf, (size_t)(resp.body - resp.buf), time(NULL),
					    &ra) == 0) {
				if (ra > PCS_RETRY_AFTER_MAX) {
					http_response_free(&resp);
					return errbuf_set(
						   err, errlen,
						   "pcs: GET %s: HTTP %d with Retry-After %u s, "
						   "more than the %d s this client waits",
						   url, status, ra, PCS_RETRY_AFTER_MAX),
					       -EAGAIN;
				}
				wait_ms = (uint64_t)ra * 1000;
				snprintf(e, sizeof e, "HTTP %d (Retry-After %u s)", status, ra);
			} else {
				snprintf(e, sizeof e, "HTTP %d", status);
			}
			http_response_free(&resp);
			continue;
		}
		if (status != 200) {
			http_response_free(&resp);
			return errbuf_set(err, errlen, "pcs: GET %s: HTTP %d%s", url, status,
					  status == 404 ? " (PCS has no such collateral)" : "");
		}
		if (hdr) {
			*chain = malloc(PCS_CHAIN_MAX);
			r = *chain ? pcs_header_decode(resp.buf, (size_t)(resp.body - resp.buf),
						       hdr, *chain, PCS_CHAIN_MAX, clen)
				   : -ENOMEM;
			if (r < 0) {
				free(*chain);
				*chain = NULL;
				http_response_free(&resp);
				return errbuf_set(err, errlen, "pcs: GET %s: header %s %s", url,
						  hdr,
						  r == -ENOENT	? "is missing"
						  : r == -EFBIG ? "is too long"
								: "is not URL-encoded text"),
				       -EBADMSG;
			}
		}
		/* the body moves to the front of its buffer: the caller frees *body */
		memmove(resp.buf, resp.body, resp.len);
		resp.buf[resp.len] = '\0';
		*body = resp.buf;
		*blen = resp.len;
		return 0;
	}
	return errbuf_set(err, errlen, "pcs: GET %s: %s after %d tries", url, e, PCS_TRIES),
	       -EAGAIN;
}

static inline int pcs_write(int dfd, const char *name, const char *data, size_t len)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), r = 0;

	if (fd < 0)
		return -errno;
	while (len && r == 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			r = n < 0 ? -errno : -EIO;
		else
			data += n, len -= (size_t)n;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* Removes the folder path and the files in it (no deeper folders are made here). */
static inline void pcs_rmdir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(path);
}

/* The URL of the root CA CRL into url: the CRL distribution point of the last certificate (the
 * root) of an issuer chain PEM as PCS sent it, under pcs_root_crl_url's rule. One line in err
 * when the chain has no such certificate, no CDP, or one naming another host. */
static inline int pcs_root_crl_from_chain(const struct pcs_opts *po, const char *chain, size_t clen,
					  char *url, size_t cap, char *err, size_t errlen)
{
	static const uint8_t cdp_oid[] = {0x55, 0x1d, 0x1f}; /* 2.5.29.31 */
	static const char begin[] = "-----BEGIN CERTIFICATE-----";
	static uint8_t der[8192];
	const uint8_t *last = NULL, *p = (const uint8_t *)chain;
	char uri[PCS_URL_MAX];
	struct x509_cert c;
	struct x509_ext e;
	struct der_in exts;
	size_t dlen;
	int r;

	while (
	    (p = pcs_find(p, clen - (size_t)(p - (const uint8_t *)chain), begin, sizeof begin - 1)))
		last = p++;
	if (!last ||
	    pem_decode((const char *)last, clen - (size_t)(last - (const uint8_t *)chain),
		       "CERTIFICATE", der, sizeof der, &dlen) < 0 ||
	    x509_parse(der, dlen, &c) < 0)
		return errbuf_set(err, errlen,
				  "pcs: the QE identity's issuer chain ends in no certificate: no "
				  "root CA CRL to fetch");
	exts = c.exts;
	r = -ENOENT;
	while (x509_ext_next(&exts, &e) > 0)
		if (e.oid.len == sizeof cdp_oid && !memcmp(e.oid.p, cdp_oid, sizeof cdp_oid)) {
			r = pcs_cdp_uri(e.val.p, e.val.len, uri, sizeof uri);
			break;
		}
	if (r < 0)
		return errbuf_set(
			   err, errlen,
			   "pcs: the root certificate of the QE identity's issuer chain has %s",
			   r == -ENOENT	 ? "no CRL distribution point URI"
			   : r == -EFBIG ? "a CRL distribution point URI over 511 bytes"
					 : "a malformed CRL distribution point"),
		       -EBADMSG;
	r = pcs_root_crl_url(uri, po->pcs, po->certs, url, cap);
	if (r == -EPERM)
		return errbuf_set(err, errlen,
				  "pcs: the root CA CRL's distribution point %s is not https on "
				  "Intel's hosts (" PCS_INTEL_CERTS_HOST ", " PCS_INTEL_API_HOST
				  ") nor on --pcs or --pcs-certs: not fetched",
				  uri),
		       r;
	if (r < 0)
		return errbuf_set(err, errlen, "pcs: root CA CRL URL for %s: too long", uri), r;
	return 0;
}

/* Fetches the seven answers into the new folder tmp. */
static inline int pcs_fetch_into(const struct pcs_opts *po, const char *fmspc, const char *ca_name,
				 const char *tmp, char *err, size_t errlen)
{
	static const size_t max[] = {256 << 10, 64 << 10, 1 << 20, 1 << 20};
	static const char *const hdr[] = {"TCB-Info-Issuer-Chain",
					  "SGX-Enclave-Identity-Issuer-Chain",
					  "SGX-PCK-CRL-Issuer-Chain", NULL};
	static const int file[] = {TDX_COLL_TCBINFO, TDX_COLL_QEID, TDX_COLL_PCKCRL,
				   TDX_COLL_ROOTCRL};
	uint64_t end = monotonic_ms() + PCS_TOTAL_MS;
	struct ca_bundle cab;
	char url[4][1024], *qechain = NULL;
	size_t qelen = 0;
	int dfd, r = 0;

	snprintf(url[0], sizeof url[0], "%s/tdx/certification/v4/tcb?fmspc=%s", po->pcs, fmspc);
	snprintf(url[1], sizeof url[1], "%s/tdx/certification/v4/qe/identity", po->pcs);
	snprintf(url[2], sizeof url[2], "%s/sgx/certification/v4/pckcrl?ca=%s&encoding=der",
		 po->pcs, ca_name);
	/* url[3], the root CA CRL: from the QE identity's issuer chain, once it is here */
	if ((r = ca_bundle_load(po->ca_bundle, &cab, err, errlen)) < 0)
		return r;
	dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		ca_bundle_free(&cab);
		return errbuf_set(err, errlen, "pcs: %s: %s", tmp, strerror(-r)), r;
	}
	for (int i = 0; i < 4 && r == 0; i++) {
		char *body = NULL, *chain = NULL;
		size_t blen = 0, clen = 0;

		if (i == 3)
			r = pcs_root_crl_from_chain(po, qechain, qelen, url[3], sizeof url[3], err,
						    errlen);
		if (r == 0)
			r = pcs_get(url[i], &cab, max[i], hdr[i], &body, &blen, &chain, &clen, err,
				    errlen, end);
		if (r == 0)
			r = pcs_write(dfd, tdx_collateral_names[file[i]], body, blen);
		if (r == 0 && chain)
			r = pcs_write(dfd, tdx_collateral_names[file[i] + 1], chain, clen);
		if (r < 0 && body)
			errbuf_set(err, errlen, "pcs: %s: %s", tmp, strerror(-r));
		free(body);
		if (i == 1 && r == 0) {
			qechain = chain, qelen = clen; /* kept for url[3] */
			chain = NULL;
		}
		free(chain);
	}
	free(qechain);
	close(dfd);
	ca_bundle_free(&cab);
	return r;
}

/* The folder of a platform's collateral in the cache (FMSPC, 12 hex digits, lower case, and
 * its PCK CA, "processor" or "platform"), fetched when absent or stale, into dir; *fetched
 * (may be NULL) says whether it was. */
static inline int pcs_collateral_key(const struct pcs_opts *po, const char *fmspc,
				     const char *ca_name, char *dir, size_t cap, int *fetched,
				     char *err, size_t errlen)
{
	static const int cur[][2] = {
	    {TDX_COLL_TCBINFO, 0}, {TDX_COLL_QEID, 0}, {TDX_COLL_PCKCRL, 1}, {TDX_COLL_ROOTCRL, 1}};
	struct tdx_collateral c;
	char tmp[4096], old[4096], e[512];
	int r, fresh = 0;

	if (fetched)
		*fetched = 0;
	if (strlen(fmspc) != 12 || strspn(fmspc, "0123456789abcdef") != 12 ||
	    (strcmp(ca_name, "processor") && strcmp(ca_name, "platform")))
		return errbuf_set(
		    err, errlen,
		    "pcs: '%.16s-%.16s' is not FMSPC-CA (12 hex digits in lower case, "
		    "then processor or platform)",
		    fmspc, ca_name);
	if (snprintf(dir, cap, "%s/%s-%s", po->cache, fmspc, ca_name) >= (int)cap)
		return errbuf_set(err, errlen, "pcs: --tdx-cache: path too long"), -ENAMETOOLONG;
	if (tdx_collateral_load(dir, &c, e, sizeof e) == 0) {
		fresh = 1;
		for (size_t i = 0; i < sizeof cur / sizeof cur[0]; i++)
			fresh &= pcs_current(c.f[cur[i][0]], c.len[cur[i][0]], cur[i][1], po->at);
		tdx_collateral_free(&c);
	}
	if (fresh)
		return 0;
	/* the cache folder and its parents */
	snprintf(tmp, sizeof tmp, "%s", po->cache);
	for (char *s = tmp + 1;; s++) {
		int end = !*s;

		if (*s != '/' && !end)
			continue;
		*s = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return r = -errno,
			       errbuf_set(err, errlen, "pcs: --tdx-cache %s: %s", tmp,
					  strerror(-r)),
			       r;
		if (end)
			break;
		*s = '/';
	}
	snprintf(tmp, sizeof tmp, "%s/.new-%s-%s-%ld", po->cache, fmspc, ca_name, (long)getpid());
	snprintf(old, sizeof old, "%s/.old-%s-%s-%ld", po->cache, fmspc, ca_name, (long)getpid());
	pcs_rmdir(tmp);
	if (mkdir(tmp, 0755) < 0)
		return r = -errno, errbuf_set(err, errlen, "pcs: %s: %s", tmp, strerror(-r)), r;
	r = pcs_fetch_into(po, fmspc, ca_name, tmp, err, errlen);
	if (r == 0 && fetched)
		*fetched = 1;
	if (r == 0) {
		/* the old folder aside, the new one in its place, the old one gone */
		if (rename(dir, old) < 0 && errno != ENOENT)
			r = -errno;
		else if (rename(tmp, dir) < 0 && errno != EEXIST && errno != ENOTEMPTY)
			r = -errno;
		/* EEXIST, ENOTEMPTY: another run put its folder in between; that one is used */
		if (r < 0)
			errbuf_set(err, errlen, "pcs: %s: %s", dir, strerror(-r));
		pcs_rmdir(old);
	}
	pcs_rmdir(tmp); /* gone already when renamed */
	return r;
}

/* The folder of the quote's collateral in the cache, fetched when absent or stale, into dir. */
static inline int pcs_collateral(const struct pcs_opts *po, const uint8_t *quote, size_t qlen,
				 char *dir, size_t cap, char *err, size_t errlen)
{
	char fmspc[13];
	const char *ca_name;
	int r;

	if ((r = pcs_quote_key(quote, qlen, fmspc, &ca_name, err, errlen)) < 0)
		return r;
	return pcs_collateral_key(po, fmspc, ca_name, dir, cap, NULL, err, errlen);
}

#endif
