/* gcp-sev-es, the validator's side (tools and tests): Constellation's gcp.TrustedKeyGetter and
 * es validateCVM.
 *   trusted_key: InstanceInfo names the instance; GCE's instances.getShieldedInstanceIdentity
 *     (GET <api>/compute/v1/projects/P/zones/Z/instances/N/getShieldedInstanceIdentity, api
 *     https://compute.googleapis.com (the system's CA bundle, or --ca-bundle's) or --api's
 *     http(s) URL, with
 *     "Authorization: Bearer $GOOGLE_OAUTH_ACCESS_TOKEN" when that is set) answers
 *     {"signingKey": {"ekPub": "<PEM PUBLIC KEY>"}, ...}; the document's AK must be that key
 *     (RSA modulus and exponent).
 *   validate_cvm: the platform as go-tpm-tools reads it from PCR 0's events before the
 *     separator (each event's digest must be the hash of its data): the last
 *     EV_S_CRTM_VERSION holds "GCE Virtual Firmware v<N>" in UCS-2 (gce_version N), the last
 *     EV_NONHOST_INFO "GCE NonHostInfo\0" and the technology byte (1: AMD SEV). Both must be
 *     there, gce_version >= 1 and the technology AMD SEV.
 * The event log was replayed against the verified quote before validate_cvm runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bearssl.h>
#include <json-c/json.h>
#include <tss2/tss2_mu.h>

#include "attest.h"
#include "base/base.h"
#include "base/der.h"
#include "base/eventlog.h"
#include "net/net.h"
#include "vtpm.h"

#define GCE_API_DEFAULT	  "https://compute.googleapis.com"
#define GCE_API_MAX	  (64 * 1024)
#define GCE_API_TIMEOUT	  10000
#define GCE_NAME_MAX	  128
#define EV_SEPARATOR	  0x4
#define EV_S_CRTM_VERSION 0x8
#define EV_NONHOST_INFO	  0x11
#define GCE_TECH_AMD_SEV  1

static int name_ok(const char *s)
{
	if (!*s || strlen(s) >= GCE_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.' || *s == ':'))
			return 0;
	return 1;
}

struct gce_instance {
	char zone[GCE_NAME_MAX], project[GCE_NAME_MAX], name[GCE_NAME_MAX];
};

static int parse_instance_info(const struct vtpm_view *v, struct gce_instance *gi, char *err,
			       size_t errlen)
{
	json_object *o = json_parse_exact((const char *)v->instance_info, v->instance_info_len);
	const char *keys[] = {"zone", "project_id", "instance_name"};
	char *dst[] = {gi->zone, gi->project, gi->name};
	int r = 0;

	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return errbuf_set(err, errlen, "InstanceInfo is not a JSON object");
	}
	for (int i = 0; i < 3 && r == 0; i++) {
		json_object *s;

		if (!json_object_object_get_ex(o, keys[i], &s) ||
		    !json_object_is_type(s, json_type_string) ||
		    !name_ok(json_object_get_string(s)))
			r = errbuf_set(err, errlen, "InstanceInfo: %s missing or not a GCE name",
				       keys[i]);
		else
			snprintf(dst[i], GCE_NAME_MAX, "%s", json_object_get_string(s));
	}
	json_object_put(o);
	return r;
}

/* The RSA key (n without leading zeros, e) of a DER SubjectPublicKeyInfo. */
static int spki_rsa(const uint8_t *der, size_t len, struct der_in *n, uint32_t *e)
{
	struct der_in in = {der, len}, spki, alg, bits, key, ei;
	uint8_t tag;

	if (der_expect(&in, DER_SEQUENCE, &spki, NULL) < 0 ||
	    der_expect(&spki, DER_SEQUENCE, &alg, NULL) < 0 ||
	    der_expect(&spki, DER_BIT_STRING, &bits, NULL) < 0 || bits.len < 1 || bits.p[0])
		return -EINVAL;
	bits.p++, bits.len--;
	if (der_expect(&bits, DER_SEQUENCE, &key, NULL) < 0 || der_next(&key, &tag, n, NULL) < 0 ||
	    tag != DER_INTEGER || der_next(&key, &tag, &ei, NULL) < 0 || tag != DER_INTEGER ||
	    ei.len > 5 || !ei.len)
		return -EINVAL;
	while (n->len && !n->p[0])
		n->p++, n->len--;
	*e = 0;
	for (size_t i = 0; i < ei.len; i++)
		*e = *e << 8 | ei.p[i];
	return 0;
}

/* GET https://HOST/PATH with extra header lines, the chain checked against the system's CA
 * bundle; the whole response (at most max body bytes) into *resp. */
static int https_get(const char *url, const char *anchors, const char *headers, int timeout_ms,
		     size_t max, struct http_response *resp, char *err, size_t errlen)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)timeout_ms;
	const char *h = url + 8;
	size_t n = strcspn(h, "/"), len = 0, cap = max + 16384;
	char host[256], hostport[300], port[8], *buf = NULL, *req = NULL;
	struct tls_client *tc = NULL;
	struct ca_bundle ca = {0};
	int fd = -1, r, rl;

	memset(resp, 0, sizeof *resp);
	if (n == 0 || n >= sizeof host)
		return errbuf_set(err, errlen, "bad URL");
	snprintf(hostport, sizeof hostport, "%.*s%s", (int)n, h, memchr(h, ':', n) ? "" : ":443");
	if (hostport_split(hostport, host, sizeof host, port, sizeof port) < 0)
		return errbuf_set(err, errlen, "bad URL");
	if ((r = ca_bundle_load(anchors ? anchors : CA_BUNDLE_DEFAULT, &ca, err, errlen)) < 0)
		return r;
	rl = (int)(strlen(url) + strlen(headers) + 200);
	req = malloc((size_t)rl);
	buf = malloc(cap + 1);
	if (!req || !buf) {
		r = -ENOMEM;
		goto out;
	}
	rl = snprintf(req, (size_t)rl,
		      "GET %s HTTP/1.1\r\nHost: %s\r\n%sUser-Agent: constel-verify\r\n"
		      "Connection: close\r\n\r\n",
		      h[n] ? h + n : "/", host, headers);
	if ((fd = tcp_dial(hostport, timeout_ms, err, errlen)) < 0) {
		r = fd;
		goto out;
	}
	if ((r = tls_client_open(fd, host, &ca, deadline, &tc, err, errlen)) < 0 ||
	    (r = tls_client_write(tc, req, (size_t)rl, deadline, err, errlen)) < 0)
		goto out;
	for (;;) {
		ssize_t k = tls_client_read(tc, buf + len, cap - len, deadline, err, errlen);

		if (k < 0) {
			r = (int)k;
			goto out;
		}
		if (k == 0)
			break;
		len += (size_t)k;
		if (len == cap) {
			r = errbuf_set(err, errlen, "%s: response larger than %zu bytes", host,
				       max);
			goto out;
		}
	}
	buf[len] = '\0';
	r = http_parse_response(buf, len, &resp->status, &resp->body, &resp->len, err, errlen);
	if (r == 0) {
		resp->buf = buf;
		buf = NULL;
	}
out:
	if (req)
		secret_wipe(req, strlen(req));
	free(req);
	free(buf);
	tls_client_free(tc);
	if (fd >= 0)
		close(fd);
	ca_bundle_free(&ca);
	return r;
}

static int trusted_key(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
		       size_t errlen)
{
	struct gce_instance gi;
	struct http_req rq = {0};
	struct http_response resp = {0};
	const char *api = p->api ? p->api : GCE_API_DEFAULT,
		   *tok = getenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	char url[1024], hdr[4200], why[256];
	json_object *o = NULL, *sk, *pem;
	uint8_t der[2048];
	struct der_in n;
	uint32_t e, ak_e;
	size_t der_len, off = 0;
	TPMT_PUBLIC ak;
	int r;

	if ((r = parse_instance_info(v, &gi, err, errlen)) < 0)
		return r;
	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(v->ak_pub, v->ak_len, &off, &ak) != TSS2_RC_SUCCESS ||
	    ak.type != TPM2_ALG_RSA)
		return errbuf_set(err, errlen, "the AK is not an RSA TPMT_PUBLIC");
	snprintf(url, sizeof url,
		 "%s/compute/v1/projects/%s/zones/%s/instances/%s/getShieldedInstanceIdentity", api,
		 gi.project, gi.zone, gi.name);
	if (tok && strlen(tok) < 4096 &&
	    strspn(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=") ==
		strlen(tok)) {
		snprintf(hdr, sizeof hdr, "Authorization: Bearer %s\r\n", tok);
		rq.headers = hdr;
	}
	if (!strncmp(api, "https://", 8))
		r = https_get(url, p->ca_bundle, rq.headers ? rq.headers : "", GCE_API_TIMEOUT,
			      GCE_API_MAX, &resp, why, sizeof why);
	else
		r = http_request(url, &rq, GCE_API_TIMEOUT, GCE_API_MAX, &resp, why, sizeof why);
	secret_wipe(hdr, sizeof hdr);
	if (r < 0)
		return errbuf_set(err, errlen, "getShieldedInstanceIdentity: %s", why), r;
	r = -EINVAL;
	if (resp.status != 200) {
		errbuf_set(err, errlen, "getShieldedInstanceIdentity of %s/%s/%s: HTTP %d",
			   gi.project, gi.zone, gi.name, resp.status);
		goto out;
	}
	o = json_parse_exact(resp.body, resp.len);
	if (!o || !json_object_object_get_ex(o, "signingKey", &sk) ||
	    !json_object_object_get_ex(sk, "ekPub", &pem) ||
	    !json_object_is_type(pem, json_type_string)) {
		errbuf_set(err, errlen, "getShieldedInstanceIdentity: no signingKey.ekPub");
		goto out;
	}
	if (pem_decode(json_object_get_string(pem), (size_t)json_object_get_string_len(pem),
		       "PUBLIC KEY", der, sizeof der, &der_len) < 0 ||
	    spki_rsa(der, der_len, &n, &e) < 0) {
		errbuf_set(err, errlen,
			   "getShieldedInstanceIdentity: ekPub is not an RSA "
			   "PUBLIC KEY");
		goto out;
	}
	ak_e = ak.parameters.rsaDetail.exponent ? ak.parameters.rsaDetail.exponent : 65537;
	if (n.len != ak.unique.rsa.size || memcmp(n.p, ak.unique.rsa.buffer, n.len) || e != ak_e) {
		errbuf_set(err, errlen, "the AK is not the signing key GCE gives for %s/%s/%s",
			   gi.project, gi.zone, gi.name);
		goto out;
	}
	r = 0;
out:
	json_object_put(o);
	http_response_free(&resp);
	return r;
}

/* ---- the GCE platform from PCR 0's events (go-tpm-tools' getPlatformState) ---- */
struct platform {
	const br_hash_class *hc;
	size_t dlen;
	int done, bad;
	uint8_t version[256], nonhost[64];
	size_t version_len, nonhost_len;
	int have_version, have_nonhost;
};

static int on_event(void *ctx, uint32_t pcr, uint32_t type, const uint8_t *digest, size_t dlen,
		    const uint8_t *data, size_t len)
{
	static const uint8_t sep0[4] = {0, 0, 0, 0}, sep1[4] = {0xff, 0xff, 0xff, 0xff};
	struct platform *pl = ctx;
	br_hash_compat_context h;
	uint8_t hv[64], s0[64], s1[64];
	int verified, looks_sep;

	if (pcr != 0 || pl->done)
		return 0;
	pl->hc->init(&h.vtable);
	pl->hc->update(&h.vtable, data, len);
	pl->hc->out(&h.vtable, hv);
	verified = !memcmp(hv, digest, dlen);
	pl->hc->init(&h.vtable);
	pl->hc->update(&h.vtable, sep0, 4);
	pl->hc->out(&h.vtable, s0);
	pl->hc->init(&h.vtable);
	pl->hc->update(&h.vtable, sep1, 4);
	pl->hc->out(&h.vtable, s1);
	looks_sep = !memcmp(digest, s0, dlen) || !memcmp(digest, s1, dlen);
	if (type == EV_SEPARATOR || looks_sep) {
		if (type != EV_SEPARATOR || !verified || len != 4 ||
		    (memcmp(data, sep0, 4) && memcmp(data, sep1, 4)))
			return pl->bad = 1, -1;
		pl->done = 1; /* nothing after the separator is trusted */
		return 0;
	}
	if (type == EV_S_CRTM_VERSION || type == EV_NONHOST_INFO) {
		if (!verified)
			return pl->bad = 1, -1;
		if (type == EV_S_CRTM_VERSION && len <= sizeof pl->version) {
			memcpy(pl->version, data, len);
			pl->version_len = len;
			pl->have_version = 1;
		} else if (type == EV_NONHOST_INFO && len <= sizeof pl->nonhost) {
			memcpy(pl->nonhost, data, len);
			pl->nonhost_len = len;
			pl->have_nonhost = 1;
		}
	}
	return 0;
}

/* ConvertSCRTMVersionToGCEFirmwareVersion: "GCE Virtual Firmware v" in UCS-2, then digits. */
static long gce_version(const uint8_t *v, size_t len)
{
	static const char prefix[] = "GCE Virtual Firmware v";
	size_t pl = 2 * (sizeof prefix - 1);
	long n = 0;
	int digits = 0;

	if (len <= pl || len % 2)
		return -1;
	for (size_t i = 0; i < sizeof prefix - 1; i++)
		if (v[2 * i] != (uint8_t)prefix[i] || v[2 * i + 1])
			return -1;
	for (size_t i = pl; i < len; i++) {
		if (!v[i])
			continue;
		if ((i - pl) % 2 || v[i] < '0' || v[i] > '9' || ++digits > 9)
			return -1;
		n = n * 10 + (v[i] - '0');
	}
	return digits ? n : -1;
}

int gce_platform(const uint8_t *log, size_t len, long *version, int *tech, char *err, size_t errlen)
{
	struct platform pl = {.hc = &br_sha256_vtable, .dlen = 32};
	struct eventlog_pcrs *ev;
	char why[200];
	int r;

	if (!len)
		return errbuf_set(err, errlen, "no event log: the GCE platform is unknown");
	ev = malloc(sizeof *ev);
	if (!ev)
		return -ENOMEM;
	r = eventlog_walk(log, len, TPM_ALG_SHA256, ev, on_event, &pl, why, sizeof why);
	free(ev);
	if (r < 0 || pl.bad)
		return errbuf_set(err, errlen, "event log: PCR 0 %s",
				  pl.bad ? "has an event whose digest or type is forged" : why);
	*version = pl.have_version ? gce_version(pl.version, pl.version_len) : -1;
	*tech =
	    pl.have_nonhost && pl.nonhost_len >= 17 && !memcmp(pl.nonhost, "GCE NonHostInfo\0", 16)
		? pl.nonhost[16]
		: -1;
	return 0;
}

static int validate_cvm(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
			size_t errlen)
{
	long ver;
	int tech, r;

	(void)p;
	r = gce_platform(v->event_log, v->event_log_len, &ver, &tech, err, errlen);
	if (r < 0)
		return r;
	if (ver < 1)
		return errbuf_set(err, errlen,
				  "not GCE firmware (no GCE Virtual Firmware version "
				  ">= 1 in PCR 0)");
	if (tech < 0)
		return errbuf_set(err, errlen, "no GCE NonHostInfo event in PCR 0");
	if (tech != GCE_TECH_AMD_SEV)
		return errbuf_set(err, errlen, "GCE confidential technology is %d, not AMD SEV (1)",
				  tech);
	return 0;
}

const struct vtpm_check vtpm_check_gcp_sev_es = {
    .name = "gcp-sev-es",
    .enforced = "4,8,9,11,12,13,15",
    .trusted_key = trusted_key,
    .validate_cvm = validate_cvm,
};
