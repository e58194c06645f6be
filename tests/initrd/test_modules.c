/* The module loader's order and parallelism (agent/boot/modules.c) with a test double for
 * finit_module: fake_load "loads" a module by sleeping and writes when it started and ended to
 * a log (O_APPEND, one write a line, so children do not mix lines); its file name says how it
 * behaves: "slow" 200 ms, "hang" 5 s, "noexec" fails with ENOEXEC, "nodev" with ENODEV,
 * "exist" with EEXIST, anything else 60 ms. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "boot/boot.h"
#include "harness.h"

static char logpath[256];

static long long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void note(const char *what, const char *name)
{
	char line[128];
	int fd = open(logpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	int n = snprintf(line, sizeof line, "%s %s %lld\n", what, name, now_us());

	if (fd >= 0) {
		(void)!write(fd, line, (size_t)n);
		close(fd);
	}
}

static int fake_load(const char *path)
{
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	long ms = strstr(name, "slow") ? 200 : strstr(name, "hang") ? 5000 : 60;
	struct timespec d = {ms / 1000, (ms % 1000) * 1000000};

	note("S", name);
	nanosleep(&d, NULL);
	note("E", name);
	if (strstr(name, "noexec"))
		return -ENOEXEC;
	if (strstr(name, "nodev"))
		return -ENODEV;
	if (strstr(name, "exist"))
		return -EEXIST;
	return 0;
}

struct ev {
	char what, name[32];
	long long t;
};

/* The log, in time order (it is written in that order). */
static int read_log(struct ev *ev, int max)
{
	FILE *f = fopen(logpath, "r");
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fscanf(f, " %c %31s %lld", &ev[n].what, ev[n].name, &ev[n].t) == 3)
		n++;
	fclose(f);
	return n;
}

static long long when(const struct ev *ev, int n, char what, const char *name)
{
	for (int i = 0; i < n; i++)
		if (ev[i].what == what && !strcmp(ev[i].name, name))
			return ev[i].t;
	return -1;
}

/* The most modules loading at one time. */
static int most_at_once(const struct ev *ev, int n)
{
	int cur = 0, most = 0;

	for (int i = 0; i < n; i++) {
		cur += ev[i].what == 'S' ? 1 : -1;
		most = cur > most ? cur : most;
	}
	return most;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* A fixture: modules.list with the given names (under /m/), modules.dep when dep is not NULL. */
static void fixture(char dir[64], const char *names, const char *dep)
{
	char list[1024] = "";

	harness_tmpdir(dir, "modules");
	snprintf(logpath, sizeof logpath, "%s", harness_path(dir, "log"));
	for (const char *p = names; *p;) {
		size_t k = strcspn(p, " ");

		snprintf(list + strlen(list), sizeof list - strlen(list), "/m/%.*s.ko\n", (int)k,
			 p);
		p += k + (p[k] == ' ');
	}
	write_file(harness_path(dir, "modules.list"), list);
	if (dep)
		write_file(harness_path(dir, "modules.dep"), dep);
}

static int run(const char *dir, int jobs, int deadline_ms, int with_dep)
{
	struct modules_opts o = {.jobs = jobs, .deadline_ms = deadline_ms, .load = fake_load};
	char list[256], dep[256];

	snprintf(list, sizeof list, "%s", harness_path(dir, "modules.list"));
	snprintf(dep, sizeof dep, "%s", harness_path(dir, "modules.dep"));
	return modules_load_with(list, with_dep ? dep : NULL, &o);
}

TEST(modules_load_side_by_side_each_after_what_it_waits_for)
{
	char dir[64];
	struct ev ev[64];
	int n;

	/* a; b waits for a; c alone (slow); d waits for b and c; e waits for a */
	fixture(dir, "a b slowc d e", "1:\n2: 1\n3:\n4: 2 3\n5: 1\n");
	CHECK(run(dir, 2, 10000, 1) == 0);
	n = read_log(ev, 64);
	harness_rmtree(dir);
	CHECK(n == 10);
	CHECK(when(ev, n, 'S', "b.ko") >= when(ev, n, 'E', "a.ko"));
	CHECK(when(ev, n, 'S', "e.ko") >= when(ev, n, 'E', "a.ko"));
	CHECK(when(ev, n, 'S', "d.ko") >= when(ev, n, 'E', "b.ko"));
	CHECK(when(ev, n, 'S', "d.ko") >= when(ev, n, 'E', "slowc.ko"));
	/* a and slowc start together, b and e run while slowc still loads */
	CHECK(when(ev, n, 'S', "slowc.ko") < when(ev, n, 'E', "a.ko"));
	CHECK(when(ev, n, 'S', "b.ko") < when(ev, n, 'E', "slowc.ko"));
	CHECK(most_at_once(ev, n) == 2);
}

TEST(modules_never_load_more_at_once_than_jobs)
{
	char dir[64];
	struct ev ev[64];
	int n;

	fixture(dir, "a b c d e f", "1:\n2:\n3:\n4:\n5:\n6:\n");
	CHECK(run(dir, 3, 10000, 1) == 0);
	n = read_log(ev, 64);
	harness_rmtree(dir);
	CHECK(n == 12);
	/* never more than jobs; side by side at all (3 at once on a quiet machine, but a busy one
	 * can start a 60 ms load after the others ended: 2 seen beside two CPU hogs) */
	CHECK(most_at_once(ev, n) <= 3);
	CHECK(most_at_once(ev, n) >= 2);
}

TEST(modules_without_a_dep_file_or_one_cpu_load_in_list_order_one_at_a_time)
{
	char dir[64];
	struct ev ev[64];
	int n;

	fixture(dir, "a b c", "1:\n2:\n3:\n");
	CHECK(run(dir, 4, 10000, 0) == 0); /* no modules.dep */
	CHECK(run(dir, 1, 10000, 1) == 0); /* one job */
	n = read_log(ev, 64);
	harness_rmtree(dir);
	CHECK(n == 12);
	CHECK(most_at_once(ev, n) == 1);
	for (int i = 0; i < 12; i++)
		CHECK(ev[i].name[0] == "abc"[i / 2 % 3] && ev[i].what == "SE"[i % 2]);
}

TEST(modules_a_dep_file_that_does_not_match_means_list_order)
{
	static const char *bad[] = {"1:\n2: 3\n3:\n",	  "1:\n2: 0\n3:\n", "1:\n2: 1\n",
				    "1:\n2: 1\n3:\n4:\n", "1:\n3: 1\n3:\n", "1:\n2: x\n3:\n"};

	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		char dir[64];
		struct ev ev[64];
		int n;

		fixture(dir, "a b c", bad[k]);
		CHECK(run(dir, 4, 10000, 1) == 0);
		n = read_log(ev, 64);
		harness_rmtree(dir);
		CHECK(n == 6 && most_at_once(ev, n) == 1);
	}
}

TEST(modules_count_failures_but_not_eexist_or_enodev)
{
	char dir[64];

	fixture(dir, "a noexec nodev exist b", "1:\n2:\n3:\n4:\n5: 1 2\n");
	CHECK(run(dir, 2, 10000, 1) == 1);
	CHECK(run(dir, 1, 10000, 1) == 1);
	harness_rmtree(dir);
}

TEST(modules_a_dependency_without_its_hardware_skips_its_dependents_quietly)
{
	struct ev ev[64];
	char dir[64];
	int n;

	/* nodevbus: hv_vmbus off Azure; drv (hv_netvsc) needs it, other does not */
	fixture(dir, "nodevbus drv other", "1:\n2: 1\n3:\n");
	CHECK(run(dir, 2, 10000, 1) == 0);
	n = read_log(ev, 64);
	CHECK(when(ev, n, 'S', "nodevbus.ko") >= 0 && when(ev, n, 'S', "other.ko") >= 0);
	CHECK(when(ev, n, 'S', "drv.ko") < 0);
	harness_rmtree(dir);
}

TEST(modules_still_loading_at_the_deadline_are_not_waited_for)
{
	char dir[64];
	long long t0 = now_us();
	struct ev ev[64];
	int r, n;

	/* hang never ends in time; b waits for it and is never started */
	fixture(dir, "a hang b", "1:\n2:\n3: 2\n");
	r = run(dir, 2, 500, 1);
	n = read_log(ev, 64);
	harness_rmtree(dir);
	CHECK(r == 2);
	CHECK(now_us() - t0 < 2000000);
	CHECK(when(ev, n, 'E', "a.ko") > 0 && when(ev, n, 'S', "b.ko") < 0);
}

TEST(modules_an_unreadable_list_is_an_error)
{
	struct modules_opts o = {.jobs = 2, .deadline_ms = 1000, .load = fake_load};

	CHECK(modules_load_with("/nonexistent/modules.list", NULL, &o) == -ENOENT);
}

/* ---- the network's modules first, the rest in the background (modules_start_with) ---- */

/* A fixture as above with modules.phase from phases ("n r d h": one word a module). */
static void phased(char dir[64], const char *names, const char *dep, const char *phases)
{
	static const char *const word[] = {"network", "root", "verity", "disk", "handover"};
	char text[1024] = "";
	int i = 1;

	fixture(dir, names, dep);
	for (const char *p = phases; *p; p++)
		if (*p != ' ')
			snprintf(text + strlen(text), sizeof text - strlen(text), "%d: %s\n", i++,
				 word[strchr("nrvdh", *p) - "nrvdh"]);
	write_file(harness_path(dir, "modules.phase"), text);
}

static int start(const char *dir, int jobs, int deadline_ms, int with_phase)
{
	struct modules_opts o = {.jobs = jobs, .deadline_ms = deadline_ms, .load = fake_load};
	char list[256], dep[256], phase[256];

	snprintf(list, sizeof list, "%s", harness_path(dir, "modules.list"));
	snprintf(dep, sizeof dep, "%s", harness_path(dir, "modules.dep"));
	snprintf(phase, sizeof phase, "%s", harness_path(dir, "modules.phase"));
	return modules_start_with(list, dep, with_phase ? phase : NULL, &o);
}

TEST(modules_the_network_first_then_each_phase_waits_for_exactly_its_own)
{
	for (int jobs = 1; jobs <= 2; jobs++) {
		char dir[64];
		struct ev ev[64];
		long long t_start, t_root, t_disk;
		int n;

		/* n1, n2 the NIC's; r (root) waits for n1; slowd1, slowd2 the disk's; h last */
		phased(dir, "n1 n2 r slowd1 slowd2 h", "1:\n2: 1\n3: 1\n4:\n5: 4\n6:\n", "nnrddh");
		CHECK(start(dir, jobs, 10000, 1) == 0);
		t_start = now_us();
		/* the network's modules are in when modules_start returns, nothing else is */
		n = read_log(ev, 64);
		CHECK(n >= 4 && when(ev, n, 'E', "n2.ko") > 0 && when(ev, n, 'E', "n1.ko") > 0);
		CHECK(when(ev, n, 'E', "r.ko") < 0 && when(ev, n, 'E', "h.ko") < 0);
		CHECK(modules_wait(MODULES_ROOT, 5000) == 0);
		t_root = now_us();
		n = read_log(ev, 64);
		/* root's module is in, the disk's slow ones are still loading */
		CHECK(when(ev, n, 'E', "r.ko") > 0 && when(ev, n, 'E', "r.ko") <= t_root);
		CHECK(when(ev, n, 'E', "slowd2.ko") < 0);
		CHECK(t_root - t_start < 200000);
		CHECK(modules_wait(MODULES_DISK, 5000) == 0);
		t_disk = now_us();
		n = read_log(ev, 64);
		CHECK(when(ev, n, 'E', "slowd2.ko") > 0 && when(ev, n, 'E', "slowd2.ko") <= t_disk);
		CHECK(when(ev, n, 'S', "slowd2.ko") >= when(ev, n, 'E', "slowd1.ko"));
		CHECK(modules_wait(MODULES_HANDOVER, 5000) == 0);
		n = read_log(ev, 64);
		CHECK(n == 12 && when(ev, n, 'E', "h.ko") > 0);
		/* once in, a wait returns at once */
		t_disk = now_us();
		CHECK(modules_wait(MODULES_DISK, 5000) == 0 && now_us() - t_disk < 20000);
		harness_rmtree(dir);
	}
}

TEST(modules_a_phase_wait_counts_its_failures_and_is_bounded)
{
	char dir[64];
	long long t0;

	/* a root module that fails, a disk module that hangs (5 s) */
	phased(dir, "n noexec hang h", "1:\n2:\n3:\n4:\n", "nrdh");
	CHECK(start(dir, 1, 10000, 1) == 0);
	CHECK(modules_wait(MODULES_ROOT, 5000) == 1);
	t0 = now_us();
	CHECK(modules_wait(MODULES_DISK, 300) == -ETIMEDOUT);
	CHECK(now_us() - t0 >= 300000 && now_us() - t0 < 1000000);
	harness_rmtree(dir);
}

TEST(modules_without_a_matching_phase_file_all_load_before_the_network)
{
	static const char *bad[] = {"1: network\n2: root\n",	       /* too short */
				    "1: network\n2: soon\n3: root\n",  /* no such phase */
				    "1: root\n2: network\n3: root\n"}; /* b waits for a (root) */

	for (int k = -1; k < (int)(sizeof bad / sizeof *bad); k++) {
		char dir[64];
		struct ev ev[64];
		long long t0;
		int n;

		fixture(dir, "a b c", "1:\n2: 1\n3:\n");
		if (k >= 0)
			write_file(harness_path(dir, "modules.phase"), bad[k]);
		CHECK(start(dir, 1, 10000, k >= 0) == 0);
		n = read_log(ev, 64);
		CHECK(n == 6);
		t0 = now_us();
		CHECK(modules_wait(MODULES_HANDOVER, 5000) == 0 && now_us() - t0 < 20000);
		harness_rmtree(dir);
	}
}

/* ---- constel.csp: only its cloud's NIC and disk modules (modules_opts.csp) ---- */

/* The modules of list (names) loaded for csp, as "a b c" in list order (each once). */
static void loaded_for(const char *names, const char *dep, const char *csp, char *out, size_t cap)
{
	struct modules_opts o = {.jobs = 2, .deadline_ms = 10000, .load = fake_load, .csp = csp};
	char dir[64], list[256], depf[256];
	struct ev ev[64];
	int n;

	fixture(dir, names, dep);
	snprintf(list, sizeof list, "%s", harness_path(dir, "modules.list"));
	snprintf(depf, sizeof depf, "%s", harness_path(dir, "modules.dep"));
	out[0] = 0;
	if (modules_load_with(list, depf, &o) == 0) {
		n = read_log(ev, 64);
		for (int i = 0; i < n; i++)
			if (ev[i].what == 'E')
				snprintf(out + strlen(out), cap - strlen(out), "%s%.*s",
					 out[0] ? " " : "", (int)(strlen(ev[i].name) - 3),
					 ev[i].name);
	}
	harness_rmtree(dir);
}

static int has_exactly(const char *got, const char *want)
{
	char a[512], b[512];
	int na = 0, nb = 0;

	/* same words, any order (the loads run side by side) */
	snprintf(a, sizeof a, " %s ", got);
	for (const char *p = want; *p;) {
		size_t k = strcspn(p, " ");
		snprintf(b, sizeof b, " %.*s ", (int)k, p);
		if (!strstr(a, b))
			return 0;
		nb++;
		p += k + (p[k] == ' ');
	}
	for (const char *p = got; *p; p += strcspn(p, " "), p += *p == ' ')
		na++;
	return na == nb;
}

TEST(modules_of_other_clouds_and_what_only_they_need_are_not_loaded)
{
	/* the initrd's shape: virtio, the clouds' NICs, the SCSI and NVMe stacks */
	const char *names = "virtio virtio_net gve hv_vmbus hv_netvsc ena scsi_common scsi_mod "
			    "virtio_scsi sd_mod hv_storvsc nvme-core nvme dm-mod pci-hyperv-intf "
			    "pci-hyperv mlx5_core overlay";
	const char *dep = "1:\n2: 1\n3:\n4:\n5: 4\n6:\n7:\n8: 7\n9: 1 7 8\n10: 7 8\n"
			  "11: 4 7 8\n12:\n13: 12\n14:\n15:\n16: 4 15\n17: 15\n18:\n";
	char got[512];

	loaded_for(names, dep, "qemu", got, sizeof got);
	CHECK(has_exactly(got, "virtio virtio_net dm-mod overlay"));
	loaded_for(names, dep, "openstack", got, sizeof got);
	CHECK(has_exactly(got, "virtio virtio_net dm-mod overlay"));
	loaded_for(names, dep, "gcp", got, sizeof got);
	CHECK(has_exactly(got, "virtio virtio_net gve scsi_common scsi_mod virtio_scsi sd_mod "
			       "nvme-core nvme dm-mod overlay"));
	loaded_for(names, dep, "aws", got, sizeof got);
	CHECK(has_exactly(got, "virtio virtio_net ena nvme-core nvme dm-mod overlay"));
	loaded_for(names, dep, "azure", got, sizeof got);
	CHECK(has_exactly(got, "virtio virtio_net hv_vmbus hv_netvsc scsi_common scsi_mod sd_mod "
			       "hv_storvsc dm-mod pci-hyperv-intf pci-hyperv mlx5_core overlay"));
	/* no csp (the host's tools): every module */
	loaded_for(names, dep, NULL, got, sizeof got);
	CHECK(has_exactly(got, names));
	CHECK(modules_cloud_only("/lib/modules/6.1/kernel/drivers/nvme/host/nvme.ko", "qemu") == 1);
	CHECK(modules_cloud_only("/lib/modules/6.1/kernel/drivers/nvme/host/nvme.ko", "aws") == 0);
	CHECK(modules_cloud_only("/m/virtio_net.ko", "azure") == 0);
}

TEST(modules_of_other_clouds_are_not_waited_for_in_their_phase)
{
	struct modules_opts o = {.jobs = 1, .deadline_ms = 10000, .load = fake_load, .csp = "qemu"};
	char dir[64], list[256], dep[256], phase[256];
	struct ev ev[64];
	long long t0;
	int n;

	/* gve before the network, mlx5_core at the handover: neither on QEMU */
	phased(dir, "n gve r mlx5_core h", "1:\n2:\n3:\n4:\n5:\n", "nnrhh");
	snprintf(list, sizeof list, "%s", harness_path(dir, "modules.list"));
	snprintf(dep, sizeof dep, "%s", harness_path(dir, "modules.dep"));
	snprintf(phase, sizeof phase, "%s", harness_path(dir, "modules.phase"));
	CHECK(modules_start_with(list, dep, phase, &o) == 0);
	t0 = now_us();
	CHECK(modules_wait(MODULES_HANDOVER, 5000) == 0);
	CHECK(now_us() - t0 < 2000000);
	n = read_log(ev, 64);
	CHECK(when(ev, n, 'E', "n.ko") > 0 && when(ev, n, 'E', "r.ko") > 0 &&
	      when(ev, n, 'E', "h.ko") > 0);
	CHECK(when(ev, n, 'S', "gve.ko") < 0 && when(ev, n, 'S', "mlx5_core.ko") < 0);
	harness_rmtree(dir);
}
