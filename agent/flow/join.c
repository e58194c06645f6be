/* The join and rejoin clients (spec §5.4, §6.4) as host commands: one IssueJoinTicket or
 * IssueRejoinTicket over aTLS, and the ticket written to a folder. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pb_decode.h>
#include <pb_encode.h>

#include "flow.h"
#include "join.pb.h"
#include "kube/kube.h"

#define REQ_MAX 4096

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
	const char *dir;
	int n, err;
};

/* Reads one ControlPlaneFile and writes it to <dir>/pki/<name>. */
static bool decode_file(pb_istream_t *s, const pb_field_t *f, void **arg)
{
	struct files_ctx *fc = *arg;
	join_ControlPlaneFile file = join_ControlPlaneFile_init_zero;
	pb_istream_t sub;
	uint8_t *data;
	size_t len = s->bytes_left;
	char path[4096];
	bool ok = false;
	int r;

	(void)f;
	/* The message is small enough to hold (the gRPC limit bounds it): decode the name with
	 * the data skipped, then again for the data. */
	data = malloc(len ? len : 1);
	if (!data || !pb_read(s, data, len)) {
		free(data);
		return false;
	}
	sub = pb_istream_from_buffer(data, len);
	if (!pb_decode(&sub, join_ControlPlaneFile_fields, &file))
		goto out;
	if (!safe_name(file.name)) {
		log_error("join: refusing control-plane file name '%.64s'", file.name);
		fc->err = -EINVAL;
		goto out;
	}
	{
		/* field 2 (data) found by hand: tag 0x12, varint length */
		pb_istream_t scan = pb_istream_from_buffer(data, len);
		pb_wire_type_t wt;
		uint32_t tag;
		bool eof;
		const uint8_t *content = (const uint8_t *)"";
		size_t clen = 0;

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
		snprintf(path, sizeof path, "%s/pki/%s", fc->dir, file.name);
		*strrchr(path, '/') = '\0';
		r = mkdir_parents(path, 0700);
		if (r < 0) {
			fc->err = log_err(r, "join: mkdir %s", path);
			goto out;
		}
		snprintf(path, sizeof path, "pki/%s", file.name);
		r = flow_write(fc->dir, path, content, clen);
		if (r < 0) {
			fc->err = r;
			goto out;
		}
	}
	fc->n++;
	ok = true;
out:
	secret_wipe(data, len);
	free(data);
	return ok;
}

struct comp_ctx {
	FILE *out;
	int n;
};

/* One components.Component as a line "url hash install_path extract" (installed later, §9). */
static bool decode_component(pb_istream_t *s, const pb_field_t *f, void **arg)
{
	struct comp_ctx *cc = *arg;
	components_Component c = components_Component_init_zero;

	(void)f;
	if (!pb_decode(s, components_Component_fields, &c))
		return false;
	if (cc->out)
		fprintf(cc->out, "%s %s %s %s\n", c.url, c.hash, c.install_path,
			c.extract ? "extract" : "copy");
	cc->n++;
	return true;
}

static int ensure_dir(const char *dir)
{
	int r = mkdir_parents(dir, 0700);

	if (r < 0)
		return log_err(r, "mkdir %s", dir);
	return 0;
}

static void lower_copy(char *dst, const char *src, size_t cap)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < cap; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

static int write_text(const char *dir, const char *name, const char *s)
{
	char buf[8192];
	int n = snprintf(buf, sizeof buf, "%s\n", s);

	return flow_write(dir, name, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static int write_ticket(const char *dir, const join_IssueJoinTicketResponse *t, const char *key_pem,
			size_t key_len, const char *cluster_id_hex)
{
	const struct {
		const char *name;
		const void *data;
		size_t len;
	} raw[] = {
	    {"state_disk_key", t->state_disk_key.bytes, 32},
	    {"measurement_salt", t->measurement_salt.bytes, 32},
	    {"measurement_secret", t->measurement_secret.bytes, 32},
	    {"kubelet-client-crt.pem", t->kubelet_cert.bytes, t->kubelet_cert.size},
	    {"kubelet-client-key.pem", key_pem, key_len},
	    {"ssh_ca.pub", t->authorized_ca_public_key.bytes, t->authorized_ca_public_key.size},
	    {"ssh_host_cert.pub", t->host_certificate.bytes, t->host_certificate.size},
	};
	const struct {
		const char *name, *text;
	} text[] = {
	    {"cluster_id", cluster_id_hex},
	    {"api_server_endpoint", t->api_server_endpoint},
	    {"token", t->token},
	    {"discovery_token_ca_cert_hash", t->discovery_token_ca_cert_hash},
	};
	int r;

	for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++)
		if ((r = flow_write(dir, raw[i].name, raw[i].data, raw[i].len)) < 0)
			return r;
	for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
		if ((r = write_text(dir, text[i].name, text[i].text)) < 0)
			return r;
	return 0;
}

int flow_join(const struct join_params *p)
{
	join_IssueJoinTicketRequest req = join_IssueJoinTicketRequest_init_zero;
	join_IssueJoinTicketResponse *resp;
	struct p256_key key;
	struct ssh_key ssh;
	struct files_ctx fc = {.dir = p->out_dir};
	struct comp_ctx cc = {0};
	struct grpc_result res;
	uint8_t buf[REQ_MAX], sec1[160], cid[32];
	char err[256], host[256], pem[512], hex[65], cpath[4096];
	size_t n, csr_len, sec1_len;
	pb_ostream_t os;
	pb_istream_t is;
	int r;

	r = ensure_dir(p->out_dir);
	if (r < 0)
		return r;
	r = ssh_host_key_load(p->ssh_key_path, 1, &ssh, err, sizeof err);
	if (r < 0) {
		log_error("join: %s", err);
		return r;
	}
	lower_copy(req.disk_uuid, p->disk_uuid, sizeof req.disk_uuid);
	req.is_control_plane = p->control_plane;
	req.host_public_key.size = (pb_size_t)ssh_pubkey_wire(ssh.pk, req.host_public_key.bytes);
	secret_wipe(&ssh, sizeof ssh);
	if (p->ip && *p->ip)
		snprintf(req.host_certificate_principals[req.host_certificate_principals_count++],
			 sizeof req.host_certificate_principals[0], "%s", p->ip);
	if (gethostname(host, sizeof host) == 0 && host[0])
		snprintf(req.host_certificate_principals[req.host_certificate_principals_count++],
			 sizeof req.host_certificate_principals[0], "%s", host);
	r = p256_generate(&key);
	if (r < 0)
		return log_err(r, "join: kubelet key");
	r = csr_build(&key, p->name, p->ip, req.certificate_request.bytes,
		      sizeof req.certificate_request.bytes, &csr_len);
	if (r < 0) {
		p256_wipe(&key);
		return log_err(r, "join: certificate request for node '%.64s', IP '%.64s'", p->name,
			       p->ip ? p->ip : "");
	}
	req.certificate_request.size = (pb_size_t)csr_len;
	os = pb_ostream_from_buffer(buf, sizeof buf);
	if (!pb_encode(&os, join_IssueJoinTicketRequest_fields, &req)) {
		p256_wipe(&key);
		return log_err(-EINVAL, "join: encoding the request: %s", PB_GET_ERROR(&os));
	}
	log_info("join: IssueJoinTicket at %s for %s (disk %s)", p->endpoint, p->name,
		 req.disk_uuid);
	r = flow_call(p->endpoint, p->issuer, "/join.API/IssueJoinTicket", buf, os.bytes_written,
		      p->timeout_ms, &res);
	if (r < 0) {
		p256_wipe(&key);
		return log_err(r, "join: call");
	}
	if (res.status != GRPC_OK) {
		p256_wipe(&key);
		log_error("join: %s: rpc error: code = %d desc = %s", p->endpoint, res.status,
			  res.message);
		return -ECONNREFUSED;
	}
	resp = calloc(1, sizeof *resp);
	if (!resp) {
		free(res.response);
		p256_wipe(&key);
		return -ENOMEM;
	}
	snprintf(cpath, sizeof cpath, "%s/components", p->out_dir);
	resp->control_plane_files.funcs.decode = decode_file;
	resp->control_plane_files.arg = &fc;
	resp->kubernetes_components.funcs.decode = decode_component;
	resp->kubernetes_components.arg = &cc;
	{
		int cfd = open(cpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

		cc.out = cfd >= 0 ? fdopen(cfd, "w") : NULL;
	}
	is = pb_istream_from_buffer(res.response, res.response_len);
	r = 0;
	if (!pb_decode(&is, join_IssueJoinTicketResponse_fields, resp))
		r = log_err(fc.err ? fc.err : -EBADMSG, "join: malformed ticket: %s",
			    PB_GET_ERROR(&is));
	else if (resp->state_disk_key.size != 32 || resp->measurement_secret.size != 32 ||
		 resp->measurement_salt.size != 32)
		r = log_err(-EBADMSG, "join: ticket keys are not 32 bytes");
	if (cc.out)
		fclose(cc.out);
	if (r == 0)
		r = cluster_id_derive(resp->measurement_secret.bytes, resp->measurement_salt.bytes,
				      32, cid);
	if (r == 0) { /* TryLockOnce with the cluster ID, before anything is written */
		struct node_lock lock = {.tcti = p->tpm};

		r = lock_try_once(&lock, cid) < 0 ? -EIO : 0;
	}
	if (r == 0)
		r = p256_sec1_der(&key, sec1, sizeof sec1, &sec1_len);
	if (r == 0) {
		r = pem_encode("EC PRIVATE KEY", sec1, sec1_len, pem, sizeof pem);
		n = r > 0 ? (size_t)r : 0;
		r = r < 0 ? r : 0;
	}
	if (r == 0) {
		hex_encode(cid, 32, hex, sizeof hex);
		r = write_ticket(p->out_dir, resp, pem, n, hex);
		secret_wipe(pem, sizeof pem);
	}
	if (r == 0)
		log_info("join: ticket written to %s: cluster ID %s, %d control-plane files, %d "
			 "components",
			 p->out_dir, hex, fc.n, cc.n);
	secret_wipe(sec1, sizeof sec1);
	secret_wipe(resp, sizeof *resp);
	secret_wipe(res.response, res.response_len);
	free(resp);
	free(res.response);
	p256_wipe(&key);
	return r;
}

int flow_rejoin(const struct join_params *p)
{
	join_IssueRejoinTicketRequest req = join_IssueRejoinTicketRequest_init_zero;
	join_IssueRejoinTicketResponse resp = join_IssueRejoinTicketResponse_init_zero;
	struct grpc_result res;
	uint8_t buf[128];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);
	pb_istream_t is;
	int r;

	r = ensure_dir(p->out_dir);
	if (r < 0)
		return r;
	lower_copy(req.disk_uuid, p->disk_uuid, sizeof req.disk_uuid);
	if (!pb_encode(&os, join_IssueRejoinTicketRequest_fields, &req))
		return log_err(-EINVAL, "rejoin: encoding the request");
	log_info("rejoin: IssueRejoinTicket at %s (disk %s)", p->endpoint, req.disk_uuid);
	r = flow_call(p->endpoint, p->issuer, "/join.API/IssueRejoinTicket", buf, os.bytes_written,
		      p->timeout_ms, &res);
	if (r < 0)
		return log_err(r, "rejoin: call");
	if (res.status != GRPC_OK) {
		log_error("rejoin: %s: rpc error: code = %d desc = %s", p->endpoint, res.status,
			  res.message);
		return -ECONNREFUSED;
	}
	is = pb_istream_from_buffer(res.response, res.response_len);
	if (!pb_decode(&is, join_IssueRejoinTicketResponse_fields, &resp))
		r = log_err(-EBADMSG, "rejoin: malformed response: %s", PB_GET_ERROR(&is));
	else if (resp.state_disk_key.size != 32 || resp.measurement_secret.size != 32)
		r = log_err(-EBADMSG, "rejoin: response keys are not 32 bytes");
	if (r == 0 &&
	    !(r = flow_write(p->out_dir, "state_disk_key", resp.state_disk_key.bytes, 32)))
		r = flow_write(p->out_dir, "measurement_secret", resp.measurement_secret.bytes, 32);
	if (r == 0)
		log_info("rejoin: keys written to %s", p->out_dir);
	secret_wipe(&resp, sizeof resp);
	secret_wipe(res.response, res.response_len);
	free(res.response);
	return r;
}
