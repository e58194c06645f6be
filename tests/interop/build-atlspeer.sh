#!/bin/sh
# Builds atlspeer (Go's crypto/tls configured as Constellation's aTLS, plus grpc-go join
# service and client roles) offline with Debian's Go packages in GOPATH mode, the Go protobuf
# code generated from our nanopb-proto/*.proto. Cached outside the clone by a hash of the
# sources and the toolchain. Prints the binary's path.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
protos=$here/../../nanopb-proto
cache=${CONSTEL_CACHE:-/var/cache/constel-agent}
for tool in go protoc protoc-gen-go protoc-gen-go-grpc; do
	command -v $tool >/dev/null || { echo "build-atlspeer: $tool not installed (see deps/host-packages.txt)" >&2; exit 1; }
done
[ -d /usr/share/gocode/src/google.golang.org/grpc ] ||
	{ echo "build-atlspeer: golang-google-grpc-dev not installed" >&2; exit 1; }
key=$({ cat "$here/atlspeer/main.go" "$protos"/*.proto; go version; dpkg-query -W golang-google-grpc-dev golang-golang-x-crypto-dev; } | sha256sum | cut -c1-16)
out=$cache/atlspeer-$key
if [ ! -x "$out/atlspeer" ]; then
	tmp=$out.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp/gopath/src/constelpeer/atlspeer"
	cp "$here/atlspeer/main.go" "$tmp/gopath/src/constelpeer/atlspeer/"
	map="Mjoin.proto=constelpeer/joinproto,Mcomponents.proto=constelpeer/componentsproto,Minit.proto=constelpeer/initproto,Mrecover.proto=constelpeer/recoverproto"
	protoc -I "$protos" --go_out="$tmp/gopath/src" --go_opt="$map" \
		--go-grpc_out="$tmp/gopath/src" --go-grpc_opt="$map" "$protos/join.proto" "$protos/components.proto" "$protos/init.proto" "$protos/recover.proto"
	GO111MODULE=off GOPROXY=off GOFLAGS= GOPATH="$tmp/gopath:/usr/share/gocode" GOCACHE="$tmp/gocache" \
		go build -o "$tmp/atlspeer" constelpeer/atlspeer
	rm -rf "$out"
	mkdir -p "$out"
	mv "$tmp/atlspeer" "$out/atlspeer"
	rm -rf "$tmp"
fi
echo "$out/atlspeer"
