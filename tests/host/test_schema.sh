# The audit stream against its schema: real sessions that exercise every
# event type (exec, fork, exit, allowed and denied opens and connects, a
# loss), file names and arguments with control characters and bytes that
# are not UTF-8, and an argv past the 512-byte bound. Every line must
# validate against schema/events.schema.json (ajv, tools/validate-events.js),
# parse with python3's json module, and carry the odd bytes as
# docs/events.md says.
. "$(dirname "$0")/../lib.sh"

VALIDATE="$ROOT/tools/validate-events.js"

if [ "$(id -u)" != 0 ]; then
	skip "audit schema: --audit loads BPF programs and needs root; CI runs as root"
	finish
	exit $?
fi
# The validator needs ajv (make deps: tools/npm-deps.sh); install it if missing.
node "$VALIDATE" /dev/null >/dev/null 2>&1 || "$ROOT/tools/npm-deps.sh" >/dev/null 2>&1
if ! node "$VALIDATE" /dev/null >"$TMPD/v.out" 2>&1; then
	fail "the schema validator does not run (make deps installs ajv): $(head -c 300 "$TMPD/v.out")"
	finish
	exit $?
fi

mkdir -p "$TMPD/ws" "$TMPD/outside"
A="$TMPD/a.jsonl" B="$TMPD/b.jsonl"
cd "$TMPD/ws" || exit 1

# A loopback listener outside the session, for the allowed connect.
python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(30)' >"$TMPD/port" &
LPID=$!
wait_file "$TMPD/port" 5
PORT=$(cat "$TMPD/port")

cat >net.py <<'EOF'
import os, socket, sys
s = socket.socket(); s.settimeout(2)
try:
    s.connect(("169.254.169.254", 80))
    sys.exit("the metadata address was reachable")
except PermissionError:
    pass
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2).close()
u = socket.socket(socket.AF_UNIX); u.bind(os.path.abspath("sock")); u.listen()
socket.socket(socket.AF_UNIX).connect(os.path.abspath("sock"))
try:
    l6 = socket.socket(socket.AF_INET6); l6.bind(("::1", 0)); l6.listen()
    socket.create_connection(("::1", l6.getsockname()[1]), 2).close()
except OSError:
    pass  # no IPv6 loopback here
EOF

# \001 and \377 in a file name, a UTF-16 surrogate encoded in UTF-8 (invalid),
# a tab, a BEL, a quote, a backslash and a valid é in one argument. Without
# the namespace layer, so that the write outside is Landlock's denial (with
# it, the path is not even visible: the mount view hides /tmp).
SCRIPT='odd=$(printf "odd\001name\377x")
sur=$(printf "sur\355\240\200")
echo hi > inside; cat inside >/dev/null
: > "$odd"; cat "$odd"; : > "$sur"
echo x > '"$TMPD"'/outside/f
/bin/echo "$odd" "$(printf "tab\tbell\007quote\"back\\\\caf\303\251")" >/dev/null
/bin/true $(seq 1 1200)
sh -c "kill -9 \$\$"
/nonexistent/prog 2>/dev/null
python3 net.py '"$PORT"'
exit 0'
ODD=$(printf 'odd\001name\377x')
expect_rc 0 "a session with files, execs, signals and connects" \
	"$BPFBOX" run -q --no-namespaces --net allow --audit "$A" -w "$TMPD/ws" -- sh -c "$SCRIPT" sh "$ODD"
kill $LPID 2>/dev/null

# The ring's reader (the bpfbox process) is stopped while the flood runs, so
# the ring overflows whatever the machine's speed (a reader that keeps up
# would see no loss, and the loss checks below would test nothing).
rm -f "$TMPD/ws/ready" "$TMPD/ws/go" "$TMPD/ws/done"
"$BPFBOX" run -q --audit "$B" --audit-mode all --audit-ring 4096 -w "$TMPD/ws" -- \
	python3 -c '
import os, time
open("ready", "w").close()
end = time.time() + 60
while not os.path.exists("go") and time.time() < end:
    time.sleep(0.01)
for i in range(20000):
    open("/etc/hostname").close()
open("done", "w").close()' >"$TMPD/flood.out" 2>&1 &
FPID=$!
if poll_until 30 test -e "$TMPD/ws/ready"; then
	kill -STOP "$FPID"
	touch "$TMPD/ws/go"
	poll_until 120 test -e "$TMPD/ws/done" || echo "# the flood did not finish in 120 s"
	kill -CONT "$FPID"
else
	kill "$FPID" 2>/dev/null
fi
rc=0
wait "$FPID" || rc=$?
[ "$rc" = 0 ] && ok "a flood through a 4 KiB ring while its reader was stopped" ||
	fail "the flood session: exit $rc, $(head -c 300 "$TMPD/flood.out")"

# Every line: strict UTF-8 and JSON for python3.
if python3 - "$A" "$B" >"$TMPD/py.out" 2>&1 <<'PY'
import json, sys
for f in sys.argv[1:]:
    for n, raw in enumerate(open(f, "rb").read().split(b"\n")[:-1], 1):
        try:
            json.loads(raw.decode("utf-8", errors="strict"))
        except Exception as e:
            sys.exit("%s:%d: %s" % (f, n, e))
PY
then ok "every line is UTF-8 and parses with python3's json"; else fail "python3 json: $(cat "$TMPD/py.out")"; fi

if node "$VALIDATE" "$A" "$B" >"$TMPD/v.out" 2>&1; then
	ok "every event validates against schema/events.schema.json"
else
	fail "schema validation: $(head -c 1500 "$TMPD/v.out")"
fi

# check FILE PY_EXPR NAME: raw = the lines as bytes, ev = the parsed events.
check() {
	if python3 - "$1" "$2" "$PORT" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
ev = [json.loads(l) for l in raw]
port = int(sys.argv[3])
def one(pred):
    return [(r, e) for r, e in zip(raw, ev) if pred(e)]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
	then ok "$3"; else fail "$3"; fi
}

check "$A" "{'session.start', 'exec', 'exit', 'fork', 'file', 'connect', 'session.end'} <= {e['type'] for e in ev}" \
	"the session produced every record type"
check "$B" "[e['type'] for e in ev].count('loss') == 1 and ev[-1]['lost'] > 0" "the flood produced a loss event"

# Bytes as docs/events.md says: control characters \u00XX (tab \t), a byte
# that is not UTF-8 \u00XX read as Latin-1, valid UTF-8 raw.
check "$A" "any(b'/odd\\\\u0001name\\\\u00ffx\"' in r and e['path'].endswith('/odd\x01name\xffx') for r, e in one(lambda e: e['type'] == 'file'))" \
	"file name bytes 0x01 and 0xff: escaped as u0001 and u00ff (Latin-1)"
check "$A" "any(b'/sur\\\\u00ed\\\\u00a0\\\\u0080\"' in r for r, e in one(lambda e: e['type'] == 'file'))" \
	"an encoded surrogate (invalid UTF-8) is three escaped bytes"
check "$A" "any(b'\"odd\\\\u0001name\\\\u00ffx\",\"tab\\\\tbell\\\\u0007quote\\\\\"back\\\\\\\\caf\xc3\xa9\"' in r and e['argv'][1:] == ['odd\x01name\xffx', 'tab\tbell\x07quote\"back\\\\caf\u00e9'] for r, e in one(lambda e: e['type'] == 'exec' and e['filename'] == '/bin/echo'))" \
	"argv: control bytes, 0xff, tab, quote and backslash escaped, valid UTF-8 raw"
check "$A" "b'\"odd\\\\u0001name\\\\u00ffx\"]' in raw[0] and ev[0]['command'][-1] == 'odd\x01name\xffx'" \
	"session.start command escapes the same way"

# argv bound: 511 bytes kept, the marker set, the kept part a prefix.
check "$A" "any(e['argv_truncated'] and len('\0'.join(e['argv'])) == 4095 and '\0'.join(['/bin/true'] + [str(i) for i in range(1, 1201)]).startswith('\0'.join(e['argv'])) for e in ev if e['type'] == 'exec' and e['filename'] == '/bin/true')" \
	"argv past 4096 bytes: 4095 bytes kept, argv_truncated"
check "$A" "all(not e['argv_truncated'] for e in ev if e['type'] == 'exec' and e['filename'] == '/bin/echo')" \
	"a short argv is not marked truncated"

check "$A" "[e['seq'] for e in ev] == list(range(len(ev))) and ev[-1]['records'] == len(ev) - 2" \
	"seq 0..N without gaps; records counts the lines between start and end"
check "$A" "any(e['type'] == 'file' and e['path'].endswith('/outside/f') and e['decision'] == 'deny' and e['layer'] == 'landlock' and e['errno'] == 'EACCES' for e in ev)" \
	"denied open: layer landlock, errno EACCES"
check "$A" "any(e['type'] == 'exit' and e['signal'] == 9 and e['exit_code'] is None for e in ev)" \
	"killed process: signal 9, exit_code null"
# A name not found once the command runs is counted, not recorded (the
# command's own failed exec is: test_audit.sh).
check "$A" "not any(e['type'] == 'exec' and e['filename'] == '/nonexistent/prog' for e in ev) and ev[-1]['exec_not_found'] >= 1" \
	"failed exec with ENOENT: no record, counted in session.end.exec_not_found"
check "$A" "any(e['type'] == 'connect' and e['family'] == 'inet' and e.get('address') == '169.254.169.254' and e['port'] == 80 and e['decision'] == 'deny' and e['layer'] == 'cgroup-bpf' and e['errno'] == 'EPERM' for e in ev)" \
	"denied connect: cgroup-bpf, EPERM"
check "$A" "any(e['type'] == 'connect' and e.get('address') == '127.0.0.1' and e['port'] == port and e['decision'] == 'allow' for e in ev)" \
	"allowed connect to the loopback listener"
check "$A" "any(e['type'] == 'connect' and e['family'] == 'unix' and e['path'].endswith('/ws/sock') and 'address' not in e for e in ev)" \
	"unix connect: family unix with a path, no address"
check "$B" "ev[-1]['lost'] == ev[-1]['seq'] + 1 - len(ev) and [e['count'] for e in ev if e['type'] == 'loss'] == [ev[-1]['lost']]" \
	"the loss count equals the gaps in seq"
check "$B" "ev[-1]['records'] == sum(e['type'] in ('exec', 'exit', 'fork', 'file', 'connect') for e in ev)" \
	"session.end records counts the record lines, not the loss line"

# The validator itself: each bad line is reported with its number, exit 1.
python3 - "$A" "$TMPD/bad.jsonl" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1], "rb").read().split(b"\n")[:-1]]
file = next(e for e in ev if e["type"] == "file")
exe = next(e for e in ev if e["type"] == "exec")
ext = next(e for e in ev if e["type"] == "exit" and e["signal"] == 9)
con = next(e for e in ev if e["type"] == "connect" and e["family"] == "inet")
out = [json.dumps(file).encode()]                          # 1 good
out.append(json.dumps(dict(file, extra=1)).encode())        # 2 undocumented field
e = dict(exe); del e["errno"]; out.append(json.dumps(e).encode())  # 3 missing field
out.append(json.dumps(dict(file, path="x")).encode().replace(b'"x"', b'"\xff"'))  # 4 not UTF-8
out.append(b'{"type": "file",')                            # 5 not JSON
out.append(json.dumps(dict(file, type="bogus")).encode())   # 6 unknown type
out.append(json.dumps(dict(ext, exit_code=0)).encode())     # 7 signal and exit code
out.append(json.dumps(dict(con, path="/x")).encode())       # 8 inet with a path
out.append(json.dumps(dict(file, decision="deny", layer=None)).encode())  # 9 deny without layer
out.append(json.dumps(dict(file, time="2026-01-01 00:00:00")).encode())   # 10 time format
open(sys.argv[2], "wb").write(b"\n".join(out) + b"\n" + json.dumps(file).encode())  # 11 no newline
PY
node "$VALIDATE" --max 20 "$TMPD/bad.jsonl" >"$TMPD/bad.out" 2>&1
rc=$?
[ $rc = 1 ] && ok "the validator exits 1 on invalid lines" || fail "validator exit $rc on invalid lines: $(cat "$TMPD/bad.out")"
missing=
for n in 2 3 4 5 6 7 8 9 10 11; do
	grep -q "bad.jsonl:$n: " "$TMPD/bad.out" || missing="$missing $n"
done
grep -q "bad.jsonl:1: " "$TMPD/bad.out" && missing="$missing (line 1 is valid)"
[ -z "$missing" ] && ok "the validator names every bad line and only those" ||
	fail "validator lines:$missing: $(cat "$TMPD/bad.out")"
expect_grep 'bad.jsonl:2: .*must NOT have additional properties \(extra\)' "$TMPD/bad.out" \
	"an undocumented field fails by name"
finish
