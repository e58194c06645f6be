/* The CA bundle loader behind https:// (net/cabundle.c): PEM certificates become trust anchors
 * (subject DN, key, CA flag), what does not decode is skipped and counted, other objects and
 * text are ignored, and the bounds and unreadable files are one line. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "harness.h"
#include "net/net.h"

/* Self-signed test certificates made with the openssl CLI: a P-256 CA and an RSA one. */
static const char ec_ca[] = "-----BEGIN CERTIFICATE-----\n"
			    "MIIBmDCCAT+gAwIBAgIUD3ytau/rdTjyUEUW5AN9q19ww5YwCgYIKoZIzj0EAwIw\n"
			    "ITEfMB0GA1UEAwwWY29uc3RlbCBidW5kbGUgdGVzdCBFQzAgFw0yNjExMjQwNDEz\n"
			    "MTlaGA8yMTI2MTAzMTA0MTMxOVowITEfMB0GA1UEAwwWY29uc3RlbCBidW5kbGUg\n"
			    "dGVzdCBFQzBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABPS5/22P96vTc0FLB+Ij\n"
			    "1z6YrJPDXOUbjXeEfRz73PPfqYdjluL30yKaVHQVHgA+Z/I/TRtmPBdmjREPWVys\n"
			    "zQ6jUzBRMB0GA1UdDgQWBBQ2Sr1TH2tQJSaclKTh4YsAbApHSzAfBgNVHSMEGDAW\n"
			    "gBQ2Sr1TH2tQJSaclKTh4YsAbApHSzAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49\n"
			    "BAMCA0cAMEQCIF9Wab+nR6FlpfBKv7tYSl5Xn6vhZDiLLAohnTZ70XZxAiB9qf+6\n"
			    "qpe1rBP03tyj1XmxMRZbu2rOuGLDbgN5kC22RQ==\n"
			    "-----END CERTIFICATE-----\n";
static const char rsa_leaf[] = "-----BEGIN CERTIFICATE-----\n"
			       "MIICIjCCAYugAwIBAgIUSUHOM6M+ZT2ZU1Qgj2NoOr2Z2S0wDQYJKoZIhvcNAQEL\n"
			       "BQAwIjEgMB4GA1UEAwwXY29uc3RlbCBidW5kbGUgdGVzdCBSU0EwIBcNMjYxMTI0\n"
			       "MDQxMzE5WhgPMjEyNjEwMzEwNDEzMTlaMCIxIDAeBgNVBAMMF2NvbnN0ZWwgYnVu\n"
			       "ZGxlIHRlc3QgUlNBMIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDSz5uBRJsd\n"
			       "hcy2Y2AKbllCSNey1B+l+ZoL8UtZuu0EQBFgHTczI0ogIKSdbNiKODCrr6FzBOQB\n"
			       "+bI1B6Y526Z/oCki+NXqbnWekRSUn1M1oizF+V7tOzdSvsnw+K7Vr14NMUu/b4ey\n"
			       "OuKLijbaAE/Tviu3C5yQmRiQzmny//kioQIDAQABo1MwUTAdBgNVHQ4EFgQUxube\n"
			       "g+ZUEVEom5DMRV/960slaScwHwYDVR0jBBgwFoAUxubeg+ZUEVEom5DMRV/960sl\n"
			       "aScwDwYDVR0TAQH/BAUwAwEB/zANBgkqhkiG9w0BAQsFAAOBgQCJMz2LrwcHOfne\n"
			       "cZ8XjhrV3q2PNfEug8Dz2tbAbdCxMFKa59N6yYTER8Aqo9BDh0i0en19m4eOpCMX\n"
			       "G/UB3jf7jO//ww5xrRkjUaFxwuyzf60/8twn1dNhQBy7Q2SQaXSy2AxWgsHC0eGy\n"
			       "U28ZVOv8P7j6JGmgJqAaxZHN5pV7kg==\n"
			       "-----END CERTIFICATE-----\n";

static char *join(const char *const *parts, size_t n)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < n; i++)
		len += strlen(parts[i]);
	s = calloc(1, len);
	for (size_t i = 0; s && i < n; i++)
		strcat(s, parts[i]);
	return s;
}

TEST(bundle_keeps_certificates_and_counts_the_broken_ones)
{
	char broken[sizeof ec_ca], cut[300], err[200] = "";
	struct ca_bundle b;
	const char *parts[6];
	char *text;

	/* a certificate whose DER no longer parses (a length byte changed), and one cut short */
	memcpy(broken, ec_ca, sizeof ec_ca);
	broken[strlen("-----BEGIN CERTIFICATE-----\nMIIB")] = 'Z';
	snprintf(cut, sizeof cut, "%.200s", rsa_leaf);
	parts[0] = "# ca-certificates style comment\n";
	parts[1] = ec_ca;
	parts[2] = broken;
	parts[3] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
	parts[4] = rsa_leaf;
	parts[5] = cut;
	text = join(parts, 6);
	CHECK(text);
	CHECK(ca_bundle_parse(text, strlen(text), &b, err, sizeof err) == 0);
	free(text);
	CHECK(b.n == 2 && b.skipped == 2);
	CHECK(b.ta[0].pkey.key_type == BR_KEYTYPE_EC && b.ta[0].flags == BR_X509_TA_CA);
	CHECK(b.ta[0].pkey.key.ec.curve == BR_EC_secp256r1 && b.ta[0].pkey.key.ec.qlen == 65);
	/* the DN is the DER SEQUENCE of the subject, with its CN */
	CHECK(b.ta[0].dn.len > 20 && b.ta[0].dn.data[0] == 0x30);
	CHECK(memmem(b.ta[0].dn.data, b.ta[0].dn.len, "constel bundle test EC", 22));
	CHECK(b.ta[1].pkey.key_type == BR_KEYTYPE_RSA && b.ta[1].flags == BR_X509_TA_CA);
	CHECK(b.ta[1].pkey.key.rsa.nlen >= 128 && b.ta[1].pkey.key.rsa.elen == 3);
	ca_bundle_free(&b);
	CHECK(b.ta == NULL && b.n == 0);
}

TEST(bundle_accepts_crlf_and_a_missing_final_newline)
{
	char text[2048], err[200];
	struct ca_bundle b;
	size_t o = 0;

	for (const char *p = ec_ca; *p; p++) {
		if (*p == '\n')
			text[o++] = '\r';
		text[o++] = *p;
	}
	o -= 2; /* no line end after the END line */
	CHECK(ca_bundle_parse(text, o, &b, err, sizeof err) == 0);
	CHECK(b.n == 1 && b.skipped == 0);
	ca_bundle_free(&b);
}

TEST(bundle_without_a_usable_certificate_is_one_line)
{
	static const char junk[] = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
	char err[200] = "";
	struct ca_bundle b;

	CHECK(ca_bundle_parse("", 0, &b, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "no usable certificate (0 skipped)") && !strchr(err, '\n'));
	CHECK(ca_bundle_parse(junk, strlen(junk), &b, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "no usable certificate (1 skipped)"));
	CHECK(b.ta == NULL);
}

TEST(bundle_of_more_than_the_bound_is_refused)
{
	size_t one = strlen(ec_ca), len = one * (CA_BUNDLE_MAX + 1);
	char *text = malloc(len + 1), err[200] = "";
	struct ca_bundle b;

	CHECK(text);
	for (size_t i = 0; i <= CA_BUNDLE_MAX; i++)
		memcpy(text + i * one, ec_ca, one);
	CHECK(ca_bundle_parse(text, len, &b, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "more than 1024 certificates"));
	CHECK(ca_bundle_parse(text, len - one, &b, err, sizeof err) == 0 && b.n == CA_BUNDLE_MAX);
	ca_bundle_free(&b);
	free(text);
}

TEST(bundle_file_that_cannot_be_read_is_one_line_naming_it)
{
	char dir[64], err[300] = "";
	struct ca_bundle b;
	const char *big;
	int fd;

	harness_tmpdir(dir, "cabundle");
	CHECK(ca_bundle_load(harness_path(dir, "missing.crt"), &b, err, sizeof err) == -ENOENT);
	CHECK(strstr(err, "missing.crt: No such file or directory") && !strchr(err, '\n'));
	CHECK(ca_bundle_load(dir, &b, err, sizeof err) < 0 && strstr(err, "not a regular file"));
	big = harness_path(dir, "big.crt");
	fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && ftruncate(fd, CA_BUNDLE_FILE_MAX + 1) == 0);
	close(fd);
	CHECK(ca_bundle_load(big, &b, err, sizeof err) == -EFBIG &&
	      strstr(err, "larger than 4 MiB"));
	harness_rmtree(dir);
}

TEST(bundle_of_this_host_loads_every_certificate)
{
	struct timespec t0, t1;
	char err[300] = "";
	struct ca_bundle b;

	if (access(CA_BUNDLE_DEFAULT, R_OK) < 0) {
		printf("# %s not on this host: skipped\n", CA_BUNDLE_DEFAULT);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(ca_bundle_load(CA_BUNDLE_DEFAULT, &b, err, sizeof err) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("# %s: %zu anchors, %u skipped, loaded in %.1f ms (ASan build)\n", CA_BUNDLE_DEFAULT,
	       b.n, b.skipped,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	CHECK(b.n >= 50 && b.skipped == 0);
	ca_bundle_free(&b);
}
