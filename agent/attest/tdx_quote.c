/* The TDX quote v4 parser (tdx.h): every offset and length checked against what holds it,
 * one line naming the field for each refusal. Validators only. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "tdx.h"

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A bounded reader over one region. */
struct rd {
	const uint8_t *p;
	size_t len;
};

static const uint8_t *take(struct rd *r, size_t n)
{
	const uint8_t *p = r->p;

	if (n > r->len)
		return NULL;
	r->p += n;
	r->len -= n;
	return p;
}

static void parse_body(const uint8_t *b, struct tdx_body *t)
{
	memcpy(t->tee_tcb_svn, b + 0, 16);
	memcpy(t->mr_seam, b + 16, 48);
	memcpy(t->mr_signer_seam, b + 64, 48);
	memcpy(t->seam_attributes, b + 112, 8);
	memcpy(t->td_attributes, b + 120, 8);
	memcpy(t->xfam, b + 128, 8);
	memcpy(t->mr_td, b + 136, 48);
	memcpy(t->mr_config_id, b + 184, 48);
	memcpy(t->mr_owner, b + 232, 48);
	memcpy(t->mr_owner_config, b + 280, 48);
	memcpy(t->rtmr, b + 328, 4 * 48);
	memcpy(t->report_data, b + 520, 64);
}

static void parse_qe_report(const uint8_t *b, struct tdx_qe_report *r)
{
	memcpy(r->cpu_svn, b + 0, 16);
	r->misc_select = le32(b + 16);
	memcpy(r->attributes, b + 48, 16);
	memcpy(r->mr_enclave, b + 64, 32);
	memcpy(r->mr_signer, b + 128, 32);
	r->isv_prod_id = le16(b + 256);
	r->isv_svn = le16(b + 258);
	memcpy(r->report_data, b + 320, 64);
}

int tdx_quote_parse(const uint8_t *b, size_t len, struct tdx_quote *q, char *err, size_t errlen)
{
	struct rd all = {b, len}, sd, cd, pck;
	const uint8_t *h, *p;
	uint32_t sd_len, cd_len, pck_len;
	uint16_t cd_type, auth_len, pck_type;

	memset(q, 0, sizeof *q);
	if (len > TDX_QUOTE_MAX)
		return errbuf_set(err, errlen, "tdx: quote: %zu bytes, more than %d", len,
				  TDX_QUOTE_MAX);
	if (!(h = take(&all, TDX_HEADER_LEN)))
		return errbuf_set(err, errlen, "tdx: quote: %zu bytes, shorter than its header",
				  len);
	q->header.version = le16(h);
	q->header.ak_type = le16(h + 2);
	q->header.tee_type = le32(h + 4);
	q->header.qe_svn = le16(h + 8);
	q->header.pce_svn = le16(h + 10);
	memcpy(q->header.qe_vendor_id, h + 12, 16);
	memcpy(q->header.user_data, h + 28, 20);
	if (q->header.version != TDX_QUOTE_VERSION)
		return errbuf_set(err, errlen, "tdx: quote: header version %u, not 4",
				  q->header.version);
	if (q->header.ak_type != TDX_AK_ECDSA_P256)
		return errbuf_set(err, errlen,
				  "tdx: quote: attestation key type %u, not 2 (ECDSA P-256)",
				  q->header.ak_type);
	if (q->header.tee_type != TDX_TEE_TYPE_TDX)
		return errbuf_set(err, errlen, "tdx: quote: TEE type 0x%x, not 0x81 (TDX)",
				  (unsigned)q->header.tee_type);
	if (!(p = take(&all, TDX_BODY_LEN)))
		return errbuf_set(err, errlen,
				  "tdx: quote: %zu bytes, shorter than header and body", len);
	parse_body(p, &q->body);
	q->signed_part = b;

	if (!(p = take(&all, 4)))
		return errbuf_set(err, errlen, "tdx: quote: no signature data length");
	sd_len = le32(p);
	if (sd_len > all.len)
		return errbuf_set(err, errlen,
				  "tdx: quote: signature data of %u bytes, only %zu follow",
				  (unsigned)sd_len, all.len);
	sd.p = all.p;
	sd.len = sd_len;
	q->len = TDX_SIGNED_LEN + 4 + (size_t)sd_len;

	if (!(q->sig = take(&sd, 64)) || !(q->ak = take(&sd, 64)))
		return errbuf_set(err, errlen,
				  "tdx: quote: signature data of %u bytes, too short for the "
				  "signature and attestation key",
				  (unsigned)sd_len);
	if (!(p = take(&sd, 6)))
		return errbuf_set(err, errlen, "tdx: quote: no certification data header");
	cd_type = le16(p);
	cd_len = le32(p + 2);
	if (cd_type != TDX_CERT_QE_REPORT)
		return errbuf_set(err, errlen,
				  "tdx: quote: certification data type %u, not 6 (QE report)",
				  cd_type);
	if (cd_len != sd.len)
		return errbuf_set(err, errlen,
				  "tdx: quote: certification data of %u bytes, the signature data "
				  "leaves %zu",
				  (unsigned)cd_len, sd.len);
	cd = sd;

	/* QE report certification data */
	if (!(q->qe_report_raw = take(&cd, TDX_QE_REPORT_LEN)) ||
	    !(q->qe_report_sig = take(&cd, 64)))
		return errbuf_set(err, errlen,
				  "tdx: quote: QE report certification data of %u bytes, too "
				  "short for the QE report and its signature",
				  (unsigned)cd_len);
	parse_qe_report(q->qe_report_raw, &q->qe_report);
	if (!(p = take(&cd, 2)))
		return errbuf_set(err, errlen, "tdx: quote: no QE authentication data length");
	auth_len = le16(p);
	if (!(q->qe_auth = take(&cd, auth_len)))
		return errbuf_set(err, errlen,
				  "tdx: quote: QE authentication data of %u bytes, only %zu left",
				  auth_len, cd.len);
	q->qe_auth_len = auth_len;
	if (!(p = take(&cd, 6)))
		return errbuf_set(err, errlen,
				  "tdx: quote: no certification data header in the QE report "
				  "certification data");
	pck_type = le16(p);
	pck_len = le32(p + 2);
	if (pck_type != TDX_CERT_PCK_CHAIN)
		return errbuf_set(err, errlen,
				  "tdx: quote: QE certification data type %u, not 5 (PCK chain)",
				  pck_type);
	if (pck_len != cd.len)
		return errbuf_set(err, errlen,
				  "tdx: quote: PCK chain of %u bytes, the certification data "
				  "leaves %zu",
				  (unsigned)pck_len, cd.len);
	pck = cd;
	if (!pck.len)
		return errbuf_set(err, errlen, "tdx: quote: the PCK chain is empty");
	q->pck_pem = pck.p;
	q->pck_pem_len = pck.len;
	return 0;
}
