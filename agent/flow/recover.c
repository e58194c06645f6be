/* The recovery server (spec §6.4) as a host command: serves one /recoverproto.API/Recover,
 * derives the measurement secret and the state-disk key from the master secret in the
 * request, writes them to the output folder, answers with an empty RecoverResponse and stops.
 * As in Constellation the caller is not authenticated. The node's hook tests the key on the
 * disk first: a wrong one is refused to that caller (PERMISSION_DENIED) and the server serves
 * on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pb_decode.h>

#include "flow.h"
#include "net/net.h"
#include "recover.pb.h"

const char recover_method[] = "/recoverproto.API/Recover";

void recover_handle(void *ctx, struct grpc_stream *s, const uint8_t *reqbuf, size_t len)
{
	struct recover_server *st = ctx;
	recoverproto_RecoverMessage req = recoverproto_RecoverMessage_init_zero;
	pb_istream_t is = pb_istream_from_buffer(reqbuf, len);
	struct kms kms = {0};
	uint8_t msecret[32], disk_key[32];
	char err[256], why[300];
	int r;

	if (st->srv->stop) {
		grpc_stream_finish(s, GRPC_UNAVAILABLE, "service unavailable");
		return;
	}
	if (!pb_decode(&is, recoverproto_RecoverMessage_fields, &req)) {
		grpc_stream_finish(s, GRPC_INTERNAL, "malformed RecoverMessage");
		goto out;
	}
	if (kms_parse(req.kms_uri, &kms, err, sizeof err) < 0 ||
	    kms_storage_check(req.storage_uri, err, sizeof err) < 0) {
		snprintf(why, sizeof why, "creating kms client: %s", err);
		log_error("recover: %s", why);
		grpc_stream_finish(s, GRPC_INTERNAL, why);
		goto out;
	}
	if (kms_derive(&kms, "measurementSecret", msecret, 32) < 0 ||
	    kms_disk_key(&kms, st->p->disk_uuid, 0, disk_key) < 0) {
		grpc_stream_finish(s, GRPC_INTERNAL, "deriving keys failed");
		goto out;
	}
	r = st->p->recover_hooks
		? st->p->recover_hooks->recovered(st->p->hooks_ctx, disk_key, msecret)
		: flow_write(st->p->out_dir, "state_disk_key", disk_key, 32) ?:
		      flow_write(st->p->out_dir, "measurement_secret", msecret, 32);
	if (r == -EACCES) { /* the node's hook said why; the rejoin goes on */
		grpc_stream_finish(s, 7 /* codes.PermissionDenied */,
				   "the key does not open the state disk");
		goto out;
	}
	if (r < 0) {
		grpc_stream_finish(s, GRPC_INTERNAL, "storing the keys failed");
		goto out;
	}
	if (st->p->recover_hooks)
		log_info("recover: keys received");
	else
		log_info("recover: keys received and written to %s", st->p->out_dir);
	grpc_stream_send(s, (const uint8_t *)"", 0);
	grpc_stream_finish(s, GRPC_OK, NULL);
	st->srv->stop = 1;
out:
	secret_wipe(msecret, sizeof msecret);
	secret_wipe(disk_key, sizeof disk_key);
	secret_wipe(&req, sizeof req);
	kms_free(&kms);
}

int flow_serve_recover(const struct serve_params *p)
{
	struct server srv = {0};
	struct recover_server st = {.srv = &srv, .p = p};
	struct grpc_method m = {recover_method, recover_handle, &st};
	char err[256];
	int r = mkdir_parents(p->out_dir, 0700);

	if (r < 0)
		return log_err(r, "serve-recover: mkdir %s", p->out_dir);
	srv.lfd = tcp_listen_on(p->listen, err, sizeof err);
	if (srv.lfd < 0) {
		log_error("serve-recover: %s", err);
		return srv.lfd;
	}
	srv.tls.issuer = p->issuer;
	srv.methods = &m;
	srv.n_methods = 1;
	srv.extra_fd = -1;
	log_info("serve-recover: listening on %s (port %d)", p->listen, tcp_local_port(srv.lfd));
	return serve_run(&srv) == 0 ? 0 : -EIO;
}
