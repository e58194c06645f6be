/* The recovery server (spec §6.4) as a host command: serves one /recoverproto.API/Recover,
 * derives the measurement secret and the state-disk key from the master secret in the
 * request, writes them to the output folder, answers with an empty RecoverResponse and stops.
 * As in Constellation the caller is not authenticated and the key is not tested here: a wrong
 * key fails at activation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pb_decode.h>

#include "flow.h"
#include "net/net.h"
#include "recover.pb.h"

struct recover_server {
	struct server srv;
	const struct serve_params *p;
};

static void handle_recover(void *ctx, struct grpc_stream *s, const uint8_t *reqbuf, size_t len)
{
	struct recover_server *st = ctx;
	recoverproto_RecoverMessage req = recoverproto_RecoverMessage_init_zero;
	pb_istream_t is = pb_istream_from_buffer(reqbuf, len);
	struct kms kms = {0};
	uint8_t msecret[32], disk_key[32];
	char err[256], why[300];

	if (st->srv.stop) {
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
	if (flow_write(st->p->out_dir, "state_disk_key", disk_key, 32) < 0 ||
	    flow_write(st->p->out_dir, "measurement_secret", msecret, 32) < 0) {
		grpc_stream_finish(s, GRPC_INTERNAL, "storing the keys failed");
		goto out;
	}
	log_info("recover: keys received and written to %s", st->p->out_dir);
	grpc_stream_send(s, (const uint8_t *)"", 0);
	grpc_stream_finish(s, GRPC_OK, NULL);
	st->srv.stop = 1;
out:
	secret_wipe(msecret, sizeof msecret);
	secret_wipe(disk_key, sizeof disk_key);
	secret_wipe(&req, sizeof req);
	kms_free(&kms);
}

int flow_serve_recover(const struct serve_params *p)
{
	struct recover_server st = {.p = p};
	struct grpc_method m = {"/recoverproto.API/Recover", handle_recover, &st};
	char err[256];
	int r = mkdir_parents(p->out_dir, 0700);

	if (r < 0)
		return log_err(r, "serve-recover: mkdir %s", p->out_dir);
	st.srv.lfd = tcp_listen_on(p->listen, err, sizeof err);
	if (st.srv.lfd < 0) {
		log_error("serve-recover: %s", err);
		return st.srv.lfd;
	}
	st.srv.tls.issuer = p->issuer;
	st.srv.methods = &m;
	st.srv.n_methods = 1;
	st.srv.extra_fd = -1;
	log_info("serve-recover: listening on %s (port %d)", p->listen, tcp_local_port(st.srv.lfd));
	return serve_run(&st.srv) == 0 ? 0 : -EIO;
}
