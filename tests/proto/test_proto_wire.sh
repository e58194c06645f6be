# Our nanopb encodings against Google's protoc (an implementation we did not write): for each
# message, protoc encodes the same content from text format, and the bytes must be equal.
. tests/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PROTO_DUMP_DIR=$tmp "$BUILD/test/bin/proto/test_proto" >/dev/null 2>&1

hexbytes() { # N bytes starting at value S, as a protobuf text-format string
	awk -v n="$1" -v s="$2" 'BEGIN { printf "\""; for (i = 0; i < n; i++) printf "\\%03o", (s + i) % 256; printf "\"" }'
}

same() { # NAME TYPE TEXT
	local name=$1 type=$2 text=$3
	if ! printf '%s\n' "$text" | protoc -I nanopb-proto --encode="$type" \
		nanopb-proto/join.proto nanopb-proto/init.proto nanopb-proto/recover.proto >"$tmp/$name.want" 2>"$tmp/err"; then
		fail "proto_wire_$name" "protoc: $(head -1 "$tmp/err")"
	elif cmp -s "$tmp/$name.bin" "$tmp/$name.want"; then
		pass "proto_wire_$name"
	else
		fail "proto_wire_$name" "our encoding differs from protoc's ($(wc -c <"$tmp/$name.bin") vs $(wc -c <"$tmp/$name.want") bytes)"
	fi
}

same join_request join.IssueJoinTicketRequest "
disk_uuid: \"0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000001\"
certificate_request: $(hexbytes 300 48)
is_control_plane: true
host_public_key: $(hexbytes 51 0)
host_certificate_principals: \"10.42.0.2\"
host_certificate_principals: \"worker-0\""
same rejoin_request join.IssueRejoinTicketRequest 'disk_uuid: "0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000001"'
same init_request init.InitRequest "
kms_uri: \"kms://cluster-kms?key=AAAA&salt=AAAA\"
storage_uri: \"storage://no-store\"
measurement_salt: \"$(printf '\\000%.0s' $(seq 32))\"
kubernetes_version: \"v1.32.9\"
init_secret: $(hexbytes 32 144)
cluster_name: \"constellation\"
apiserver_cert_sans: \"10.42.0.2\""
same init_failure init.InitResponse 'init_failure { error: "invalid init secret" }'
same recover recoverproto.RecoverMessage 'kms_uri: "kms://cluster-kms?key=AAAA&salt=AAAA" storage_uri: "storage://no-store"'
