/* AWS EC2 / Resource Groups Tagging / ELBv2 calls for the platform layer (aws_api.h,
 * docs/sigv4.md): request bodies, signing, the transport, retries, and bounded readers of the
 * XML and JSON answers. */
#include <ctype.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bearssl.h>
#include <json-c/json.h>

#include "base/base.h"
#include "cloud/aws_api.h"
#include "net/net.h"

/* ---- a small bounded XML reader ----
 * Elements, attributes (skipped), text with the five named entities and numeric character
 * references; declarations, comments and CDATA-less documents only (a DOCTYPE is refused: no
 * entity of ours is ever expanded). Calls cb at each element's start and end with the path
 * "a/b/c"; at the end with the element's own text (truncated texts are flagged). */
enum { XML_START, XML_END };
typedef int (*xml_cb)(void *ctx, int ev, const char *path, const char *text, size_t tlen,
		      int truncated);

static int xml_append_utf8(char *t, size_t *n, size_t cap, unsigned long cp, int *trunc)
{
	char u[4];
	size_t k;

	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -EINVAL;
	if (cp < 0x80)
		u[0] = (char)cp, k = 1;
	else if (cp < 0x800)
		u[0] = (char)(0xc0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 63)), k = 2;
	else if (cp < 0x10000)
		u[0] = (char)(0xe0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 63)),
		u[2] = (char)(0x80 | (cp & 63)), k = 3;
	else
		u[0] = (char)(0xf0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 63)),
		u[2] = (char)(0x80 | ((cp >> 6) & 63)), u[3] = (char)(0x80 | (cp & 63)), k = 4;
	if (*n + k > cap) {
		*trunc = 1;
		return 0;
	}
	memcpy(t + *n, u, k);
	*n += k;
	return 0;
}

static int xml_walk(const char *x, size_t len, xml_cb cb, void *ctx, char *err, size_t errlen)
{
	char path[AWS_MAX_XML_DEPTH * 65];
	size_t plen = 0, starts[AWS_MAX_XML_DEPTH];
	int depth = 0, seen_root = 0, r;
	char text[AWS_MAX_TEXT];
	size_t tn = 0;
	int trunc = 0;
	size_t i = 0;

	path[0] = '\0';
	while (i < len) {
		char c = x[i];

		if (c == '\0')
			return errbuf_set(err, errlen, "aws: NUL in XML at %zu", i);
		if (c != '<') {
			if (depth == 0) {
				if (!isspace((unsigned char)c))
					return errbuf_set(err, errlen,
							  "aws: text outside XML root");
				i++;
				continue;
			}
			if (c == '&') {
				const char *semi = memchr(x + i, ';', len - i < 12 ? len - i : 12);
				size_t el;
				unsigned long cp = 0;

				if (!semi)
					return errbuf_set(err, errlen, "aws: bad XML entity at %zu",
							  i);
				el = (size_t)(semi - (x + i));
				if (el == 3 && !memcmp(x + i, "&lt", 3))
					cp = '<';
				else if (el == 3 && !memcmp(x + i, "&gt", 3))
					cp = '>';
				else if (el == 4 && !memcmp(x + i, "&amp", 4))
					cp = '&';
				else if (el == 5 && !memcmp(x + i, "&quot", 5))
					cp = '"';
				else if (el == 5 && !memcmp(x + i, "&apos", 5))
					cp = '\'';
				else if (el >= 3 && x[i + 1] == '#') {
					int hex = x[i + 2] == 'x';

					for (size_t k = i + 2 + (size_t)hex; k < i + el; k++) {
						int d =
						    hex ? hex_digit(x[k])
							: (isdigit((unsigned char)x[k]) ? x[k] - '0'
											: -1);

						if (d < 0 || cp > 0x10ffff)
							return errbuf_set(err, errlen,
									  "aws: bad XML character "
									  "reference");
						cp = cp * (hex ? 16 : 10) + (unsigned long)d;
					}
				} else {
					return errbuf_set(err, errlen, "aws: unknown XML entity");
				}
				if (xml_append_utf8(text, &tn, sizeof text, cp, &trunc) < 0)
					return errbuf_set(err, errlen, "aws: bad XML character");
				i += el + 1;
				continue;
			}
			if (tn < sizeof text)
				text[tn++] = c;
			else
				trunc = 1;
			i++;
			continue;
		}
		/* markup */
		if (len - i >= 4 && !memcmp(x + i, "<!--", 4)) {
			const char *e = NULL;

			for (size_t k = i + 4; k + 3 <= len; k++)
				if (!memcmp(x + k, "-->", 3)) {
					e = x + k;
					break;
				}
			if (!e)
				return errbuf_set(err, errlen, "aws: unterminated XML comment");
			i = (size_t)(e - x) + 3;
			continue;
		}
		if (len - i >= 2 && x[i + 1] == '?') {
			const char *e = NULL;

			for (size_t k = i + 2; k + 2 <= len; k++)
				if (x[k] == '?' && x[k + 1] == '>') {
					e = x + k;
					break;
				}
			if (!e || depth > 0 || seen_root)
				return errbuf_set(err, errlen, "aws: misplaced XML declaration");
			i = (size_t)(e - x) + 2;
			continue;
		}
		if (len - i >= 2 && x[i + 1] == '!')
			return errbuf_set(err, errlen, "aws: XML DOCTYPE or CDATA refused");
		const char *gt = memchr(x + i, '>', len - i);

		if (!gt)
			return errbuf_set(err, errlen, "aws: unterminated XML tag");
		size_t tend = (size_t)(gt - x);
		int closing = x[i + 1] == '/';
		size_t ns = i + 1 + (size_t)closing, ne = ns;

		while (ne < tend && (isalnum((unsigned char)x[ne]) || x[ne] == '_' ||
				     x[ne] == '-' || x[ne] == '.' || x[ne] == ':'))
			ne++;
		if (ne == ns || ne - ns > 64)
			return errbuf_set(err, errlen, "aws: bad XML element name");
		if (closing) {
			size_t start = depth ? starts[depth - 1] : 0;
			size_t nl = plen - start - (depth > 1);

			for (size_t k = ne; k < tend; k++)
				if (!isspace((unsigned char)x[k]))
					return errbuf_set(err, errlen, "aws: bad XML end tag");
			if (depth == 0 || nl != ne - ns ||
			    memcmp(path + plen - nl, x + ns, nl) != 0)
				return errbuf_set(err, errlen, "aws: mismatched XML end tag");
			r = cb(ctx, XML_END, path, text, tn, trunc);
			if (r < 0)
				return r;
			depth--;
			plen = start;
			path[plen] = '\0';
			tn = 0;
			trunc = 0;
			i = tend + 1;
			continue;
		}
		int selfclose = tend > ns && x[tend - 1] == '/';

		if (depth == 0 && seen_root)
			return errbuf_set(err, errlen, "aws: second XML root");
		if (depth == AWS_MAX_XML_DEPTH)
			return errbuf_set(err, errlen, "aws: XML nested too deep");
		/* attributes: skipped, but quotes must balance and hold no '<' */
		if (memchr(x + ne, '<', tend - ne))
			return errbuf_set(err, errlen, "aws: '<' in an XML tag");
		for (size_t k = ne; k < tend - (size_t)selfclose; k++) {
			if (x[k] == '"' || x[k] == '\'') {
				const char *q = memchr(x + k + 1, x[k], tend - k - 1);

				if (!q)
					return errbuf_set(err, errlen, "aws: bad XML attribute");
				k = (size_t)(q - x);
			} else if (x[k] == '<') {
				return errbuf_set(err, errlen, "aws: bad XML tag");
			}
		}
		seen_root = 1;
		starts[depth] = plen;
		if (depth > 0)
			path[plen++] = '/';
		memcpy(path + plen, x + ns, ne - ns);
		plen += ne - ns;
		path[plen] = '\0';
		depth++;
		tn = 0; /* mixed content: only the text after the last child counts */
		trunc = 0;
		r = cb(ctx, XML_START, path, NULL, 0, 0);
		if (r < 0)
			return r;
		if (selfclose) {
			r = cb(ctx, XML_END, path, "", 0, 0);
			if (r < 0)
				return r;
			depth--;
			plen = starts[depth];
			path[plen] = '\0';
		}
		i = tend + 1;
	}
	if (depth != 0 || !seen_root)
		return errbuf_set(err, errlen, "aws: XML document incomplete");
	return 0;
}

/* Copies text into a field; -E2BIG when it does not fit or was truncated. */
static int set_field(char *dst, size_t cap, const char *text, size_t tlen, int trunc)
{
	if (trunc || tlen >= cap)
		return -E2BIG;
	memcpy(dst, text, tlen);
	dst[tlen] = '\0';
	return 0;
}

/* ---- DescribeInstances ---- */
#define DI_ROOT "DescribeInstancesResponse"
#define DI_INST DI_ROOT "/reservationSet/item/instancesSet/item"

struct di_ctx {
	struct aws_instance *out;
	int max, *count, in_inst;
	char *next;
	size_t next_cap;
	char key[128], val[128];
	int key_ok, val_ok;
	char *err;
	size_t errlen;
};

static int di_cb(void *vctx, int ev, const char *path, const char *text, size_t tlen, int trunc)
{
	struct di_ctx *c = vctx;
	struct aws_instance *in;

	if (ev == XML_START) {
		if (!strcmp(path, DI_INST)) {
			if (*c->count >= c->max) {
				errbuf_set(c->err, c->errlen, "aws: more than %d instances",
					   c->max);
				return -ENOSPC;
			}
			memset(&c->out[*c->count], 0, sizeof(c->out[0]));
			c->in_inst = 1;
		} else if (!strcmp(path, DI_INST "/tagSet/item")) {
			c->key_ok = c->val_ok = 0;
		} else if (strncmp(path, DI_ROOT, strlen(DI_ROOT)) != 0) {
			return errbuf_set(c->err, c->errlen,
					  "aws: not a DescribeInstancesResponse");
		}
		return 0;
	}
	if (!strcmp(path, DI_ROOT "/nextToken"))
		return set_field(c->next, c->next_cap, text, tlen, trunc) < 0
			   ? errbuf_set(c->err, c->errlen, "aws: nextToken too long")
			   : 0;
	if (!c->in_inst || strncmp(path, DI_INST, strlen(DI_INST)) != 0)
		return 0;
	in = &c->out[*c->count];
	const char *sub = path + strlen(DI_INST);
	int r = 0;

	if (!*sub) {
		c->in_inst = 0;
		(*c->count)++;
		if (!in->id[0])
			return errbuf_set(c->err, c->errlen, "aws: an instance without instanceId");
		return 0;
	}
	if (!strcmp(sub, "/instanceId"))
		r = set_field(in->id, sizeof in->id, text, tlen, trunc);
	else if (!strcmp(sub, "/privateIpAddress"))
		r = set_field(in->private_ip, sizeof in->private_ip, text, tlen, trunc);
	else if (!strcmp(sub, "/instanceState/name"))
		r = set_field(in->state, sizeof in->state, text, tlen, trunc);
	else if (!strcmp(sub, "/placement/availabilityZone"))
		r = set_field(in->az, sizeof in->az, text, tlen, trunc);
	else if (!strcmp(sub, "/tagSet/item/key"))
		c->key_ok = set_field(c->key, sizeof c->key, text, tlen, trunc) == 0;
	else if (!strcmp(sub, "/tagSet/item/value"))
		c->val_ok = set_field(c->val, sizeof c->val, text, tlen, trunc) == 0;
	else if (!strcmp(sub, "/tagSet/item") && c->key_ok) {
		/* tags we do not read may be long; ours must fit */
		if (!strcmp(c->key, AWS_TAG_ROLE)) {
			r = c->val_ok
				? set_field(in->role, sizeof in->role, c->val, strlen(c->val), 0)
				: -E2BIG;
			in->has_role = r == 0;
		} else if (!strcmp(c->key, AWS_TAG_UID)) {
			r = c->val_ok
				? set_field(in->uid, sizeof in->uid, c->val, strlen(c->val), 0)
				: -E2BIG;
			in->has_uid = r == 0;
		} else if (!strcmp(c->key, AWS_TAG_INIT_SECRET_HASH)) {
			r = c->val_ok ? set_field(in->init_secret_hash, sizeof in->init_secret_hash,
						  c->val, strlen(c->val), 0)
				      : -E2BIG;
			in->has_init_secret_hash = r == 0;
		}
	}
	if (r < 0)
		return errbuf_set(c->err, c->errlen, "aws: %s too long in instance %s", sub + 1,
				  in->id[0] ? in->id : "?");
	return 0;
}

int aws_parse_describe_instances(const char *xml, size_t len, struct aws_instance *out, int max,
				 int *count, char *next, size_t next_cap, char *err, size_t errlen)
{
	struct di_ctx c = {.out = out,
			   .max = max,
			   .count = count,
			   .next = next,
			   .next_cap = next_cap,
			   .err = err,
			   .errlen = errlen};
	int start = *count, r;

	if (next_cap == 0)
		return -EINVAL;
	next[0] = '\0';
	r = xml_walk(xml, len, di_cb, &c, err, errlen);
	if (r < 0)
		*count = start;
	return r;
}

/* ---- DescribeLoadBalancers ---- */
#define LB_RES "DescribeLoadBalancersResponse/DescribeLoadBalancersResult"

struct lb_ctx {
	char (*names)[256];
	int max, *count;
	char *next;
	size_t next_cap;
	char *err;
	size_t errlen;
};

static int lb_cb(void *vctx, int ev, const char *path, const char *text, size_t tlen, int trunc)
{
	struct lb_ctx *c = vctx;

	if (ev == XML_START)
		return strncmp(path, "DescribeLoadBalancersResponse", 29)
			   ? errbuf_set(c->err, c->errlen,
					"aws: not a DescribeLoadBalancersResponse")
			   : 0;
	if (!strcmp(path, LB_RES "/LoadBalancers/member/DNSName")) {
		if (*c->count >= c->max)
			return errbuf_set(c->err, c->errlen, "aws: too many load balancers");
		if (set_field(c->names[*c->count], 256, text, tlen, trunc) < 0)
			return errbuf_set(c->err, c->errlen, "aws: DNSName too long");
		(*c->count)++;
	} else if (!strcmp(path, LB_RES "/NextMarker")) {
		if (set_field(c->next, c->next_cap, text, tlen, trunc) < 0)
			return errbuf_set(c->err, c->errlen, "aws: NextMarker too long");
	}
	return 0;
}

int aws_parse_describe_load_balancers(const char *xml, size_t len, char (*names)[256], int max,
				      int *count, char *next, size_t next_cap, char *err,
				      size_t errlen)
{
	struct lb_ctx c = {names, max, count, next, next_cap, err, errlen};

	if (next_cap == 0)
		return -EINVAL;
	next[0] = '\0';
	return xml_walk(xml, len, lb_cb, &c, err, errlen);
}

/* ---- GetResources ---- */
int aws_parse_get_resources(const char *json, size_t len, char (*arns)[256], int max, int *count,
			    char *next, size_t next_cap, char *err, size_t errlen)
{
	struct json_object *o = json_parse_exact(json, len), *list, *tok;
	int r = 0;

	if (next_cap == 0)
		return -EINVAL;
	next[0] = '\0';
	if (!o || !json_object_is_type(o, json_type_object)) {
		r = errbuf_set(err, errlen, "aws: GetResources answer is not a JSON object");
		goto out;
	}
	if (json_object_object_get_ex(o, "PaginationToken", &tok) &&
	    json_object_is_type(tok, json_type_string)) {
		const char *s = json_object_get_string(tok);

		if (strlen(s) >= next_cap) {
			r = errbuf_set(err, errlen, "aws: PaginationToken too long");
			goto out;
		}
		strcpy(next, s);
	}
	if (!json_object_object_get_ex(o, "ResourceTagMappingList", &list))
		goto out;
	if (!json_object_is_type(list, json_type_array)) {
		r = errbuf_set(err, errlen, "aws: ResourceTagMappingList is not an array");
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *m = json_object_array_get_idx(list, i), *arn;
		const char *s;

		if (!json_object_object_get_ex(m, "ResourceARN", &arn) ||
		    !json_object_is_type(arn, json_type_string))
			continue; /* as Constellation: a mapping without an ARN is skipped */
		s = json_object_get_string(arn);
		if (*count >= max || strlen(s) >= 256) {
			r = errbuf_set(err, errlen, "aws: too many or too long resource ARNs");
			goto out;
		}
		strcpy(arns[(*count)++], s);
	}
out:
	if (o)
		json_object_put(o);
	return r;
}

/* ---- errors ---- */
struct err_ctx {
	char *code, *msg;
	size_t code_cap, msg_cap;
	int found;
};

static int err_cb(void *vctx, int ev, const char *path, const char *text, size_t tlen, int trunc)
{
	struct err_ctx *c = vctx;

	if (ev != XML_END)
		return 0;
	if (!strcmp(path, "Response/Errors/Error/Code") ||
	    !strcmp(path, "ErrorResponse/Error/Code")) {
		(void)trunc;
		snprintf(c->code, c->code_cap, "%.*s", (int)tlen, text);
		c->found = 1;
	} else if (!strcmp(path, "Response/Errors/Error/Message") ||
		   !strcmp(path, "ErrorResponse/Error/Message")) {
		snprintf(c->msg, c->msg_cap, "%.*s", (int)tlen, text);
	}
	return 0;
}

int aws_parse_error(const char *body, size_t len, char *code, size_t code_cap, char *msg,
		    size_t msg_cap)
{
	struct err_ctx c = {code, msg, code_cap, msg_cap, 0};
	char err[64];

	if (code_cap == 0 || msg_cap == 0)
		return -EINVAL;
	code[0] = msg[0] = '\0';
	if (len > 0 && body[0] == '{') {
		struct json_object *o = json_parse_exact(body, len), *v;

		if (!o)
			return -ENOENT;
		if (json_object_object_get_ex(o, "__type", &v) &&
		    json_object_is_type(v, json_type_string)) {
			const char *t = json_object_get_string(v), *h = strrchr(t, '#');

			snprintf(code, code_cap, "%s", h ? h + 1 : t);
			c.found = 1;
		}
		if ((json_object_object_get_ex(o, "message", &v) ||
		     json_object_object_get_ex(o, "Message", &v)) &&
		    json_object_is_type(v, json_type_string))
			snprintf(msg, msg_cap, "%s", json_object_get_string(v));
		json_object_put(o);
		return c.found ? 0 : -ENOENT;
	}
	if (xml_walk(body, len, err_cb, &c, err, sizeof err) < 0 || !c.found)
		return -ENOENT;
	return 0;
}

/* ---- credentials ---- */
/* One JSON string at *p (after its opening quote) into out (cap bytes, NUL-terminated);
 * escapes decoded, \u only for ASCII. Returns the length or -EINVAL; *p past the quote. */
static ssize_t flat_string(const char **p, const char *end, char *out, size_t cap)
{
	size_t n = 0;

	while (*p < end && **p != '"') {
		char c = *(*p)++;

		if ((unsigned char)c < 0x20)
			return -EINVAL;
		if (c == '\\') {
			if (*p >= end)
				return -EINVAL;
			c = *(*p)++;
			switch (c) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'u': {
				int v = 0;

				if (end - *p < 4)
					return -EINVAL;
				for (int i = 0; i < 4; i++) {
					int d = hex_digit((*p)[i]);

					if (d < 0)
						return -EINVAL;
					v = v * 16 + d;
				}
				if (v == 0 || v > 0x7f)
					return -EINVAL;
				c = (char)v;
				*p += 4;
				break;
			}
			default:
				return -EINVAL;
			}
		}
		if (n + 1 >= cap)
			return -E2BIG;
		out[n++] = c;
	}
	if (*p >= end)
		return -EINVAL;
	(*p)++;
	out[n] = '\0';
	return (ssize_t)n;
}

static time_t parse_rfc3339_utc(const char *s)
{
	struct tm tm;
	int y, mo, d, h, mi, se;
	char z = 0;

	memset(&tm, 0, sizeof tm);
	if (strlen(s) != 20 ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &z) != 7 ||
	    z != 'Z' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 ||
	    y < 1970)
		return (time_t)-1;
	tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
	tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = se;
	return timegm(&tm);
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

int aws_parse_credentials(const char *json, size_t len, time_t now, struct aws_credentials *out,
			  char *err, size_t errlen)
{
	const char *p = json, *end = json + len;
	struct secret *val = NULL;
	struct aws_credentials c;
	char key[32], code[32] = "", type[32] = "", expiration[32] = "";
	int r = -EINVAL;

	memset(&c, 0, sizeof c);
	if (len > AWS_CREDS_MAX)
		return errbuf_set(err, errlen, "aws: credentials document of %zu bytes", len);
	val = secret_new(AWS_CREDS_MAX + 1);
	if (!val)
		return -ENOMEM;
	p = skip_ws(p, end);
	if (p >= end || *p++ != '{') {
		errbuf_set(err, errlen, "aws: credentials are not a JSON object");
		goto out;
	}
	for (;;) {
		ssize_t kl, vl;

		p = skip_ws(p, end);
		if (p < end && *p == '}' && !c.access_key_id[0] && !c.secret_key && !code[0])
			break; /* {} */
		if (p >= end || *p++ != '"' || (kl = flat_string(&p, end, key, sizeof key)) < 0) {
			errbuf_set(err, errlen, "aws: credentials: bad or unknown-length key");
			goto out;
		}
		p = skip_ws(p, end);
		if (p >= end || *p++ != ':') {
			errbuf_set(err, errlen, "aws: credentials: ':' expected after %s", key);
			goto out;
		}
		p = skip_ws(p, end);
		if (p < end && *p == 'n' && end - p >= 4 && !memcmp(p, "null", 4)) {
			p += 4;
			vl = 0;
			val->bytes[0] = 0;
		} else if (p >= end || *p++ != '"' ||
			   (vl = flat_string(&p, end, (char *)val->bytes, val->len)) < 0) {
			errbuf_set(err, errlen, "aws: credentials: the value of %s is not a string",
				   key);
			goto out;
		}
		const char *v = (const char *)val->bytes;
		struct secret **dst = NULL;

		if (!strcmp(key, "Code"))
			snprintf(code, sizeof code, "%s", v);
		else if (!strcmp(key, "Type"))
			snprintf(type, sizeof type, "%s", v);
		else if (!strcmp(key, "Expiration"))
			snprintf(expiration, sizeof expiration, "%s", v);
		else if (!strcmp(key, "AccessKeyId")) {
			if ((size_t)vl >= sizeof c.access_key_id || vl == 0) {
				errbuf_set(err, errlen,
					   "aws: credentials: AccessKeyId of %zd bytes", vl);
				goto out;
			}
			memcpy(c.access_key_id, v, (size_t)vl + 1);
		} else if (!strcmp(key, "SecretAccessKey"))
			dst = &c.secret_key;
		else if (!strcmp(key, "Token"))
			dst = &c.token;
		if (dst) {
			if (*dst || vl == 0) {
				errbuf_set(err, errlen, "aws: credentials: %s empty or repeated",
					   key);
				goto out;
			}
			*dst = secret_from(v, (size_t)vl);
			if (!*dst) {
				r = -ENOMEM;
				goto out;
			}
		}
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == '}')
			break;
		errbuf_set(err, errlen, "aws: credentials: ',' or '}' expected after %s", key);
		goto out;
	}
	p = skip_ws(p + 1, end);
	if (p != end) {
		errbuf_set(err, errlen, "aws: credentials: text after the object");
		goto out;
	}
	if (strcmp(code, "Success") != 0) {
		errbuf_set(err, errlen, "aws: credentials: Code is '%s', not Success", code);
		goto out;
	}
	if (type[0] && strcmp(type, "AWS-HMAC") != 0) {
		errbuf_set(err, errlen, "aws: credentials: Type '%s'", type);
		goto out;
	}
	if (!c.access_key_id[0] || !c.secret_key || !c.token || !expiration[0]) {
		errbuf_set(err, errlen,
			   "aws: credentials: AccessKeyId, SecretAccessKey, Token "
			   "or Expiration missing");
		goto out;
	}
	for (const char *k = c.access_key_id; *k; k++)
		if (!isalnum((unsigned char)*k)) {
			errbuf_set(err, errlen, "aws: credentials: AccessKeyId not alphanumeric");
			goto out;
		}
	c.expiration = parse_rfc3339_utc(expiration);
	if (c.expiration == (time_t)-1) {
		errbuf_set(err, errlen, "aws: credentials: Expiration '%.31s' malformed",
			   expiration);
		goto out;
	}
	if (c.expiration <= now) {
		errbuf_set(err, errlen, "aws: credentials expired at %s", expiration);
		r = -EKEYEXPIRED;
		goto out;
	}
	*out = c;
	memset(&c, 0, sizeof c);
	r = 0;
out:
	secret_free(val);
	aws_credentials_free(&c);
	return r;
}

void aws_credentials_free(struct aws_credentials *c)
{
	secret_freep(&c->secret_key);
	secret_freep(&c->token);
	memset(c, 0, sizeof *c);
}

int aws_credentials_fresh(const struct aws_credentials *c, time_t now)
{
	return c->secret_key && c->expiration - now > AWS_CREDS_REFRESH_S;
}

void aws_credentials_sigv4(const struct aws_credentials *c, struct sigv4_creds *out)
{
	out->access_key_id = c->access_key_id;
	out->secret_key = c->secret_key;
	out->session_token = c->token;
}

/* ---- the transport ---- */
static int wait_fd(int fd, short ev, uint64_t deadline)
{
	struct pollfd pf = {.fd = fd, .events = ev};
	uint64_t now = monotonic_ms();

	if (now >= deadline)
		return -ETIMEDOUT;
	return poll(&pf, 1, (int)(deadline - now)) < 0 && errno != EINTR ? -errno : 0;
}

int aws_send_http(void *ctx, const char *url, const char *headers, const void *body,
		  size_t body_len, size_t max, int timeout_ms, struct http_response *resp,
		  char *err, size_t errlen)
{
	const struct aws_api *api = ctx;
	uint64_t deadline = monotonic_ms() + (uint64_t)timeout_ms;
	int tls = !strncmp(url, "https://", 8);
	const char *h = url + (tls ? 8 : 7);
	char host[256], hostport[300], port[8];
	size_t n = strcspn(h, "/"), len = 0, limit = max + 16384;
	struct tls_client *tc = NULL;
	struct secret *req = NULL;
	char *buf = NULL;
	int fd = -1, r = 0;

	memset(resp, 0, sizeof *resp);
	if ((!tls && strncmp(url, "http://", 7)) || n == 0 || n >= sizeof host)
		return errbuf_set(err, errlen, "aws: bad URL");
	snprintf(hostport, sizeof hostport, "%.*s%s", (int)n, h,
		 memchr(h, ':', n) ? "" : (tls ? ":443" : ":80"));
	if (hostport_split(hostport, host, sizeof host, port, sizeof port) < 0)
		return errbuf_set(err, errlen, "aws: bad URL");
	if (tls && (!api || !api->ca)) {
		errbuf_set(err, errlen, "aws: https without a CA bundle");
		return -ENOKEY;
	}
	/* the request holds the session token: a wiped buffer */
	req = secret_new(strlen(headers) + body_len + 256);
	if (!req)
		return -ENOMEM;
	int hl =
	    snprintf((char *)req->bytes, req->len,
		     "POST %s HTTP/1.1\r\n%sContent-Length: %zu\r\nUser-Agent: constel-agent\r\n"
		     "Connection: close\r\n\r\n",
		     *(h + n) ? h + n : "/", headers, body_len);

	if (hl < 0 || (size_t)hl + body_len > req->len) {
		r = errbuf_set(err, errlen, "aws: request too long");
		goto out;
	}
	memcpy(req->bytes + hl, body, body_len);
	fd = tcp_dial(hostport, timeout_ms, err, errlen);
	if (fd < 0) {
		r = fd;
		fd = -1;
		goto out;
	}
	if (tls && (r = tls_client_open(fd, host, api->ca, deadline, &tc, err, errlen)) < 0)
		goto out;
	size_t total = (size_t)hl + body_len;

	if (tc) {
		r = tls_client_write(tc, req->bytes, total, deadline, err, errlen);
		if (r < 0)
			goto out;
	} else {
		for (size_t off = 0; off < total;) {
			ssize_t k;

			if ((r = wait_fd(fd, POLLOUT, deadline)) < 0) {
				errbuf_set(err, errlen, "aws: %s: sending: %s", hostport,
					   strerror(-r));
				goto out;
			}
			k = send(fd, req->bytes + off, total - off, MSG_NOSIGNAL);
			if (k < 0 && errno != EAGAIN && errno != EINTR) {
				r = -errno;
				errbuf_set(err, errlen, "aws: %s: send: %s", hostport,
					   strerror(-r));
				goto out;
			}
			if (k > 0)
				off += (size_t)k;
		}
	}
	buf = malloc(limit + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t k;

		if (len == limit) {
			errbuf_set(err, errlen, "aws: %s: response larger than allowed", hostport);
			r = -EFBIG;
			goto out;
		}
		if (tc) {
			k = tls_client_read(tc, buf + len, limit - len, deadline, err, errlen);
		} else {
			if ((r = wait_fd(fd, POLLIN, deadline)) < 0) {
				errbuf_set(err, errlen, "aws: %s: reading: %s", hostport,
					   strerror(-r));
				goto out;
			}
			k = read(fd, buf + len, limit - len);
			if (k < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (k < 0) {
				r = -errno;
				errbuf_set(err, errlen, "aws: %s: read: %s", hostport,
					   strerror(-r));
				goto out;
			}
		}
		if (k < 0) {
			r = (int)k;
			goto out;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	buf[len] = '\0';
	r = http_parse_response(buf, len, &resp->status, &resp->body, &resp->len, err, errlen);
	if (r == 0 && resp->len > max) {
		errbuf_set(err, errlen, "aws: %s: body larger than allowed", hostport);
		r = -EFBIG;
	}
	if (r < 0)
		goto out;
	resp->body[resp->len] = '\0';
	resp->buf = buf;
	buf = NULL;
out:
	free(buf);
	if (r < 0)
		memset(resp, 0, sizeof *resp);
	tls_client_free(tc);
	if (fd >= 0)
		close(fd);
	secret_free(req);
	return r;
}

/* ---- calls ---- */
struct aws_call {
	const char *service;	/* scope and host: "ec2", "elasticloadbalancing", "tagging" */
	const char *action;	/* for messages */
	const char *permission; /* the IAM permission the call needs */
	const char *ctype;
	const char *target; /* X-Amz-Target, or NULL */
	const char *body;
};

static int is_throttle(int status, const char *code)
{
	return status == 429 || !strcmp(code, "RequestLimitExceeded") ||
	       !strcmp(code, "Throttling") || !strcmp(code, "ThrottlingException") ||
	       !strcmp(code, "ThrottledException") || !strcmp(code, "RequestThrottled") ||
	       (status == 503 && !code[0]);
}

static int is_denied(const char *code)
{
	return !strcmp(code, "UnauthorizedOperation") || !strcmp(code, "AccessDenied") ||
	       !strcmp(code, "AccessDeniedException");
}

/* One call with retries: 0 with a 200 response in *resp, else -errno with one line logged. */
static int aws_call(const struct aws_api *api, const struct aws_call *call,
		    struct http_response *resp)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)api->timeout_ms;
	int attempts = api->max_attempts > 0 ? api->max_attempts : 1;
	int backoff = api->backoff_ms > 0 ? api->backoff_ms : 100;
	char url[512], host[300], err[256], code[96], msg[256];
	aws_send_fn send_fn = api->send ? api->send : aws_send_http;
	void *sctx = api->send ? api->send_ctx : (void *)api;
	int r = -EIO;

	if (api->endpoint)
		snprintf(url, sizeof url, "%s", api->endpoint);
	else
		snprintf(url, sizeof url, "https://%s.%s.amazonaws.com/", call->service,
			 api->region);
	const char *a = strstr(url, "://");

	if (!a)
		return log_err(-EINVAL, "aws: %s: bad endpoint URL", call->action);
	a += 3;
	snprintf(host, sizeof host, "%.*s", (int)strcspn(a, "/"), a);

	for (int attempt = 1;; attempt++) {
		struct sigv4_header hs[3] = {{"Host", host}, {"Content-Type", call->ctype}};
		struct sigv4_request rq = {
		    .method = "POST",
		    .path = "/",
		    .headers = hs,
		    .n_headers = call->target ? 3 : 2,
		    .body = call->body,
		    .body_len = strlen(call->body),
		    .region = api->region,
		    .service = call->service,
		    .when = time(NULL),
		};
		struct sigv4_result sig;
		const struct secret *tok = api->creds->session_token;
		uint64_t now;

		if (call->target) {
			hs[2].name = "X-Amz-Target";
			hs[2].value = call->target;
		}
		r = sigv4_sign(&rq, api->creds, &sig, NULL, 0, NULL, 0, err, sizeof err);
		if (r < 0)
			return log_err(r, "aws: %s: signing: %s", call->action, err);
		size_t hcap = 1024 + (tok ? tok->len : 0);
		struct secret *hdr = secret_new(hcap);

		if (!hdr)
			return -ENOMEM;
		int n = snprintf((char *)hdr->bytes, hcap,
				 "Host: %s\r\nContent-Type: %s\r\n%s%s%sX-Amz-Date: %s\r\n", host,
				 call->ctype, call->target ? "X-Amz-Target: " : "",
				 call->target ? call->target : "", call->target ? "\r\n" : "",
				 sig.amz_date);

		if (n > 0 && tok && (size_t)n + tok->len + 32 < hcap) {
			n += snprintf((char *)hdr->bytes + n, hcap - (size_t)n,
				      "X-Amz-Security-Token: ");
			memcpy(hdr->bytes + n, tok->bytes, tok->len);
			n += (int)tok->len;
			n += snprintf((char *)hdr->bytes + n, hcap - (size_t)n, "\r\n");
		}
		if (n > 0 && (size_t)n < hcap)
			n += snprintf((char *)hdr->bytes + n, hcap - (size_t)n,
				      "Authorization: %s\r\n", sig.authorization);
		if (n < 0 || (size_t)n >= hcap) {
			secret_free(hdr);
			return log_err(-E2BIG, "aws: %s: request headers too long", call->action);
		}
		now = monotonic_ms();
		if (now >= deadline) {
			secret_free(hdr);
			return log_err(-ETIMEDOUT, "aws: %s: no time left after %d attempts",
				       call->action, attempt - 1);
		}
		err[0] = '\0';
		r = send_fn(sctx, url, (const char *)hdr->bytes, call->body, strlen(call->body),
			    AWS_MAX_BODY, (int)(deadline - now), resp, err, sizeof err);
		secret_free(hdr);
		code[0] = msg[0] = '\0';
		if (r == 0 && resp->status == 200)
			return 0;
		if (r == 0) {
			int status = resp->status;

			aws_parse_error(resp->body, resp->len, code, sizeof code, msg, sizeof msg);
			http_response_free(resp);
			if (is_denied(code))
				return log_err(-EACCES,
					       "aws: %s: the instance profile lacks the IAM "
					       "permission %s (%s)",
					       call->action, call->permission, code);
			if (!strcmp(code, "ExpiredToken") || !strcmp(code, "ExpiredTokenException"))
				return log_err(
				    -EKEYEXPIRED,
				    "aws: %s: the instance profile's credentials expired",
				    call->action);
			if (!is_throttle(status, code))
				return log_err(-EPROTO, "aws: %s: HTTP %d %s: %.200s", call->action,
					       status, code[0] ? code : "(no code)", msg);
		}
		if (r == -EKEYREJECTED || r == -ENOKEY)
			return log_err(r, "aws: %s: %s", call->action, err);
		/* throttled, or the network failed: again after a back-off */
		if (attempt >= attempts)
			return log_err(r < 0 ? r : -EAGAIN,
				       "aws: %s: gave up after %d attempts: %s", call->action,
				       attempt, r < 0 ? err : code);
		now = monotonic_ms();
		if (now + (uint64_t)backoff >= deadline)
			return log_err(-ETIMEDOUT, "aws: %s: no time left for attempt %d (%s)",
				       call->action, attempt + 1, r < 0 ? err : code);
		log_warn("aws: %s: %s, attempt %d in %d ms", call->action, r < 0 ? err : code,
			 attempt + 1, backoff);
		struct timespec ts = {backoff / 1000, (long)(backoff % 1000) * 1000000L};

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		backoff = backoff < 10000 ? backoff * 2 : backoff;
	}
}

/* Appends "&name=value" with value URI-encoded. */
static int form_add(char *b, size_t cap, const char *name, const char *value)
{
	size_t n = strlen(b);
	int k = snprintf(b + n, cap - n, "&%s=", name);

	if (k < 0 || (size_t)k >= cap - n)
		return -E2BIG;
	n += (size_t)k;
	return sigv4_uri_encode(value, strlen(value), 0, b + n, cap - n) < 0 ? -E2BIG : 0;
}

static const char *const FORM = "application/x-www-form-urlencoded; charset=utf-8";

int aws_describe_instance(const struct aws_api *api, const char *id, struct aws_instance *out)
{
	char body[512] = "Action=DescribeInstances&Version=2016-11-15", next[8], err[256];
	struct aws_instance tmp[2];
	struct http_response resp;
	int count = 0, r;

	if (form_add(body, sizeof body, "InstanceId.1", id) < 0)
		return -E2BIG;
	struct aws_call call = {"ec2", "DescribeInstances", "ec2:DescribeInstances", FORM, NULL,
				body};

	r = aws_call(api, &call, &resp);
	if (r < 0)
		return r;
	r = aws_parse_describe_instances(resp.body, resp.len, tmp, 2, &count, next, sizeof next,
					 err, sizeof err);
	http_response_free(&resp);
	if (r < 0)
		return log_err(-EBADMSG, "aws: DescribeInstances %s: %s", id, err);
	if (count != 1 || strcmp(tmp[0].id, id) != 0)
		return log_err(-ENOENT, "aws: DescribeInstances %s: expected 1 instance, got %d",
			       id, count);
	*out = tmp[0];
	return 0;
}

/* The images of a DescribeImages response (the <item>s directly in <imagesSet>) and the
 * first one's <tpmSupport> ("" when it has none). */
int aws_parse_describe_images_tpm(const char *xml, size_t len, int *count, char *tpm, size_t cap)
{
	const char *p = xml, *end = xml + len, *set = NULL;
	int depth = 0, in_set = 0;

	*count = 0;
	if (cap)
		tpm[0] = '\0';
	while (p < end && (p = memchr(p, '<', (size_t)(end - p)))) {
		const char *q = memchr(p, '>', (size_t)(end - p));
		size_t n;

		if (!q)
			return -EINVAL;
		n = (size_t)(q - p + 1);
		if (n == 11 && !memcmp(p, "<imagesSet>", 11))
			in_set = 1, set = q + 1;
		else if (n == 12 && !memcmp(p, "</imagesSet>", 12))
			in_set = 0;
		else if (in_set && n == 6 && !memcmp(p, "<item>", 6) && depth++ == 0)
			++*count;
		else if (in_set && n == 7 && !memcmp(p, "</item>", 7) && depth-- <= 0)
			return -EINVAL;
		else if (in_set && depth == 1 && *count == 1 && n == 12 &&
			 !memcmp(p, "<tpmSupport>", 12)) {
			const char *v = q + 1, *e = memchr(v, '<', (size_t)(end - v));

			if (!e || (size_t)(e - v) >= cap)
				return -EINVAL;
			memcpy(tpm, v, (size_t)(e - v));
			tpm[e - v] = '\0';
		}
		p = q + 1;
	}
	return set && !in_set && depth == 0 ? 0 : -EINVAL;
}

int aws_describe_image_tpm_support(const struct aws_api *api, const char *image_id, char *tpm,
				   size_t cap)
{
	char body[512] = "Action=DescribeImages&Version=2016-11-15";
	struct http_response resp;
	int count = 0, r;

	if (form_add(body, sizeof body, "ImageId.1", image_id) < 0)
		return -E2BIG;
	struct aws_call call = {"ec2", "DescribeImages", "ec2:DescribeImages", FORM, NULL, body};

	r = aws_call(api, &call, &resp);
	if (r < 0)
		return r;
	r = aws_parse_describe_images_tpm(resp.body, resp.len, &count, tpm, cap);
	http_response_free(&resp);
	if (r < 0)
		return log_err(-EBADMSG, "aws: DescribeImages %s: the response does not parse",
			       image_id);
	if (count != 1)
		return log_err(count ? -EBADMSG : -ENOENT, "aws: DescribeImages %s: %d images",
			       image_id, count);
	return 0;
}

int aws_list_instances(const struct aws_api *api, const char *uid, struct aws_instance *out,
		       int max, int *count)
{
	char next[AWS_MAX_TEXT] = "", err[256];
	char *body = malloc(8192);
	int n = 0, r = 0, pages = 0;

	if (!body)
		return -ENOMEM;
	do {
		struct http_response resp;
		struct aws_instance *page = out + n;
		int got = 0;

		if (++pages > AWS_MAX_PAGES) {
			r = log_err(-E2BIG, "aws: DescribeInstances: more than %d pages",
				    AWS_MAX_PAGES);
			break;
		}
		snprintf(body, 8192, "Action=DescribeInstances&Version=2016-11-15&MaxResults=100");
		if (form_add(body, 8192, "Filter.1.Name", "tag:" AWS_TAG_UID) < 0 ||
		    form_add(body, 8192, "Filter.1.Value.1", uid) < 0 ||
		    (next[0] && form_add(body, 8192, "NextToken", next) < 0)) {
			r = log_err(-E2BIG, "aws: DescribeInstances: request too long");
			break;
		}
		struct aws_call call = {
		    "ec2", "DescribeInstances", "ec2:DescribeInstances", FORM, NULL, body};

		r = aws_call(api, &call, &resp);
		if (r < 0)
			break;
		r = aws_parse_describe_instances(resp.body, resp.len, page, max - n, &got, next,
						 sizeof next, err, sizeof err);
		http_response_free(&resp);
		if (r < 0) {
			r = log_err(r == -ENOSPC ? r : -EBADMSG, "aws: DescribeInstances: %s", err);
			break;
		}
		/* as Constellation's List: only running instances, each with an IP and a role */
		for (int i = 0; i < got; i++) {
			struct aws_instance *in = &page[i];

			if (strcmp(in->state, "running") != 0)
				continue;
			if (!in->private_ip[0]) {
				r = log_err(-EBADMSG, "aws: instance %s has no private IP address",
					    in->id);
				break;
			}
			if (!in->has_role) {
				r = log_err(-EBADMSG, "aws: instance %s has no %s tag", in->id,
					    AWS_TAG_ROLE);
				break;
			}
			out[n++] = *in;
		}
	} while (r == 0 && next[0]);
	free(body);
	if (r == 0)
		*count = n;
	return r;
}

int aws_lb_dns_name(const struct aws_api *api, const char *uid, char *host, size_t cap)
{
	char next[AWS_MAX_TEXT] = "", err[256], body[AWS_MAX_TEXT + 512];
	char(*arns)[256] = calloc(16, 256);
	int n = 0, r = 0, pages = 0;

	if (!arns)
		return -ENOMEM;
	do {
		struct http_response resp;
		struct json_object *o = json_object_new_object(), *tf = json_object_new_array(),
				   *f = json_object_new_object(), *vals = json_object_new_array(),
				   *types = json_object_new_array();

		json_object_object_add(f, "Key", json_object_new_string(AWS_TAG_UID));
		json_object_array_add(vals, json_object_new_string(uid));
		json_object_object_add(f, "Values", vals);
		json_object_array_add(tf, f);
		json_object_object_add(o, "TagFilters", tf);
		json_object_array_add(types,
				      json_object_new_string("elasticloadbalancing:loadbalancer"));
		json_object_object_add(o, "ResourceTypeFilters", types);
		if (next[0])
			json_object_object_add(o, "PaginationToken", json_object_new_string(next));
		r = snprintf(body, sizeof body, "%s",
			     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
		if (r < 0 || (size_t)r >= sizeof body || ++pages > AWS_MAX_PAGES) {
			r = log_err(-E2BIG,
				    "aws: GetResources: too many pages or too long a token");
			break;
		}
		struct aws_call call = {"tagging",
					"GetResources",
					"tag:GetResources",
					"application/x-amz-json-1.1",
					"ResourceGroupsTaggingAPI_20170126.GetResources",
					body};

		r = aws_call(api, &call, &resp);
		if (r < 0)
			break;
		r = aws_parse_get_resources(resp.body, resp.len, arns, 16, &n, next, sizeof next,
					    err, sizeof err);
		http_response_free(&resp);
		if (r < 0) {
			r = log_err(-EBADMSG, "aws: GetResources: %s", err);
			break;
		}
	} while (next[0]);
	if (r == 0 && n != 1)
		r = log_err(-ENOENT, "aws: %d load balancers tagged %s=%s; expected 1", n,
			    AWS_TAG_UID, uid);
	if (r == 0) {
		char(*names)[256] = calloc(2, 256);
		struct http_response resp;
		int got = 0;

		snprintf(body, sizeof body, "Action=DescribeLoadBalancers&Version=2015-12-01");
		if (!names ||
		    form_add(body, sizeof body, "LoadBalancerArns.member.1", arns[0]) < 0) {
			free(names);
			free(arns);
			return -ENOMEM;
		}
		struct aws_call call = {"elasticloadbalancing",
					"DescribeLoadBalancers",
					"elasticloadbalancing:DescribeLoadBalancers",
					FORM,
					NULL,
					body};

		r = aws_call(api, &call, &resp);
		if (r == 0) {
			r = aws_parse_describe_load_balancers(resp.body, resp.len, names, 2, &got,
							      next, sizeof next, err, sizeof err);
			http_response_free(&resp);
			if (r < 0)
				r = log_err(-EBADMSG, "aws: DescribeLoadBalancers: %s", err);
			else if (got != 1)
				r = log_err(-ENOENT,
					    "aws: DescribeLoadBalancers: %d load balancers; "
					    "expected 1",
					    got);
			else if (strlen(names[0]) >= cap)
				r = -ENOBUFS;
			else
				strcpy(host, names[0]);
		}
		free(names);
	}
	free(arns);
	return r;
}

int aws_role_is_control_plane(const char *role)
{
	return !strcasecmp(role, "controlplane") || !strcasecmp(role, "control-plane");
}

int aws_control_plane_ips(const struct aws_instance *in, int n, const char *self_id,
			  char (*ips)[48], int max, int *count)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (!aws_role_is_control_plane(in[i].role))
			continue;
		if (self_id && !strcmp(in[i].id, self_id))
			continue;
		if (k == max)
			return -ENOSPC;
		snprintf(ips[k++], 48, "%s", in[i].private_ip);
	}
	*count = k;
	return 0;
}
