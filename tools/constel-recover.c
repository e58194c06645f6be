/* constel-recover: the CLI's recovery step (spec §6.4). Validates the node's attestation,
 * then sends the master secret (as the cluster-KMS URI) to its recovery server; retries every
 * 5 s while the node cannot be reached, within --timeout.
 *   constel-recover --endpoint HOST:PORT [--master-secret FILE] [--measurements FILE]
 *                   [--attestation V] [--timeout S]
 * Exit codes: 0 the node took the secret, 1 failed (one line says why), 2 usage. */
#include <pb_encode.h>

#include "flow/flow.h"
#include "recover.pb.h"
#include "tool.h"
#include "deps_versions.h"

static const char usage[] =
    "usage: constel-recover --endpoint HOST:PORT [--master-secret FILE] [--measurements FILE]\n"
    "                       [--attestation V] [--timeout S]\n"
    "\n"
    "Sends the cluster's master secret to a node waiting in its recovery server (port 9999),\n"
    "after checking the node's attestation against the expected measurements. The master\n"
    "secret file defaults to ./constellation-mastersecret.json. Retries every 5 s while the\n"
    "node is unreachable, for at most --timeout seconds (default 300).\n"
    "Exit codes: 0 recovered, 1 failed (the last line says why), 2 wrong command line.\n";

int main(int argc, char **argv)
{
	const char *endpoint = NULL, *ms = "constellation-mastersecret.json", *timeout = "300";
	static struct tool_attest att = {.variant = "qemu-vtpm"};
	struct opt opts[] = {
	    {"endpoint", &endpoint, 1}, {"master-secret", &ms, 0}, {"timeout", &timeout, 0},
	    TOOL_ATTEST_OPTS(&att),	{NULL, NULL, 0},
	};
	recoverproto_RecoverMessage msg = recoverproto_RecoverMessage_init_zero;
	struct atls_validator v;
	struct atls_config cfg = {.validators = &v, .n_validators = 1};
	uint8_t key[32], salt[32], buf[1024];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);
	char err[300];
	int64_t end;
	long t;

	log_set_program("constel-recover");
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return fputs(usage, stdout), tool_attest_usage(stdout), EXIT_OK;
	if (argc == 2 && !strcmp(argv[1], "--version"))
		return printf("constel-recover %s\n", CONSTEL_VERSION), EXIT_OK;
	if (cli_opts_parse(argc - 1, argv + 1, opts, err, sizeof err) < 0 ||
	    tool_validator(&att, &v, err, sizeof err) < 0)
		return fprintf(stderr, "constel-recover: %s\n", err), EXIT_USAGE;
	t = strtol(timeout, NULL, 10);
	if (t < 1 || t > 86400)
		return fprintf(stderr, "constel-recover: --timeout: 1 to 86400 seconds\n"),
		       EXIT_USAGE;
	if (master_secret_read(ms, key, salt, err, sizeof err) < 0)
		return log_error("%s", err), EXIT_FAILURE_RUN;
	kms_uri(key, salt, msg.kms_uri, sizeof msg.kms_uri);
	secret_wipe(key, sizeof key);
	secret_wipe(salt, sizeof salt);
	strcpy(msg.storage_uri, "storage://no-store");
	if (!pb_encode(&os, recoverproto_RecoverMessage_fields, &msg))
		return log_error("encoding the request failed"), EXIT_FAILURE_RUN;
	secret_wipe(&msg, sizeof msg);
	for (end = rpc_now_ms() + t * 1000;;) {
		struct grpc_result res;
		int est, r;

		r = flow_call_ex(endpoint, &cfg, "/recoverproto.API/Recover", buf, os.bytes_written,
				 30000, NULL, NULL, &res, &est);
		free(res.response);
		if (r == 0 && res.status == GRPC_OK) {
			secret_wipe(buf, sizeof buf);
			printf("Pushed recovery key to %s\n", endpoint);
			return EXIT_OK;
		}
		/* Only an unreachable node is retried: a handshake that failed (an attestation the
		 * measurements refuse included) is final, as in the CLI. */
		if (r < 0 || res.status != GRPC_UNAVAILABLE || est ||
		    strncmp(res.message, "dial ", 5) || rpc_now_ms() + 5000 > end) {
			secret_wipe(buf, sizeof buf);
			log_error("%s: rpc error: code = %d desc = %s", endpoint,
				  r < 0 ? GRPC_INTERNAL : res.status,
				  r < 0 ? strerror(-r) : res.message);
			return EXIT_FAILURE_RUN;
		}
		log_info("%s unreachable (%s), retrying in 5 s", endpoint, res.message);
		sleep(5);
	}
}
