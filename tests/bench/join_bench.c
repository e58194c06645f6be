/* make bench: our join client's latency and memory, for the comparison with Go's client in
 * join-latency.sh. N sequential fresh connections to the same Go join service, each a full
 * aTLS handshake (new key, certificate, attestation) and one IssueJoinTicket. Built like the
 * shipped agent (static musl, -Os) so the numbers are the agent's.
 *   join_bench HOST:PORT N   prints "BENCH median_us=... maxrss_kb=..." */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <pb_encode.h>

#include "attest/attest.h"
#include "flow/flow.h"
#include "join.pb.h"
#include "kube/kube.h"

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	join_IssueJoinTicketRequest req = join_IssueJoinTicketRequest_init_zero;
	uint8_t buf[1024];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);
	struct rusage ru;
	int64_t *lat;
	int n;

	if (argc != 3 || (n = atoi(argv[2])) < 1)
		return fprintf(stderr, "usage: join_bench HOST:PORT N\n"), 2;
	lat = calloc((size_t)n, sizeof *lat);
	struct p256_key key;
	struct ssh_key ssh;
	size_t csr_len;

	/* A whole request as a node makes it: a signed CSR and an SSH host key (made once). */
	strcpy(req.disk_uuid, "bench");
	if (p256_generate(&key) < 0 || ssh_key_generate(&ssh) < 0 ||
	    csr_build(&key, "bench-node", "10.0.0.1", req.certificate_request.bytes,
		      sizeof req.certificate_request.bytes, &csr_len) < 0)
		return 1;
	req.certificate_request.size = (pb_size_t)csr_len;
	req.host_public_key.size = (pb_size_t)ssh_pubkey_wire(ssh.pk, req.host_public_key.bytes);
	req.host_certificate_principals_count = 1;
	strcpy(req.host_certificate_principals[0], "10.0.0.1");
	if (!lat || !pb_encode(&os, join_IssueJoinTicketRequest_fields, &req))
		return 1;
	log_set_level(LOG_ERROR);
	for (int i = 0; i < n; i++) {
		struct grpc_result res;
		int64_t start = rpc_now_ms() * 1000;
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		start = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
		if (flow_call(argv[1], &attest_dummy_issuer, "/join.API/IssueJoinTicket", buf,
			      os.bytes_written, 30000, &res) < 0 ||
		    res.status != GRPC_OK) {
			fprintf(stderr, "join_bench: call %d: status %d: %s\n", i, res.status,
				res.message);
			return 1;
		}
		free(res.response);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		lat[i] = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - start;
	}
	qsort(lat, (size_t)n, sizeof *lat, cmp);
	getrusage(RUSAGE_SELF, &ru);
	printf("BENCH median_us=%lld maxrss_kb=%ld\n", (long long)lat[n / 2], ru.ru_maxrss);
	free(lat);
	return 0;
}
