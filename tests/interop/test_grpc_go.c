/* Interop: our gRPC client and server over aTLS against grpc-go (Debian's 1.33, in
 * tests/interop/atlspeer) in the join shape, with messages from our nanopb-proto files on
 * our side and protoc-gen-go code from the same .proto files on the Go side. */
#include <errno.h>
#include <time.h>

#include <bearssl.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "atls/atls.h"
#include "attest/attest.h"
#include "harness.h"
#include "interop/peer.h"
#include "join.pb.h"
#include "rpc/rpc.h"

static const char uuid[] = "0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000001";

static size_t join_request(uint8_t *buf, size_t cap)
{
	join_IssueJoinTicketRequest m = join_IssueJoinTicketRequest_init_zero;
	pb_ostream_t os = pb_ostream_from_buffer(buf, cap);

	strcpy(m.disk_uuid, uuid);
	m.host_public_key.size = 3;
	memcpy(m.host_public_key.bytes, "key", 3);
	m.host_certificate_principals_count = 1;
	strcpy(m.host_certificate_principals[0], "10.42.0.2");
	return pb_encode(&os, join_IssueJoinTicketRequest_fields, &m) ? os.bytes_written : 0;
}

/* One IssueJoinTicket from our client over aTLS to a Go join-server started with args. */
static int c_join(char *const args[], struct grpc_result *res, struct peer *pr, int *st)
{
	struct atls_config cfg = {.issuer = &attest_dummy_issuer};
	struct atls_conn *c;
	struct rpc_io io;
	uint8_t req[512];
	size_t n = join_request(req, sizeof req);
	int port, fd, r;

	if (!n || peer_start(pr, args) < 0 || peer_line(pr) < 0 ||
	    sscanf(pr->line, "LISTEN %d", &port) != 1)
		return -100;
	fd = tcp_connect(port);
	if (fd < 0 || atls_client_new(&cfg, fd, &c) < 0)
		return -101;
	rpc_io_atls(&io, c);
	r = grpc_unary_call(&io, fd, "127.0.0.1", "/join.API/IssueJoinTicket", req, n, 10000, res);
	atls_free(c);
	close(fd);
	if (peer_line(pr) < 0)
		snprintf(pr->line, sizeof pr->line, "(no line)");
	*st = peer_wait(pr);
	return r;
}

static bool count_files(pb_istream_t *s, const pb_field_t *f, void **arg)
{
	join_ControlPlaneFile file = join_ControlPlaneFile_init_zero;

	(void)f;
	(*(int *)*arg)++;
	return pb_decode(s, join_ControlPlaneFile_fields, &file);
}

TEST(interop_c_join_client_gets_ticket_from_grpc_go)
{
	char *args[] = {"atlspeer", "join-server", NULL};
	struct grpc_result r;
	struct peer pr;
	join_IssueJoinTicketResponse resp;
	uint8_t want[32];
	br_sha256_context h;
	pb_istream_t is;
	int st, files = 0;

	CHECK(c_join(args, &r, &pr, &st) == 0);
	if (r.status != GRPC_OK)
		harness_fail(__FILE__, __LINE__, "status %d: %s; go: %s", r.status, r.message,
			     pr.line);
	CHECK(r.status == GRPC_OK && st == 0);
	CHECK(strstr(pr.line, "\"disk_uuid\":\"0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000001\"") != NULL);
	CHECK(strstr(pr.line, "\"principals\":[\"10.42.0.2\"]") != NULL);
	memset(&resp, 0, sizeof resp);
	resp.control_plane_files.funcs.decode = count_files;
	resp.control_plane_files.arg = &files;
	is = pb_istream_from_buffer(r.response, r.response_len);
	CHECK(pb_decode(&is, join_IssueJoinTicketResponse_fields, &resp));
	free(r.response);
	br_sha256_init(&h);
	br_sha256_update(&h, "key-", 4);
	br_sha256_update(&h, uuid, strlen(uuid));
	br_sha256_out(&h, want);
	CHECK(resp.state_disk_key.size == 32);
	CHECK_BYTES(resp.state_disk_key.bytes, want, 32);
	CHECK(!strcmp(resp.token, "abcdef.0123456789abcdef") && files == 2);
}

TEST(interop_c_join_client_sees_internal_from_grpc_go)
{
	char *args[] = {"atlspeer", "join-server", "--fail", NULL};
	struct grpc_result r;
	struct peer pr;
	int st;

	CHECK(c_join(args, &r, &pr, &st) == 0);
	CHECK(r.status == GRPC_INTERNAL);
	CHECK(!strcmp(r.message, "getting data key: key service unavailable"));
}

/* Our join-service side: answers IssueJoinTicket with a fixed key. */
static int handled;

static void issue(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	join_IssueJoinTicketRequest in;
	join_IssueJoinTicketResponse out = join_IssueJoinTicketResponse_init_zero;
	pb_istream_t is = pb_istream_from_buffer(req, len);
	uint8_t buf[512];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);

	(void)ctx;
	handled++;
	if (!pb_decode(&is, join_IssueJoinTicketRequest_fields, &in) || !in.disk_uuid[0]) {
		grpc_stream_finish(s, GRPC_INTERNAL, "bad request");
		return;
	}
	out.state_disk_key.size = 32;
	memset(out.state_disk_key.bytes, 0xab, 32);
	strcpy(out.token, in.disk_uuid); /* echo, so the test sees the request arrived whole */
	pb_encode(&os, join_IssueJoinTicketResponse_fields, &out);
	grpc_stream_send(s, buf, os.bytes_written);
	grpc_stream_finish(s, GRPC_OK, NULL);
}

static const struct grpc_method methods[] = {{"/join.API/IssueJoinTicket", issue, NULL}};

TEST(interop_grpc_go_client_joins_c_server)
{
	struct atls_config cfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	char *args[] = {"atlspeer", "join-client", "--addr", NULL, "--disk-uuid", "disk-1", NULL};
	char addr[64];
	struct peer pr;
	struct atls_conn *c;
	struct grpc_server_conn *sv;
	struct rpc_io io;
	struct pollfd pfd;
	int port, lfd, fd, st;
	int64_t start;

	lfd = tcp_listen(&port);
	CHECK(lfd >= 0);
	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	args[3] = addr;
	CHECK(peer_start(&pr, args) == 0);
	pfd = (struct pollfd){lfd, POLLIN, 0};
	CHECK(poll(&pfd, 1, 10000) == 1);
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	CHECK(fd >= 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	CHECK(atls_server_new(&cfg, fd, &c) == 0);
	rpc_io_atls(&io, c);
	CHECK(grpc_server_conn_new(&io, methods, 1, &sv) == 0);
	handled = 0;
	start = rpc_now_ms();
	while (rpc_now_ms() - start < 10000) {
		pfd = (struct pollfd){fd, grpc_server_conn_events(sv), 0};
		if (grpc_server_conn_step(sv) != 0)
			break;
		poll(&pfd, 1, 10);
	}
	grpc_server_conn_free(sv);
	atls_free(c);
	close(fd);
	if (peer_line(&pr) < 0)
		snprintf(pr.line, sizeof pr.line, "(no line)");
	st = peer_wait(&pr);
	if (st != 0)
		harness_fail(__FILE__, __LINE__, "go: %s (exit %d)", pr.line, st);
	CHECK(st == 0 && handled == 1);
	CHECK(strstr(pr.line, "\"token\":\"disk-1\"") != NULL);
	CHECK(strstr(pr.line, "abababababababababababababababababababababababababababababababab") !=
	      NULL);
}
