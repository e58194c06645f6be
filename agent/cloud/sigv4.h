/* AWS Signature Version 4 (header form), as the node signs its EC2, ELBv2 and Resource Groups
 * Tagging API calls with the instance profile's credentials (docs/sigv4.md). On BearSSL's
 * SHA-256 and HMAC-SHA256. The secret key, the signing key, the session token and every
 * buffer that held one of them (the canonical request holds the token) are wiped secrets;
 * nothing here logs. Functions return 0 or a negative errno. */
#ifndef CONSTEL_CLOUD_SIGV4_H
#define CONSTEL_CLOUD_SIGV4_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/base.h"

/* Bounds: a longer request is refused with -E2BIG (the agent's requests are far below). */
#define SIGV4_MAX_HEADERS      32
#define SIGV4_MAX_QUERY_PARAMS 64
#define SIGV4_MAX_CANONICAL    16384
#define SIGV4_MAX_AUTH	       512 /* the Authorization header's value */
#define SIGV4_MAX_SCOPE_FIELD  64  /* region, service */
#define SIGV4_MAX_KEY_ID       128

struct sigv4_creds {
	const char *access_key_id;	    /* not secret; at most SIGV4_MAX_KEY_ID bytes */
	const struct secret *secret_key;    /* the secret access key */
	const struct secret *session_token; /* NULL for long-term keys */
};

struct sigv4_header {
	const char *name;
	const char *value; /* as sent; obs-fold continuation lines allowed */
};

/* Signing options. */
enum {
	/* The path's dot segments and empty segments are kept (S3); by default they are
	 * normalised as every other service does. */
	SIGV4_NO_NORMALIZE = 1 << 0,
	/* Adds and signs x-amz-content-sha256 with the body's hash. */
	SIGV4_CONTENT_SHA256 = 1 << 1,
	/* Sends the session token but leaves it out of the signed headers (some STS callers);
	 * the agent never uses it. */
	SIGV4_TOKEN_UNSIGNED = 1 << 2,
};

struct sigv4_request {
	const char *method; /* "GET", "POST" */
	const char *path;   /* the path as sent, "/" for the Query and JSON APIs */
	const char *query;  /* after the '?', percent-encoded or raw; NULL or "" for none */
	const struct sigv4_header *headers; /* must include Host */
	size_t n_headers;
	const void *body;
	size_t body_len;
	const char *region;  /* "us-east-1" */
	const char *service; /* "ec2", "elasticloadbalancing", "tagging" */
	time_t when;	     /* the signing time (UTC seconds) */
	unsigned flags;
};

/* What the caller adds to the request, in this order: X-Amz-Security-Token (the session
 * token, from creds->session_token, when there is one), X-Amz-Date, x-amz-content-sha256
 * (with SIGV4_CONTENT_SHA256), Authorization. */
struct sigv4_result {
	char amz_date[17];	 /* "20150830T123600Z" */
	char content_sha256[65]; /* hex SHA-256 of the body */
	char signature[65];	 /* hex */
	char authorization[SIGV4_MAX_AUTH];
};

/* Signs req. When canon/sts are not NULL, the canonical request and the string to sign are
 * copied there (NUL-terminated; -ENOBUFS when they do not fit); the canonical request holds
 * the session token, so a caller that asks for it must wipe it (tests do). -EINVAL with one
 * line in err for a malformed request (no Host, a bad header name, control characters), -E2BIG
 * past the bounds above. */
int sigv4_sign(const struct sigv4_request *req, const struct sigv4_creds *creds,
	       struct sigv4_result *out, char *canon, size_t canon_cap, char *sts, size_t sts_cap,
	       char *err, size_t errlen);

/* The signing key HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region), service),
 * "aws4_request") into a new secret; date is "YYYYMMDD". */
int sigv4_signing_key(const struct secret *secret_key, const char *date, const char *region,
		      const char *service, struct secret **ret);

/* AWS's URI encoding: every byte except A-Z a-z 0-9 - . _ ~ as %XY (upper-case hex); '/' kept
 * when keep_slash. Returns the length written (NUL-terminated) or -ENOBUFS. */
ssize_t sigv4_uri_encode(const char *src, size_t len, int keep_slash, char *out, size_t cap);

#endif
