/* The kernel command line as the kernel splits it (lib/cmdline.c next_arg): words separated
 * by white space, a double-quoted stretch may hold spaces ("key=a b" or key="a b"), the
 * quotes are not part of the value. Everything after a lone "--" belongs to init, not to us.
 * The last occurrence of a key wins, as for most kernel parameters. */
#include <errno.h>
#include <string.h>

#include "boot.h"

/* The next word starting at *p: key [kb,ke), value [vb,ve) (vb == NULL: no '='). */
static int next_word(const char **p, const char **kb, const char **ke, const char **vb,
		     const char **ve)
{
	const char *s = *p;
	int quoted = 0;

	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (!*s)
		return 0;
	if (*s == '"') {
		quoted = 1;
		s++;
	}
	*kb = s;
	*vb = *ve = NULL;
	for (; *s; s++) {
		if (*s == '"') {
			quoted = !quoted;
			continue;
		}
		if (!quoted && (*s == ' ' || *s == '\t' || *s == '\n'))
			break;
		if (*s == '=' && !*vb) {
			*ke = s;
			*vb = s + 1;
		}
	}
	if (!*vb)
		*ke = s;
	else
		*ve = s;
	*p = s;
	return 1;
}

int cmdline_get(const char *cmdline, const char *key, char *out, size_t outlen)
{
	const char *p = cmdline, *kb, *ke, *vb, *ve;
	size_t kl = strlen(key);
	int found = 0;

	while (next_word(&p, &kb, &ke, &vb, &ve)) {
		size_t n = 0;

		if (ke - kb == 2 && !strncmp(kb, "--", 2) && !vb)
			break;
		if ((size_t)(ke - kb) != kl || strncmp(kb, key, kl))
			continue;
		/* copy the value without its quotes */
		for (const char *s = vb; vb && s < ve; s++) {
			if (*s == '"')
				continue;
			if (n + 1 >= outlen)
				return -ENAMETOOLONG;
			out[n++] = *s;
		}
		if (outlen)
			out[n] = 0;
		found = 1;
	}
	return found;
}
