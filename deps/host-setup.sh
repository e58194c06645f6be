#!/bin/sh
# Prepares a Debian 12 host for building and testing constel-agent: a deb-src entry for every
# Debian suite apt already uses (plus trixie, whose tpm2-tss 4.x source we build), and the
# packages listed in deps/host-packages.txt. Idempotent: a second run changes nothing and
# takes about a second. Needs root (or an already prepared host).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
srcfile=/etc/apt/sources.list.d/constel-agent-src.sources

log() { printf 'host-setup: %s\n' "$*" >&2; }

# Turn the deb822 stanzas of the system's Debian sources into deb-src stanzas. The URIs and
# keyrings are taken from the host's own configuration, never written down here.
make_src_stanzas() {
	awk '
	function flush() {
		if (types ~ /(^| )deb( |$)/ && uris != "") {
			printf "Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n", uris, suites, comps
			if (signed != "") printf "Signed-By: %s\n", signed
			printf "\n"
			if (suites ~ /(^| )bookworm( |$)/)
				printf "Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: %s\n\n", uris, signed
		}
		types = uris = suites = comps = signed = ""
	}
	/^[ \t]*$/ { flush(); next }
	/^#/ { next }
	/^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
	/^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
	/^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
	/^Components:/ { sub(/^Components:[ \t]*/, ""); comps = $0 }
	/^Signed-By:/ { sub(/^Signed-By:[ \t]*/, ""); signed = $0 }
	END { flush() }
	' /etc/apt/sources.list.d/debian.sources
}

need_update=0
if [ ! -f /etc/apt/sources.list.d/debian.sources ]; then
	log "no /etc/apt/sources.list.d/debian.sources: cannot derive deb-src entries"
	exit 1
fi
want=$(make_src_stanzas)
if [ -z "$want" ]; then
	log "found no Debian 'deb' stanza to mirror as deb-src"
	exit 1
fi
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

if [ "$need_update" = 1 ]; then
	log "apt-get update"
	apt-get update -qq
fi
if [ -n "$missing" ]; then
	log "installing:$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
log "host ready"
