/* kubeadm's join and init configurations (spec §10): the node-name rule, and the YAML read
 * back by an independent parser (Debian's PyYAML) with every field where kubeadm looks for
 * it; the init configuration's version gate, defaults and refusals. */
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
	char path[] = "/tmp/constel-kubeadm-XXXXXX", cmd[8192];
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

/* ---- init ---- */

static const char *const sans[] = {"cluster.example.com", "", "192.0.2.7"};

static struct kubeadm_init init_config(void)
{
	return (struct kubeadm_init){.node_name = "Control_Plane-0",
				     .provider_name = "control-plane-0",
				     .node_ip = "10.42.1.100",
				     .lb_host = "10.42.1.100",
				     .kubernetes_version = "v1.32.9",
				     .cluster_name = "",
				     .service_cidr = "10.96.0.0/12",
				     .cert_sans = sans,
				     .n_sans = 3};
}

TEST(kubeadm_init_yaml_parses_with_every_field)
{
	struct kubeadm_init c = init_config();
	char y[16384];

	CHECK(kubeadm_init_yaml(&c, y, sizeof y) > 0);
	CHECK(
	    python_checks(
		y,
		"len(d) == 3 and [x[\"kind\"] for x in d] == [\"InitConfiguration\", "
		"\"ClusterConfiguration\", \"KubeletConfiguration\"] and "
		"[x[\"apiVersion\"] for x in d] == [\"kubeadm.k8s.io/v1beta3\"] * 2 + "
		"[\"kubelet.config.k8s.io/v1beta1\"] and "
		"d[0][\"nodeRegistration\"] == {\"name\": \"control-plane-0\", "
		"\"criSocket\": \"unix:///run/containerd/containerd.sock\", "
		"\"kubeletExtraArgs\": {\"cloud-provider\": \"\", \"node-ip\": "
		"\"10.42.1.100\", \"provider-id\": \"qemu:///hostname/control-plane-0\"}} and "
		"d[0][\"localAPIEndpoint\"] == {\"advertiseAddress\": \"10.42.1.100\", "
		"\"bindPort\": 6443} and "
		"d[0][\"patches\"] == {\"directory\": \"/opt/kubernetes/patches\"} and "
		"d[1][\"clusterName\"] == \"constellation\" and "
		"d[1][\"kubernetesVersion\"] == \"v1.32.9\" and "
		"d[1][\"controlPlaneEndpoint\"] == \"10.42.1.100:6443\" and "
		"d[1][\"networking\"] == {\"serviceSubnet\": \"10.96.0.0/12\"} and "
		"d[1][\"apiServer\"][\"certSANs\"] == [\"127.0.0.1\", \"10.42.1.100\", "
		"\"cluster.example.com\", \"192.0.2.7\"] and "
		"d[1][\"apiServer\"][\"extraArgs\"] == {"
		"\"audit-policy-file\": \"/etc/kubernetes/audit-policy.yaml\", "
		"\"audit-log-path\": \"/var/log/kubernetes/audit/audit.log\", "
		"\"audit-log-maxage\": \"30\", \"audit-log-maxbackup\": \"10\", "
		"\"audit-log-maxsize\": \"100\", \"profiling\": \"false\", "
		"\"kubelet-certificate-authority\": \"/etc/kubernetes/pki/ca.crt\"} and "
		"[(v[\"hostPath\"], v[\"mountPath\"], v[\"readOnly\"]) for v in "
		"d[1][\"apiServer\"][\"extraVolumes\"]] == [(\"/var/log/kubernetes/audit/\", "
		"\"/var/log/kubernetes/audit/\", False), (\"/etc/kubernetes/audit-policy.yaml\", "
		"\"/etc/kubernetes/audit-policy.yaml\", True)] and "
		"d[1][\"controllerManager\"][\"extraArgs\"][\"profiling\"] == \"false\" and "
		"d[1][\"scheduler\"][\"extraArgs\"] == {\"profiling\": \"false\"} and "
		"d[1][\"featureGates\"] == {\"ControlPlaneKubeletLocalMode\": True} and "
		"d[2][\"tlsCertFile\"] == \"/run/state/kubelet/pki/kubelet-client-crt.pem\" and "
		"d[2][\"tlsPrivateKeyFile\"] == "
		"\"/run/state/kubelet/pki/kubelet-client-key.pem\" and "
		"d[2][\"tlsCipherSuites\"][0] == \"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256\" and "
		"len(d[2][\"tlsCipherSuites\"]) == 8 and "
		"all(\"CBC\" not in x and \"3DES\" not in x for x in d[2][\"tlsCipherSuites\"]) "
		"and d[2][\"registerWithTaints\"] == [{\"key\": "
		"\"node.cloudprovider.kubernetes.io/uninitialized\", \"value\": \"true\", "
		"\"effect\": \"PreferNoSchedule\"}, {\"key\": \"node.cilium.io/agent-not-ready\", "
		"\"value\": \"true\", \"effect\": \"PreferNoSchedule\"}] and "
		"d[2][\"protectKernelDefaults\"] is True and "
		"d[2][\"staticPodPath\"] == \"/etc/kubernetes/manifests\" and "
		"\"providerID\" not in d[2] and \"taints\" not in d[0][\"nodeRegistration\"]") ==
	    0);
}

TEST(kubeadm_init_yaml_gates_kubelet_local_mode_from_1_31)
{
	static const struct {
		const char *v;
		int gate;
	} cases[] = {{"v1.30.14", 0}, {"v1.31.0", 1}, {"v1.31", 1}, {"v1.9.0", 0}, {"v2.0.1", 1}};
	struct kubeadm_init c = init_config();
	char y[16384], check[256];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		c.kubernetes_version = cases[i].v;
		CHECK(kubeadm_init_yaml(&c, y, sizeof y) > 0);
		snprintf(
		    check, sizeof check,
		    "d[1][\"kubernetesVersion\"] == \"%s\" and (\"featureGates\" in d[1]) == %s",
		    cases[i].v, cases[i].gate ? "True" : "False");
		CHECK(python_checks(y, check) == 0);
	}
}

TEST(kubeadm_init_yaml_names_the_cluster_omits_an_empty_service_cidr_and_brackets_ipv6)
{
	struct kubeadm_init c = init_config();
	char y[16384], y2[16384];
	int n;

	c.cluster_name = "my-cluster";
	c.service_cidr = "";
	c.lb_host = "fd00::1";
	c.n_sans = 0;
	CHECK((n = kubeadm_init_yaml(&c, y, sizeof y)) > 0);
	CHECK(python_checks(
		  y, "d[1][\"clusterName\"] == \"my-cluster\" and "
		     "\"networking\" not in d[1] and "
		     "d[1][\"controlPlaneEndpoint\"] == \"[fd00::1]:6443\" and "
		     "d[1][\"apiServer\"][\"certSANs\"] == [\"127.0.0.1\", \"10.42.1.100\"]") == 0);
	/* conformance mode changes the kubeadm command line (kube-proxy), not the configuration */
	c.conformance = 1;
	CHECK(kubeadm_init_yaml(&c, y2, sizeof y2) == n && !memcmp(y, y2, (size_t)n));
}

TEST(kubeadm_init_yaml_quotes_hostile_sans_and_refuses_bad_input)
{
	static const char *const hostile[] = {"a\": b\\", "x\ny: z"};
	struct kubeadm_init c = init_config();
	char y[16384];

	c.cert_sans = hostile;
	c.n_sans = 1;
	CHECK(kubeadm_init_yaml(&c, y, sizeof y) > 0);
	CHECK(python_checks(y, "d[1][\"apiServer\"][\"certSANs\"][2] == \"a\\\": b\\\\\"") == 0);
	c.n_sans = 2; /* a newline */
	CHECK(kubeadm_init_yaml(&c, y, sizeof y) == -EINVAL);
	c = init_config();
	CHECK(kubeadm_init_yaml(&c, y, 1000) == -EINVAL);
	c.node_ip = "";
	CHECK(kubeadm_init_yaml(&c, y, sizeof y) == -EINVAL);
	c = init_config();
	c.lb_host = NULL;
	CHECK(kubeadm_init_yaml(&c, y, sizeof y) == -EINVAL);
	c = init_config();
	c.provider_name = "";
	CHECK(kubeadm_init_yaml(&c, y, sizeof y) == -EINVAL);
	c = init_config();
	c.node_name = "bad name";
	CHECK(kubeadm_init_yaml(&c, y, sizeof y) == -EINVAL);
	c = init_config();
	c.cluster_name = "c\tx";
	CHECK(kubeadm_init_yaml(&c, y, sizeof y) == -EINVAL);
	c = init_config();
	const char *bad[] = {"", "1.31.0", "v1", "v1.", "v.31", "v1.x", "v1.31a", "V1.31.0"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		c.kubernetes_version = bad[i];
		CHECK(kubeadm_init_yaml(&c, y, sizeof y) == -EINVAL);
	}
}

TEST(kube_audit_policy_is_a_metadata_level_policy)
{
	CHECK(python_checks(kube_audit_policy,
			    "d == [{\"apiVersion\": \"audit.k8s.io/v1\", \"kind\": \"Policy\", "
			    "\"rules\": [{\"level\": \"Metadata\"}]}]") == 0);
}
