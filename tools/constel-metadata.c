/* constel-metadata: the QEMU metadata API of spec §5.2 for test clusters, from one JSON file.
 *   constel-metadata --config FILE
 * FILE: {"listen": "127.0.0.1:8080", "init_secret_hash_file": "PATH",
 *        "nodes": [{"name": "control-plane-0", "role": "ControlPlane", "ip": "10.42.1.100",
 *                   "source": "127.0.0.1", "listen": "127.0.0.1:18080"}, ...]}
 * A node is "self" for requests from its "source" address, or for every request on its own
 * "listen" address (QEMU user networking forwards each VM from 127.0.0.1, so each VM gets its
 * own port). GET /self, /peers, /endpoint, /initsecrethash; anything else is 404.
 * Exit codes: 0 stopped by SIGTERM/SIGINT, 1 failed, 2 usage. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json.h>

#include "deps_versions.h"
#include "net/net.h"
#include "rpc/rpc.h"
#include "tool.h"

#define NODES_MAX   64
#define CONNS_MAX   16
#define REQUEST_MAX 4096
#define REQUEST_MS  5000

struct node {
	char name[64], role[16], ip[64], source[64];
	int lfd; /* its own listener, or -1 */
};

static struct node nodes[NODES_MAX];
static size_t n_nodes;
static char hash_path[1024];
static volatile sig_atomic_t stop;

static const char usage[] =
    "usage: constel-metadata --config FILE\n"
    "\n"
    "Serves Constellation's QEMU metadata API (GET /self, /peers, /endpoint, /initsecrethash)\n"
    "for the nodes in FILE, a JSON object: {\"listen\": \"127.0.0.1:8080\",\n"
    "\"init_secret_hash_file\": PATH, \"nodes\": [{\"name\", \"role\" (ControlPlane or Worker),\n"
    "\"ip\", optional \"source\" (the address its requests come from) and optional \"listen\"\n"
    "(a port of its own)}]}. Stops on SIGTERM or SIGINT.\n"
    "Exit codes: 0 stopped, 1 failed (the last line says why), 2 wrong command line.\n";

static int str(json_object *o, const char *k, char *out, size_t cap, int required)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		return required ? -1 : 0;
	if (!json_object_is_type(v, json_type_string) ||
	    (size_t)json_object_get_string_len(v) >= cap)
		return -1;
	strcpy(out, json_object_get_string(v));
	return 0;
}

static int load(const char *path, char *listen, size_t cap, char *err, size_t errlen)
{
	char *text, lis[64];
	size_t len;
	json_object *root, *arr;
	int r = tool_read_file(path, &text, &len);

	if (r < 0)
		return errbuf_set(err, errlen, "%s: %s", path, strerror(-r));
	root = json_tokener_parse(text);
	free(text);
	r = -EINVAL;
	if (!root || str(root, "listen", listen, cap, 1) < 0 ||
	    str(root, "init_secret_hash_file", hash_path, sizeof hash_path, 1) < 0 ||
	    !json_object_object_get_ex(root, "nodes", &arr) ||
	    !json_object_is_type(arr, json_type_array) ||
	    json_object_array_length(arr) > NODES_MAX) {
		errbuf_set(err, errlen,
			   "%s: needs listen, init_secret_hash_file and nodes (at most %d)", path,
			   NODES_MAX);
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		struct node *n = &nodes[n_nodes];

		memset(n, 0, sizeof *n);
		n->lfd = -1;
		lis[0] = '\0';
		if (!json_object_is_type(o, json_type_object) ||
		    str(o, "name", n->name, sizeof n->name, 1) < 0 ||
		    str(o, "role", n->role, sizeof n->role, 1) < 0 ||
		    str(o, "ip", n->ip, sizeof n->ip, 1) < 0 ||
		    str(o, "source", n->source, sizeof n->source, 0) < 0 ||
		    str(o, "listen", lis, sizeof lis, 0) < 0 ||
		    (strcmp(n->role, "ControlPlane") && strcmp(n->role, "Worker"))) {
			errbuf_set(err, errlen,
				   "%s: node %zu needs name, ip and role ControlPlane or Worker",
				   path, i);
			goto out;
		}
		if (lis[0] && (n->lfd = tcp_listen_on(lis, err, errlen)) < 0)
			goto out;
		n_nodes++;
	}
	r = 0;
out:
	json_object_put(root);
	return r;
}

static void put_node(FILE *f, const struct node *n)
{
	fprintf(f,
		"{\"Name\":\"%s\",\"ProviderID\":\"qemu:///hostname/%s\",\"Role\":\"%s\","
		"\"VPCIP\":\"%s\",\"SecondaryIPRange\":\"\",\"AliasIPRanges\":null}",
		n->name, n->name, n->role, n->ip);
}

/* The answer to one request line, as a whole HTTP/1.1 response. */
static void respond(int fd, const char *line, const struct node *self)
{
	char *body = NULL, *resp = NULL, path[256];
	size_t blen = 0, rlen = 0;
	const char *status = "200 OK", *type = "application/json";
	FILE *f = open_memstream(&body, &blen);

	if (!f)
		return;
	if (sscanf(line, "GET %255s HTTP/1.", path) != 1) {
		status = "405 Method Not Allowed";
		type = "text/plain";
		fputs("only GET\n", f);
	} else if (!strcmp(path, "/self")) {
		if (self) {
			put_node(f, self);
		} else {
			status = "404 Not Found";
			type = "text/plain";
			fputs("instance not found\n", f);
		}
	} else if (!strcmp(path, "/peers")) {
		fputc('[', f);
		for (size_t i = 0; i < n_nodes; i++) {
			if (i)
				fputc(',', f);
			put_node(f, &nodes[i]);
		}
		fputc(']', f);
	} else if (!strcmp(path, "/endpoint")) {
		const struct node *cp = NULL;

		for (size_t i = 0; i < n_nodes && !cp; i++) {
			size_t l = strlen(nodes[i].name);

			if (!strncmp(nodes[i].name, "control-plane", 13) &&
			    nodes[i].name[l - 1] == '0')
				cp = &nodes[i];
		}
		if (cp) {
			fprintf(f, "\"%s\"", cp->ip);
		} else {
			status = "404 Not Found";
			type = "text/plain";
			fputs("no control plane\n", f);
		}
	} else if (!strcmp(path, "/initsecrethash")) {
		char *h;
		size_t hl;

		type = "text/plain";
		if (tool_read_file(hash_path, &h, &hl) == 0) {
			while (hl && (h[hl - 1] == '\n' || h[hl - 1] == '\r'))
				hl--;
			fwrite(h, 1, hl, f);
			free(h);
		} else {
			status = "500 Internal Server Error";
			fputs("init secret hash unavailable\n", f);
		}
	} else {
		status = "404 Not Found";
		type = "text/plain";
		fputs("not found\n", f);
	}
	fclose(f);
	f = open_memstream(&resp, &rlen);
	if (f) {
		fprintf(f,
			"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: "
			"close\r\n\r\n",
			status, type, blen);
		fwrite(body, 1, blen, f);
		fclose(f);
		for (size_t off = 0; off < rlen;) {
			ssize_t w = write(fd, resp + off, rlen - off);

			if (w <= 0)
				break;
			off += (size_t)w;
		}
	}
	log_info("%s %s -> %s", self ? self->name : "(unknown)", path, status);
	free(resp);
	free(body);
}

static const struct node *by_source(int fd, const struct node *fixed)
{
	struct sockaddr_storage a;
	socklen_t l = sizeof a;
	char ip[64] = "";

	if (fixed)
		return fixed;
	if (getpeername(fd, (struct sockaddr *)&a, &l) < 0)
		return NULL;
	if (a.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&a)->sin_addr, ip, sizeof ip);
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&a)->sin6_addr, ip, sizeof ip);
	for (size_t i = 0; i < n_nodes; i++)
		if (!strcmp(nodes[i].source[0] ? nodes[i].source : nodes[i].ip, ip))
			return &nodes[i];
	return NULL;
}

static void on_signal(int s)
{
	(void)s;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *config = NULL;
	struct opt opts[] = {{"config", &config, 1}, {NULL, NULL, 0}};
	struct conn {
		int fd;
		const struct node *self;
		char buf[REQUEST_MAX];
		size_t len;
		int64_t start;
	} conns[CONNS_MAX];
	char listen[64], err[300];
	int lfd;

	log_set_program("constel-metadata");
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return fputs(usage, stdout), EXIT_OK;
	if (argc == 2 && !strcmp(argv[1], "--version"))
		return printf("constel-metadata %s\n", CONSTEL_VERSION), EXIT_OK;
	if (cli_opts_parse(argc - 1, argv + 1, opts, err, sizeof err) < 0)
		return fprintf(stderr, "constel-metadata: %s\n", err), EXIT_USAGE;
	if (load(config, listen, sizeof listen, err, sizeof err) < 0 ||
	    (lfd = tcp_listen_on(listen, err, sizeof err)) < 0)
		return log_error("%s", err), EXIT_FAILURE_RUN;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < CONNS_MAX; i++)
		conns[i].fd = -1;
	log_info("serving %zu nodes on %s", n_nodes, listen);
	while (!stop) {
		struct pollfd pfd[1 + NODES_MAX + CONNS_MAX];
		const struct node *owner[1 + NODES_MAX];
		int n = 0, nl;

		pfd[n] = (struct pollfd){lfd, POLLIN, 0};
		owner[n++] = NULL;
		for (size_t i = 0; i < n_nodes; i++)
			if (nodes[i].lfd >= 0) {
				pfd[n] = (struct pollfd){nodes[i].lfd, POLLIN, 0};
				owner[n++] = &nodes[i];
			}
		nl = n;
		for (int i = 0; i < CONNS_MAX; i++)
			if (conns[i].fd >= 0)
				pfd[n++] = (struct pollfd){conns[i].fd, POLLIN, 0};
		if (poll(pfd, (nfds_t)n, 500) < 0 && errno != EINTR)
			return log_err(-errno, "poll"), EXIT_FAILURE_RUN;
		for (int i = 0; i < nl; i++) {
			int fd, slot = -1;

			if (!(pfd[i].revents & POLLIN))
				continue;
			fd = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC);
			for (int k = 0; k < CONNS_MAX && fd >= 0; k++)
				if (conns[k].fd < 0) {
					slot = k;
					break;
				}
			if (slot < 0) {
				if (fd >= 0)
					close(fd);
				continue;
			}
			conns[slot].fd = fd;
			conns[slot].self = by_source(fd, owner[i]);
			conns[slot].len = 0;
			conns[slot].start = rpc_now_ms();
		}
		for (int i = 0; i < CONNS_MAX; i++) {
			struct conn *c = &conns[i];
			char *eol;
			ssize_t r;

			if (c->fd < 0)
				continue;
			r = recv(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len, MSG_DONTWAIT);
			if (r > 0)
				c->len += (size_t)r;
			c->buf[c->len] = '\0';
			eol = strstr(c->buf, "\r\n\r\n");
			if (eol) {
				*strchr(c->buf, '\r') = '\0';
				respond(c->fd, c->buf, c->self);
			} else if (r == 0 || (r < 0 && errno != EAGAIN) ||
				   c->len == sizeof c->buf - 1 ||
				   rpc_now_ms() - c->start > REQUEST_MS) {
				log_warn("dropping an incomplete or oversized request");
			} else {
				continue;
			}
			close(c->fd);
			c->fd = -1;
		}
	}
	log_info("stopping");
	return EXIT_OK;
}
