/* The SEV-SNP attestation report (AMD SEV-SNP Firmware ABI, ATTESTATION_REPORT) and the
 * certificate table of an extended report (GHCB spec, SNP Extended Guest Request), parsed
 * with explicit bounds. Validators only (see snp.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "snp.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

int snp_report_parse(const uint8_t *b, size_t len, struct snp_report *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	if (len < SNP_REPORT_LEN)
		return errbuf_set(err, errlen, "snp: report is %zu bytes, not %d", len,
				  SNP_REPORT_LEN);
	r->version = le32(b + 0x000);
	r->guest_svn = le32(b + 0x004);
	r->policy = le64(b + 0x008);
	memcpy(r->family_id, b + 0x010, 16);
	memcpy(r->image_id, b + 0x020, 16);
	r->vmpl = le32(b + 0x030);
	r->signature_algo = le32(b + 0x034);
	r->current_tcb = le64(b + 0x038);
	r->platform_info = le64(b + 0x040);
	r->signer_info = le32(b + 0x048);
	memcpy(r->report_data, b + 0x050, 64);
	memcpy(r->measurement, b + 0x090, 48);
	memcpy(r->host_data, b + 0x0c0, 32);
	memcpy(r->id_key_digest, b + 0x0e0, 48);
	memcpy(r->author_key_digest, b + 0x110, 48);
	memcpy(r->report_id, b + 0x140, 32);
	memcpy(r->report_id_ma, b + 0x160, 32);
	r->reported_tcb = le64(b + 0x180);
	if (r->version >= 3) {
		r->cpuid_fam_id = b[0x188];
		r->cpuid_mod_id = b[0x189];
		r->cpuid_step = b[0x18a];
	}
	memcpy(r->chip_id, b + 0x1a0, 64);
	r->committed_tcb = le64(b + 0x1e0);
	r->current_build = b[0x1e8];
	r->current_minor = b[0x1e9];
	r->current_major = b[0x1ea];
	r->committed_build = b[0x1ec];
	r->committed_minor = b[0x1ed];
	r->committed_major = b[0x1ee];
	r->launch_tcb = le64(b + 0x1f0);
	memcpy(r->sig_r, b + 0x2a0, SNP_SIG_COMP);
	memcpy(r->sig_s, b + 0x2a0 + SNP_SIG_COMP, SNP_SIG_COMP);

	if (r->version < 2 || r->version > 5)
		return errbuf_set(err, errlen, "snp: report version %u (2 to 5 are known)",
				  r->version);
	if (r->signature_algo != 1)
		return errbuf_set(err, errlen,
				  "snp: signature algorithm %u, not 1 (ECDSA P-384 SHA-384)",
				  r->signature_algo);
	if (SNP_SIGNER_KEY(r->signer_info) != SNP_KEY_VCEK &&
	    SNP_SIGNER_KEY(r->signer_info) != SNP_KEY_VLEK &&
	    SNP_SIGNER_KEY(r->signer_info) != SNP_KEY_NONE)
		return errbuf_set(err, errlen, "snp: signing key %u is reserved",
				  SNP_SIGNER_KEY(r->signer_info));
	return 0;
}

const char *snp_product_name(enum snp_product p)
{
	switch (p) {
	case SNP_MILAN:
		return "Milan";
	case SNP_GENOA:
		return "Genoa";
	case SNP_TURIN:
		return "Turin";
	}
	return "?";
}

/* Milan and Genoa: bootloader byte 0, TEE 1, SNP 6, microcode 7. Turin: FMC 0, bootloader 1,
 * TEE 2, SNP 3, microcode 7. */
void snp_tcb_decode(enum snp_product p, uint64_t raw, struct snp_tcb *t)
{
	memset(t, 0, sizeof *t);
	t->microcode = (uint8_t)(raw >> 56);
	if (p == SNP_TURIN) {
		t->fmc = (uint8_t)raw;
		t->bootloader = (uint8_t)(raw >> 8);
		t->tee = (uint8_t)(raw >> 16);
		t->snp = (uint8_t)(raw >> 24);
	} else {
		t->bootloader = (uint8_t)raw;
		t->tee = (uint8_t)(raw >> 8);
		t->snp = (uint8_t)(raw >> 48);
	}
}

int snp_tcb_parse(const char *s, struct snp_tcb *t)
{
	static const char *const names[] = {"fmc", "bl", "tee", "snp", "ucode"};
	uint8_t *dst[] = {&t->fmc, &t->bootloader, &t->tee, &t->snp, &t->microcode};
	unsigned seen = 0;

	memset(t, 0, sizeof *t);
	while (*s) {
		size_t i, k = strcspn(s, "=");
		unsigned v = 0, digits = 0;

		for (i = 0; i < 5; i++)
			if (strlen(names[i]) == k && !strncmp(s, names[i], k))
				break;
		if (i == 5 || s[k] != '=' || seen & 1u << i)
			return -EINVAL;
		seen |= 1u << i;
		for (s += k + 1; *s >= '0' && *s <= '9' && digits < 4; s++, digits++)
			v = v * 10 + (unsigned)(*s - '0');
		if (!digits || v > 255 || (*s && *s != ','))
			return -EINVAL;
		*dst[i] = (uint8_t)v;
		if (*s == ',' && !*++s)
			return -EINVAL;
	}
	return seen ? 0 : -EINVAL;
}

/* The GUIDs in the byte order they have on the wire (RFC 4122 text order). */
static const struct {
	enum snp_cert_kind kind;
	uint8_t guid[16];
} guids[] = {
    {SNP_CERT_VCEK,
     {0x63, 0xda, 0x75, 0x8d, 0xe6, 0x64, 0x45, 0x64, 0xad, 0xc5, 0xf4, 0xb9, 0x3b, 0xe8, 0xac,
      0xcd}},
    {SNP_CERT_VLEK,
     {0xa8, 0x07, 0x4b, 0xc2, 0xa2, 0x5a, 0x48, 0x3e, 0xaa, 0xe6, 0x39, 0xc0, 0x45, 0xa0, 0xb8,
      0xa1}},
    {SNP_CERT_ASK,
     {0x4a, 0xb7, 0xb3, 0x79, 0xbb, 0xac, 0x4f, 0xe4, 0xa0, 0x2f, 0x05, 0xae, 0xf3, 0x27, 0xc7,
      0x82}},
    {SNP_CERT_ARK,
     {0xc0, 0xb4, 0x06, 0xa4, 0xa8, 0x03, 0x49, 0x52, 0x97, 0x43, 0x3f, 0xb6, 0x01, 0x4c, 0xd0,
      0xae}},
};

int snp_cert_table_parse(const uint8_t *b, size_t len, struct snp_cert_entry *ents, size_t max,
			 size_t *n, char *err, size_t errlen)
{
	static const uint8_t zero[24];
	size_t i, hdr;

	*n = 0;
	for (i = 0;; i++) {
		const uint8_t *e = b + 24 * i;

		if (len / 24 < i + 1)
			return errbuf_set(err, errlen,
					  "snp: certificate table has no terminating entry");
		if (!memcmp(e, zero, 24))
			break;
		if (i == max)
			return errbuf_set(err, errlen,
					  "snp: certificate table has more than %zu "
					  "entries",
					  max);
	}
	hdr = 24 * (i + 1);
	for (size_t j = 0; j < i; j++) {
		const uint8_t *e = b + 24 * j;
		uint32_t off = le32(e + 16), l = le32(e + 20);

		if (off < hdr || off > len || l > len - off || !l)
			return errbuf_set(err, errlen,
					  "snp: certificate table entry %zu (offset %u, length %u) "
					  "outside the %zu-byte table",
					  j, off, l, len);
		memcpy(ents[j].guid, e, 16);
		ents[j].kind = SNP_CERT_OTHER;
		for (size_t g = 0; g < sizeof guids / sizeof guids[0]; g++)
			if (!memcmp(e, guids[g].guid, 16))
				ents[j].kind = guids[g].kind;
		for (size_t k = 0; k < j; k++)
			if (!memcmp(ents[k].guid, e, 16))
				return errbuf_set(err, errlen,
						  "snp: certificate table names a GUID twice");
		ents[j].der = b + off;
		ents[j].len = l;
	}
	*n = i;
	return 0;
}
