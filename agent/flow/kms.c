/* The cluster KMS of spec §3.2–3.4: the master secret travels in a kms:// URI; every key the
 * node needs is HKDF over it with a "key-" prefixed ID. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "flow.h"

/* One round of Go's url.QueryUnescape: %XX decoded, '+' turned into a space. */
static int unescape(const char *s, size_t n, char *out, size_t *ret_len)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			out[o++] = s[i] == '+' ? ' ' : s[i];
			continue;
		}
		if (n - i < 3 || hex_digit(s[i + 1]) < 0 || hex_digit(s[i + 2]) < 0)
			return -EINVAL;
		out[o++] = (char)(hex_digit(s[i + 1]) << 4 | hex_digit(s[i + 2]));
		i += 2;
	}
	*ret_len = o;
	return 0;
}

/* Finds the first "name=" parameter of the query, as Go's Query().Get. */
static const char *find_param(const char *query, const char *name, size_t *ret_len)
{
	size_t nlen = strlen(name);

	for (const char *p = query; p;) {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);

		if (len > nlen && !strncmp(p, name, nlen) && p[nlen] == '=') {
			*ret_len = len - nlen - 1;
			return p + nlen + 1;
		}
		p = amp ? amp + 1 : NULL;
	}
	return NULL;
}

/* The parameter decoded twice (as the Go parser does), then URL-safe base64. */
static int param(const char *query, const char *name, struct secret **ret, char *err, size_t errlen)
{
	size_t vlen = 0, n1, n2, got;
	const char *v = find_param(query, name, &vlen);
	char *tmp;
	struct secret *s;
	int r = 0;

	if (!v || vlen == 0)
		return errbuf_set(err, errlen, "kms URI: no %s parameter", name);
	tmp = malloc(2 * vlen);
	s = secret_new(vlen);
	if (!tmp || !s) {
		free(tmp);
		secret_free(s);
		return -ENOMEM;
	}
	if (unescape(v, vlen, tmp, &n1) < 0 || unescape(tmp, n1, tmp + vlen, &n2) < 0)
		r = errbuf_set(err, errlen, "kms URI: %s: bad percent-encoding", name);
	else if (n2 == 0)
		r = errbuf_set(err, errlen, "kms URI: %s is empty", name);
	else if (base64_decode(BASE64_URL, tmp + vlen, n2, s->bytes, s->len, &got) < 0)
		r = errbuf_set(err, errlen, "kms URI: %s is not URL-safe base64", name);
	secret_wipe(tmp, 2 * vlen);
	free(tmp);
	if (r < 0) {
		secret_free(s);
		return r;
	}
	s->len = got;
	*ret = s;
	return 0;
}

int kms_parse(const char *uri, struct kms *ret, char *err, size_t errlen)
{
	static const char prefix[] = "kms://cluster-kms?";
	struct kms k = {0};
	int r;

	if (strncmp(uri, prefix, sizeof prefix - 1)) {
		if (!strncmp(uri, "kms://", 6))
			return errbuf_set(err, errlen,
					  "kms URI: only the cluster-kms host is supported");
		return errbuf_set(err, errlen, "kms URI: scheme is not kms://");
	}
	uri += sizeof prefix - 1;
	r = param(uri, "key", &k.key, err, errlen);
	if (r < 0)
		return r;
	r = param(uri, "salt", &k.salt, err, errlen);
	if (r < 0) {
		secret_free(k.key);
		return r;
	}
	if (k.key->len < 16) {
		kms_free(&k);
		return errbuf_set(err, errlen, "kms URI: key has fewer than 16 bytes");
	}
	*ret = k;
	return 0;
}

int kms_uri(const uint8_t key[32], const uint8_t salt[32], char *out, size_t cap)
{
	char k[BASE64_ENCODED_LEN(32) + 1], s[BASE64_ENCODED_LEN(32) + 1];
	int n;

	base64_encode(BASE64_URL, key, 32, k, sizeof k);
	base64_encode(BASE64_URL, salt, 32, s, sizeof s);
	n = snprintf(out, cap, "kms://cluster-kms?key=%s&salt=%s", k, s);
	secret_wipe(k, sizeof k);
	return n > 0 && (size_t)n < cap ? 0 : -ENOBUFS;
}

int kms_storage_check(const char *uri, char *err, size_t errlen)
{
	if (strcmp(uri, "storage://no-store"))
		return errbuf_set(err, errlen,
				  "storage URI: only storage://no-store is supported, got '%.64s'",
				  uri);
	return 0;
}

int kms_derive(const struct kms *k, const char *id, void *out, size_t len)
{
	char info[128];
	int n = snprintf(info, sizeof info, "key-%s", id);

	if (n < 0 || (size_t)n >= sizeof info)
		return -EINVAL;
	return hkdf_sha256(k->key->bytes, k->key->len, k->salt->bytes, k->salt->len, info,
			   (size_t)n, out, len);
}

int kms_disk_key(const struct kms *k, const char *uuid, int lower, uint8_t out[32])
{
	char id[80];
	size_t n = strlen(uuid);

	if (n == 0 || n >= sizeof id)
		return -EINVAL;
	for (size_t i = 0; i <= n; i++)
		id[i] = lower ? (char)tolower((unsigned char)uuid[i]) : uuid[i];
	return kms_derive(k, id, out, 32);
}

int cluster_id_derive(const uint8_t measurement_secret[32], const uint8_t *salt, size_t salt_len,
		      uint8_t out[32])
{
	return hkdf_sha256(measurement_secret, 32, salt, salt_len, "key-clusterID", 13, out, 32);
}

void kms_free(struct kms *k)
{
	secret_free(k->key);
	secret_free(k->salt);
	k->key = k->salt = NULL;
}
