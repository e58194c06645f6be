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

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	join_IssueJoinTicketRequest req = join_IssueJoinTicketRequest_init_zero;
	uint8_t buf[256];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);
	struct rusage ru;
	int64_t *lat;
	int n;

	if (argc != 3 || (n = atoi(argv[2])) < 1)
		return fprintf(stderr, "usage: join_bench HOST:PORT N\n"), 2;
	lat = calloc((size_t)n, sizeof *lat);
	strcpy(req.disk_uuid, "bench");
	req.host_public_key.size = 3;
	memcpy(req.host_public_key.bytes, "key", 3);
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
