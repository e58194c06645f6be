/* The nanopb messages: round trips of every message the agent sends or receives, bounds
 * that refuse oversized input, and callback fields. With PROTO_DUMP_DIR set, the encodings
 * are also written there for test_proto_wire.sh to compare with Google's protoc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pb_decode.h>
#include <pb_encode.h>

#include "components.pb.h"
#include "harness.h"
#include "init.pb.h"
#include "join.pb.h"
#include "recover.pb.h"

static size_t encode(const pb_msgdesc_t *fields, const void *msg, uint8_t *buf, size_t cap)
{
	pb_ostream_t os = pb_ostream_from_buffer(buf, cap);

	if (!pb_encode(&os, fields, msg))
		return 0;
	return os.bytes_written;
}

static void dump(const char *name, const uint8_t *buf, size_t len)
{
	const char *dir = getenv("PROTO_DUMP_DIR");
	char path[512];
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof path, "%s/%s.bin", dir, name);
	f = fopen(path, "wb");
	if (f) {
		fwrite(buf, 1, len, f);
		fclose(f);
	}
}

static void fill(uint8_t *b, size_t n, uint8_t start)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(start + i);
}

TEST(proto_join_request_round_trip)
{
	join_IssueJoinTicketRequest m = join_IssueJoinTicketRequest_init_zero, back;
	uint8_t buf[4096];
	size_t n;
	pb_istream_t is;

	strcpy(m.disk_uuid, "0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000001");
	m.certificate_request.size = 300;
	fill(m.certificate_request.bytes, 300, 0x30);
	m.is_control_plane = true;
	m.host_public_key.size = 51;
	fill(m.host_public_key.bytes, 51, 0);
	m.host_certificate_principals_count = 2;
	strcpy(m.host_certificate_principals[0], "10.42.0.2");
	strcpy(m.host_certificate_principals[1], "worker-0");
	n = encode(join_IssueJoinTicketRequest_fields, &m, buf, sizeof buf);
	CHECK(n > 0);
	dump("join_request", buf, n);
	is = pb_istream_from_buffer(buf, n);
	CHECK(pb_decode(&is, join_IssueJoinTicketRequest_fields, &back));
	CHECK(!strcmp(back.disk_uuid, m.disk_uuid));
	CHECK(back.certificate_request.size == 300);
	CHECK_BYTES(back.certificate_request.bytes, m.certificate_request.bytes, 300);
	CHECK(back.is_control_plane && back.host_public_key.size == 51);
	CHECK(back.host_certificate_principals_count == 2);
	CHECK(!strcmp(back.host_certificate_principals[1], "worker-0"));
}

/* Decoding the repeated control-plane files one at a time through the callback. */
struct files_seen {
	int count;
	char names[4][256];
	size_t data_len[4];
};

static bool data_cb(pb_istream_t *s, const pb_field_t *f, void **arg)
{
	size_t *len = *arg;

	(void)f;
	*len = s->bytes_left;
	return pb_read(s, NULL, s->bytes_left);
}

static bool file_cb(pb_istream_t *s, const pb_field_t *f, void **arg)
{
	struct files_seen *seen = *arg;
	join_ControlPlaneFile file = join_ControlPlaneFile_init_zero;

	(void)f;
	if (seen->count >= 4)
		return false;
	file.data.funcs.decode = data_cb;
	file.data.arg = &seen->data_len[seen->count];
	if (!pb_decode(s, join_ControlPlaneFile_fields, &file))
		return false;
	snprintf(seen->names[seen->count], sizeof seen->names[0], "%s", file.name);
	seen->count++;
	return true;
}

static bool write_files_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
	static const char *names[] = {"ca.crt", "ca.key"};

	(void)arg;
	for (int i = 0; i < 2; i++) {
		join_ControlPlaneFile file = join_ControlPlaneFile_init_zero;

		strcpy(file.name, names[i]);
		if (!pb_encode_tag_for_field(s, f) ||
		    !pb_encode_submessage(s, join_ControlPlaneFile_fields, &file))
			return false;
	}
	return true;
}

TEST(proto_join_response_round_trip_with_callbacks)
{
	join_IssueJoinTicketResponse m = join_IssueJoinTicketResponse_init_zero, back;
	struct files_seen seen = {0};
	uint8_t buf[16384];
	size_t n;
	pb_istream_t is;

	m.state_disk_key.size = 32;
	fill(m.state_disk_key.bytes, 32, 1);
	m.measurement_salt.size = 32;
	m.measurement_secret.size = 32;
	fill(m.measurement_secret.bytes, 32, 0x40);
	strcpy(m.token, "abcdef.0123456789abcdef");
	strcpy(m.discovery_token_ca_cert_hash, "sha256:00");
	m.control_plane_files.funcs.encode = write_files_cb;
	n = encode(join_IssueJoinTicketResponse_fields, &m, buf, sizeof buf);
	CHECK(n > 0);
	dump("join_response", buf, n);
	memset(&back, 0, sizeof back);
	back.control_plane_files.funcs.decode = file_cb;
	back.control_plane_files.arg = &seen;
	is = pb_istream_from_buffer(buf, n);
	CHECK(pb_decode(&is, join_IssueJoinTicketResponse_fields, &back));
	CHECK(back.state_disk_key.size == 32 && back.measurement_salt.size == 32);
	CHECK_BYTES(back.measurement_secret.bytes, m.measurement_secret.bytes, 32);
	CHECK(!strcmp(back.token, m.token));
	CHECK(seen.count == 2 && !strcmp(seen.names[1], "ca.key"));
}

TEST(proto_refuses_a_33_byte_key)
{
	/* field 1 (state_disk_key), length 33 */
	uint8_t buf[64] = {0x0a, 33};
	join_IssueRejoinTicketResponse m;
	pb_istream_t is = pb_istream_from_buffer(buf, 35);

	CHECK(!pb_decode(&is, join_IssueRejoinTicketResponse_fields, &m));
	buf[1] = 32;
	is = pb_istream_from_buffer(buf, 34);
	CHECK(pb_decode(&is, join_IssueRejoinTicketResponse_fields, &m));
	CHECK(m.state_disk_key.size == 32);
}

TEST(proto_refuses_overlong_string_and_too_many_entries)
{
	uint8_t buf[512];
	join_IssueJoinTicketRequest m;
	pb_istream_t is;
	size_t n = 0;

	buf[n++] = 0x0a; /* disk_uuid, 64 characters: one more than fits with the NUL */
	buf[n++] = 64;
	memset(buf + n, 'a', 64);
	n += 64;
	is = pb_istream_from_buffer(buf, n);
	CHECK(!pb_decode(&is, join_IssueJoinTicketRequest_fields, &m));
	n = 0;
	for (int i = 0; i < 17; i++) { /* host_certificate_principals, max_count 16 */
		buf[n++] = 0x2a;
		buf[n++] = 1;
		buf[n++] = 'x';
	}
	is = pb_istream_from_buffer(buf, n);
	CHECK(!pb_decode(&is, join_IssueJoinTicketRequest_fields, &m));
}

TEST(proto_rejoin_round_trip)
{
	join_IssueRejoinTicketRequest m = join_IssueRejoinTicketRequest_init_zero, back;
	uint8_t buf[128];
	size_t n;
	pb_istream_t is;

	strcpy(m.disk_uuid, "0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000001");
	n = encode(join_IssueRejoinTicketRequest_fields, &m, buf, sizeof buf);
	CHECK(n == 2 + 36);
	dump("rejoin_request", buf, n);
	is = pb_istream_from_buffer(buf, n);
	CHECK(pb_decode(&is, join_IssueRejoinTicketRequest_fields, &back));
	CHECK(!strcmp(back.disk_uuid, m.disk_uuid));
}

TEST(proto_init_request_round_trip)
{
	init_InitRequest m = init_InitRequest_init_zero;
	static init_InitRequest back;
	uint8_t buf[4096];
	size_t n;
	pb_istream_t is;

	strcpy(m.kms_uri, "kms://cluster-kms?key=AAAA&salt=AAAA");
	strcpy(m.storage_uri, "storage://no-store");
	m.measurement_salt.size = 32;
	strcpy(m.kubernetes_version, "v1.32.9");
	m.init_secret.size = 32;
	fill(m.init_secret.bytes, 32, 0x90);
	strcpy(m.cluster_name, "constellation");
	m.apiserver_cert_sans_count = 1;
	strcpy(m.apiserver_cert_sans[0], "10.42.0.2");
	n = encode(init_InitRequest_fields, &m, buf, sizeof buf);
	CHECK(n > 0);
	dump("init_request", buf, n);
	is = pb_istream_from_buffer(buf, n);
	CHECK(pb_decode(&is, init_InitRequest_fields, &back));
	CHECK(!strcmp(back.kms_uri, m.kms_uri) && back.init_secret.size == 32);
	CHECK(!strcmp(back.apiserver_cert_sans[0], "10.42.0.2"));
}

static bool kubeconfig_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
	const char *kc = *arg;

	return pb_encode_tag_for_field(s, f) &&
	       pb_encode_string(s, (const pb_byte_t *)kc, strlen(kc));
}

/* The three kinds of the Init stream's oneof, each decoded back to the same kind. */
TEST(proto_init_response_kinds)
{
	init_InitResponse m = init_InitResponse_init_zero, back;
	uint8_t buf[2048];
	size_t n;
	pb_istream_t is;

	m.which_kind = init_InitResponse_init_success_tag;
	m.kind.init_success.kubeconfig.funcs.encode = kubeconfig_cb;
	m.kind.init_success.kubeconfig.arg = "apiVersion: v1\n";
	m.kind.init_success.cluster_id.size = 32;
	n = encode(init_InitResponse_fields, &m, buf, sizeof buf);
	CHECK(n > 0);
	dump("init_success", buf, n);
	memset(&back, 0, sizeof back);
	is = pb_istream_from_buffer(buf, n);
	CHECK(pb_decode(&is, init_InitResponse_fields, &back));
	CHECK(back.which_kind == init_InitResponse_init_success_tag);
	CHECK(back.kind.init_success.cluster_id.size == 32);

	memset(&m, 0, sizeof m);
	m.which_kind = init_InitResponse_init_failure_tag;
	strcpy(m.kind.init_failure.error, "invalid init secret");
	n = encode(init_InitResponse_fields, &m, buf, sizeof buf);
	dump("init_failure", buf, n);
	is = pb_istream_from_buffer(buf, n);
	CHECK(pb_decode(&is, init_InitResponse_fields, &back));
	CHECK(back.which_kind == init_InitResponse_init_failure_tag);
	CHECK(!strcmp(back.kind.init_failure.error, "invalid init secret"));

	memset(&m, 0, sizeof m);
	m.which_kind = init_InitResponse_log_tag;
	m.kind.log.log.size = 1024;
	memset(m.kind.log.log.bytes, 'j', 1024);
	n = encode(init_InitResponse_fields, &m, buf, sizeof buf);
	CHECK(n > 1024);
	is = pb_istream_from_buffer(buf, n);
	CHECK(pb_decode(&is, init_InitResponse_fields, &back));
	CHECK(back.which_kind == init_InitResponse_log_tag && back.kind.log.log.size == 1024);
}

TEST(proto_recover_round_trip)
{
	recoverproto_RecoverMessage m = recoverproto_RecoverMessage_init_zero, back;
	uint8_t buf[1024];
	size_t n;
	pb_istream_t is;

	strcpy(m.kms_uri, "kms://cluster-kms?key=AAAA&salt=AAAA");
	strcpy(m.storage_uri, "storage://no-store");
	n = encode(recoverproto_RecoverMessage_fields, &m, buf, sizeof buf);
	CHECK(n > 0 && buf[0] == 0x1a); /* field 3, length-delimited */
	dump("recover", buf, n);
	is = pb_istream_from_buffer(buf, n);
	CHECK(pb_decode(&is, recoverproto_RecoverMessage_fields, &back));
	CHECK(!strcmp(back.storage_uri, "storage://no-store"));
}
