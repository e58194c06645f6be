/* kubeadm, kubelet and containerd stand-ins (test doubles) for the whole-node QEMU boots of
 * qemu-tests/scenarios.sh: kubeadm and kubelet are not packaged for Debian, so one static
 * program plays all three, chosen by the name it is run as, and records on the console what it
 * was given, as "@@STANDIN <name> ..." and "@@DATA <key> <value>" lines the host script reads.
 * Nothing secret reaches the console: the bootstrap token and the private keys are reported
 * as SHA-256 digests or sizes only (the scenarios grep every serial log for their secrets).
 *
 * The behaviours of the real programs the agent depends on, modelled here (kubernetes v1.32:
 * cmd/kubeadm/app/phases/kubelet/flags.go, cmd/kubeadm/app/cmd/phases/join/kubelet.go,
 * cmd/kubeadm/app/util/join.go, cmd/kubelet/app/server.go, the 10-kubeadm.conf drop-in):
 *
 *   kubeadm join --config F ...   endpoint, CA hash, token digest of F; then the kubelet-start
 *                                 phase: /var/lib/kubelet/config.yaml (the config's
 *                                 KubeletConfiguration), /var/lib/kubelet/kubeadm-flags.env
 *                                 (KUBELET_KUBEADM_ARGS="..." as Go's %q writes it: the
 *                                 nodeRegistration's kubeletExtraArgs, --container-runtime-
 *                                 endpoint from criSocket, --hostname-override when the node
 *                                 name is not the hostname; sorted), /etc/kubernetes/
 *                                 bootstrap-kubelet.conf; then waits for the kubelet's TLS
 *                                 bootstrap (/var/lib/kubelet/pki/kubelet-client-current.pem)
 *                                 at most 240 s (FIXTURE/tls-bootstrap-wait-s overrides) and
 *                                 fails with kubeadm's message and status 1 without it; on
 *                                 success the bootstrap kubeconfig is removed
 *   kubeadm init phase certs all  copies the fixture CA of the root disk (/usr/share/standin)
 *                                 into /etc/kubernetes/pki: the agent signs the kubelet's
 *                                 certificate with it
 *   kubeadm init ...              the config's non-secret lines; config.yaml, kubeadm-flags.env
 *                                 and /etc/kubernetes/kubelet.conf; waits for the kubelet as
 *                                 join does (the real one polls the kubelet's healthz, 4 min);
 *                                 then the success banner with a join command holding a
 *                                 bootstrap token (random, or FIXTURE/banner-token so the
 *                                 scenarios can look for it in the logs), "<value withheld>"
 *                                 under --skip-token-print, as kubeadm prints it
 *   kubeadm kubeconfig user ...   prints a kubeconfig
 *   kubelet ...                   counts its starts (/run/standin); while the --config file is
 *                                 missing: kubelet's "failed to load kubelet config file"
 *                                 line on stderr and exit 1, as the real one; once it exists:
 *                                 checks its argv (the drop-in's three flags, then every word
 *                                 of KUBELET_KUBEADM_ARGS, read with its own parser) and the
 *                                 hostname (not "(none)", equal to --hostname-override if
 *                                 given), asks containerd for its version (ctr, or a gRPC call
 *                                 on /run/containerd/containerd.sock; absent: reported), does
 *                                 the TLS bootstrap (bootstrap-kubelet.conf -> kubelet.conf and
 *                                 kubelet-client-current.pem; neither kubeconfig: standalone,
 *                                 no certificate), reports the files the agent put in place
 *                                 and PCR 15 (sysfs); keeps a marker on the state disk (new,
 *                                 or the one a previous boot left: the data survives a
 *                                 reboot); waits for the agent's boot timeline, prints it,
 *                                 "@@INIT_DONE rc=0", and asks PID 1 to shut the node down
 *                                 (SIGTERM)
 *   containerd                    its arguments; waits for SIGTERM */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bearssl.h>

#define FIXTURE		"/usr/share/standin"
#define PKI		"/etc/kubernetes/pki"
#define MARKER		"/var/lib/standin/marker"
#define TIMELINE	"/run/constel/boot-timeline.json"
#define WAIT_S		900 /* the timeline comes after kubeadm, which the agent bounds to 5 min */
#define KUBELET_DIR	"/var/lib/kubelet"
#define FLAGS_ENV	KUBELET_DIR "/kubeadm-flags.env"
#define CLIENT_PEM	KUBELET_DIR "/pki/kubelet-client-current.pem"
#define KUBELET_CONF	"/etc/kubernetes/kubelet.conf"
#define BOOTSTRAP_CONF	"/etc/kubernetes/bootstrap-kubelet.conf"
#define CONTAINERD_SOCK "/run/containerd/containerd.sock"
#define TLS_WAIT_S	240 /* kubeadm's wait for the kubelet (KubeletHealthCheck: 4 min) */

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

/* mkdir -p of path's parent directories. */
static void mkdir_parents(const char *path)
{
	char d[512];

	snprintf(d, sizeof d, "%s", path);
	for (char *p = d + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(d, 0755);
		*p = '/';
	}
}

static int write_text(const char *path, const char *text, mode_t mode)
{
	size_t n = strlen(text);
	int fd, ok;

	mkdir_parents(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ok = fd >= 0 && write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	if (!ok)
		say("@@STANDIN writing %s failed: %s", path, strerror(errno));
	return ok ? 0 : -1;
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* The kubelet's health as kubeadm waits for it, bounded by FIXTURE/tls-bootstrap-wait-s. */
static int wait_for_kubelet(void)
{
	char *t = slurp(FIXTURE "/tls-bootstrap-wait-s", NULL);
	int s = t ? atoi(t) : TLS_WAIT_S;

	free(t);
	if (s <= 0)
		s = TLS_WAIT_S;
	say("@@STANDIN kubeadm: waiting up to %d s for the kubelet's TLS bootstrap", s);
	printf("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap\n");
	fflush(stdout);
	for (int i = 0; i < s * 10; i++) {
		if (exists(CLIENT_PEM)) {
			say("@@DATA kubeadm_kubelet_ready_after_ms %d", i * 100);
			return 0;
		}
		usleep(100000);
	}
	say("@@STANDIN kubeadm: no %s after %d s", CLIENT_PEM, s);
	fprintf(stderr, "error execution phase kubelet-start: timed out waiting for the "
			"condition\nTo see the stack trace of this error execute with --v=5 or "
			"higher\n");
	return -1;
}

/* kubeadm's GetHostname: the kernel's name, lowercased; "" when unset. */
static void hostname_of(char *out, size_t cap)
{
	if (gethostname(out, cap) < 0)
		out[0] = '\0';
	out[cap - 1] = '\0';
	for (char *p = out; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
}

struct flag {
	char key[64], val[256];
};

static int flag_cmp(const void *a, const void *b)
{
	return strcmp(((const struct flag *)a)->key, ((const struct flag *)b)->key);
}

/* kubeadm-flags.env as WriteKubeletDynamicEnvFile writes it: the default flags, the
 * node's kubeletExtraArgs over them, sorted, joined, and quoted with Go's %q. */
static int write_flags_env(const char *cfg)
{
	struct flag f[32];
	int n = 0;
	char name[256] = "", host[256], sock[256] = "unix:///var/run/containerd/containerd.sock";
	char line[8192];
	size_t off;
	const char *p;

	if ((p = strstr(cfg, "nodeRegistration:\n"))) {
		yaml_value(p, "name", name, sizeof name);
		yaml_value(p, "criSocket", sock, sizeof sock);
	}
	snprintf(f[n].key, sizeof f[n].key, "container-runtime-endpoint");
	snprintf(f[n++].val, sizeof f[0].val, "%s", sock);
	hostname_of(host, sizeof host);
	if (name[0] && strcmp(name, host) != 0) {
		say("@@DATA kubeadm_hostname_override %s (hostname '%s')", name, host);
		snprintf(f[n].key, sizeof f[n].key, "hostname-override");
		snprintf(f[n++].val, sizeof f[0].val, "%s", name);
	}
	if ((p = strstr(cfg, "  kubeletExtraArgs:\n"))) {
		for (p = strchr(p, '\n') + 1; !strncmp(p, "    ", 4) && n < 32;) {
			const char *c = strchr(p, ':'), *e = strchr(p, '\n');
			size_t kl, vl;
			int j;

			if (!c || !e || c > e)
				break;
			kl = (size_t)(c - p - 4);
			for (c++; *c == ' ' || *c == '"'; c++)
				;
			vl = (size_t)(e - c);
			while (vl > 0 && c[vl - 1] == '"')
				vl--;
			for (j = 0;
			     j < n && (strlen(f[j].key) != kl || strncmp(f[j].key, p + 4, kl)); j++)
				;
			snprintf(f[j].key, sizeof f[j].key, "%.*s", (int)kl, p + 4);
			snprintf(f[j].val, sizeof f[j].val, "%.*s", (int)vl, c);
			n += j == n;
			p = e + 1;
		}
	}
	qsort(f, (size_t)n, sizeof f[0], flag_cmp);
	off = (size_t)snprintf(line, sizeof line, "KUBELET_KUBEADM_ARGS=\"");
	for (int i = 0; i < n && off < sizeof line - 600; i++) {
		off += (size_t)snprintf(line + off, sizeof line - off, "%s--%s=", i ? " " : "",
					f[i].key);
		for (const char *v = f[i].val; *v; v++) { /* Go's %q for what flags hold */
			if (*v == '"' || *v == '\\')
				line[off++] = '\\';
			line[off++] = *v;
		}
	}
	snprintf(line + off, sizeof line - off, "\"\n");
	return write_text(FLAGS_ENV, line, 0644);
}

/* config.yaml: the KubeletConfiguration document of the kubeadm configuration. */
static int write_kubelet_config(const char *cfg)
{
	const char *p = strstr(cfg, "kind: KubeletConfiguration\n");
	char out[8192];

	if (p) {
		const char *e = strstr(p, "\n---");

		p += strlen("kind: KubeletConfiguration\n");
		snprintf(
		    out, sizeof out,
		    "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n%.*s",
		    (int)(e && e > p ? (size_t)(e - p) + 1 : strlen(p)), p);
	} else {
		snprintf(out, sizeof out,
			 "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n");
	}
	return write_text(KUBELET_DIR "/config.yaml", out, 0644);
}

static int kubelet_start_phase(const char *cfg, int join)
{
	char kc[1024], ep[256] = "10.42.1.100:6443", tok[128] = "";

	printf("[kubelet-start] Writing kubelet environment file with flags to file "
	       "\"" FLAGS_ENV "\"\n[kubelet-start] Writing kubelet configuration to file "
	       "\"" KUBELET_DIR "/config.yaml\"\n[kubelet-start] Starting the kubelet\n");
	fflush(stdout);
	yaml_value(cfg, join ? "apiServerEndpoint" : "controlPlaneEndpoint", ep, sizeof ep);
	if (join)
		yaml_value(cfg, "token", tok, sizeof tok);
	/* the bootstrap kubeconfig holds the token, as kubeadm's does; kubelet.conf at init
	 * points at the client certificate the kubelet rotates */
	snprintf(kc, sizeof kc,
		 "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"
		 "    certificate-authority: /etc/kubernetes/pki/ca.crt\n"
		 "    server: https://%s\n  name: kubernetes\ncontexts:\n- context:\n"
		 "    cluster: kubernetes\n    user: %s\n  name: default\n"
		 "current-context: default\nusers:\n- name: %s\n  user:\n%s%s%s",
		 ep, join ? "tls-bootstrap-token-user" : "default-auth",
		 join ? "tls-bootstrap-token-user" : "default-auth", join ? "    token: " : "",
		 join ? tok : "", join ? "\n" : "    client-certificate: " CLIENT_PEM "\n");
	explicit_bzero(tok, sizeof tok);
	if (write_kubelet_config(cfg) < 0 || write_flags_env(cfg) < 0 ||
	    write_text(join ? BOOTSTRAP_CONF : KUBELET_CONF, kc, 0600) < 0)
		return -1;
	explicit_bzero(kc, sizeof kc);
	return wait_for_kubelet();
}

/* A bootstrap token as kubeadm makes one: [a-z0-9]{6}.[a-z0-9]{16}. */
static void new_token(char out[24])
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[22];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	char *fixed = slurp(FIXTURE "/banner-token", NULL);

	if (fixed && strlen(fixed) >= 23) {
		memcpy(out, fixed, 23);
		out[23] = '\0';
		free(fixed);
		return;
	}
	free(fixed);
	if (fd < 0 || read(fd, r, sizeof r) != (ssize_t)sizeof r)
		memset(r, 7, sizeof r);
	if (fd >= 0)
		close(fd);
	for (int i = 0, j = 0; i < 23; i++)
		out[i] = i == 6 ? '.' : abc[r[j++] % 36];
	out[23] = '\0';
}

/* The end of a successful "kubeadm init" on stdout, as kubeadm's initDoneTempl has it. */
static void init_banner(const char *cfg, int skip_token_print)
{
	char ep[256] = "10.42.1.100:6443", tok[24], hash[65], *ca;
	size_t n = 0;

	yaml_value(cfg, "controlPlaneEndpoint", ep, sizeof ep);
	if (!strchr(ep, ':'))
		strncat(ep, ":6443", sizeof ep - strlen(ep) - 1);
	ca = slurp(PKI "/ca.crt", &n);
	sha256_hex(ca ? ca : "", ca ? n : 0, hash);
	free(ca);
	new_token(tok);
	printf("\nYour Kubernetes control-plane has initialized successfully!\n\n"
	       "To start using your cluster, you need to run the following as a regular user:\n\n"
	       "  mkdir -p $HOME/.kube\n"
	       "  sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config\n\n"
	       "Then you can join any number of worker nodes by running the following on each "
	       "as root:\n\nkubeadm join %s --token %s \\\n\t--discovery-token-ca-cert-hash "
	       "sha256:%s \n",
	       ep, skip_token_print ? "<value withheld>" : tok, hash);
	fflush(stdout);
	say("@@DATA init_token_printed %s", skip_token_print ? "no" : "yes");
	memset(tok, 0, sizeof tok);
}

static int kubeadm(int argc, char **argv)
{
	const char *cfg = arg_after(argc, argv, "--config");
	char v[512], hex[65];
	const char *p;
	char *text;
	int rc = 0;

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
			memset(v, 0, sizeof v);
		}
		if (yaml_value(text, "advertiseAddress", v, sizeof v) == 0)
			say("@@DATA join_advertise %s", v);
		say("@@DATA join_control_plane %s", strstr(text, "controlPlane:") ? "yes" : "no");
		rc = kubelet_start_phase(text, 1) < 0 ? 1 : 0;
		if (rc ==
		    0) { /* kubeadm drops the token's kubeconfig once the kubelet has its own */
			unlink(BOOTSTRAP_CONF);
			printf("\nThis node has joined the cluster:\n");
		}
	} else if (has(argc, argv, "init") && !has(argc, argv, "phase")) {
		static const char *const keys[] = {
		    "controlPlaneEndpoint", "clusterName", "kubernetesVersion",
		    "advertiseAddress",	    "podSubnet",   "serviceSubnet"};

		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (yaml_value(text, keys[i], v, sizeof v) == 0)
				say("@@DATA init_%s %s", keys[i], v);
		rc = kubelet_start_phase(text, 0) < 0 ? 1 : 0;
		if (rc == 0)
			init_banner(text, has(argc, argv, "--skip-token-print"));
	}
	memset(text, 0, strlen(text));
	free(text);
	return rc;
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

/* This boot's kubelet starts, counted in /run (gone at the next boot). */
static int count_start(void)
{
	char *t = slurp("/run/standin/kubelet-starts", NULL), b[16];
	int n = (t ? atoi(t) : 0) + 1;

	free(t);
	snprintf(b, sizeof b, "%d\n", n);
	mkdir("/run/standin", 0755);
	write_text("/run/standin/kubelet-starts", b, 0644);
	return n;
}

/* The words of KUBELET_KUBEADM_ARGS, read as systemd reads what kubeadm writes there (one
 * KEY="..." line, \" and \\ escaped) and split at blanks as $VAR is; its own parser, not the
 * agent's. Returns the count, -1 without the file. */
static int kubeadm_words(char *buf, size_t cap, char **w, int max)
{
	char *t = slurp(FLAGS_ENV, NULL), *p;
	size_t o = 0;
	int n = 0, in_word = 0;

	if (!t)
		return -1;
	p = strstr(t, "KUBELET_KUBEADM_ARGS=");
	if (p) {
		p += strlen("KUBELET_KUBEADM_ARGS=");
		if (*p == '"')
			p++;
		for (; *p && *p != '"' && *p != '\n' && o + 2 < cap; p++) {
			char c = *p;

			if (c == '\\' && p[1])
				c = *++p;
			else if (c == ' ' || c == '\t') {
				if (in_word)
					buf[o++] = '\0';
				in_word = 0;
				continue;
			}
			if (!in_word && n < max)
				w[n++] = buf + o;
			in_word = 1;
			buf[o++] = c;
		}
	}
	buf[o] = '\0';
	free(t);
	return n;
}

/* kubelet's command line against the drop-in's: its three flags, then every word of
 * KUBELET_KUBEADM_ARGS, in order. 1 when all are there. */
static int check_argv(int argc, char **argv)
{
	static const char *const fixed[] = {"--bootstrap-kubeconfig=" BOOTSTRAP_CONF,
					    "--kubeconfig=" KUBELET_CONF,
					    "--config=" KUBELET_DIR "/config.yaml"};
	char buf[8192], *w[128];
	int n = kubeadm_words(buf, sizeof buf, w, 128), at = 1, ok = 1;

	for (size_t i = 0; i < 3; i++)
		if (!has(argc, argv, fixed[i])) {
			say("@@DATA kubelet_flags missing %s", fixed[i]);
			ok = 0;
		}
	if (n < 0) {
		say("@@DATA kubelet_flags no %s", FLAGS_ENV);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		while (at < argc && strcmp(argv[at], w[i]))
			at++;
		if (at == argc) {
			say("@@DATA kubelet_flags missing %s", w[i]);
			ok = 0;
			at = 1;
		}
	}
	if (ok)
		say("@@DATA kubelet_flags ok (%d words of KUBELET_KUBEADM_ARGS)", n);
	return ok;
}

/* The node registers under the hostname (or --hostname-override): "(none)" is the kernel's
 * name when nobody set one. */
static void check_hostname(int argc, char **argv)
{
	const char *over = arg_after(argc, argv, "--hostname-override");
	char h[256];

	hostname_of(h, sizeof h);
	say("@@DATA kubelet_hostname %s", h);
	if (!h[0] || !strcmp(h, "(none)") || strchr(h, '(') || strchr(h, '_'))
		say("@@DATA kubelet_hostname_ok no (not a node name)");
	else if (over && strcmp(over, h))
		say("@@DATA kubelet_hostname_ok no (--hostname-override=%s)", over);
	else
		say("@@DATA kubelet_hostname_ok yes");
}

static int put_frame(int fd, uint8_t type, uint8_t flags, uint32_t stream, const void *p, size_t n)
{
	uint8_t h[9] = {(uint8_t)(n >> 16),
			(uint8_t)(n >> 8),
			(uint8_t)n,
			type,
			flags,
			(uint8_t)(stream >> 24),
			(uint8_t)(stream >> 16),
			(uint8_t)(stream >> 8),
			(uint8_t)stream};

	return write(fd, h, 9) == 9 && (n == 0 || write(fd, p, n) == (ssize_t)n) ? 0 : -1;
}

static int read_full(int fd, uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = read(fd, p, n);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* containerd's Version over its gRPC socket: HTTP/2 by hand, literal HPACK headers. */
static void ask_containerd(void)
{
	static const char path[] = "/containerd.services.version.v1.Version/Version";
	struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = CONTAINERD_SOCK};
	struct timeval tv = {5, 0};
	uint8_t hb[256], f[9], *pay = NULL, msg[5] = {0};
	size_t n = 0;
	int fd = -1, i;

	for (i = 0; i < 100 && !exists(CONTAINERD_SOCK); i++)
		usleep(100000);
	if (!exists(CONTAINERD_SOCK)) {
		say("@@DATA containerd_version absent (no %s after 10 s)", CONTAINERD_SOCK);
		return;
	}
	/* containerd creates its socket file a little before it listens on it: a refused
	 * connect is retried within the same 10 s, as kubelet's CRI dial retries. */
	for (int rc = -1; rc < 0; i++) {
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) {
			say("@@DATA containerd_version unreachable (%s)", strerror(errno));
			goto out;
		}
		if ((rc = connect(fd, (struct sockaddr *)&a, sizeof a)) == 0)
			break;
		if (errno != ECONNREFUSED || i >= 100) {
			say("@@DATA containerd_version unreachable (%s)", strerror(errno));
			goto out;
		}
		close(fd);
		fd = -1;
		usleep(100000);
	}
	hb[n++] = 0x83; /* :method POST */
	hb[n++] = 0x86; /* :scheme http */
	hb[n++] = 0x04; /* :path, literal value */
	hb[n++] = sizeof path - 1;
	memcpy(hb + n, path, sizeof path - 1);
	n += sizeof path - 1;
	hb[n++] = 0x01; /* :authority */
	hb[n++] = 9;
	memcpy(hb + n, "localhost", 9);
	n += 9;
	hb[n++] = 0x0f; /* content-type (static index 31) */
	hb[n++] = 0x10;
	hb[n++] = 16;
	memcpy(hb + n, "application/grpc", 16);
	n += 16;
	hb[n++] = 0x00; /* te: trailers, new name */
	hb[n++] = 2;
	memcpy(hb + n, "te", 2);
	n += 2;
	hb[n++] = 8;
	memcpy(hb + n, "trailers", 8);
	n += 8;
	if (write(fd, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24) != 24 ||
	    put_frame(fd, 4, 0, 0, NULL, 0) < 0 || put_frame(fd, 1, 4, 1, hb, n) < 0 ||
	    put_frame(fd, 0, 1, 1, msg, 5) < 0) {
		say("@@DATA containerd_version unreachable (write: %s)", strerror(errno));
		goto out;
	}
	for (i = 0; i < 32; i++) {
		size_t len;

		free(pay);
		pay = NULL;
		if (read_full(fd, f, 9) < 0)
			break;
		len = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
		if (len > 1 << 16 || !(pay = malloc(len + 1)) || read_full(fd, pay, len) < 0)
			break;
		if (f[3] == 4 && !(f[4] & 1))
			put_frame(fd, 4, 1, 0, NULL, 0); /* SETTINGS ack */
		if (f[3] == 0 && len > 7) { /* DATA: a gRPC message with VersionResponse */
			size_t o = (f[4] & 8) ? 1 : 0, end = len - ((f[4] & 8) ? pay[0] : 0);

			o += 5;
			if (o + 2 <= end && pay[o] == 0x0a && o + 2 + pay[o + 1] <= end) {
				say("@@DATA containerd_version %.*s", pay[o + 1],
				    (char *)pay + o + 2);
				goto out;
			}
		}
		if (f[3] == 3 || f[3] == 7 || (f[3] == 1 && (f[4] & 1)))
			break; /* RST_STREAM, GOAWAY, or trailers without a message */
	}
	say("@@DATA containerd_version no answer to Version");
out:
	free(pay);
	if (fd >= 0)
		close(fd);
}

/* kubelet's run.go line for a failure before it runs, on stderr, then status 1. */
static int kubelet_fails(int start, const char *err)
{
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	fprintf(stderr,
		"E%02d%02d %02d:%02d:%02d.000000 %6d run.go:74] \"command failed\" err=\"%s\"\n",
		tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)getpid(), err);
	say("@@STANDIN kubelet: start %d: exit 1: %.160s", start, err);
	return 1;
}

/* The kubelet's client: with --kubeconfig's file, the certificate it rotates; else the TLS
 * bootstrap from --bootstrap-kubeconfig's file (a client certificate and a kubeconfig that
 * points at it); a kubeconfig flag whose file is missing is kubelet's error; no kubeconfig
 * flag at all is standalone mode (no cluster, no certificate). */
static int tls_bootstrap(int argc, char **argv, int start)
{
	static const char pem[] = "-----BEGIN CERTIFICATE-----\n"
				  "c3RhbmRpbiBrdWJlbGV0IGNsaWVudCBjZXJ0aWZpY2F0ZQ==\n"
				  "-----END CERTIFICATE-----\n";
	const char *kc = arg_after(argc, argv, "--kubeconfig"),
		   *boot = arg_after(argc, argv, "--bootstrap-kubeconfig");
	char err[512];

	if (kc && exists(kc)) {
		say("@@DATA kubelet_bootstrap kubeconfig");
	} else if (boot && exists(boot) && kc) {
		say("@@DATA kubelet_bootstrap tls-bootstrap");
		write_text(kc,
			   "apiVersion: v1\nkind: Config\nusers:\n- name: default-auth\n  user:\n"
			   "    client-certificate: " CLIENT_PEM "\n    client-key: " CLIENT_PEM
			   "\n",
			   0600);
	} else if (boot) {
		snprintf(err, sizeof err,
			 "failed to run Kubelet: unable to load bootstrap kubeconfig: stat %s: no "
			 "such file or directory",
			 boot);
		return kubelet_fails(start, err);
	} else if (kc) {
		snprintf(err, sizeof err,
			 "failed to run Kubelet: invalid kubeconfig: stat %s: no such file or "
			 "directory",
			 kc);
		return kubelet_fails(start, err);
	} else {
		say("@@DATA kubelet_bootstrap none (standalone mode)");
		return 0;
	}
	if (!exists(CLIENT_PEM))
		write_text(CLIENT_PEM, pem, 0600);
	return 0;
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
	const char *cfg = arg_after(argc, argv, "--config");
	char *tl = NULL, *pcr;
	int start = count_start();

	/* kubelet's run.go: "command failed" when the --config file cannot be read */
	if (!cfg || !exists(cfg)) {
		char err[512];
		const char *c = cfg ? cfg : "";

		snprintf(err, sizeof err,
			 "failed to load kubelet config file, path: %s, error: failed to load "
			 "Kubelet config file %s, error failed to read kubelet config file "
			 "\\\"%s\\\", error: open %s: no such file or directory",
			 c, c, c, c);
		return kubelet_fails(start, err);
	}
	if (tls_bootstrap(argc, argv, start) != 0) /* before the runtime, as in server.go */
		return 1;
	say("@@DATA kubelet_starts %d", start);
	if (!check_argv(argc, argv)) {
		/* A real kubelet runs on without kubeadm's flags (kubeadm then restarts it through
		 * the init system): so does the double, and the boot ends only with a kubelet that
		 * has them, or never. */
		say("@@STANDIN kubelet: running without kubeadm's flags until restarted");
		for (;;)
			pause();
	}
	check_hostname(argc, argv);
	ask_containerd();
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
