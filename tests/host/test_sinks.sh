# Audit sinks (docs/sinks.md): a real daemon running real sessions, with a
# real rsyslog on loopback receiving over TCP (octet counting) and UDP,
# killed with SIGKILL mid-stream and started again; file rotation; a full
# disk (a tiny tmpfs); OCSF output (docs/ocsf.md); bpfbox events.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 sinks "the daemon, which loads BPF programs,"
need_rsyslog sinks

daemon_scratch sinks
RS="$TMPD/rsyslog"
FULL="$TMPD/full"
A="$TMPD/audit.jsonl"		# the reference: --audit, every event
ROT="$TMPD/rot/audit.jsonl"	# rotate=16K, keep=3
OCSF="$TMPD/ocsf.jsonl"
mkdir -p "$RS/work" "$TMPD/rot" "$FULL" "$TMPD/outside"
MOUNTED=
cleanup_extra() { [ -n "$MOUNTED" ] && umount "$FULL" 2>/dev/null; }

# Two free loopback ports (TCP and UDP), picked by the kernel.
set -- $(free_ports tcp udp)
TPORT=$1 UPORT=$2

cat >"$RS/rsyslog.conf" <<EOF
global(workDirectory="$RS/work" maxMessageSize="64k")
module(load="imtcp")
module(load="imudp")
template(name="msgonly" type="string" string="%msg%\n")
ruleset(name="tcp") { action(type="omfile" file="$RS/tcp.out" template="msgonly") }
ruleset(name="udp") { action(type="omfile" file="$RS/udp.out" template="msgonly") }
input(type="imtcp" port="$TPORT" address="127.0.0.1" ruleset="tcp")
input(type="imudp" port="$UPORT" address="127.0.0.1" ruleset="udp" rcvbufSize="16m")
EOF

# A workload with exec, file (allowed and denied) and fork/exit events.
WORK='echo $BPFBOX_SESSION_ID > "$SID_FILE"; for i in 1 2 3 4 5 6; do /bin/true work $i; cat /etc/hostname >/dev/null; done; echo x > '"$TMPD"'/outside/f 2>/dev/null; exit 0'
work() {
	SID_FILE="$WS/$1.sid" "$BPFBOX" run -q --env SID_FILE --daemon-socket "$SOCK" -w "$WS" -- \
		sh -c "$WORK" >/dev/null 2>&1
}

# A tiny file system for the full-disk case: a filler leaves ~24 KiB.
if mount -t tmpfs -o size=64k bpfbox-sinks "$FULL" 2>/dev/null; then
	MOUNTED=1
	head -c 40960 /dev/zero >"$FULL/filler"
else
	fail "cannot mount a tmpfs for the full-disk case"
fi

# The daemon starts before its collector: a warning, then spooling.
start_daemon "$A" \
	--sink "syslog+tcp://127.0.0.1:$TPORT?spool=$TMPD/spool-tcp&queue=256K" \
	--sink "syslog+udp://127.0.0.1:$UPORT?spool=$TMPD/spool-udp&facility=authpriv" \
	--sink "file:$ROT?rotate=16K&keep=3&fsync=rotate" \
	--sink "file:$FULL/audit.jsonl" \
	--sink "file:$OCSF?format=ocsf" && ok "the daemon starts with five sinks and --audit" || {
	fail "the daemon did not get ready: $(cat "$DERR")"
	finish
	exit 1
}
expect_grep "sink syslog\+tcp://127.0.0.1:$TPORT: cannot connect \(Connection refused\); events are kept" \
	"$DERR" "an unreachable collector is a warning, not an error"
kill -0 "$DPID" 2>/dev/null && ok "and the daemon runs on" || fail "the daemon died: $(tail -3 "$DERR")"

start_rsyslog && ok "rsyslog listens on 127.0.0.1:$TPORT (tcp) and :$UPORT (udp)" ||
	fail "rsyslog did not start: $(cat "$RS/rsyslog.log")"
wait_grep "sink syslog\+tcp://127.0.0.1:$TPORT: connected again" "$DERR" 10 &&
	ok "the TCP sink connects once the collector is there" ||
	fail "no reconnect: $(grep sink "$DERR")"

# Phase 1: the collector is up.
work p1a
work p1b
work p1c
SID=$(cat "$WS/p1c.sid")
wait_grep "\"session\":\"$SID\".*\"type\":\"session.end\"|\"type\":\"session.end\".*\"session\":\"$SID\"" \
	"$RS/tcp.out" 10 || true
wait_grep "\"type\":\"session.end\",.*\"session\":\"$SID\"" "$RS/udp.out" 10 || true

P1="$(cat "$WS/p1a.sid") $(cat "$WS/p1b.sid") $(cat "$WS/p1c.sid")"
seqcheck "$RS/tcp.out" $P1 >"$TMPD/p1.tcp"
expect_grep "^lines [1-9][0-9]* bad 0 events [1-9][0-9]* missing 0 order 0" "$TMPD/p1.tcp" \
	"TCP: rsyslog got every event of 3 sessions, each line JSON ($(cat "$TMPD/p1.tcp"))"
seqcheck "$RS/udp.out" $P1 >"$TMPD/p1.udp"
expect_grep "^lines [1-9][0-9]* bad 0 events [1-9][0-9]* missing 0 order 0" "$TMPD/p1.udp" \
	"UDP: rsyslog got every event of the same sessions ($(cat "$TMPD/p1.udp"))"

# Phase 2: rsyslog is killed (SIGKILL) mid-stream while sessions go on, then restarted.
(
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		work p2-$i
		sleep 0.2
	done
) &
GEN=$!
# Mid-stream: after the third session, before the last.
wait_file "$WS/p2-3.sid" 30
kill -9 "$RPID"
wait "$RPID" 2>/dev/null
kill -0 "$RPID" 2>/dev/null && fail "rsyslog survived SIGKILL" ||
	ok "rsyslog killed with SIGKILL while sessions run"
# Down while the daemon notices (the second "events are kept") and two more
# sessions run into the outage.
wait_count 2 "sink syslog\+tcp://127.0.0.1:$TPORT: .*; events are kept" "$DERR" 30
wait_file "$WS/p2-6.sid" 30
start_rsyslog && ok "rsyslog started again" || fail "rsyslog did not restart: $(tail -3 "$RS/rsyslog.log")"
wait $GEN
LAST=$(cat "$WS/p2-12.sid")
wait_grep "\"type\":\"session.end\",.*\"session\":\"$LAST\"" "$RS/tcp.out" 30 || true
P2=""
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do P2="$P2 $(cat "$WS/p2-$i.sid")"; done
seqcheck "$RS/tcp.out" $P2 >"$TMPD/p2.tcp"
# At most one line cut short: the killed rsyslog's own file write (omfile
# writes its buffer in blocks, so a SIGKILL can leave half a line, which
# the next rsyslog's first line continues). Every seq must still be there.
expect_grep "^lines [1-9][0-9]* bad [01] events [1-9][0-9]* missing 0 order 0" "$TMPD/p2.tcp" \
	"TCP across the kill: every seq of 12 sessions arrived at least once, in order ($(cat "$TMPD/p2.tcp"))"
[ "$(grep -Ec "sink syslog\+tcp://127.0.0.1:$TPORT: .*; events are kept" "$DERR")" -ge 2 ] &&
	ok "the daemon saw the collector go (a second outage, said once)" ||
	fail "the daemon did not see the collector go: $(grep sink "$DERR")"
expect_grep "sink syslog\+tcp://127.0.0.1:$TPORT: connected again; [0-9]+ events in memory and [1-9][0-9]* in the spool go first" \
	"$DERR" "memory spilled to the on-disk spool (queue=256K) and was replayed"
kill -0 "$DPID" 2>/dev/null && ok "the daemon lived through it" || fail "the daemon died: $(tail -3 "$DERR")"

# bpfbox events --follow --session ID prints that session, from start to end.
hold_session ev '/bin/true events-test'
SID=$HELD
"$BPFBOX" events --follow --session "$SID" --socket "$SOCK" >"$TMPD/ev.out" 2>"$TMPD/ev.err" &
EVPID=$!
"$BPFBOX" events --follow --session "$SID" --format text --socket "$SOCK" >"$TMPD/ev.txt" 2>&1 &
EVPID2=$!
wait_grep session.start "$TMPD/ev.out" 5
wait_grep session.start "$TMPD/ev.txt" 5
release_session ev
wait $RUNPID
wait_gone 5 kill -0 $EVPID 2>/dev/null
kill -0 $EVPID 2>/dev/null && { fail "bpfbox events --follow --session did not end with its session"; kill $EVPID; }
wait $EVPID
rc=$?
wait $EVPID2
[ $rc = 0 ] && ok "bpfbox events --follow --session exits 0 when the session ends" ||
	fail "bpfbox events exit $rc: $(cat "$TMPD/ev.err")"
"$PY" - "$TMPD/ev.out" "$SID" >"$TMPD/ev.check" 2>&1 <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
sid = sys.argv[2]
assert ev and all(e["session"] == sid for e in ev), "another session's event"
assert ev[0]["type"] == "session.start" and ev[-1]["type"] == "session.end", "not start..end"
assert [e["seq"] for e in ev] == sorted({e["seq"] for e in ev}), "seq not increasing"
assert any(e["type"] == "exec" and e["argv"] == ["/bin/true", "events-test"] for e in ev), "no exec"
print("ok", len(ev))
PY
expect_grep "^ok [0-9]+" "$TMPD/ev.check" "bpfbox events --follow --session prints that session, start to end ($(cat "$TMPD/ev.check" | tail -1))"
expect_grep "^[0-9T:.-]+Z ${SID%????????????????????????} #[0-9]+ exec allow pid=[0-9]+ ppid=[0-9]+ uid=0 /bin/true argv: /bin/true events-test$" \
	"$TMPD/ev.txt" "--format text prints one readable line per event"
expect_rc 1 "bpfbox events --session of an unknown session exits 1" \
	"$BPFBOX" events --session 0123456789abcdef0123456789abcdef --socket "$SOCK"
expect_grep "runs no session 0123456789abcdef0123456789abcdef" "$TMPD/err" "and says so"
expect_rc 2 "bpfbox events --type nope is bad usage" "$BPFBOX" events --type nope --socket "$SOCK"

# OCSF: exec, file and connect, allowed and denied, in a session with network.
"$PY" -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(20)' \
	>"$TMPD/lport" &
LPID=$!
wait_grep . "$TMPD/lport" 5
LPORT=$(cat "$TMPD/lport")
# --no-namespaces: the write outside must be a Landlock denial (with the
# namespaces the outside dir is not in the session's view).
SID_FILE="$WS/ocsf.sid" "$BPFBOX" run -q --no-namespaces --env SID_FILE --net allow --daemon-socket "$SOCK" -w "$WS" -- \
	sh -c 'echo $BPFBOX_SESSION_ID > "$SID_FILE"; /bin/true ocsf; cat /etc/hostname >/dev/null
	echo x > '"$TMPD"'/outside/o 2>/dev/null
	'"$PY"' -c "
import socket
socket.create_connection((\"127.0.0.1\", '"$LPORT"'), 2).close()
s = socket.socket(); s.settimeout(1)
try: s.connect((\"169.254.169.254\", 80))
except OSError: pass"' >/dev/null 2>&1
kill $LPID 2>/dev/null
SID=$(cat "$WS/ocsf.sid")
wait_grep "\"event_code\":\"session.end\".*\"correlation_uid\":\"$SID\"" "$OCSF" 5 || true
"$PY" - "$OCSF" "$SID" >"$TMPD/ocsf.check" 2>&1 <<'PY'
import json, sys
# The bpfbox mapping (docs/ocsf.md); the schema's own rules are checked below
# by tools/validate-ocsf.py against the pinned fixture of the schema.
BASE = {"activity_id": int, "category_uid": int, "class_uid": int, "metadata": dict,
        "severity_id": int, "time": int, "type_uid": int}
CLASSES = {
    1007: (1, {"actor": dict, "device": dict, "process": dict}, [1, 2, 99]),
    1001: (1, {"actor": dict, "device": dict, "file": dict, "action_id": int}, range(1, 15)),
    4001: (4, {"dst_endpoint": dict, "action_id": int}, range(1, 8)),
    1008: (1, {"device": dict}, [3, 99]),
}
RECORDS = ("exec", "fork", "exit", "file", "connect")
def need(o, key, typ, where):
    assert key in o, "%s: no %s" % (where, key)
    assert isinstance(o[key], typ) and not isinstance(o[key], bool) or typ is bool, \
        "%s: %s is not %s" % (where, key, typ.__name__)
seen = {}
sid = sys.argv[2]
for n, line in enumerate(open(sys.argv[1]), 1):
    e = json.loads(line)
    w = "line %d" % n
    for k, t in BASE.items():
        need(e, k, t, w)
    cat, req, acts = CLASSES[e["class_uid"]]
    assert e["category_uid"] == cat, w + ": category"
    assert e["activity_id"] in acts, w + ": activity_id"
    assert e["type_uid"] == e["class_uid"] * 100 + e["activity_id"], w + ": type_uid"
    assert e["severity_id"] in (0, 1, 2, 3, 4, 5, 6, 99), w + ": severity_id"
    assert e["time"] > 1500000000000, w + ": time in ms"
    m = e["metadata"]
    need(m, "version", str, w + " metadata")
    assert m["version"] == "1.8.0", w + ": version"
    assert m["uid"], w + ": metadata.uid"
    d = e["device"]
    assert d.get("hostname") and d.get("uid") and d.get("boot_uid"), w + ": device names the host"
    need(m, "product", dict, w + " metadata")
    need(m["product"], "vendor_name", str, w + " metadata.product")
    for k, t in req.items():
        need(e, k, t, w)
    if e["class_uid"] in (1007, 1001):
        need(e["device"], "type_id", int, w + " device")
        a = e["actor"]
        assert any(k in a for k in ("process", "user", "session", "app_name")), w + ": actor"
    if e["class_uid"] == 1001:
        need(e["file"], "name", str, w + " file")
        need(e["file"], "type_id", int, w + " file")
    if e["class_uid"] == 4001:
        d = e["dst_endpoint"]
        assert "ip" in d or "name" in d, w + ": dst_endpoint"
        if "connection_info" in e:
            need(e["connection_info"], "direction_id", int, w + " connection_info")
    if m["event_code"] in RECORDS:
        assert e["action_id"] in (1, 2) and e.get("disposition_id") in (1, 2), w + ": disposition"
        assert (e["action_id"] == 2) == (e["disposition_id"] == 2), w + ": action vs disposition"
        if m.get("correlation_uid") == sid:
            assert e["actor"]["session"]["uid"] == sid, w + ": session as actor context"
            assert m["uid"] == "%s:%d" % (sid, m["sequence"]), w + ": metadata.uid"
    if m.get("correlation_uid") == sid:
        seen.setdefault((e["class_uid"], e.get("disposition_id")), 0)
        seen[(e["class_uid"], e.get("disposition_id"))] += 1
for want in [(1007, 1), (1001, 1), (1001, 2), (4001, 1), (4001, 2), (1007, None)]:
    assert want in seen, "no OCSF event of class %d with disposition %s" % want
print("ok", sorted(seen.items(), key=str))
PY
expect_grep "^ok " "$TMPD/ocsf.check" \
	"OCSF: exec/file/connect as classes 1007/1001/4001 with the required fields, allowed and denied"
# Against the OCSF schema's own class definitions (tests/fixtures, made from
# the published schema by tools/ocsf-fixture.py): every line, no error.
if "$PY" "$ROOT/tools/validate-ocsf.py" "$ROOT/tests/fixtures/ocsf-1.8.0.json" "$OCSF" \
	>"$TMPD/ocsf.valid" 2>&1; then
	ok "OCSF: $(tail -1 "$TMPD/ocsf.valid")"
else
	fail "OCSF: not valid against the schema: $(head -5 "$TMPD/ocsf.valid" | tr '\n' ' ') $(tail -1 "$TMPD/ocsf.valid")"
fi

# File rotation: keep=3, each file under 16K, and the kept files are a gapless
# tail of the reference stream.
[ -s "$ROT" ] && [ -s "$ROT.1" ] && [ -s "$ROT.2" ] && [ -s "$ROT.3" ] && [ ! -e "$ROT.4" ] &&
	ok "rotation keeps the file and 3 rotated ones" || fail "rotated files: $(ls "$TMPD/rot")"

# The full disk: freed again, one more session, then a clean stop.
expect_grep "sink file:$FULL/audit.jsonl: cannot write: No space left on device" "$DERR" \
	"a full disk is said once in the log"
kill -0 "$DPID" 2>/dev/null && ok "and the daemon stays alive" || fail "the daemon died"
rm -f "$FULL/filler"
# Small sessions (what they write fits in the room freed) until one is
# written after the sink's loss line: the sink retries on its own clock, so
# the event to wait for is the written session.end, not a time.
end_after_loss() {
	"$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" -- /bin/true >/dev/null 2>&1
	sed -n '/"where":"sink write failed"/,$p' "$FULL/audit.jsonl" 2>/dev/null | grep -q '"session.end"'
}
poll_until 15 end_after_loss
kill -TERM "$DPID"
expect_wait "$DPID" 0 "SIGTERM stops the daemon with exit 0" "$DERR"
DPID=
# Under ASan/UBSan (make test-asan) a report would be in the daemon's log.
grep -Eq "Sanitizer|runtime error:" "$DERR" "$TMPD/ev.err" &&
	fail "sanitizer report: $(grep -E -A5 'Sanitizer|runtime error:' "$DERR" "$TMPD/ev.err" | head -20)" ||
	ok "no sanitizer report from the daemon or bpfbox events"

"$PY" - "$A" "$ROT" >"$TMPD/rot.check" 2>&1 <<'PY'
import json, os, sys
ref = open(sys.argv[1]).read().splitlines()
files = [sys.argv[2] + s for s in (".3", ".2", ".1", "")]
kept = []
for f in files:
    lines = open(f).read().splitlines()
    assert os.path.getsize(f) <= 16384, "%s is %d bytes" % (f, os.path.getsize(f))
    kept += lines
for l in kept:
    json.loads(l)
assert ref[-len(kept):] == kept, "the rotated files are not a gapless tail of the stream"
print("ok", len(kept), "lines in", len(files), "files")
PY
expect_grep "^ok " "$TMPD/rot.check" "rotation: every file <= 16K, no line lost or doubled across rotations ($(tail -1 "$TMPD/rot.check"))"

"$PY" - "$A" "$FULL/audit.jsonl" "file:$FULL/audit.jsonl" >"$TMPD/full.check" 2>&1 <<'PY'
import collections, json, sys
ref = open(sys.argv[1]).read().splitlines()
got = open(sys.argv[2]).read().splitlines()
name = sys.argv[3]
errs = [json.loads(l) for l in ref if '"type":"sink.error"' in l and json.loads(l)["sink"] == name]
assert errs and errs[0]["error"] == "ENOSPC", "no sink.error ENOSPC in the other sinks"
loss = [json.loads(l) for l in got if '"type":"loss"' in l]
loss = [e for e in loss if e.get("sink") == name]
assert loss and all(e["where"] == "sink write failed" and e["error"] == "ENOSPC" for e in loss), "no loss line"
for l in got:
    json.loads(l)  # whole lines only: the partial one was cut off
missing = collections.Counter(ref) - collections.Counter(got)
# The sink's own sink.error never goes to it; everything else missing is counted.
expected = sum(missing.values()) - len(errs)
counted = sum(e["count"] for e in loss)
assert counted == expected, "loss count %d, missing %d" % (counted, expected)
assert any('"session.end"' in l for l in got[got.index(next(l for l in got if '"type":"loss"' in l)):]), \
    "nothing written after the loss line"
print("ok", counted, "lost and counted")
PY
expect_grep "^ok [1-9]" "$TMPD/full.check" \
	"a full disk: sink.error ENOSPC to the other sinks, the exact loss count once space is back ($(tail -1 "$TMPD/full.check"))"

# The streams with the sinks' own events (sink.error in the others, the full
# sink's loss lines in its own) validate against the schema like the rest.
VALIDATE="$ROOT/tools/validate-events.js"
node "$VALIDATE" /dev/null >/dev/null 2>&1 || "$ROOT/tools/npm-deps.sh" >/dev/null 2>&1
if ! grep -q '"type":"sink.error"' "$A" || ! grep -q '"where":"sink write failed"' "$FULL/audit.jsonl"; then
	fail "no sink.error in the reference stream or no loss line in the full sink's"
elif node "$VALIDATE" "$A" "$FULL/audit.jsonl" >"$TMPD/schema.out" 2>&1; then
	ok "the streams with sink.error and a sink's loss lines validate against the schema ($(tr '\n' ' ' <"$TMPD/schema.out" | head -c 200))"
else
	fail "the sinks' streams do not validate: $(head -c 600 "$TMPD/schema.out")"
fi

# A bad sink configuration stops the start, naming the key.
expect_rc 2 "a bad sink key is an error at start" "$BPFBOX" daemon --socket "$SOCK" --pin-dir "$PIN" \
	--cgroup-parent "$PARENT" --sink "file:$TMPD/x.jsonl?rotat=1M"
expect_grep "unknown key 'rotat'; valid keys for a file sink" "$TMPD/err" "and the error names the key"
printf '{"sinks": ["syslog+tcp://127.0.0.1:%s?confirm=2h"]}\n' "$TPORT" >"$TMPD/daemon.json"
expect_rc 2 "a bad value in --config is an error at start" "$BPFBOX" daemon --socket "$SOCK" \
	--pin-dir "$PIN" --cgroup-parent "$PARENT" --config "$TMPD/daemon.json"
expect_grep "sinks\[0\].*confirm: '2h'" "$TMPD/err" "and the error names the entry and the key"

kill "$RPID" 2>/dev/null
wait "$RPID" 2>/dev/null
RPID=
finish
