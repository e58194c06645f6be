/* /init of the state-disk naming test (tests/vm/test_state_disk_vm.sh): QEMU's disks shaped
 * as a cloud attaches them, found by the agent's platform layer on a real kernel. The case
 * (sd.csp=) is the cloud whose naming is used; the device found, its size in sectors and,
 * with sd.nvme=1, what QEMU's NVMe controller answers to the Identify ioctl are reported. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "boot/boot.h"
#include "cloud/cloud.h"
#include "guest.h"

static void size_of(const char *dev)
{
	char path[300], buf[32] = "";
	const char *name = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
	int fd;
	ssize_t n;

	snprintf(path, sizeof path, "/sys/block/%s/size", name);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	printf("@@DATA sectors %s\n", buf);
}

static void nvme_case(void)
{
	uint8_t c[NVME_ID_SIZE], ns[NVME_ID_SIZE];
	int rc = nvme_identify("/dev", "nvme0n1", 1, c),
	    rn = nvme_identify("/dev", "nvme0n1", 0, ns);
	unsigned long long nsze = 0;

	for (int i = 7; i >= 0; i--)
		nsze = nsze << 8 | ns[i];
	guest_result("nvme_identify_controller",
		     rc == 0 && (c[0] | c[1] << 8) == 0x1b36 &&
			 !memcmp(c + 24, "QEMU NVMe Ctrl", 14),
		     "rc %d vid %02x%02x model %.14s", rc, c[1], c[0], c + 24);
	guest_result("nvme_identify_namespace", rn == 0 && nsze > 0, "rc %d nsze %llu", rn, nsze);
	printf("@@DATA nsze %llu\n", nsze);
}

int main(void)
{
	struct cloud cl;
	char err[160], dev[256];
	const char *csp;
	int r;

	guest_start("guest_state_disk", 0);
	modules_load_list("/etc/modules.list");
	csp = guest_arg("sd.csp", "gcp");
	if (!strcmp(guest_arg("sd.nvme", "0"), "1"))
		nvme_case();
	if (cloud_select(csp, NULL, &cl, err, sizeof err) < 0) {
		guest_result("select", 0, "%s", err);
		guest_done();
	}
	cl.explain = 1;
	cl.disk_wait_ms = atoi(guest_arg("sd.wait", "30")) * 1000;
	r = cloud_state_disk(&cl, dev, sizeof dev);
	guest_result("found", (r == 0) == !strcmp(guest_arg("sd.expect", "found"), "found"), "%s",
		     r == 0 ? dev : strerror(-r));
	if (r == 0) {
		printf("@@DATA device %s\n", dev);
		size_of(dev);
	}
	guest_done();
}
