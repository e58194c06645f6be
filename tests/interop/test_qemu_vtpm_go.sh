# The qemu-vtpm documents of the shipped agent (from swtpm) checked by the Go peer's own
# validator (Go's crypto and encoding/json, spec §2.6): byte-identical to Go's encoding,
# signatures, nonce, PCR digests; refusals when we break them on purpose; and a join over
# aTLS attested with qemu-vtpm against the Go join service.
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
peer=$(tests/interop/build-atlspeer.sh) || { fail interop_qemu_vtpm "atlspeer did not build"; exit 0; }
work=$(mktemp -d /tmp/constel-vtpm-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

swtpm_boot "$work"
nonce=$(printf '5a%.0s' $(seq 32))
ud=$(printf 'c3%.0s' $(seq 32))

t=interop_go_accepts_our_qemu_vtpm_document
if "$agent" --tpm "$tpm" attest --nonce "$nonce" --user-data "$ud" >"$work/doc.json" 2>"$work/attest.log" &&
	out=$("$peer" verify-qemu --nonce "$nonce" --doc "$work/doc.json") &&
	[ "$out" = "OK user_data=$ud pcr15=$(printf '00%.0s' $(seq 32))" ]; then
	pass $t
else
	fail $t "$(tail -1 "$work/attest.log") / $out"
fi

# refuse: rc must be 1 and the reason must be the one we caused
refuses() { # NAME WANT DOCFILE [NONCE]
	local out
	out=$("$peer" verify-qemu --nonce "${4:-$nonce}" --doc "$3")
	if [ $? = 1 ] && grep -q -- "$2" <<<"$out"; then pass "$1"; else fail "$1" "$out"; fi
}
refuses interop_go_refuses_our_document_for_another_nonce "quote nonce mismatch" "$work/doc.json" \
	"$(printf '5b%.0s' $(seq 32))"

# a PCR value changed in every bank's map: the digests no longer match
python3 - "$work/doc.json" "$work/pcr.json" <<'PY'
import base64, json, sys
d = json.load(open(sys.argv[1]))
for q in d["Attestation"]["quotes"]:
    v = bytearray(base64.b64decode(q["pcrs"]["pcrs"]["4"])); v[0] ^= 1
    q["pcrs"]["pcrs"]["4"] = base64.b64encode(bytes(v)).decode()
open(sys.argv[2], "w").write(json.dumps(d, separators=(",", ":")))
PY
refuses interop_go_refuses_a_changed_pcr "PCR digest mismatch" "$work/pcr.json"

python3 - "$work/doc.json" "$work/sig.json" <<'PY'
import base64, json, sys
d = json.load(open(sys.argv[1]))
for q in d["Attestation"]["quotes"]:
    v = bytearray(base64.b64decode(q["raw_sig"])); v[-1] ^= 1
    q["raw_sig"] = base64.b64encode(bytes(v)).decode()
open(sys.argv[2], "w").write(json.dumps(d, separators=(",", ":")))
PY
refuses interop_go_refuses_a_broken_signature "quote signature" "$work/sig.json"

# the same values with the keys in another order are not Go's encoding
python3 - "$work/doc.json" "$work/order.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
open(sys.argv[2], "w").write(json.dumps(d, separators=(",", ":"), sort_keys=True))
PY
refuses interop_go_refuses_a_document_not_in_go_encoding "not byte-identical" "$work/order.json"

t=interop_agent_joins_go_join_service_attested_with_qemu_vtpm
if start_peer join join-server && "$agent" -v -1 --tpm "$tpm" join --endpoint "127.0.0.1:$pport" --name worker-1 --role worker \
	--disk-uuid 0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000001 --ssh-host-key "$work/ssh_key" --out "$work/ticket" \
	2>"$work/join.log" && [ -s "$work/ticket/state_disk_key" ]; then
	pass $t
else
	fail $t "$(tail -1 "$work/join.log") / $(tail -1 "$work/join.out")"
fi

# pcr15: PCR 15 of the SHA-256 bank, read by tpm2-tools
pcr15() { tpm2_pcrread -T "$tpm" sha256:15 | awk '$1 == "15:" { print tolower(substr($2, 3)) }'; }
marked() { python3 -c "import hashlib,sys; c=bytes.fromhex(sys.argv[1]); print(hashlib.sha256(bytes(32)+hashlib.sha256(c).digest()).hexdigest())" "$1"; }

t=interop_join_marks_pcr15_with_the_cluster_id_and_attesting_stops
want=$(marked "$(cat "$work/ticket/cluster_id" 2>/dev/null)")
if [ "$(pcr15)" = "$want" ] &&
	! "$agent" --tpm "$tpm" attest --nonce "$nonce" --user-data "$ud" >/dev/null 2>"$work/again.log" &&
	grep -q 'PCR 15 is not zero' "$work/again.log" &&
	! "$agent" --tpm "$tpm" join --endpoint 127.0.0.1:1 --name w --role worker --disk-uuid u \
		--ssh-host-key "$work/ssh_key" --out "$work/t2" 2>"$work/again2.log" &&
	grep -q 'node lock: PCR 15 is not zero' "$work/again2.log"; then
	pass $t
else
	fail $t "pcr15 $(pcr15), want $want; $(tail -1 "$work/again.log"); $(tail -1 "$work/again2.log")"
fi

# A TPM restart clears the PCRs (a reboot): init with qemu-vtpm against the Go CLI-like client,
# which validates our document with its own validator, then PCR 15 holds the spec's value.
t=interop_go_cli_init_with_qemu_vtpm_marks_pcr15_as_the_spec_says
swtpm_boot "$work" # orderly shutdown and restart, as at a reboot
secret=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
"$peer" bcrypt --secret "$secret" >"$work/hash"
printf '#!/bin/sh\nprintf "kind: Config\\n"\n' >"$work/kubeadm.sh"
chmod +x "$work/kubeadm.sh"
"$agent" -v -1 --tpm "$tpm" serve-init --listen 127.0.0.1:0 --init-secret-hash "$work/hash" \
	--disk-uuid 00000000-0000-0000-0000-000000000000 --out "$work/init" --kubeadm "$work/kubeadm.sh" \
	2>"$work/init.log" &
ipid=$!
iport=$(logged_port "$work/init.log")
out=$("$peer" init-client --addr "127.0.0.1:$iport" --secret "$secret")
wait_pid $ipid 60 # bounded: a failed CLI leaves serve-init waiting
rc=$?
if [ $rc = 0 ] && grep -q '"cluster_id":"823267d1276b940d1f04b9fac150721f196bf1090e125684d4efd8416a691588"' <<<"$out" &&
	[ "$(pcr15)" = 739f5470af0ec8615323225d31cb09f458f93c24a94c7fb491b8b3973cb89f89 ]; then
	pass $t
else
	fail $t "agent $rc, pcr15 $(pcr15): $out; $(tail -1 "$work/init.log")"
fi

t=interop_debug_logs_of_qemu_vtpm_runs_hold_no_secret
found=
for k in "$secret" 2b5c829f691bfd4232f8aac464bccc07e605c7c8e82cbca09837e86d0b6d0665 \
	54d67b1d917d3464757d9b699f3ee416c209a2270e3876da90535e4108898cdd \
	"$(od -An -tx1 -v "$work/ticket/state_disk_key" | tr -d ' \n')"; do
	b64=$(printf '%s' "$k" | xxd -r -p | base64 -w0)
	if grep -qiF -e "$k" -e "$b64" -e "$(tr '+/' '-_' <<<"$b64")" "$work/join.log" "$work/init.log"; then
		found="$found ${k:0:8}"
	fi
done
if [ -z "$found" ] && grep -q 'debug: tpm: Quote' "$work/join.log" && grep -q 'debug: tpm: Quote' "$work/init.log"; then
	pass $t
else
	fail $t "secret in a log:$found (or no debug lines)"
fi
