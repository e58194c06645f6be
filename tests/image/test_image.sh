# The mkosi configuration of image/: mkosi 14's own `mkosi summary` reads it (offline, and it
# leaves nothing behind in image/), names the distribution, the bootable UKI, the finalize
# script and the initrd; the finalize script, run as mkosi would on an image tree, puts the
# agent's initrd where mkosi 14 takes the UKI's .initrd from.
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
t=image_summary_is_a_bootable_gpt_image_with_a_uki
[ "$(field 'Output Format')" = gpt_ext4 ] && [ "$(field Bootable)" = yes ] && [ "$(field 'Unified Kernel Images')" = yes ] &&
	pass $t || fail $t "format '$(field 'Output Format')', bootable '$(field Bootable)'"
t=image_summary_names_the_initrd_and_its_finalize_script
[ "$(field 'Finalize Script')" = "$PWD/image/mkosi.finalize" ] && grep -q 'CONSTEL_INITRD=mkosi.output/constel-initrd.img' "$work/summary" &&
	pass $t || fail $t "finalize '$(field 'Finalize Script')', environment: $(grep -A1 'Script Environment' "$work/summary" | tr -s ' ')"
t=image_summary_command_line_is_the_agent_s
cl=$(field 'Kernel Command Line')
missing=
for w in root=/dev/vda2 rootfstype=ext4 constel.csp=qemu constel.attestation-variant=qemu-vtpm; do
	case " $cl " in *" $w "*) ;; *) missing="$missing $w" ;; esac
done
[ -n "$cl" ] && [ -z "$missing" ] && pass $t || fail $t "'$cl' lacks$missing"
t=image_keeps_documentation
grep -qx 'WithDocs=yes' image/mkosi.conf && pass $t || fail $t "WithDocs=yes is missing (../shared/notes/qemu.md §10)"

# The finalize step on an image tree whose kernel is the host's (its modules linked in): the
# initrd lands at /boot/initrd.img-KVER and is the one initrd/build.sh makes for that kernel.
eval "$(qemu-tests/kernel.sh 2>/dev/null)"
mkdir -p "$work/root/lib/modules" "$work/root/boot"
ln -s "/lib/modules/$KVER" "$work/root/lib/modules/$KVER"
deps=$(cat "$BUILD/deps-prefix" 2>/dev/null)
build=$(realpath "$BUILD")
t=image_finalize_puts_the_agent_initrd_where_mkosi_takes_it
(cd image && BUILDROOT=$work/root OUTPUTDIR=$work CONSTEL_INITRD=$work/out/initrd.img CONSTEL_BUILD=$build \
	DEPS=$deps ./mkosi.finalize final) >"$work/finalize.out" 2>&1
rc=$?
BUILD=$BUILD DEPS=$deps initrd/build.sh "$work/host.img" >/dev/null 2>&1
[ $rc = 0 ] && cmp -s "$work/root/boot/initrd.img-$KVER" "$work/host.img" && cmp -s "$work/out/initrd.img" "$work/host.img" &&
	pass $t || fail $t "exit $rc: $(tail -2 "$work/finalize.out")"
t=image_finalize_does_nothing_in_the_build_phase
(cd image && BUILDROOT=$work/none CONSTEL_INITRD=$work/none.img ./mkosi.finalize build) >/dev/null 2>&1 && [ ! -e "$work/none.img" ] &&
	pass $t || fail $t "it ran"
