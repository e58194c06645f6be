/* The parsing half of the tools' PCS client (tools/pcs-parse.h): the URI of the CRL
 * distribution point of Intel's SGX Root CA (its extension's bytes as the recorded issuer
 * chains carry it), the rule for which such URIs are fetched (only https on Intel's hosts,
 * mapped onto --pcs-certs / --pcs, or on those configured hosts), Retry-After in both of its
 * forms, and the URL-decoding of an issuer-chain header. */
#include <errno.h>
#include <string.h>

#include "../../tools/pcs-parse.h"
#include "harness.h"

#define PCS   "https://127.0.0.1:8443/pcs"
#define CERTS "https://certs.test:9443"

static int url_for(const char *uri, char *out, size_t cap)
{
	return pcs_root_crl_url(uri, PCS, CERTS, out, cap);
}

TEST(pcs_cdp_uri_of_intels_root)
{
	/* the CRL distribution points extension of Intel SGX Root CA (recorded issuer chains) */
	static const char hex[] =
	    "30493047a045a043864168747470733a2f2f6365727469666963617465732e74727573746564"
	    "73657276696365732e696e74656c2e636f6d2f496e74656c534758526f6f7443412e646572";
	unsigned char der[128];
	size_t n = harness_unhex(hex, der, sizeof der);
	char uri[PCS_URL_MAX];

	CHECK(pcs_cdp_uri(der, n, uri, sizeof uri) == 0);
	CHECK(!strcmp(uri, "https://certificates.trustedservices.intel.com/IntelSGXRootCA.der"));
	CHECK(pcs_cdp_uri(der, n, uri, 20) == -EFBIG);
	CHECK(pcs_cdp_uri(der, n - 1, uri, sizeof uri) == -EBADMSG);
	der[12] = ' '; /* a space inside the URI */
	CHECK(pcs_cdp_uri(der, n, uri, sizeof uri) == -EBADMSG);
	/* a distribution point with only reasons: no URI */
	CHECK(pcs_cdp_uri((const uint8_t *)"\x30\x06\x30\x04\x81\x02\x05\xa0", 8, uri,
			  sizeof uri) == -ENOENT);
}

TEST(pcs_root_crl_url_keeps_to_intels_hosts)
{
	char u[1024];

	/* Intel's certificates host: the path on --pcs-certs; Intel's API host: on --pcs */
	CHECK(url_for("https://certificates.trustedservices.intel.com/IntelSGXRootCA.der", u,
		      sizeof u) == 0);
	CHECK(!strcmp(u, CERTS "/IntelSGXRootCA.der"));
	CHECK(url_for("https://CERTIFICATES.trustedservices.intel.com/x/y.der", u, sizeof u) == 0);
	CHECK(!strcmp(u, CERTS "/x/y.der"));
	CHECK(url_for("https://api.trustedservices.intel.com/sgx/certification/v4/rootcacrl", u,
		      sizeof u) == 0);
	CHECK(!strcmp(u, PCS "/sgx/certification/v4/rootcacrl"));
	/* the configured hosts: as they are */
	CHECK(url_for("https://certs.test:9443/root.crl", u, sizeof u) == 0);
	CHECK(!strcmp(u, "https://certs.test:9443/root.crl"));
	CHECK(url_for("https://127.0.0.1:8443/other/root.der", u, sizeof u) == 0);
	CHECK(!strcmp(u, "https://127.0.0.1:8443/other/root.der"));
	/* anything else: not fetched */
	CHECK(url_for("http://certificates.trustedservices.intel.com/IntelSGXRootCA.der", u,
		      sizeof u) == -EPERM);
	CHECK(url_for("https://169.254.169.254/metadata", u, sizeof u) == -EPERM);
	CHECK(url_for("https://certificates.trustedservices.intel.com.evil.test/x", u, sizeof u) ==
	      -EPERM);
	CHECK(url_for("https://certificates.trustedservices.intel.com@evil.test/x", u, sizeof u) ==
	      -EPERM);
	CHECK(url_for("https://certs.test:9444/x", u, sizeof u) == -EPERM);
	CHECK(url_for("https://127.0.0.1/x", u, sizeof u) == -EPERM);
	CHECK(url_for("https:///x", u, sizeof u) == -EPERM);
	CHECK(url_for("ldap://certificates.trustedservices.intel.com/x", u, sizeof u) == -EPERM);
	CHECK(url_for("https://certificates.trustedservices.intel.com/IntelSGXRootCA.der", u, 20) ==
	      -EFBIG);
}

TEST(pcs_retry_after_seconds_and_date)
{
	static const char secs[] = "HTTP/1.1 429 Too Many Requests\r\nretry-after: 17\r\n\r\n";
	static const char date[] = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: Fri, 27 Nov "
				   "2026 07:00:30 GMT\r\n\r\n";
	static const char none[] = "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n";
	static const char bad[] = "HTTP/1.1 429 x\r\nRetry-After: soon\r\n\r\n";
	static const char big[] = "HTTP/1.1 429 x\r\nRetry-After: 12345678901\r\n\r\n";
	time_t now = 1795762800; /* 2026-11-27T07:00:00Z */
	unsigned s = 0;

	CHECK(pcs_retry_after(secs, sizeof secs - 1, now, &s) == 0 && s == 17);
	CHECK(pcs_retry_after(date, sizeof date - 1, now, &s) == 0 && s == 30);
	CHECK(pcs_retry_after(date, sizeof date - 1, now + 60, &s) == 0 && s == 0);
	CHECK(pcs_retry_after(none, sizeof none - 1, now, &s) == -ENOENT);
	CHECK(pcs_retry_after(bad, sizeof bad - 1, now, &s) == -EINVAL);
	CHECK(pcs_retry_after(big, sizeof big - 1, now, &s) == -EINVAL);
}

TEST(pcs_header_decode_with_base_hex)
{
	static const char h[] = "HTTP/1.1 200 OK\r\nTCB-Info-Issuer-Chain: a%2Bb%2fc+d%0A\r\n"
				"X: %G1\r\n\r\n";
	char out[64];
	size_t n;

	CHECK(pcs_header_decode(h, sizeof h - 1, "tcb-info-issuer-chain", out, sizeof out, &n) ==
	      0);
	CHECK(n == 8 && !strcmp(out, "a+b/c+d\n"));
	CHECK(pcs_header_decode(h, sizeof h - 1, "X", out, sizeof out, &n) == -EINVAL);
}
