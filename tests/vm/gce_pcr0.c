/* gce_pcr0 (test program, a step of the test pre-init shim, /preinit.d/): stands in for GCE's
 * virtual firmware where the QEMU test boots have qboot, which measures nothing. It extends
 * the TPM (/dev/tpm0, the kernel's tpm_tis; TPM2_Startup(CLEAR) done by the kernel) with the
 * events GCE's firmware of a SEV confidential VM measures before the OS, laid out byte for byte
 * as in GCE's recorded logs (cos-85-amd-sev):
 *   PCR 0 EV_S_CRTM_VERSION  "GCE Virtual Firmware v1" in UCS-2 with its terminator (48 bytes)
 *   PCR 0 EV_NONHOST_INFO    "GCE NonHostInfo\0", the technology byte (1: AMD SEV, as GCE
 *                            writes it for a SEV-ES VM), 15 zero bytes (32 bytes)
 *   PCR 7, then 0..6 EV_SEPARATOR  00 00 00 00
 * (GCE's UEFI variables in PCR 7 and its boot entries in PCR 1 and 4 are not modelled.) Each
 * event goes in with TPM2_PCR_Event: the TPM hashes it into every active bank. The matching
 * TCG2 crypto-agile log (the Spec ID event first, naming the active banks; each event's
 * digests are the hashes of its data) goes to /preinit/eventlog, the agent's
 * constel.event-log=. Then PCR 0 is read back in every bank and must be what the log replays
 * to. Console lines start "gce-pcr0: "; exit 0, or 1 after one line saying why.
 * On the host (tests/vm/test_gce_pcr0.sh): GCE_PCR0_TPM=TCTI (swtpm) and GCE_PCR0_LOG=PATH. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "base/eventlog.h"
#include "tpm/tpm.h"

#define GCE_LOG_PATH	  "/preinit/eventlog"
#define GCE_TPM		  "device:/dev/tpm0"
#define EV_NO_ACTION	  0x3
#define EV_SEPARATOR	  0x4
#define EV_S_CRTM_VERSION 0x8
#define EV_NONHOST_INFO	  0x11
#define GCE_TECH_AMD_SEV  1
#define LOG_MAX		  4096

struct event {
	uint32_t pcr, type;
	const uint8_t *data;
	size_t len;
};

static int fail(const char *what)
{
	fprintf(stderr, "gce-pcr0: %s\n", what);
	return 1;
}

static int put(uint8_t *log, size_t *off, const void *p, size_t n)
{
	if (*off + n > LOG_MAX)
		return -ENOBUFS;
	memcpy(log + *off, p, n);
	*off += n;
	return 0;
}

static int put32(uint8_t *log, size_t *off, uint32_t v)
{
	uint8_t b[4] = {v & 0xff, v >> 8 & 0xff, v >> 16 & 0xff, v >> 24};

	return put(log, off, b, 4);
}

static int put16(uint8_t *log, size_t *off, uint16_t v)
{
	uint8_t b[2] = {v & 0xff, v >> 8};

	return put(log, off, b, 2);
}

/* The Spec ID event (TCG PC Client PFP, TCG_EfiSpecIdEvent in a TCG_PCClientPCREvent) naming
 * the banks, then every event with one digest per bank. */
static int build_log(const struct tpm_bank *b, size_t nb, const struct event *ev, size_t ne,
		     uint8_t *log, size_t *len)
{
	static const uint8_t zero20[20], sig[16] = "Spec ID Event03";
	static const uint8_t head[8] = {0, 0, 0, 0,
					0, 2, 0, 2}; /* class 0, v2.0 errata 0, uintn 2 */
	size_t off = 0;
	int r = 0;

	r |= put32(log, &off, 0) | put32(log, &off, EV_NO_ACTION) | put(log, &off, zero20, 20);
	r |= put32(log, &off, (uint32_t)(16 + 8 + 4 + 4 * nb + 1));
	r |= put(log, &off, sig, 16) | put(log, &off, head, 8) | put32(log, &off, (uint32_t)nb);
	for (size_t i = 0; i < nb; i++)
		r |= put16(log, &off, b[i].alg) | put16(log, &off, (uint16_t)b[i].digest_len);
	r |= put(log, &off, "", 1); /* vendorInfoSize 0 */
	for (size_t e = 0; e < ne; e++) {
		r |= put32(log, &off, ev[e].pcr) | put32(log, &off, ev[e].type) |
		     put32(log, &off, (uint32_t)nb);
		for (size_t i = 0; i < nb; i++) {
			const br_hash_class *hc = eventlog_hash(b[i].alg);
			br_hash_compat_context h;
			uint8_t d[64];

			if (!hc)
				return -ENOTSUP;
			hc->init(&h.vtable);
			hc->update(&h.vtable, ev[e].data, ev[e].len);
			hc->out(&h.vtable, d);
			r |= put16(log, &off, b[i].alg) | put(log, &off, d, b[i].digest_len);
		}
		r |= put32(log, &off, (uint32_t)ev[e].len) | put(log, &off, ev[e].data, ev[e].len);
	}
	*len = off;
	return r ? -ENOBUFS : 0;
}

int main(void)
{
	static const char ver[] = "GCE Virtual Firmware v1";
	static const uint8_t sep[4];
	static uint8_t log[LOG_MAX];
	uint8_t ucs2[2 * sizeof ver] = {0}, nhi[32] = "GCE NonHostInfo";
	struct event ev[10] = {{0, EV_S_CRTM_VERSION, ucs2, sizeof ucs2},
			       {0, EV_NONHOST_INFO, nhi, sizeof nhi},
			       {7, EV_SEPARATOR, sep, 4}};
	struct tpm_bank banks[TPM_BANKS_MAX];
	struct tcti_spec ts;
	struct eventlog_pcrs *rp;
	struct tpm *t = NULL;
	size_t nb = 0, ne = 3, len;
	char err[200], line[300];
	const char *tpm = getenv("GCE_PCR0_TPM"), *path = getenv("GCE_PCR0_LOG");
	int fd, r;

	for (size_t i = 0; i < sizeof ver; i++)
		ucs2[2 * i] = (uint8_t)ver[i];
	nhi[16] = GCE_TECH_AMD_SEV;
	for (uint32_t p = 0; p < 7; p++)
		ev[ne++] = (struct event){p, EV_SEPARATOR, sep, 4};
	tpm = tpm ? tpm : GCE_TPM;
	path = path ? path : GCE_LOG_PATH;
	if (tcti_spec_parse(tpm, &ts, err, sizeof err) < 0 ||
	    tpm_open(&ts, &t, err, sizeof err) < 0)
		return snprintf(line, sizeof line, "%s: %s", tpm, err), fail(line);
	if ((r = tpm_banks(t, banks, TPM_BANKS_MAX, &nb)) < 0 || nb == 0)
		return tpm_close(t), fail("TPM2_GetCapability(PCRS): no active PCR bank");
	if (build_log(banks, nb, ev, ne, log, &len) < 0)
		return tpm_close(t), fail("an active bank is not SHA-1/256/384/512");
	for (size_t e = 0; e < ne; e++)
		if ((r = tpm_pcr_event(t, ev[e].pcr, ev[e].data, ev[e].len)) < 0) {
			snprintf(line, sizeof line, "TPM2_PCR_Event(PCR %u, type 0x%x): %s",
				 ev[e].pcr, ev[e].type, strerror(-r));
			return tpm_close(t), fail(line);
		}
	/* the log must replay to what the TPM now holds: nothing extended PCR 0 before us */
	if (!(rp = calloc(1, sizeof *rp)))
		return tpm_close(t), fail("out of memory");
	for (size_t i = 0; i < nb; i++) {
		uint8_t v[TPM_PCRS][TPM_DIGEST_MAX];
		size_t dl;

		if (eventlog_replay(log, len, banks[i].alg, rp, err, sizeof err) < 0 ||
		    tpm_pcr_read(t, banks[i].alg, 1u << 0 | 1u << 7, v, &dl) < 0 ||
		    memcmp(v[0], rp->value[0], banks[i].digest_len) ||
		    memcmp(v[7], rp->value[7], banks[i].digest_len)) {
			snprintf(line, sizeof line,
				 "PCR 0 or 7 of bank 0x%04x is not what the log replays to (was "
				 "something measured before?)",
				 banks[i].alg);
			free(rp);
			return tpm_close(t), fail(line);
		}
	}
	free(rp);
	tpm_close(t);
	if (!getenv("GCE_PCR0_LOG"))
		mkdir("/preinit", 0755);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0 || write(fd, log, len) != (ssize_t)len || close(fd) < 0)
		return snprintf(line, sizeof line, "%s: %s", path, strerror(errno)), fail(line);
	printf("gce-pcr0: PCR 0 holds GCE Virtual Firmware v1 and NonHostInfo AMD SEV, PCR 0-7 "
	       "their separators, in %zu bank%s; the log (%zu bytes) is %s\n",
	       nb, nb == 1 ? "" : "s", len, path);
	return 0;
}
