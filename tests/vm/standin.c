/* kubeadm, kubelet and containerd stand-ins (test doubles) for the whole-node QEMU boots of
 * qemu-tests/scenarios.sh: kubeadm and kubelet are not packaged for Debian, so one static
 * program plays all three, chosen by the name it is run as, and records on the console what it
 * was given, as "@@STANDIN <name> ..." and "@@DATA <key> <value>" lines the host script reads.
 * Nothing secret reaches the console: the bootstrap token and the private keys are reported
 * as SHA-256 digests or sizes only (the scenarios grep every serial log for their secrets).
 *
 *   kubeadm join --config F ...   endpoint, CA hash, token digest of F; exit 0
 *   kubeadm init phase certs all  copies the fixture CA of the root disk (/usr/share/standin)
 *                                 into /etc/kubernetes/pki: the agent signs the kubelet's
 *                                 certificate with it
 *   kubeadm init ...              the config's non-secret lines
 *   kubeadm kubeconfig user ...   prints a kubeconfig
 *   kubelet ...                   its arguments, the files the agent put in place and PCR 15
 *                                 (sysfs); keeps a marker on the state disk (new, or the one
 *                                 a previous boot left: the data survives a reboot); waits
 *                                 for the agent's
 *                                 boot timeline, prints it, "@@INIT_DONE rc=0", and asks PID 1
 *                                 to shut the node down (SIGTERM)
 *   containerd                    its arguments; waits for SIGTERM */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bearssl.h>

#define FIXTURE	 "/usr/share/standin"
#define PKI	 "/etc/kubernetes/pki"
#define MARKER	 "/var/lib/standin/marker"
#define TIMELINE "/run/constel/boot-timeline.json"
#define WAIT_S	 900 /* the timeline comes after kubeadm, which the agent bounds to 5 min */

static FILE *con;

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(con, fmt, ap);
	va_end(ap);
	fputc('\n', con);
	fflush(con);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap && !(buf = realloc(buf, cap = 2 * cap + 8192)))
			break;
		r = fread(buf + n, 1, 4096, f);
		n += r;
	} while (r > 0);
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		if (len)
			*len = n;
	}
	return buf;
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
	br_sha256_context c;
	unsigned char d[32];

	br_sha256_init(&c);
	br_sha256_update(&c, p, n);
	br_sha256_out(&c, d);
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static int copy(const char *from, const char *to, mode_t mode)
{
	size_t n;
	char *b = slurp(from, &n);
	int fd, ok;

	if (!b)
		return -1;
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ok = fd >= 0 && write(fd, b, n) == (ssize_t)n;
	if (fd >= 0)
		close(fd);
	free(b);
	return ok ? 0 : -1;
}

/* The value of "key: value" lines of a YAML file (first match, quotes dropped). */
static int yaml_value(const char *text, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *p = l;
		size_t n;

		while (*p == ' ' || *p == '-')
			p++;
		if (strncmp(p, key, kl) || p[kl] != ':')
			continue;
		p += kl + 1;
		while (*p == ' ' || *p == '"')
			p++;
		n = strcspn(p, "\"\n");
		if (n >= cap)
			n = cap - 1;
		memcpy(out, p, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}

static const char *arg_after(int argc, char **argv, const char *flag)
{
	size_t fl = strlen(flag);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], flag) && i + 1 < argc)
			return argv[i + 1];
		if (!strncmp(argv[i], flag, fl) && argv[i][fl] == '=')
			return argv[i] + fl + 1;
	}
	return NULL;
}

static int has(int argc, char **argv, const char *word)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], word))
			return 1;
	return 0;
}

static void say_argv(const char *name, int argc, char **argv)
{
	char line[2048];
	size_t off = 0;

	line[0] = '\0';
	for (int i = 1; i < argc && off < sizeof line - 2; i++)
		off += (size_t)snprintf(line + off, sizeof line - off, "%s%s", i > 1 ? " " : "",
					argv[i]);
	say("@@STANDIN %s %s", name, line);
}

static int kubeadm(int argc, char **argv)
{
	const char *cfg = arg_after(argc, argv, "--config");
	char v[512], hex[65];
	const char *p;
	char *text;

	if (has(argc, argv, "kubeconfig")) {
		/* the admin kubeconfig the init stream hands to the CLI */
		printf("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"
		       "    server: https://10.42.1.100:6443\n  name: constellation\n"
		       "contexts:\n- context:\n    cluster: constellation\n    user: admin\n"
		       "  name: admin@constellation\ncurrent-context: admin@constellation\n"
		       "users:\n- name: admin\n  user: {}\n");
		return 0;
	}
	if (has(argc, argv, "certs")) {
		mkdir("/etc/kubernetes", 0755);
		mkdir(PKI, 0755);
		if (copy(FIXTURE "/ca.crt", PKI "/ca.crt", 0644) < 0 ||
		    copy(FIXTURE "/ca.key", PKI "/ca.key", 0600) < 0) {
			say("@@STANDIN kubeadm: copying the fixture CA failed: %s",
			    strerror(errno));
			return 1;
		}
		return 0;
	}
	if (!cfg || !(text = slurp(cfg, NULL)))
		return 0;
	if (has(argc, argv, "join")) {
		if (yaml_value(text, "apiServerEndpoint", v, sizeof v) == 0)
			say("@@DATA join_endpoint %s", v);
		if ((p = strstr(text, "caCertHashes:\n"))) { /* the list's first item */
			p += strlen("caCertHashes:\n") + strspn(p + 14, " -\"");
			snprintf(v, sizeof v, "%.*s", (int)strcspn(p, "\"\n"), p);
			say("@@DATA join_ca_hash %s", v);
		}
		if (yaml_value(text, "node-ip", v, sizeof v) == 0)
			say("@@DATA join_node_ip %s", v);
		if (yaml_value(text, "token", v, sizeof v) == 0) {
			sha256_hex(v, strlen(v), hex);
			say("@@DATA join_token_sha256 %s", hex);
		}
		if (yaml_value(text, "advertiseAddress", v, sizeof v) == 0)
			say("@@DATA join_advertise %s", v);
		say("@@DATA join_control_plane %s", strstr(text, "controlPlane:") ? "yes" : "no");
	} else if (has(argc, argv, "init")) {
		static const char *const keys[] = {
		    "controlPlaneEndpoint", "clusterName", "kubernetesVersion",
		    "advertiseAddress",	    "podSubnet",   "serviceSubnet"};

		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (yaml_value(text, keys[i], v, sizeof v) == 0)
				say("@@DATA init_%s %s", keys[i], v);
	}
	free(text);
	return 0;
}

static void report_file(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		say("@@DATA kubelet_file %s missing", path);
	else
		say("@@DATA kubelet_file %s %o %lld", path, (unsigned)(st.st_mode & 07777),
		    (long long)st.st_size);
}

static void marker(void)
{
	char *old = slurp(MARKER, NULL), hex[65];
	unsigned char r[16];
	int fd;

	if (old) {
		say("@@DATA marker_found %s", old);
		free(old);
		return;
	}
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, r, sizeof r) != (ssize_t)sizeof r)
		return;
	close(fd);
	sha256_hex(r, sizeof r, hex);
	mkdir("/var/lib", 0755);
	mkdir("/var/lib/standin", 0755);
	fd = open(MARKER, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, hex, 64) != 64 || fsync(fd) < 0)
		say("@@STANDIN kubelet: writing %s failed: %s", MARKER, strerror(errno));
	if (fd >= 0)
		close(fd);
	say("@@DATA marker_new %s", hex);
}

static int kubelet(int argc, char **argv)
{
	static const char *const files[] = {
	    "/run/state/kubelet/pki/kubelet-client-crt.pem",
	    "/run/state/kubelet/pki/kubelet-client-key.pem",
	    "/run/state/constellation/node_state.json",
	    "/run/state/ssh/ssh_host_ed25519_key",
	    "/etc/kubernetes/pki/ca.crt",
	};
	char *tl = NULL, *pcr;

	(void)argc;
	(void)argv;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		report_file(files[i]);
	/* the node's mark (spec §5.3): H(0^32 || H(cluster ID)) once it is bootstrapped */
	if ((pcr = slurp("/sys/class/tpm/tpm0/pcr-sha256/15", NULL))) {
		pcr[strcspn(pcr, "\n")] = '\0';
		say("@@DATA pcr15 %s", pcr);
		free(pcr);
	}
	marker();
	for (int i = 0; i < WAIT_S * 10 && !(tl = slurp(TIMELINE, NULL)); i++)
		usleep(100000);
	if (!tl) {
		say("@@STANDIN kubelet: no %s after %d s", TIMELINE, WAIT_S);
		say("@@INIT_DONE rc=1");
	} else {
		tl[strcspn(tl, "\n")] = '\0';
		say("@@DATA timeline %s", tl);
		free(tl);
		say("@@INIT_DONE rc=0");
	}
	sync();
	kill(1, SIGTERM); /* PID 1 stops us and the node powers off */
	for (;;)
		pause();
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	con = fopen("/dev/console", "we");
	if (!con)
		con = stderr;
	say_argv(name, argc, argv);
	if (!strcmp(name, "kubeadm"))
		return kubeadm(argc, argv);
	if (!strcmp(name, "kubelet"))
		return kubelet(argc, argv);
	for (;;) /* containerd */
		pause();
	return 0;
}
