/* kubelet's command line as kubeadm's systemd drop-in (10-kubeadm.conf) composes it:
 *   kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
 * with the last two from EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env and
 * EnvironmentFile=-/etc/default/kubelet. The files are read with systemd's EnvironmentFile=
 * rules for the subset kubeadm writes, and an unbraced $VAR splits at whitespace as systemd's
 * ExecStart= expansion does (no quote processing of the value). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "kube.h"

#define FLAGS_ENV "/var/lib/kubelet/kubeadm-flags.env"
#define EXTRA_ENV "/etc/default/kubelet"

static const char *const fixed_args[] = {
    "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
    "--kubeconfig=/etc/kubernetes/kubelet.conf",
    "--config=/var/lib/kubelet/config.yaml",
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_nl(char c)
{
	return c == '\n' || c == '\r';
}

static int env_name_valid(const char *k, size_t n)
{
	if (n == 0 || (k[0] >= '0' && k[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return 0;
	return 1;
}

/* 0 when s is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF). */
static int utf8_check(const uint8_t *s, size_t n, size_t *at)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = s[i];
		size_t k = c < 0x80		? 1
			   : (c & 0xe0) == 0xc0 ? 2
			   : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4
						: 0;
		uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1f : k == 3 ? c & 0x0f : c & 0x07;

		if (k == 0 || i + k > n)
			goto bad;
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				goto bad;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			goto bad;
		i += k;
		continue;
	bad:
		*at = i;
		return -EILSEQ;
	}
	return 0;
}

/* The parser's state, named as systemd's parse_env_file_internal names it. */
enum env_state {
	PRE_KEY,
	KEY,
	PRE_VALUE,
	VALUE,
	VALUE_ESCAPE,
	SQUOTE,
	DQUOTE,
	DQUOTE_ESCAPE,
	COMMENT
};

struct env_parse {
	const char *want; /* the key looked up */
	size_t want_len;
	char *val;	     /* its last value */
	size_t cap, n, trim; /* trim: where unquoted trailing whitespace began, or SIZE_MAX */
	size_t k0, k1;	     /* the current key in the text, trailing whitespace excluded */
	int mine, found, too_long;
};

static void add(struct env_parse *p, char c)
{
	if (!p->mine)
		return;
	if (p->n + 1 >= p->cap) {
		p->too_long = 1;
		return;
	}
	p->val[p->n++] = c;
}

/* The end of an assignment: the key checked, the value kept when it is the one looked up. */
static int finish(struct env_parse *p, const char *t, enum env_state st, unsigned line, char *err,
		  size_t errlen)
{
	if (!env_name_valid(t + p->k0, p->k1 - p->k0))
		return errbuf_set(err, errlen, "line %u: '%.*s' is not a variable name", line,
				  (int)(p->k1 - p->k0 > 64 ? 64 : p->k1 - p->k0), t + p->k0);
	if (!p->mine)
		return 0;
	if (p->too_long)
		return errbuf_set(err, errlen, "line %u: %s longer than %zu bytes", line, p->want,
				  p->cap - 1);
	if (st == VALUE && p->trim != SIZE_MAX)
		p->n = p->trim;
	p->val[p->n] = '\0';
	p->found = 1;
	return 0;
}

int env_file_value(const char *text, size_t len, const char *key, char *val, size_t cap, char *err,
		   size_t errlen)
{
	struct env_parse p = {.want = key, .want_len = strlen(key), .val = val, .cap = cap};
	enum env_state st = PRE_KEY;
	unsigned line = 1;
	size_t at;
	int r;

	if (cap == 0)
		return -EINVAL;
	val[0] = '\0';
	if (len > KUBELET_ENV_FILE_MAX)
		return errbuf_set(err, errlen, "larger than %d bytes", KUBELET_ENV_FILE_MAX);
	if (memchr(text, '\0', len))
		return errbuf_set(err, errlen, "a NUL byte");
	if (utf8_check((const uint8_t *)text, len, &at) < 0)
		return errbuf_set(err, errlen, "invalid UTF-8 at byte %zu", at);
	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		switch (st) {
		case PRE_KEY:
			if (c == '#' || c == ';')
				st = COMMENT;
			else if (!is_space(c)) {
				st = KEY;
				p.k0 = i;
				p.k1 = i + 1;
			}
			break;
		case KEY:
			if (is_nl(c)) { /* a line without '=' is dropped, as systemd drops it */
				st = PRE_KEY;
			} else if (c == '=') {
				st = PRE_VALUE;
				p.mine = p.k1 - p.k0 == p.want_len &&
					 memcmp(text + p.k0, key, p.want_len) == 0;
				p.n = 0;
				p.trim = SIZE_MAX;
				p.too_long = 0;
			} else if (!is_space(c)) {
				p.k1 = i + 1;
			}
			break;
		case PRE_VALUE:
		case VALUE:
			if (is_nl(c)) {
				if ((r = finish(&p, text, st, line, err, errlen)) < 0)
					return r;
				st = PRE_KEY;
			} else if (st == PRE_VALUE && (c == '\'' || c == '"')) {
				st = c == '\'' ? SQUOTE : DQUOTE;
			} else if (c == '\\') {
				st = VALUE_ESCAPE;
				p.trim = SIZE_MAX;
			} else if (st == VALUE || !is_space(c)) {
				if (!is_space(c))
					p.trim = SIZE_MAX;
				else if (p.trim == SIZE_MAX)
					p.trim = p.n;
				st = VALUE;
				add(&p, c);
			}
			break;
		case VALUE_ESCAPE:
			st = VALUE;
			if (!is_nl(c)) /* an escaped newline joins the lines */
				add(&p, c);
			break;
		case SQUOTE:
			if (c == '\'')
				st = PRE_VALUE;
			else
				add(&p, c);
			break;
		case DQUOTE:
			if (c == '"')
				st = PRE_VALUE;
			else if (c == '\\')
				st = DQUOTE_ESCAPE;
			else
				add(&p, c);
			break;
		case DQUOTE_ESCAPE:
			st = DQUOTE;
			if (c == '"' || c == '\\' || c == '`' || c == '$') {
				add(&p, c);
			} else if (c != '\n') { /* any other escape keeps its backslash */
				add(&p, '\\');
				add(&p, c);
			}
			break;
		case COMMENT:
			if (is_nl(c))
				st = PRE_KEY;
			break;
		}
		if (c == '\n')
			line++;
	}
	/* the last line may lack its newline; an open quote ends with the file, as in systemd */
	if (st != PRE_KEY && st != KEY && st != COMMENT &&
	    (r = finish(&p, text, st, line, err, errlen)) < 0)
		return r;
	if (!p.found)
		val[0] = '\0';
	return p.found;
}

/* Splits value at whitespace into words appended to argv[*argc...], copies in the arena. */
static int split(const char *v, char *arena, size_t cap, size_t *used, const char **argv,
		 size_t max_argv, size_t *argc, char *err, size_t errlen, int *short_of)
{
	size_t words = 0, start = *argc, start_used = *used;

	while (*v) {
		size_t n;

		while (is_space(*v))
			v++;
		if (!*v)
			break;
		for (n = 0; v[n] && !is_space(v[n]); n++)
			;
		if (n > KUBELET_WORD_MAX || ++words > KUBELET_WORDS_MAX) {
			*argc = start;
			*used = start_used;
			return n > KUBELET_WORD_MAX
				   ? errbuf_set(err, errlen, "a word longer than %d bytes",
						KUBELET_WORD_MAX)
				   : errbuf_set(err, errlen, "more than %d words",
						KUBELET_WORDS_MAX);
		}
		if (*argc + 2 > max_argv || *used + n + 1 > cap) {
			*short_of = *argc + 2 > max_argv ? -E2BIG : -ENOBUFS;
			return *short_of;
		}
		memcpy(arena + *used, v, n);
		arena[*used + n] = '\0';
		argv[(*argc)++] = arena + *used;
		*used += n + 1;
		v += n;
	}
	return 0;
}

static int push(const char *s, char *arena, size_t cap, size_t *used, const char **argv,
		size_t max_argv, size_t *argc)
{
	size_t n = strlen(s);

	if (*argc + 2 > max_argv)
		return -E2BIG;
	if (*used + n + 1 > cap)
		return -ENOBUFS;
	memcpy(arena + *used, s, n + 1);
	argv[(*argc)++] = arena + *used;
	*used += n + 1;
	return 0;
}

int kubelet_argv_text(const struct kubelet_env_text *files, size_t n_files, const char *kubelet,
		      char *arena, size_t cap, const char **argv, size_t max_argv)
{
	static const char *const vars[] = {"KUBELET_KUBEADM_ARGS", "KUBELET_EXTRA_ARGS"};
	size_t used = 0, argc = 0;
	int bad[KUBELET_ENV_FILES_MAX] = {0}, r;
	char *val;

	if (n_files > KUBELET_ENV_FILES_MAX)
		return log_err(-EINVAL, "kubelet: more than %d environment files",
			       KUBELET_ENV_FILES_MAX);
	if ((r = push(kubelet, arena, cap, &used, argv, max_argv, &argc)) < 0)
		goto small;
	for (size_t i = 0; i < sizeof fixed_args / sizeof fixed_args[0]; i++)
		if ((r = push(fixed_args[i], arena, cap, &used, argv, max_argv, &argc)) < 0)
			goto small;
	if (!(val = malloc(KUBELET_ENV_FILE_MAX + 1)))
		return log_err(-ENOMEM, "kubelet: command line");
	/* one environment from all files, a later file's assignment winning, as systemd
	 * loads the unit's EnvironmentFile= lines in order */
	for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
		ssize_t from = -1;
		char err[160];

		for (size_t f = 0; f < n_files; f++) {
			if (!files[f].text || bad[f])
				continue;
			err[0] = '\0';
			r = env_file_value(files[f].text, files[f].len, vars[v], val,
					   KUBELET_ENV_FILE_MAX + 1, err, sizeof err);
			if (r < 0) {
				bad[f] = 1;
				log_warn("kubelet: %s: %s; kubelet starts without its words",
					 files[f].name, err);
			} else if (r == 1) {
				from = (ssize_t)f;
			}
		}
		if (from < 0)
			continue;
		/* the winning value again (the buffer holds the last file's lookup) */
		env_file_value(files[from].text, files[from].len, vars[v], val,
			       KUBELET_ENV_FILE_MAX + 1, err, sizeof err);
		{
			size_t keep_argc = argc, keep_used = used;
			int short_of = 0;

			r = split(val, arena, cap, &used, argv, max_argv, &argc, err, sizeof err,
				  &short_of);
			if (short_of < 0) {
				r = short_of;
				free(val);
				goto small;
			}
			if (r < 0) {
				argc = keep_argc;
				used = keep_used;
				log_warn("kubelet: %s: %s: %s; kubelet starts without its words",
					 files[from].name, vars[v], err);
			}
		}
	}
	free(val);
	argv[argc] = NULL;
	return (int)argc;
small:
	return log_err(r, "kubelet: command line: %s too small (%zu %s)",
		       r == -E2BIG ? "argv" : "arena", r == -E2BIG ? max_argv : cap,
		       r == -E2BIG ? "entries" : "bytes");
}

/* Reads root+path into a new buffer: 0 with *text NULL when the file is missing, 1 when read,
 * -EFBIG when too large (logged). */
static int read_env(const char *root, const char *path, char **text, size_t *len)
{
	char full[4096];
	ssize_t n;
	int fd;

	*text = NULL;
	*len = 0;
	if (snprintf(full, sizeof full, "%s%s", root, path) >= (int)sizeof full)
		return log_err(-ENAMETOOLONG, "kubelet: %s%s: path too long", root, path);
	if ((fd = open(full, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			return 0;
		return log_err(-errno, "kubelet: %s: cannot open; kubelet starts without its words",
			       full);
	}
	if (!(*text = malloc(KUBELET_ENV_FILE_MAX + 1))) {
		close(fd);
		return log_err(-ENOMEM, "kubelet: reading %s", full);
	}
	n = read_full(fd, *text, KUBELET_ENV_FILE_MAX + 1);
	close(fd);
	if (n < 0 || n > KUBELET_ENV_FILE_MAX) {
		free(*text);
		*text = NULL;
		return n < 0
			   ? log_err((int)n,
				     "kubelet: reading %s; kubelet starts without its words", full)
			   : log_err(-EFBIG,
				     "kubelet: %s: larger than %d bytes; kubelet starts without "
				     "its words",
				     full, KUBELET_ENV_FILE_MAX);
	}
	*len = (size_t)n;
	return 1;
}

int kubelet_argv(const char *root, const char *kubelet, char *arena, size_t cap, const char **argv,
		 size_t max_argv)
{
	struct kubelet_env_text f[2] = {{.name = FLAGS_ENV}, {.name = EXTRA_ENV}};
	int r;

	if (!root)
		root = "";
	for (size_t i = 0; i < 2; i++)
		if (read_env(root, f[i].name, (char **)&f[i].text, &f[i].len) < 0)
			f[i].text = NULL; /* said why; kubelet starts without it */
	r = kubelet_argv_text(f, 2, kubelet, arena, cap, argv, max_argv);
	for (size_t i = 0; i < 2; i++)
		free((char *)f[i].text);
	return r;
}

static const char *const stamped[3] = {"/var/lib/kubelet/config.yaml", FLAGS_ENV, EXTRA_ENV};

static void stamp_one(const char *root, size_t i, struct kubelet_stamp *s)
{
	char path[4096];
	struct stat st;

	memset(&s->f[i], 0, sizeof s->f[i]);
	if (snprintf(path, sizeof path, "%s%s", root ? root : "", stamped[i]) >= (int)sizeof path ||
	    stat(path, &st) < 0)
		return;
	s->f[i].present = 1;
	s->f[i].dev = (unsigned long long)st.st_dev;
	s->f[i].ino = (unsigned long long)st.st_ino;
	s->f[i].size = (unsigned long long)st.st_size;
	s->f[i].mtime_s = (long long)st.st_mtim.tv_sec;
	s->f[i].mtime_ns = (long long)st.st_mtim.tv_nsec;
	s->f[i].ctime_s = (long long)st.st_ctim.tv_sec;
	s->f[i].ctime_ns = (long long)st.st_ctim.tv_nsec;
}

void kubelet_stamp_take(const char *root, struct kubelet_stamp *s)
{
	for (size_t i = 0; i < 3; i++)
		stamp_one(root, i, s);
}

int kubelet_stamp_changed(const char *root, const struct kubelet_stamp *s)
{
	struct kubelet_stamp now;

	for (size_t i = 0; i < 3; i++) {
		stamp_one(root, i, &now);
		if (memcmp(&now.f[i], &s->f[i], sizeof now.f[i]) != 0) {
			log_debug("kubelet: %s%s changed since kubelet started", root ? root : "",
				  stamped[i]);
			return 1;
		}
	}
	return 0;
}
