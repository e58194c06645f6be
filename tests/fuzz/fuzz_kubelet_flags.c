/* libFuzzer target: kubelet's environment files (kubeadm-flags.env, /etc/default/kubelet),
 * written by kubeadm or an operator: systemd's EnvironmentFile= syntax and the split into
 * kubelet's argv. The input is cut at its first 0xfe byte into two files. Every word is
 * bounded, NUL-terminated inside the arena, and free of whitespace. The same bytes also go
 * through the redaction of kubeadm's output: no bootstrap token shape may survive it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int tok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* 1 when s still holds something shaped like a bootstrap token. */
static int has_token(const char *s, size_t n)
{
	for (size_t i = 0; i + 23 <= n; i++) {
		size_t k = 0;

		while (k < 23 && (k == 6 ? s[i + k] == '.' : tok(s[i + k])))
			k++;
		if (k == 23)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char arena[32768], val[512], err[160];
	static const char *argv[600];
	const uint8_t *cut = memchr(data, 0xfe, size);
	struct kubelet_env_text f[2] = {
	    {"kubeadm-flags.env", (const char *)data, cut ? (size_t)(cut - data) : size},
	    {"kubelet", cut ? (const char *)cut + 1 : NULL,
	     cut ? size - (size_t)(cut - data) - 1 : 0},
	};
	int r;

	log_set_level(LOG_ERROR + 1); /* malformed files are expected here */
	err[0] = '\0';
	r = env_file_value((const char *)data, size, "KUBELET_KUBEADM_ARGS", val, sizeof val, err,
			   sizeof err);
	if (r < -EINVAL || r > 1 || (r == -EINVAL && !err[0]) || strlen(val) >= sizeof val)
		abort();
	r = kubelet_argv_text(f, 2, "/k", arena, sizeof arena, (const char **)argv, 600);
	if (r < 0 && r != -E2BIG && r != -ENOBUFS)
		abort();
	for (int i = 0; i < r; i++) {
		size_t n = strlen(argv[i]);

		if (argv[i] < arena || argv[i] + n >= arena + sizeof arena ||
		    n > KUBELET_WORD_MAX || (i >= 4 && (n == 0 || strpbrk(argv[i], " \t\r\n"))))
			abort();
	}
	if (r >= 0 && argv[r] != NULL)
		abort();
	/* the same bytes as kubeadm output: no token shape survives the redaction */
	{
		char *c = malloc(size + 1);
		size_t n;

		if (!c)
			return 0;
		memcpy(c, data, size);
		n = kube_output_redact(c, size);
		if (n > size || has_token(c, n))
			abort();
		free(c);
	}
	return 0;
}
