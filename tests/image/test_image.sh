# The mkosi configuration of image/: mkosi 14's own `mkosi summary` reads it (offline, and it
# leaves nothing behind in image/) and names the distribution, the squashfs root with
# dm-verity, the finalize script and the command line image/build.sh puts before roothash=;
# the finalize script, run as mkosi would on an image tree, makes the mount points and removes
# what differs between builds; the veritysetup wrapper fixes salt and UUID.
. tests/lib.sh
set -u
work=$(mktemp -d /tmp/constel-image-XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! command -v mkosi >/dev/null; then
	fail image_mkosi_installed "no mkosi (deps/host-setup.sh installs it)"
	exit 1
fi
t=image_mkosi_is_version_14
v=$(mkosi --version 2>&1)
[ "$v" = "mkosi 14" ] && pass $t || fail $t "$v (the configuration is written for Debian bookworm's mkosi 14)"

before=$(cd image && find . | sort)
t=image_mkosi_summary_succeeds
(cd image && mkosi summary) >"$work/summary" 2>&1
rc=$?
[ $rc = 0 ] && pass $t || fail $t "exit $rc: $(tail -3 "$work/summary")"
t=image_mkosi_summary_leaves_nothing_behind
[ "$before" = "$(cd image && find . | sort)" ] && pass $t || fail $t "$(diff <(echo "$before") <(cd image && find . | sort) | head -3)"

# field NAME: the value mkosi's summary prints for NAME (first line of it)
field() { sed -n "s/^ *$1: //p" "$work/summary" | head -1; }
t=image_summary_names_debian_bookworm
[ "$(field Distribution)" = debian ] && [ "$(field Release)" = bookworm ] && pass $t ||
	fail $t "distribution '$(field Distribution)', release '$(field Release)'"
t=image_summary_is_a_squashfs_root_with_verity
[ "$(field 'Output Format')" = gpt_squashfs ] && [ "$(field Verity)" = yes ] && [ "$(field Bootable)" = no ] &&
	pass $t || fail $t "format '$(field 'Output Format')', verity '$(field Verity)', bootable '$(field Bootable)'"
t=image_summary_names_the_finalize_script
[ "$(field 'Finalize Script')" = "$PWD/image/mkosi.finalize" ] && pass $t || fail $t "finalize '$(field 'Finalize Script')'"
# (mkosi 14's summary shows the command line of bootable images only; image/build.sh reads it
# from mkosi.conf the same way)
t=image_command_line_is_the_agent_s_without_root
cl=$(sed -n 's/^KernelCommandLine=//p' image/mkosi.conf | sed 's/^!\* *//')
missing=
for w in console=ttyS0 rootfstype=squashfs constel.csp=qemu constel.attestation-variant=qemu-vtpm; do
	case " $cl " in *" $w "*) ;; *) missing="$missing $w" ;; esac
done
[ -n "$cl" ] && [ -z "$missing" ] && case " $cl " in *" root="*) false ;; *) true ;; esac &&
	pass $t || fail $t "'$cl' lacks$missing (or names root=: roothash= is the root)"
t=image_keeps_documentation
grep -qx 'WithDocs=yes' image/mkosi.conf && pass $t || fail $t "WithDocs=yes is missing (docs/qemu.md §10)"

# The finalize step on a small tree: the mount points of spec §4, no SSH host keys, no logs.
mkdir -p "$work/root/etc/ssh" "$work/root/var/log/apt" "$work/root/var/lib/dpkg"
touch "$work/root/etc/ssh/ssh_host_ed25519_key" "$work/root/var/log/apt/history.log" "$work/root/var/lib/dpkg/status-old" \
	"$work/root/etc/ssh/sshd_config"
t=image_finalize_makes_mount_points_and_drops_per_build_files
(cd image && BUILDROOT=$work/root ./mkosi.finalize final) >"$work/finalize.out" 2>&1
rc=$?
[ $rc = 0 ] && [ -d "$work/root/etc/kubernetes" ] && [ -d "$work/root/etc/cni/net.d" ] && [ -d "$work/root/run/state" ] &&
	[ ! -e "$work/root/etc/ssh/ssh_host_ed25519_key" ] && [ ! -e "$work/root/var/log/apt" ] &&
	[ ! -e "$work/root/var/lib/dpkg/status-old" ] && [ -e "$work/root/etc/ssh/sshd_config" ] &&
	pass $t || fail $t "exit $rc: $(tail -2 "$work/finalize.out")"
t=image_finalize_does_nothing_in_the_build_phase
mkdir -p "$work/none"
(cd image && BUILDROOT=$work/none ./mkosi.finalize build) >/dev/null 2>&1 && [ -z "$(ls -A "$work/none")" ] &&
	pass $t || fail $t "it ran"

# veritysetup as mkosi 14 calls it, through image/bin/veritysetup: the same data gives the same
# root hash (stock veritysetup draws a salt and so a new hash each time)
t=image_verity_root_hash_follows_the_data_only
head -c 1048576 /dev/zero | tr '\0' 'c' >"$work/data"
h1=$(image/bin/veritysetup format "$work/data" "$work/hash1" | sed -n 's/^Root hash:[[:space:]]*//p')
h2=$(image/bin/veritysetup format "$work/data" "$work/hash2" | sed -n 's/^Root hash:[[:space:]]*//p')
h3=$(veritysetup format "$work/data" "$work/hash3" | sed -n 's/^Root hash:[[:space:]]*//p')
[ -n "$h1" ] && [ "$h1" = "$h2" ] && [ "$h1" != "$h3" ] && cmp -s "$work/hash1" "$work/hash2" &&
	veritysetup verify "$work/data" "$work/hash1" "$h1" >/dev/null 2>&1 && pass $t || fail $t "'$h1' '$h2' (stock '$h3')"
