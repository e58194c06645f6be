#!/usr/bin/env python3
"""One QEMU boot (TCG) of a test initrd, with swtpm and virtio disks, judged by markers on
the serial console (../shared/notes/qemu.md §11 is the design and the source of every
timeout below).

Guest protocol, one line each:  @@INIT_START  |  @@RESULT <name> PASS|FAIL [detail]  |
@@INIT_DONE rc=N.  Exit status: 0 INIT_DONE rc=0 and no FAIL; 1 a FAIL or rc != 0;
2 timeout, kernel panic or lockup, or no INIT_DONE; 3 the --kill-on line came and the VM
was killed as asked (a power cut).

Every line of the console goes to --log with the host time since QEMU started; stdout gets
one "PASS name" / "FAIL name detail" line per result and a summary; LOG.json holds the same
as data. Network: none unless asked, and then slirp with restrict=on, hostfwd on 127.0.0.1
and guestfwd rules only. Processes are reaped by PID on every path.
"""
import argparse
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
TWEAKS = ("console=ttyS0 panic=-1 quiet cryptomgr.notests mitigations=off tsc=reliable "
          "no_timer_check 8250.nr_uarts=1")
FATAL = re.compile(rb"soft lockup|rcu_preempt self-detected stall|Kernel panic|Attempted to kill init")
START_TIMEOUT = 60.0   # @@INIT_START (quiet host 2-5 s; 10x headroom)
EXIT_GRACE = 15.0      # after @@INIT_DONE: the known virtio-net poweroff hang is not a failure
SWTPM_SOCKET_WAIT = 10.0


def kernel():
    out = subprocess.run([os.path.join(HERE, "kernel.sh")], check=True, capture_output=True,
                         text=True).stdout
    return dict(line.split("=", 1) for line in out.split())


def stop(proc, term_wait=5.0):
    """SIGTERM, then SIGKILL after term_wait; always reaps."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(term_wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--disk", action="append", default=[])
    ap.add_argument("--tpm-state")
    ap.add_argument("--append", default="")
    ap.add_argument("--kill-on")
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--net-guestfwd", action="append", default=[])
    ap.add_argument("--hostfwd", action="append", default=[])
    ap.add_argument("--memory", type=int, default=512)
    a = ap.parse_args()

    k = kernel()
    tmp = tempfile.mkdtemp(prefix="constel-vm-")
    swtpm = qemu = None
    summary = {"results": [], "rc": None, "killed": False, "timed_out": False, "panic": False,
               "init_start_s": None, "init_done_s": None, "exit_s": None}
    status = 2
    try:
        cmd = ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
               "-monitor", "none", "-machine", "pc", "-cpu", "max", "-smp", "1", "-accel", "tcg",
               "-m", str(a.memory), "-serial", "stdio", "-no-reboot",
               "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
               "-initrd", a.initrd, "-append", (TWEAKS + " " + a.append).strip()]
        if k.get("VMLINUX"):
            # PVH + qboot; never PVH + SeaBIOS with a TPM (notes §9 pitfall 1)
            cmd += ["-kernel", k["VMLINUX"], "-bios", "/usr/share/qemu/qboot.rom"]
        else:
            cmd += ["-kernel", k["BZIMAGE"]]
        if a.tpm_state:
            os.makedirs(a.tpm_state, exist_ok=True)
            sock = os.path.join(tmp, "swtpm.sock")
            swtpm_log = a.log + ".swtpm.log"
            swtpm = subprocess.Popen(
                ["swtpm", "socket", "--tpm2", "--tpmstate", "dir=" + a.tpm_state,
                 "--ctrl", "type=unixio,path=" + sock, "--terminate",
                 "--log", "file=%s,level=1" % swtpm_log,
                 "--pid", "file=" + os.path.join(tmp, "swtpm.pid")],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + SWTPM_SOCKET_WAIT
            while not os.path.exists(sock):
                if swtpm.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("swtpm did not start (see %s)" % swtpm_log)
                time.sleep(0.02)
            cmd += ["-chardev", "socket,id=chrtpm,path=" + sock,
                    "-tpmdev", "emulator,id=tpm0,chardev=chrtpm", "-device", "tpm-tis,tpmdev=tpm0"]
        for i, d in enumerate(a.disk):
            cmd += ["-drive", "file=%s,format=raw,if=none,id=d%d,cache=unsafe" % (d, i),
                    "-device", "virtio-blk-pci,drive=d%d" % i]
        if a.net_guestfwd or a.hostfwd:
            for h in a.hostfwd:
                if not h.startswith("tcp:127.0.0.1:"):
                    raise RuntimeError("hostfwd must listen on 127.0.0.1: " + h)
            net = "user,id=n0,restrict=on" + "".join(",hostfwd=" + h for h in a.hostfwd) + \
                "".join(",guestfwd=" + g for g in a.net_guestfwd)
            cmd += ["-netdev", net, "-device", "virtio-net-pci,netdev=n0"]

        t0 = time.monotonic()
        qemu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        status = watch(qemu, a, t0, summary)
    except RuntimeError as e:
        print("FAIL vm_setup %s" % e)
        status = 2
    finally:
        stop(qemu)
        if swtpm is not None:
            try:
                swtpm.wait(5)  # --terminate: it ends with QEMU's connection
            except subprocess.TimeoutExpired:
                stop(swtpm)
        shutil.rmtree(tmp, ignore_errors=True)
    fails = [r for r in summary["results"] if not r["pass"]]
    print("vm: %d passed, %d failed, exit %d (%s; serial log %s)" % (
        len(summary["results"]) - len(fails), len(fails), status,
        "power cut as asked" if summary["killed"] else
        "timed out" if summary["timed_out"] else "panic" if summary["panic"] else
        "rc=%s" % summary["rc"], a.log))
    summary["status"] = status
    with open(a.log + ".json", "w") as f:
        json.dump(summary, f, indent=1)
    return status


def watch(qemu, a, t0, summary):
    """Reads the console until the boot is judged; returns the exit status."""
    kill_on = re.compile(a.kill_on.encode()) if a.kill_on else None
    buf = b""
    done_at = None
    with open(a.log, "wb") as log:
        fd = qemu.stdout.fileno()
        while True:
            now = time.monotonic() - t0
            if summary["init_start_s"] is None and now > START_TIMEOUT:
                summary["timed_out"] = True
                log.write(b"[vm.py] no @@INIT_START within %d s\n" % START_TIMEOUT)
                return 2
            if now > a.timeout:
                summary["timed_out"] = True
                log.write(b"[vm.py] boot exceeded %d s\n" % a.timeout)
                return 2
            if done_at is not None and now - done_at > EXIT_GRACE:
                log.write(b"[vm.py] QEMU still running %d s after @@INIT_DONE: stopped\n" % EXIT_GRACE)
                break
            r, _, _ = select.select([fd], [], [], 0.5)
            if not r:
                if qemu.poll() is not None:
                    break
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                qemu.wait()
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                line = line.rstrip(b"\r")
                t = time.monotonic() - t0
                log.write(b"[%8.3f] " % t + line + b"\n")
                log.flush()
                if kill_on is not None and kill_on.search(line):
                    qemu.kill()  # the power cut: no shutdown, no TPM2_Shutdown, no sync
                    qemu.wait()
                    summary["killed"] = True
                    log.write(b"[vm.py] power cut on: " + line + b"\n")
                    return 3
                if FATAL.search(line):
                    summary["panic"] = True
                    return 2
                text = line.decode("utf-8", "replace")
                if "@@INIT_START" in text and summary["init_start_s"] is None:
                    summary["init_start_s"] = round(t, 3)
                m = re.search(r"@@RESULT (\S+) (PASS|FAIL) ?(.*)", text)
                if m:
                    ok = m.group(2) == "PASS"
                    summary["results"].append({"name": m.group(1), "pass": ok, "detail": m.group(3)})
                    print(("PASS %s" % m.group(1)) if ok else ("FAIL %s %s" % (m.group(1), m.group(3))),
                          flush=True)
                m = re.search(r"@@INIT_DONE rc=(-?\d+)", text)
                if m and done_at is None:
                    summary["rc"] = int(m.group(1))
                    summary["init_done_s"] = done_at = round(t, 3)
    summary["exit_s"] = round(time.monotonic() - t0, 3)
    if summary["rc"] is None:
        return 2
    if summary["rc"] != 0 or any(not r["pass"] for r in summary["results"]):
        return 1
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))  # run the finally: blocks
    sys.exit(main())
