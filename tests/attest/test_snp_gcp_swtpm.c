/* gcp-sev-snp end to end: swtpm provisioned as GCE's vTPM (vtpm_provision.h), the SNP report
 * from the fake configfs-tsm (tests/attest/fake_sev_tsm.py --signer vcek: VCEK and ASK in the
 * certificate table, signed by the test chain of tests/attest/snp-test/chain.sh), the GCE
 * metadata server faked by tests/cloud/fake_cloud.py and getShieldedInstanceIdentity by
 * tests/cloud/fake_gce_shielded.py, all on 127.0.0.1. The issuer's document is accepted by the
 * gcp-sev-snp validator with the test root; refused with AMD's roots, for another nonce (the
 * report then binds other extraData), and when GCE gives another key for the instance. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/vtpm_fixture.h"

static uint8_t doc[ATLS_DOC_MAX];
static size_t doc_len;

/* The fixture of gcp-sev-snp, and its policy with the test root. */
static int gcp_start(struct vtpm_fx *g, struct vtpm_policy *pol)
{
	static const char cfg[] =
	    "{\"measurements\":{\"15\":{\"expected\":\"000000000000000000"
	    "0000000000000000000000000000000000000000000000\",\"warnOnly\":"
	    "false}},\"bootloaderVersion\":3,\"teeVersion\":0,\"snpVersion\":8,"
	    "\"microcodeVersion\":209,\"amdRootKey\":\"\"}";
	char err[256];

	memset(pol, 0, sizeof *pol);
	if (vtpm_fx_start(g, "gcp-sev-snp", 0x42, 0x17) < 0)
		return -1;
	pol->test_root = g->root;
	pol->api = g->api;
	if (vtpm_policy_init(pol, "gcp-sev-snp", cfg, sizeof cfg - 1, err, sizeof err) < 0) {
		fprintf(stderr, "policy: %s\n", err);
		return -1;
	}
	return 0;
}

static void gcp_stop(struct vtpm_fx *g, struct vtpm_policy *pol)
{
	vtpm_policy_free(pol);
	vtpm_fx_stop(g);
}

static int validate(struct vtpm_policy *pol, const uint8_t *nonce, char *err, size_t errlen)
{
	uint8_t ud[64];
	size_t n;

	return vtpm_validate(pol, doc, doc_len, nonce, 32, ud, sizeof ud, &n, err, errlen);
}

TEST(gcp_sev_snp_document_from_swtpm_and_fakes_accepted_and_refused)
{
	char err[400] = "";
	uint8_t other[32];
	struct vtpm_fx g;
	struct vtpm_policy pol;
	const char *root;

	CHECK(gcp_start(&g, &pol) == 0);
	if (vtpm_fx_issue(&g, doc, sizeof doc, &doc_len, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "issue: %s", err);
	if (validate(&pol, g.nonce, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "valid document refused: %s", err);
	/* Go reads InstanceInfo as snp.InstanceInfo, byte for byte (tests/interop atlspeer) */
	{
		char cmd[512], peer[256] = "";
		FILE *f = popen("tests/interop/build-atlspeer.sh 2>/dev/null", "r");

		CHECK(f && fgets(peer, sizeof peer, f));
		pclose(f);
		peer[strcspn(peer, "\n")] = 0;
		f = fopen(harness_path(g.dir, "doc.json"), "w");
		CHECK(f);
		fwrite(doc, 1, doc_len, f);
		fclose(f);
		snprintf(cmd, sizeof cmd, "%s verify-ii --variant gcp-sev-snp --doc %s >&2", peer,
			 harness_path(g.dir, "doc.json"));
		CHECK(system(cmd) == 0);
	}
	/* another nonce: extraData differs, so does the report's REPORT_DATA */
	memset(other, 0x43, sizeof other);
	CHECK(validate(&pol, other, err, sizeof err) == -EINVAL);
	/* AMD's roots do not trust the test chain */
	root = pol.test_root;
	vtpm_policy_free(&pol);
	pol.test_root = NULL;
	CHECK(pol.check->policy_init(&pol, err, sizeof err) == 0);
	CHECK(validate(&pol, g.nonce, err, sizeof err) == -EINVAL);
	CHECK(fake_has(err, "gcp-sev-snp: snp: chain"));
	vtpm_policy_free(&pol);
	pol.test_root = root;
	CHECK(pol.check->policy_init(&pol, err, sizeof err) == 0);
	/* GCE (another API, on another port) gives another key for the instance */
	{
		char api2[64];
		pid_t pid = vtpm_fx_shielded_other_key(&g, api2, sizeof api2);

		CHECK(pid > 0);
		pol.api = api2;
		CHECK(validate(&pol, g.nonce, err, sizeof err) == -EINVAL);
		pol.api = g.api;
		fake_reap(pid);
		CHECK(fake_has(err, "the AK is not the signing key GCE gives"));
	}
	gcp_stop(&g, &pol);
}
