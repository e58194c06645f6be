/* aws-nitro-tpm (OID 1.3.9900.2.1), the issuer's side: the vTPM core with the owner-hierarchy
 * AK (as qemu-vtpm) and InstanceInfo = Go's encoding/json of aws-sdk-go-v2's
 * imds.InstanceIdentityDocument, which Constellation fills from IMDSv2's
 * /latest/dynamic/instance-identity/document (token from PUT /latest/api/token, TTL 21600 s,
 * as the SDK asks). Go re-encodes the document, so it is not IMDS's body: the struct's fields
 * in its order (devpayProductCodes, marketplaceProductCodes, availabilityZone, privateIp,
 * version, region, instanceId, billingProducts, instanceType, accountId, pendingTime,
 * imageId, kernelId, ramdiskId, architecture), no omitempty: a missing or null string is "",
 * a missing or null list null, pendingTime as time.Time writes it (RFC 3339, "Z"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "attest.h"
#include "base/base.h"
#include "net/net.h"
#include "vtpm.h"

#define IMDS_TIMEOUT_MS 5000
#define IMDS_DOC_MAX	8192
#define AWS_TOKEN_MAX	256

enum { STR, LIST, TIME };

static const struct {
	const char *key;
	int kind;
} fields[] = {
    {"devpayProductCodes", LIST},
    {"marketplaceProductCodes", LIST},
    {"availabilityZone", STR},
    {"privateIp", STR},
    {"version", STR},
    {"region", STR},
    {"instanceId", STR},
    {"billingProducts", LIST},
    {"instanceType", STR},
    {"accountId", STR},
    {"pendingTime", TIME},
    {"imageId", STR},
    {"kernelId", STR},
    {"ramdiskId", STR},
    {"architecture", STR},
};

struct out {
	char *p;
	size_t len, cap;
	int err;
};

static void put(struct out *o, const char *s)
{
	size_t n = strlen(s);

	if (o->err || n >= o->cap - o->len) {
		o->err = -ENOBUFS;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

/* A JSON string as Go writes it; only printable ASCII is taken (IMDS gives nothing else), and
 * Go's HTML-safe escapes for <, > and &. */
static int put_str(struct out *o, const char *s)
{
	put(o, "\"");
	for (; *s; s++) {
		char b[8] = {*s, 0};

		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return -EINVAL;
		if (*s == '"' || *s == '\\')
			snprintf(b, sizeof b, "\\%c", *s);
		else if (*s == '<' || *s == '>' || *s == '&')
			snprintf(b, sizeof b, "\\u00%02x", *s);
		put(o, b);
	}
	put(o, "\"");
	return 0;
}

/* YYYY-MM-DDTHH:MM:SSZ, which time.Time writes back unchanged. */
static int rfc3339_z(const char *s)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";

	if (strlen(s) != sizeof pat - 1)
		return 0;
	for (size_t i = 0; pat[i]; i++)
		if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
			return 0;
	return 1;
}

int aws_identity_document_go(const char *body, size_t len, uint8_t *buf, size_t cap, size_t *ret,
			     char *err, size_t errlen)
{
	json_object *doc = json_parse_exact(body, len);
	struct out o = {.p = (char *)buf, .cap = cap};
	int r = 0;

	if (!doc || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		return errbuf_set(err, errlen, "the instance identity document is not JSON");
	}
	put(&o, "{");
	for (size_t i = 0; r == 0 && i < sizeof fields / sizeof fields[0]; i++) {
		json_object *v = NULL;
		int present = json_object_object_get_ex(doc, fields[i].key, &v) &&
			      !json_object_is_type(v, json_type_null);

		put(&o, i ? ",\"" : "\"");
		put(&o, fields[i].key);
		put(&o, "\":");
		if (fields[i].kind == LIST) {
			if (!present) {
				put(&o, "null");
				continue;
			}
			if (!json_object_is_type(v, json_type_array))
				r = -EINVAL;
			else
				put(&o, "[");
			for (size_t k = 0; r == 0 && k < json_object_array_length(v); k++) {
				json_object *e = json_object_array_get_idx(v, k);

				if (k)
					put(&o, ",");
				r = json_object_is_type(e, json_type_string)
					? put_str(&o, json_object_get_string(e))
					: -EINVAL;
			}
			put(&o, "]");
		} else if (!present) {
			if (fields[i].kind == TIME) /* Go's zero time */
				put(&o, "\"0001-01-01T00:00:00Z\"");
			else
				put(&o, "\"\"");
		} else if (!json_object_is_type(v, json_type_string) ||
			   (fields[i].kind == TIME && !rfc3339_z(json_object_get_string(v)))) {
			r = -EINVAL;
		} else {
			r = put_str(&o, json_object_get_string(v));
		}
		if (r < 0)
			errbuf_set(err, errlen, "identity document: %s is not what IMDS gives",
				   fields[i].key);
	}
	put(&o, "}");
	json_object_put(doc);
	if (r < 0)
		return r;
	if (o.err)
		return errbuf_set(err, errlen, "identity document larger than %zu bytes", cap),
		       o.err;
	*ret = o.len;
	return 0;
}

static int instance_info(const struct vtpm_issue *in, uint8_t *out, size_t cap, size_t *len,
			 char *err, size_t errlen)
{
	struct http_req put_rq = {.method = "PUT",
				  .headers = "X-aws-ec2-metadata-token-ttl-seconds: 21600\r\n"};
	struct http_req get_rq = {0};
	struct http_response resp;
	char url[256], tok[AWS_TOKEN_MAX], hdr[AWS_TOKEN_MAX + 40], why[200];
	int r;

	snprintf(url, sizeof url, "%s/latest/api/token", in->env->imds);
	r = http_request(url, &put_rq, IMDS_TIMEOUT_MS, AWS_TOKEN_MAX, &resp, why, sizeof why);
	if (r < 0)
		return errbuf_set(err, errlen, "IMDSv2 token: %s", why), r;
	if (resp.status != 200 || !resp.len || resp.len >= sizeof tok ||
	    strspn(resp.body,
		   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/.") !=
		resp.len) {
		r = resp.status;
		http_response_free(&resp);
		return errbuf_set(err, errlen, "IMDSv2 token: HTTP %d", r);
	}
	memcpy(tok, resp.body, resp.len);
	tok[resp.len] = '\0';
	http_response_free(&resp);
	snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s\r\n", tok);
	get_rq.headers = hdr;
	snprintf(url, sizeof url, "%s/latest/dynamic/instance-identity/document", in->env->imds);
	r = http_request(url, &get_rq, IMDS_TIMEOUT_MS, IMDS_DOC_MAX, &resp, why, sizeof why);
	secret_wipe(tok, sizeof tok);
	secret_wipe(hdr, sizeof hdr);
	if (r < 0)
		return errbuf_set(err, errlen, "instance identity document: %s", why), r;
	if (resp.status != 200) {
		r = resp.status;
		http_response_free(&resp);
		return errbuf_set(err, errlen, "instance identity document: HTTP %d", r);
	}
	r = aws_identity_document_go(resp.body, resp.len, out, cap, len, err, errlen);
	http_response_free(&resp);
	return r;
}

const struct vtpm_variant vtpm_aws_nitro_tpm = {
    .name = "aws-nitro-tpm",
    .oid = {0x2b, 0xcd, 0x2c, 0x02, 0x01}, /* 1.3.9900.2.1 */
    .oid_len = 5,
    .ak = VTPM_AK_OWNER,
    .instance_info = instance_info,
};
