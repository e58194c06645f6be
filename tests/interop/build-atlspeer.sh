#!/bin/sh
# Builds atlspeer (Go's crypto/tls configured as Constellation's aTLS) offline with Debian's
# Go toolchain, cached outside the clone by a hash of its source and the Go version. Prints
# the binary's path.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${CONSTEL_CACHE:-/var/cache/constel-agent}
command -v go >/dev/null || { echo "build-atlspeer: go not installed (apt-get install golang-go)" >&2; exit 1; }
key=$({ cat "$here/atlspeer/main.go"; go version; } | sha256sum | cut -c1-16)
out=$cache/atlspeer-$key
if [ ! -x "$out/atlspeer" ]; then
	mkdir -p "$out.tmp"
	GO111MODULE=off GOPROXY=off GOFLAGS= GOPATH="$out.tmp/gopath" GOCACHE="$out.tmp/gocache" \
		go build -o "$out.tmp/atlspeer" "$here/atlspeer/main.go"
	rm -rf "$out"
	mkdir -p "$out"
	mv "$out.tmp/atlspeer" "$out/atlspeer"
	rm -rf "$out.tmp"
fi
echo "$out/atlspeer"
