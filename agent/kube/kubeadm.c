/* kubeadm's configuration (spec §10): for a joining node JoinConfiguration
 * (kubeadm.k8s.io/v1beta3) and KubeletConfiguration (kubelet.config.k8s.io/v1beta1), for the
 * first control plane InitConfiguration, ClusterConfiguration and KubeletConfiguration, each
 * as one YAML stream the way Constellation's bootstrapper hands it to kubeadm. Every
 * value is written as a double-quoted YAML scalar with escapes, so nothing from the ticket or
 * the metadata can add keys; the node name follows Constellation's normalisation. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "kube.h"

int kube_node_name(const char *in, char *out, size_t cap)
{
	size_t n = strlen(in), label = 0;

	if (n == 0 || n > 253 || n >= cap)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = (char)tolower((unsigned char)in[i]);

		out[i] = c == '_' ? '-' : c;
	}
	out[n] = 0;
	/* RFC 1123 subdomain: dot-separated labels of [a-z0-9-], alphanumeric at both ends */
	for (size_t i = 0; i <= n; i++) {
		char c = out[i];

		if (c == '.' || c == 0) {
			if (label == 0 || label > 63 || out[i - 1] == '-')
				return -EINVAL;
			label = 0;
			continue;
		}
		if (!(isdigit((unsigned char)c) || (c >= 'a' && c <= 'z') || c == '-'))
			return -EINVAL;
		if (label == 0 && c == '-')
			return -EINVAL;
		label++;
	}
	return 0;
}

struct yaml_out {
	char *p;
	size_t cap, len;
	int overflow;
};

static void emit(struct yaml_out *y, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct yaml_out *y, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (y->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(y->p + y->len, y->cap - y->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= y->cap - y->len)
		y->overflow = 1;
	else
		y->len += (size_t)n;
}

/* A double-quoted YAML scalar with escapes; control characters refused. */
static void quoted(struct yaml_out *y, const char *val)
{
	emit(y, "\"");
	for (const char *s = val; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			y->overflow = 1; /* refused: no value of ours has control characters */
		else if (*s == '"' || *s == '\\')
			emit(y, "\\%c", *s);
		else
			emit(y, "%c", *s);
	}
	emit(y, "\"");
}

/* indent key: "value" */
static void kv(struct yaml_out *y, const char *indent, const char *key, const char *val)
{
	emit(y, "%s%s: ", indent, key);
	quoted(y, val);
	emit(y, "\n");
}

int kubeadm_join_yaml(const struct kubeadm_join *j, char *out, size_t cap)
{
	struct yaml_out y = {out, cap, 0, 0};
	char name[254], provider[300];

	if (kube_node_name(j->node_name, name, sizeof name) < 0)
		return log_err(-EINVAL, "kubeadm: node name '%.64s' is not an RFC 1123 subdomain",
			       j->node_name);
	snprintf(provider, sizeof provider, "qemu:///hostname/%s", j->provider_name);
	emit(&y, "apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\n");
	emit(&y, "discovery:\n  bootstrapToken:\n");
	kv(&y, "    ", "apiServerEndpoint", j->api_server_endpoint);
	kv(&y, "    ", "token", j->token);
	emit(&y, "    caCertHashes:\n");
	emit(&y, "    - ");
	quoted(&y, j->ca_cert_hash);
	emit(&y, "\n");
	emit(&y, "nodeRegistration:\n");
	kv(&y, "  ", "name", name);
	kv(&y, "  ", "criSocket", "unix:///run/containerd/containerd.sock");
	emit(&y, "  kubeletExtraArgs:\n");
	kv(&y, "    ", "cloud-provider", "");
	kv(&y, "    ", "node-ip", j->node_ip);
	emit(&y, "patches:\n");
	kv(&y, "  ", "directory", "/opt/kubernetes/patches");
	if (j->control_plane) {
		emit(&y, "controlPlane:\n  localAPIEndpoint:\n");
		kv(&y, "    ", "advertiseAddress", j->node_ip);
		emit(&y, "    bindPort: 6443\n");
		emit(&y, "skipPhases:\n- \"control-plane-prepare/download-certs\"\n");
	}
	emit(&y, "---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n");
	kv(&y, "", "providerID", provider);
	if (y.overflow)
		return log_err(-EINVAL, "kubeadm: join configuration does not fit or has a control "
					"character");
	return (int)y.len;
}

/* Constellation's default policy: every request at the Metadata level. */
const char kube_audit_policy[] = "apiVersion: audit.k8s.io/v1\n"
				 "kind: Policy\n"
				 "rules:\n"
				 "- level: Metadata\n";

/* "vMAJOR.MINOR[.anything]" -> 0 and the numbers; the patch part is kubeadm's to check. */
static int parse_version(const char *v, unsigned *major, unsigned *minor)
{
	unsigned n[2] = {0, 0};

	if (*v++ != 'v')
		return -EINVAL;
	for (int i = 0; i < 2; i++) {
		if (!isdigit((unsigned char)*v))
			return -EINVAL;
		for (; isdigit((unsigned char)*v); v++) {
			if (n[i] > 10000)
				return -EINVAL;
			n[i] = n[i] * 10 + (unsigned)(*v - '0');
		}
		if (i == 0 && *v++ != '.')
			return -EINVAL;
	}
	if (*v != '\0' && *v != '.')
		return -EINVAL;
	*major = n[0];
	*minor = n[1];
	return 0;
}

/* The apiServer extra arguments of Constellation's init configuration (CIS benchmark values). */
static const char *const apiserver_args[][2] = {
    {"audit-policy-file", "/etc/kubernetes/audit-policy.yaml"},
    {"audit-log-path", "/var/log/kubernetes/audit/audit.log"},
    {"audit-log-maxage", "30"},
    {"audit-log-maxbackup", "10"},
    {"audit-log-maxsize", "100"},
    {"profiling", "false"},
    {"kubelet-certificate-authority", "/etc/kubernetes/pki/ca.crt"},
};

static const char *const controller_manager_args[][2] = {
    {"flex-volume-plugin-dir", "/opt/libexec/kubernetes/kubelet-plugins/volume/exec/"},
    {"cloud-provider", ""},
    {"configure-cloud-routes", "false"},
    {"profiling", "false"},
    {"terminated-pod-gc-threshold", "1000"},
};

static const char *const kubelet_ciphers[] = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",  "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",	       "TLS_RSA_WITH_AES_128_GCM_SHA256",
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void list_item(struct yaml_out *y, const char *indent, const char *val)
{
	emit(y, "%s- ", indent);
	quoted(y, val);
	emit(y, "\n");
}

static void init_configuration(struct yaml_out *y, const struct kubeadm_init *c, const char *name)
{
	char provider[300];

	if (snprintf(provider, sizeof provider, "qemu:///hostname/%s", c->provider_name) >=
	    (int)sizeof provider)
		y->overflow = 1;
	emit(y, "apiVersion: kubeadm.k8s.io/v1beta3\nkind: InitConfiguration\n");
	emit(y, "nodeRegistration:\n");
	kv(y, "  ", "name", name);
	kv(y, "  ", "criSocket", "unix:///run/containerd/containerd.sock");
	/* provider-id as a flag, as Constellation does: the KubeletConfiguration below becomes
	 * the kubelet-config of every node, a provider ID there would be every node's */
	emit(y, "  kubeletExtraArgs:\n");
	kv(y, "    ", "cloud-provider", "");
	kv(y, "    ", "node-ip", c->node_ip);
	kv(y, "    ", "provider-id", provider);
	emit(y, "localAPIEndpoint:\n");
	kv(y, "  ", "advertiseAddress", c->node_ip);
	emit(y, "  bindPort: 6443\n");
	emit(y, "patches:\n");
	kv(y, "  ", "directory", "/opt/kubernetes/patches");
}

static void cluster_configuration(struct yaml_out *y, const struct kubeadm_init *c, int local_mode)
{
	char endpoint[300];
	int v6 = strchr(c->lb_host, ':') != NULL;

	if (snprintf(endpoint, sizeof endpoint, "%s%s%s:6443", v6 ? "[" : "", c->lb_host,
		     v6 ? "]" : "") >= (int)sizeof endpoint)
		y->overflow = 1;
	emit(y, "---\napiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\n");
	kv(y, "", "clusterName",
	   c->cluster_name && *c->cluster_name ? c->cluster_name : "constellation");
	kv(y, "", "kubernetesVersion", c->kubernetes_version);
	kv(y, "", "controlPlaneEndpoint", endpoint);
	if (c->service_cidr && *c->service_cidr) {
		emit(y, "networking:\n");
		kv(y, "  ", "serviceSubnet", c->service_cidr);
	}
	emit(y, "apiServer:\n  certSANs:\n");
	list_item(y, "  ", "127.0.0.1");
	list_item(y, "  ", c->node_ip);
	for (size_t i = 0; i < c->n_sans; i++)
		if (c->cert_sans[i] && *c->cert_sans[i]) /* Go skips empty ones */
			list_item(y, "  ", c->cert_sans[i]);
	emit(y, "  extraArgs:\n");
	for (size_t i = 0; i < N_OF(apiserver_args); i++)
		kv(y, "    ", apiserver_args[i][0], apiserver_args[i][1]);
	/* the apiserver pod sees the policy and the log directory only through these */
	emit(y, "  extraVolumes:\n"
		"  - name: \"audit-log\"\n"
		"    hostPath: \"/var/log/kubernetes/audit/\"\n"
		"    mountPath: \"/var/log/kubernetes/audit/\"\n"
		"    readOnly: false\n"
		"    pathType: \"DirectoryOrCreate\"\n"
		"  - name: \"audit\"\n"
		"    hostPath: \"/etc/kubernetes/audit-policy.yaml\"\n"
		"    mountPath: \"/etc/kubernetes/audit-policy.yaml\"\n"
		"    readOnly: true\n"
		"    pathType: \"File\"\n");
	emit(y, "controllerManager:\n  extraArgs:\n");
	for (size_t i = 0; i < N_OF(controller_manager_args); i++)
		kv(y, "    ", controller_manager_args[i][0], controller_manager_args[i][1]);
	emit(y, "scheduler:\n  extraArgs:\n");
	kv(y, "    ", "profiling", "false");
	if (local_mode)
		emit(y, "featureGates:\n  ControlPlaneKubeletLocalMode: true\n");
}

/* Applied to every node's kubelet (kubeadm uploads it as the kubelet-config ConfigMap). */
static void kubelet_configuration(struct yaml_out *y)
{
	emit(y, "---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n");
	emit(y, "protectKernelDefaults: true\n");
	kv(y, "", "staticPodPath", "/etc/kubernetes/manifests");
	kv(y, "", "tlsCertFile", "/run/state/kubelet/pki/kubelet-client-crt.pem");
	kv(y, "", "tlsPrivateKeyFile", "/run/state/kubelet/pki/kubelet-client-key.pem");
	emit(y, "tlsCipherSuites:\n");
	for (size_t i = 0; i < N_OF(kubelet_ciphers); i++)
		list_item(y, "", kubelet_ciphers[i]);
	emit(y, "registerWithTaints:\n"
		"- key: \"node.cloudprovider.kubernetes.io/uninitialized\"\n"
		"  value: \"true\"\n"
		"  effect: \"PreferNoSchedule\"\n"
		"- key: \"node.cilium.io/agent-not-ready\"\n"
		"  value: \"true\"\n"
		"  effect: \"PreferNoSchedule\"\n");
}

int kubeadm_init_yaml(const struct kubeadm_init *c, char *out, size_t cap)
{
	struct yaml_out y = {out, cap, 0, 0};
	char name[254];
	unsigned major, minor;

	if (!c->node_name || kube_node_name(c->node_name, name, sizeof name) < 0)
		return log_err(-EINVAL, "kubeadm: node name '%.64s' is not an RFC 1123 subdomain",
			       c->node_name ? c->node_name : "");
	if (!c->provider_name || !*c->provider_name || !c->node_ip || !*c->node_ip || !c->lb_host ||
	    !*c->lb_host || !c->kubernetes_version || (c->n_sans && !c->cert_sans))
		return log_err(-EINVAL, "kubeadm: init configuration without provider name, node "
					"IP or load balancer");
	if (parse_version(c->kubernetes_version, &major, &minor) < 0)
		return log_err(-EINVAL, "kubeadm: Kubernetes version '%.32s' is not vMAJOR.MINOR",
			       c->kubernetes_version);
	init_configuration(&y, c, name);
	/* kubeadm's feature gate, set by Constellation from Kubernetes 1.31 on */
	cluster_configuration(&y, c, major > 1 || (major == 1 && minor >= 31));
	kubelet_configuration(&y);
	if (y.overflow)
		return log_err(-EINVAL, "kubeadm: init configuration does not fit or has a control "
					"character");
	return (int)y.len;
}
