/* DHCPv4 client (RFC 2131) on an AF_PACKET socket: the node has no address yet, so the
 * DISCOVER and REQUEST go out as whole IPv4/UDP datagrams to the broadcast MAC. A classic BPF
 * filter on the socket (as udhcpc and systemd-networkd attach) lets only unfragmented IPv4
 * UDP to port 68 reach us, so a busy link costs PID 1 nothing between T1 and the ACK.
 * Retransmission as §4.1 says: 4 s, doubling to 64 s, each randomised by ±1 s; a NAK starts
 * over. Replies are parsed strictly (dhcp_parse is fuzzed): a malformed one is dropped with a
 * debug line, never trusted. The lease as the clouds give it: option 121 (RFC 3442; 249 is
 * Microsoft's copy) with /32 leases (GCE), option 26's MTU (GCE 1460, AWS 9001). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/if_ether.h>
#include <netpacket/packet.h>
#include <net/if.h>
#include <sys/socket.h>

#include "base/base.h"
#include "net.h"

#define BOOTP_LEN	  236
#define COOKIE		  0x63825363u
#define PORT_SERVER	  67
#define PORT_CLIENT	  68
#define RETRANS_FIRST_MS  4000
#define RETRANS_MAX_MS	  64000
#define PROGRESS_EVERY_MS 10000
#define DRAIN_MAX	  32 /* packets read per dhcp_lease_handle call; the rest next turn */

static uint16_t csum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t)(p[0] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static size_t build(uint8_t *out, size_t cap, int type, const uint8_t mac[6], uint32_t xid,
		    uint16_t secs, uint32_t requested, uint32_t server, uint32_t ciaddr);

size_t dhcp_build(uint8_t *out, size_t cap, int type, const uint8_t mac[6], uint32_t xid,
		  uint16_t secs, uint32_t requested, uint32_t server)
{
	return build(out, cap, type, mac, xid, secs, requested, server, 0);
}

/* ciaddr: the address being renewed (RENEWING, REBINDING), network order; 0 otherwise. */
static size_t build(uint8_t *out, size_t cap, int type, const uint8_t mac[6], uint32_t xid,
		    uint16_t secs, uint32_t requested, uint32_t server, uint32_t ciaddr)
{
	/* 121 before 3, as RFC 3442 asks; 249 for servers that send only Microsoft's */
	static const uint8_t params[] = {1, 121, 3, 6, 15, 26, 51, 54, 249};
	uint8_t *ip = out, *udp = out + 20, *b = out + 28, *o;
	size_t blen, total;
	uint32_t pseudo;

	if (cap < 28 + BOOTP_LEN + 64)
		return 0;
	memset(out, 0, 28 + BOOTP_LEN + 64);
	b[0] = 1; /* BOOTREQUEST */
	b[1] = 1; /* Ethernet */
	b[2] = 6;
	put32(b + 4, xid);
	put16(b + 8, secs);
	put16(b + 10, 0x8000); /* broadcast: we cannot take unicast before we have the address */
	memcpy(b + 12, &ciaddr, 4);
	memcpy(b + 28, mac, 6);
	o = b + BOOTP_LEN;
	put32(o, COOKIE);
	o += 4;
	*o++ = 53, *o++ = 1, *o++ = (uint8_t)type;
	*o++ = 61, *o++ = 7, *o++ = 1; /* client identifier: the MAC, as most clients send it */
	memcpy(o, mac, 6), o += 6;
	*o++ = 57, *o++ = 2, *o++ = 0x05, *o++ = 0xdc; /* max message size 1500 */
	if (requested) {
		*o++ = 50, *o++ = 4;
		memcpy(o, &requested, 4), o += 4; /* network order already */
	}
	if (server) {
		*o++ = 54, *o++ = 4;
		memcpy(o, &server, 4), o += 4;
	}
	*o++ = 55, *o++ = sizeof params;
	memcpy(o, params, sizeof params), o += sizeof params;
	*o++ = 255;
	blen = (size_t)(o - b);
	if (blen < 300)
		blen = 300; /* BOOTP's minimum; some servers drop shorter requests */
	total = 28 + blen;
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)total);
	ip[8] = 64;
	ip[9] = 17;
	memset(ip + 16, 0xff, 4); /* 0.0.0.0 -> 255.255.255.255 */
	put16(ip + 10, csum(ip, 20, 0));
	put16(udp, PORT_CLIENT);
	put16(udp + 2, PORT_SERVER);
	put16(udp + 4, (uint16_t)(8 + blen));
	pseudo = 0xffff + 0xffff + 17 + (uint32_t)(8 + blen);
	put16(udp + 6, csum(udp, 8 + blen, pseudo) ?: 0xffff);
	return total;
}

int dhcp_parse(const uint8_t *pkt, size_t len, uint32_t xid, const uint8_t mac[6],
	       struct dhcp_reply *r, char *err, size_t errlen)
{
	const uint8_t *udp, *b, *o, *end;
	size_t ihl, total, ulen;

	memset(r, 0, sizeof *r);
	if (len < 20 || (pkt[0] >> 4) != 4)
		return errbuf_set(err, errlen, "dhcp: not an IPv4 packet");
	ihl = (size_t)(pkt[0] & 15) * 4;
	total = (size_t)(pkt[2] << 8 | pkt[3]);
	if (ihl < 20 || total < ihl + 8 || total > len)
		return errbuf_set(err, errlen, "dhcp: bad IPv4 lengths");
	if (pkt[9] != 17)
		return errbuf_set(err, errlen, "dhcp: not UDP");
	if ((pkt[6] & 0x3f) || pkt[7]) /* more fragments or an offset */
		return errbuf_set(err, errlen, "dhcp: fragmented");
	udp = pkt + ihl;
	ulen = (size_t)(udp[4] << 8 | udp[5]);
	if ((udp[2] << 8 | udp[3]) != PORT_CLIENT)
		return errbuf_set(err, errlen, "dhcp: not for the client port");
	if (ulen < 8 || ulen > total - ihl)
		return errbuf_set(err, errlen, "dhcp: bad UDP length");
	b = udp + 8;
	end = udp + ulen;
	if ((size_t)(end - b) < BOOTP_LEN + 4)
		return errbuf_set(err, errlen, "dhcp: BOOTP message too short");
	if (b[0] != 2 || b[1] != 1 || b[2] != 6)
		return errbuf_set(err, errlen, "dhcp: not a BOOTREPLY for Ethernet");
	if (get32(b + 4) != xid || memcmp(b + 28, mac, 6))
		return errbuf_set(err, errlen, "dhcp: reply for another transaction");
	if (get32(b + BOOTP_LEN) != COOKIE)
		return errbuf_set(err, errlen, "dhcp: no magic cookie");
	memcpy(&r->yiaddr, b + 16, 4);
	for (o = b + BOOTP_LEN + 4; o < end;) {
		uint8_t code = *o++, l;

		if (code == 0)
			continue;
		if (code == 255)
			break;
		if (o >= end || (size_t)(end - o - 1) < (l = *o))
			return errbuf_set(err, errlen, "dhcp: option %u overruns the message",
					  code);
		o++;
		switch (code) {
		case 53:
			if (l != 1)
				return errbuf_set(err, errlen, "dhcp: message type of length %u",
						  l);
			r->type = o[0];
			break;
		case 54:
			if (l != 4)
				return errbuf_set(err, errlen,
						  "dhcp: server identifier of length %u", l);
			memcpy(&r->server, o, 4);
			break;
		case 1:
			if (l != 4)
				return errbuf_set(err, errlen, "dhcp: subnet mask of length %u", l);
			memcpy(&r->mask, o, 4);
			break;
		case 3:
			if (l < 4 || l % 4)
				return errbuf_set(err, errlen, "dhcp: router option of length %u",
						  l);
			memcpy(&r->router, o, 4);
			break;
		case 6:
			if (l < 4 || l % 4)
				return errbuf_set(err, errlen, "dhcp: DNS option of length %u", l);
			for (unsigned i = 0; i < l / 4 && i < 2; i++)
				memcpy(&r->dns[i], o + 4 * i, 4);
			break;
		case 51:
			if (l != 4)
				return errbuf_set(err, errlen, "dhcp: lease time of length %u", l);
			r->lease_s = get32(o);
			break;
		case 26:
			if (l != 2)
				return errbuf_set(err, errlen, "dhcp: MTU option of length %u", l);
			r->mtu = (uint16_t)(o[0] << 8 | o[1]);
			if (r->mtu < 68) /* RFC 2132 §5.1's minimum: ignored below it */
				r->mtu = 0;
			break;
		case 121:
		case 249:
			if (code == 249 && r->routes_opt == 121)
				break; /* 121 wins whichever comes first */
			if (dhcp_parse_classless(o, l, r, err, errlen) < 0)
				return -EINVAL;
			r->routes_opt = code;
			break;
		case 58:
		case 59:
			if (l != 4)
				return errbuf_set(err, errlen, "dhcp: T%d of length %u", code - 57,
						  l);
			*(code == 58 ? &r->t1_s : &r->t2_s) = get32(o);
			break;
		}
		o += l;
	}
	if (r->type < 1 || r->type > 8)
		return errbuf_set(err, errlen, "dhcp: no valid message type");
	if ((r->type == DHCP_OFFER || r->type == DHCP_ACK) && !r->yiaddr)
		return errbuf_set(err, errlen, "dhcp: offer without an address");
	if (r->mask) { /* contiguous ones only */
		uint32_t m = ntohl(r->mask);

		if (m & (~m >> 1))
			return errbuf_set(err, errlen, "dhcp: subnet mask is not contiguous");
	}
	return 0;
}

int dhcp_parse_classless(const uint8_t *o, size_t len, struct dhcp_reply *r, char *err,
			 size_t errlen)
{
	size_t i = 0;

	r->nroutes = 0;
	if (!len) /* RFC 3442: at least one route */
		return errbuf_set(err, errlen, "dhcp: empty classless routes option");
	while (i < len) {
		unsigned width = o[i++], sig = (width + 7) / 8;
		struct dhcp_route *rt;
		uint8_t dst[4] = {0};
		uint32_t mask;

		if (width > 32)
			return errbuf_set(err, errlen, "dhcp: classless route of width %u", width);
		if (len - i < sig + 4)
			return errbuf_set(err, errlen, "dhcp: classless route overruns the option");
		if (r->nroutes == DHCP_ROUTES_MAX)
			return errbuf_set(err, errlen, "dhcp: more than %d classless routes",
					  DHCP_ROUTES_MAX);
		memcpy(dst, o + i, sig);
		i += sig;
		rt = &r->routes[r->nroutes++];
		mask = width ? htonl(0xffffffffu << (32 - width)) : 0;
		memcpy(&rt->dst, dst, 4);
		rt->dst &= mask; /* bits past the width are not the destination's */
		rt->prefix = (uint8_t)width;
		memcpy(&rt->gw, o + i, 4);
		i += 4;
	}
	return 0;
}

int dhcp_prefix(uint32_t mask)
{
	uint32_t m = ntohl(mask);
	int n = 0;

	while (m & 0x80000000u)
		n++, m <<= 1;
	return n;
}

struct dhcp_sock {
	int fd;
	int ifindex;
};

/* On a SOCK_DGRAM packet socket the filter sees the IPv4 header at offset 0: UDP, not a
 * fragment past the first, destination port 68 (the header's length from its IHL). */
static struct sock_filter dhcp_filter[] = {
    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),		    /* protocol */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 17, 0, 6),	    /* UDP, else drop */
    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),		    /* flags, fragment offset */
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, 4, 0),	    /* a later fragment: drop */
    BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),		    /* X = the IPv4 header's length */
    BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),		    /* UDP destination port */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PORT_CLIENT, 0, 1), /* 68, else drop */
    BPF_STMT(BPF_RET | BPF_K, 0xffff),
    BPF_STMT(BPF_RET | BPF_K, 0),
};

static int sock_open(struct dhcp_sock *s, int ifindex)
{
	struct sockaddr_ll sa = {
	    .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP), .sll_ifindex = ifindex};
	struct sock_fprog prog = {.len = sizeof dhcp_filter / sizeof dhcp_filter[0],
				  .filter = dhcp_filter};

	s->ifindex = ifindex;
	/* protocol 0: nothing is queued before the filter is on; bind then picks IPv4 */
	s->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -errno;
	if (setsockopt(s->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) < 0 ||
	    bind(s->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int r = -errno;

		close(s->fd);
		return r;
	}
	return 0;
}

static int sock_send(struct dhcp_sock *s, const uint8_t *pkt, size_t len)
{
	struct sockaddr_ll sa = {.sll_family = AF_PACKET,
				 .sll_protocol = htons(ETH_P_IP),
				 .sll_ifindex = s->ifindex,
				 .sll_halen = 6,
				 .sll_addr = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};

	return sendto(s->fd, pkt, len, 0, (struct sockaddr *)&sa, sizeof sa) < 0 ? -errno : 0;
}

static struct {
	int fd;
	int (*stop)(void *arg);
	void *arg;
} intr = {.fd = -1};

void dhcp_set_interrupt(int fd, int (*stop)(void *arg), void *arg)
{
	intr.fd = stop ? fd : -1;
	intr.stop = stop;
	intr.arg = arg;
}

/* Waits until deadline for a reply of one of the wanted types; 0 with *r, -ETIMEDOUT, or
 * -EINTR when the interrupt descriptor said stop. */
static int sock_wait(struct dhcp_sock *s, uint64_t deadline, uint32_t xid, const uint8_t mac[6],
		     int want1, int want2, struct dhcp_reply *r)
{
	uint8_t buf[2048];
	char err[128];

	for (;;) {
		uint64_t now = monotonic_ms();
		struct pollfd p[2] = {{.fd = s->fd, .events = POLLIN},
				      {.fd = intr.fd, .events = POLLIN}};
		ssize_t n;
		int k;

		if (now >= deadline)
			return -ETIMEDOUT;
		k = poll(p, intr.fd >= 0 ? 2 : 1, (int)(deadline - now));
		if (k < 0 && errno != EINTR)
			return -errno;
		if (k <= 0)
			continue;
		if (intr.fd >= 0 && p[1].revents && intr.stop(intr.arg))
			return -EINTR;
		if (!p[0].revents)
			continue;
		n = recv(s->fd, buf, sizeof buf, 0);
		if (n < 0)
			continue;
		if (dhcp_parse(buf, (size_t)n, xid, mac, r, err, sizeof err) < 0) {
			if (!strstr(err, "not for the client port") && !strstr(err, "not UDP") &&
			    !strstr(err, "another transaction"))
				log_debug("%s (dropped)", err);
			continue;
		}
		if (r->type == want1 || r->type == want2)
			return 0;
	}
}

/* RFC 2131 §4.1: the n-th retransmission waits 4 s * 2^n up to 64 s, randomised by ±1 s. */
static uint64_t backoff_ms(int attempt, int first_ms)
{
	uint64_t t = (uint64_t)first_ms << (attempt < 5 ? attempt : 5);
	uint16_t jitter;

	if (t > RETRANS_MAX_MS)
		t = RETRANS_MAX_MS;
	random_bytes(&jitter, sizeof jitter);
	return t - 1000 + jitter % 2001;
}

/* An ACK or NAK answers the offer we requested: the same server (an offer always names
 * it, RFC 2131 §4.3.1) and, for an ACK, the address offered. */
static int from_offer(const struct dhcp_reply *ans, const struct dhcp_reply *offer)
{
	if (offer->server && ans->server != offer->server)
		return 0;
	return ans->type != DHCP_ACK || ans->yiaddr == offer->yiaddr;
}

int dhcp_acquire(int ifindex, const char *ifname, const uint8_t mac[6], int timeout_ms,
		 int first_ms, struct dhcp_reply *lease)
{
	struct dhcp_sock s;
	struct dhcp_reply r;
	uint8_t pkt[600];
	uint64_t start = monotonic_ms(), last_line = start;
	uint32_t xid;
	int attempt = 0, sent = 0, ignored = 0, rc;

	if (first_ms <= 0)
		first_ms = RETRANS_FIRST_MS;
	if ((rc = sock_open(&s, ifindex)) < 0)
		return log_err(rc, "net: %s: DHCP socket", ifname);
	random_bytes(&xid, sizeof xid);
	for (;;) {
		uint64_t now = monotonic_ms(), wait;
		uint16_t secs = (uint16_t)((now - start) / 1000);
		size_t n;

		if (timeout_ms > 0 && now - start >= (uint64_t)timeout_ms) {
			rc =
			    log_err(-ETIMEDOUT, "net: %s: no DHCP lease within %d s (%d DISCOVERs)",
				    ifname, timeout_ms / 1000, sent);
			break;
		}
		if (now - last_line >= PROGRESS_EVERY_MS) {
			log_info("net: %s: no DHCP lease yet after %llu s (%d DISCOVERs sent)",
				 ifname, (unsigned long long)((now - start) / 1000), sent);
			last_line = now;
		}
		n = dhcp_build(pkt, sizeof pkt, DHCP_DISCOVER, mac, xid, secs, 0, 0);
		if ((rc = sock_send(&s, pkt, n)) < 0) {
			log_err(rc, "net: %s: sending DHCPDISCOVER", ifname);
			break;
		}
		sent++;
		log_debug("net: %s: DHCPDISCOVER %d sent", ifname, sent);
		wait = backoff_ms(attempt++, first_ms);
		if (timeout_ms > 0 && now + wait > start + (uint64_t)timeout_ms)
			wait = start + (uint64_t)timeout_ms - now;
		rc = sock_wait(&s, now + wait, xid, mac, DHCP_OFFER, DHCP_OFFER, &r);
		if (rc == -EINTR)
			break;
		if (rc < 0)
			continue;
		/* REQUEST the offer, retransmitted like the DISCOVER, at most 4 times */
		for (int req = 0; req < 4; req++) {
			uint64_t t = monotonic_ms(), deadline;

			n = dhcp_build(pkt, sizeof pkt, DHCP_REQUEST, mac, xid,
				       (uint16_t)((t - start) / 1000), r.yiaddr, r.server);
			if ((rc = sock_send(&s, pkt, n)) < 0)
				break;
			deadline = t + backoff_ms(req, first_ms);
			while ((rc = sock_wait(&s, deadline, xid, mac, DHCP_ACK, DHCP_NAK,
					       lease)) == 0 &&
			       !from_offer(lease, &r)) {
				char ip[16];

				/* RFC 2131 §4.4.1: the answer to our REQUEST comes from the
				 * server we selected, for the address it offered; another's ACK
				 * or NAK is not ours (said once: a flood of them is one line) */
				if (ignored++)
					continue;
				inet_ntop(AF_INET,
					  lease->server != r.server ? &lease->server
								    : &lease->yiaddr,
					  ip, sizeof ip);
				log_warn(
				    "net: %s: DHCP%s %s %s, not the offer we requested: ignored",
				    ifname, lease->type == DHCP_ACK ? "ACK" : "NAK",
				    lease->server != r.server ? "from server" : "for address", ip);
			}
			if (rc == -EINTR)
				break;
			if (rc < 0)
				continue;
			if (lease->type == DHCP_ACK) {
				char a[16];

				if (!lease->mask)
					lease->mask =
					    htonl(0xffffff00u); /* RFC 2131 leaves it open */
				inet_ntop(AF_INET, &lease->yiaddr, a, sizeof a);
				log_info("net: %s: DHCP lease %s/%d for %u s after %d DISCOVERs",
					 ifname, a, dhcp_prefix(lease->mask), lease->lease_s, sent);
				close(s.fd);
				return 0;
			}
			log_warn("net: %s: DHCPNAK: starting over", ifname);
			break;
		}
		if (rc == -EINTR)
			break;
		random_bytes(&xid, sizeof xid); /* a new transaction */
	}
	if (rc == -EINTR)
		log_info("net: %s: the DHCP wait ended by a shutdown signal", ifname);
	close(s.fd);
	return rc;
}

/* ---- the lease kept up ---- */

enum { LEASE_BOUND, LEASE_RENEW, LEASE_REBIND, LEASE_LOST };

static struct {
	int kept, ifindex;
	char ifname[16];
	uint8_t mac[6];
	struct dhcp_reply ack; /* the lease we hold (or held, when lost) */
	uint64_t got_ms;       /* when its ACK came */
	struct dhcp_sock sock; /* fd -1 while bound */
	uint32_t xid;
	uint64_t next_send_ms;
	int attempt, lost, discovering, selecting;
	struct dhcp_reply offer;
} kl = {.sock = {.fd = -1}};

static uint64_t t1_ms(void)
{
	return kl.ack.t1_s ? (uint64_t)kl.ack.t1_s * 1000 : (uint64_t)kl.ack.lease_s * 500;
}

static uint64_t t2_ms(void)
{
	return kl.ack.t2_s ? (uint64_t)kl.ack.t2_s * 1000 : (uint64_t)kl.ack.lease_s * 875;
}

static int phase(uint64_t now)
{
	uint64_t t = now - kl.got_ms;

	if (kl.lost || t >= (uint64_t)kl.ack.lease_s * 1000)
		return LEASE_LOST;
	if (t >= t2_ms())
		return LEASE_REBIND;
	if (t >= t1_ms())
		return LEASE_RENEW;
	return LEASE_BOUND;
}

static int infinite(void)
{
	return kl.ack.lease_s == 0xffffffffu || kl.ack.lease_s == 0;
}

void dhcp_lease_keep(int ifindex, const char *ifname, const uint8_t mac[6],
		     const struct dhcp_reply *ack)
{
	kl.kept = 1;
	kl.ifindex = ifindex;
	snprintf(kl.ifname, sizeof kl.ifname, "%s", ifname);
	memcpy(kl.mac, mac, 6);
	kl.ack = *ack;
	kl.got_ms = monotonic_ms();
	kl.next_send_ms = 0;
	kl.attempt = 0;
	kl.lost = 0;
	kl.discovering = 0;
	kl.selecting = 0;
}

int dhcp_lease_fd(void)
{
	return kl.sock.fd;
}

/* RFC 2131 §4.4.5: half the time left to the next step, at least 60 s (a test's short lease:
 * never past that step) */
static uint64_t retry_at(uint64_t now, int ph)
{
	uint64_t until =
	    ph == LEASE_RENEW ? kl.got_ms + t2_ms() : kl.got_ms + (uint64_t)kl.ack.lease_s * 1000;
	uint64_t wait = until > now ? (until - now) / 2 : 0;

	if (ph == LEASE_LOST)
		return now + backoff_ms(kl.attempt < 4 ? kl.attempt : 4, RETRANS_FIRST_MS);
	if (wait < 60000)
		wait = 60000;
	return now + wait < until ? now + wait : until;
}

int dhcp_lease_next_ms(void)
{
	uint64_t now = monotonic_ms(), at;

	if (!kl.kept || infinite())
		return -1;
	at = phase(now) == LEASE_BOUND ? kl.got_ms + t1_ms() : kl.next_send_ms;
	return at > now ? (int)(at - now < 3600000 ? at - now : 3600000) : 0;
}

/* Whether gw is reachable on the link: inside the lease's own subnet, or inside an on-link
 * route of option 121/249. */
static int on_link(const struct dhcp_reply *l, uint32_t gw)
{
	if (l->mask != 0xffffffffu && ((gw ^ l->yiaddr) & l->mask) == 0)
		return 1;
	for (unsigned i = 0; l->routes_opt && i < l->nroutes; i++) {
		const struct dhcp_route *rt = &l->routes[i];
		uint32_t m = rt->prefix ? htonl(0xffffffffu << (32 - rt->prefix)) : 0;

		if (!rt->gw && ((gw ^ rt->dst) & m) == 0)
			return 1;
	}
	return 0;
}

/* A route via gw, with an on-link host route to gw first when the kernel would otherwise
 * refuse it as unreachable (GCE: 10.x.y.z/32, router 10.x.y.1). */
static int route_via(int ifindex, const struct dhcp_reply *l, uint32_t dst, int prefix, uint32_t gw)
{
	int r;

	if (gw == l->yiaddr) /* "via ourselves" is on-link (some servers say so) */
		return nl_route_add(ifindex, dst, prefix, 0);
	if (!on_link(l, gw) && (r = nl_route_add(ifindex, gw, 32, 0)) < 0)
		return r;
	return nl_route_add(ifindex, dst, prefix, gw);
}

int dhcp_lease_apply(int ifindex, const struct dhcp_reply *l)
{
	int r, first = 0;

	if (l->mtu)
		(void)nl_link_set_mtu(ifindex, l->mtu); /* one line; the link still works */
	if ((r = nl_addr_add_lft(ifindex, l->yiaddr, dhcp_prefix(l->mask), l->lease_s)) < 0 &&
	    r != -EEXIST)
		return r;
	if (!l->routes_opt)
		return l->router ? route_via(ifindex, l, 0, 0, l->router) : 0;
	/* RFC 3442: with option 121 the router option is ignored; on-link routes first, so
	 * the routes through their gateways find them */
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < l->nroutes; i++) {
			const struct dhcp_route *rt = &l->routes[i];

			if (!!rt->gw != pass)
				continue;
			r = pass ? route_via(ifindex, l, rt->dst, rt->prefix, rt->gw)
				 : nl_route_add(ifindex, rt->dst, rt->prefix, 0);
			if (r < 0 && !first)
				first = r;
		}
	return first;
}

uint32_t dhcp_default_router(const struct dhcp_reply *l)
{
	if (!l->routes_opt)
		return l->router;
	for (unsigned i = 0; i < l->nroutes; i++)
		if (!l->routes[i].prefix)
			return l->routes[i].gw;
	return 0;
}

int dhcp_renewal_acceptable(const struct dhcp_reply *held, const struct dhcp_reply *ack)
{
	return ack->type == DHCP_ACK && ack->server == held->server && ack->yiaddr == held->yiaddr;
}

static void apply_ack(const struct dhcp_reply *ack)
{
	struct dhcp_reply r = *ack, *a = &r;
	char ip[16];
	int moved = a->yiaddr != kl.ack.yiaddr || kl.selecting;

	if (!a->mask)
		a->mask = kl.ack.mask ? kl.ack.mask : htonl(0xffffff00u);
	dhcp_lease_apply(kl.ifindex, a);
	inet_ntop(AF_INET, &a->yiaddr, ip, sizeof ip);
	log_info("net: %s: DHCP lease %s/%d %s for %u s", kl.ifname, ip, dhcp_prefix(a->mask),
		 moved || kl.lost ? "granted" : "renewed", a->lease_s);
	kl.ack = *a;
	kl.got_ms = monotonic_ms();
	kl.lost = 0;
	kl.discovering = 0;
	kl.selecting = 0;
	kl.attempt = 0;
	close(kl.sock.fd);
	kl.sock.fd = -1;
}

static void send_due(uint64_t now, int ph)
{
	uint8_t pkt[600];
	size_t n;
	char ip[16];

	if (kl.sock.fd < 0) {
		int r = sock_open(&kl.sock, kl.ifindex);

		if (r < 0) {
			kl.sock.fd = -1;
			log_err(r, "net: %s: DHCP socket for the renewal", kl.ifname);
			kl.next_send_ms = now + 10000;
			return;
		}
		random_bytes(&kl.xid, sizeof kl.xid);
	}
	inet_ntop(AF_INET, &kl.ack.yiaddr, ip, sizeof ip);
	if (ph == LEASE_LOST && !kl.lost)
		log_warn("net: %s: the DHCP lease of %s ran out: asking for a new one", kl.ifname,
			 ip);
	if (ph == LEASE_LOST) { /* every retry of a lost lease starts over with a DISCOVER */
		kl.lost = 1;
		kl.discovering = 1;
		kl.selecting = 0;
	}
	if (kl.discovering)
		n = build(pkt, sizeof pkt, DHCP_DISCOVER, kl.mac, kl.xid, 0, 0, 0, 0);
	else
		n = build(pkt, sizeof pkt, DHCP_REQUEST, kl.mac, kl.xid, 0, 0, 0, kl.ack.yiaddr);
	if (sock_send(&kl.sock, pkt, n) < 0)
		log_debug("net: %s: sending a DHCP renewal failed", kl.ifname);
	else
		log_debug("net: %s: DHCP%s sent (%s)", kl.ifname,
			  kl.discovering ? "DISCOVER" : "REQUEST",
			  ph == LEASE_RENEW    ? "renewing"
			  : ph == LEASE_REBIND ? "rebinding"
					       : "lost");
	kl.attempt++;
	kl.next_send_ms = retry_at(now, ph);
}

/* Replies on the socket, at most DRAIN_MAX per call (the filter lets only DHCP's port
 * through; a flood of it waits for the next turn): an ACK renews, a NAK gives the address
 * up, an OFFER (after a DISCOVER) is requested at once. During RENEW and REBIND only the
 * lease's server may renew it (RFC 2131 lets any server answer a REBIND; we take the
 * stricter way: a lease no server of ours renews runs out and a DISCOVER finds the new one),
 * and after a DISCOVER only the server whose offer we requested. */
static void read_replies(void)
{
	uint8_t buf[2048], pkt[600];
	struct dhcp_reply r;
	char err[128], ip[16];
	ssize_t n;

	for (int k = 0; k < DRAIN_MAX && kl.sock.fd >= 0 &&
			(n = recv(kl.sock.fd, buf, sizeof buf, MSG_DONTWAIT)) > 0;
	     k++) {
		if (dhcp_parse(buf, (size_t)n, kl.xid, kl.mac, &r, err, sizeof err) < 0)
			continue;
		if (r.type == DHCP_ACK && !kl.discovering) {
			if (kl.selecting ? r.server == kl.offer.server
					 : dhcp_renewal_acceptable(&kl.ack, &r)) {
				apply_ack(&r);
				continue;
			}
			inet_ntop(AF_INET, &r.server, ip, sizeof ip);
			log_warn("net: %s: DHCPACK from server %s, not the lease's: ignored",
				 kl.ifname, ip);
		} else if (r.type == DHCP_NAK && (kl.discovering || r.server == kl.ack.server ||
						  (kl.selecting && r.server == kl.offer.server))) {
			log_warn("net: %s: DHCPNAK: the lease is given up; asking for a new one",
				 kl.ifname);
			kl.lost = 1;
			kl.discovering = 1;
			kl.selecting = 0;
			kl.attempt = 0;
			kl.next_send_ms = monotonic_ms();
		} else if (r.type == DHCP_OFFER && kl.discovering) {
			kl.offer = r;
			kl.discovering = 0;
			kl.selecting = 1;
			n = (ssize_t)build(pkt, sizeof pkt, DHCP_REQUEST, kl.mac, kl.xid, 0,
					   r.yiaddr, r.server, 0);
			sock_send(&kl.sock, pkt, (size_t)n);
		}
	}
}

void dhcp_lease_handle(void)
{
	uint64_t now;
	int ph;

	if (!kl.kept || infinite())
		return;
	read_replies();
	now = monotonic_ms();
	ph = phase(now);
	if (ph == LEASE_BOUND) {
		if (kl.sock.fd >= 0) {
			close(kl.sock.fd);
			kl.sock.fd = -1;
		}
		return;
	}
	if (kl.sock.fd < 0 || now >= kl.next_send_ms)
		send_due(now, ph);
}
