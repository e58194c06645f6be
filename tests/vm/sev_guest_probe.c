/* sev_guest_probe: a pre-init step after tests/vm/sev_guest_fake.c that calls /dev/sev-guest
 * through the kernel (CUSE's restricted ioctl) as a caller the agent is not: the answers of
 * the ABI (include/uapi/linux/sev-guest.h, drivers/virt/coco/sev-guest/sev-guest.c) that the
 * agent's happy path does not reach. It asks for no report, so the fake's --tamper-first count
 * is left to the agent. One line per check, "sev-guest-probe: PASS name" or
 * "sev-guest-probe: FAIL name: why"; it always exits 0 (the boot goes on, the test reads the
 * lines). tests/vm/test_snp_vm.sh. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEV		"/dev/sev-guest"
#define TABLE		"/preinit/sev-guest/table.bin"
#define IOC_GET_REPORT	0xC0205300u
#define IOC_DERIVED_KEY 0xC0205301u
#define IOC_GET_EXT	0xC0205302u

struct report_req {
	uint8_t user_data[64];
	uint32_t vmpl;
	uint8_t rsvd[28];
};
struct ext_req {
	struct report_req data;
	uint64_t certs_address;
	uint32_t certs_len;
};
struct guest_ioctl {
	uint8_t msg_version;
	uint64_t req_data;
	uint64_t resp_data;
	uint64_t exitinfo2;
};
_Static_assert(sizeof(struct ext_req) == 112, "snp_ext_report_req");
_Static_assert(sizeof(struct guest_ioctl) == 32, "snp_guest_request_ioctl");

static void result(const char *name, int ok, const char *fmt, int a, unsigned long long b)
{
	char why[160] = "";

	if (!ok)
		snprintf(why, sizeof why, fmt, a, b);
	printf("sev-guest-probe: %s %s%s%s\n", ok ? "PASS" : "FAIL", name, ok ? "" : ": ", why);
}

/* one ioctl: its errno (0 on success) and the struct as it came back */
static int call(int fd, unsigned cmd, uint8_t ver, void *req, void *resp, struct guest_ioctl *io)
{
	memset(io, 0, sizeof *io);
	io->msg_version = ver;
	io->req_data = (uint64_t)(uintptr_t)req;
	io->resp_data = (uint64_t)(uintptr_t)resp;
	return ioctl(fd, cmd, io) == 0 ? 0 : errno;
}

int main(void)
{
	static uint8_t resp[4000], certs[32768];
	struct ext_req ext;
	struct guest_ioctl io;
	struct stat st;
	long table_pages = -1;
	int fd, e;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (stat(TABLE, &st) == 0)
		table_pages = (st.st_size + 4095) / 4096;
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	result("open", fd >= 0, "open: errno %d", errno, 0);
	if (fd < 0)
		return 0;
	memset(&ext, 0, sizeof ext);

	e = call(fd, IOC_GET_REPORT, 0, &ext.data, resp, &io);
	result("msg_version_0_einval", e == EINVAL, "errno %d", e, 0);

	ext.certs_address = (uint64_t)(uintptr_t)certs;
	ext.certs_len = 0;
	e = call(fd, IOC_GET_EXT, 1, &ext, resp, &io);
	result("ext_report_no_pages_eio_invalid_len", e == EIO && io.exitinfo2 == 1ull << 32,
	       "errno %d, exitinfo2 0x%llx", e, (unsigned long long)io.exitinfo2);
	result("ext_report_size_written_back", ext.certs_len == table_pages * 4096,
	       "certs_len %d, want %llu", (int)ext.certs_len,
	       (unsigned long long)table_pages * 4096);

	ext.certs_len = 100;
	e = call(fd, IOC_GET_EXT, 1, &ext, resp, &io);
	result("ext_report_unaligned_certs_len_einval", e == EINVAL, "errno %d", e, 0);
	ext.certs_len = 32768;
	e = call(fd, IOC_GET_EXT, 1, &ext, resp, &io);
	result("ext_report_certs_len_above_16k_einval", e == EINVAL, "errno %d", e, 0);

	ext.certs_len = 0;
	ext.data.vmpl = 4;
	e = call(fd, IOC_GET_REPORT, 1, &ext.data, resp, &io);
	result("vmpl_4_einval", e == EINVAL, "errno %d", e, 0);
	ext.data.vmpl = 0;
	ext.data.rsvd[27] = 1;
	e = call(fd, IOC_GET_REPORT, 1, &ext.data, resp, &io);
	result("reserved_byte_einval", e == EINVAL, "errno %d", e, 0);
	ext.data.rsvd[27] = 0;

	e = call(fd, IOC_GET_EXT, 1, &ext, NULL, &io);
	result("no_response_buffer_einval", e == EINVAL, "errno %d", e, 0);
	e = call(fd, IOC_GET_REPORT, 1, (void *)(uintptr_t)8, resp, &io);
	result("unreadable_request_efault", e == EFAULT, "errno %d", e, 0);
	e = call(fd, IOC_DERIVED_KEY, 1, &ext.data, resp, &io);
	result("derived_key_enotty", e == ENOTTY, "errno %d", e, 0);
	close(fd);
	return 0;
}
