#!/usr/bin/env python3
"""One QEMU boot (TCG) of a test initrd, with swtpm and virtio disks, judged by markers on
the serial console. docs/qemu.md (§4, §8, §9, §11) holds the measurements behind
every choice and timeout here.

Guest protocol, one line each:
  @@INIT_START                        /init runs (must come within 60 s)
  @@RESULT <name> PASS|FAIL [detail]  one check
  @@INIT_DONE rc=N                    all results are out; /init now powers off
Exit status: 0 INIT_DONE rc=0 and no FAIL; 1 a FAIL or rc != 0; 2 timeout, kernel panic or
lockup, or no INIT_DONE; 3 the --kill-on line came and the VM was killed as asked (a power cut).

Every console line goes to --log with the host time since QEMU started ("[  12.345] ");
stdout gets one "PASS name" / "FAIL name detail" line per result and a summary line; LOG.json
holds the same as data; swtpm logs next to LOG. Network: none unless asked, and then slirp
with restrict=on, hostfwd only from 127.0.0.1 and guestfwd rules only; or (--netns) a tap
device of its own on the bridge of a network namespace the caller made (qemu-tests/netns.sh),
QEMU running inside that namespace, which must have no link but lo, bridges and taps. Child processes are
reaped by PID on every path, and die with this process even if it is SIGKILLed.
"""
import argparse
import ctypes
import ipaddress
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
QBOOT = "/usr/share/qemu/qboot.rom"
# --uefi: Debian's ovmf, the 4 MB build without Secure Boot; the variable store is copied per boot.
OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd"
# Each saves time under TCG (notes §5.1: poweroff after 2.5 s instead of 4.0 s); quiet also
# keeps kernel messages from splitting the guest's protocol lines.
TWEAKS = ("console=ttyS0 panic=-1 quiet cryptomgr.notests mitigations=off tsc=reliable "
          "no_timer_check 8250.nr_uarts=1")
FATAL = re.compile(r"soft lockup|rcu_preempt self-detected stall|Kernel panic|"
                   r"Attempted to kill init")
RESULT = re.compile(r"@@RESULT (\S+) (PASS|FAIL)\b ?(.*)")
DONE = re.compile(r"@@INIT_DONE rc=(-?\d+)")
# @@INIT_START: 2-5 s on a quiet host; a direct kernel boot beside two CPU hogs and a dozen
# other processes (load 14) took over 60 s (the kernel's own clock said 17 s at 53 s)
START_TIMEOUT = 180.0
# through OVMF the start line is PID 1's, after the firmware and the UKI's stub: 22-25 s on a
# quiet host (the image and measured boots), so 60 s is under 3x; beside two CPU hogs and
# other work the firmware alone took over 60 s
START_TIMEOUT_UEFI = 240.0
EXIT_GRACE = 15.0      # QEMU exit after @@INIT_DONE; longer is the known poweroff hang (§9.2)
TERM_GRACE = 5.0       # SIGTERM to SIGKILL
SWTPM_SOCKET_WAIT = 10.0

_libc = ctypes.CDLL(None, use_errno=True)
_parent = os.getpid()


def _die_with_parent():
    """Runs in the child before exec: no QEMU or swtpm outlives a SIGKILLed harness."""
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != _parent:     # the parent died before prctl took effect
        os._exit(1)


CLONE_NEWNET = 0x40000000


def spawn(cmd, netns_fd=None, **kw):
    """cmd as our child; with netns_fd (an open /run/netns/NAME) inside that namespace."""
    def pre():
        _die_with_parent()
        if netns_fd is not None and _libc.setns(netns_fd, CLONE_NEWNET) != 0:
            os._exit(1)
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, preexec_fn=pre, **kw)


def ip(*args):
    """One iproute2 command; its error (stderr) in the RuntimeError."""
    r = subprocess.run(["ip"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def netns_checked(name):
    """The namespace must exist and hold nothing that leads out of it: only lo, bridges and
    tap devices (no veth, no physical or tunnel link). Raises RuntimeError."""
    if not re.match(r"^[A-Za-z0-9_.-]{1,64}$", name) or not os.path.exists("/run/netns/" + name):
        raise RuntimeError("--netns %s: no such network namespace (ip netns add)" % name)
    for link in json.loads(ip("-n", name, "-d", "-j", "link", "show")):
        kind = link.get("linkinfo", {}).get("info_kind")
        if link["ifname"] != "lo" and kind not in ("bridge", "tun"):
            raise RuntimeError("--netns %s: link %s (%s) could lead out of the namespace"
                               % (name, link["ifname"], kind or link.get("link_type")))


def tap_add(a):
    """A tap device of this boot on the namespace's bridge; its name."""
    netns_checked(a.netns)
    tap = "ctap%d" % os.getpid()
    ip("-n", a.netns, "tuntap", "add", "dev", tap, "mode", "tap")
    try:
        ip("-n", a.netns, "link", "set", tap, "master", a.netns_bridge, "up")
    except RuntimeError:
        ip("-n", a.netns, "link", "del", tap)
        raise
    return tap


def stop(proc, wait=0.0):
    """Waits `wait` seconds for proc to end by itself, then SIGTERM, then SIGKILL; reaps it.
    Returns how it ended: "exit" or the signal it needed."""
    if proc is None:
        return None
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None and proc.poll() is None:
            proc.send_signal(sig)
        try:
            proc.wait(wait if sig is None else TERM_GRACE if sig == signal.SIGTERM else None)
            return sig.name if sig else "exit"
        except subprocess.TimeoutExpired:
            pass


def regex(text):
    try:
        return re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError("bad regex %r: %s" % (text, e))


def kernel():
    out = subprocess.run([os.path.join(HERE, "kernel.sh")], check=True, stdout=subprocess.PIPE,
                         text=True).stdout  # its stderr says why, when it fails
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def check_net_rules(ap, a):
    """The hard network rules: nothing reachable but explicit forwards to/from 127.0.0.1."""
    for rule in a.hostfwd + a.net_guestfwd:
        # A bare comma would start a new -netdev option (say restrict=off); ",," is QEMU's escape.
        if "," in rule.replace(",,", ""):
            ap.error("a comma in %r would add -netdev options; write it as ',,'" % rule)
    for h in a.hostfwd:
        if not re.match(r"(tcp|udp):127\.0\.0\.1:\d+-", h):
            ap.error("--hostfwd must listen on 127.0.0.1: %r" % h)
    try:
        net = ipaddress.ip_network(a.net)
        if a.dhcp_start and ipaddress.ip_address(a.dhcp_start) not in net:
            ap.error("--dhcp-start %s is outside --net %s" % (a.dhcp_start, a.net))
    except ValueError as e:
        ap.error("--net/--dhcp-start: %s" % e)
    if not net.is_private:
        ap.error("--net must be a private range: %s" % a.net)
    if a.netns and (a.hostfwd or a.net_guestfwd or a.dhcp_start):
        ap.error("--netns: no --hostfwd, --net-guestfwd or --dhcp-start (the namespace's DHCP "
                 "server and tools are the network)")
    if a.mac and not re.match(r"^52:54:00(:[0-9a-f]{2}){3}$", a.mac):
        ap.error("--mac must be 52:54:00:xx:xx:xx (lower case): %r" % a.mac)
    for g in a.net_guestfwd:
        # cmd: is the only form that serves more than one connection (notes §7); the address
        # must be inside the guest's own slirp network (the rest of the world stays closed).
        m = re.match(r"tcp:(\d+\.\d+\.\d+\.\d+):\d+-cmd:", g)
        if not m or ipaddress.ip_address(m.group(1)) not in net:
            ap.error("--net-guestfwd must be tcp:ADDR:PORT-cmd:COMMAND with ADDR in %s: %r"
                     % (a.net, g))


def start_swtpm(a, tmp, summary, procs):
    """swtpm in the foreground as our child (notes §8), in procs["swtpm"]; returns QEMU's
    arguments for it."""
    os.makedirs(a.tpm_state, exist_ok=True)
    sock = os.path.join(tmp, "swtpm.sock")
    if len(sock) >= 108:
        raise RuntimeError("swtpm socket path too long for AF_UNIX: %s (set TMPDIR)" % sock)
    if os.path.exists(sock):
        os.unlink(sock)  # QEMU must never find a stale socket
    log = re.sub(r"\.log$", "", a.log) + "-swtpm.log"
    open(log, "w").close()  # one boot per log, like the serial log
    # --terminate: swtpm exits when QEMU's connection closes, even if QEMU is SIGKILLed.
    proc = procs["swtpm"] = spawn(
        ["swtpm", "socket", "--tpm2", "--tpmstate", "dir=" + a.tpm_state,
         "--ctrl", "type=unixio,path=" + sock, "--terminate", "--log", "file=%s,level=1" % log,
         "--pid", "file=" + os.path.join(tmp, "swtpm.pid")],
        stdout=subprocess.DEVNULL)
    summary["swtpm_pid"] = proc.pid
    deadline = time.monotonic() + SWTPM_SOCKET_WAIT
    while not os.path.exists(sock):  # QEMU fails to start if swtpm is not listening yet
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("swtpm did not start (see %s)" % log)
        time.sleep(0.02)
    return ["-chardev", "socket,id=chrtpm,path=" + sock,
            "-tpmdev", "emulator,id=tpm0,chardev=chrtpm",
            "-device", "tpm-%s,tpmdev=tpm0" % (a.tpm_model or ("crb" if a.uefi else "tis"))]


def qemu_command(a, k, tmp=None, tap=None):
    cmd = ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
           "-monitor", "none", "-machine", a.machine or ("q35" if a.uefi else "pc"), "-cpu", "max", "-smp",
           str(a.smp), "-accel", "tcg", "-m", str(a.memory), "-serial", "stdio", "-no-reboot",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    if a.uefi and a.ovmf:  # the unified image, read-only: OVMF keeps its variables in memory
        cmd += ["-bios", a.ovmf]
    elif a.uefi:
        # A measured boot: OVMF from pflash starts the UKI on the ESP (its \EFI\BOOT\BOOTX64.EFI),
        # which carries kernel, initrd and command line; the ESP is the last virtio disk (the
        # others keep their /dev/vdX) and the first boot option (bootindex).
        vars_copy = os.path.join(tmp, "OVMF_VARS.fd")
        shutil.copyfile(OVMF_VARS, vars_copy)
        cmd += ["-drive", "if=pflash,format=raw,unit=0,readonly=on,file=" + OVMF_CODE,
                "-drive", "if=pflash,format=raw,unit=1,file=" + vars_copy]
    else:
        cmd += ["-initrd", a.initrd, "-append", (TWEAKS + " " + a.append).strip()]
        if k.get("VMLINUX"):
            # PVH needs qboot: PVH + SeaBIOS + TPM corrupts the ACPI tables (notes §9.1).
            cmd += ["-kernel", k["VMLINUX"], "-bios", QBOOT]
        else:
            cmd += ["-kernel", k["BZIMAGE"]]  # SeaBIOS, the default firmware
    for i, d in enumerate(a.disk):  # in order: /dev/vda, /dev/vdb, ...
        # --uefi naming one of the disks (a whole OS image with its ESP): that disk boots
        boot = ",bootindex=0" if a.uefi == d else ""
        cmd += ["-drive", "file=%s,format=raw,if=none,id=d%d,cache=unsafe" % (d, i),
                "-device", "virtio-blk-pci,drive=d%d%s" % (i, boot)]
    # disks shaped as clouds attach them: SCSI disks on one virtio-scsi controller (scsi-hd
    # properties such as vendor=Google,product=PersistentDisk,device_id=NAME) and NVMe disks
    if a.scsi_disk:
        cmd += ["-device", "virtio-scsi-pci,id=scsi0"]
    for i, d in enumerate(a.scsi_disk):
        f, _, props = d.partition(",")
        cmd += ["-drive", "file=%s,format=raw,if=none,id=s%d,cache=unsafe" % (f, i),
                "-device", "scsi-hd,bus=scsi0.0,drive=s%d,scsi-id=%d" % (i, i) + ("," + props if props else "")]
    for i, d in enumerate(a.nvme_disk):
        f, _, props = d.partition(",")
        cmd += ["-drive", "file=%s,format=raw,if=none,id=n%d,cache=unsafe" % (f, i),
                "-device", "nvme,drive=n%d,serial=constel%d" % (i, i) + ("," + props if props else "")]
    if a.uefi and a.uefi not in a.disk:
        cmd += ["-drive", "file=%s,format=raw,if=none,id=esp,readonly=on" % a.uefi,
                "-device", "virtio-blk-pci,drive=esp,bootindex=0"]
    mac = ",mac=" + a.mac if a.mac else ""
    if tap:
        cmd += ["-netdev", "tap,id=n0,ifname=%s,script=no,downscript=no" % tap,
                "-device", "virtio-net-pci,netdev=n0" + mac + (",romfile=" if a.uefi else "")]
    elif a.net_guestfwd or a.hostfwd:  # else no NIC at all: -nodefaults adds none
        user = ["user,id=n0,restrict=on", "net=" + a.net]
        if a.dhcp_start:
            user.append("dhcpstart=" + a.dhcp_start)
        cmd += ["-netdev", ",".join(user + ["hostfwd=" + h for h in a.hostfwd]
                                    + ["guestfwd=" + g for g in a.net_guestfwd]),
                # --uefi: no option ROM (romfile= empty), so OVMF measures no iPXE
                "-device", "virtio-net-pci,netdev=n0" + mac + (",romfile=" if a.uefi else "")]
    return cmd


def watch(qemu, a, t0, summary, log):
    """Reads the console until the boot is judged; returns the exit status. Leaves QEMU
    running when it returns early; the caller stops it."""
    fd = qemu.stdout.fileno()
    buf, eof, done_at = b"", False, None

    def note(msg):
        log.write(b"[%8.3f] [vm.py] %s\n" % (time.monotonic() - t0, msg.encode()))
        summary["reason"] = msg

    while True:
        now = time.monotonic() - t0
        start_timeout = START_TIMEOUT_UEFI if a.uefi else START_TIMEOUT
        if done_at is None and summary["init_start_s"] is None and now > start_timeout:
            summary["timed_out"] = True
            note("no @@INIT_START within %d s" % start_timeout)
            return 2
        if done_at is None and now > a.timeout:
            summary["timed_out"] = True
            note("no @@INIT_DONE within --timeout %d s" % a.timeout)
            return 2
        if done_at is not None and now - done_at > EXIT_GRACE:
            note("QEMU still running %d s after @@INIT_DONE: stopped (the known poweroff hang, "
                 "not a failure)" % EXIT_GRACE)
            break
        # The pipe can outlive QEMU (a guestfwd helper inherits it), so QEMU's exit is checked
        # whenever the console is quiet, not only at EOF.
        if eof or not select.select([fd], [], [], 0.25)[0]:
            if qemu.poll() is not None:
                break
            if eof:
                time.sleep(0.1)
            continue
        chunk = os.read(fd, 65536)
        eof = not chunk
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for raw in lines:
            t = time.monotonic() - t0
            raw = raw.rstrip(b"\r")
            log.write(b"[%8.3f] " % t + raw + b"\n")
            log.flush()
            line = raw.decode("utf-8", "replace")
            if a.kill_on and a.kill_on.search(line):
                # The power cut: no poweroff, no TPM2_Shutdown, the guest's page cache is lost;
                # what reached the virtio disk is in the image (cache=unsafe writes go to the
                # host page cache, which outlives QEMU).
                qemu.kill()
                qemu.wait()
                summary["killed"] = True
                note("power cut (SIGKILL) on: " + line)
                return 3
            if FATAL.search(line):
                if done_at is None:
                    summary["panic"] = True
                    note("kernel failure: " + line)
                    return 2
                continue  # after INIT_DONE the results are in: only the poweroff is failing
            if a.start_on.search(line) and summary["init_start_s"] is None:
                summary["init_start_s"] = round(t, 3)
            m = RESULT.search(line)
            if m:
                ok = m.group(2) == "PASS"
                summary["results"].append({"name": m.group(1), "pass": ok, "detail": m.group(3)})
                print("PASS " + m.group(1) if ok else "FAIL %s %s" % (m.group(1), m.group(3)),
                      flush=True)
            m = DONE.search(line)
            if m and done_at is None:
                summary["rc"] = int(m.group(1))
                summary["init_done_s"] = done_at = round(t, 3)
    if buf:  # a last line without newline
        log.write(b"[%8.3f] " % (time.monotonic() - t0) + buf + b"\n")
    summary["exit_s"] = round(time.monotonic() - t0, 3)
    if summary["rc"] is None:
        if "reason" not in summary:
            note("QEMU exited (status %s) without @@INIT_DONE" % qemu.returncode)
        return 2
    if summary["rc"] != 0 or any(not r["pass"] for r in summary["results"]):
        return 1
    return 0


def interrupted(signum, frame):
    raise KeyboardInterrupt  # one path for Ctrl-C, SIGTERM and SIGHUP: the finally below


def main():
    ap = argparse.ArgumentParser(description="One QEMU boot of a test initrd, judged by "
                                 "console markers (see the top of vm.py).")
    ap.add_argument("--initrd", help="the initrd (with the kernel of kernel.sh)")
    ap.add_argument("--uefi", metavar="ESP", help="boot OVMF (q35, tpm-crb) from this FAT "
                    "image's \\EFI\\BOOT\\BOOTX64.EFI instead of --initrd; or from the ESP "
                    "of a GPT disk given as --disk too (that disk is then the boot option)")
    ap.add_argument("--ovmf", metavar="FD", help="with --uefi: this unified OVMF image as "
                    "-bios instead of OVMF_CODE_4M + a copy of OVMF_VARS_4M on pflash")
    ap.add_argument("--log", required=True, help="serial log; LOG.json gets the summary")
    ap.add_argument("--disk", action="append", default=[], help="raw image; in order vda, vdb...")
    ap.add_argument("--scsi-disk", action="append", default=[], metavar="FILE[,PROPS]",
                    help="raw image as a scsi-hd on virtio-scsi, with scsi-hd properties")
    ap.add_argument("--nvme-disk", action="append", default=[], metavar="FILE[,PROPS]",
                    help="raw image as an NVMe controller with one namespace")
    ap.add_argument("--tpm-state", help="swtpm state directory (kept across boots)")
    ap.add_argument("--tpm-model", choices=("tis", "crb"),
                    help="the TPM's interface: tpm-tis (default; libvirt's default on x86, so "
                    "Constellation's QEMU nodes') or tpm-crb (the default with --uefi)")
    ap.add_argument("--machine", choices=("pc", "q35"),
                    help="QEMU's machine: pc (default for --initrd) or q35 (the default with "
                    "--uefi; Constellation's QEMU nodes, its terraform module's default); both "
                    "boot a direct kernel through qboot")
    ap.add_argument("--smp", type=int, choices=range(1, 5), default=1, metavar="N",
                    help="virtual CPUs (1 to 4; default 1, what every test boots)")
    ap.add_argument("--append", default="", help="extra kernel command-line words")
    ap.add_argument("--kill-on", type=regex, metavar="REGEX",
                    help="SIGKILL QEMU on the first console line matching this (a power cut)")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds to @@INIT_DONE")
    ap.add_argument("--net-guestfwd", action="append", default=[],
                    help="tcp:10.0.2.X:PORT-cmd:socat STDIO TCP:127.0.0.1:P")
    ap.add_argument("--hostfwd", action="append", default=[], help="tcp:127.0.0.1:P-:GUESTPORT")
    ap.add_argument("--net", default="10.0.2.0/24",
                    help="the slirp network (guestfwd addresses must be inside it)")
    ap.add_argument("--dhcp-start", help="the first address slirp's DHCP hands out")
    ap.add_argument("--netns", metavar="NAME", help="QEMU inside this network namespace, on a "
                    "tap device of its own on --netns-bridge (qemu-tests/netns.sh makes one)")
    ap.add_argument("--netns-bridge", default="br0", help="the bridge in --netns")
    ap.add_argument("--mac", help="the NIC's MAC (52:54:00:xx:xx:xx)")
    ap.add_argument("--start-on", type=regex, default=re.compile("@@INIT_START"),
                    metavar="REGEX", help="the line that counts as @@INIT_START")
    ap.add_argument("--memory", type=int, default=512, help="MB")
    a = ap.parse_args()
    check_net_rules(ap, a)
    if bool(a.initrd) == bool(a.uefi) or (a.uefi and a.append) or (a.ovmf and not a.uefi):
        ap.error("give --initrd [--append] or --uefi [--ovmf] (its UKI holds the command line)")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)

    summary = {"results": [], "rc": None, "killed": False, "timed_out": False, "panic": False,
               "interrupted": False, "init_start_s": None, "init_done_s": None, "exit_s": None,
               "qemu_pid": None, "swtpm_pid": None}
    status, procs, tmp, tap, nsfd = 2, {}, None, None, None
    log = open(a.log, "wb")  # first: a failed setup must not leave an older boot's log behind
    try:
        k = {} if a.uefi else kernel()
        summary["kernel"] = a.uefi or k.get("VMLINUX") or k["BZIMAGE"]
        tmp = tempfile.mkdtemp(prefix="vm-")  # short: the swtpm socket path must fit AF_UNIX
        if a.netns:
            tap = summary["tap"] = tap_add(a)
            nsfd = os.open("/run/netns/" + a.netns, os.O_RDONLY | os.O_CLOEXEC)
        cmd = qemu_command(a, k, tmp, tap)
        if a.tpm_state:
            cmd += start_swtpm(a, tmp, summary, procs)
        t0 = time.monotonic()
        # stderr too: QEMU's own errors then sit in the log where the boot should be.
        qemu = procs["qemu"] = spawn(cmd, netns_fd=nsfd, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        summary["qemu_pid"] = qemu.pid
        status = watch(qemu, a, t0, summary, log)
    except KeyboardInterrupt:
        summary["interrupted"] = True
        summary["reason"] = "interrupted"
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        summary["reason"] = "setup: %s" % e
        log.write(b"[vm.py] %s\n" % summary["reason"].encode())
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        summary["qemu_end"] = stop(procs.get("qemu"))
        # --terminate: swtpm normally ends by itself with QEMU's connection.
        summary["swtpm_end"] = stop(procs.get("swtpm"), wait=TERM_GRACE)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        if nsfd is not None:
            os.close(nsfd)
        if tap:
            try:
                ip("-n", a.netns, "link", "del", tap)
            except RuntimeError as e:
                log.write(b"[vm.py] %s\n" % str(e).encode())
        log.close()

    summary["status"] = status
    fails = [r for r in summary["results"] if not r["pass"]]
    verdict = {0: "ok", 1: "failed", 2: summary.get("reason", "no @@INIT_DONE"),
               3: "power cut as asked"}[status]
    secs = lambda k: "-" if summary[k] is None else "%.2f s" % summary[k]
    print("vm: %d passed, %d failed, exit %d: %s (INIT_START %s, INIT_DONE %s; log %s)" % (
        len(summary["results"]) - len(fails), len(fails), status, verdict,
        secs("init_start_s"), secs("init_done_s"), a.log), flush=True)
    with open(a.log + ".json", "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
