/* The join ticket (spec §5.4.1, §5.4.2): the request a node sends, and the response decoded
 * into owned memory, checked (32-byte keys, safe file names) and with the cluster ID derived,
 * for both the host command that writes it to a folder and the boot flow that puts it on the
 * state disk. Every secret in it is wiped by ticket_free. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pb_decode.h>
#include <pb_encode.h>

#include "flow.h"
#include "join.pb.h"
#include "kube/kube.h"

/* A control-plane file name from the ticket: relative, no "..", a short plain path. */
static int safe_name(const char *n)
{
	if (!*n || n[0] == '/' || strlen(n) > 128)
		return 0;
	for (const char *p = n; *p; p++)
		if (!(isalnum((unsigned char)*p) || strchr("._-/", *p)))
			return 0;
	return !strstr(n, "..") && !strstr(n, "//") && n[strlen(n) - 1] != '/';
}

struct files_ctx {
	struct ticket *t;
	char err[160];
};

/* One ControlPlaneFile: the name through nanopb, the data (field 2) found by hand so that it
 * needs no fixed bound. */
static bool decode_file(pb_istream_t *s, const pb_field_t *f, void **arg)
{
	struct files_ctx *fc = *arg;
	struct ticket *t = fc->t;
	join_ControlPlaneFile file = join_ControlPlaneFile_init_zero;
	size_t len = s->bytes_left;
	uint8_t *data;
	pb_istream_t sub, scan;
	pb_wire_type_t wt;
	uint32_t tag;
	bool eof, ok = false;
	const uint8_t *content = (const uint8_t *)"";
	size_t clen = 0;

	(void)f;
	if (t->n_files == TICKET_MAX_FILES) {
		snprintf(fc->err, sizeof fc->err, "more than %d control-plane files",
			 TICKET_MAX_FILES);
		return false;
	}
	data = malloc(len ? len : 1);
	if (!data || !pb_read(s, data, len)) {
		if (data)
			secret_wipe(data, len); /* part of a control-plane file (keys) */
		free(data);
		return false;
	}
	sub = pb_istream_from_buffer(data, len);
	if (!pb_decode(&sub, join_ControlPlaneFile_fields, &file))
		goto out;
	if (!safe_name(file.name)) {
		snprintf(fc->err, sizeof fc->err, "refusing control-plane file name '%.64s'",
			 file.name);
		goto out;
	}
	scan = pb_istream_from_buffer(data, len);
	while (pb_decode_tag(&scan, &wt, &tag, &eof)) {
		if (tag == 2 && wt == PB_WT_STRING) {
			uint32_t l;

			if (!pb_decode_varint32(&scan, &l) || l > scan.bytes_left)
				goto out;
			content = data + (len - scan.bytes_left);
			clen = l;
			if (!pb_read(&scan, NULL, l))
				goto out;
		} else if (!pb_skip_field(&scan, wt)) {
			goto out;
		}
	}
	{
		struct ticket_file *tf = &t->files[t->n_files];

		tf->data = malloc(clen ? clen : 1);
		if (!tf->data)
			goto out;
		memcpy(tf->data, content, clen);
		tf->len = clen;
		snprintf(tf->name, sizeof tf->name, "%s", file.name);
		t->n_files++;
	}
	ok = true;
out:
	secret_wipe(data, len);
	free(data);
	return ok;
}

bool component_list_decode(pb_istream_t *s, const pb_field_t *f, void **arg)
{
	struct component_list *l = *arg;
	components_Component *c;
	struct component_entry *e;

	(void)f;
	if (l->n == TICKET_MAX_COMPONENTS)
		return false;
	if (!l->v && !(l->v = calloc(TICKET_MAX_COMPONENTS, sizeof *l->v)))
		return false;
	c = calloc(1, sizeof *c);
	if (!c)
		return false;
	if (!pb_decode(s, components_Component_fields, c)) {
		free(c);
		return false;
	}
	e = &l->v[l->n++];
	snprintf(e->url, sizeof e->url, "%s", c->url);
	snprintf(e->hash, sizeof e->hash, "%s", c->hash);
	snprintf(e->path, sizeof e->path, "%s", c->install_path);
	e->extract = c->extract;
	free(c);
	return true;
}

void component_list_free(struct component_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int ticket_decode(const uint8_t *buf, size_t len, struct ticket *t, char *err, size_t errlen)
{
	join_IssueJoinTicketResponse *resp = calloc(1, sizeof *resp);
	struct files_ctx fc = {.t = t};
	pb_istream_t is = pb_istream_from_buffer(buf, len);
	int r = 0;

	memset(t, 0, sizeof *t);
	if (!resp) {
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	resp->control_plane_files.funcs.decode = decode_file;
	resp->control_plane_files.arg = &fc;
	resp->kubernetes_components.funcs.decode = component_list_decode;
	resp->kubernetes_components.arg = &t->comps;
	if (!pb_decode(&is, join_IssueJoinTicketResponse_fields, resp)) {
		errbuf_set(err, errlen, "malformed ticket: %s",
			   fc.err[0] ? fc.err : PB_GET_ERROR(&is));
		r = -EBADMSG;
	} else if (resp->state_disk_key.size != 32 || resp->measurement_secret.size != 32 ||
		   resp->measurement_salt.size != 32) {
		errbuf_set(err, errlen, "ticket keys are not 32 bytes");
		r = -EBADMSG;
	}
	if (r == 0) {
		memcpy(t->disk_key, resp->state_disk_key.bytes, 32);
		memcpy(t->salt, resp->measurement_salt.bytes, 32);
		memcpy(t->secret, resp->measurement_secret.bytes, 32);
		memcpy(t->kubelet_cert, resp->kubelet_cert.bytes, resp->kubelet_cert.size);
		t->kubelet_cert_len = resp->kubelet_cert.size;
		snprintf(t->api_server_endpoint, sizeof t->api_server_endpoint, "%s",
			 resp->api_server_endpoint);
		snprintf(t->token, sizeof t->token, "%s", resp->token);
		snprintf(t->ca_hash, sizeof t->ca_hash, "%s", resp->discovery_token_ca_cert_hash);
		snprintf(t->ssh_ca, sizeof t->ssh_ca, "%.*s",
			 (int)resp->authorized_ca_public_key.size,
			 (const char *)resp->authorized_ca_public_key.bytes);
		snprintf(t->host_cert, sizeof t->host_cert, "%.*s",
			 (int)resp->host_certificate.size,
			 (const char *)resp->host_certificate.bytes);
		if (cluster_id_derive(t->secret, t->salt, 32, t->cluster_id) < 0) {
			errbuf_set(err, errlen, "deriving the cluster ID failed");
			r = -EINVAL;
		}
	}
	secret_wipe(resp, sizeof *resp);
	free(resp);
	if (r < 0)
		ticket_free(t);
	return r;
}

void ticket_free(struct ticket *t)
{
	for (int i = 0; i < t->n_files; i++) {
		secret_wipe(t->files[i].data, t->files[i].len);
		free(t->files[i].data);
	}
	component_list_free(&t->comps);
	secret_wipe(t, sizeof *t);
}

int join_request_build(const struct join_request *jr, struct p256_key *key, uint8_t *buf,
		       size_t cap, size_t *ret_len)
{
	join_IssueJoinTicketRequest *req = calloc(1, sizeof *req);
	pb_ostream_t os = pb_ostream_from_buffer(buf, cap);
	size_t csr_len;
	int r;

	if (!req)
		return -ENOMEM;
	for (size_t i = 0; jr->disk_uuid[i] && i + 1 < sizeof req->disk_uuid; i++)
		req->disk_uuid[i] = (char)tolower((unsigned char)jr->disk_uuid[i]);
	req->is_control_plane = jr->control_plane;
	req->host_public_key.size =
	    (pb_size_t)ssh_pubkey_wire(jr->ssh_pk, req->host_public_key.bytes);
	for (size_t i = 0; i < jr->n_principals && i < 16; i++)
		snprintf(req->host_certificate_principals[req->host_certificate_principals_count++],
			 sizeof req->host_certificate_principals[0], "%s", jr->principals[i]);
	r = p256_generate(key);
	if (r < 0) {
		free(req);
		return log_err(r, "join: kubelet key");
	}
	r = csr_build(key, jr->name, jr->ip, req->certificate_request.bytes,
		      sizeof req->certificate_request.bytes, &csr_len);
	if (r < 0) {
		p256_wipe(key);
		free(req);
		return log_err(r, "join: certificate request for node '%.64s', IP '%.64s'",
			       jr->name, jr->ip ? jr->ip : "");
	}
	req->certificate_request.size = (pb_size_t)csr_len;
	if (!pb_encode(&os, join_IssueJoinTicketRequest_fields, req)) {
		p256_wipe(key);
		free(req);
		return log_err(-EINVAL, "join: encoding the request: %s", PB_GET_ERROR(&os));
	}
	*ret_len = os.bytes_written;
	free(req);
	return 0;
}

int kubelet_key_pem(const struct p256_key *key, char *pem, size_t cap)
{
	uint8_t sec1[160];
	size_t n;
	int r = p256_sec1_der(key, sec1, sizeof sec1, &n);

	if (r == 0)
		r = pem_encode("EC PRIVATE KEY", sec1, n, pem, cap);
	secret_wipe(sec1, sizeof sec1);
	return r;
}

int host_principals(const char *hostname, char (*out)[64], int max)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (getifaddrs(&ifa) == 0) {
		for (i = ifa; i && n < max - 1; i = i->ifa_next) {
			const void *a;

			if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK))
				continue;
			if (i->ifa_addr->sa_family == AF_INET)
				a = &((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			else if (i->ifa_addr->sa_family == AF_INET6)
				a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
			else
				continue;
			if (inet_ntop(i->ifa_addr->sa_family, a, out[n], 64))
				n++;
		}
		freeifaddrs(ifa);
	}
	if (n < max && hostname && hostname[0]) {
		snprintf(out[n], 64, "%s", hostname);
		n++;
	} else if (n < max && !hostname && gethostname(out[n], 64) == 0 && out[n][0]) {
		out[n][63] = '\0';
		n++;
	}
	return n;
}
