/* rtnetlink on a raw NETLINK_ROUTE socket: list the links, set one up or down, add an IPv4
 * address, routes and the MTU. Each request asks for an ACK and waits for it (bounded), so
 * a refusal comes back as the kernel's errno with one line. The dump parser is separate and
 * strict, since its input is a buffer (fuzzed). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <net/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "base/base.h"
#include "net.h"

#define NL_TIMEOUT_MS 2000
#define NL_BUF	      16384

static int nl_open(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/* Receives one datagram within the timeout. */
static ssize_t nl_recv(int fd, void *buf, size_t cap)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;
	int r;

	while ((r = poll(&p, 1, NL_TIMEOUT_MS)) < 0 && errno == EINTR)
		;
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return -errno;
	while ((n = recv(fd, buf, cap, 0)) < 0 && errno == EINTR)
		;
	return n < 0 ? -errno : n;
}

static void attr_put(struct nlmsghdr *h, size_t cap, int type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));

	if (NLMSG_ALIGN(h->nlmsg_len) + RTA_SPACE(len) > cap)
		return; /* the callers size their buffers for their attributes */
	a->rta_type = (unsigned short)type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	h->nlmsg_len = (uint32_t)(NLMSG_ALIGN(h->nlmsg_len) + RTA_SPACE(len));
}

/* Sends a request with NLM_F_ACK and waits for its ACK: 0 or the kernel's -errno. */
static int nl_request(struct nlmsghdr *h)
{
	static uint32_t seq;
	char buf[NL_BUF] __attribute__((aligned(4)));
	int fd = nl_open(), r;

	if (fd < 0)
		return fd;
	h->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = ++seq;
	if (send(fd, h, h->nlmsg_len, 0) < 0) {
		r = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = nl_recv(fd, buf, sizeof buf);
		struct nlmsghdr *m;
		size_t len, step;

		if (n < 0) {
			r = (int)n;
			goto out;
		}
		len = (size_t)n;
		/* stepped by hand: NLMSG_NEXT would wrap len on a last message without padding */
		for (m = (struct nlmsghdr *)buf; NLMSG_OK(m, len);
		     len -= step, m = (struct nlmsghdr *)((char *)m + step)) {
			step = NLMSG_ALIGN(m->nlmsg_len) < len ? NLMSG_ALIGN(m->nlmsg_len) : len;
			if (m->nlmsg_seq != h->nlmsg_seq || m->nlmsg_type != NLMSG_ERROR)
				continue;
			if (m->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
				r = -EBADMSG;
				goto out;
			}
			r = ((struct nlmsgerr *)NLMSG_DATA(m))->error;
			goto out;
		}
	}
out:
	close(fd);
	return r;
}

int nl_link_set(int ifindex, int up)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {
	    .h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)), .nlmsg_type = RTM_NEWLINK},
	    .i = {.ifi_family = AF_UNSPEC,
		  .ifi_index = ifindex,
		  .ifi_flags = up ? IFF_UP : 0,
		  .ifi_change = IFF_UP},
	};
	int r = nl_request(&req.h);

	return r < 0 ? log_err(r, "net: setting link %d %s", ifindex, up ? "up" : "down") : 0;
}

int nl_addr_add(int ifindex, uint32_t addr, int prefix)
{
	return nl_addr_add_lft(ifindex, addr, prefix, 0);
}

int nl_addr_add_lft(int ifindex, uint32_t addr, int prefix, uint32_t lifetime_s)
{
	struct {
		struct nlmsghdr h;
		struct ifaddrmsg a;
		char attrs[64];
	} req = {
	    .h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)),
		  .nlmsg_type = RTM_NEWADDR,
		  .nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE},
	    .a = {.ifa_family = AF_INET,
		  .ifa_prefixlen = (unsigned char)prefix,
		  .ifa_scope = RT_SCOPE_UNIVERSE,
		  .ifa_index = (unsigned)ifindex},
	};
	uint32_t bcast = prefix >= 31 ? 0 : (addr | htonl(~(0xffffffffu << (32 - prefix))));
	int r;

	attr_put(&req.h, sizeof req, IFA_LOCAL, &addr, 4);
	attr_put(&req.h, sizeof req, IFA_ADDRESS, &addr, 4);
	if (bcast)
		attr_put(&req.h, sizeof req, IFA_BROADCAST, &bcast, 4);
	if (lifetime_s && lifetime_s != 0xffffffffu) {
		struct ifa_cacheinfo ci = {.ifa_prefered = lifetime_s, .ifa_valid = lifetime_s};

		attr_put(&req.h, sizeof req, IFA_CACHEINFO, &ci, sizeof ci);
	}
	r = nl_request(&req.h);
	return r < 0 ? log_err(r, "net: adding an address to link %d", ifindex) : 0;
}

int nl_route_add(int ifindex, uint32_t dst, int prefix, uint32_t gateway)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg m;
		char attrs[64];
	} req = {
	    .h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
		  .nlmsg_type = RTM_NEWROUTE,
		  .nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE},
	    .m = {.rtm_family = AF_INET,
		  .rtm_dst_len = (unsigned char)prefix,
		  .rtm_table = RT_TABLE_MAIN,
		  .rtm_protocol = RTPROT_DHCP,
		  /* no gateway: the destination is on the link */
		  .rtm_scope = gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK,
		  .rtm_type = RTN_UNICAST},
	};
	uint32_t oif = (uint32_t)ifindex;
	char d[16], g[16];
	int r;

	if (prefix < 0 || prefix > 32)
		return log_err(-EINVAL, "net: route prefix /%d", prefix);
	if (prefix)
		attr_put(&req.h, sizeof req, RTA_DST, &dst, 4);
	if (gateway)
		attr_put(&req.h, sizeof req, RTA_GATEWAY, &gateway, 4);
	attr_put(&req.h, sizeof req, RTA_OIF, &oif, 4);
	r = nl_request(&req.h);
	if (r >= 0)
		return 0;
	inet_ntop(AF_INET, &dst, d, sizeof d);
	inet_ntop(AF_INET, &gateway, g, sizeof g);
	if (!prefix)
		return log_err(r, "net: adding the default route via %s on link %d", g, ifindex);
	return log_err(r, "net: adding the route %s/%d %s%s on link %d", d, prefix,
		       gateway ? "via " : "on-link", gateway ? g : "", ifindex);
}

int nl_route_add_default(int ifindex, uint32_t gateway)
{
	return nl_route_add(ifindex, 0, 0, gateway);
}

int nl_link_set_mtu(int ifindex, unsigned mtu)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
		char attrs[16];
	} req = {
	    .h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)), .nlmsg_type = RTM_NEWLINK},
	    .i = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex},
	};
	uint32_t m = mtu;
	int r;

	attr_put(&req.h, sizeof req, IFLA_MTU, &m, 4);
	r = nl_request(&req.h);
	return r < 0 ? log_err(r, "net: setting the MTU of link %d to %u", ifindex, mtu) : 0;
}

int nl_parse_links(const void *buf, size_t len, struct nl_link *links, int max, int *count,
		   int *done, char *err, size_t errlen)
{
	const struct nlmsghdr *m = buf, *next;

	/* The last message may end without its alignment padding: step by hand, never past
	 * len (NLMSG_NEXT would wrap len around). */
	for (; len; len -= (size_t)((const char *)next - (const char *)m), m = next) {
		const struct ifinfomsg *ifi;
		const struct rtattr *a;
		struct nl_link l = {0};
		int alen; /* signed: RTA_NEXT may step past the end, and RTA_OK must see that */

		if (!NLMSG_OK(m, len))
			return errbuf_set(err, errlen,
					  "netlink: truncated message (%zu bytes left)", len);
		next = NLMSG_ALIGN(m->nlmsg_len) >= len
			   ? (const struct nlmsghdr *)((const char *)m + len)
			   : (const struct nlmsghdr *)((const char *)m + NLMSG_ALIGN(m->nlmsg_len));
		if (m->nlmsg_type == NLMSG_DONE) {
			*done = 1;
			return 0;
		}
		if (m->nlmsg_type == NLMSG_ERROR)
			return errbuf_set(err, errlen, "netlink: the kernel refused the link dump");
		if (m->nlmsg_type != RTM_NEWLINK)
			continue;
		if (m->nlmsg_len < NLMSG_LENGTH(sizeof *ifi))
			return errbuf_set(err, errlen, "netlink: link message too short");
		ifi = NLMSG_DATA(m);
		l.index = ifi->ifi_index;
		l.flags = ifi->ifi_flags;
		l.type = ifi->ifi_type;
		alen = (int)(m->nlmsg_len - NLMSG_LENGTH(sizeof *ifi));
		for (a = IFLA_RTA(ifi); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
			size_t dl = (size_t)RTA_PAYLOAD(a);

			if (a->rta_type == IFLA_IFNAME) {
				if (dl == 0 || dl > IFNAMSIZ || memchr(RTA_DATA(a), 0, dl) == NULL)
					return errbuf_set(err, errlen,
							  "netlink: bad interface name");
				memcpy(l.name, RTA_DATA(a), dl);
			} else if (a->rta_type == IFLA_ADDRESS && dl == 6) {
				memcpy(l.mac, RTA_DATA(a), 6);
				l.has_mac = 1;
			}
		}
		if (!l.name[0])
			return errbuf_set(err, errlen, "netlink: link %d without a name", l.index);
		if (*count < max)
			links[*count] = l;
		(*count)++;
	}
	return 0;
}

int nl_links(struct nl_link *links, int max)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {
	    .h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
		  .nlmsg_type = RTM_GETLINK,
		  .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		  .nlmsg_seq = 1},
	    .i = {.ifi_family = AF_UNSPEC},
	};
	char buf[NL_BUF] __attribute__((aligned(4))), err[160];
	int fd = nl_open(), count = 0, done = 0, r = 0;

	if (fd < 0)
		return log_err(fd, "net: netlink socket");
	if (send(fd, &req, req.h.nlmsg_len, 0) < 0)
		r = -errno;
	for (int rounds = 0; !r && !done && rounds < 256; rounds++) {
		ssize_t n = nl_recv(fd, buf, sizeof buf);

		if (n < 0)
			r = (int)n;
		else if (nl_parse_links(buf, (size_t)n, links, max, &count, &done, err,
					sizeof err) < 0)
			r = log_err(-EBADMSG, "%s", err);
	}
	close(fd);
	if (!r && !done)
		r = -EOVERFLOW;
	if (r < 0)
		return log_err(r, "net: listing the links");
	return count < max ? count : max;
}

int nl_first_ethernet(struct nl_link *out)
{
	struct nl_link links[32];
	int n = nl_links(links, 32);

	/* not a slave: on Azure the Mellanox VF has the netvsc NIC's MAC and is its slave */
	for (int i = 0; i < n; i++)
		if (links[i].type == ARPHRD_ETHER && links[i].has_mac &&
		    !(links[i].flags & (IFF_LOOPBACK | IFF_SLAVE))) {
			*out = links[i];
			return 0;
		}
	return n < 0 ? n : log_err(-ENODEV, "net: no Ethernet link");
}
