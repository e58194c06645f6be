/* The net layer: TCP endpoints for the flows, rtnetlink for links, addresses and routes, and
 * a DHCPv4 client on an AF_PACKET socket (later also HTTP). */
#ifndef CONSTEL_NET_H
#define CONSTEL_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <bearssl.h>

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" (host empty). -EINVAL on anything else. */
int hostport_split(const char *s, char *host, size_t hcap, char *port, size_t pcap);
/* A connected, non-blocking TCP socket (TCP_NODELAY set) to HOST:PORT within timeout_ms, or -errno
 * with one line in err. */
int tcp_dial(const char *hostport, int timeout_ms, char *err, size_t errlen);
/* A listening, non-blocking socket on HOST:PORT (":PORT" means every address). */
int tcp_listen_on(const char *hostport, char *err, size_t errlen);

/* No Nagle delay: our TLS records are small and answer each other (Go does the same). */
void tcp_nodelay(int fd);
/* The local port of a bound socket (to report ":0" listeners). */
int tcp_local_port(int fd);

/* ---- rtnetlink (netlink.c) ---- addresses in network byte order */
struct nl_link {
	int index;
	unsigned flags;	     /* IFF_* */
	unsigned short type; /* ARPHRD_* */
	char name[16];
	uint8_t mac[6];
	int has_mac;
};
/* The links of this network namespace (at most max); the count or -errno. */
int nl_links(struct nl_link *links, int max);
/* The first Ethernet link that is not loopback; -ENODEV when none. */
int nl_first_ethernet(struct nl_link *out);
/* Parses one datagram of an RTM_GETLINK dump into links (counting all in *count, keeping at
 * most max); *done set at NLMSG_DONE. -EINVAL with one line in err on a malformed message. */
int nl_parse_links(const void *buf, size_t len, struct nl_link *links, int max, int *count,
		   int *done, char *err, size_t errlen);
int nl_link_set(int ifindex, int up);
int nl_addr_add(int ifindex, uint32_t addr, int prefix);
/* The same with the lease's lifetime (valid and preferred, s; 0 or 0xffffffff: forever), so
 * the kernel drops an address whose lease ran out; an existing address gets the new one. */
int nl_addr_add_lft(int ifindex, uint32_t addr, int prefix, uint32_t lifetime_s);
int nl_route_add_default(int ifindex, uint32_t gateway);
/* dst/prefix via gateway, or on the link (scope link) when gateway is 0; replaces an existing
 * route to dst/prefix. */
int nl_route_add(int ifindex, uint32_t dst, int prefix, uint32_t gateway);
int nl_link_set_mtu(int ifindex, unsigned mtu);

/* ---- HTTP/1.1 GET (http.c) ---- */
struct http_response {
	int status;
	char *body; /* NUL-terminated, inside buf */
	size_t len;
	char *buf;
};
/* "http://HOST[:PORT]/PATH" -> "HOST:PORT" (80 by default) and "/PATH". -EINVAL otherwise. */
int http_url_split(const char *url, char *hostport, size_t hcap, char *path, size_t pcap);
/* GET url within timeout_ms; a body larger than max is refused. 0 with *resp (free it with
 * http_response_free), or -errno with one line logged. The status is not judged here. */
int http_get(const char *url, int timeout_ms, size_t max, struct http_response *resp);
void http_response_free(struct http_response *resp);
/* Any method on http://: extra header lines ("Name: value\r\n" each, printable, else
 * -EINVAL) and a body (sent with Content-Length for every method but GET). 0 with *resp (the
 * status not judged), or -errno with one line in err and nothing logged. */
struct http_req {
	const char *method;  /* NULL: GET */
	const char *headers; /* NULL: none */
	const void *body;
	size_t body_len;
};
int http_request(const char *url, const struct http_req *rq, int timeout_ms, size_t max,
		 struct http_response *resp, char *err, size_t errlen);

/* ---- https:// (cabundle.c, https.c, http.c) ---- */
/* Where ca-certificates keeps the system's roots; a node reads the real root's copy. */
#define CA_BUNDLE_DEFAULT  "/etc/ssl/certs/ca-certificates.crt"
#define CA_BUNDLE_MAX	   1024	     /* anchors; Debian's bundle has about 150 */
#define CA_BUNDLE_FILE_MAX (4 << 20) /* bytes; Debian's is about 220 KiB */
struct ca_bundle {
	br_x509_trust_anchor *ta; /* n anchors, each DN and key in one allocation */
	size_t n;
	unsigned skipped; /* CERTIFICATE objects that did not decode */
};
/* The CERTIFICATE objects of a PEM text as trust anchors. Other objects and text between them
 * are ignored; a certificate that does not decode is counted in skipped. -EINVAL with one line
 * in err when none is usable or there are more than CA_BUNDLE_MAX. */
int ca_bundle_parse(const char *pem, size_t len, struct ca_bundle *b, char *err, size_t errlen);
/* ca_bundle_parse on a file of at most CA_BUNDLE_FILE_MAX bytes; -errno with one line naming
 * the file in err. */
int ca_bundle_load(const char *path, struct ca_bundle *b, char *err, size_t errlen);
void ca_bundle_free(struct ca_bundle *b);

/* A TLS 1.2 client on a connected non-blocking socket fd (not closed here): SNI host, the chain
 * checked against ca and host at the system clock's time. An address host (no SNI) must be an
 * iPAddress name of the server's certificate.
 * Every call finishes by deadline (monotonic_ms). Errors: -EKEYREJECTED when the certificate
 * was refused, -ETIMEDOUT, other -errno; one line naming the host in err. */
struct tls_client;
int tls_client_open(int fd, const char *host, const struct ca_bundle *ca, uint64_t deadline,
		    struct tls_client **ret, char *err, size_t errlen);
int tls_client_write(struct tls_client *c, const void *data, size_t len, uint64_t deadline,
		     char *err, size_t errlen);
/* Up to cap bytes of the response; 0 at the end (close_notify or the server's EOF). */
ssize_t tls_client_read(struct tls_client *c, void *out, size_t cap, uint64_t deadline, char *err,
			size_t errlen);
void tls_client_free(struct tls_client *c);
/* 1 when the DER certificate's subjectAltName holds the address ip (4 or 16 bytes). */
int x509_has_ip_san(const uint8_t *der, size_t len, const uint8_t *ip, size_t iplen);

#define HTTP_REDIRECTS_MAX 10
/* GET url (http:// or https://) within timeout_ms for the whole chain, following 301, 302,
 * 303, 307 and 308 (at most HTTP_REDIRECTS_MAX; a relative Location resolved against the URL it
 * came from; https -> http refused). ca: the anchors for https:// (NULL: https refused). 0 with
 * the last response in *resp (status not judged; free with http_response_free), or -errno
 * with one line in err and nothing logged: -EKEYREJECTED (certificate refused), -ELOOP (too
 * many redirects), -EPERM (https -> http), -ENOKEY (https without ca), -EINVAL (bad URL or
 * Location), -EFBIG, or a network error. */
int http_fetch(const char *url, const struct ca_bundle *ca, int timeout_ms, size_t max,
	       struct http_response *resp, char *err, size_t errlen);
/* Resolves a Location header value against the URL it came from into out. -EINVAL when it is
 * not a URL we could fetch or does not fit. */
int http_location_resolve(const char *base, const char *loc, char *out, size_t cap);
/* Parses a whole response in buf (chunked bodies decoded in place). -EINVAL with one line. */
int http_parse_response(char *buf, size_t len, int *status, char **body, size_t *body_len,
			char *err, size_t errlen);

/* ---- DHCPv4 (dhcp.c) ---- */
enum {
	DHCP_DISCOVER = 1,
	DHCP_OFFER = 2,
	DHCP_REQUEST = 3,
	DHCP_ACK = 5,
	DHCP_NAK = 6,
};
#define DHCP_ROUTES_MAX 16 /* classless routes kept from one reply; more is refused */
struct dhcp_route {
	uint32_t dst, gw; /* network order; gw 0: on the link */
	uint8_t prefix;
};
struct dhcp_reply {
	int type;
	uint32_t yiaddr, server, mask, router, dns[2]; /* network byte order; 0: absent */
	uint32_t lease_s;
	uint32_t t1_s, t2_s; /* options 58 and 59; 0: absent */
	uint16_t mtu;	     /* option 26; 0: absent (or below 68, RFC 2132's minimum) */
	/* option 121 (RFC 3442), else Microsoft's 249 with the same format: when present, the
	 * router of option 3 is not used (RFC 3442 §"DHCP Client Behavior") */
	uint8_t routes_opt; /* 121, 249 or 0 */
	uint8_t nroutes;
	struct dhcp_route routes[DHCP_ROUTES_MAX];
};
/* A DISCOVER or REQUEST as an IPv4/UDP datagram from 0.0.0.0:68 to 255.255.255.255:67 (the
 * link layer adds the broadcast MAC). requested and server: 0 or network order. Returns the
 * length, 0 when cap is too small. */
size_t dhcp_build(uint8_t *out, size_t cap, int type, const uint8_t mac[6], uint32_t xid,
		  uint16_t secs, uint32_t requested, uint32_t server);
/* Parses an IPv4 packet as a DHCP reply to transaction xid for mac. -EINVAL with one line in
 * err when it is not one or is malformed. */
int dhcp_parse(const uint8_t *pkt, size_t len, uint32_t xid, const uint8_t mac[6],
	       struct dhcp_reply *r, char *err, size_t errlen);
/* The prefix length of a contiguous mask (network order). */
int dhcp_prefix(uint32_t mask);
/* The value of option 121 or 249 (RFC 3442: width, the significant octets of the
 * destination, the router) into r->routes. -EINVAL with one line in err when malformed or
 * holding more than DHCP_ROUTES_MAX routes. */
int dhcp_parse_classless(const uint8_t *o, size_t len, struct dhcp_reply *r, char *err,
			 size_t errlen);
/* Puts a lease on link ifindex: the MTU (option 26), the address with the lease's lifetime,
 * then the routes: option 121/249's (on-link ones first), else the router of option 3 as the
 * default route; a gateway that is not on the link (a /32 lease) gets an on-link host route
 * first. Replaces what is there, so a renewal applies it again. 0 or the first -errno (one
 * line). */
int dhcp_lease_apply(int ifindex, const struct dhcp_reply *l);
/* The default route's gateway of a lease (option 121/249's 0.0.0.0/0, else option 3); 0:
 * none. */
uint32_t dhcp_default_router(const struct dhcp_reply *l);
/* Whether an ACK during RENEW/REBIND may renew the lease held: it must come from the lease's
 * server (option 54) and be for its address. */
int dhcp_renewal_acceptable(const struct dhcp_reply *held, const struct dhcp_reply *ack);
/* While dhcp_acquire waits, fd (a signalfd) is polled too; when it is readable, stop(arg) is
 * called, and a non-zero return ends dhcp_acquire with -EINTR. fd -1: none. */
void dhcp_set_interrupt(int fd, int (*stop)(void *arg), void *arg);
/* DISCOVER/OFFER/REQUEST/ACK on link ifindex with RFC 2131 retransmission (first wait
 * first_ms, default 4 s, doubling to 64 s, ±1 s), a line every 10 s while it waits; gives up
 * after timeout_ms (0: never). 0 with the ACK in *lease. */
int dhcp_acquire(int ifindex, const char *ifname, const uint8_t mac[6], int timeout_ms,
		 int first_ms, struct dhcp_reply *lease);

/* The lease kept up for the node's life (RFC 2131 §4.4.5), driven from the caller's poll
 * loop: RENEW at T1 and REBIND at T2 (options 58/59, else 1/2 and 7/8 of the lease), the
 * address's lifetime refreshed from every ACK; a NAK or a lease that ran out is one line and
 * a new DISCOVER, retried with back-off for as long as it takes. One lease per process (the
 * node's one link). */
/* After the first ACK (net_up): keep this lease. */
void dhcp_lease_keep(int ifindex, const char *ifname, const uint8_t mac[6],
		     const struct dhcp_reply *ack);
/* The socket to poll while a renewal runs, else -1. */
int dhcp_lease_fd(void);
/* Milliseconds until dhcp_lease_handle has something to send (-1: no lease kept). */
int dhcp_lease_next_ms(void);
/* Reads replies (when the socket is readable), sends what is due, applies an ACK. Never
 * blocks. */
void dhcp_lease_handle(void);

/* ---- ip= of the kernel command line (ipconfig.c) ---- */
struct ip_config {
	int dhcp, off;
	uint32_t addr, gw, mask, dns[2]; /* network order; 0: not given */
	char ifname[16], hostname[64];
};
/* "dhcp", "on", "any", "off", "none", or
 * <client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:<autoconf>:<dns0>:<dns1>[:<ntp0>]
 * as the kernel's Documentation/admin-guide/nfs/nfsroot.rst describes. -EINVAL with one line in
 * err. */
int ip_config_parse(const char *s, struct ip_config *ic, char *err, size_t errlen);
/* Configures the link of ic (DHCP retried forever, or the static address), the default route
 * and, when resolv is set and there are DNS servers, that resolv.conf. */
int net_up(const struct ip_config *ic, const char *resolv);
/* "nameserver" lines for the non-zero entries of dns, replacing path. */
int resolv_conf_write(const char *path, const uint32_t dns[2], const char *origin);
/* Before switch_root to newroot: src (the initramfs's resolv.conf from the lease) copied to
 * rundir/constel/resolv.conf (rundir: the /run tmpfs that moves into newroot), and
 * newroot/etc/resolv.conf made to show it: a bind mount over a regular file, or the file
 * written where a symlink into /run points. A missing src or an /etc/resolv.conf that cannot
 * be covered is one line and 0. After switch_root, update the servers by rewriting
 * /etc/resolv.conf in place (a rename would leave the bind mount on the old file). (resolv.c) */
int resolv_conf_carry(const char *src, const char *newroot, const char *rundir);

#endif
