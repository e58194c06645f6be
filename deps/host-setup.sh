#!/bin/sh
# Prepares a Debian 12 host for building and testing constel-agent: a deb-src entry for every
# Debian suite apt already uses (plus trixie, whose tpm2-tss 4.x source we build), and the
# packages listed in deps/host-packages.txt. Idempotent: a second run changes nothing and
# takes about a second. Needs root (or an already prepared host).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
srcfile=/etc/apt/sources.list.d/constel-agent-src.sources

log() { printf 'host-setup: %s\n' "$*" >&2; }

# The Debian archives apt already uses, one "URI SUITE SIGNED-BY" line per suite, read from
# both the deb822 (*.sources) and the one-line (sources.list, *.list) formats. Only Debian's
# own suites for this release count (bookworm, -updates, -security with component main), so a
# third-party repository never gets a deb-src entry it cannot serve.
debian_archives() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		case $f in
		*.sources)
			awk '
			function flush(   n, i, s) {
				if (types ~ /(^| )deb( |$)/ && comps ~ /(^| )main( |$)/) {
					n = split(suites, s, " ")
					for (i = 1; i <= n; i++) print uris, s[i], (signed == "" ? "-" : signed)
				}
				types = uris = suites = comps = signed = ""
			}
			/^[ \t]*$/ { flush(); next }
			/^#/ { next }
			/^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
			/^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $1 }
			/^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
			/^Components:/ { sub(/^Components:[ \t]*/, ""); comps = $0 }
			/^Signed-By:/ { sub(/^Signed-By:[ \t]*/, ""); signed = $0 }
			END { flush() }' "$f"
			;;
		*)
			awk '
			$1 == "deb" {
				signed = "-"; i = 2
				if ($2 ~ /^\[/) {
					for (; i <= NF; i++) {
						if ($i ~ /^\[?signed-by=/) { signed = $i; sub(/^\[?signed-by=/, "", signed); sub(/\]$/, "", signed) }
						if ($i ~ /\]$/) { i++; break }
					}
				}
				uri = $i; suite = $(i + 1); main = 0
				for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
				if (main) print uri, suite, signed
			}' "$f"
			;;
		esac
	done | awk '$2 ~ /^bookworm(-updates|-security)?$/ && $1 ~ /\/debian(-security)?\/?$/' | sort -u
}

# deb-src stanzas for those archives, plus trixie from the archive that serves bookworm.
make_src_stanzas() {
	debian_archives | awk '
	{
		printf "Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\n", $1, $2
		if ($3 != "-") printf "Signed-By: %s\n", $3
		printf "\n"
		if ($2 == "bookworm") { trixie_uri = $1; trixie_signed = $3 }
	}
	END {
		if (trixie_uri != "") {
			printf "Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\n", trixie_uri
			if (trixie_signed != "-") printf "Signed-By: %s\n", trixie_signed
		}
	}'
}

need_update=0
want=$(make_src_stanzas)
case $want in
*"Suites: trixie"*) ;;
*)
	log "found no Debian bookworm archive in apt's sources to add deb-src entries for"
	exit 1
	;;
esac
if [ ! -f "$srcfile" ] || [ "$(cat "$srcfile")" != "$want" ]; then
	log "writing $srcfile (deb-src for the host's suites and trixie)"
	printf '%s\n' "$want" >"$srcfile"
	need_update=1
fi
# Without package lists apt-get source and install find nothing.
if ! ls /var/lib/apt/lists/*_trixie_main_source_Sources* >/dev/null 2>&1; then
	need_update=1
fi

pkgs=$(grep -v '^#' "$here/host-packages.txt" | tr -s ' \n' ' ')
missing=
for p in $pkgs; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing="$missing $p"
done
if [ -n "$missing" ]; then
	need_update=1
fi

if [ "$need_update" = 1 ] && [ "$(id -u)" != 0 ]; then
	log "needs root to change apt's sources and install:${missing:- (nothing; sources only)}"
	exit 1
fi
if [ "$need_update" = 1 ]; then
	log "apt-get update"
	apt-get update -qq
fi
if [ -n "$missing" ]; then
	log "installing:$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
log "host ready"
