# A source rule of agent/flow: a buffer that held a ticket, a key or a response body (names
# with response, rbuf, ticket, data or key) is wiped before it is freed: freed with rpc_free,
# or free() right after secret_wipe/ticket_free of the same buffer. Grpc responses (the join
# ticket, the rejoin's disk key) were freed with plain free() in node_round.c.
. tests/lib.sh

t=flow_secret_buffers_are_wiped_before_free
bad=$(awk '
	{ line = $0; gsub(/^[ \t]+/, "", line) }
	match(line, /^free\(([^)]*)\);/) {
		x = substr(line, 6, RLENGTH - 7)
		if (x ~ /response|rbuf|ticket|data|key/ &&
		    index(prev, "secret_wipe(" x) != 1 && index(prev, "ticket_free(" x) != 1)
			print FILENAME ":" FNR ": free(" x ") after \"" prev "\""
	}
	line != "" { prev = line }
' agent/flow/*.c)
if [ -z "$bad" ]; then
	pass $t
else
	fail $t "$(tr '\n' ';' <<<"$bad")"
fi
