/* The kubelet CSR and the SSH host key, each checked by an implementation we did not write:
 * OpenSSL parses and verifies the CSR, ssh-keygen reads our private key and writes one we
 * must read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "base/base.h"
#include "harness.h"
#include "kube/kube.h"

static char tmpdir[64];

static const char *tmp(const char *name)
{
	static char path[128];

	if (!tmpdir[0]) {
		strcpy(tmpdir, "/tmp/constel-kube-XXXXXX");
		if (!mkdtemp(tmpdir))
			abort();
	}
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return path;
}

__attribute__((destructor)) static void remove_tmpdir(void)
{
	char cmd[128];

	if (tmpdir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
}

/* Runs cmd and returns its whole output (static buffer) or NULL when it failed. */
static const char *run(const char *cmd)
{
	static char out[8192];
	FILE *p = popen(cmd, "r");
	size_t n;

	if (!p)
		return NULL;
	n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	return pclose(p) == 0 ? out : NULL;
}

static int write_bin(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(b, 1, n, f) == n;

	if (f)
		fclose(f);
	return ok ? 0 : -1;
}

/* A fresh key's CSR for name and ip, as OpenSSL prints and verifies it (NULL on failure). */
static const char *csr_text(const char *name, const char *ip, const char *file)
{
	struct p256_key k;
	uint8_t der[1024];
	size_t n;
	char cmd[300];

	if (p256_generate(&k) != 0 || csr_build(&k, name, ip, der, sizeof der, &n) != 0 ||
	    write_bin(tmp(file), der, n) != 0)
		return NULL;
	snprintf(cmd, sizeof cmd, "openssl req -inform DER -in %s -verify -noout -text 2>&1",
		 tmp(file));
	return run(cmd);
}

TEST(csr_is_verified_by_openssl_with_subject_and_ip_san)
{
	const char *out = csr_text("worker-0", "10.42.0.7", "csr.der");

	CHECK(out != NULL);
	if (!strstr(out, "O = system:nodes, CN = system:node:worker-0"))
		harness_fail(__FILE__, __LINE__, "openssl says: %.600s", out);
	CHECK(strstr(out, "verify OK") || strstr(out, "Certificate request self-signature ok"));
	CHECK(strstr(out, "IP Address:10.42.0.7") != NULL);
	CHECK(strstr(out, "ecdsa-with-SHA256") != NULL);
	CHECK(strstr(out, "DNS:") == NULL);
}

TEST(csr_without_ip_has_no_extension_request)
{
	const char *out = csr_text("cp_0", NULL, "csr2.der");
	struct p256_key k;
	uint8_t der[1024];
	size_t n;

	CHECK(out != NULL);
	CHECK(strstr(out, "CN = system:node:cp_0") != NULL); /* a UTF8String: '_' */
	CHECK(strstr(out, "Subject Alternative Name") == NULL);
	CHECK(p256_generate(&k) == 0);
	CHECK(csr_build(&k, "", NULL, der, sizeof der, &n) == -EINVAL);
	CHECK(csr_build(&k, "n", "10.0.0.300", der, sizeof der, &n) == -EINVAL);
}

TEST(kubelet_key_is_sec1_that_openssl_reads)
{
	struct p256_key k;
	uint8_t der[160];
	char pem[512], cmd[300];
	size_t n;
	int len;
	const char *out;

	CHECK(p256_generate(&k) == 0);
	CHECK(p256_sec1_der(&k, der, sizeof der, &n) == 0);
	len = pem_encode("EC PRIVATE KEY", der, n, pem, sizeof pem);
	CHECK(len > 0);
	CHECK(write_bin(tmp("key.pem"), pem, (size_t)len) == 0);
	snprintf(cmd, sizeof cmd, "openssl ec -in %s -check -noout 2>&1", tmp("key.pem"));
	out = run(cmd);
	CHECK(out != NULL && strstr(out, "valid") != NULL);
}

TEST(ssh_key_we_write_is_read_by_ssh_keygen)
{
	struct ssh_key k, back;
	char text[1024], line[160], cmd[300];
	const char *out;

	CHECK(ssh_key_generate(&k) == 0);
	CHECK(ssh_key_format(&k, text, sizeof text) == 0);
	CHECK(ssh_key_parse(text, strlen(text), &back, NULL, 0) == 0);
	CHECK_BYTES(back.sk, k.sk, 64);
	CHECK(write_file_excl(tmp("id_ours"), text, strlen(text), 0600) == 0);
	snprintf(cmd, sizeof cmd, "ssh-keygen -y -f %s", tmp("id_ours"));
	out = run(cmd);
	CHECK(out != NULL);
	CHECK(ssh_authorized_key(k.pk, line, sizeof line) == 0);
	CHECK(!strncmp(out, line, strlen(line) - 1)); /* ssh-keygen may add a comment */
}

TEST(ssh_key_from_ssh_keygen_is_read_by_us)
{
	struct ssh_key k;
	char cmd[300], line[160], text[4096];
	const char *out;
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof cmd,
		 "ssh-keygen -q -t ed25519 -N '' -C test -f %s && ssh-keygen -y -f %s",
		 tmp("id_theirs"), tmp("id_theirs"));
	out = run(cmd);
	CHECK(out != NULL);
	CHECK(ssh_host_key_load(tmp("id_theirs"), 0, &k, NULL, 0) == 0);
	CHECK(ssh_authorized_key(k.pk, line, sizeof line) == 0);
	CHECK(!strncmp(out, line, strlen(line) - 1));
	/* A flipped byte in the body is refused with one line. */
	f = fopen(tmp("id_theirs"), "r");
	CHECK(f != NULL);
	n = fread(text, 1, sizeof text, f);
	fclose(f);
	text[100] = text[100] == 'A' ? 'B' : 'A';
	{
		char err[128] = "";

		CHECK(ssh_key_parse(text, n, &k, err, sizeof err) == -EINVAL);
		CHECK(!strncmp(err, "ssh key: ", 9));
	}
}

TEST(ssh_host_key_load_creates_a_missing_key_once)
{
	struct ssh_key a, b;

	CHECK(ssh_host_key_load(tmp("host_key"), 1, &a, NULL, 0) == 0);
	CHECK(ssh_host_key_load(tmp("host_key"), 1, &b, NULL, 0) == 0);
	CHECK_BYTES(a.sk, b.sk, 64);
	CHECK(ssh_host_key_load(tmp("missing"), 0, &b, NULL, 0) == -ENOENT);
}

/* ed25519 on hogweed (kube/ssh.c) is RFC 8032's: its test 1 (empty message) byte for byte,
 * and the keys and signatures of libsodium (what it replaced) for random seeds and messages. */
TEST(ssh_ed25519_matches_rfc8032_and_libsodium)
{
	uint8_t seed[32], pk[32], want[64], sig[64], ref_pk[32], ref_sk[64], ref_sig[64], msg[300];
	struct ssh_key k;

	harness_unhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", seed,
		      sizeof seed);
	harness_unhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", pk,
		      sizeof pk);
	harness_unhex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
		      "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
		      want, sizeof want);
	CHECK(ssh_key_from_seed(&k, seed) == 0);
	CHECK_BYTES(k.pk, pk, 32);
	CHECK_BYTES(k.sk, seed, 32);
	CHECK_BYTES(k.sk + 32, pk, 32);
	CHECK(ssh_ed25519_sign(&k, msg, 0, sig) == 0);
	CHECK_BYTES(sig, want, 64);
	for (size_t i = 0; i < 20; i++) {
		size_t len = i * 15;

		CHECK(random_bytes(seed, sizeof seed) == 0);
		CHECK(random_bytes(msg, len) == 0);
		CHECK(ssh_key_from_seed(&k, seed) == 0);
		CHECK(crypto_sign_seed_keypair(ref_pk, ref_sk, seed) == 0);
		CHECK_BYTES(k.pk, ref_pk, 32);
		CHECK_BYTES(k.sk, ref_sk, 64);
		CHECK(ssh_ed25519_sign(&k, msg, len, sig) == 0);
		CHECK(crypto_sign_detached(ref_sig, NULL, msg, len, ref_sk) == 0);
		CHECK_BYTES(sig, ref_sig, 64);
		CHECK(crypto_sign_verify_detached(sig, msg, len, k.pk) == 0);
	}
	secret_wipe(&k, sizeof k);
}
