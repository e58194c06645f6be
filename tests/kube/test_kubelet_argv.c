/* kubelet's command line as kubeadm's systemd drop-in composes it: the EnvironmentFile=
 * parser (quotes, escapes, comments, bounds, malformed files) and the argv from the files
 * under a root folder, as PID 1 composes it at every kubelet (re)start. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "harness.h"
#include "kube/kube.h"

static int value_of(const char *text, const char *key, char *val, size_t cap)
{
	char err[160];

	return env_file_value(text, strlen(text), key, val, cap, err, sizeof err);
}

/* what kubeadm 1.32's writeKubeletFlagBytesToDisk writes */
static const char kubeadm_flags[] =
    "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/"
    "containerd.sock --node-ip=10.9.0.2 --pod-infra-container-image=registry.k8s.io/"
    "pause:3.10 --provider-id=qemu:///hostname/worker-0\"\n";

TEST(env_file_reads_kubeadm_flags)
{
	char v[1024];

	CHECK(value_of(kubeadm_flags, "KUBELET_KUBEADM_ARGS", v, sizeof v) == 1);
	CHECK(strcmp(v, "--container-runtime-endpoint=unix:///run/containerd/containerd.sock "
			"--node-ip=10.9.0.2 --pod-infra-container-image=registry.k8s.io/"
			"pause:3.10 --provider-id=qemu:///hostname/worker-0") == 0);
	CHECK(value_of(kubeadm_flags, "KUBELET_EXTRA_ARGS", v, sizeof v) == 0);
	CHECK(v[0] == '\0');
}

TEST(env_file_quotes_and_escapes)
{
	char v[256];

	CHECK(value_of("A='x \"y\" \\z'\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "x \"y\" \\z") == 0); /* single quotes: literal */
	CHECK(value_of("A=\"a\\\"b\\\\c\\$d\\`e\\nf\"\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "a\"b\\c$d`e\\nf") == 0); /* other escapes keep the backslash */
	CHECK(value_of("A=a\\ b\\\"c\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "a b\"c") == 0);
	CHECK(value_of("A=\"one\" 'two' three\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "onetwothree") == 0); /* blanks after a closing quote are skipped */
	CHECK(value_of("A=x\"y\"\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "x\"y\"") == 0); /* a quote inside an unquoted value is literal */
	CHECK(value_of("A=\"line1\\\nline2\"\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "line1line2") == 0);
	CHECK(value_of("A=one\\\ntwo\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "onetwo") == 0);
	CHECK(value_of("A=\"multi\nline\"\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "multi\nline") == 0);
}

TEST(env_file_comments_blanks_and_last_assignment)
{
	char v[256];

	CHECK(value_of("# A=1\n; A=2\n  A  =   spaced value  \t\nB=3", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "spaced value") == 0);
	CHECK(value_of("A=1\nA=2\r\nno equals line\nA=\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "") == 0); /* the last one wins, even empty */
	CHECK(value_of("A=last-line-without-newline", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "last-line-without-newline") == 0);
	CHECK(value_of("A=\"open quote to the end", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "open quote to the end") == 0); /* as systemd takes it */
	CHECK(value_of("AB=1\nA_B=2\n", "A", v, sizeof v) == 0);
}

TEST(env_file_refuses_malformed_and_oversized)
{
	char v[16], err[160], *big;

	CHECK(env_file_value("A=1\n\0B=2\n", 10, "A", v, sizeof v, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "NUL") != NULL);
	CHECK(value_of("A=\xff\n", "A", v, sizeof v) == -EINVAL);
	CHECK(value_of("A=\xc0\x80\n", "A", v, sizeof v) == -EINVAL); /* overlong */
	CHECK(value_of("A=caf\xc3\xa9\n", "A", v, sizeof v) == 1);
	CHECK(value_of("1A=x\n", "A", v, sizeof v) == -EINVAL);
	CHECK(value_of("A B=x\n", "A", v, sizeof v) == -EINVAL);
	CHECK(value_of("A=0123456789abcdef\n", "A", v, sizeof v) == -EINVAL); /* > cap - 1 */
	CHECK(value_of("A=0123456789abcde\n", "A", v, sizeof v) == 1);
	big = malloc(KUBELET_ENV_FILE_MAX + 1);
	CHECK(big != NULL);
	memset(big, '#', KUBELET_ENV_FILE_MAX + 1);
	CHECK(env_file_value(big, KUBELET_ENV_FILE_MAX + 1, "A", v, sizeof v, err, sizeof err) ==
	      -EINVAL);
	CHECK(env_file_value(big, KUBELET_ENV_FILE_MAX, "A", v, sizeof v, err, sizeof err) == 0);
	free(big);
}

static void put_file(const char *dir, const char *rel, const char *text)
{
	char path[256];

	snprintf(path, sizeof path, "%s%s", dir, rel);
	*strrchr(path, '/') = '\0';
	if (mkdir_parents(path, 0755) < 0)
		abort();
	snprintf(path, sizeof path, "%s%s", dir, rel);
	if (write_file_replace(path, text, strlen(text), 0644) < 0)
		abort();
}

static const char *const fixed[] = {
    "/usr/bin/kubelet",
    "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
    "--kubeconfig=/etc/kubernetes/kubelet.conf",
    "--config=/var/lib/kubelet/config.yaml",
};

TEST(kubelet_argv_without_files_is_the_drop_in)
{
	char dir[64], arena[4096];
	const char *argv[64];
	int n;

	harness_tmpdir(dir, "kubelet-argv");
	n = kubelet_argv(dir, "/usr/bin/kubelet", arena, sizeof arena, argv, 64);
	CHECK(n == 4);
	for (int i = 0; i < 4; i++)
		CHECK(strcmp(argv[i], fixed[i]) == 0);
	CHECK(argv[4] == NULL);
	harness_rmtree(dir);
}

TEST(kubelet_argv_takes_kubeadm_flags_then_extra_args)
{
	char dir[64], arena[4096];
	const char *argv[64];
	int n;

	harness_tmpdir(dir, "kubelet-argv");
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", kubeadm_flags);
	put_file(dir, "/etc/default/kubelet", "KUBELET_EXTRA_ARGS='--v=2  --node-labels=a=b'\n");
	n = kubelet_argv(dir, "/usr/bin/kubelet", arena, sizeof arena, argv, 64);
	CHECK(n == 10);
	for (int i = 0; i < 4; i++)
		CHECK(strcmp(argv[i], fixed[i]) == 0);
	CHECK(strcmp(argv[4], "--container-runtime-endpoint=unix:///run/containerd/"
			      "containerd.sock") == 0);
	CHECK(strcmp(argv[5], "--node-ip=10.9.0.2") == 0);
	CHECK(strcmp(argv[6], "--pod-infra-container-image=registry.k8s.io/pause:3.10") == 0);
	CHECK(strcmp(argv[7], "--provider-id=qemu:///hostname/worker-0") == 0);
	CHECK(strcmp(argv[8], "--v=2") == 0);
	CHECK(strcmp(argv[9], "--node-labels=a=b") == 0);
	CHECK(argv[10] == NULL);
	harness_rmtree(dir);
}

TEST(kubelet_argv_drops_a_malformed_file_only)
{
	char dir[64], arena[4096];
	const char *argv[64];
	int n;

	harness_tmpdir(dir, "kubelet-argv");
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", "KUBELET_KUBEADM_ARGS=--a\n1BAD=x\n");
	put_file(dir, "/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--v=4\n");
	n = kubelet_argv(dir, "/k", arena, sizeof arena, argv, 64);
	CHECK(n == 5);
	CHECK(strcmp(argv[4], "--v=4") == 0);
	harness_rmtree(dir);
}

TEST(kubelet_argv_bounds_words_and_buffers)
{
	char dir[64], arena[16384], *text;
	const char *argv[KUBELET_WORDS_MAX + 16];
	size_t n = 0;
	int r;

	harness_tmpdir(dir, "kubelet-argv");
	text = malloc(KUBELET_ENV_FILE_MAX);
	CHECK(text != NULL);
	n += (size_t)snprintf(text, 64, "KUBELET_KUBEADM_ARGS=\"");
	for (int i = 0; i <= KUBELET_WORDS_MAX; i++)
		n += (size_t)snprintf(text + n, 8, "-%d ", i % 10);
	snprintf(text + n, 4, "\"\n");
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", text);
	r = kubelet_argv(dir, "/k", arena, sizeof arena, argv, KUBELET_WORDS_MAX + 16);
	CHECK(r == 4); /* one word too many: the file's words are left out */
	memcpy(text, "KUBELET_KUBEADM_ARGS=--a ", 25);
	memset(text + 25, 'x', KUBELET_WORD_MAX + 1);
	text[25 + KUBELET_WORD_MAX + 1] = '\0';
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", text);
	r = kubelet_argv(dir, "/k", arena, sizeof arena, argv, 64);
	CHECK(r == 4);
	free(text);
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", kubeadm_flags);
	CHECK(kubelet_argv(dir, "/k", arena, sizeof arena, argv, 8) == -E2BIG);
	CHECK(kubelet_argv(dir, "/k", arena, 200, argv, 64) == -ENOBUFS);
	CHECK(kubelet_argv(dir, "/k", arena, sizeof arena, argv, 9) == 8);
	harness_rmtree(dir);
}
