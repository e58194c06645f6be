/* sev_guest_fake: a fake /dev/sev-guest inside a QEMU (TCG) guest, a CUSE character device
 * served from user space, for the agent's aws-sev-snp and gcp-sev-snp issuers (docs/sevboot.md).
 * A pre-init step (tests/vm/preinit.c): it forks, and the parent exits 0 once /dev/sev-guest
 * exists; the child serves it for the rest of the boot.
 *
 * Written from the kernel's fs/fuse/cuse.c and include/uapi/linux/fuse.h (CUSE_INIT answered
 * with "DEVNAME=sev-guest"; FUSE_OPEN, FUSE_IOCTL, FUSE_RELEASE; restricted ioctls: the kernel
 * copies _IOC_SIZE(cmd) = 32 bytes of struct snp_guest_request_ioctl in and out, and the
 * request and response buffers it points to are read and written in the caller's memory with
 * process_vm_readv/process_vm_writev and the pid of the FUSE in-header, as the kernel's
 * copy_from_user/copy_to_user do) and from include/uapi/linux/sev-guest.h and
 * drivers/virt/coco/sev-guest/sev-guest.c (Linux 6.1), the same ABI as
 * tests/attest/fake_sev_tsm.py's --dev mode on the host:
 *   - msg_version 0: EINVAL; req_data or resp_data 0: EINVAL; vmpl above 3 or a reserved
 *     byte set: EINVAL;
 *   - SNP_GET_REPORT (0xC0205300): the report into resp_data (status 0, report_size 1184, the
 *     report at offset 32 of the 4000-byte response);
 *   - SNP_GET_EXT_REPORT (0xC0205302): certs_address 0 or certs_len 0 asks for no pages;
 *     otherwise certs_len must be page-aligned and at most 16384 (SEV_FW_BLOB_MAX_SIZE), else
 *     EINVAL; a table needing more pages than given: EIO, exitinfo2 = 1 << 32
 *     (SNP_GUEST_VMM_ERR_INVALID_LEN) and the size needed written back into certs_len; else the
 *     table, zero-padded to certs_len, into certs_address and the report into resp_data;
 *   - the 32-byte struct is copied back only when exitinfo2 is set, as the driver does.
 * The report is the template fake_sev_tsm.py --write makes (its layout: version 3, Milan, the
 * test chain's TCB and chip ID, the signer field) with the request's user_data as REPORT_DATA
 * and its vmpl, signed over bytes 0..0x29f with ECDSA P-384 and SHA-384 (BearSSL), r and s
 * little endian in 72-byte fields at 0x2a0 and 0x2e8. The certificate table is the file
 * fake_sev_tsm.py --write makes (GUID table and DER certificates).
 *
 *   sev_guest_fake [--key PEM] [--template FILE] [--table FILE] [--tamper-first N]
 *                  [--report HEX64]
 * Without arguments (as a pre-init step) the words of /preinit/sev-guest/args, if present.
 * Defaults: /preinit/sev-guest/signer.key (the test signer's EC private key, PEM),
 * /preinit/sev-guest/report.bin, /preinit/sev-guest/table.bin. --tamper-first N: the first N
 * reports get byte 0x90 (the measurement) flipped after signing. --report HEX64: no device;
 * the signed report for that REPORT_DATA (128 hex digits) to stdout (the host test).
 * One console line per request ("sev-guest-fake: GET_EXT_REPORT ..."); the key is never
 * logged. */
#define _GNU_SOURCE /* process_vm_readv, process_vm_writev */
#include <bearssl.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

#define DIR_DEFAULT	"/preinit/sev-guest"
#define DEV_PATH	"/dev/sev-guest"
#define REPORT_LEN	1184
#define SIGNED_LEN	0x2a0
#define TAMPER_BYTE	0x90
#define RESP_LEN	4000
#define BLOB_MAX	16384 /* SEV_FW_BLOB_MAX_SIZE */
#define PAGE		4096
#define IOC_GET_REPORT	0xC0205300u
#define IOC_GET_EXT	0xC0205302u
#define VMM_INVALID_LEN (1ull << 32)
#define READY_WAIT_MS	10000
#define FUSE_BUF	(128 * 1024 + 4096) /* above FUSE_MIN_READ_BUFFER and max_write */

static uint8_t template_[REPORT_LEN];
static uint8_t table[BLOB_MAX];
static size_t table_len;
static uint8_t key_x[48];
static br_ec_private_key key = {BR_EC_secp384r1, key_x, 0};
static long tamper_left;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	dprintf(STDERR_FILENO, "sev-guest-fake: %s\n", line);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* the whole of a file of at most cap bytes; -EFBIG past cap */
static int slurp(const char *path, uint8_t *out, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	ssize_t got;
	uint8_t extra;

	if (fd < 0)
		return -errno;
	got = read_full(fd, out, cap);
	if (got < 0)
		r = (int)got;
	else if ((size_t)got == cap && read_full(fd, &extra, 1) != 0)
		r = -EFBIG; /* anything past cap is too much */
	close(fd);
	*len = got < 0 ? 0 : (size_t)got;
	return r;
}

static int load_key(const char *path)
{
	static uint8_t pem[8192], der[4096];
	br_skey_decoder_context dc;
	const br_ec_private_key *ek;
	size_t n, dn;
	int r = slurp(path, pem, sizeof pem - 1, &n);

	if (r < 0) {
		say("%s: %s", path, strerror(-r));
		return r;
	}
	if ((r = pem_decode((char *)pem, n, "EC PRIVATE KEY", der, sizeof der, &dn)) == -ENOENT)
		r = pem_decode((char *)pem, n, "PRIVATE KEY", der, sizeof der, &dn);
	secret_wipe(pem, sizeof pem);
	if (r < 0) {
		say("%s: no EC private key in PEM", path);
		return -EINVAL;
	}
	br_skey_decoder_init(&dc);
	br_skey_decoder_push(&dc, der, dn);
	secret_wipe(der, sizeof der);
	ek = br_skey_decoder_get_ec(&dc);
	if (br_skey_decoder_last_error(&dc) || !ek || ek->curve != BR_EC_secp384r1 ||
	    ek->xlen > sizeof key_x) {
		secret_wipe(&dc, sizeof dc);
		say("%s: not a P-384 private key", path);
		return -EINVAL;
	}
	memset(key_x, 0, sizeof key_x);
	memcpy(key_x + sizeof key_x - ek->xlen, ek->x, ek->xlen);
	key.xlen = sizeof key_x;
	secret_wipe(&dc, sizeof dc);
	return 0;
}

/* the signed report for data and vmpl into out; 0 or -EIO when signing failed */
static int make_report(const uint8_t data[64], uint32_t vmpl, uint8_t out[REPORT_LEN],
		       int *tampered)
{
	br_sha384_context h;
	uint8_t hash[48], sig[96];

	memcpy(out, template_, REPORT_LEN);
	put32(out + 0x30, vmpl);
	memcpy(out + 0x50, data, 64);
	memset(out + SIGNED_LEN, 0, REPORT_LEN - SIGNED_LEN);
	br_sha384_init(&h);
	br_sha384_update(&h, out, SIGNED_LEN);
	br_sha384_out(&h, hash);
	if (br_ecdsa_i31_sign_raw(&br_ec_all_m31, &br_sha384_vtable, hash, &key, sig) != 96)
		return -EIO;
	/* r and s: big endian from BearSSL, little endian in 72-byte fields in the report */
	for (int i = 0; i < 48; i++) {
		out[0x2a0 + i] = sig[47 - i];
		out[0x2e8 + i] = sig[95 - i];
	}
	*tampered = 0;
	if (tamper_left > 0) {
		tamper_left--;
		out[TAMPER_BYTE] ^= 1;
		*tampered = 1;
	}
	return 0;
}

/* ---- the caller's memory ---- */

static int vm_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = {buf, n}, r = {(void *)(uintptr_t)addr, n};

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

static int vm_write(pid_t pid, uint64_t addr, const void *buf, size_t n)
{
	struct iovec l = {(void *)buf, n}, r = {(void *)(uintptr_t)addr, n};

	return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

/* ---- FUSE_IOCTL: the ioctl's result; *copy_back when io (exitinfo2 set) goes back ---- */
static int do_ioctl(pid_t pid, uint32_t cmd, uint8_t io[32], int *copy_back)
{
	static uint8_t resp[RESP_LEN], pages[BLOB_MAX];
	uint8_t req[112], report[REPORT_LEN];
	const char *what = cmd == IOC_GET_EXT ? "GET_EXT_REPORT" : "GET_REPORT";
	int ext = cmd == IOC_GET_EXT, tampered = 0, r;
	uint64_t req_addr = le64(io + 8), resp_addr = le64(io + 16), certs_addr = 0;
	uint32_t vmpl, certs_len = 0, npages = 0, need;

	*copy_back = 0;
	if (io[0] == 0) {
		say("%s: msg_version 0: EINVAL", what);
		return -EINVAL;
	}
	if (!req_addr || !resp_addr) {
		say("%s: no request or response buffer: EINVAL", what);
		return -EINVAL;
	}
	if (vm_read(pid, req_addr, req, ext ? 112 : 96) < 0) {
		say("%s: request at 0x%llx unreadable: EFAULT", what, (unsigned long long)req_addr);
		return -EFAULT;
	}
	vmpl = le32(req + 64);
	if (vmpl > 3 || memcmp(req + 68, (const uint8_t[28]){0}, 28)) {
		say("%s: vmpl %u or a reserved byte set: EINVAL", what, vmpl);
		return -EINVAL;
	}
	if (ext) {
		certs_addr = le64(req + 96);
		certs_len = le32(req + 104);
		npages = certs_len == 0 || certs_addr == 0 ? 0 : certs_len / PAGE;
		if (certs_len && certs_addr && (certs_len % PAGE || certs_len > BLOB_MAX)) {
			say("%s: certs_len %u not page-aligned or above %d: EINVAL", what,
			    certs_len, BLOB_MAX);
			return -EINVAL;
		}
		need = (uint32_t)((table_len + PAGE - 1) / PAGE);
		if (table_len && need > npages) {
			put32(req + 104, need * PAGE);
			if (vm_write(pid, req_addr + 104, req + 104, 4) < 0)
				return -EFAULT;
			put64(io + 24, VMM_INVALID_LEN);
			*copy_back = 1;
			say("%s: certs_len %u, the table needs %u: EIO (INVALID_LEN, size written "
			    "back)",
			    what, certs_len, need * PAGE);
			return -EIO;
		}
	}
	if ((r = make_report(req, vmpl, report, &tampered)) < 0) {
		say("%s: signing failed", what);
		return r;
	}
	if (ext && npages) {
		memset(pages, 0, npages * PAGE);
		memcpy(pages, table, table_len);
		if (vm_write(pid, certs_addr, pages, npages * PAGE) < 0)
			return -EFAULT;
	}
	memset(resp, 0, sizeof resp);
	put32(resp + 4, REPORT_LEN);
	memcpy(resp + 32, report, REPORT_LEN);
	if (vm_write(pid, resp_addr, resp, sizeof resp) < 0)
		return -EFAULT;
	say("%s: report for pid %d, vmpl %u, signed%s%s", what, (int)pid, vmpl,
	    ext ? (npages ? ", certificate table in the caller's pages" : ", no pages given") : "",
	    tampered ? ", then byte 0x90 flipped (tampered)" : "");
	return 0;
}

/* ---- the CUSE server ---- */

static int reply(int fd, uint64_t unique, int error, const void *a, size_t alen, const void *b,
		 size_t blen)
{
	struct fuse_out_header h = {(uint32_t)(sizeof h + alen + blen), error, unique};
	struct iovec v[3] = {{&h, sizeof h}, {(void *)a, alen}, {(void *)b, blen}};

	return writev(fd, v, 3) < 0 ? -errno : 0;
}

static void serve(int fd)
{
	static uint8_t buf[FUSE_BUF];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		struct fuse_in_header *in = (struct fuse_in_header *)buf;
		uint8_t *body = buf + sizeof *in;
		size_t blen;

		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
			continue;
		if (n < 0) {
			say("read /dev/cuse: %s: exiting", strerror(errno));
			_exit(errno == ENODEV ? 0 : 1);
		}
		if ((size_t)n < sizeof *in || in->len != (size_t)n) {
			say("short FUSE request (%zd bytes): exiting", n);
			_exit(1);
		}
		blen = (size_t)n - sizeof *in;
		switch (in->opcode) {
		case CUSE_INIT: {
			struct cuse_init_in *ci = (struct cuse_init_in *)body;
			struct cuse_init_out co;
			static const char info[] = "DEVNAME=sev-guest";

			if (blen < sizeof *ci || ci->major != FUSE_KERNEL_VERSION ||
			    ci->minor < 11) {
				say("CUSE_INIT: protocol %u.%u not served",
				    blen < 8 ? 0 : ci->major, blen < 8 ? 0 : ci->minor);
				_exit(1);
			}
			memset(&co, 0, sizeof co);
			co.major = FUSE_KERNEL_VERSION;
			co.minor = ci->minor < FUSE_KERNEL_MINOR_VERSION
				       ? ci->minor
				       : FUSE_KERNEL_MINOR_VERSION;
			co.max_read = 65536;
			co.max_write = 65536;
			reply(fd, in->unique, 0, &co, sizeof co, info, sizeof info);
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_out oo = {0};

			reply(fd, in->unique, 0, &oo, sizeof oo, NULL, 0);
			break;
		}
		case FUSE_RELEASE:
		case FUSE_FLUSH:
			reply(fd, in->unique, 0, NULL, 0, NULL, 0);
			break;
		case FUSE_INTERRUPT:
		case FUSE_FORGET:
			break; /* no reply */
		case FUSE_IOCTL: {
			struct fuse_ioctl_in *ii = (struct fuse_ioctl_in *)body;
			struct fuse_ioctl_out oo = {0};
			uint8_t io[32];
			int back;

			if (blen < sizeof *ii ||
			    (ii->cmd != IOC_GET_REPORT && ii->cmd != IOC_GET_EXT) ||
			    ii->in_size != 32 || ii->out_size != 32 || blen < sizeof *ii + 32) {
				say("ioctl 0x%x: ENOTTY", blen < sizeof *ii ? 0 : ii->cmd);
				reply(fd, in->unique, -ENOTTY, NULL, 0, NULL, 0);
				break;
			}
			memcpy(io, body + sizeof *ii, 32);
			oo.result = do_ioctl((pid_t)in->pid, ii->cmd, io, &back);
			if (oo.result < 0 && !back) /* nothing to copy back: the error alone */
				reply(fd, in->unique, oo.result, NULL, 0, NULL, 0);
			else
				reply(fd, in->unique, 0, &oo, sizeof oo, io, 32);
			break;
		}
		default:
			reply(fd, in->unique, -ENOSYS, NULL, 0, NULL, 0);
		}
	}
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* the device: CUSE served by a child; 0 once /dev/sev-guest exists */
static int start_device(void)
{
	struct stat st;
	long long end;
	pid_t pid;
	int fd, status;

	if (stat(DEV_PATH, &st) == 0) {
		say("%s exists already (a real SEV-SNP guest?): not faking it", DEV_PATH);
		return -EEXIST;
	}
	fd = open("/dev/cuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		say("/dev/cuse: %s (the cuse module not loaded?)", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		setsid();
		if (chdir("/") < 0)
			_exit(1);
		serve(fd);
	}
	close(fd);
	for (end = now_ms() + READY_WAIT_MS; now_ms() < end;) {
		if (stat(DEV_PATH, &st) == 0 && S_ISCHR(st.st_mode)) {
			say("%s ready (server pid %d, table %zu bytes%s)", DEV_PATH, (int)pid,
			    table_len, tamper_left ? ", the first reports tampered" : "");
			return 0;
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			say("the server exited before %s appeared", DEV_PATH);
			return -ECHILD;
		}
		poll(NULL, 0, 10);
	}
	say("%s did not appear within %d ms", DEV_PATH, READY_WAIT_MS);
	return -ETIMEDOUT;
}

int main(int argc, char **argv)
{
	const char *keyf = DIR_DEFAULT "/signer.key", *tmplf = DIR_DEFAULT "/report.bin",
		   *tablef = DIR_DEFAULT "/table.bin", *report_hex = NULL;
	static char words[1024];
	char *wargv[32];
	size_t n;
	int r;

	if (argc == 1 && slurp(DIR_DEFAULT "/args", (uint8_t *)words, sizeof words - 1, &n) == 0) {
		/* a pre-init step has no arguments: they come from the overlay */
		char *save, *w;

		words[n] = 0;
		wargv[0] = argv[0];
		argc = 1;
		for (w = strtok_r(words, " \t\n", &save); w && argc < 31;
		     w = strtok_r(NULL, " \t\n", &save))
			wargv[argc++] = w;
		wargv[argc] = NULL;
		argv = wargv;
	}
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!v) {
			say("%s needs a value", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--key"))
			keyf = v;
		else if (!strcmp(argv[i], "--template"))
			tmplf = v;
		else if (!strcmp(argv[i], "--table"))
			tablef = v;
		else if (!strcmp(argv[i], "--report"))
			report_hex = v;
		else if (!strcmp(argv[i], "--tamper-first")) {
			errno = 0;
			tamper_left = strtol(v, &end, 10);
			if (errno || *end || end == v || tamper_left < 0) {
				say("--tamper-first '%s': want a count", v);
				return 2;
			}
		} else {
			say("unknown argument '%s'", argv[i]);
			return 2;
		}
		i++;
	}
	if ((r = slurp(tmplf, template_, sizeof template_, &n)) < 0 || n != REPORT_LEN) {
		say("%s: %s", tmplf, r < 0 ? strerror(-r) : "not a 1184-byte report");
		return 1;
	}
	if ((r = slurp(tablef, table, sizeof table, &table_len)) < 0) {
		say("%s: %s", tablef, r == -EFBIG ? "more than 16384 bytes" : strerror(-r));
		return 1;
	}
	if (load_key(keyf) < 0)
		return 1;
	if (report_hex) {
		uint8_t data[64], report[REPORT_LEN];
		int tampered;

		size_t dlen;

		if (strlen(report_hex) != 128 ||
		    hex_decode(report_hex, 128, data, sizeof data, &dlen) < 0 || dlen != 64) {
			say("--report: want 128 hex digits");
			return 2;
		}
		if (make_report(data, 0, report, &tampered) < 0) {
			say("signing failed");
			return 1;
		}
		return fwrite(report, 1, REPORT_LEN, stdout) == REPORT_LEN && fflush(stdout) == 0
			   ? 0
			   : 1;
	}
	return start_device() < 0 ? 1 : 0;
}
