/* kubeadm's stdout and stderr on their way to the log: only the last KUBE_TAIL_MAX bytes are
 * kept, and only the last lines are logged, with every bootstrap token
 * ([a-z0-9]{6}.[a-z0-9]{16}, kubeadm's BootstrapTokenRegexp without its anchors) and the
 * value after --certificate-key replaced. The serial console of a confidential VM is read by
 * the host, and a token with the CA hash would join any machine to the cluster. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "kube.h"

static int tok_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int hex_char(char c)
{
	return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9');
}

size_t kube_output_redact(char *s, size_t len)
{
	static const char mark[] = "<token>", ckey[] = "--certificate-key";
	size_t o = 0, i = 0;

	while (i < len) {
		size_t j = 0;

		/* a token: 6 token characters, a dot, 16 token characters */
		while (j < 6 && i + j < len && tok_char(s[i + j]))
			j++;
		if (j == 6 && i + 23 <= len && s[i + 6] == '.') {
			size_t k = 0;

			while (k < 16 && i + 7 + k < len && tok_char(s[i + 7 + k]))
				k++;
			if (k == 16) {
				memcpy(s + o, mark, sizeof mark - 1);
				o += sizeof mark - 1;
				i += 23;
				continue;
			}
		}
		/* "--certificate-key <hex>" or "--certificate-key=<hex>" (64 hex digits) */
		if (len - i > sizeof ckey && memcmp(s + i, ckey, sizeof ckey - 1) == 0 &&
		    (s[i + sizeof ckey - 1] == ' ' || s[i + sizeof ckey - 1] == '=')) {
			size_t v = i + sizeof ckey, e = v;

			while (e < len && hex_char(s[e]))
				e++;
			if (e - v >= 16) { /* "<key>" is shorter: o stays behind i */
				memmove(s + o, s + i, sizeof ckey);
				o += sizeof ckey;
				memcpy(s + o, "<key>", 5);
				o += 5;
				i = e;
				continue;
			}
		}
		s[o++] = s[i++];
	}
	if (o < len)
		secret_wipe(s + o, len - o);
	return o;
}

void kube_tail_init(struct kube_tail *t)
{
	t->len = 0;
	t->cut = 0;
}

void kube_tail_add(struct kube_tail *t, const char *p, size_t n)
{
	if (n >= sizeof t->buf) {
		p += n - sizeof t->buf;
		n = sizeof t->buf;
		t->len = 0;
		t->cut = 1;
	} else if (t->len + n > sizeof t->buf) {
		size_t drop = t->len + n - sizeof t->buf;

		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
		t->cut = 1;
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
}

void kube_tail_log(struct kube_tail *t, const char *what, int lines, int level)
{
	size_t start = 0, end, n;
	int seen = 0;

	n = kube_output_redact(t->buf, t->len);
	/* a cut first line may have lost the start of a token: it is left out */
	if (t->cut) {
		while (start < n && t->buf[start] != '\n')
			start++;
		start += start < n;
	}
	end = n;
	while (end > start && t->buf[end - 1] == '\n')
		end--;
	/* back from the end to the start of the last `lines` lines */
	for (size_t i = end; i > start; i--)
		if (t->buf[i - 1] == '\n' && ++seen == lines) {
			start = i;
			break;
		}
	for (size_t i = start; i < end;) {
		size_t e = i;

		while (e < end && t->buf[e] != '\n')
			e++;
		log_msg(level, "%s| %.*s", what, (int)(e - i > 400 ? 400 : e - i), t->buf + i);
		i = e + 1;
	}
	secret_wipe(t->buf, sizeof t->buf);
	t->len = 0;
	t->cut = 0;
}
