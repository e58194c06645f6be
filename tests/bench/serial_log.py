"""The serial logs of the QEMU benches (tests/bench/boot-vm.sh, first-boot.sh): vm.py writes
each line of a guest's console as "[  host seconds since QEMU start] line". One reader for
them: LOGS/BOOT.log, its lines as (seconds, text), the first line holding a text, and the last
"@@DATA KEY value" a guest test program printed."""
import os
import re

HOST = re.compile(r"^\[ *(\d+\.\d+)\] (.*)$")


class SerialLog:
    def __init__(self, logs):
        self.logs = logs

    def path(self, boot):
        return os.path.join(self.logs, boot + ".log")

    def lines(self, boot):
        """(host seconds, text) of each stamped line of BOOT's log."""
        with open(self.path(boot), "rb") as f:
            for raw in f:
                m = HOST.match(raw.decode("utf-8", "replace").rstrip("\n"))
                if m:
                    yield float(m.group(1)), m.group(2)

    def first(self, boot, needle):
        """The time of the first line containing needle, or None."""
        return next((t for t, l in self.lines(boot) if needle in l), None)

    def data(self, boot, key):
        """The value of the last "@@DATA key value" line, or None (also when BOOT left no log,
        a boot a bench was told to leave out)."""
        v = None
        if not os.path.exists(self.path(boot)):
            return v
        for _, l in self.lines(boot):
            i = l.find("@@DATA %s " % key)
            if i >= 0:
                v = l[i + len("@@DATA %s " % key):].strip()
        return v
