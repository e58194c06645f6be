/* The JoinService side of the kubelet and SSH certificates, checked by OpenSSL and OpenSSH:
 * a request from our CSR builder is parsed and signed with an RSA CA (as kubeadm makes) and
 * with an EC CA, and `openssl verify` accepts the result; requests OpenSSL makes with the
 * wrong subject or a broken signature are refused with one line; a host certificate signed
 * with the emergency SSH CA is read by ssh-keygen with its principals. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "harness.h"
#include "kube/kube.h"

static char dir[64];

static const char *at(const char *name)
{
	static char p[4][160];
	static int i;

	if (!dir[0]) {
		strcpy(dir, "/tmp/constel-ca-XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	i = (i + 1) % 4;
	snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
	return p[i];
}

__attribute__((destructor)) static void cleanup(void)
{
	char cmd[128];

	if (dir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = malloc(65536);

	*len = f && b ? fread(b, 1, 65535, f) : 0;
	if (f)
		fclose(f);
	if (b)
		b[*len] = '\0';
	return b;
}

static int sh(const char *fmt, const char *a, const char *b, const char *c)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, fmt, a, b, c);
	return system(cmd);
}

/* Signs a fresh request with the CA in ca.crt/ca.key and has openssl verify it. */
static int sign_and_verify(void)
{
	struct p256_key k;
	struct csr_info c;
	struct ca *ca = malloc(sizeof *ca);
	uint8_t der[1024];
	size_t n, cl, kl;
	char pem[8192], err[200], *cert = slurp(at("ca.crt"), &cl), *key = slurp(at("ca.key"), &kl);
	FILE *f;
	int r = -1;

	if (!ca || p256_generate(&k) ||
	    csr_build(&k, "worker-1", "10.42.2.100", der, sizeof der, &n) ||
	    csr_parse(der, n, &c, err, sizeof err) ||
	    ca_load(cert, cl, key, kl, ca, err, sizeof err) ||
	    ca_sign_kubelet(ca, &c, time(NULL), pem, sizeof pem) ||
	    !(f = fopen(at("kubelet.crt"), "w")))
		goto out;
	fputs(pem, f);
	fclose(f);
	r = sh("openssl verify -CAfile %s %s >/dev/null 2>&1 && openssl x509 -in %s -noout -text "
	       ">text.out 2>&1",
	       at("ca.crt"), at("kubelet.crt"), at("kubelet.crt"));
	if (r == 0)
		r = sh("mv text.out %s%s%s", at("text"), "", "");
	if (r == 0) {
		char *text = slurp(at("text"), &n);

		if (!text || !strstr(text, "IP Address:10.42.2.100"))
			r = -2;
		free(text);
	}
out:
	if (ca)
		ca_wipe(ca);
	free(ca);
	free(cert);
	free(key);
	return r;
}

TEST(ca_rsa_signs_a_kubelet_certificate_openssl_verifies)
{
	size_t n;
	char *text;

	CHECK(
	    sh("openssl req -x509 -newkey rsa:2048 -nodes -keyout %s -out %s -subj /CN=kubernetes "
	       "-days 1 >/dev/null 2>&1%s",
	       at("ca.key"), at("ca.crt"), "") == 0);
	CHECK(sign_and_verify() == 0);
	text = slurp(at("text"), &n);
	CHECK(strstr(text, "Subject: O = system:nodes, CN = system:node:worker-1") != NULL);
	CHECK(strstr(text, "TLS Web Client Authentication, TLS Web Server Authentication") != NULL);
	CHECK(strstr(text, "Digital Signature, Key Encipherment") != NULL);
	CHECK(strstr(text, "sha256WithRSAEncryption") != NULL);
	free(text);
}

TEST(ca_ec_signs_a_kubelet_certificate_openssl_verifies)
{
	CHECK(sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s "
		 "-out %s -subj /CN=kubernetes -days 1 >/dev/null 2>&1%s",
		 at("ca.key"), at("ca.crt"), "") == 0);
	CHECK(sign_and_verify() == 0);
}

static int csr_from_openssl(const char *subj, char *err, size_t errlen)
{
	struct csr_info c;
	size_t n;
	char *der;
	int r;

	if (sh("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s "
	       "-subj '%s' -outform DER -out %s >/dev/null 2>&1",
	       at("req.key"), subj, at("req.der")))
		return -100;
	der = slurp(at("req.der"), &n);
	r = csr_parse((uint8_t *)der, n, &c, err, errlen);
	free(der);
	return r;
}

TEST(csr_parse_checks_what_the_join_service_checks)
{
	struct p256_key k;
	struct csr_info c;
	uint8_t der[1024];
	size_t n;
	char err[200];

	CHECK(csr_from_openssl("/O=system:nodes/CN=system:node:openssl-made", err, sizeof err) ==
	      0);
	CHECK(csr_from_openssl("/O=other/CN=system:node:x", err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "want exactly one O=system:nodes") != NULL);
	CHECK(csr_from_openssl("/O=system:nodes/O=system:nodes/CN=system:node:x", err,
			       sizeof err) == -EINVAL);
	CHECK(csr_from_openssl("/O=system:nodes/CN=node:x", err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "does not start with system:node:") != NULL);
	CHECK(p256_generate(&k) == 0);
	CHECK(csr_build(&k, "w", "10.0.0.1", der, sizeof der, &n) == 0);
	der[n - 3] ^= 1; /* inside the signature */
	CHECK(csr_parse(der, n, &c, err, sizeof err) == -EINVAL);
	CHECK(!strncmp(err, "certificate request: ", 21));
	CHECK(csr_parse(der, n - 1, &c, err, sizeof err) == -EINVAL);
}

TEST(ssh_host_certificate_is_read_by_ssh_keygen)
{
	uint8_t seed[32], wire[SSH_PUBKEY_WIRE_LEN], pk[32];
	const char *principals[] = {"10.42.2.100", "worker-1"};
	struct ssh_key host;
	char line[2048], out[4096];
	size_t n;
	char *text;
	FILE *f;

	memset(seed, 7, sizeof seed);
	CHECK(ssh_key_generate(&host) == 0);
	CHECK(ssh_pubkey_from_wire(wire, ssh_pubkey_wire(host.pk, wire), pk) == 0);
	CHECK_BYTES(pk, host.pk, 32);
	CHECK(ssh_host_cert_sign(seed, host.pk, principals, 2, time(NULL), line, sizeof line) == 0);
	f = fopen(at("host-cert.pub"), "w");
	CHECK(f != NULL);
	fputs(line, f);
	fclose(f);
	CHECK(sh("ssh-keygen -L -f %s >%s/cert.txt 2>&1%s", at("host-cert.pub"), dir, "") == 0);
	text = slurp(at("cert.txt"), &n);
	snprintf(out, sizeof out, "%s", text);
	free(text);
	CHECK(strstr(out, "ssh-ed25519-cert-v01@openssh.com host certificate") != NULL);
	CHECK(strstr(out, "Key ID: \"10.42.2.100\"") != NULL);
	CHECK(strstr(out, "10.42.2.100") && strstr(out, "worker-1"));
	CHECK(strstr(out, "Valid: after ") != NULL); /* no end: forever */
	CHECK(ssh_pubkey_from_wire(wire, 10, pk) == -EINVAL);
}
