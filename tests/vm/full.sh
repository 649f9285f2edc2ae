# Runs inside the Full VM: the BPF LSM layer in a real embedded session.
# Landlock allows the workspace; the LSM programs still deny credential
# files in it, a listed binary, and connects outside the allow-list.
cd /opt/bpfbox
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
. tests/lib.sh

WS="$TMPD/ws"
A="$TMPD/audit.jsonl"
mkdir -p "$WS/.ssh"
echo SECRET=1 >"$WS/.env"
echo key >"$WS/.ssh/id_rsa"
echo cert >"$WS/x.pem"
echo fine >"$WS/notes.txt"
cp /bin/true "$WS/forbidden-tool"

check() {
	if python3 - "$A" "$1" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
	then ok "$2"; else fail "$2"; fi
}

python3 -c 'import socket, time
a = socket.socket(); a.bind(("127.0.0.1", 0)); a.listen()
b = socket.socket(); b.bind(("127.0.0.2", 0)); b.listen()
print(a.getsockname()[1], b.getsockname()[1], flush=True); time.sleep(60)' >"$TMPD/ports" &
i=0
while [ ! -s "$TMPD/ports" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
read -r P1 P2 <"$TMPD/ports"

bpfbox run -q --audit "$A" -w "$WS" --net-allow "127.0.0.1:$P1" --exec-deny forbidden-tool -- \
	python3 -c "
import errno, os, socket, subprocess, sys
def denied(f):
    try: f()
    except PermissionError: return True
    return False
r = {}
r['env'] = denied(lambda: open('.env').read())
r['id_rsa'] = denied(lambda: open('.ssh/id_rsa').read())
r['pem'] = denied(lambda: open('x.pem').read())
r['notes'] = not denied(lambda: open('notes.txt').read())
r['exec'] = denied(lambda: subprocess.run(['./forbidden-tool']))
r['allowed'] = not denied(lambda: socket.create_connection(('127.0.0.1', $P1), 2))
r['other'] = denied(lambda: socket.create_connection(('127.0.0.2', $P2), 2))
r['meta'] = denied(lambda: socket.create_connection(('169.254.169.254', 80), 2))
print(r)
sys.exit(0 if all(r.values()) else 1)
" >"$TMPD/out" 2>"$TMPD/err"
rc=$?
[ $rc = 0 ] && ok "vm: LSM denies .env, id_rsa, *.pem and a listed binary in the workspace; allow-list holds" ||
	fail "vm: LSM session: $(cat "$TMPD/out" "$TMPD/err" | head -c 600)"
check "ev[0]['level_enabled'] == 'Full' and ev[0]['layers']['bpf_lsm']" "vm: session.start says Full with the BPF LSM layer"
for f in .env id_rsa x.pem; do
	check "any(e['type'] == 'file' and e['decision'] == 'deny' and e['layer'] == 'bpf-lsm' and e['path'].endswith('$f') for e in ev)" "vm: denial of $f recorded as bpf-lsm"
done
check "any(e['type'] == 'exec' and e['decision'] == 'deny' and e['layer'] == 'bpf-lsm' and e['filename'].endswith('forbidden-tool') for e in ev)" "vm: exec denial recorded as bpf-lsm"
check "any(e['type'] == 'connect' and e['decision'] == 'deny' and e.get('address') == '169.254.169.254' for e in ev)" "vm: metadata connect denial recorded"
check "any(e['type'] == 'connect' and e['decision'] == 'deny' and e.get('address') == '127.0.0.2' for e in ev)" "vm: connect outside the allow-list recorded"
# Outside any session the same actions succeed.
cat "$WS/.env" "$WS/.ssh/id_rsa" "$WS/x.pem" >/dev/null 2>&1 && ok "vm: outside a session the files are readable" ||
	fail "vm: outside a session the files were denied"
"$WS/forbidden-tool" && ok "vm: outside a session the binary runs" || fail "vm: outside a session the binary was denied"
# The LSM unit test (maps, patterns, records) runs here where LSM loads.
"$BPFBOX_BUILD/tests/test_lsm" >"$TMPD/lsm.out" 2>&1 && ok "vm: test_lsm passes" ||
	fail "vm: test_lsm: $(tail -5 "$TMPD/lsm.out")"
finish
