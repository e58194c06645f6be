/* The TPM on tpm2-tss SYS (tpm.h). Commands authorise with the empty password (TPM2_RS_PW),
 * as go-tpm-tools does for the owner-hierarchy AK, so the TSS needs no crypto of its own. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bearssl.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_sys.h>
#include <tss2/tss2_tcti_device.h>
#include <tss2/tss2_tcti_swtpm.h>

#include "base/base.h"
#include "base/eventlog.h"
#include "tpm.h"

struct tpm {
	TSS2_TCTI_CONTEXT *tcti;
	TSS2_SYS_CONTEXT *sys;
	uint32_t ak;	  /* the handle tpm_quote signs with */
	int ak_transient; /* ak is a transient object to flush */
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* TPM_RC_RETRY, YIELDED and TESTING ask for the same command again: at most 10 times,
 * 10 ms apart. */
static int again(TSS2_RC rc, int *tries)
{
	if ((rc != TPM2_RC_RETRY && rc != TPM2_RC_YIELDED && rc != TPM2_RC_TESTING) ||
	    ++*tries > 10)
		return 0;
	nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	return 1;
}
#define CALL(rc, expr)                        \
	do {                                  \
		int tries_ = 0;               \
		do                            \
			(rc) = (expr);        \
		while (again((rc), &tries_)); \
	} while (0)

/* Logs a command's duration at debug level, and its failure as one line in err. */
static int done(const char *what, TSS2_RC rc, int64_t start, char *err, size_t errlen)
{
	log_debug("tpm: %s: %lld us, rc 0x%x", what, (long long)(now_us() - start), rc);
	if (rc == TSS2_RC_SUCCESS)
		return 0;
	errbuf_set(err, errlen, "tpm: %s failed: TPM rc 0x%x", what, rc);
	return -EIO;
}

size_t tpm_alg_digest_len(uint16_t alg)
{
	switch (alg) {
	case TPM_ALG_SHA1:
		return 20;
	case TPM_ALG_SHA256:
		return 32;
	case TPM_ALG_SHA384:
		return 48;
	case TPM_ALG_SHA512:
		return 64;
	}
	return 0;
}

int tpm_open(const struct tcti_spec *spec, struct tpm **ret, char *err, size_t errlen)
{
	struct tpm *t = calloc(1, sizeof *t);
	TSS2_ABI_VERSION abi = TSS2_ABI_VERSION_CURRENT;
	char conf[TCTI_PATH_MAX + TCTI_HOST_MAX + 32];
	size_t size = 0;
	TSS2_RC rc;

	if (!t)
		return -ENOMEM;
	if (spec->kind == TCTI_DEVICE) {
		snprintf(conf, sizeof conf, "%s", spec->path);
		rc = Tss2_Tcti_Device_Init(NULL, &size, conf);
	} else {
		snprintf(conf, sizeof conf, "host=%s,port=%u", spec->host, spec->port);
		rc = Tss2_Tcti_Swtpm_Init(NULL, &size, conf);
	}
	t->tcti = rc == TSS2_RC_SUCCESS ? calloc(1, size) : NULL;
	if (!t->tcti) {
		free(t);
		return errbuf_set(err, errlen, "tpm: %s: TCTI unavailable (rc 0x%x)", conf, rc);
	}
	rc = spec->kind == TCTI_DEVICE ? Tss2_Tcti_Device_Init(t->tcti, &size, conf)
				       : Tss2_Tcti_Swtpm_Init(t->tcti, &size, conf);
	if (rc != TSS2_RC_SUCCESS) {
		free(t->tcti);
		free(t);
		return errbuf_set(err, errlen, "tpm: %s: cannot open (rc 0x%x)", conf, rc);
	}
	size = Tss2_Sys_GetContextSize(0);
	t->sys = calloc(1, size);
	if (!t->sys || Tss2_Sys_Initialize(t->sys, size, t->tcti, &abi) != TSS2_RC_SUCCESS) {
		tpm_close(t);
		return errbuf_set(err, errlen, "tpm: SYS context setup failed");
	}
	t->ak = TPM_AK_HANDLE;
	*ret = t;
	return 0;
}

static void flush_ak(struct tpm *t)
{
	int64_t start = now_us();

	if (!t->ak_transient)
		return;
	done("FlushContext(AK)", Tss2_Sys_FlushContext(t->sys, t->ak), start, NULL, 0);
	t->ak_transient = 0;
	t->ak = TPM_AK_HANDLE;
}

void tpm_close(struct tpm *t)
{
	if (!t)
		return;
	if (t->sys) {
		flush_ak(t);
		Tss2_Sys_Finalize(t->sys);
		free(t->sys);
	}
	if (t->tcti) {
		Tss2_Tcti_Finalize(t->tcti);
		free(t->tcti);
	}
	free(t);
}

static uint32_t bitmap(const TPMS_PCR_SELECTION *s)
{
	uint32_t m = 0;

	for (int i = 0; i < s->sizeofSelect && i < 3; i++)
		m |= (uint32_t)s->pcrSelect[i] << (8 * i);
	return m;
}

static void selection(TPML_PCR_SELECTION *sel, uint16_t alg, uint32_t mask)
{
	memset(sel, 0, sizeof *sel);
	sel->count = 1;
	sel->pcrSelections[0].hash = alg;
	sel->pcrSelections[0].sizeofSelect = 3;
	for (int i = 0; i < 3; i++)
		sel->pcrSelections[0].pcrSelect[i] = (uint8_t)(mask >> (8 * i));
}

int tpm_banks(struct tpm *t, struct tpm_bank *banks, size_t cap, size_t *n)
{
	TPMS_CAPABILITY_DATA cap_data;
	TPMI_YES_NO more;
	int64_t start = now_us();
	char err[128];
	size_t k = 0;
	TSS2_RC rc;

	CALL(rc, Tss2_Sys_GetCapability(t->sys, NULL, TPM2_CAP_PCRS, 0, 1, &more, &cap_data, NULL));
	if (done("GetCapability(PCRS)", rc, start, err, sizeof err) < 0)
		return log_err(-EIO, "%s", err);
	for (uint32_t i = 0; i < cap_data.data.assignedPCR.count; i++) {
		const TPMS_PCR_SELECTION *s = &cap_data.data.assignedPCR.pcrSelections[i];
		uint32_t m = bitmap(s);

		if (!m || !tpm_alg_digest_len(s->hash))
			continue; /* empty or unknown banks are skipped, as go-tpm-tools does */
		if (k == cap)
			break;
		banks[k++] = (struct tpm_bank){s->hash, m, tpm_alg_digest_len(s->hash)};
	}
	*n = k;
	return 0;
}

int tpm_pcr_read(struct tpm *t, uint16_t alg, uint32_t mask,
		 uint8_t values[TPM_PCRS][TPM_DIGEST_MAX], size_t *digest_len)
{
	size_t dlen = tpm_alg_digest_len(alg);
	uint32_t left = mask;
	char err[128];

	if (!dlen)
		return -EINVAL;
	for (int rounds = 0; left && rounds < TPM_PCRS; rounds++) {
		TPML_PCR_SELECTION in, out;
		TPML_DIGEST vals;
		UINT32 counter;
		int64_t start = now_us();
		uint32_t got, bit = 0;
		TSS2_RC rc;

		selection(&in, alg, left);
		CALL(rc, Tss2_Sys_PCR_Read(t->sys, NULL, &in, &counter, &out, &vals, NULL));
		if (done("PCR_Read", rc, start, err, sizeof err) < 0)
			return log_err(-EIO, "%s", err);
		got = out.count ? bitmap(&out.pcrSelections[0]) & left : 0;
		if (!got)
			return log_err(-EIO, "tpm: PCR_Read returned no PCR of 0x%06x", left);
		for (uint32_t i = 0; i < vals.count; i++) {
			while (bit < TPM_PCRS && !(got & (1u << bit)))
				bit++;
			if (bit == TPM_PCRS || vals.digests[i].size != dlen)
				return log_err(-EIO,
					       "tpm: PCR_Read answer does not match its selection");
			memcpy(values[bit], vals.digests[i].buffer, dlen);
			bit++;
		}
		left &= ~got;
	}
	if (left)
		return log_err(-EIO, "tpm: PCRs 0x%06x could not be read", left);
	*digest_len = dlen;
	return 0;
}

static const TSS2L_SYS_AUTH_COMMAND pw_auth = {
    .count = 1,
    .auths = {{.sessionHandle = TPM2_RS_PW}},
};

int tpm_pcr_event(struct tpm *t, uint32_t pcr, const void *data, size_t len)
{
	TPM2B_EVENT ev = {.size = (UINT16)len};
	TPML_DIGEST_VALUES digests;
	TSS2L_SYS_AUTH_RESPONSE rsp;
	int64_t start = now_us();
	char err[128];
	TSS2_RC rc;

	if (len > sizeof ev.buffer || pcr >= TPM_PCRS)
		return -EINVAL;
	memcpy(ev.buffer, data, len);
	CALL(rc, Tss2_Sys_PCR_Event(t->sys, pcr, &pw_auth, &ev, &digests, &rsp));
	secret_wipe(&ev, sizeof ev);
	if (done("PCR_Event", rc, start, err, sizeof err) < 0)
		return log_err(-EIO, "%s", err);
	return 0;
}

/* The AK template of spec §2.4 (go-tpm-tools AKTemplateRSA). */
static void ak_template(TPMT_PUBLIC *p)
{
	memset(p, 0, sizeof *p);
	p->type = TPM2_ALG_RSA;
	p->nameAlg = TPM2_ALG_SHA256;
	p->objectAttributes = TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_RESTRICTED |
			      TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
			      TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH;
	p->parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
	p->parameters.rsaDetail.scheme.scheme = TPM2_ALG_RSASSA;
	p->parameters.rsaDetail.scheme.details.rsassa.hashAlg = TPM2_ALG_SHA256;
	p->parameters.rsaDetail.keyBits = 2048;
	p->parameters.rsaDetail.exponent = 0;
}

/* Everything but the unique field equals the template (go-tpm's MatchesTemplate). */
static int matches_template(const TPMT_PUBLIC *p)
{
	TPMT_PUBLIC t;

	ak_template(&t);
	return p->type == t.type && p->nameAlg == t.nameAlg &&
	       p->objectAttributes == t.objectAttributes && p->authPolicy.size == 0 &&
	       p->parameters.rsaDetail.symmetric.algorithm == TPM2_ALG_NULL &&
	       p->parameters.rsaDetail.scheme.scheme == TPM2_ALG_RSASSA &&
	       p->parameters.rsaDetail.scheme.details.rsassa.hashAlg == TPM2_ALG_SHA256 &&
	       p->parameters.rsaDetail.keyBits == 2048 && p->parameters.rsaDetail.exponent == 0;
}

static int marshal_public(const TPMT_PUBLIC *p, uint8_t *out, size_t cap, size_t *len)
{
	size_t off = 0;

	if (Tss2_MU_TPMT_PUBLIC_Marshal(p, out, cap, &off) != TSS2_RC_SUCCESS)
		return -ENOBUFS;
	*len = off;
	return 0;
}

int tpm_ak(struct tpm *t, uint8_t *pub, size_t cap, size_t *pub_len)
{
	TPM2B_PUBLIC out = {0}, in = {0};
	TPM2B_NAME name = {.size = sizeof name.name}, qname = {.size = sizeof qname.name};
	TPM2B_SENSITIVE_CREATE sens = {0};
	TPM2B_DATA outside = {0};
	TPML_PCR_SELECTION pcrs = {0};
	TPM2B_CREATION_DATA cdata = {0};
	TPM2B_DIGEST chash = {.size = sizeof chash.buffer};
	TPMT_TK_CREATION ticket = {0};
	TSS2L_SYS_AUTH_RESPONSE rsp;
	TPM2_HANDLE obj;
	int64_t start = now_us();
	char err[128];
	TSS2_RC rc;
	int have;

	CALL(rc, Tss2_Sys_ReadPublic(t->sys, TPM_AK_HANDLE, NULL, &out, &name, &qname, NULL));
	log_debug("tpm: ReadPublic(0x%08x): %lld us, rc 0x%x", TPM_AK_HANDLE,
		  (long long)(now_us() - start), rc);
	have = rc == TSS2_RC_SUCCESS;
	if (have && matches_template(&out.publicArea))
		return marshal_public(&out.publicArea, pub, cap, pub_len);
	if (have) {
		log_info("tpm: the key at 0x%08x is not the attestation key template: replacing it",
			 TPM_AK_HANDLE);
		start = now_us();
		CALL(rc, Tss2_Sys_EvictControl(t->sys, TPM2_RH_OWNER, TPM_AK_HANDLE, &pw_auth,
					       TPM_AK_HANDLE, &rsp));
		if (done("EvictControl(old AK)", rc, start, err, sizeof err) < 0)
			return log_err(-EIO, "%s", err);
	}
	ak_template(&in.publicArea);
	memset(&out, 0, sizeof out);
	name.size = sizeof name.name;
	start = now_us();
	CALL(rc, Tss2_Sys_CreatePrimary(t->sys, TPM2_RH_OWNER, &pw_auth, &sens, &in, &outside,
					&pcrs, &obj, &out, &cdata, &chash, &ticket, &name, &rsp));
	if (done("CreatePrimary(AK)", rc, start, err, sizeof err) < 0)
		return log_err(-EIO, "%s", err);
	start = now_us();
	CALL(rc, Tss2_Sys_EvictControl(t->sys, TPM2_RH_OWNER, obj, &pw_auth, TPM_AK_HANDLE, &rsp));
	done("EvictControl(persist AK)", rc, start, err, sizeof err);
	start = now_us();
	done("FlushContext", Tss2_Sys_FlushContext(t->sys, obj), start, NULL, 0);
	if (rc != TSS2_RC_SUCCESS)
		return log_err(-EIO, "%s", err);
	log_info("tpm: attestation key created at 0x%08x", TPM_AK_HANDLE);
	return marshal_public(&out.publicArea, pub, cap, pub_len);
}

int tpm_quote(struct tpm *t, uint16_t alg, uint32_t mask, const uint8_t *qdata, size_t qlen,
	      struct tpm_quote *q)
{
	TPM2B_DATA qd = {.size = (UINT16)qlen};
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
	TPML_PCR_SELECTION sel;
	TPM2B_ATTEST quoted = {.size = sizeof quoted.attestationData};
	TPMT_SIGNATURE sig;
	TPMS_ATTEST att;
	TSS2L_SYS_AUTH_RESPONSE rsp;
	br_hash_compat_context h;
	const br_hash_class *hc;
	uint8_t digest[64];
	int64_t start = now_us();
	size_t off = 0;
	char err[128];
	TSS2_RC rc;
	int r;

	if (qlen > sizeof qd.buffer)
		return -EINVAL;
	memcpy(qd.buffer, qdata, qlen);
	selection(&sel, alg, mask);
	CALL(rc, Tss2_Sys_Quote(t->sys, t->ak, &pw_auth, &qd, &scheme, &sel, &quoted, &sig, &rsp));
	if (done("Quote", rc, start, err, sizeof err) < 0)
		return log_err(-EIO, "%s", err);
	if (quoted.size > sizeof q->attest ||
	    Tss2_MU_TPMT_SIGNATURE_Marshal(&sig, q->sig, sizeof q->sig, &off) != TSS2_RC_SUCCESS)
		return log_err(-ENOBUFS, "tpm: quote too large");
	q->alg = alg;
	q->pcrs = mask;
	memcpy(q->attest, quoted.attestationData, quoted.size);
	q->attest_len = quoted.size;
	q->sig_len = off;
	r = tpm_pcr_read(t, alg, mask, q->values, &q->digest_len);
	if (r < 0)
		return r;
	/* The values must be the ones quoted: pcrDigest = H_sig(PCR[i0] || PCR[i1] || ...). */
	off = 0;
	if (Tss2_MU_TPMS_ATTEST_Unmarshal(q->attest, q->attest_len, &off, &att) !=
		TSS2_RC_SUCCESS ||
	    att.type != TPM2_ST_ATTEST_QUOTE || !(hc = eventlog_hash(sig.signature.rsassa.hash)))
		return log_err(-EIO, "tpm: the quote does not parse");
	hc->init(&h.vtable);
	for (int i = 0; i < TPM_PCRS; i++)
		if (mask & (1u << i))
			hc->update(&h.vtable, q->values[i], q->digest_len);
	hc->out(&h.vtable, digest);
	if (att.attested.quote.pcrDigest.size != tpm_alg_digest_len(sig.signature.rsassa.hash) ||
	    memcmp(att.attested.quote.pcrDigest.buffer, digest, att.attested.quote.pcrDigest.size))
		return log_err(-EAGAIN, "tpm: a PCR changed between quote and read");
	return 0;
}

int tpm_nv_read(struct tpm *t, uint32_t index, uint8_t *buf, size_t cap, size_t *len, char *err,
		size_t errlen)
{
	TPM2B_NV_PUBLIC pub = {0};
	TPM2B_NAME name = {.size = sizeof name.name};
	TPMS_CAPABILITY_DATA cd;
	TPMI_YES_NO more;
	TSS2L_SYS_AUTH_RESPONSE rsp;
	uint32_t chunk = 512, auth;
	int64_t start = now_us();
	size_t size, off = 0;
	TSS2_RC rc;

	CALL(rc, Tss2_Sys_NV_ReadPublic(t->sys, index, NULL, &pub, &name, NULL));
	log_debug("tpm: NV_ReadPublic(0x%08x): %lld us, rc 0x%x", index,
		  (long long)(now_us() - start), rc);
	if (rc != TSS2_RC_SUCCESS)
		return errbuf_set(err, errlen, "tpm: NV index 0x%08x is not defined (rc 0x%x)",
				  index, rc),
		       -ENOENT;
	size = pub.nvPublic.dataSize;
	if (size > cap)
		return errbuf_set(err, errlen,
				  "tpm: NV index 0x%08x holds %zu bytes, more than %zu", index,
				  size, cap),
		       -ENOBUFS;
	auth = pub.nvPublic.attributes & TPMA_NV_OWNERREAD ? TPM2_RH_OWNER : index;
	start = now_us();
	CALL(rc, Tss2_Sys_GetCapability(t->sys, NULL, TPM2_CAP_TPM_PROPERTIES,
					TPM2_PT_NV_BUFFER_MAX, 1, &more, &cd, NULL));
	if (done("GetCapability(NV_BUFFER_MAX)", rc, start, NULL, 0) == 0 &&
	    cd.data.tpmProperties.count == 1 &&
	    cd.data.tpmProperties.tpmProperty[0].property == TPM2_PT_NV_BUFFER_MAX &&
	    cd.data.tpmProperties.tpmProperty[0].value)
		chunk = cd.data.tpmProperties.tpmProperty[0].value;
	if (chunk > sizeof((TPM2B_MAX_NV_BUFFER *)0)->buffer)
		chunk = sizeof((TPM2B_MAX_NV_BUFFER *)0)->buffer;
	while (off < size) {
		TPM2B_MAX_NV_BUFFER data = {0};
		UINT16 n = (UINT16)(size - off < chunk ? size - off : chunk);

		start = now_us();
		CALL(rc,
		     Tss2_Sys_NV_Read(t->sys, auth, index, &pw_auth, n, (UINT16)off, &data, &rsp));
		if (done("NV_Read", rc, start, err, errlen) < 0)
			return -EIO;
		if (data.size != n)
			return errbuf_set(err, errlen,
					  "tpm: NV_Read of 0x%08x returned %u bytes, "
					  "asked %u",
					  index, data.size, n);
		memcpy(buf + off, data.buffer, n);
		off += n;
	}
	*len = size;
	return 0;
}

/* Azure's HCL AK: read, never made (it is the HCL's, bound by its report). */
static int ak_hcl(struct tpm *t, uint8_t *pub, size_t cap, size_t *pub_len, char *err,
		  size_t errlen)
{
	TPM2B_PUBLIC out = {0};
	TPM2B_NAME name = {.size = sizeof name.name}, qname = {.size = sizeof qname.name};
	int64_t start = now_us();
	TSS2_RC rc;

	CALL(rc, Tss2_Sys_ReadPublic(t->sys, TPM_HCL_AK_HANDLE, NULL, &out, &name, &qname, NULL));
	log_debug("tpm: ReadPublic(0x%08x): %lld us, rc 0x%x", TPM_HCL_AK_HANDLE,
		  (long long)(now_us() - start), rc);
	if (rc != TSS2_RC_SUCCESS)
		return errbuf_set(err, errlen,
				  "tpm: no attestation key at persistent handle 0x%08x (the HCL's "
				  "AK; rc 0x%x)",
				  TPM_HCL_AK_HANDLE, rc),
		       -ENOENT;
	if (marshal_public(&out.publicArea, pub, cap, pub_len) < 0)
		return errbuf_set(err, errlen, "tpm: the HCL AK's public area is too large");
	t->ak = TPM_HCL_AK_HANDLE;
	return 0;
}

/* GCE's AK: CreatePrimary in the endorsement hierarchy from the template in NV. */
static int ak_gce(struct tpm *t, uint8_t *pub, size_t cap, size_t *pub_len, char *err,
		  size_t errlen)
{
	uint8_t tmpl[TPM_PUBLIC_MAX];
	size_t tlen, off = 0;
	TPM2B_PUBLIC in = {0}, out = {0};
	TPM2B_NAME name = {.size = sizeof name.name};
	TPM2B_SENSITIVE_CREATE sens = {0};
	TPM2B_DATA outside = {0};
	TPML_PCR_SELECTION pcrs = {0};
	TPM2B_CREATION_DATA cdata = {0};
	TPM2B_DIGEST chash = {.size = sizeof chash.buffer};
	TPMT_TK_CREATION ticket = {0};
	TSS2L_SYS_AUTH_RESPONSE rsp;
	TPM2_HANDLE obj;
	int64_t start;
	TSS2_RC rc;
	int r;

	r = tpm_nv_read(t, TPM_GCE_AK_TEMPLATE_NV, tmpl, sizeof tmpl, &tlen, err, errlen);
	if (r < 0)
		return r;
	/* bytes after the TPMT_PUBLIC are ignored, as go-tpm's DecodePublic does */
	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(tmpl, tlen, &off, &in.publicArea) != TSS2_RC_SUCCESS)
		return errbuf_set(
		    err, errlen, "tpm: NV 0x%08x does not hold a TPMT_PUBLIC (the GCE AK template)",
		    TPM_GCE_AK_TEMPLATE_NV);
	start = now_us();
	CALL(rc, Tss2_Sys_CreatePrimary(t->sys, TPM2_RH_ENDORSEMENT, &pw_auth, &sens, &in, &outside,
					&pcrs, &obj, &out, &cdata, &chash, &ticket, &name, &rsp));
	if (done("CreatePrimary(GCE AK)", rc, start, err, errlen) < 0)
		return -EIO;
	t->ak = obj;
	t->ak_transient = 1;
	if (marshal_public(&out.publicArea, pub, cap, pub_len) < 0)
		return errbuf_set(err, errlen, "tpm: the GCE AK's public area is too large");
	return 0;
}

int tpm_ak_select(struct tpm *t, enum tpm_ak_source src, uint8_t *pub, size_t cap, size_t *pub_len,
		  char *err, size_t errlen)
{
	flush_ak(t);
	switch (src) {
	case TPM_AK_SRC_OWNER:
		if (tpm_ak(t, pub, cap, pub_len) < 0)
			return errbuf_set(err, errlen,
					  "tpm: the attestation key at 0x%08x is "
					  "unavailable",
					  TPM_AK_HANDLE),
			       -EIO;
		t->ak = TPM_AK_HANDLE;
		return 0;
	case TPM_AK_SRC_HCL:
		return ak_hcl(t, pub, cap, pub_len, err, errlen);
	case TPM_AK_SRC_GCE:
		return ak_gce(t, pub, cap, pub_len, err, errlen);
	}
	return errbuf_set(err, errlen, "tpm: unknown attestation key source %d", (int)src);
}

/* ---- the PCR-bound decryption key of MAA's AzureGuest attestation ----
 * go-azguestattestation's maa/tpm.go: an RSA 2048 primary key in the null hierarchy whose
 * authPolicy is PolicyPCR(SHA-256 bank, mask, SHA-256 of the PCR values), certified by the AK;
 * MAA encrypts the token's key to it and only this boot's TPM in this PCR state decrypts. */

/* A trial (policy = 0) or policy session with PolicyPCR(mask, digest) run in it. */
static int pcr_session(struct tpm *t, uint32_t mask, const uint8_t digest[32], int policy,
		       TPMI_SH_AUTH_SESSION *ses, char *err, size_t errlen)
{
	TPM2B_NONCE caller = {.size = 32}, tpm_nonce = {.size = sizeof tpm_nonce.buffer};
	TPM2B_ENCRYPTED_SECRET salt = {0};
	TPMT_SYM_DEF sym = {.algorithm = TPM2_ALG_NULL};
	TPM2B_DIGEST pd = {.size = 32};
	TPML_PCR_SELECTION sel = {.count = 1};
	int64_t start = now_us();
	TSS2_RC rc;

	sel.pcrSelections[0].hash = TPM2_ALG_SHA256;
	sel.pcrSelections[0].sizeofSelect = 3;
	for (int i = 0; i < 3; i++)
		sel.pcrSelections[0].pcrSelect[i] = (uint8_t)(mask >> (8 * i));
	memcpy(pd.buffer, digest, 32);
	CALL(rc, Tss2_Sys_StartAuthSession(t->sys, TPM2_RH_NULL, TPM2_RH_NULL, NULL, &caller, &salt,
					   policy ? TPM2_SE_POLICY : TPM2_SE_TRIAL, &sym,
					   TPM2_ALG_SHA256, ses, &tpm_nonce, NULL));
	if (done("StartAuthSession", rc, start, err, errlen) < 0)
		return -EIO;
	start = now_us();
	CALL(rc, Tss2_Sys_PolicyPCR(t->sys, *ses, NULL, &pd, &sel, NULL));
	if (done("PolicyPCR", rc, start, err, errlen) < 0) {
		Tss2_Sys_FlushContext(t->sys, *ses);
		return -EIO;
	}
	return 0;
}

/* The key: created in the null hierarchy (the same template gives the same key until the
 * TPM resets), its handle into *obj. */
static int pcr_key(struct tpm *t, uint32_t mask, const uint8_t digest[32], TPM2_HANDLE *obj,
		   TPM2B_PUBLIC *out, char *err, size_t errlen)
{
	TPM2B_PUBLIC in = {0};
	TPM2B_NAME name = {.size = sizeof name.name};
	TPM2B_SENSITIVE_CREATE sens = {0};
	TPM2B_DATA outside = {0};
	TPML_PCR_SELECTION sel = {.count = 1};
	TPM2B_CREATION_DATA cdata = {0};
	TPM2B_DIGEST chash = {.size = sizeof chash.buffer};
	TPMT_TK_CREATION ticket = {0};
	TSS2L_SYS_AUTH_RESPONSE rsp;
	TPMI_SH_AUTH_SESSION ses;
	TPMT_PUBLIC *p = &in.publicArea;
	int64_t start;
	TSS2_RC rc;

	if (pcr_session(t, mask, digest, 0, &ses, err, errlen) < 0)
		return -EIO;
	p->authPolicy.size = sizeof p->authPolicy.buffer;
	start = now_us();
	CALL(rc, Tss2_Sys_PolicyGetDigest(t->sys, ses, NULL, &p->authPolicy, NULL));
	Tss2_Sys_FlushContext(t->sys, ses);
	if (done("PolicyGetDigest", rc, start, err, errlen) < 0)
		return -EIO;
	p->type = TPM2_ALG_RSA;
	p->nameAlg = TPM2_ALG_SHA256;
	p->objectAttributes = TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
			      TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_NODA;
	p->parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
	p->parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
	p->parameters.rsaDetail.keyBits = 2048;
	sel.pcrSelections[0].hash = TPM2_ALG_SHA256; /* go-tpm passes the PCRs as creationPCR */
	sel.pcrSelections[0].sizeofSelect = 3;
	for (int i = 0; i < 3; i++)
		sel.pcrSelections[0].pcrSelect[i] = (uint8_t)(mask >> (8 * i));
	memset(out, 0, sizeof *out);
	start = now_us();
	CALL(rc, Tss2_Sys_CreatePrimary(t->sys, TPM2_RH_NULL, &pw_auth, &sens, &in, &outside, &sel,
					obj, out, &cdata, &chash, &ticket, &name, &rsp));
	return done("CreatePrimary(PCR-bound key)", rc, start, err, errlen);
}

int tpm_pcr_key_certify(struct tpm *t, uint32_t mask, const uint8_t digest[32], uint8_t *pub,
			size_t cap, size_t *pub_len, uint8_t *info, size_t icap, size_t *info_len,
			uint8_t *sig, size_t scap, size_t *sig_len, char *err, size_t errlen)
{
	static const TSS2L_SYS_AUTH_COMMAND two_pw = {
	    .count = 2,
	    .auths = {{.sessionHandle = TPM2_RS_PW}, {.sessionHandle = TPM2_RS_PW}},
	};
	TPM2B_PUBLIC out;
	TPM2B_DATA qd = {0};
	TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_RSASSA};
	TPM2B_ATTEST attest = {.size = sizeof attest.attestationData};
	TPMT_SIGNATURE s = {0};
	TSS2L_SYS_AUTH_RESPONSE rsp;
	TPM2_HANDLE obj;
	int64_t start;
	TSS2_RC rc;
	int r;

	if ((r = pcr_key(t, mask, digest, &obj, &out, err, errlen)) < 0)
		return r;
	scheme.details.rsassa.hashAlg = TPM2_ALG_SHA256; /* go-tpm's Certify */
	start = now_us();
	CALL(rc, Tss2_Sys_Certify(t->sys, obj, t->ak ? t->ak : TPM_AK_HANDLE, &two_pw, &qd, &scheme,
				  &attest, &s, &rsp));
	Tss2_Sys_FlushContext(t->sys, obj);
	if (done("Certify(PCR-bound key)", rc, start, err, errlen) < 0)
		return -EIO;
	if (s.sigAlg != TPM2_ALG_RSASSA || marshal_public(&out.publicArea, pub, cap, pub_len) < 0 ||
	    attest.size > icap || s.signature.rsassa.sig.size > scap)
		return errbuf_set(err, errlen, "tpm: the certified key does not fit"), -ENOBUFS;
	memcpy(info, attest.attestationData, attest.size);
	*info_len = attest.size;
	/* MAA wants the TPM2B_PUBLIC_KEY_RSA's buffer of the TPMT_SIGNATURE */
	memcpy(sig, s.signature.rsassa.sig.buffer, s.signature.rsassa.sig.size);
	*sig_len = s.signature.rsassa.sig.size;
	return 0;
}

int tpm_pcr_key_decrypt(struct tpm *t, uint32_t mask, const uint8_t digest[32], const uint8_t *ct,
			size_t ct_len, uint8_t *pt, size_t cap, size_t *pt_len, char *err,
			size_t errlen)
{
	TSS2L_SYS_AUTH_COMMAND auth = {.count = 1};
	TPM2B_PUBLIC_KEY_RSA in = {0}, msg = {.size = sizeof msg.buffer};
	TPMT_RSA_DECRYPT scheme = {.scheme = TPM2_ALG_RSAES};
	TPM2B_DATA label = {0};
	TSS2L_SYS_AUTH_RESPONSE rsp;
	TPMI_SH_AUTH_SESSION ses;
	TPM2B_PUBLIC out;
	TPM2_HANDLE obj;
	int64_t start;
	TSS2_RC rc;
	int r;

	if (ct_len > sizeof in.buffer)
		return errbuf_set(err, errlen, "tpm: ciphertext of %zu bytes", ct_len), -EINVAL;
	in.size = (UINT16)ct_len;
	memcpy(in.buffer, ct, ct_len);
	if ((r = pcr_key(t, mask, digest, &obj, &out, err, errlen)) < 0)
		return r;
	if ((r = pcr_session(t, mask, digest, 1, &ses, err, errlen)) < 0) {
		Tss2_Sys_FlushContext(t->sys, obj);
		return r;
	}
	auth.auths[0].sessionHandle = ses;
	start = now_us();
	CALL(rc, Tss2_Sys_RSA_Decrypt(t->sys, obj, &auth, &in, &scheme, &label, &msg, &rsp));
	Tss2_Sys_FlushContext(t->sys, ses);
	Tss2_Sys_FlushContext(t->sys, obj);
	r = done("RSA_Decrypt(PCR-bound key)", rc, start, err, errlen);
	if (r == 0 && msg.size > cap)
		r = (errbuf_set(err, errlen, "tpm: plaintext of %u bytes", msg.size), -ENOBUFS);
	if (r == 0) {
		memcpy(pt, msg.buffer, msg.size);
		*pt_len = msg.size;
	}
	secret_wipe(msg.buffer, sizeof msg.buffer);
	return r;
}
