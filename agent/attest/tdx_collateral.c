/* TDX collateral from a folder holding Intel PCS's answers (attest/tdx.h). Validators only:
 * the agent never links it (nothing of the agent calls it; --gc-sections drops it). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/tdx.h"
#include "base/base.h"

const char *const tdx_collateral_names[TDX_COLL_N] = {
    "tcbinfo.json", "tcbinfo-issuer-chain.pem", "qeidentity.json", "qeidentity-issuer-chain.pem",
    "pckcrl.der",   "pckcrl-issuer-chain.pem",	"rootcrl.der",
};

static const size_t coll_max[TDX_COLL_N] = {
    256 << 10, 16 << 10, 64 << 10, 16 << 10, 1 << 20, 16 << 10, 1 << 20,
};

/* A whole file of at most max bytes, NUL-terminated; -EFBIG when larger. */
static int read_bounded(int dirfd, const char *name, size_t max, char **ret, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	char *b;

	if (fd < 0)
		return -errno;
	b = malloc(max + 2);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r = read(fd, b + n, max + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(b);
			close(fd);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(b);
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	b[n] = '\0';
	*ret = b;
	*len = n;
	return 0;
}

int tdx_collateral_load(const char *dir, struct tdx_collateral *c, char *err, size_t errlen)
{
	int dfd, r = 0;

	memset(c, 0, sizeof *c);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
		errbuf_set(err, errlen, "tdx: collateral: %s: %s", dir, strerror(-r));
		return r;
	}
	for (int i = 0; i < TDX_COLL_N; i++) {
		r = read_bounded(dfd, tdx_collateral_names[i], coll_max[i], &c->f[i], &c->len[i]);
		if (r == -EFBIG)
			errbuf_set(err, errlen, "tdx: collateral: %s/%s is larger than %zu bytes",
				   dir, tdx_collateral_names[i], coll_max[i]);
		else if (r == -ENOENT)
			errbuf_set(err, errlen,
				   "tdx: collateral: %s/%s is missing (the folder needs all of "
				   "Intel PCS's answers; docs/tdx.md)",
				   dir, tdx_collateral_names[i]);
		else if (r < 0)
			errbuf_set(err, errlen, "tdx: collateral: %s/%s: %s", dir,
				   tdx_collateral_names[i], strerror(-r));
		else if (!c->len[i]) {
			errbuf_set(err, errlen, "tdx: collateral: %s/%s is empty", dir,
				   tdx_collateral_names[i]);
			r = -EINVAL;
		}
		if (r < 0)
			break;
	}
	close(dfd);
	if (r < 0)
		tdx_collateral_free(c);
	return r;
}

void tdx_collateral_free(struct tdx_collateral *c)
{
	for (int i = 0; i < TDX_COLL_N; i++) {
		free(c->f[i]);
		c->f[i] = NULL;
	}
}

void tdx_collateral_opts(const struct tdx_collateral *c, struct tdx_verify_opts *o)
{
	o->tcb_info = c->f[TDX_COLL_TCBINFO];
	o->tcb_info_len = c->len[TDX_COLL_TCBINFO];
	o->tcb_info_chain = c->f[TDX_COLL_TCBINFO_CHAIN];
	o->tcb_info_chain_len = c->len[TDX_COLL_TCBINFO_CHAIN];
	o->qe_identity = c->f[TDX_COLL_QEID];
	o->qe_identity_len = c->len[TDX_COLL_QEID];
	o->qe_identity_chain = c->f[TDX_COLL_QEID_CHAIN];
	o->qe_identity_chain_len = c->len[TDX_COLL_QEID_CHAIN];
	o->pck_crl = (const uint8_t *)c->f[TDX_COLL_PCKCRL];
	o->pck_crl_len = c->len[TDX_COLL_PCKCRL];
	o->pck_crl_chain = c->f[TDX_COLL_PCKCRL_CHAIN];
	o->pck_crl_chain_len = c->len[TDX_COLL_PCKCRL_CHAIN];
	o->root_crl = (const uint8_t *)c->f[TDX_COLL_ROOTCRL];
	o->root_crl_len = c->len[TDX_COLL_ROOTCRL];
}
