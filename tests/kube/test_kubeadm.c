/* kubeadm's join configuration (spec §10): the node-name rule, and the YAML read back by an
 * independent parser (Debian's PyYAML) with every field where kubeadm looks for it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "kube/kube.h"

TEST(kube_node_name_normalises_like_constellation)
{
	char n[64];

	CHECK(kube_node_name("Worker_0", n, sizeof n) == 0 && !strcmp(n, "worker-0"));
	CHECK(kube_node_name("control-plane-0.local", n, sizeof n) == 0);
	CHECK(kube_node_name("-a", n, sizeof n) == -EINVAL);
	CHECK(kube_node_name("a-", n, sizeof n) == -EINVAL);
	CHECK(kube_node_name("a..b", n, sizeof n) == -EINVAL);
	CHECK(kube_node_name("a b", n, sizeof n) == -EINVAL);
	CHECK(kube_node_name("", n, sizeof n) == -EINVAL);
}

/* Writes y to a file and runs PyYAML over it with the check expression `check` on docs. */
static int python_checks(const char *y, const char *check)
{
	char path[] = "/tmp/constel-kubeadm-XXXXXX", cmd[2048];
	FILE *f;
	int fd = mkstemp(path), r;

	if (fd < 0 || !(f = fdopen(fd, "w")))
		return -1;
	fputs(y, f);
	fclose(f);
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import sys, yaml; d = list(yaml.safe_load_all(open(sys.argv[1]))); "
		 "sys.exit(0 if (%s) else 1)' %s",
		 check, path);
	r = system(cmd);
	unlink(path);
	return r;
}

TEST(kubeadm_join_yaml_for_a_worker_parses_with_every_field)
{
	struct kubeadm_join j = {
	    "Worker_0",	   "Worker_0", "10.42.2.100", "10.42.1.100:6443", "abcdef.0123456789abcdef",
	    "sha256:00ff", 0};
	char y[4096];

	CHECK(kubeadm_join_yaml(&j, y, sizeof y) > 0);
	CHECK(python_checks(y,
			    "len(d) == 2 and d[0][\"kind\"] == \"JoinConfiguration\" and "
			    "d[0][\"apiVersion\"] == \"kubeadm.k8s.io/v1beta3\" and "
			    "d[0][\"discovery\"][\"bootstrapToken\"] == {\"apiServerEndpoint\": "
			    "\"10.42.1.100:6443\", \"token\": \"abcdef.0123456789abcdef\", "
			    "\"caCertHashes\": [\"sha256:00ff\"]} and "
			    "d[0][\"nodeRegistration\"][\"name\"] == \"worker-0\" and "
			    "d[0][\"nodeRegistration\"][\"kubeletExtraArgs\"] == "
			    "{\"cloud-provider\": \"\", \"node-ip\": \"10.42.2.100\"} and "
			    "d[0][\"patches\"][\"directory\"] == \"/opt/kubernetes/patches\" and "
			    "\"controlPlane\" not in d[0] and "
			    "d[1][\"kind\"] == \"KubeletConfiguration\" and "
			    "d[1][\"providerID\"] == \"qemu:///hostname/Worker_0\"") == 0);
}

TEST(kubeadm_join_yaml_for_a_control_plane_and_hostile_values)
{
	struct kubeadm_join j = {"control-plane-1",
				 "control-plane-1",
				 "10.42.1.101",
				 "10.42.1.100:6443",
				 "tok\": x\\",
				 "sha256:00",
				 1};
	char y[4096];

	CHECK(kubeadm_join_yaml(&j, y, sizeof y) > 0);
	CHECK(python_checks(
		  y, "d[0][\"controlPlane\"] == {\"localAPIEndpoint\": "
		     "{\"advertiseAddress\": \"10.42.1.101\", \"bindPort\": 6443}} and "
		     "d[0][\"skipPhases\"] == [\"control-plane-prepare/download-certs\"] and "
		     "d[0][\"discovery\"][\"bootstrapToken\"][\"token\"] == "
		     "\"tok\\\": x\\\\\"") == 0);
	j.token = "a\nb: c";
	CHECK(kubeadm_join_yaml(&j, y, sizeof y) == -EINVAL);
	j.token = "t";
	CHECK(kubeadm_join_yaml(&j, y, 100) == -EINVAL);
	j.node_name = "bad name";
	CHECK(kubeadm_join_yaml(&j, y, sizeof y) == -EINVAL);
}
