/* The net layer: TCP endpoints for the flows (later also rtnetlink, DHCP and HTTP). */
#ifndef CONSTEL_NET_H
#define CONSTEL_NET_H

#include <stddef.h>

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

#endif
