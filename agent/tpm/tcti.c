/* Parsing of TCTI strings given on the command line (--tpm). Strict: unknown transports,
 * unknown keys, relative device paths and out-of-range ports are refused with one line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "tpm.h"

static int parse_port(const char *v, size_t len, uint16_t *ret)
{
	unsigned long p = 0;

	if (len == 0 || len > 5)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		p = p * 10 + (unsigned long)(v[i] - '0');
	}
	if (p == 0 || p > 65534) /* the control port is port+1 */
		return -EINVAL;
	*ret = (uint16_t)p;
	return 0;
}

static int parse_swtpm(const char *conf, struct tcti_spec *t, char *err, size_t errlen)
{
	const char *p = conf;

	while (*p) {
		const char *end = strchr(p, ','), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p), vlen;

		eq = memchr(p, '=', len);
		if (!eq)
			return errbuf_set(err, errlen, "tcti swtpm: expected key=value, got '%.*s'",
					  (int)len, p);
		vlen = len - (size_t)(eq + 1 - p);
		if ((size_t)(eq - p) == 4 && !strncmp(p, "host", 4)) {
			if (vlen == 0 || vlen >= sizeof t->host)
				return errbuf_set(err, errlen,
						  "tcti swtpm: host must be 1 to %zu characters",
						  sizeof t->host - 1);
			memcpy(t->host, eq + 1, vlen);
			t->host[vlen] = '\0';
		} else if ((size_t)(eq - p) == 4 && !strncmp(p, "port", 4)) {
			if (parse_port(eq + 1, vlen, &t->port) < 0)
				return errbuf_set(err, errlen,
						  "tcti swtpm: port must be 1 to 65534, got '%.*s'",
						  (int)vlen, eq + 1);
		} else {
			return errbuf_set(err, errlen,
					  "tcti swtpm: unknown key '%.*s' (host, port)",
					  (int)(eq - p), p);
		}
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			return errbuf_set(err, errlen, "tcti swtpm: trailing ','");
	}
	return 0;
}

int tcti_spec_parse(const char *s, struct tcti_spec *ret, char *err, size_t errlen)
{
	struct tcti_spec t = {0};
	const char *colon = strchr(s, ':');
	size_t nlen = colon ? (size_t)(colon - s) : strlen(s);
	const char *conf = colon ? colon + 1 : "";
	int r;

	if (nlen == 6 && !strncmp(s, "device", 6)) {
		t.kind = TCTI_DEVICE;
		if (!*conf)
			conf = "/dev/tpmrm0";
		if (conf[0] != '/')
			return errbuf_set(err, errlen,
					  "tcti device: path must be absolute, got '%s'", conf);
		if (strlen(conf) >= sizeof t.path)
			return errbuf_set(err, errlen,
					  "tcti device: path longer than %zu characters",
					  sizeof t.path - 1);
		strcpy(t.path, conf);
	} else if (nlen == 5 && !strncmp(s, "swtpm", 5)) {
		t.kind = TCTI_SWTPM;
		strcpy(t.host, "127.0.0.1");
		t.port = 2321;
		r = parse_swtpm(conf, &t, err, errlen);
		if (r < 0)
			return r;
	} else {
		return errbuf_set(err, errlen, "unknown TPM transport '%.*s' (device, swtpm)",
				  (int)nlen, s);
	}
	*ret = t;
	return 0;
}
