#!/usr/bin/python3
"""Hostile peers for the load test of issue 16 (tests/bench/hostile.sh, tests/flow/test_hostile_peers.sh).

Loopback only (127.0.0.1); every loop is bounded in count and time.

  hostile.py load --port P [--conns 200] [--duration S] [--report FILE] [--kinds K,K...]
                  [--sources N]
      Holds CONNS connections to 127.0.0.1:P, the same number of each kind (default all
      five), each renewed (after a 0.5-1 s pause) when the server closes it, for DURATION seconds or until SIGTERM; then
      writes one line of counts per kind to FILE (or stdout). The connections come from
      127.0.0.1 (N = 0, the default: the same address as the CLI) or from N other loopback
      addresses 127.0.1.1, 127.0.1.2, ... (a hostile network of N hosts). Kinds:
        idle     connects and never sends a byte
        slow     a real ClientHello, one byte a second (slowloris)
        garbage  TLS handshake records of random bytes, one every 200 ms
        half     a real ClientHello, then silence (the server attests, the peer never answers)
        flood    a completed TLS 1.2 handshake (ALPN h2, no certificate check), then the HTTP/2
                 preface, 100 gRPC streams each claiming a 4 MiB message, then SETTINGS and
                 PING frames as fast as the server reads them (100 frames per 50 ms at most)
      Kinds after a completed TLS handshake that follow HTTP/2's flow control (issue 23; not in
      the default mix):
        badinit  Init requests with a wrong init secret (each costs the server a bcrypt check)
                 on 4 streams at once, a new one as soon as one is answered
        bigmsg   on each of 4 streams one complete 4 MiB gRPC message without END_STREAM, then
                 silence (the server holds the messages until the request deadline)
        fill     on each of 4 streams all but 1 KiB of a message claiming 3 MiB - 16 KiB, then
                 silence (the messages never complete)
  hostile.py listen --kind silent|slow|garbage [--duration S]
      An endpoint for the join client: prints "LISTEN port", then accepts every connection:
      silent never sends, slow sends a TLS record header claiming 16 KiB and then its body,
      one byte a second, garbage sends random TLS
      records as fast as the peer reads them (bounded by the kernel's buffer).
  hostile.py spawn --pidfile F --report R -- CMD...
      Runs CMD, writes its pid to F, waits for it and writes "rc=.. wall_s=.. cpu_s=..
      maxrss_kb=.." (its own resource usage, getrusage of the child) to R; exits with its status.
  hostile.py cpu PID
      Prints "cpu_s=.. hwm_kb=.. vmpeak_kb=.." of a running process (/proc/PID/stat
      utime+stime, VmHWM, VmPeak: the address space it reserved, touched or not).
"""
import asyncio
import base64
import os
import random
import resource
import signal
import ssl
import struct
import subprocess
import sys
import time

KINDS = ("idle", "slow", "garbage", "half", "flood", "badinit", "bigmsg", "fill")
H2_KINDS = ("badinit", "bigmsg", "fill")
MAX_ATTEMPTS = 200000  # all connection attempts of one run together
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def client_ctx():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["h2"])
    return ctx


def nonce_sni():
    """The CLI's client nonce channel: 32 random bytes, standard base64, in the SNI."""
    return base64.b64encode(os.urandom(32)).decode()


def client_hello(ctx):
    """A real ClientHello (as the CLI would send it), taken out of a memory BIO."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=nonce_sni())
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def frame(ftype, flags, sid, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def hpack_lit(name, value):
    """Literal header field without indexing, new name, no Huffman (RFC 7541 6.2.2)."""
    assert len(name) < 127 and len(value) < 127
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def grpc_headers(path):
    # :method POST (static 3), :scheme https (static 7), :path and :authority with indexed names
    block = b"\x83\x87" + b"\x04" + bytes([len(path)]) + path + b"\x01\x09127.0.0.1"
    block += hpack_lit(b"content-type", b"application/grpc") + hpack_lit(b"te", b"trailers")
    return block


def source(i, sources):
    """Connection i's source address: 127.0.0.1 when SOURCES is 0 (the CLI's own address),
    else one of SOURCES loopback addresses 127.0.1.1, 127.0.1.2, ... (all of 127/8 is loopback
    on Linux), connections dealt round-robin."""
    if sources <= 0:
        return "127.0.0.1"
    n = i % sources
    return f"127.0.{1 + n // 250}.{1 + n % 250}"


class H2:
    """Just enough of an HTTP/2 client over an asyncio stream to send what the server's flow
    control admits: its windows, SETTINGS and PING acknowledged, our receive window opened wide
    (the server's answers never stall), which streams the server ended or reset."""

    def __init__(self, reader, writer):
        self.r, self.w = reader, writer
        self.conn_win, self.init_win = 65535, 65535
        self.win = {}
        self.ended, self.reset = set(), set()
        self.got = 0
        self.closed = False
        self.event = asyncio.Event()
        self.next_sid = 1

    def start(self):
        # our SETTINGS: initial window 2^31-1; the connection window opened as wide
        self.w.write(PREFACE + frame(4, 0, 0, struct.pack(">HI", 4, 0x7FFFFFFF)) + frame(8, 0, 0, struct.pack(">I", 0x7FFFFFFF - 65535)))

    def on_frame(self, typ, fl, sid, pl):
        if typ == 4 and not fl & 1:
            for i in range(0, len(pl) - 5, 6):
                ident, val = struct.unpack(">HI", pl[i : i + 6])
                if ident == 4:
                    for k in self.win:
                        self.win[k] += val - self.init_win
                    self.init_win = val
            self.w.write(frame(4, 1, 0, b""))
        elif typ == 8 and len(pl) == 4:
            inc = struct.unpack(">I", pl)[0] & 0x7FFFFFFF
            if sid == 0:
                self.conn_win += inc
            elif sid in self.win:
                self.win[sid] += inc
        elif typ == 6 and not fl & 1:
            self.w.write(frame(6, 1, 0, pl))
        elif typ in (0, 1) and fl & 1:
            self.ended.add(sid)
        elif typ == 3:
            self.ended.add(sid)
            self.reset.add(sid)
        elif typ == 7:
            self.closed = True
        if typ == 0:
            self.got += len(pl)
            if self.got > 1 << 20:
                self.w.write(frame(8, 0, 0, struct.pack(">I", self.got)))
                self.got = 0

    async def pump(self, deadline):
        buf = b""
        while not self.closed and time.monotonic() < deadline:
            try:
                data = await asyncio.wait_for(self.r.read(65536), max(0.01, deadline - time.monotonic()))
            except (asyncio.TimeoutError, TimeoutError):
                break
            except (OSError, ssl.SSLError):
                data = b""
            if not data:
                break
            buf += data
            while len(buf) >= 9:
                ln = int.from_bytes(buf[0:3], "big")
                if len(buf) < 9 + ln:
                    break
                self.on_frame(buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF, buf[9 : 9 + ln])
                buf = buf[9 + ln :]
            self.event.set()
        self.closed = True
        self.event.set()

    async def wait(self, deadline):
        self.event.clear()
        try:
            await asyncio.wait_for(self.event.wait(), max(0.01, min(1.0, deadline - time.monotonic())))
        except (asyncio.TimeoutError, TimeoutError):
            pass

    def open(self, path):
        sid = self.next_sid
        self.next_sid += 2
        self.win[sid] = self.init_win
        self.w.write(frame(1, 4, sid, grpc_headers(path)))
        return sid

    async def send(self, sid, data, end, deadline):
        """DATA on sid as the windows allow; False when the connection or stream ended first."""
        off = 0
        while off < len(data):
            if self.closed or sid in self.ended or time.monotonic() >= deadline:
                return False
            n = min(16384, len(data) - off, self.conn_win, self.win[sid])
            if n <= 0:
                await self.wait(deadline)
                continue
            last = off + n >= len(data)
            self.w.write(frame(0, 1 if end and last else 0, sid, data[off : off + n]))
            self.conn_win -= n
            self.win[sid] -= n
            off += n
            await self.w.drain()
        return True


def init_request_wrong_secret():
    """An InitRequest whose init_secret (field 8) is 32 random bytes: it decodes, and its check
    costs the server a bcrypt comparison before it fails."""
    body = b"\x42\x20" + os.urandom(32)
    return b"\x00" + struct.pack(">I", len(body)) + body


async def h2_kind(kind, reader, writer, deadline, s):
    h = H2(reader, writer)
    h.start()
    pump = asyncio.ensure_future(h.pump(deadline))
    try:
        if kind == "badinit":
            live = set()
            while not h.closed and time.monotonic() < deadline:
                live -= h.ended
                while len(live) < 4 and not h.closed:
                    sid = h.open(b"/init.API/Init")
                    live.add(sid)
                    await h.send(sid, init_request_wrong_secret(), True, deadline)
                    s["frames"] += 2
                await h.wait(deadline)
        else:
            # fill: 4 messages of 3 MiB - 16 KiB stay under a connection's 12 MiB share, so 4
            # connections hold 47.75 MiB: all of the budget when a source has no share of its own
            size = 4 << 20 if kind == "bigmsg" else (3 << 20) - (16 << 10)
            body = os.urandom(size if kind == "bigmsg" else size - 1024)
            msg = b"\x00" + struct.pack(">I", size) + body
            sids = [h.open(b"/init.API/Init") for _ in range(4)]
            await asyncio.gather(*(h.send(sid, msg, False, deadline) for sid in sids))
            s["frames"] += 4 + 4 * (len(msg) // 16384)
            while not h.closed and time.monotonic() < deadline:
                await h.wait(deadline)
    finally:
        pump.cancel()
    return h.closed


class Stats:
    def __init__(self):
        self.k = {kind: dict(attempts=0, connected=0, closed=0, failed=0, handshakes=0, frames=0) for kind in KINDS}
        self.attempts = 0

    def line(self):
        return " ".join(
            f"{kind}:" + ",".join(f"{key}={val}" for key, val in self.k[kind].items()) for kind in KINDS
        )


async def drain(reader, deadline):
    """Reads until EOF or the deadline; returns True when the peer closed."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            data = await asyncio.wait_for(reader.read(65536), left)
        except (asyncio.TimeoutError, TimeoutError):
            return False
        except (OSError, ssl.SSLError):
            return True
        if not data:
            return True


async def one(kind, src, port, deadline, st, ctx):
    """One connection of KIND until the server closes it or the deadline passes."""
    s = st.k[kind]
    if kind == "flood" or kind in H2_KINDS:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    "127.0.0.1", port, ssl=ctx, server_hostname=nonce_sni(), local_addr=(src, 0)
                ),
                max(0.1, min(20, deadline - time.monotonic())),
            )
        except (OSError, ssl.SSLError, asyncio.TimeoutError, TimeoutError, EOFError):
            s["failed"] += 1
            return
        s["connected"] += 1
        s["handshakes"] += 1
    else:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, local_addr=(src, 0)),
                max(0.1, min(5, deadline - time.monotonic())),
            )
        except (OSError, asyncio.TimeoutError, TimeoutError):
            s["failed"] += 1
            return
        s["connected"] += 1
    if kind in H2_KINDS:
        try:
            if await h2_kind(kind, reader, writer, deadline, s):
                s["closed"] += 1
        except (OSError, ssl.SSLError, ConnectionError):
            s["closed"] += 1
        writer.transport.abort()
        return
    closed = asyncio.ensure_future(drain(reader, deadline))
    try:
        if kind == "half":
            writer.write(client_hello(ctx))
        elif kind == "slow":
            hello = client_hello(ctx)
            for i in range(len(hello)):
                if closed.done() or time.monotonic() >= deadline:
                    break
                writer.write(hello[i : i + 1])
                await asyncio.wait([closed], timeout=1.0)
        elif kind == "garbage":
            while not closed.done() and time.monotonic() < deadline:
                body = os.urandom(random.randint(16, 1024))
                writer.write(b"\x16\x03\x03" + struct.pack(">H", len(body)) + body)
                await asyncio.wait([closed], timeout=0.2)
        elif kind == "flood":
            out = PREFACE + frame(4, 0, 0, struct.pack(">HI", 3, 100) + struct.pack(">HI", 4, 65535))
            for i in range(100):
                sid = 2 * i + 1
                out += frame(1, 4, sid, grpc_headers(b"/init.API/Init"))
                # a gRPC message prefix claiming 4 MiB, then 16 bytes of it
                out += frame(0, 0, sid, b"\x00" + struct.pack(">I", 4 << 20) + os.urandom(16))
            writer.write(out)
            s["frames"] += 201
            n = 0
            while not closed.done() and time.monotonic() < deadline:
                burst = b"".join(frame(6, 0, 0, struct.pack(">Q", n + j)) for j in range(99))
                writer.write(burst + frame(4, 0, 0, struct.pack(">HI", 4, 65535 + n % 1000)))
                n += 100
                s["frames"] += 100
                try:
                    await asyncio.wait_for(writer.drain(), max(0.05, deadline - time.monotonic()))
                except (OSError, ssl.SSLError, asyncio.TimeoutError, TimeoutError):
                    break
                await asyncio.wait([closed], timeout=0.05)
        if not closed.done():
            await asyncio.wait([closed], timeout=max(0, deadline - time.monotonic()))
    except (OSError, ssl.SSLError):
        pass
    if closed.done() and closed.result():
        s["closed"] += 1
    closed.cancel()
    writer.transport.abort()


async def keeper(kind, src, port, deadline, st, ctx, stop):
    """Keeps one connection of KIND open: renewed after a pause whenever it ends."""
    await asyncio.sleep(random.uniform(0, 0.5))  # spread the first connects
    while time.monotonic() < deadline and not stop.is_set() and st.attempts < MAX_ATTEMPTS:
        st.attempts += 1
        st.k[kind]["attempts"] += 1
        try:
            await one(kind, src, port, deadline, st, ctx)
        except Exception:  # an unexpected error ends this connection, never the load
            st.k[kind]["failed"] += 1
        await asyncio.sleep(random.uniform(0.5, 1.0))


async def load(port, conns, duration, report, kinds, sources):
    st = Stats()
    ctx = client_ctx()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    deadline = time.monotonic() + duration
    tasks = [
        asyncio.ensure_future(keeper(kinds[i % len(kinds)], source(i, sources), port, deadline, st, ctx, stop))
        for i in range(conns)
    ]
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait([waiter, asyncio.ensure_future(asyncio.sleep(duration))], return_when=asyncio.FIRST_COMPLETED)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    waiter.cancel()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    text = st.line() + f" load_cpu_s={ru.ru_utime + ru.ru_stime:.2f}\n"
    if report:
        with open(report, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


async def listen(kind, duration):
    async def serve(reader, writer):
        end = time.monotonic() + duration
        trickle, sent = b"\x16\x03\x03\x40\x00", 0
        try:
            while time.monotonic() < end:
                if kind == "silent":
                    await asyncio.sleep(1)
                elif kind == "slow":
                    # a plausible record header (handshake, TLS 1.2, 16 KiB), then its body
                    writer.write(trickle[sent : sent + 1] if sent < len(trickle) else os.urandom(1))
                    sent += 1
                    await writer.drain()
                    await asyncio.sleep(1)
                else:
                    body = os.urandom(1024)
                    writer.write(b"\x16\x03\x03" + struct.pack(">H", len(body)) + body)
                    await asyncio.wait_for(writer.drain(), max(0.01, end - time.monotonic()))
                    await asyncio.sleep(0.01)
                if reader.at_eof():
                    break
        except (OSError, asyncio.TimeoutError, TimeoutError):
            pass
        writer.transport.abort()

    async def sink(reader, writer):
        # read (and drop) what the client sends, so that only our writes pace the peer
        reading = asyncio.ensure_future(drain(reader, time.monotonic() + duration))
        try:
            await serve(reader, writer)
        except asyncio.CancelledError:
            writer.transport.abort()
        reading.cancel()

    server = await asyncio.start_server(sink, "127.0.0.1", 0)
    print("LISTEN", server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), duration)
    except (asyncio.TimeoutError, TimeoutError):
        pass
    server.close()


def spawn(pidfile, report, cmd):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd)
    with open(pidfile + ".tmp", "w") as f:
        f.write(f"{p.pid}\n")
    os.rename(pidfile + ".tmp", pidfile)
    signal.signal(signal.SIGTERM, lambda *_: p.terminate())
    while True:
        try:
            _, status, ru = os.wait4(p.pid, 0)
            break
        except InterruptedError:
            continue
    rc = os.waitstatus_to_exitcode(status)
    with open(report, "w") as f:
        f.write(
            f"rc={rc} wall_s={time.monotonic() - t0:.3f} cpu_s={ru.ru_utime + ru.ru_stime:.3f} maxrss_kb={ru.ru_maxrss}\n"
        )
    sys.exit(rc if rc >= 0 else 128 - rc)


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu_s = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14, 15)
    vm = {"VmHWM:": 0, "VmPeak:": 0}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.split()[0] in vm:
                vm[line.split()[0]] = int(line.split()[1])
    print(f"cpu_s={cpu_s:.3f} hwm_kb={vm['VmHWM:']} vmpeak_kb={vm['VmPeak:']}")


def main():
    a = sys.argv[1:]
    opts = {}
    cmd = []
    if "--" in a:
        cmd = a[a.index("--") + 1 :]
        a = a[: a.index("--")]
    mode = a[0] if a else ""
    rest = a[1:]
    for i in range(0, len(rest) - 1, 2):
        opts[rest[i].lstrip("-")] = rest[i + 1]
    if mode == "load":
        asyncio.run(
            load(
                int(opts["port"]), int(opts.get("conns", 200)),
                float(opts.get("duration", 60)),
                opts.get("report"),
                opts.get("kinds", ",".join(KINDS[:5])).split(","),
                int(opts.get("sources", 0)),
            )
        )
    elif mode == "listen":
        asyncio.run(listen(opts["kind"], float(opts.get("duration", 120))))
    elif mode == "spawn":
        spawn(opts["pidfile"], opts["report"], cmd)
    elif mode == "cpu":
        cpu(int(rest[0]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
