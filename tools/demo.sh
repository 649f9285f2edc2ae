#!/bin/bash
# `make run`: what this host can enforce, then one sandboxed session that
# does some real work and tries a few things the sandbox must stop.
set -uo pipefail
BPFBOX=${1:-build/bin/bpfbox}
WS=$(mktemp -d /tmp/bpfbox-demo.XXXXXX)
trap 'rm -rf "$WS"' EXIT

echo "== bpfbox status"
"$BPFBOX" status
echo
echo "== bpfbox run -w $WS -- sh -c '...'"
"$BPFBOX" run -v -w "$WS" --timeout 20 -- sh -c '
	echo "inside session $BPFBOX_SESSION_ID, HOME=$HOME"
	echo "int main(void){return 0;}" > t.c && cc t.c -o t && ./t && echo "compiled and ran t.c: ok"
	echo x > /etc/bpfbox-demo 2>/dev/null && echo "wrote /etc: NOT DENIED" || echo "write to /etc: denied"
	cat /etc/shadow >/dev/null 2>&1 && echo "read /etc/shadow: NOT DENIED" || echo "read /etc/shadow: denied"
	ls /root >/dev/null 2>&1 && echo "list /root: NOT DENIED" || echo "list /root: denied"
	python3 -c "import socket; socket.create_connection((\"127.0.0.1\", 22), 1)" 2>/dev/null &&
		echo "network: NOT DENIED" || echo "network: denied"
	env | sort | sed "s/^/  env: /"
'
echo "exit code: $?"
