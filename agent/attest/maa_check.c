/* MAA token checks (maa.h): the JWKS of <maa>/certs, the RS256 compact JWS, its time claims
 * and the nonce claim, as go-azguestattestation's ValidateToken (go-jose v3) and Constellation's
 * maaClient.validateClaims judge them. Only RS256 is accepted (what MAA signs with; go-jose
 * would take any algorithm the key fits). Tools only. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <bearssl.h>
#include <json-c/json.h>

#include "attest/maa.h"
#include "attest/x509.h"
#include "base/base.h"
#include "base/der.h"
#include "net/net.h"

static const uint8_t oid_rsa[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01};

static int is_null(json_object *v)
{
	return !v || json_object_is_type(v, json_type_null);
}

/* the RSA key of a certificate's SubjectPublicKeyInfo; 1 when it is none (an EC key etc.) */
static int cert_rsa_key(const uint8_t *der, size_t len, struct maa_key *k)
{
	struct x509_cert c;
	struct der_in bits, key, n, e;

	if (x509_parse(der, len, &c) < 0)
		return -EBADMSG;
	if (!der_oid_is(&c.key_alg_oid, oid_rsa, sizeof oid_rsa))
		return 1;
	bits = c.key;
	if (der_expect(&bits, DER_SEQUENCE, &key, NULL) < 0 || bits.len ||
	    der_expect(&key, DER_INTEGER, &n, NULL) < 0 ||
	    der_expect(&key, DER_INTEGER, &e, NULL) < 0 || key.len || !n.len || (n.p[0] & 0x80) ||
	    !e.len || (e.p[0] & 0x80))
		return -EBADMSG;
	if (!n.p[0])
		n.p++, n.len--;
	while (e.len && !e.p[0])
		e.p++, e.len--;
	if (n.len < 128 || n.len > 512 || !e.len || e.len > sizeof k->e)
		return -EBADMSG; /* BearSSL's i31 bound; Go refuses such keys too */
	if (!(k->n = malloc(n.len)))
		return -ENOMEM;
	memcpy(k->n, n.p, n.len);
	k->n_len = n.len;
	memcpy(k->e, e.p, e.len);
	k->e_len = e.len;
	return 0;
}

void maa_jwks_free(struct maa_jwks *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		free(ks->keys[i].n);
	memset(ks, 0, sizeof *ks);
}

int maa_jwks_parse(const char *body, size_t len, struct maa_jwks *ks, char *err, size_t errlen)
{
	json_object *root, *keys;
	uint8_t *der = NULL;
	size_t n;
	int r = 0;

	memset(ks, 0, sizeof *ks);
	if (len > MAA_JWKS_MAX || !(root = json_parse_exact(body, len)))
		return errbuf_set(err, errlen, "MAA key set (%zu bytes) is not JSON", len);
	if (!json_object_is_type(root, json_type_object)) {
		r = errbuf_set(err, errlen, "MAA key set is not a JSON object");
		goto out;
	}
	keys = json_member_go(root, "keys");
	if (is_null(keys)) {
		n = 0;
	} else if (!json_object_is_type(keys, json_type_array)) {
		r = errbuf_set(err, errlen, "MAA key set: keys is not a list");
		goto out;
	} else {
		n = json_object_array_length(keys);
	}
	for (size_t i = 0; i < n; i++) {
		json_object *k = json_object_array_get_idx(keys, i), *kid, *x5c, *c0;
		struct maa_key *mk = &ks->keys[ks->n];
		size_t dlen, blen;

		if (is_null(k))
			continue;
		kid = json_member_go(k, "kid");
		x5c = json_member_go(k, "x5c");
		if (!json_object_is_type(k, json_type_object) ||
		    (!is_null(kid) && !json_object_is_type(kid, json_type_string)) ||
		    (!is_null(x5c) && !json_object_is_type(x5c, json_type_array))) {
			r = errbuf_set(err, errlen, "MAA key set: key %zu is malformed", i);
			goto out;
		}
		if (is_null(x5c) || !json_object_array_length(x5c))
			continue; /* as go-azguestattestation: a key without a certificate */
		c0 = json_object_array_get_idx(x5c, 0);
		for (size_t j = 0; j < json_object_array_length(x5c); j++) {
			json_object *cj = json_object_array_get_idx(x5c, j);

			if (!is_null(cj) && !json_object_is_type(cj, json_type_string)) {
				r = errbuf_set(err, errlen,
					       "MAA key set: key %zu: x5c[%zu] is "
					       "not a string",
					       i, j);
				goto out;
			}
		}
		if (ks->n == MAA_KEYS_MAX) {
			r = errbuf_set(err, errlen, "MAA key set: more than %d keys", MAA_KEYS_MAX);
			goto out;
		}
		if (!is_null(kid)) {
			if ((size_t)json_object_get_string_len(kid) >= sizeof mk->kid ||
			    strlen(json_object_get_string(kid)) !=
				(size_t)json_object_get_string_len(kid)) {
				r = errbuf_set(err, errlen, "MAA key set: key %zu: kid too long",
					       i);
				goto out;
			}
			strcpy(mk->kid, json_object_get_string(kid));
		}
		blen = is_null(c0) ? 0 : (size_t)json_object_get_string_len(c0);
		free(der);
		if (!(der = malloc(blen / 4 * 3 + 3))) {
			r = -ENOMEM;
			goto out;
		}
		if (base64_decode(BASE64_STD, blen ? json_object_get_string(c0) : "", blen, der,
				  blen / 4 * 3 + 3, &dlen) < 0) {
			r = errbuf_set(err, errlen, "MAA key set: key %zu: x5c[0] is not base64",
				       i);
			goto out;
		}
		r = cert_rsa_key(der, dlen, mk);
		if (r == -ENOMEM)
			goto out;
		if (r < 0) {
			r = errbuf_set(err, errlen,
				       "MAA key set: key %zu (kid '%s'): x5c[0] is not a "
				       "certificate with a usable key",
				       i, mk->kid);
			goto out;
		}
		r = 0;
		ks->n++;
	}
out:
	free(der);
	json_object_put(root);
	if (r < 0)
		maa_jwks_free(ks);
	return r;
}

/* base64url without padding (RFC 7515 §2; go-jose also takes it padded) into a malloc'd
 * buffer with a NUL after the bytes */
static int b64url(const char *s, size_t len, uint8_t **out, size_t *out_len)
{
	char *padded;
	int r;

	while (len && s[len - 1] == '=')
		len--;
	if (len % 4 == 1)
		return -EINVAL;
	if (!(padded = malloc(len + 4)) || !(*out = malloc(len / 4 * 3 + 4))) {
		free(padded);
		return -ENOMEM;
	}
	memcpy(padded, s, len);
	while (len % 4)
		padded[len++] = '=';
	r = base64_decode(BASE64_URL, padded, len, *out, len / 4 * 3 + 3, out_len);
	free(padded);
	if (r < 0) {
		free(*out);
		*out = NULL;
		return -EINVAL;
	}
	(*out)[*out_len] = 0;
	return 0;
}

/* exp/nbf/iat: absent or null -> no check (1), a number -> *t (0), else -EINVAL */
static int numeric_date(json_object *claims, const char *name, time_t *t)
{
	json_object *v = json_member_go(claims, name);
	double d;

	if (is_null(v))
		return 1;
	if (json_object_is_type(v, json_type_int)) {
		*t = (time_t)json_object_get_int64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_double))
		return -EINVAL;
	d = json_object_get_double(v);
	if (!(d > -1e15 && d < 1e15))
		return -EINVAL;
	*t = (time_t)d; /* go-jose's NumericDate: int64(f) */
	return 0;
}

static int check_claims(json_object *claims, time_t at, const uint8_t *extra, size_t extra_len,
			char *err, size_t errlen)
{
	json_object *rt, *cp, *nonce;
	char want[BASE64_ENCODED_LEN(64) + 1];
	time_t nbf, exp, iat;
	int a, b, c;

	if ((a = numeric_date(claims, "nbf", &nbf)) < 0 ||
	    (b = numeric_date(claims, "exp", &exp)) < 0 ||
	    (c = numeric_date(claims, "iat", &iat)) < 0)
		return errbuf_set(err, errlen, "MAA token: exp, nbf or iat is not a number"),
		       -EINVAL;
	if (!a && at + MAA_LEEWAY < nbf)
		return errbuf_set(err, errlen, "MAA token: not valid before %lld (nbf)",
				  (long long)nbf),
		       -EKEYREJECTED;
	if (!b && at - MAA_LEEWAY > exp)
		return errbuf_set(err, errlen, "MAA token: expired at %lld (exp)", (long long)exp),
		       -EKEYREJECTED;
	if (!c && at + MAA_LEEWAY < iat)
		return errbuf_set(err, errlen, "MAA token: issued in the future (iat %lld)",
				  (long long)iat),
		       -EKEYREJECTED;
	/* Constellation's validateClaims: map lookups, so the keys are exact */
	if (!json_object_object_get_ex(claims, "x-ms-runtime", &rt) ||
	    !json_object_is_type(rt, json_type_object))
		return errbuf_set(err, errlen, "MAA token: no claim x-ms-runtime"), -EKEYREJECTED;
	if (!json_object_object_get_ex(rt, "client-payload", &cp) ||
	    !json_object_is_type(cp, json_type_object))
		return errbuf_set(err, errlen, "MAA token: no claim x-ms-runtime.client-payload"),
		       -EKEYREJECTED;
	if (!json_object_object_get_ex(cp, "nonce", &nonce) ||
	    !json_object_is_type(nonce, json_type_string))
		return errbuf_set(err, errlen,
				  "MAA token: no claim x-ms-runtime.client-payload.nonce"),
		       -EKEYREJECTED;
	if (extra_len > 64 || base64_encode(BASE64_STD, extra, extra_len, want, sizeof want) < 0)
		return errbuf_set(err, errlen, "MAA token: extra data too long"), -EINVAL;
	if ((size_t)json_object_get_string_len(nonce) != strlen(want) ||
	    memcmp(json_object_get_string(nonce), want, strlen(want)))
		return errbuf_set(err, errlen,
				  "MAA token: the nonce claim is not this handshake's extra data"),
		       -EKEYREJECTED;
	return 0;
}

int maa_token_check(const char *token, size_t len, const struct maa_jwks *ks, time_t at,
		    const uint8_t *extra, size_t extra_len, char *err, size_t errlen)
{
	const char *d1, *d2;
	uint8_t *hdr = NULL, *body = NULL, *sig = NULL, hash[32], got[32];
	size_t hdr_len, body_len, sig_len;
	json_object *h = NULL, *claims = NULL, *alg, *kid;
	const struct maa_key *k = NULL;
	br_sha256_context sc;
	int r = -EINVAL;

	if (!len)
		return errbuf_set(err, errlen, "MAA token: empty (the document carries none)"),
		       -EKEYREJECTED;
	if (len > MAA_TOKEN_MAX || memchr(token, 0, len) || !(d1 = memchr(token, '.', len)) ||
	    !(d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token))) ||
	    memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)))
		return errbuf_set(err, errlen, "MAA token (%zu bytes) is not a compact JWS", len),
		       -EINVAL;
	if (b64url(token, (size_t)(d1 - token), &hdr, &hdr_len) < 0 ||
	    b64url(d1 + 1, (size_t)(d2 - d1 - 1), &body, &body_len) < 0 ||
	    b64url(d2 + 1, len - (size_t)(d2 + 1 - token), &sig, &sig_len) < 0) {
		errbuf_set(err, errlen, "MAA token: a part is not base64url");
		goto out;
	}
	if (!(h = json_parse_exact((const char *)hdr, hdr_len)) ||
	    !json_object_is_type(h, json_type_object)) {
		errbuf_set(err, errlen, "MAA token: the header is not a JSON object");
		goto out;
	}
	alg = json_member_go(h, "alg");
	kid = json_member_go(h, "kid");
	if (!alg || !json_object_is_type(alg, json_type_string) ||
	    strcmp(json_object_get_string(alg), "RS256")) {
		errbuf_set(err, errlen, "MAA token: algorithm %.16s, not RS256",
			   alg && json_object_is_type(alg, json_type_string)
			       ? json_object_get_string(alg)
			       : "(none)");
		goto out;
	}
	r = -EKEYREJECTED;
	if (!kid || !json_object_is_type(kid, json_type_string) ||
	    !json_object_get_string_len(kid)) {
		errbuf_set(err, errlen, "MAA token: the header names no key (kid)");
		goto out;
	}
	for (size_t i = 0; i < ks->n && !k; i++) /* go-jose: the first key with this kid */
		if (!strcmp(ks->keys[i].kid, json_object_get_string(kid)))
			k = &ks->keys[i];
	if (!k || !k->n) {
		errbuf_set(err, errlen, "MAA token: signed by key '%.64s', which MAA does not %s",
			   json_object_get_string(kid), k ? "hold as RSA" : "publish");
		goto out;
	}
	br_sha256_init(&sc);
	br_sha256_update(&sc, token, (size_t)(d2 - token));
	br_sha256_out(&sc, hash);
	{
		br_rsa_public_key pk = {k->n, k->n_len, (unsigned char *)k->e, k->e_len};

		if (sig_len != k->n_len ||
		    !br_rsa_i31_pkcs1_vrfy(sig, sig_len, BR_HASH_OID_SHA256, 32, &pk, got) ||
		    memcmp(got, hash, 32)) {
			errbuf_set(err, errlen,
				   "MAA token: the RS256 signature does not verify with key "
				   "'%.64s'",
				   k->kid);
			goto out;
		}
	}
	if (!(claims = json_parse_exact((const char *)body, body_len)) ||
	    !json_object_is_type(claims, json_type_object)) {
		errbuf_set(err, errlen, "MAA token: the claims are not a JSON object");
		r = -EINVAL;
		goto out;
	}
	r = check_claims(claims, at, extra, extra_len, err, errlen);
out:
	json_object_put(h);
	json_object_put(claims);
	free(hdr);
	free(body);
	free(sig);
	return r;
}

int maa_validate(const char *maa_url, const char *token, time_t at, const uint8_t *extra,
		 size_t extra_len, char *err, size_t errlen)
{
	struct http_response resp = {0};
	struct ca_bundle ca = {0};
	struct maa_jwks ks;
	char url[1024], why[256];
	size_t ul;
	int r;

	if (!maa_url || !maa_url[0])
		return errbuf_set(err, errlen,
				  "enforcement policy MAAFallback: no MAA URL "
				  "(firmwareSignerConfig.maaURL or --maa-url)"),
		       -EKEYREJECTED;
	ul = strlen(maa_url);
	/* url.JoinPath(maaURL, "certs") */
	if (snprintf(url, sizeof url, "%.*s/certs",
		     (int)(ul && maa_url[ul - 1] == '/' ? ul - 1 : ul), maa_url) >= (int)sizeof url)
		return errbuf_set(err, errlen, "MAA URL too long"), -EINVAL;
	if (!strncmp(url, "https://", 8) &&
	    (r = ca_bundle_load(CA_BUNDLE_DEFAULT, &ca, why, sizeof why)) < 0)
		return errbuf_set(err, errlen, "MAA: %s", why), r;
	r = http_fetch(url, strncmp(url, "https://", 8) ? NULL : &ca, MAA_TIMEOUT_MS, MAA_JWKS_MAX,
		       &resp, why, sizeof why);
	ca_bundle_free(&ca);
	if (r < 0)
		return errbuf_set(err, errlen, "MAA key set %s: %s", url, why), r;
	if (resp.status != 200) {
		errbuf_set(err, errlen, "MAA key set %s: HTTP %d", url, resp.status);
		http_response_free(&resp);
		return -EKEYREJECTED;
	}
	if (!resp.len) {
		http_response_free(&resp);
		return errbuf_set(err, errlen, "MAA key set %s: empty answer", url), -EKEYREJECTED;
	}
	r = maa_jwks_parse(resp.body, resp.len, &ks, err, errlen);
	http_response_free(&resp);
	if (r < 0)
		return r;
	r = maa_token_check(token, strlen(token), &ks, at, extra, extra_len, err, errlen);
	maa_jwks_free(&ks);
	return r;
}
