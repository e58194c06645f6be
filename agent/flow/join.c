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

static int write_ticket(const char *dir, const struct ticket *t, const char *key_pem,
			size_t key_len)
{
	char hex[65];
	const struct {
		const char *name;
		const void *data;
		size_t len;
	} raw[] = {
	    {"state_disk_key", t->disk_key, 32},
	    {"measurement_salt", t->salt, 32},
	    {"measurement_secret", t->secret, 32},
	    {"kubelet-client-crt.pem", t->kubelet_cert, t->kubelet_cert_len},
	    {"kubelet-client-key.pem", key_pem, key_len},
	    {"ssh_ca.pub", t->ssh_ca, strlen(t->ssh_ca)},
	    {"ssh_host_cert.pub", t->host_cert, strlen(t->host_cert)},
	};
	const struct {
		const char *name, *text;
	} text[] = {
	    {"cluster_id", hex},
	    {"api_server_endpoint", t->api_server_endpoint},
	    {"token", t->token},
	    {"discovery_token_ca_cert_hash", t->ca_hash},
	};
	char path[4096];
	FILE *f;
	int fd, r;

	hex_encode(t->cluster_id, 32, hex, sizeof hex);
	for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++)
		if ((r = flow_write(dir, raw[i].name, raw[i].data, raw[i].len)) < 0)
			return r;
	for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
		if ((r = write_text(dir, text[i].name, text[i].text)) < 0)
			return r;
	for (int i = 0; i < t->n_files; i++) {
		snprintf(path, sizeof path, "%s/pki/%s", dir, t->files[i].name);
		*strrchr(path, '/') = '\0';
		if ((r = mkdir_parents(path, 0700)) < 0)
			return log_err(r, "join: mkdir %s", path);
		snprintf(path, sizeof path, "pki/%s", t->files[i].name);
		if ((r = flow_write(dir, path, t->files[i].data, t->files[i].len)) < 0)
			return r;
	}
	/* the components as lines "url hash install_path extract" (installed by the boot) */
	snprintf(path, sizeof path, "%s/components", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		r = log_err(-errno, "write %s", path);
		if (fd >= 0)
			close(fd);
		return r;
	}
	for (int i = 0; i < t->comps.n; i++)
		fprintf(f, "%s %s %s %s\n", t->comps.v[i].url, t->comps.v[i].hash,
			t->comps.v[i].path, t->comps.v[i].extract ? "extract" : "copy");
	return fclose(f) == 0 ? 0 : log_err(-EIO, "write %s", path);
}

int flow_join(const struct join_params *p)
{
	struct p256_key key;
	struct ssh_key ssh;
	struct ticket *t = calloc(1, sizeof *t);
	struct grpc_result res;
	uint8_t buf[REQ_MAX];
	char err[256], host[64], pem[512], hex[65];
	const char *principals[2];
	struct join_request jr = {.name = p->name,
				  .disk_uuid = p->disk_uuid,
				  .ip = p->ip,
				  .control_plane = p->control_plane,
				  .principals = principals};
	size_t n;
	int r;

	if (!t)
		return -ENOMEM;
	r = ensure_dir(p->out_dir);
	if (r == 0 && (r = ssh_host_key_load(p->ssh_key_path, 1, &ssh, err, sizeof err)) < 0)
		log_error("join: %s", err);
	if (r < 0) {
		free(t);
		return r;
	}
	if (p->ip && *p->ip)
		principals[jr.n_principals++] = p->ip;
	if (gethostname(host, sizeof host) == 0 && host[0]) {
		host[sizeof host - 1] = '\0';
		principals[jr.n_principals++] = host;
	}
	jr.ssh_pk = ssh.pk;
	r = join_request_build(&jr, &key, buf, sizeof buf, &n);
	secret_wipe(&ssh, sizeof ssh);
	if (r < 0) {
		free(t);
		return r;
	}
	log_info("join: IssueJoinTicket at %s for %s (disk %s)", p->endpoint, p->name,
		 p->disk_uuid);
	r = flow_call(p->endpoint, p->issuer, "/join.API/IssueJoinTicket", buf, n, p->timeout_ms,
		      &res);
	if (r < 0) {
		r = log_err(r, "join: call");
	} else if (res.status != GRPC_OK) {
		log_error("join: %s: rpc error: code = %d desc = %s", p->endpoint, res.status,
			  res.message);
		r = -ECONNREFUSED;
	} else {
		r = ticket_decode(res.response, res.response_len, t, err, sizeof err);
		if (r < 0)
			log_error("join: %s", err);
		secret_wipe(res.response, res.response_len);
		rpc_free(res.response);
	}
	if (r == 0) { /* TryLockOnce with the cluster ID, before anything is written */
		struct node_lock lock = {.tcti = p->tpm};

		r = lock_try_once(&lock, t->cluster_id) < 0 ? -EIO : 0;
	}
	if (r == 0 && (r = kubelet_key_pem(&key, pem, sizeof pem)) > 0) {
		size_t pem_len = (size_t)r;

		r = write_ticket(p->out_dir, t, pem, pem_len);
	}
	if (r == 0) {
		hex_encode(t->cluster_id, 32, hex, sizeof hex);
		log_info("join: ticket written to %s: cluster ID %s, %d control-plane files, %d "
			 "components",
			 p->out_dir, hex, t->n_files, t->comps.n);
	} else if (r > 0) {
		r = -EINVAL;
	}
	secret_wipe(pem, sizeof pem);
	ticket_free(t);
	free(t);
	p256_wipe(&key);
	return r < 0 ? r : 0;
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
	rpc_free(res.response);
	return r;
}
