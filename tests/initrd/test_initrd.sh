# The agent's initrd (initrd/build.sh on initrd/mkinitrd.py): byte-identical builds, what the
# archive holds and in which order the modules load, what each module waits for (modules.dep),
# compressed modules of a module root unpacked, the newc fields read back by a parser of
# our own and by Debian's cpio, the refusals, both compressions, and that the VM harness's
# qemu-tests/mkinitrd.sh is the same writer.
. tests/lib.sh
set -u
work=$(mktemp -d /tmp/constel-initrd-XXXXXX)
trap 'rm -rf "$work"' EXIT
chk() { python3 tests/initrd/cpio_check.py "$@"; }

# The inputs are copies, so that touching them changes no file of the build.
deps=$(cat "$BUILD/deps-prefix" 2>/dev/null)
# the CA bundle every build without --ca-bundle takes (initrd/build.sh)
ca=/etc/ssl/certs/ca-certificates.crt
mkdir -p "$work/b" "$work/deps/sbin"
cp "$BUILD/constel-agent.stripped" "$work/b/" 2>/dev/null && cp "$deps/sbin/mke2fs" "$work/deps/sbin/" 2>/dev/null || {
	fail initrd_inputs "no $BUILD/constel-agent.stripped or $deps/sbin/mke2fs (make agent first)"
	exit 1
}
build() { BUILD=$work/b DEPS=$work/deps initrd/build.sh "$@"; }

if ! build "$work/a.img" >"$work/a.sizes" 2>"$work/a.err"; then
	fail initrd_builds "$(cat "$work/a.err")"
	exit 1
fi
pass initrd_builds

t=initrd_two_builds_are_byte_identical
sleep 1
touch "$work/b/constel-agent.stripped" "$work/deps/sbin/mke2fs"
build "$work/a2.img" >/dev/null 2>&1 && cmp -s "$work/a.img" "$work/a2.img" && pass $t || fail $t "two builds differ"

t=initrd_zstd_builds_are_byte_identical
build "$work/z.img" --compress zstd >"$work/z.sizes" 2>&1 && build "$work/z2.img" --compress zstd >/dev/null 2>&1 &&
	cmp -s "$work/z.img" "$work/z2.img" && pass $t || fail $t "$(tail -1 "$work/z.sizes")"

t=initrd_gzip_and_zstd_decompress_to_the_same_archive
gzip -t "$work/a.img" 2>/dev/null && zstd -t -q "$work/z.img" 2>/dev/null &&
	cmp -s <(gzip -dc "$work/a.img") <(zstd -dc -q "$work/z.img") && pass $t || fail $t "gzip -t / zstd -t or contents differ"

t=initrd_fields_are_fixed_mtime_0
out=$(chk "$work/a.img" --mtime 0) && pass $t || fail $t "$(head -3 <<<"$out")"

t=initrd_mtime_is_source_date_epoch
SOURCE_DATE_EPOCH=1700000000 build "$work/e.img" >/dev/null 2>&1
out=$(chk "$work/e.img" --mtime 1700000000) && pass $t || fail $t "$(head -3 <<<"$out")"

t=initrd_debian_cpio_reads_owner_0_and_the_same_names
names=$(chk "$work/a.img" --list | awk '{print $1}')
debian=$(gzip -dc "$work/a.img" | cpio -t --quiet 2>/dev/null)
owners=$(gzip -dc "$work/a.img" | cpio -tv --numeric-uid-gid --quiet 2>/dev/null | awk '{print $3 ":" $4}' | sort -u)
[ "$names" = "$debian" ] && [ "$owners" = "0:0" ] && pass $t || fail $t "owners '$owners', names differ: $(diff <(echo "$names") <(echo "$debian") | head -3)"

list=$(chk "$work/a.img" --cat etc/modules.list)
t=initrd_holds_init_mke2fs_modules_list_and_every_module
missing=
for p in init sbin/mke2fs etc/ssl/certs/ca-certificates.crt etc/modules.list etc/modules.dep dev proc sys run tmp $(sed 's|^/||' <<<"$list"); do
	grep -qxF "$p" <<<"$names" || missing="$missing $p"
done
n=$(grep -c . <<<"$list")
[ -z "$missing" ] && [ "$n" -ge 20 ] && pass "$t ($n modules)" || fail $t "missing:$missing ($n modules listed)"

t=initrd_init_is_the_agent_byte_for_byte
cmp -s <(chk "$work/a.img" --cat init) "$work/b/constel-agent.stripped" && pass $t || fail $t "/init differs"

t=initrd_modules_list_is_for_the_kernel_the_vm_boots
kver=$(eval "$(qemu-tests/kernel.sh 2>/dev/null)" && echo "$KVER")
[ -n "$kver" ] && ! grep -qv "^/lib/modules/$kver/.*\.ko$" <<<"$list" && pass "$t ($kver)" || fail $t "$(grep -v "^/lib/modules/$kver/" <<<"$list" | head -2)"

# before A B: module A is listed before module B (a dependency before its dependent)
before() { awk -v a="/$1.ko" -v b="/$2.ko" 'index($0, a) { ia = NR } index($0, b) { ib = NR } END { exit !(ia && ib && ia < ib) }' <<<"$list"; }
t=initrd_modules_list_has_dependencies_first
bad=
for pair in virtio:virtio_blk virtio_ring:virtio virtio:virtio_net failover:net_failover dm-mod:dm-crypt \
	dm-mod:dm-integrity dm-bufio:dm-verity jbd2:ext4 mbcache:ext4 crc16:ext4 ecb:xts af_alg:algif_skcipher \
	af_alg:algif_hash cryptd:aesni-intel crypto_simd:aesni-intel; do
	before "${pair%%:*}" "${pair#*:}" || bad="$bad $pair"
done
t2=initrd_modules_list_has_each_module_once
[ -z "$bad" ] && pass $t || fail $t "out of order or missing:$bad"
[ "$(sort <<<"$list" | uniq -d)" = "" ] && pass $t2 || fail $t2 "$(sort <<<"$list" | uniq -d | head -2)"

# modules.dep: line i "i: j ...", each j < i, one line a module; what each module waits for
# covers its modules.dep dependencies and soft dependencies, and nothing ties independent ones.
dep=$(chk "$work/a.img" --cat etc/modules.dep)
t=initrd_modules_dep_has_one_well_formed_line_a_module
bad=$(DEP=$dep python3 - "$n" 2>&1 <<'PY'
import os, re, sys
n, lines = int(sys.argv[1]), os.environ["DEP"].splitlines()
if len(lines) != n:
    print("%d lines for %d modules" % (len(lines), n))
for i, l in enumerate(lines, 1):
    m = re.fullmatch(r"(\d+):((?: \d+)*)", l)
    if not m or int(m.group(1)) != i or any(not 1 <= int(j) < i for j in m.group(2).split()):
        print("line %d: %r" % (i, l))
PY
)
[ -z "$bad" ] && pass $t || fail $t "$(head -3 <<<"$bad")"
# waits A B: module A (a name in the list) waits for module B
waits() {
	local a b
	a=$(grep -n "/$1.ko$" <<<"$list" | cut -d: -f1)
	b=$(grep -n "/$2.ko$" <<<"$list" | cut -d: -f1)
	[ -n "$a" ] && [ -n "$b" ] && sed -n "${a}p" <<<"$dep" | grep -qE "^$a:.* $b( |\$)"
}
t=initrd_modules_dep_keeps_every_dependency
bad=
for pair in virtio_blk:virtio virtio_blk:virtio_ring virtio_pci:virtio_pci_modern_dev virtio_net:net_failover \
	net_failover:failover dm-crypt:dm-mod dm-integrity:dm-bufio dm-integrity:async_xor dm-verity:dm-bufio \
	dm-verity:reed_solomon ext4:jbd2 ext4:mbcache ext4:crc16 ext4:crc32c_generic jbd2:crc32c_generic \
	xts:ecb aesni-intel:crypto_simd crypto_simd:cryptd algif_aead:af_alg; do
	waits "${pair%%:*}" "${pair#*:}" || bad="$bad $pair"
done
[ -z "$bad" ] && pass $t || fail $t "missing:$bad"
t=initrd_modules_dep_leaves_independent_modules_free
bad=
for pair in virtio_blk:virtio_pci virtio_net:virtio_blk ext4:virtio_pci dm-crypt:virtio_blk overlay:ext4 \
	af_alg:dm-crypt aesni-intel:dm-crypt scsi_common:hv_vmbus sd_mod:hv_vmbus virtio_scsi:hv_vmbus \
	async_tx:dm-mod; do
	waits "${pair%%:*}" "${pair#*:}" && bad="$bad $pair"
done
ov=$(grep -n "/overlay.ko$" <<<"$list" | cut -d: -f1)
[ -z "$bad" ] && grep -qx "$ov:" <<<"$dep" && pass $t || fail $t "tied:$bad (overlay: $(sed -n "${ov}p" <<<"$dep"))"

# modules.phase: line i "i: PHASE", the first boot phase that needs module i (the "#@ PHASE"
# marks of initrd/modules.txt); the list sorted by phase, no module after one that waits for
# it, the NICs' modules (and only those with their dependencies) before the network.
t=initrd_modules_phase_puts_the_nic_first_and_each_module_before_its_phase
phase=$(chk "$work/a.img" --cat etc/modules.phase)
bad=$(DEP=$dep PHASE=$phase LIST=$list python3 - 2>&1 <<'PY'
import os, re
order = ["network", "root", "verity", "disk", "handover"]
dep, ph = os.environ["DEP"].splitlines(), os.environ["PHASE"].splitlines()
names = [l.rsplit("/", 1)[1][:-3] for l in os.environ["LIST"].splitlines()]
if len(ph) != len(names):
    print("%d phase lines for %d modules" % (len(ph), len(names)))
p = []
for i, l in enumerate(ph, 1):
    m = re.fullmatch(r"(\d+): (\w+)", l)
    if not m or int(m.group(1)) != i or m.group(2) not in order:
        print("line %d: %r" % (i, l))
        p.append(0)
    else:
        p.append(order.index(m.group(2)))
if p != sorted(p):
    print("not sorted by phase: %s" % p)
for i, l in enumerate(dep):
    for j in l.split(":")[1].split():
        if p[int(j) - 1] > p[i]:
            print("%s (%s) waits for %s of a later phase" % (names[i], order[p[i]], names[int(j) - 1]))
want = {"virtio_pci": 0, "virtio_net": 0, "virtio": 0, "failover": 0, "virtio_blk": 1, "ext4": 1,
        "jbd2": 1, "dm-verity": 2, "dm-mod": 2, "dm-crypt": 3, "dm-integrity": 3, "af_alg": 3,
        "algif_skcipher": 3, "aesni-intel": 3, "overlay": 4, "gve": 0, "hv_netvsc": 0, "ena": 0,
        "mlx5_core": 4, "mlx4_en": 4, "pci-hyperv": 4}
for name, w in want.items():
    if name not in names or p[names.index(name)] != w:
        print("%s: want %s" % (name, order[w]))
net = sorted(n for n, x in zip(names, p) if x == 0)
if net != sorted(["virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev",
                  "virtio_pci", "failover", "net_failover", "virtio_net",
                  # the clouds' NICs (docs/net.md)
                  "gve", "hv_vmbus", "hv_netvsc", "ena"]):
    print("before the network: %s" % net)
PY
)
[ -n "$phase" ] && [ -z "$bad" ] && pass $t || fail $t "$(head -3 <<<"${bad:-no etc/modules.phase}")"

t=initrd_modules_without_a_phase_have_no_phase_file
python3 initrd/mkinitrd.py "$work/np.img" --init "$work/b/constel-agent.stripped" --kver "$kver" \
	--modules "virtio_pci virtio_blk" 2>"$work/np.err" && ! chk "$work/np.img" --list | grep -q modules.phase &&
	pass $t || fail $t "$(cat "$work/np.err") (or it has etc/modules.phase)"

t=initrd_refuses_an_unknown_phase_in_one_line
python3 initrd/mkinitrd.py "$work/up.img" --init "$work/b/constel-agent.stripped" --kver "$kver" \
	--modules "virtio_pci virtio_blk:later" 2>"$work/up.err"
rc=$?
[ $rc != 0 ] && [ "$(wc -l <"$work/up.err")" = 1 ] && grep -q "no such phase 'later'" "$work/up.err" &&
	[ ! -e "$work/up.img" ] && pass $t || fail $t "exit $rc: $(cat "$work/up.err")"

# --phase: an image whose root is not ext4 (image/build.sh: --phase ext4:disk) moves ext4 and
# what only it needs to the disk phase; virtio_blk stays the root's; an unlisted name is refused
t=initrd_phase_moves_a_listed_module_and_its_own_dependencies
python3 initrd/mkinitrd.py "$work/ph.img" --init "$work/b/constel-agent.stripped" --kver "$kver" \
	--modules "virtio_pci virtio_blk:root ext4:root dm_crypt:disk" --phase ext4:disk 2>"$work/ph.err"
rc=$?
at() { paste -d' ' <(chk "$work/ph.img" --cat etc/modules.list) <(chk "$work/ph.img" --cat etc/modules.phase) |
	awk -v m="/$1.ko" 'index($1, m) == length($1) - length(m) + 1 { print $3 }'; }
[ $rc = 0 ] && [ "$(at ext4)" = disk ] && [ "$(at jbd2)" = disk ] && [ "$(at virtio_blk)" = root ] &&
	[ "$(at virtio_pci)" = network ] && pass $t ||
	fail $t "exit $rc: ext4 '$(at ext4)', jbd2 '$(at jbd2)', virtio_blk '$(at virtio_blk)' $(cat "$work/ph.err")"
t=initrd_phase_refuses_a_module_not_listed_in_one_line
python3 initrd/mkinitrd.py "$work/pu.img" --init "$work/b/constel-agent.stripped" --kver "$kver" \
	--modules "virtio_pci virtio_blk:root" --phase ext4:disk 2>"$work/pu.err"
rc=$?
[ $rc != 0 ] && [ "$(wc -l <"$work/pu.err")" = 1 ] && grep -q "module ext4 is not in the list" "$work/pu.err" &&
	[ ! -e "$work/pu.img" ] && pass $t || fail $t "exit $rc: $(cat "$work/pu.err")"

# A kernel package with compressed modules (--module-root, as image/mkosi.finalize uses it):
# the initrd holds the plain .ko, byte for byte the module before it was compressed.
t=initrd_unpacks_compressed_modules_of_a_module_root
root=$work/root
mkdir -p "$root/lib/modules/$kver/kernel/drivers/virtio"
m=/lib/modules/$kver/kernel
xz -c --check=crc32 "$m/drivers/virtio/virtio_ring.ko" >"$root$m/drivers/virtio/virtio_ring.ko.xz"
zstd -q -c "$m/drivers/virtio/virtio.ko" >"$root$m/drivers/virtio/virtio.ko.zst"
if depmod -b "$root" "$kver" 2>/dev/null &&
	python3 initrd/mkinitrd.py "$work/c.img" --init "$work/b/constel-agent.stripped" --kver "$kver" \
		--module-root "$root" --modules "virtio" 2>"$work/c.err"; then
	clist=$(chk "$work/c.img" --cat etc/modules.list)
	ok=1
	for p in drivers/virtio/virtio_ring drivers/virtio/virtio; do
		cmp -s <(chk "$work/c.img" --cat "${m#/}/$p.ko") "$m/$p.ko" || ok=
	done
	[ -n "$ok" ] && [ "$clist" = "$(printf '%s\n' "$m/drivers/virtio/virtio_ring.ko" "$m/drivers/virtio/virtio.ko")" ] &&
		[ "$(chk "$work/c.img" --cat etc/modules.dep)" = "$(printf '1:\n2: 1')" ] &&
		pass $t || fail $t "list '$(tr '\n' ' ' <<<"$clist")', a .ko differs or modules.dep wrong"
else
	fail $t "depmod -b or mkinitrd.py failed: $(cat "$work/c.err")"
fi

# --module-root (image/mkosi.finalize's way) on a tree that holds this machine's modules gives
# the bytes of the default build.
t=initrd_build_with_module_root_gives_the_same_bytes
mkdir -p "$work/fr/lib/modules" "$work/fr/etc/ssl/certs"
ln -s "/lib/modules/$kver" "$work/fr/lib/modules/$kver"
cp "$ca" "$work/fr/etc/ssl/certs/ca-certificates.crt"
build "$work/r.img" --module-root "$work/fr" >/dev/null 2>"$work/r.err" && cmp -s "$work/r.img" "$work/a.img" &&
	pass $t || fail $t "$(cat "$work/r.err") (differs from the default build)"

# The CA bundle (agent/net/net.h CA_BUNDLE_DEFAULT, read by the cloud API clients before the
# switch): this machine's by default, the tree's with --module-root (an image keeps its own
# current), FILE with --ca-bundle; each byte for byte, and its source named on the first line.
t=initrd_ca_bundle_is_this_machines_byte_for_byte
ver=$(dpkg-query -W -f='${Version}' ca-certificates 2>/dev/null)
cmp -s <(chk "$work/a.img" --cat etc/ssl/certs/ca-certificates.crt) "$ca" &&
	chk "$work/a.img" --list >"$work/a.list" && grep -qx 'etc/ssl/certs/ca-certificates.crt 0o100644 [0-9]*' "$work/a.list" &&
	grep -qx "CA bundle: $ca (ca-certificates $ver), sha256 $(sha256sum <"$ca" | cut -c1-64)" "$work/a.sizes" &&
	grep -q "^CA bundle  *$(stat -c %s "$ca")\$" "$work/a.sizes" &&
	pass "$t (ca-certificates $ver)" || fail $t "differs, or its line is not in: $(head -1 "$work/a.sizes")"

t=initrd_module_root_takes_the_trees_bundle
mkdir -p "$work/ft/lib/modules" "$work/ft/etc/ssl/certs"
ln -s "/lib/modules/$kver" "$work/ft/lib/modules/$kver"
# the tree's bundle: this machine's first certificate only, so that it differs from the default
awk '{ print } /-----END CERTIFICATE-----/ { exit }' "$ca" >"$work/ft/usr-bundle.crt"
ln -s /usr-bundle.crt "$work/ft/etc/ssl/certs/ca-certificates.crt"
build "$work/t.img" --module-root "$work/ft" >"$work/t.out" 2>"$work/t.err" &&
	cmp -s <(chk "$work/t.img" --cat etc/ssl/certs/ca-certificates.crt) "$work/ft/usr-bundle.crt" &&
	! cmp -s "$work/ft/usr-bundle.crt" "$ca" && grep -q "^CA bundle: $work/ft/usr-bundle.crt " "$work/t.out" &&
	pass $t || fail $t "$(cat "$work/t.err") (not the tree's bundle: $(head -1 "$work/t.out"))"

t=initrd_ca_bundle_option_takes_the_given_file
build "$work/g.img" --ca-bundle "$work/ft/usr-bundle.crt" >"$work/g.out" 2>"$work/g.err" &&
	cmp -s <(chk "$work/g.img" --cat etc/ssl/certs/ca-certificates.crt) "$work/ft/usr-bundle.crt" &&
	grep -q "given with --ca-bundle" "$work/g.out" && pass $t || fail $t "$(cat "$work/g.err")"

t=initrd_build_refuses_a_missing_bundle_in_one_line
rm "$work/ft/usr-bundle.crt"
build "$work/x.img" --module-root "$work/ft" >/dev/null 2>"$work/x.err"
rc=$?
build "$work/x2.img" --ca-bundle "$work/nonexistent.crt" >/dev/null 2>"$work/x2.err"
rc2=$?
[ $rc != 0 ] && [ $rc2 != 0 ] && [ "$(wc -l <"$work/x.err")" = 1 ] && [ "$(wc -l <"$work/x2.err")" = 1 ] &&
	grep -q "no CA bundle .* at $work/ft/usr-bundle.crt" "$work/x.err" && grep -q "nonexistent.crt" "$work/x2.err" &&
	[ ! -e "$work/x.img" ] && [ ! -e "$work/x2.img" ] && pass $t ||
	fail $t "exit $rc/$rc2: $(cat "$work/x.err" "$work/x2.err")"

t=initrd_size_table_names_each_part_and_the_real_total
total=$(awk '/^total \(gzip\)/ {print $3}' "$work/a.sizes")
ztotal=$(awk '/^total \(zstd\)/ {print $3}' "$work/z.sizes")
grep -q '^init ' "$work/a.sizes" && grep -q '^kernel modules' "$work/a.sizes" && grep -q '^mke2fs ' "$work/a.sizes" &&
	[ "$total" = "$(stat -c %s "$work/a.img")" ] && [ "$ztotal" = "$(stat -c %s "$work/z.img")" ] &&
	pass $t || fail $t "$(tr '\n' '|' <"$work/a.sizes")"

# Refusals: one line on stderr, nothing written.
t=initrd_refuses_a_missing_module_in_one_line
eval "$(qemu-tests/kernel.sh 2>/dev/null)"
python3 initrd/mkinitrd.py "$work/m.img" --init "$work/b/constel-agent.stripped" --kver "$KVER" \
	--modules "virtio_blk no_such_module" 2>"$work/m.err"
rc=$?
[ $rc != 0 ] && [ "$(wc -l <"$work/m.err")" = 1 ] && grep -q "module no_such_module (kernel $KVER)" "$work/m.err" &&
	[ ! -e "$work/m.img" ] && pass $t || fail $t "exit $rc: $(cat "$work/m.err")"

t=initrd_refuses_a_missing_init_in_one_line
python3 initrd/mkinitrd.py "$work/i.img" --kver "$KVER" 2>"$work/i.err"
rc=$?
python3 initrd/mkinitrd.py "$work/i.img" --init "$work/nonexistent" --kver "$KVER" 2>"$work/i2.err"
rc2=$?
[ $rc != 0 ] && [ $rc2 != 0 ] && [ "$(cat "$work/i.err" "$work/i2.err" | wc -l)" = 2 ] &&
	grep -q -- '--init' "$work/i.err" && grep -q nonexistent "$work/i2.err" && [ ! -e "$work/i.img" ] &&
	pass $t || fail $t "exit $rc/$rc2: $(cat "$work/i.err" "$work/i2.err")"

t=initrd_build_refuses_a_missing_agent
BUILD=$work/none DEPS=$work/deps initrd/build.sh "$work/n.img" >/dev/null 2>"$work/n.err"
rc=$?
[ $rc != 0 ] && grep -q 'constel-agent.stripped is missing' "$work/n.err" && pass $t || fail $t "exit $rc: $(cat "$work/n.err")"

t=initrd_symlinks_are_stored_as_links
python3 initrd/mkinitrd.py "$work/s.img" --init "$work/b/constel-agent.stripped" --symlink /bin/sh:/init 2>"$work/s.err" &&
	chk "$work/s.img" --list >"$work/s.list" && grep -qx 'bin/sh 0o120777 5' "$work/s.list" && [ "$(chk "$work/s.img" --cat bin/sh)" = /init ] &&
	pass $t || fail $t "$(cat "$work/s.err")"

# The VM harness's wrapper delegates to the same writer: same inputs, same bytes.
t=initrd_qemu_tests_mkinitrd_sh_is_the_same_writer
# (NAME:PHASE words: the "#@ PHASE" marks of initrd/modules.txt, as initrd/build.sh reads them)
modules=$(awk '/^#@ / { p = $2; next } /^#/ || !NF { next } { printf "%s:%s ", $1, p }' initrd/modules.txt)
qemu-tests/mkinitrd.sh "$work/q.img" --init "$work/b/constel-agent.stripped" --modules "$modules" \
	--file "$work/deps/sbin/mke2fs:/sbin/mke2fs" --file "$ca:/etc/ssl/certs/ca-certificates.crt" 2>"$work/q.err" &&
	cmp -s "$work/q.img" "$work/a.img" &&
	pass $t || fail $t "$(cat "$work/q.err") (differs from initrd/build.sh's)"
