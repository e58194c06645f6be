/* The SEV-SNP extended report from the kernel: configfs-tsm (a private report entry, its
 * generation counter watched for other writers) or the /dev/sev-guest ioctl (the certificate
 * buffer grown once to the size the kernel writes back). See sev_guest.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attest/sev_guest.h"

const uint8_t sev_guid_vcek[16] = {0x63, 0xda, 0x75, 0x8d, 0xe6, 0x64, 0x45, 0x64,
				   0xad, 0xc5, 0xf4, 0xb9, 0x3b, 0xe8, 0xac, 0xcd};
const uint8_t sev_guid_vlek[16] = {0xa8, 0x07, 0x4b, 0xc2, 0xa2, 0x5a, 0x48, 0x3e,
				   0xaa, 0xe6, 0x39, 0xc0, 0x45, 0xa0, 0xb8, 0xa1};
const uint8_t sev_guid_ask[16] = {0x4a, 0xb7, 0xb3, 0x79, 0xbb, 0xac, 0x4f, 0xe4,
				  0xa0, 0x2f, 0x05, 0xae, 0xf3, 0x27, 0xc7, 0x82};
const uint8_t sev_guid_ark[16] = {0xc0, 0xb4, 0x06, 0xa4, 0xa8, 0x03, 0x49, 0x52,
				  0x97, 0x43, 0x3f, 0xb6, 0x01, 0x4c, 0xd0, 0xae};

/* ---- the uapi (include/uapi/linux/sev-guest.h), written out so that the build does not
 * depend on the host's kernel headers ---- */
struct sev_report_req {
	uint8_t user_data[64];
	uint32_t vmpl;
	uint8_t rsvd[28];
};
struct sev_ext_report_req {
	struct sev_report_req data;
	uint64_t certs_address;
	uint32_t certs_len;
};
struct sev_guest_request_ioctl {
	uint8_t msg_version;
	uint64_t req_data;
	uint64_t resp_data;
	uint64_t exitinfo2; /* fw_error (low 32 bits), vmm_error (high) */
};
#define SEV_RESP_LEN		4000
#define SEV_IOC_GET_REPORT	0xC0205300u
#define SEV_IOC_GET_EXT_REPORT	0xC0205302u
#define SEV_VMM_ERR_INVALID_LEN 1u
#define SEV_VMM_ERR_BUSY	2u
_Static_assert(sizeof(struct sev_report_req) == 96, "snp_report_req");
_Static_assert(sizeof(struct sev_ext_report_req) == 112, "snp_ext_report_req");
_Static_assert(sizeof(struct sev_guest_request_ioctl) == 32, "snp_guest_request_ioctl");

const char *sev_fw_error_name(uint32_t code)
{
	static const char *const names[] = {
	    [0x00] = "SUCCESS",
	    [0x01] = "INVALID_PLATFORM_STATE",
	    [0x02] = "INVALID_GUEST_STATE",
	    [0x03] = "INVALID_CONFIG",
	    [0x04] = "INVALID_LEN",
	    [0x05] = "ALREADY_OWNED",
	    [0x06] = "INVALID_CERTIFICATE",
	    [0x07] = "POLICY_FAILURE",
	    [0x08] = "INACTIVE",
	    [0x09] = "INVALID_ADDRESS",
	    [0x0a] = "BAD_SIGNATURE",
	    [0x0b] = "BAD_MEASUREMENT",
	    [0x0c] = "ASID_OWNED",
	    [0x0d] = "INVALID_ASID",
	    [0x0e] = "WBINVD_REQUIRED",
	    [0x0f] = "DFFLUSH_REQUIRED",
	    [0x10] = "INVALID_GUEST",
	    [0x11] = "INVALID_COMMAND",
	    [0x12] = "ACTIVE",
	    [0x13] = "HWERROR_PLATFORM",
	    [0x14] = "HWERROR_UNSAFE",
	    [0x15] = "UNSUPPORTED",
	    [0x16] = "INVALID_PARAM",
	    [0x17] = "RESOURCE_LIMIT",
	    [0x18] = "SECURE_DATA_INVALID",
	    [0x27] = "INVALID_KEY",
	};

	if (code < sizeof names / sizeof names[0] && names[code])
		return names[code];
	return code == 0xff ? "no answer (request not sent)" : "unknown";
}

int sev_cert_table_find(const uint8_t *certs, size_t len, const uint8_t guid[16],
			const uint8_t **der, size_t *der_len, char *err, size_t errlen)
{
	static const uint8_t zero[24];
	size_t n = 0, i;

	/* the entries, up to the all-zero one; every certificate after them */
	while (1) {
		if (len < (n + 1) * 24 || n > 64) {
			snprintf(err, errlen, "certificate table: no end entry in %zu bytes", len);
			return -EBADMSG;
		}
		if (!memcmp(certs + n * 24, zero, 24))
			break;
		n++;
	}
	for (i = 0; i < n; i++) {
		const uint8_t *e = certs + i * 24;
		uint32_t off = (uint32_t)e[16] | (uint32_t)e[17] << 8 | (uint32_t)e[18] << 16 |
			       (uint32_t)e[19] << 24;
		uint32_t l = (uint32_t)e[20] | (uint32_t)e[21] << 8 | (uint32_t)e[22] << 16 |
			     (uint32_t)e[23] << 24;

		if (off < (n + 1) * 24 || off > len || l > len - off || l == 0) {
			snprintf(err, errlen,
				 "certificate table: entry %zu (offset %u, length %u) outside its "
				 "%zu bytes",
				 i, off, l, len);
			return -EBADMSG;
		}
		if (!memcmp(e, guid, 16)) {
			*der = certs + off;
			*der_len = l;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- configfs-tsm ---- */

static int read_small(const char *dir, const char *name, uint8_t *out, size_t cap, size_t *len)
{
	char path[512];
	size_t got = 0;
	int fd, r = 0;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while (1) {
		ssize_t k;

		if (got == cap) {
			uint8_t extra;

			/* anything past cap is too much */
			k = read(fd, &extra, 1);
			r = k == 0 ? 0 : k < 0 ? -errno : -EFBIG;
			break;
		}
		k = read(fd, out + got, cap - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			break;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	if (!r)
		*len = got;
	return r;
}

static int write_small(const char *dir, const char *name, const void *b, size_t len)
{
	char path[512];
	ssize_t k;
	int fd, r = 0;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	do
		k = write(fd, b, len);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		r = -errno;
	else if ((size_t)k != len)
		r = -EIO;
	if (close(fd) < 0 && !r)
		r = -errno;
	return r;
}

static int read_generation(const char *dir, unsigned long long *gen)
{
	uint8_t b[32];
	size_t n;
	char *end;
	int r = read_small(dir, "generation", b, sizeof b - 1, &n);

	if (r < 0)
		return r;
	b[n] = 0;
	errno = 0;
	*gen = strtoull((char *)b, &end, 10);
	if (end == (char *)b || errno || (*end && *end != '\n'))
		return -EBADMSG;
	return 0;
}

/* One try in entry dir: 0, -EAGAIN when another writer changed the generation, or an error
 * with its line in err. */
static int tsm_try(const char *dir, const uint8_t data[SEV_REPORT_DATA_LEN],
		   uint8_t report[SEV_REPORT_LEN], uint8_t *certs, size_t certs_cap,
		   size_t *certs_len, char *err, size_t errlen)
{
	static uint8_t out[SEV_REPORT_LEN + 1];
	unsigned long long g0, g;
	char prov[32];
	size_t n;
	int r;

	r = read_small(dir, "provider", (uint8_t *)prov, sizeof prov - 1, &n);
	if (r < 0) {
		snprintf(err, errlen, "%s/provider: %s", dir, strerror(-r));
		return r;
	}
	prov[n] = 0;
	if (strcmp(prov, "sev_guest\n") && strcmp(prov, "sev_guest")) {
		prov[strcspn(prov, "\n")] = 0;
		snprintf(err, errlen, "%s: provider is '%.20s', not sev_guest", dir, prov);
		return -ENODEV;
	}
	if ((r = read_generation(dir, &g0)) < 0) {
		snprintf(err, errlen, "%s/generation: %s", dir, strerror(-r));
		return r;
	}
	if ((r = write_small(dir, "inblob", data, SEV_REPORT_DATA_LEN)) < 0) {
		snprintf(err, errlen, "%s/inblob: write: %s", dir, strerror(-r));
		return r;
	}
	if ((r = write_small(dir, "privlevel", "0\n", 2)) < 0) {
		snprintf(err, errlen, "%s/privlevel: write: %s", dir, strerror(-r));
		return r;
	}
	/* outblob makes the report; auxblob is its cached certificate table */
	r = read_small(dir, "outblob", out, sizeof out, &n);
	if (r < 0) {
		snprintf(err, errlen, "%s/outblob: %s", dir,
			 r == -EFBIG ? "more than a report" : strerror(-r));
		return r;
	}
	if (n != SEV_REPORT_LEN) {
		snprintf(err, errlen, "%s/outblob: %zu bytes, not a %d-byte report", dir, n,
			 SEV_REPORT_LEN);
		return -EBADMSG;
	}
	if ((r = read_generation(dir, &g)) < 0) {
		snprintf(err, errlen, "%s/generation: %s", dir, strerror(-r));
		return r;
	}
	if (g != g0 + 2)
		return -EAGAIN;
	*certs_len = 0;
	if (certs_cap) {
		r = read_small(dir, "auxblob", certs, certs_cap, certs_len);
		if (r < 0) {
			snprintf(err, errlen, "%s/auxblob: %s", dir,
				 r == -EFBIG ? "certificate table too long" : strerror(-r));
			return r;
		}
		if ((r = read_generation(dir, &g)) < 0) {
			snprintf(err, errlen, "%s/generation: %s", dir, strerror(-r));
			return r;
		}
		if (g != g0 + 2)
			return -EAGAIN;
	}
	memcpy(report, out, SEV_REPORT_LEN);
	return 0;
}

static int tsm_report(const char *tsm_dir, const uint8_t data[SEV_REPORT_DATA_LEN],
		      uint8_t report[SEV_REPORT_LEN], uint8_t *certs, size_t certs_cap,
		      size_t *certs_len, char *err, size_t errlen)
{
	static unsigned seq;
	char dir[512];
	int r = -EAGAIN;

	for (int i = 0; i < SEV_TSM_GEN_TRIES && r == -EAGAIN; i++) {
		if ((size_t)snprintf(dir, sizeof dir, "%s/constel-%ld-%u", tsm_dir, (long)getpid(),
				     seq++) >= sizeof dir) {
			snprintf(err, errlen, "configfs-tsm: path too long");
			return -ENAMETOOLONG;
		}
		if (mkdir(dir, 0700) < 0) {
			r = -errno;
			snprintf(err, errlen, "configfs-tsm: mkdir %s: %s", dir,
				 r == -ENXIO ? "no provider registered" : strerror(-r));
			return r;
		}
		r = tsm_try(dir, data, report, certs, certs_cap, certs_len, err, errlen);
		if (rmdir(dir) < 0 && !r) {
			r = -errno;
			snprintf(err, errlen, "configfs-tsm: rmdir %s: %s", dir, strerror(-r));
		}
	}
	if (r == -EAGAIN)
		snprintf(err, errlen,
			 "configfs-tsm: %s: generation changed under us %d times (another writer)",
			 tsm_dir, SEV_TSM_GEN_TRIES);
	return r;
}

/* ---- /dev/sev-guest ---- */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until SEV_REQ_SPACING_MS after the last request (a throttled host makes a 6.1 kernel
 * disable the message key, go-sev-guest issue 40); at most that long. */
static void space_requests(void)
{
	static long long last = -SEV_REQ_SPACING_MS;
	long long wait = last + SEV_REQ_SPACING_MS - now_ms();

	if (wait > 0 && wait <= SEV_REQ_SPACING_MS) {
		struct timespec ts = {wait / 1000, (wait % 1000) * 1000000};

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	last = now_ms();
}

static int ioctl_failed(const char *dev, const char *what, int e, uint64_t exitinfo2, char *err,
			size_t errlen)
{
	uint32_t fw = (uint32_t)exitinfo2, vmm = (uint32_t)(exitinfo2 >> 32);

	if (e == ENOTTY)
		snprintf(err, errlen,
			 "%s: %s: the kernel disabled the guest's message key after an earlier "
			 "error (reboot to attest again)",
			 dev, what);
	else if (vmm)
		snprintf(err, errlen, "%s: %s: %s, host error %u%s", dev, what, strerror(e), vmm,
			 vmm == SEV_VMM_ERR_BUSY ? " (busy)" : "");
	else if (fw && fw != 0xff)
		snprintf(err, errlen, "%s: %s: firmware error 0x%x %s", dev, what, fw,
			 sev_fw_error_name(fw));
	else
		snprintf(err, errlen, "%s: %s: %s", dev, what, strerror(e));
	return -e;
}

static int resp_report(const char *dev, const uint8_t *resp, uint8_t report[SEV_REPORT_LEN],
		       char *err, size_t errlen)
{
	uint32_t status = (uint32_t)resp[0] | (uint32_t)resp[1] << 8 | (uint32_t)resp[2] << 16 |
			  (uint32_t)resp[3] << 24;
	uint32_t size = (uint32_t)resp[4] | (uint32_t)resp[5] << 8 | (uint32_t)resp[6] << 16 |
			(uint32_t)resp[7] << 24;

	if (status) {
		snprintf(err, errlen, "%s: report status 0x%x %s", dev, status,
			 sev_fw_error_name(status));
		return -EIO;
	}
	if (size != SEV_REPORT_LEN) {
		snprintf(err, errlen, "%s: report of %u bytes, not %d", dev, size, SEV_REPORT_LEN);
		return -EBADMSG;
	}
	memcpy(report, resp + 32, SEV_REPORT_LEN);
	return 0;
}

static int dev_report(const char *dev, const uint8_t data[SEV_REPORT_DATA_LEN],
		      uint8_t report[SEV_REPORT_LEN], uint8_t *certs, size_t certs_cap,
		      size_t *certs_len, char *err, size_t errlen)
{
	static uint8_t resp[SEV_RESP_LEN];
	struct sev_ext_report_req ext;
	struct sev_guest_request_ioctl io;
	size_t len = SEV_CERTS_FIRST;
	int fd, r = 0;

	memset(&ext, 0, sizeof ext);
	memcpy(ext.data.user_data, data, SEV_REPORT_DATA_LEN);
	ext.data.vmpl = 0;
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s%s", dev, strerror(-r),
			 r == -ENOENT ? " (no SEV-SNP guest, or the sev-guest module not loaded)"
				      : "");
		return r;
	}
	for (int grown = 0;; grown++) {
		memset(&io, 0, sizeof io);
		memset(resp, 0, sizeof resp);
		io.msg_version = 1;
		io.resp_data = (uint64_t)(uintptr_t)resp;
		if (certs_cap)
			memset(certs, 0, len);
		ext.certs_address = (uint64_t)(uintptr_t)certs;
		ext.certs_len = (uint32_t)len;
		io.req_data =
		    certs_cap ? (uint64_t)(uintptr_t)&ext : (uint64_t)(uintptr_t)&ext.data;
		space_requests();
		if (ioctl(fd, certs_cap ? SEV_IOC_GET_EXT_REPORT : SEV_IOC_GET_REPORT, &io) == 0)
			break;
		r = errno;
		if (certs_cap && r == EIO &&
		    io.exitinfo2 == (uint64_t)SEV_VMM_ERR_INVALID_LEN << 32 && !grown) {
			/* the kernel wrote the size the host needs into certs_len */
			if (ext.certs_len <= len || ext.certs_len > certs_cap ||
			    ext.certs_len > SEV_CERTS_MAX || ext.certs_len % 4096) {
				snprintf(
				    err, errlen,
				    "%s: SNP_GET_EXT_REPORT: host asks for a %u-byte certificate "
				    "buffer (had %zu, at most %d)",
				    dev, ext.certs_len, len, SEV_CERTS_MAX);
				close(fd);
				return -EMSGSIZE;
			}
			len = ext.certs_len;
			continue;
		}
		close(fd);
		return ioctl_failed(dev, certs_cap ? "SNP_GET_EXT_REPORT" : "SNP_GET_REPORT", r,
				    io.exitinfo2, err, errlen);
	}
	close(fd);
	if ((r = resp_report(dev, resp, report, err, errlen)) < 0)
		return r;
	*certs_len = 0;
	if (certs_cap) {
		/* the table up to its end entry and its last certificate */
		static const uint8_t zero[24];
		size_t n = 0, end;

		while ((n + 1) * 24 <= len && memcmp(certs + n * 24, zero, 24))
			n++;
		end = n ? (n + 1) * 24 : 0;
		for (size_t i = 0; i < n && (n + 1) * 24 <= len; i++) {
			const uint8_t *e = certs + i * 24;
			uint64_t off = (uint32_t)e[16] | (uint32_t)e[17] << 8 |
				       (uint32_t)e[18] << 16 | (uint32_t)e[19] << 24;
			uint64_t l = (uint32_t)e[20] | (uint32_t)e[21] << 8 |
				     (uint32_t)e[22] << 16 | (uint32_t)e[23] << 24;

			if (off + l > end)
				end = off + l;
		}
		*certs_len = end > len ? len : end;
	}
	return 0;
}

int sev_guest_ext_report(const char *tsm_dir, const char *dev,
			 const uint8_t data[SEV_REPORT_DATA_LEN], uint8_t report[SEV_REPORT_LEN],
			 uint8_t *certs, size_t certs_cap, size_t *certs_len, char *err,
			 size_t errlen)
{
	struct stat st;

	if (certs_cap && certs_cap < SEV_CERTS_MAX) {
		snprintf(err, errlen, "sev-guest: certificate buffer of %zu bytes, need %d",
			 certs_cap, SEV_CERTS_MAX);
		return -EINVAL;
	}
	if (tsm_dir && stat(tsm_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		int r = tsm_report(tsm_dir, data, report, certs, certs_cap, certs_len, err, errlen);

		/* ENXIO: configfs-tsm without a provider (sev-guest not loaded, or built without
		 * it): the device may still answer, as go-sev-guest then falls back to it */
		if (r != -ENXIO)
			return r;
	}
	return dev_report(dev ? dev : SEV_GUEST_DEV, data, report, certs, certs_cap, certs_len, err,
			  errlen);
}
