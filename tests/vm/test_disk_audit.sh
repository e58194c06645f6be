# The no-wipe audit of the state disk (issue 28 item 2; docs/wipe.md "The no-wipe audit"): the
# node's LUKS2 + dm-integrity stack formatted WITHOUT the wipe, ext4 made with the options the
# agent uses for it, and a node's workload on it (containerd-like unpacks, kubelet's small
# atomic files, etcd's fdatasync'd WAL with fallocate and truncate, deletes, punched holes,
# O_DIRECT, fstrim, caches dropped and everything read back), across power cuts (QEMU killed
# at a random operation; the next boot replays the journal and goes on), then e2fsck -fn, a
# remount and a full read. Passes only if no read of a sector that was never written since the
# format is seen by either recorder (tests/vm/guest_audit.c):
#   the tag check: no "INTEGRITY AEAD ERROR" on any boot's console (unwritten tags fail it);
#   the trace: block_bio_queue reads against the writes of this boot (same trace) and of the
#     earlier boots (their dm-log-writes logs, parsed here): no "@@VIOL".
# Then three mutants that must be caught: a read of a never-written block injected; mke2fs
# with lazy_journal_init=1 and a power cut (the journal replay reads past the last commit);
# mke2fs without the agent's disk_zero_for_mkfs (its probes and read-modify-written superblocks).
#   AUDIT_BOOTS (cut boots before the final one, default 3), AUDIT_ROUNDS (workload rounds a
#   boot), AUDIT_DISK_MB (the state disk), AUDIT_SEED (the random cut points and workload),
#   AUDIT_MKFS (mke2fs -E options instead of the agent's), AUDIT_PARTS (audit inject lazyj
#   nozero), AUDIT_KEEP=1 (keep $work). About 4-6 minutes on a loaded 2-core host.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. tests/lib.sh
work=$(mktemp -d /tmp/constel-audit-XXXXXX)
trap '[ -n "${AUDIT_KEEP:-}" ] || rm -rf "$work"' EXIT
. tests/vm/lib-vm.sh

# The mke2fs -E options: by default the agent's (DISK_MKFS_NO_WIPE in agent/disk/disk.h).
MKFS_OPTS=${AUDIT_MKFS:-$(sed -n 's/^#define DISK_MKFS_NO_WIPE "\(.*\)"$/\1/p' agent/disk/disk.h)}
BOOTS=${AUDIT_BOOTS:-3}
ROUNDS=${AUDIT_ROUNDS:-3}
DISK_MB=${AUDIT_DISK_MB:-384}
PARTS=${AUDIT_PARTS:-audit inject lazyj nozero}
SEED=${AUDIT_SEED:-$(od -An -tu4 -N4 /dev/urandom | tr -d ' ')}
echo "audit: seed $SEED, $BOOTS power cuts, $ROUNDS rounds a boot, ${DISK_MB} MiB, mke2fs -E $MKFS_OPTS"
RANDOM=$((SEED % 32768))

deps=$(cat "$BUILD/deps-prefix" 2>/dev/null)
for f in "$BUILD/vm/guest_audit" "$deps/sbin/mke2fs" /sbin/e2fsck; do
	[ -x "$f" ] || { fail audit_setup "$f is missing (make $BUILD/vm/guest_audit; e2fsprogs)"; exit 1; }
done
# e2fsck: the host's (Debian's e2fsprogs), with its shared libraries at their paths.
files=(--file "$deps/sbin/mke2fs:/sbin/mke2fs" --file "/sbin/e2fsck:/sbin/e2fsck"
	--file "/sbin/debugfs:/sbin/debugfs")
for l in $(ldd /sbin/e2fsck /sbin/debugfs | grep -oE '/[^ ]+\.so[^ ]*' | sort -u); do
	files+=(--file "$(readlink -f "$l"):$l")
done
if ! qemu-tests/mkinitrd.sh "$work/audit.img" --init "$BUILD/vm/guest_audit" \
	--modules "$VM_DISK_MODULES dm_log_writes" "${files[@]}" >"$work/initrd.out" 2>&1; then
	fail audit_setup "initrd: $(tail -3 "$work/initrd.out")"
	exit 1
fi
key=$(openssl rand -hex 32)

# written LOG... SEEDFILE: the bitmap of the 4096-byte blocks written in the dm-log-writes logs,
# one bit a block.
written() {
	DISK_MB=$DISK_MB python3 - "$@" <<'PY'
import os, struct, sys
DISK_MB = int(os.environ["DISK_MB"])
*logs, out = sys.argv[1:]
seen = set()
for path in logs:
    with open(path, "rb") as f:
        sup = f.read(32)
        magic, ver, n, ss = struct.unpack_from("<QQQI", sup)
        if magic != 0x6a736677736872:
            continue  # the boot died before its first logged flush
        pos, i = 1, 0
        while True:
            f.seek(pos * ss)
            h = f.read(32)
            if len(h) < 32:
                break
            sec, nr, flags, dlen = struct.unpack("<QQQQ", h)
            # past nr_entries: entries the log thread wrote before the cut but whose super
            # update did not make it (dm-log-writes logs a write only after it completed);
            # the log disk is fresh each boot, so the first all-zero header ends it
            if i >= n and (not (sec or nr or flags or dlen) or flags > 31 or nr > 1 << 20):
                break
            if flags & 4 == 0 and not flags & 8:  # neither a discard nor a mark
                seen.update(range(sec, sec + nr))
                pos += nr
            pos += 1
            i += 1
size = max(seen) // 8 + 1 if seen else 1
size = max(size, DISK_MB * 32 + 4096)
bits = bytearray(size)
for b in seen:
    bits[b >> 3] |= 1 << (b & 7)
open(out, "wb").write(bytes(bits) + bytes(-len(bits) % 4096))
print(len(seen))
PY
}

# [CUT=1] boot NAME DISK LOGS_BEFORE... -- ARGS...: one boot of the audit program on DISK with a
# fresh log disk ($work/NAME.wlog) and the bitmap of the logs before; with CUT=1 QEMU is killed
# (a power cut) at the guest's @@CUT line.
boot() {
	local name=$1 disk=$2 logs=()
	shift 2
	while [ "$1" != -- ]; do logs+=("$1"); shift; done
	shift
	truncate -s $((DISK_MB * 3))M "$work/$name.wlog"
	written "${logs[@]}" "$work/$name.seed" >/dev/null
	local kill=()
	[ "${CUT:-0}" = 1 ] && kill=(--kill-on '@@CUT')
	vm_boot "$name" "$work/audit.img" "${kill[@]}" --memory 768 --timeout 900 --disk "$disk" \
		--disk "$work/$name.wlog" --disk "$work/$name.seed" \
		--append "audit.key=$key audit.rng=$SEED$name $*"
}

# verdict NAME...: the two recorders over these boots' consoles: "integrity N viol N reads N":
# dm-crypt's tag check failing (INTEGRITY AEAD ERROR: a tag never written; dm-integrity's own
# "Checksum failed" in case its internal hash were used), and the trace's never-written reads
# (its count; a cut boot's tracer never reports one: its @@VIOL lines then).
verdict() {
	local ck=0 vi=0 rd=0 n
	for n in "$@"; do
		ck=$((ck + $(grep -ac 'INTEGRITY AEAD ERROR\|Checksum failed' "$work/$n.log")))
		if grep -aq '@@DATA trace_violations' "$work/$n.log"; then
			vi=$((vi + $(vm_data "$n" trace_violations)))
		else
			vi=$((vi + $(grep -ac '@@VIOL' "$work/$n.log")))
		fi
		rd=$((rd + $(vm_data "$n" trace_reads | grep . || echo 0)))
	done
	echo "integrity $ck viol $vi reads $rd"
}

# ---- the audit: a first boot and BOOTS-1 more, each cut at a random operation, then the final ----
case " $PARTS " in *" audit "*)
disk=$work/state.raw
truncate -s ${DISK_MB}M "$disk"
names=() logs=()
for i in $(seq 1 "$BOOTS"); do
	name=cut$i
	kind=again
	[ "$i" = 1 ] && kind=first
	cut=$((50 + RANDOM % (ROUNDS * 200)))
	CUT=1 boot "$name" "$disk" "${logs[@]}" -- audit.boot=$kind audit.mkfs=$MKFS_OPTS \
		audit.rounds=$ROUNDS audit.base=$(((i - 1) * ROUNDS)) audit.cut=$cut >/dev/null
	rc=$?
	echo "audit: boot $name ($kind) cut at operation $cut: exit $rc, $(grep -ac 'audit: round' "$work/$name.log") rounds begun"
	names+=("$name")
	logs+=("$work/$name.wlog")
done
boot final "$disk" "${logs[@]}" -- audit.boot=again audit.final=1 audit.rounds=1 audit.base=$((BOOTS * ROUNDS))
rc=$?
names+=(final)
check audit_final_boot_clean test $rc = 0
v=$(verdict "${names[@]}")
t=audit_no_read_of_a_never_written_sector
set -- $v
# The trace's written set comes from the boots' dm-log-writes logs, and a power cut can land
# after a write reached the disk and before its log entry did (QEMU is killed some time after
# @@CUT; longer on a busy host): a later read of that block is then reported although the
# block was written. The guest tells such a report apart: the block reads back below the traced
# device (its tag was written since the format; the tag check passed too). A reported block
# that does not read back, or a report the guest did not print, fails.
lost=
if [ "$2" = 0 ] && [ "$4" != 0 ]; then
	np=$(for n in "${names[@]}"; do grep -ah '@@VIOL block' "$work/$n.log"; done | grep -c .)
	nr=$(for n in "${names[@]}"; do grep -ah '@@VIOL block' "$work/$n.log"; done | grep -c ') readable ')
	if [ "$np" -lt "$4" ]; then
		lost="$4 reports, $np printed"
	elif [ "$nr" != "$np" ]; then
		lost="$((np - nr)) reported blocks do not read back"
	else
		echo "audit: the trace reported $np reads of blocks it had not seen written; each reads back (written since the format): their writes were lost from a log at a power cut"
	fi
fi
[ "$2" = 0 ] && { [ "$4" = 0 ] || [ "${np:-0}" -gt 0 ] && [ -z "$lost" ]; } && [ "$6" -gt 1000 ] &&
	pass "$t ($v over ${#names[@]} boots)" ||
	fail $t "$v${lost:+ ($lost)}; $(grep -ah '@@VIOL\|AEAD\|Checksum failed\|JBD2' "$work"/*.log | head -5)"
t=audit_every_cut_boot_was_cut
cuts=$(grep -lac '@@CUT' "$work"/cut*.log | wc -l)
[ "$cuts" -ge 1 ] && pass "$t ($cuts of $BOOTS)" || fail $t "no boot reached its cut point"
echo "audit: $v; written blocks $(written "${logs[@]}" "$work/final.wlog" "$work/all.bits")"
;; esac

# ---- mutant 1: a read of a never-written block, injected: both recorders must see it ----
case " $PARTS " in *" inject "*)
disk=$work/inject.raw
truncate -s ${DISK_MB}M "$disk"
boot inject "$disk" -- audit.boot=first audit.mkfs=$MKFS_OPTS audit.rounds=1 audit.inject=1 >/dev/null
v=$(verdict inject)
set -- $v
t=audit_mutant_injected_read_is_caught_by_both
[ "$2" -gt 0 ] && [ "$4" -gt 0 ] && pass "$t ($v)" || fail $t "$v"
# and the guest's re-read finds that block never written (it does not read back)
t=audit_mutant_injected_block_does_not_read_back
grep -aq '@@VIOL block .*) unreadable ' "$work/inject.log" && ! grep -aq '@@VIOL block .*) readable ' "$work/inject.log" &&
	pass $t || fail $t "$(grep -ah '@@VIOL' "$work/inject.log" | head -2)"
;; esac

# ---- mutant 2: mke2fs lazy_journal_init=1, a power cut, the journal replayed ----
case " $PARTS " in *" lazyj "*)
disk=$work/lazyj.raw
truncate -s ${DISK_MB}M "$disk"
CUT=1 boot lazyj1 "$disk" -- audit.boot=first audit.mkfs=lazy_itable_init=1,lazy_journal_init=1,nodiscard \
	audit.rounds=2 audit.cut=400 >/dev/null
boot lazyj2 "$disk" "$work/lazyj1.wlog" -- audit.boot=again audit.rounds=0 >/dev/null
v=$(verdict lazyj1 lazyj2)
set -- $v
t=audit_mutant_lazy_journal_init_is_caught
[ "$2" -gt 0 ] || [ "$4" -gt 0 ] && pass "$t ($v)" || fail $t "$v"
;; esac

# ---- mutant 3: mke2fs on the unwiped mapping without disk_zero_for_mkfs: its probes and its
# read-modify-written superblocks read never-written blocks ----
case " $PARTS " in *" nozero "*)
disk=$work/nozero.raw
truncate -s ${DISK_MB}M "$disk"
boot nozero "$disk" -- audit.boot=first audit.zero=0 audit.rounds=0 >/dev/null
v=$(verdict nozero)
set -- $v
t=audit_mutant_mkfs_without_the_zeroing_is_caught
[ "$2" -gt 0 ] && [ "$4" -gt 0 ] && grep -aq 'RESULT mkfs FAIL' "$work/nozero.log" && pass "$t ($v)" || fail $t "$v"
;; esac
