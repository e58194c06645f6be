/* The state disk by each cloud's naming, without udev: devtmpfs makes /dev/sdX and
 * /dev/nvmeXnY by itself; what udev's rules would have linked (GCP's google-state-disk,
 * Azure's scsi1/lun0, AWS's sdb) is found here from sysfs and the devices' own pages, as
 * guest-configs' google_nvme_id, WALinuxAgent's 66-azure-storage.rules and amazon-ec2-utils'
 * ebsnvme-id read them. The parsers take pages from the device (outside input): every offset
 * is checked against the page's own length. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/nvme_ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "cloud.h"

#define GCP_VS_OFF   384 /* Identify Namespace: the vendor-specific area */
#define EBS_VID	     0x1D0F
#define EBS_MODEL    "Amazon Elastic Block Store"
#define EBS_BDEV_OFF 3072 /* Identify Controller: vs.bdev, 32 bytes */
#define AZURE_SCSI1  "f8b3781b-1e82-4818-a1c3-63d806ec15bb"

static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
			return 0;
	return 1;
}

static int put_name(const char *s, size_t n, char *out, size_t cap)
{
	if (!name_ok(s, n) || n >= cap)
		return -EINVAL;
	memcpy(out, s, n);
	out[n] = 0;
	return 0;
}

int gcp_nvme_device_name(const uint8_t page[NVME_ID_SIZE], char *out, size_t cap)
{
	static const char key[] = "\"device_name\":\"";
	const char *vs = (const char *)page + GCP_VS_OFF, *k, *v, *e;
	size_t n = strnlen(vs, NVME_ID_SIZE - GCP_VS_OFF);

	/* packed JSON, NUL-terminated: {"device_name":"state-disk","disk_type":"PERSISTENT",...} */
	if (n == 0 || vs[0] != '{')
		return -ENOENT;
	k = memmem(vs, n, key, sizeof key - 1);
	if (!k)
		return -ENOENT;
	v = k + sizeof key - 1;
	e = memchr(v, '"', n - (size_t)(v - vs));
	if (!e)
		return -EINVAL;
	return put_name(v, (size_t)(e - v), out, cap);
}

static size_t trim(const char *s, size_t n)
{
	while (n && (s[n - 1] == ' ' || s[n - 1] == 0))
		n--;
	return n;
}

int gcp_vpd83_device_name(const uint8_t *page, size_t len, char *out, size_t cap)
{
	size_t end, t10_off = 0, t10_len = 0;

	if (len < 4 || page[1] != 0x83)
		return -EINVAL;
	end = 4 + ((size_t)page[2] << 8 | page[3]);
	if (end > len)
		return -EINVAL;
	for (size_t off = 4; off + 4 <= end;) {
		const uint8_t *d = page + off;
		size_t dl = d[3];
		int codeset = d[0] & 0x0f, assoc = (d[1] >> 4) & 3, type = d[1] & 0x0f;

		if (off + 4 + dl > end)
			return -EINVAL;
		/* type 0 (vendor specific), the LU's, ASCII: the disk's name (scsi_id's 0x83 pick,
		 * udev's ID_SERIAL_SHORT) */
		if (codeset == 2 && assoc == 0 && type == 0)
			return put_name((const char *)d + 4, trim((const char *)d + 4, dl), out,
					cap);
		if (codeset == 2 && assoc == 0 && type == 1 && !t10_len)
			t10_off = off + 4, t10_len = dl;
		off += 4 + dl;
	}
	/* a T10 vendor ID "Google  PersistentDisk  NAME": the name is the last word */
	if (t10_len > 8 && !memcmp(page + t10_off, "Google  ", 8)) {
		const char *s = (const char *)page + t10_off;
		size_t n = trim(s, t10_len), b = n;

		while (b && s[b - 1] != ' ')
			b--;
		if (b >= 8 && !strncmp(s + 8, "PersistentDisk", 14))
			return put_name(s + b, n - b, out, cap);
	}
	return -ENOENT;
}

int aws_ebs_device_name(const uint8_t page[NVME_ID_SIZE], char *out, size_t cap)
{
	const char *mn = (const char *)page + 24, *b = (const char *)page + EBS_BDEV_OFF;
	size_t mlen = trim(mn, 40), n = strnlen(b, 32);

	if ((page[0] | page[1] << 8) != EBS_VID || mlen != strlen(EBS_MODEL) ||
	    memcmp(mn, EBS_MODEL, mlen))
		return -ENOENT;
	/* "sdb" or "/dev/sdb", padded with spaces and NULs (Constellation PR #355) */
	while (n && b[0] == ' ')
		b++, n--;
	n = trim(b, n);
	if (n > 5 && !memcmp(b, "/dev/", 5))
		b += 5, n -= 5;
	if (n == 0)
		return -ENOENT;
	return put_name(b, n, out, cap);
}

int nvme_identify(const char *dev, const char *name, int cns, uint8_t page[NVME_ID_SIZE])
{
	char path[PATH_MAX];
	struct stat st;
	int fd, r = 0;

	if (snprintf(path, sizeof path, "%s/%s", dev, name) >= (int)sizeof path)
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
	} else if (S_ISREG(st.st_mode)) { /* a recorded device: controller page, namespace page */
		ssize_t k = pread(fd, page, NVME_ID_SIZE, cns == 1 ? 0 : NVME_ID_SIZE);

		r = k == NVME_ID_SIZE ? 0 : -EIO;
	} else {
		struct nvme_admin_cmd c = {
		    .opcode = 0x06, /* Identify */
		    .addr = (uint64_t)(uintptr_t)page,
		    .data_len = NVME_ID_SIZE,
		    .cdw10 = (uint32_t)cns,
		};
		int nsid = cns == 0 ? ioctl(fd, NVME_IOCTL_ID) : 0;

		if (nsid < 0) {
			r = -errno;
		} else {
			c.nsid = (uint32_t)nsid;
			memset(page, 0, NVME_ID_SIZE);
			if (ioctl(fd, NVME_IOCTL_ADMIN_CMD, &c) < 0)
				r = -errno;
			else if (c.result)
				r = -EIO;
		}
	}
	close(fd);
	return r;
}

/* A sysfs attribute of block device name, trimmed, into out; "" when absent. */
static void attr(const struct cloud *cl, const char *name, const char *rel, char *out, size_t cap)
{
	char path[PATH_MAX];
	ssize_t n = -1;
	int fd;

	out[0] = 0;
	if (snprintf(path, sizeof path, "%s/block/%s/%s", cl->sys, name, rel) >= (int)sizeof path)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read_full(fd, out, cap - 1);
	close(fd);
	if (n < 0)
		n = 0;
	while (n && (out[n - 1] == '\n' || out[n - 1] == ' ' || out[n - 1] == 0))
		n--;
	out[n] = 0;
}

static int found(const struct cloud *cl, const char *name, char *out, size_t cap)
{
	if (snprintf(out, cap, "%s/%s", cl->dev, name) >= (int)cap)
		return -ENAMETOOLONG;
	log_info("disk: %s is the state disk", out);
	return 0;
}

#define EXPLAIN(cl, ...)                       \
	do {                                   \
		if ((cl)->explain)             \
			log_info(__VA_ARGS__); \
	} while (0)

/* The whole disks under sys/block, sorted (the kernel's order of discovery is not stable);
 * the count, at most max. */
static int block_names(const struct cloud *cl, char (*names)[32], int max)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof path, "%s/block", cl->sys);
	if (!(d = opendir(path)))
		return 0;
	while ((e = readdir(d)) && n < max) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= 32)
			continue;
		memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
	}
	closedir(d);
	qsort(names, (size_t)n, 32, (int (*)(const void *, const void *))strcmp);
	return n;
}

static int is_nvme_ns(const char *n)
{
	return !strncmp(n, "nvme", 4) && strchr(n + 4, 'n');
}

int disk_scan_gcp(const struct cloud *cl, const char *want, char *out, size_t cap)
{
	char names[64][32], model[64], got[64];
	int n = block_names(cl, names, 64);

	for (int i = 0; i < n; i++) {
		const char *b = names[i];

		if (is_nvme_ns(b)) {
			uint8_t page[NVME_ID_SIZE];
			int r;

			attr(cl, b, "device/model", model, sizeof model);
			if (strcmp(model, "nvme_card-pd")) {
				EXPLAIN(cl, "disk: %s: model '%s', not nvme_card-pd", b, model);
				continue;
			}
			if ((r = nvme_identify(cl->dev, b, 0, page)) < 0) {
				EXPLAIN(cl, "disk: %s: Identify Namespace: %s", b, strerror(-r));
				continue;
			}
			r = gcp_nvme_device_name(page, got, sizeof got);
			EXPLAIN(cl, "disk: %s: nvme_card-pd, device_name %s", b, r ? "none" : got);
		} else if (!strncmp(b, "sd", 2)) {
			uint8_t vpd[1024];
			char path[PATH_MAX];
			ssize_t len = -1;
			int fd, r;

			attr(cl, b, "device/vendor", model, sizeof model);
			if (strcmp(model, "Google")) {
				EXPLAIN(cl, "disk: %s: vendor '%s', not Google", b, model);
				continue;
			}
			attr(cl, b, "device/model", model, sizeof model);
			if (strcmp(model, "PersistentDisk")) {
				EXPLAIN(cl, "disk: %s: model '%s', not PersistentDisk", b, model);
				continue;
			}
			snprintf(path, sizeof path, "%s/block/%s/device/vpd_pg83", cl->sys, b);
			if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
				len = read_full(fd, vpd, sizeof vpd);
				close(fd);
			}
			r = len > 0 ? gcp_vpd83_device_name(vpd, (size_t)len, got, sizeof got)
				    : -ENOENT;
			EXPLAIN(cl, "disk: %s: Google PersistentDisk, VPD 0x83 name %s", b,
				r ? "none" : got);
			if (r)
				continue;
		} else {
			EXPLAIN(cl, "disk: %s: neither NVMe nor SCSI", b);
			continue;
		}
		if (!strcmp(got, want))
			return found(cl, b, out, cap);
	}
	return -ENOENT;
}

int disk_scan_azure(const struct cloud *cl, char *out, size_t cap)
{
	char names[64][32], v[64], path[PATH_MAX], real[PATH_MAX];
	int n = block_names(cl, names, 64);

	for (int i = 0; i < n; i++) {
		const char *b = names[i], *hctl;
		unsigned h, c, t, l;
		char end;

		if (strncmp(b, "sd", 2))
			continue;
		attr(cl, b, "device/vendor", v, sizeof v);
		if (strcmp(v, "Msft")) {
			EXPLAIN(cl, "disk: %s: vendor '%s', not Msft", b, v);
			continue;
		}
		attr(cl, b, "device/model", v, sizeof v);
		if (strcmp(v, "Virtual Disk")) {
			EXPLAIN(cl, "disk: %s: model '%s', not Virtual Disk", b, v);
			continue;
		}
		snprintf(path, sizeof path, "%s/block/%s/device", cl->sys, b);
		if (!realpath(path, real)) {
			EXPLAIN(cl, "disk: %s: no SCSI device", b);
			continue;
		}
		hctl = strrchr(real, '/') + 1;
		if (sscanf(hctl, "%u:%u:%u:%u%c", &h, &c, &t, &l, &end) != 4) {
			EXPLAIN(cl, "disk: %s: %s is no SCSI address", b, hctl);
			continue;
		}
		if (!strstr(real, "/" AZURE_SCSI1 "/")) {
			EXPLAIN(cl, "disk: %s: not under the data-disk controller %s", b,
				AZURE_SCSI1);
			continue;
		}
		EXPLAIN(cl, "disk: %s: data-disk controller, LUN %u", b, l);
		if (l == 0)
			return found(cl, b, out, cap);
	}
	return -ENOENT;
}

int disk_scan_aws(const struct cloud *cl, const char *want, char *out, size_t cap)
{
	char names[64][32], model[64], got[64];
	int n = block_names(cl, names, 64);

	for (int i = 0; i < n; i++) {
		const char *b = names[i];
		uint8_t page[NVME_ID_SIZE];
		int r;

		if (!is_nvme_ns(b))
			continue;
		attr(cl, b, "device/model", model, sizeof model);
		if (strcmp(model, EBS_MODEL)) {
			EXPLAIN(cl, "disk: %s: model '%s', not " EBS_MODEL, b, model);
			continue;
		}
		/* asked of the namespace, which is also what is used (never the controller) */
		if ((r = nvme_identify(cl->dev, b, 1, page)) < 0) {
			EXPLAIN(cl, "disk: %s: Identify Controller: %s", b, strerror(-r));
			continue;
		}
		r = aws_ebs_device_name(page, got, sizeof got);
		EXPLAIN(cl, "disk: %s: EBS, block device name %s", b, r ? "none" : got);
		if (r == 0 && !strcmp(got, want))
			return found(cl, b, out, cap);
	}
	return -ENOENT;
}

int disk_scan_virtio(const struct cloud *cl, char *out, size_t cap)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/vdb", cl->dev);
	if (access(path, F_OK) < 0) {
		EXPLAIN(cl, "disk: %s: %s", path, strerror(errno));
		return -ENOENT;
	}
	return found(cl, "vdb", out, cap);
}
