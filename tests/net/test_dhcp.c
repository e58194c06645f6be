/* DHCP messages: what we send (checksums, options, the broadcast flag) and the strict parse of
 * replies; the netlink link-dump parser. The exchange itself runs against dnsmasq in
 * test_dhcp_netns.sh. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <net/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include "harness.h"
#include "net/net.h"

static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

static uint16_t sum16(const uint8_t *p, size_t len, uint32_t s)
{
	for (; len > 1; p += 2, len -= 2)
		s += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		s += (uint32_t)(p[0] << 8);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* A reply from 10.0.2.2:67 to the client: BOOTP op 2 with the given options. */
static size_t reply(uint8_t *p, uint32_t xid, const uint8_t *opts, size_t olen)
{
	size_t blen = 236 + 4 + olen, total = 28 + blen;

	memset(p, 0, total);
	p[0] = 0x45, p[2] = (uint8_t)(total >> 8), p[3] = (uint8_t)total, p[8] = 64, p[9] = 17;
	p[20] = 0, p[21] = 67, p[22] = 0, p[23] = 68;
	p[24] = (uint8_t)((8 + blen) >> 8), p[25] = (uint8_t)(8 + blen);
	p[28] = 2, p[29] = 1, p[30] = 6;
	p[32] = (uint8_t)(xid >> 24), p[33] = (uint8_t)(xid >> 16), p[34] = (uint8_t)(xid >> 8),
	p[35] = (uint8_t)xid;
	p[28 + 16] = 10, p[28 + 17] = 0, p[28 + 18] = 2, p[28 + 19] = 15; /* yiaddr */
	memcpy(p + 28 + 28, mac, 6);
	p[28 + 236] = 0x63, p[28 + 237] = 0x82, p[28 + 238] = 0x53, p[28 + 239] = 0x63;
	memcpy(p + 28 + 240, opts, olen);
	return total;
}

TEST(dhcp_discover_is_a_broadcast_udp_datagram_with_valid_checksums)
{
	uint8_t p[600];
	size_t n = dhcp_build(p, sizeof p, DHCP_DISCOVER, mac, 0x01020304, 3, 0, 0);
	uint32_t pseudo;

	CHECK(n >= 28 + 300);
	CHECK(p[0] == 0x45 && p[9] == 17 && (size_t)(p[2] << 8 | p[3]) == n);
	CHECK(sum16(p, 20, 0) == 0xffff); /* header checksum */
	CHECK(!memcmp(p + 12, "\0\0\0\0", 4) && !memcmp(p + 16, "\xff\xff\xff\xff", 4));
	CHECK(p[21] == 68 && p[23] == 67);
	pseudo = 0xffff + 0xffff + 17 + (uint32_t)(n - 20);
	CHECK(sum16(p + 20, n - 20, pseudo) == 0xffff); /* UDP checksum over the pseudo header */
	CHECK(p[28] == 1 && p[32] == 1 && p[35] == 4 && p[37] == 3); /* op, xid, secs */
	CHECK(p[38] == 0x80);					     /* broadcast flag */
	CHECK(!memcmp(p + 28 + 28, mac, 6));
	CHECK(p[28 + 240] == 53 && p[28 + 241] == 1 && p[28 + 242] == DHCP_DISCOVER);
	CHECK(dhcp_build(p, 100, DHCP_DISCOVER, mac, 1, 0, 0, 0) == 0);
}

TEST(dhcp_request_names_the_offer_and_the_server)
{
	uint8_t p[600];
	uint32_t want = htonl(0x0a00020f), server = htonl(0x0a000202);
	size_t n = dhcp_build(p, sizeof p, DHCP_REQUEST, mac, 7, 0, want, server);
	const uint8_t *o = p + 28 + 240;
	int seen = 0;

	CHECK(n > 0);
	while (*o != 255) {
		if (o[0] == 50 && o[1] == 4 && !memcmp(o + 2, &want, 4))
			seen |= 1;
		if (o[0] == 54 && o[1] == 4 && !memcmp(o + 2, &server, 4))
			seen |= 2;
		if (o[0] == 53 && o[2] == DHCP_REQUEST)
			seen |= 4;
		o += 2 + o[1];
	}
	CHECK(seen == 7);
}

TEST(dhcp_parse_reads_an_offer)
{
	static const uint8_t opts[] = {53,  1, 2, 54, 4,  10, 0, 2, 2, 1, 4,  255, 255,
				       255, 0, 3, 4,  10, 0,  2, 2, 6, 8, 10, 0,   2,
				       3,   1, 1, 1,  1,  51, 4, 0, 0, 1, 44, 0,   255};
	uint8_t p[600];
	struct dhcp_reply r;
	char err[128];
	size_t n = reply(p, 0xabcdef01, opts, sizeof opts);

	CHECK(dhcp_parse(p, n, 0xabcdef01, mac, &r, err, sizeof err) == 0);
	CHECK(r.type == DHCP_OFFER && r.yiaddr == htonl(0x0a00020f));
	CHECK(r.server == htonl(0x0a000202) && r.router == htonl(0x0a000202));
	CHECK(r.mask == htonl(0xffffff00) && dhcp_prefix(r.mask) == 24);
	CHECK(r.dns[0] == htonl(0x0a000203) && r.dns[1] == htonl(0x01010101));
	CHECK(r.lease_s == 300);
}

TEST(dhcp_parse_refuses_malformed_replies_with_one_line)
{
	static const uint8_t ok[] = {53, 1, 2, 255};
	static const uint8_t overrun[] = {53, 1, 2, 6, 40, 1, 2};
	static const uint8_t mask[] = {53, 1, 2, 1, 4, 255, 0, 255, 0, 255};
	static const uint8_t notype[] = {51, 4, 0, 0, 1, 0, 255};
	static const uint8_t badlen[] = {53, 2, 2, 2, 255};
	uint8_t p[600], other[6] = {0};
	struct dhcp_reply r;
	char err[128];
	size_t n;

	n = reply(p, 5, ok, sizeof ok);
	CHECK(dhcp_parse(p, n, 6, mac, &r, err, sizeof err) == -EINVAL); /* other xid */
	CHECK(dhcp_parse(p, n, 5, other, &r, err, sizeof err) == -EINVAL);
	CHECK(dhcp_parse(p, n - 1, 5, mac, &r, err, sizeof err) == -EINVAL); /* truncated */
	CHECK(dhcp_parse(p, 19, 5, mac, &r, err, sizeof err) == -EINVAL);
	n = reply(p, 5, overrun, sizeof overrun);
	CHECK(dhcp_parse(p, n, 5, mac, &r, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "overruns") && !strchr(err, '\n'));
	n = reply(p, 5, mask, sizeof mask);
	CHECK(dhcp_parse(p, n, 5, mac, &r, err, sizeof err) == -EINVAL);
	n = reply(p, 5, notype, sizeof notype);
	CHECK(dhcp_parse(p, n, 5, mac, &r, err, sizeof err) == -EINVAL);
	n = reply(p, 5, badlen, sizeof badlen);
	CHECK(dhcp_parse(p, n, 5, mac, &r, err, sizeof err) == -EINVAL);
	n = reply(p, 5, ok, sizeof ok);
	p[6] = 0x20; /* more fragments */
	CHECK(dhcp_parse(p, n, 5, mac, &r, err, sizeof err) == -EINVAL);
}

/* GCE's lease: 10.128.0.15/32, router 10.128.0.1 in option 3 and in option 121 as
 * `10.128.0.1/32 via 0.0.0.0` + `0.0.0.0/0 via 10.128.0.1`, MTU 1460 */
TEST(dhcp_parse_reads_gce_classless_routes_and_mtu)
{
	static const uint8_t opts[] = {53,  1,	 5,   54, 4, 10, 128, 0,   1,	1,  4,	255,
				       255, 255, 255, 3,  4, 10, 128, 0,   1,	26, 2,	5,
				       180, 51,	 4,   0,  0, 14, 16,  121, 14,	32, 10, 128,
				       0,   1,	 0,   0,  0, 0,	 0,   10,  128, 0,  1,	255};
	uint8_t p[600];
	struct dhcp_reply r;
	char err[128];
	size_t n = reply(p, 9, opts, sizeof opts);

	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == 0);
	CHECK(r.type == DHCP_ACK && r.mask == 0xffffffffu && dhcp_prefix(r.mask) == 32);
	CHECK(r.mtu == 1460 && r.lease_s == 3600);
	CHECK(r.routes_opt == 121 && r.nroutes == 2);
	CHECK(r.routes[0].dst == htonl(0x0a800001) && r.routes[0].prefix == 32 && !r.routes[0].gw);
	CHECK(r.routes[1].dst == 0 && r.routes[1].prefix == 0 &&
	      r.routes[1].gw == htonl(0x0a800001));
	CHECK(dhcp_default_router(&r) == htonl(0x0a800001));
}

TEST(dhcp_parse_121_wins_over_249_and_3)
{
	/* 249 first (10.0.0.0/8 via 10.0.2.9), then 121 (default via 10.0.2.7), router 10.0.2.2 */
	static const uint8_t opts[] = {53, 1, 5, 3, 4,	 10, 0, 2,  2, 249, 6, 8,  10,
				       10, 0, 2, 9, 121, 5,  0, 10, 0, 2,   7, 255};
	static const uint8_t only249[] = {53, 1, 5, 249, 8, 24, 192, 168, 5, 10, 0, 2, 9, 255};
	uint8_t p[600];
	struct dhcp_reply r;
	char err[128];
	size_t n = reply(p, 9, opts, sizeof opts);

	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == 0);
	CHECK(r.routes_opt == 121 && r.nroutes == 1 && r.routes[0].gw == htonl(0x0a000207));
	CHECK(dhcp_default_router(&r) == htonl(0x0a000207)); /* not option 3's */
	n = reply(p, 9, only249, sizeof only249);
	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == 0);
	CHECK(r.routes_opt == 249 && r.nroutes == 1 && r.routes[0].prefix == 24 &&
	      r.routes[0].dst == htonl(0xc0a80500));
	CHECK(dhcp_default_router(&r) == 0); /* no default route in it */
}

TEST(dhcp_parse_refuses_malformed_classless_routes)
{
	static const uint8_t wide[] = {53, 1, 5, 121, 5, 33, 10, 0, 2, 7, 255};
	static const uint8_t shortgw[] = {53, 1, 5, 121, 4, 0, 10, 0, 2, 255};
	static const uint8_t shortdst[] = {53, 1, 5, 121, 5, 24, 10, 0, 2, 7, 255};
	static const uint8_t empty[] = {53, 1, 5, 121, 0, 255};
	static const uint8_t mtu1[] = {53, 1, 5, 26, 1, 5, 255};
	static const uint8_t mtulow[] = {53, 1, 5, 26, 2, 0, 20, 255};
	uint8_t p[600], many[3 + 2 + 17 * 5 + 1] = {53, 1, 5, 121, 17 * 5};
	struct dhcp_reply r;
	char err[128];
	size_t n;

	n = reply(p, 9, wide, sizeof wide);
	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == -EINVAL && strstr(err, "width"));
	n = reply(p, 9, shortgw, sizeof shortgw);
	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == -EINVAL);
	n = reply(p, 9, shortdst, sizeof shortdst);
	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == -EINVAL);
	n = reply(p, 9, empty, sizeof empty);
	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == -EINVAL);
	n = reply(p, 9, mtu1, sizeof mtu1);
	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == -EINVAL);
	n = reply(p, 9, mtulow, sizeof mtulow);
	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == 0 && r.mtu == 0);
	for (int i = 0; i < 17; i++) /* 17 default routes of width 0: one more than kept */
		memcpy(many + 5 + 5 * i, "\0\x0a\0\x02\x07", 5);
	many[sizeof many - 1] = 255;
	n = reply(p, 9, many, sizeof many);
	CHECK(dhcp_parse(p, n, 9, mac, &r, err, sizeof err) == -EINVAL && strstr(err, "more than"));
	CHECK(!strchr(err, '\n'));
}

TEST(dhcp_renewal_ack_only_from_the_leases_server)
{
	struct dhcp_reply held = {.type = DHCP_ACK,
				  .yiaddr = htonl(0x0a00020f),
				  .server = htonl(0x0a000202)},
			  ack = held, rogue = held, moved = held;

	rogue.server = htonl(0x0a000263);
	moved.yiaddr = htonl(0x0a000210);
	CHECK(dhcp_renewal_acceptable(&held, &ack));
	CHECK(!dhcp_renewal_acceptable(&held, &rogue));
	CHECK(!dhcp_renewal_acceptable(&held, &moved));
	ack.type = DHCP_OFFER;
	CHECK(!dhcp_renewal_acceptable(&held, &ack));
}

/* One RTM_NEWLINK message for a link, as the kernel lays it out. */
static size_t link_msg(uint8_t *b, int index, const char *name, const uint8_t *hw)
{
	struct nlmsghdr *h = (struct nlmsghdr *)b;
	struct ifinfomsg *i = NLMSG_DATA(h);
	struct rtattr *a;
	size_t len = NLMSG_LENGTH(sizeof *i);

	memset(b, 0, 256);
	i->ifi_index = index;
	i->ifi_type = ARPHRD_ETHER;
	i->ifi_flags = IFF_UP;
	a = (struct rtattr *)(b + NLMSG_ALIGN(len));
	a->rta_type = IFLA_IFNAME;
	a->rta_len = (unsigned short)RTA_LENGTH(strlen(name) + 1);
	memcpy(RTA_DATA(a), name, strlen(name) + 1);
	len = NLMSG_ALIGN(len) + RTA_ALIGN(a->rta_len);
	if (hw) {
		a = (struct rtattr *)(b + len);
		a->rta_type = IFLA_ADDRESS;
		a->rta_len = RTA_LENGTH(6);
		memcpy(RTA_DATA(a), hw, 6);
		len += RTA_ALIGN(a->rta_len);
	}
	h->nlmsg_len = (uint32_t)len;
	h->nlmsg_type = RTM_NEWLINK;
	return len;
}

TEST(netlink_link_dump_is_parsed_and_bounded)
{
	uint8_t b[1024] __attribute__((aligned(4)));
	struct nl_link l[2];
	struct nlmsghdr *done;
	char err[128];
	size_t n = link_msg(b, 2, "eth0", mac);
	int count = 0, fin = 0;

	n += link_msg(b + n, 3, "eth1", NULL);
	done = (struct nlmsghdr *)(b + n);
	memset(done, 0, sizeof *done);
	done->nlmsg_len = NLMSG_LENGTH(0);
	done->nlmsg_type = NLMSG_DONE;
	n += NLMSG_LENGTH(0);
	CHECK(nl_parse_links(b, n, l, 2, &count, &fin, err, sizeof err) == 0);
	CHECK(count == 2 && fin == 1);
	CHECK(l[0].index == 2 && !strcmp(l[0].name, "eth0") && l[0].has_mac &&
	      !memcmp(l[0].mac, mac, 6));
	CHECK(l[1].index == 3 && !strcmp(l[1].name, "eth1") && !l[1].has_mac);
	count = fin = 0;
	CHECK(nl_parse_links(b, n, l, 1, &count, &fin, err, sizeof err) == 0 && count == 2);
	count = fin = 0;
	CHECK(nl_parse_links(b, 10, l, 2, &count, &fin, err, sizeof err) == -EINVAL);
	n = link_msg(b, 4, "eth2", NULL);
	b[NLMSG_LENGTH(sizeof(struct ifinfomsg)) + 4 + 4] = 'x'; /* name without its NUL */
	count = fin = 0;
	CHECK(nl_parse_links(b, n, l, 2, &count, &fin, err, sizeof err) == -EINVAL);
	CHECK(!strncmp(err, "netlink: ", 9));
}
