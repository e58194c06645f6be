/* One request to a cloud's control-plane API (GCE's Compute REST, OpenStack's Keystone, Nova
 * and Neutron): any method, http:// (tests) or https:// with the chain checked against a CA
 * bundle, the request (which holds a bearer token) in a wiped buffer, the answer bounded, one
 * deadline for connect, send and read. Retries are the caller's: only it knows the API's
 * error shape. */
#ifndef CONSTEL_CLOUD_API_HTTP_H
#define CONSTEL_CLOUD_API_HTTP_H

#include <stddef.h>

struct ca_bundle;
struct http_response;
struct secret;

/* headers: "Name: value\r\n" lines (Host is added), NULL for none; a secret because they carry
 * the token. 0 with *resp whatever the status (free with http_response_free), or -errno with
 * one line in err: -EKEYREJECTED (certificate refused), -ENOKEY (https without ca), -EFBIG
 * (body beyond max), -ETIMEDOUT, a network error. */
int api_http(const char *method, const char *url, const struct secret *headers, const void *body,
	     size_t body_len, size_t max, const struct ca_bundle *ca, int timeout_ms,
	     struct http_response *resp, char *err, size_t errlen);

/* The bundle of path (NULL: CA_BUNDLE_DEFAULT), loaded once and kept for the process; NULL
 * with one line logged when it cannot be read. */
const struct ca_bundle *api_ca_bundle(const char *path);

#endif
