/* kubeadm's configuration for a joining node (spec §10): JoinConfiguration
 * (kubeadm.k8s.io/v1beta3) and KubeletConfiguration (kubelet.config.k8s.io/v1beta1) in one
 * YAML stream, as Constellation's bootstrapper hands it to `kubeadm join --config`. Every
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
