#!/bin/bash
# `make run`: what this host can enforce, then one sandboxed session that
# does some real work and tries a few things the sandbox must stop, with
# its audit stream (as root: the embedded BPF agent records the session).
set -uo pipefail
BPFBOX=${1:-build/bin/bpfbox}
WS=$(mktemp -d /tmp/bpfbox-demo.XXXXXX)
AUDIT="$WS.audit.jsonl"
trap 'rm -rf "$WS" "$AUDIT"' EXIT

echo "== bpfbox status"
"$BPFBOX" status
echo
audit=()
[ "$(id -u)" = 0 ] && audit=(--audit "$AUDIT")
echo "== bpfbox run ${audit[*]} -w $WS -- sh -c '...'"
"$BPFBOX" run -v "${audit[@]}" -w "$WS" --timeout 20 -- sh -c '
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
if [ -s "$AUDIT" ]; then
	echo
	echo "== audit stream: $(wc -l <"$AUDIT") JSON lines; the session's start, execs, denials and end:"
	python3 - "$AUDIT" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    t = e["type"]
    if t == "exec" and e["errno"] is None:
        print(f'  #{e["seq"]:<4} exec    pid {e["pid"]:<7} {" ".join(e["argv"])[:70]}')
    elif e.get("decision") == "deny":
        what = e.get("path") or e.get("address") or e.get("filename")
        print(f'  #{e["seq"]:<4} DENY    pid {e["pid"]:<7} {t} {what} ({e["layer"]}, {e["errno"]})')
    elif t.startswith("session") or t == "loss":
        keep = {k: e[k] for k in ("level_enabled", "exit_code", "records", "lost") if k in e}
        print(f'  #{e["seq"]:<4} {t:<7} {json.dumps(keep)}')
PY
fi
