/* Azure's provisioning report to the wireserver (the protocol WALinuxAgent, cloud-init and
 * Afterburn speak, x-ms-version 2012-11-30): the goal state first, for its incarnation, the
 * container ID and the role instance's ID, then the health report, Ready, or NotReady with the
 * sub-status ProvisioningFailed and the reason, so that a failed boot reads as that reason in
 * Azure instead of OSProvisioningTimedOut. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cloud.h"
#include "net/net.h"

#define WIRE_HDR                             \
	"x-ms-agent-name: constel-agent\r\n" \
	"x-ms-version: 2012-11-30\r\n"
#define GOAL_STATE_MAX	(64 << 10)
#define DESCRIPTION_MAX 512

/* The text of the first <tag> after from, before limit: letters, digits, '.', '-', '_'. */
static const char *element(const char *from, const char *limit, const char *tag, char *out,
			   size_t cap)
{
	char open[48], close[48];
	const char *v, *e;

	snprintf(open, sizeof open, "<%s>", tag);
	snprintf(close, sizeof close, "</%s>", tag);
	if (!from || !(v = memmem(from, (size_t)(limit - from), open, strlen(open))))
		return NULL;
	v += strlen(open);
	if (!(e = memmem(v, (size_t)(limit - v), close, strlen(close))) || e == v ||
	    (size_t)(e - v) >= cap)
		return NULL;
	for (const char *p = v; p < e; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
			return NULL;
	memcpy(out, v, (size_t)(e - v));
	out[e - v] = 0;
	return e;
}

/* The position just after <tag> (or <tag attributes>), NULL when absent. */
static const char *after_open(const char *from, const char *limit, const char *tag)
{
	char open[48];
	size_t n = (size_t)snprintf(open, sizeof open, "<%s", tag);

	for (const char *p = from; p && p < limit;) {
		const char *q = memmem(p, (size_t)(limit - p), open, n);

		if (!q)
			return NULL;
		if (q + n < limit && (q[n] == '>' || q[n] == ' '))
			return q + n;
		p = q + n;
	}
	return NULL;
}

int azure_parse_goal_state(const char *xml, size_t len, struct azure_goal_state *gs, char *err,
			   size_t errlen)
{
	const char *end = xml + len, *root = after_open(xml, end, "GoalState"), *c, *ri;

	memset(gs, 0, sizeof *gs);
	if (!root)
		return errbuf_set(err, errlen, "azure: the goal state is not a <GoalState>");
	if (!element(root, end, "Incarnation", gs->incarnation, sizeof gs->incarnation))
		return errbuf_set(err, errlen, "azure: the goal state has no Incarnation");
	c = after_open(root, end, "Container");
	if (!element(c, end, "ContainerId", gs->container_id, sizeof gs->container_id))
		return errbuf_set(err, errlen,
				  "azure: the goal state has no Container/ContainerId");
	ri = after_open(after_open(c, end, "RoleInstanceList"), end, "RoleInstance");
	if (!element(ri, end, "InstanceId", gs->instance_id, sizeof gs->instance_id))
		return errbuf_set(err, errlen,
				  "azure: the goal state has no RoleInstance/InstanceId");
	return 0;
}

/* why, XML-escaped, at most DESCRIPTION_MAX characters of it, into out. */
static size_t escape(const char *why, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; why[i] && i < DESCRIPTION_MAX; i++) {
		const char *rep = why[i] == '<'	   ? "&lt;"
				  : why[i] == '>'  ? "&gt;"
				  : why[i] == '&'  ? "&amp;"
				  : why[i] == '"'  ? "&quot;"
				  : why[i] == '\'' ? "&apos;"
						   : NULL;
		char one[2] = {(unsigned char)why[i] < ' ' ? ' ' : why[i], 0};

		if (!rep)
			rep = one;
		if (o + strlen(rep) >= cap)
			break;
		memcpy(out + o, rep, strlen(rep));
		o += strlen(rep);
	}
	out[o] = 0;
	return o;
}

int azure_health_xml(const struct azure_goal_state *gs, const char *why, char *out, size_t cap)
{
	char desc[DESCRIPTION_MAX * 6 + 1], details[sizeof desc + 128] = "";
	int n;

	if (why) {
		escape(why, desc, sizeof desc);
		snprintf(details, sizeof details,
			 "<Details><SubStatus>ProvisioningFailed</SubStatus>"
			 "<Description>%s</Description></Details>",
			 desc);
	}
	n = snprintf(out, cap,
		     "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
		     "<Health xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
		     "xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\">"
		     "<GoalStateIncarnation>%s</GoalStateIncarnation>"
		     "<Container><ContainerId>%s</ContainerId><RoleInstanceList><Role>"
		     "<InstanceId>%s</InstanceId><Health><State>%s</State>%s</Health>"
		     "</Role></RoleInstanceList></Container></Health>\n",
		     gs->incarnation, gs->container_id, gs->instance_id, why ? "NotReady" : "Ready",
		     details);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

int azure_report_health(const struct cloud *cl, const char *why)
{
	struct azure_goal_state gs;
	struct http_response resp;
	char url[256], err[160], xml[4096 + 512];
	int r, n;

	snprintf(url, sizeof url, "%s/machine/?comp=goalstate", cl->wireserver);
	if ((r = cloud_http(cl, "GET", url, WIRE_HDR, NULL, 0, GOAL_STATE_MAX, &resp)) < 0)
		return r;
	r = azure_parse_goal_state(resp.body, resp.len, &gs, err, sizeof err);
	http_response_free(&resp);
	if (r < 0)
		return log_err(r, "%s", err);
	if ((n = azure_health_xml(&gs, why, xml, sizeof xml)) < 0)
		return log_err(n, "azure: the health report does not fit");
	snprintf(url, sizeof url, "%s/machine?comp=health", cl->wireserver);
	if ((r = cloud_http(cl, "POST", url, WIRE_HDR "Content-Type: text/xml;charset=utf-8\r\n",
			    xml, (size_t)n, 4096, &resp)) < 0)
		return r;
	http_response_free(&resp);
	log_info("azure: reported %s to the wireserver (incarnation %s)",
		 why ? "NotReady (ProvisioningFailed)" : "Ready", gs.incarnation);
	return 0;
}
