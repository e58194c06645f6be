/* Test helper: tests/cloud/fake_cloud.py --csp azure on 127.0.0.1 (a free port, fake_proc.h),
 * as Azure IMDS with THIM and the VM's tags, for azure-sev-snp's tests. Run from the
 * repository's top (as tests/run.sh does). */
#ifndef CONSTEL_TEST_AZURE_IMDS_FAKE_H
#define CONSTEL_TEST_AZURE_IMDS_FAKE_H

#include <stdio.h>
#include <string.h>

#include "fake_proc.h"

struct imds_fake {
	pid_t pid;
	char base[64]; /* "http://127.0.0.1:PORT" */
};

static inline void imds_fake_stop(struct imds_fake *f)
{
	fake_reap(f->pid);
	f->pid = 0;
}

/* THIM serves the PEM files vcek and chain (NULL: THIM answers 404); maa, when not NULL, is
 * the VM's constellation-maa-url tag. 0 once the fake listens. */
static inline int imds_fake_start(struct imds_fake *f, const char *vcek, const char *chain,
				  const char *maa)
{
	char v[640], c[640], tag[256];
	int port;

	snprintf(v, sizeof v, "thim_vcek=%s", vcek ? vcek : "");
	snprintf(c, sizeof c, "thim_chain=%s", chain ? chain : "");
	snprintf(tag, sizeof tag, "maa_url=%s", maa ? maa : "");
	f->pid =
	    fake_serve((char *[]){"python3", "tests/cloud/fake_cloud.py", "--csp", "azure",
				  "--listen", NULL, "--set", v, "--set", c, "--set", tag, NULL},
		       5, "127.0.0.1:%d", &port);
	if (f->pid < 0) {
		f->pid = 0;
		return -1;
	}
	snprintf(f->base, sizeof f->base, "http://127.0.0.1:%d", port);
	return 0;
}

#endif
