/* The ip= parameter of the kernel command line (the kernel's own syntax, from
 * Documentation/admin-guide/nfs/nfsroot.rst), for a static address instead of DHCP. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "net.h"

static int field_ip(const char *f, size_t len, uint32_t *out, const char *what, char *err,
		    size_t errlen)
{
	char buf[20];
	struct in_addr a;

	*out = 0;
	if (!len)
		return 0;
	if (len >= sizeof buf)
		return errbuf_set(err, errlen, "ip=: %s '%.*s' is not an IPv4 address", what,
				  (int)(len > 40 ? 40 : len), f);
	memcpy(buf, f, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return errbuf_set(err, errlen, "ip=: %s '%s' is not an IPv4 address", what, buf);
	*out = a.s_addr;
	return 0;
}

static int contiguous(uint32_t mask_n)
{
	uint32_t m = ntohl(mask_n);

	return m == 0 || ((~m + 1) & ~m) == 0;
}

int ip_config_parse(const char *s, struct ip_config *ic, char *err, size_t errlen)
{
	static const char *const what[] = {"client-ip", "server-ip", "gw-ip",	 "netmask",
					   "hostname",	"device",    "autoconf", "dns0-ip",
					   "dns1-ip",	"ntp0-ip"};
	const char *f[10];
	size_t len[10];
	int nf = 0;
	uint32_t server;

	memset(ic, 0, sizeof *ic);
	if (!strcmp(s, "dhcp") || !strcmp(s, "on") || !strcmp(s, "any") || !strcmp(s, "both") ||
	    !*s) {
		ic->dhcp = 1;
		return 0;
	}
	if (!strcmp(s, "off") || !strcmp(s, "none")) {
		ic->off = 1;
		return 0;
	}
	for (const char *p = s;;) {
		const char *e = strchr(p, ':');

		if (nf == 10)
			return errbuf_set(err, errlen, "ip=: more than 10 fields");
		f[nf] = p;
		len[nf] = e ? (size_t)(e - p) : strlen(p);
		nf++;
		if (!e)
			break;
		p = e + 1;
	}
	if (nf < 2)
		return errbuf_set(err, errlen,
				  "ip=: '%.40s' is neither a mode nor client:server:...", s);
	for (; nf < 10; nf++) {
		f[nf] = "";
		len[nf] = 0;
	}
	if (field_ip(f[0], len[0], &ic->addr, what[0], err, errlen) < 0 ||
	    field_ip(f[1], len[1], &server, what[1], err, errlen) < 0 ||
	    field_ip(f[2], len[2], &ic->gw, what[2], err, errlen) < 0 ||
	    field_ip(f[3], len[3], &ic->mask, what[3], err, errlen) < 0 ||
	    field_ip(f[7], len[7], &ic->dns[0], what[7], err, errlen) < 0 ||
	    field_ip(f[8], len[8], &ic->dns[1], what[8], err, errlen) < 0)
		return -EINVAL;
	if (!contiguous(ic->mask))
		return errbuf_set(err, errlen, "ip=: netmask is not contiguous");
	if (len[4] >= sizeof ic->hostname || len[5] >= sizeof ic->ifname)
		return errbuf_set(err, errlen, "ip=: %s too long",
				  len[4] >= sizeof ic->hostname ? what[4] : what[5]);
	memcpy(ic->hostname, f[4], len[4]);
	memcpy(ic->ifname, f[5], len[5]);
	for (size_t i = 0; i < len[5]; i++)
		if (f[5][i] == '/' || f[5][i] == ' ')
			return errbuf_set(err, errlen, "ip=: bad device name");
	if (len[6]) {
		char ac[8] = "";

		if (len[6] < sizeof ac)
			memcpy(ac, f[6], len[6]);
		if (!strcmp(ac, "dhcp") || !strcmp(ac, "on") || !strcmp(ac, "any") ||
		    !strcmp(ac, "both"))
			ic->dhcp = 1;
		else if (!strcmp(ac, "off") || !strcmp(ac, "none") || !strcmp(ac, "static"))
			ic->dhcp = 0;
		else
			return errbuf_set(err, errlen, "ip=: autoconf '%.*s' is not dhcp/on/off",
					  (int)(len[6] > 16 ? 16 : len[6]), f[6]);
	}
	if (!ic->dhcp && !ic->addr)
		return errbuf_set(err, errlen, "ip=: no client address and no dhcp");
	if (ic->addr && !ic->dhcp && !ic->mask) /* the kernel's default: the class mask */
		ic->mask = htonl((ntohl(ic->addr) >> 24) < 128	 ? 0xff000000u
				 : (ntohl(ic->addr) >> 24) < 192 ? 0xffff0000u
								 : 0xffffff00u);
	return 0;
}

int resolv_conf_write(const char *path, const uint32_t dns[2], const char *origin)
{
	char doc[160], a[16];
	int n = snprintf(doc, sizeof doc, "# written by constel-agent from %s\n", origin), r;

	for (int i = 0; i < 2 && dns[i]; i++) {
		inet_ntop(AF_INET, &dns[i], a, sizeof a);
		n += snprintf(doc + n, sizeof doc - (size_t)n, "nameserver %s\n", a);
	}
	r = write_file_replace(path, doc, (size_t)n, 0644);
	return r < 0 ? log_err(r, "net: writing %s", path) : 0;
}

/* The link ip= names, or the first Ethernet link. */
static int pick_link(const char *name, struct nl_link *out)
{
	struct nl_link links[32];
	int n;

	if (!name[0])
		return nl_first_ethernet(out);
	n = nl_links(links, 32);
	for (int i = 0; i < n && i < 32; i++)
		if (!strcmp(links[i].name, name)) {
			*out = links[i];
			return 0;
		}
	return -ENODEV;
}

int net_up(const struct ip_config *ic, const char *resolv)
{
	struct nl_link link;
	struct dhcp_reply l = {0};
	uint32_t addr, mask, gw;
	const uint32_t *dns;
	char a[16], g[16] = "none";
	int r;

	if (ic->off) {
		log_info("net: ip=off: no network configured");
		return 0;
	}
	nl_link_set(1, 1); /* lo */
	if ((r = pick_link(ic->ifname, &link)) < 0)
		return log_err(r, "net: no link %s", ic->ifname[0] ? ic->ifname : "(Ethernet)");
	if ((r = nl_link_set(link.index, 1)) < 0)
		return log_err(r, "net: %s: link up", link.name);
	if (ic->dhcp) {
		/* §5.1: before the lock everything is retried; DHCP retries forever itself */
		if ((r = dhcp_acquire(link.index, link.name, link.mac, 0, 0, &l)) < 0)
			return r;
		/* MTU, address, option 121's routes or the router: as every renewal does */
		if ((r = dhcp_lease_apply(link.index, &l)) < 0)
			return log_err(r, "net: %s: the DHCP lease could not be applied",
				       link.name);
		dhcp_lease_keep(link.index, link.name, link.mac, &l);
		addr = l.yiaddr;
		mask = l.mask;
		gw = dhcp_default_router(&l);
		dns = l.dns;
	} else {
		addr = ic->addr;
		mask = ic->mask;
		gw = ic->gw;
		dns = ic->dns;
	}
	if (!ic->dhcp && (r = nl_addr_add(link.index, addr, dhcp_prefix(mask))) < 0 && r != -EEXIST)
		return log_err(r, "net: %s: address", link.name);
	if (!ic->dhcp && gw && (r = nl_route_add_default(link.index, gw)) < 0 && r != -EEXIST)
		return log_err(r, "net: %s: default route", link.name);
	if (resolv && dns[0])
		resolv_conf_write(resolv, dns, ic->dhcp ? "the DHCP lease" : "ip=");
	inet_ntop(AF_INET, &addr, a, sizeof a);
	if (gw)
		inet_ntop(AF_INET, &gw, g, sizeof g);
	if (ic->dhcp && l.mtu)
		log_info("net: %s %s/%d router %s mtu %u (DHCP%s)", link.name, a, dhcp_prefix(mask),
			 g, l.mtu,
			 l.routes_opt == 121   ? ", option 121's routes"
			 : l.routes_opt == 249 ? ", option 249's routes"
					       : "");
	else
		log_info("net: %s %s/%d router %s (%s%s)", link.name, a, dhcp_prefix(mask), g,
			 ic->dhcp ? "DHCP" : "ip=", l.routes_opt ? ", classless routes" : "");
	return 0;
}
