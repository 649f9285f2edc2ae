# Command rules' asks through the daemon (docs/runtime.md "Approvals"): the
# daemon's exec program stops the exec, the daemon freezes the session and
# says session.ask (answer null, an id) to its sinks and subscribers; the
# registering bpfbox run relays it to its status fd and its runtime's answer
# (--ask-fd) back with the answer op, as `bpfbox answer` does for root and
# the session's owner. No answer within the pause timeout, or the client
# gone, is deny. One private daemon; the runs take about a second each.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 "asks through the daemon" "a daemon needs root and cgroup v2" || exit 0
daemon_scratch ask
chmod 755 "$TMPD" # uid 65534 below must reach the socket
DA="$TMPD/daemon.jsonl"
A="$TMPD/audit.jsonl"
cd "$WS" || exit 1
cat >"$TMPD/ask.json" <<'EOF'
{ "extra": { "commands": [ { "exe": "/usr/bin/env", "action": "ask" } ] } }
EOF
if ! start_daemon "$DA" --group nogroup --sink "file:$TMPD/asks.jsonl?types=session.ask"; then
	fail "the daemon did not start: $(tail -c 300 "$DERR")"
	finish
	exit $?
fi

# ask_run SCRIPT ANSWERS...: SCRIPT in a session of the daemon with the
# ask rule, a runtime answering the asks of its status fd in order.
ask_run() {
	script=$1
	shift
	rm -f "$A" "$TMPD/st" "$TMPD/an" "$TMPD/asklog"
	mkfifo "$TMPD/st" "$TMPD/an"
	"$PY" "$ROOT/tests/helpers/ask_responder.py" "$TMPD/st" "$TMPD/an" "$TMPD/asklog" "$@" &
	rp=$!
	"$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" --audit "$A" --task "$TMPD/ask.json" \
		--pause-timeout "${PT:-1s}" --status-fd 4 --ask-fd 3 4>"$TMPD/st" 3<"$TMPD/an" \
		-- sh -c "$script" >"$TMPD/rout" 2>"$TMPD/rerr" &
	echo "$!" >"$TMPD/runpid"
	wait "$!" 2>/dev/null
	wait "$rp"
}
TWO='/usr/bin/env echo first; echo "rc=$?"; /usr/bin/env echo second; echo "rc=$?"'
# acheck EXPR NAME: EXPR over the run (tests/helpers/ask_check.py).
acheck() {
	if "$PY" "$ROOT/tests/helpers/ask_check.py" "$A" "$TMPD/rout" "$TMPD/asklog" "$1"; then
		ok "$2"
	else
		fail "$2: $(cat "$TMPD/rout" "$TMPD/rerr" "$TMPD/asklog" | tail -c 700)"
	fi
}

ask_run "$TWO" approve deny
acheck "'first' in out and 'rc=0' in out and 'second' not in out and 'rc=137' in out" \
	"daemon: an ask approved on --ask-fd runs, one denied is killed before it runs"
acheck "ans == ['approve', 'deny'] and [q['argv'][1:] for q in qs] == [['echo', 'first'], ['echo', 'second']]" \
	"daemon: the status fd asked twice and says the answers, as embedded"
acheck "[a['answer'] for a in asks] == ['approve', 'deny'] and all(a['frozen'] for a in asks + asked) and [a['answered']['how'] for a in asks] == ['ask_fd'] * 2 and [a['id'] for a in asked] == [a['id'] for a in asks] == [a['seq'] for a in asks]" \
	"daemon: session.ask asked (answer null) then answered (ask_fd, frozen, seq = id)"
expect_schema "daemon: the stream with session.ask validates against the schema" "$A"
ask_run "$TWO" always
acheck "out.count('rc=0') == 2 and 'second' in out and len(qs) == 1 and ans == ['always']" \
	"daemon: approve always lets the rule's next exec run unasked"
# Two asks unanswered in a row: each denied at its deadline. On the
# daemon's 1 s tick the second would wait about 2 s (asked just after the
# tick that denied the first, its deadline passed a tick later): bounded
# at 1.5 s, the bound fails a tick and spares a loaded host's latency.
ask_run "$TWO" none none
acheck "'first' not in out and 'second' not in out and out.count('rc=137') == 2 and ans == ['timeout'] * 2 and [a['answered']['how'] for a in asks] == ['timeout'] * 2 and all(a['waited_ms'] >= 1000 for a in asks)" \
	"daemon: no answer within the pause timeout (1 s) is deny, the session thawed"
acheck "len(asks) == 2 and asks[1]['waited_ms'] < 1500" \
	"daemon: an ask is denied at its deadline, not on the daemon's next tick (waited_ms $(grep -o '"waited_ms":[0-9]*' "$A" | tr '\n' ' '))"
# The top-level command itself asks at its exec.
ask_run '/usr/bin/env echo toplevel' approve
acheck "out.strip() == 'toplevel' and ans == ['approve']" \
	"daemon: the top-level command is asked at its exec"

# Answered by a subscriber with bpfbox answer: its runtime leaves it open.
# The subscriber is ready once the daemon replied to its subscribe.
"$PY" - "$SOCK" "$TMPD/sub" <<'PY' &
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"op":"subscribe","types":["session.ask"]}\n')
f = s.makefile()
reply = f.readline()
open(sys.argv[2] + ".ready", "w").write(reply)
with open(sys.argv[2], "w") as out:
    for line in f:
        out.write(line)
        out.flush()
PY
sp=$!
wait_file "$TMPD/sub.ready" 5
# The session waits on a fifo after the answer, so a second one finds it.
mkfifo "$WS/hold"
rm -f "$TMPD/asklog" "$TMPD/runpid"
PT=30s ask_run '/usr/bin/env echo first; echo "rc=$?"; read x <hold' none &
runp=$!
poll_until 10 grep -q '"answer":null' "$TMPD/sub"
read -r SID AID <<EOF
$("$PY" -c 'import json, sys
e = json.loads(open(sys.argv[1]).readline())
print(e["session"], e["id"])' "$TMPD/sub" 2>/dev/null)
EOF
expect_rc 1 "answer: uid 65534 (in the daemon's group, not the owner) is refused" \
	setpriv --reuid 65534 --regid 65534 --clear-groups "$BPFBOX" answer --socket "$SOCK" \
	"$SID" "$AID" approve
expect_grep "answer: session $SID belongs to another user" "$TMPD/err" "... naming why"
expect_rc 1 "answer: an unknown ask id is an error" \
	"$BPFBOX" answer --socket "$SOCK" "$SID" 999999 approve
expect_grep "has no open ask 999999" "$TMPD/err" "... one line naming it"
expect_rc 0 "answer: root answers approve through the daemon" \
	"$BPFBOX" answer --socket "$SOCK" "$SID" "$AID" approve
expect_rc 1 "answer: a second answer is an error" \
	"$BPFBOX" answer --socket "$SOCK" "$SID" "$AID" deny
expect_grep "was answered already \(approve, answer\)" "$TMPD/err" "... saying how it was answered"
timeout 10 sh -c 'echo >"$1"' - "$WS/hold"
wait "$runp"
acheck "'first' in out and 'rc=0' in out and ans == ['approve'] and asks[0]['answered']['how'] == 'answer' and asks[0]['answered']['uid'] == 0" \
	"answer: the run went on, session.ask says who answered"
poll_until 5 grep -q '"answer":"approve"' "$TMPD/sub"
kill "$sp" 2>/dev/null
wait "$sp" 2>/dev/null
if "$PY" - "$TMPD/sub" <<'PY'; then
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if ev and all(e["type"] == "session.ask" for e in ev) and [e["answer"] for e in ev] == [None, "approve"] else 1)
PY
	ok "subscribe --type session.ask: the asked and the answered line, nothing else"
else
	fail "subscribe --type session.ask: $(head -c 600 "$TMPD/sub")"
fi
poll_until 5 grep -q '"type":"session.ask".*"answer":"approve"' "$DA" &&
	ok "the daemon's own sink has session.ask" || fail "no session.ask in $DA"
if "$PY" - "$TMPD/asks.jsonl" <<'PY'; then
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if len(ev) >= 10 and all(e["type"] == "session.ask" for e in ev) else 1)
PY
	ok "a sink with types=session.ask gets the asks and nothing else"
else
	fail "sink types=session.ask: $(head -c 400 "$TMPD/asks.jsonl")"
fi

# A pause on top of an open ask: the ask's freeze changes nothing the run
# sees but the state, which it reads again. It reports the pause and bounds
# it (--pause-timeout 3s), so the call ends even though the ask's deny leaves
# the session frozen (paused).
rm -f "$TMPD/asklog" "$TMPD/runpid"
PT=3s ask_run '/usr/bin/env echo first; echo "rc=$?"' none &
runp=$!
poll_until 10 grep -qs '"type":"ask"' "$TMPD/asklog"
SID=$("$PY" -c 'import json, sys
print(json.loads(open(sys.argv[1]).readline())["session"])' "$A" 2>/dev/null)
expect_rc 0 "pause during an ask: bpfbox pause is taken" "$BPFBOX" pause --socket "$SOCK" "$SID"
# A thaw while the exec waits would let a sibling SIGCONT it unanswered.
expect_rc 1 "resume during an open ask is refused" "$BPFBOX" resume --socket "$SOCK" "$SID"
expect_grep "waits for the answer to a command rule's ask; answer it" "$TMPD/err" \
	"... naming why and what to do"
if poll_until 40 grep -q '"type":"session.end"' "$A"; then
	acheck "'first' not in out and any(e['type'] == 'session.paused' and e['reason'] == 'manual' for e in ev) and any(e['type'] == 'killed' and e['reason'] == 'pause_timeout' for e in st) and [e['exit_code'] for e in ev if e['type'] == 'session.end'] == [123]" \
		"pause during an ask: the run reports session.paused (manual) and ends at its pause timeout"
else
	fail "pause during an ask: the session never ended (frozen, the pause unseen): $(grep -o '"type":"session[.a-z]*"' "$A" | tr '\n' ' '); status: $(tail -c 300 "$TMPD/asklog"); run: $(tail -c 300 "$TMPD/rerr"); daemon: $(tail -c 400 "$DERR")"
	kill -KILL "$(cat "$TMPD/runpid")" 2>/dev/null
	"$BPFBOX" resume --socket "$SOCK" "$SID" >/dev/null 2>&1
fi
wait "$runp" 2>/dev/null

# The client gone while it waits: denied, the session ends.
rm -f "$TMPD/asklog" "$TMPD/runpid"
PT=30s ask_run '/usr/bin/env echo first; echo "rc=$?"' none &
runp=$!
poll_until 10 grep -qs '"type":"ask"' "$TMPD/asklog"
kill -KILL "$(cat "$TMPD/runpid")"
wait "$runp" 2>/dev/null
poll_until 5 grep -q '"answered":{"how":"ended"' "$DA" &&
	ok "the client gone: the ask is denied (ended)" ||
	fail "client gone: $(grep session.ask "$DA" | tail -c 500)"
# The OOM killer invoked while an ask holds the session: the run's early
# OOM freeze (supervise_pause.c) must neither take the ask's freeze over
# (state "paused oom") nor, when no kill follows, thaw it: a sibling would
# SIGCONT the asked exec. The run reads its monitors only once the ask is
# answered (it relays the ask until then); if it saw the ask's freeze
# first, it holds the session as the ask's then, and the OOM must not
# become a pause said without a kill. (If it did not see it, the OOM is
# an early freeze of its own, lifted silently a second later: as for any
# OOM without a kill.) A real OOM of the session's memory cgroup that
# kills nothing, made from outside while its processes are frozen. cgroup
# v2: every process made unkillable (oom_score_adj -1000), then memory.max
# lowered under its ~20 MB of anonymous memory (no swap): reclaim fails,
# the OOM killer finds no victim. v1 memory (its own hierarchy): a process
# of the test's, not frozen, joins the session's memory cgroup and
# allocates past a limit lowered to 8 MB over its usage, with
# oom_kill_disable: it waits under OOM, nothing is killed.
rm -f "$TMPD/asklog" "$TMPD/runpid" "$WS/go" "$WS/go2"
PT=30s ask_run 'x=$(head -c 20000000 /dev/zero | tr "\0" a); /usr/bin/env touch oom-ran & p=$!; while [ ! -e go ]; do sleep 0.05; done; while kill -CONT $p 2>/dev/null; do sleep 0.05; done; wait $p; echo "rc=$?"; while [ ! -e go2 ]; do sleep 0.05; done; echo after' none &
runp=$!
poll_until 10 grep -qs '"type":"ask"' "$TMPD/asklog"
read -r SID AID <<EOF
$("$PY" -c 'import json, sys
e = [json.loads(l) for l in open(sys.argv[1])]
e = [x for x in e if x["type"] == "ask"][0]
print(e["session"], e["id"])' "$TMPD/asklog" 2>/dev/null)
EOF
CG="$PARENT/$SID"
poll_until 5 grep -qs 'frozen 1' "$CG/cgroup.events"
touch "$WS/go"
# key FILE NAME: NAME's number in the flat keyed FILE.
key() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
# xattr NAME: the session cgroup's user.bpfbox.NAME.
xattr() {
	"$PY" -c 'import os, sys; print(os.getxattr(sys.argv[1], sys.argv[2]).decode())' \
		"$CG" "user.bpfbox.$1" 2>/dev/null
}
# held: frozen, and it says "ask" (no pause took it over).
held() { grep -qs 'frozen 1' "$CG/cgroup.events" && [ "$(xattr state)" = ask ]; }
not_held() { ! held; }
running() { grep -qs 'frozen 0' "$CG/cgroup.events" && [ "$(xattr state)" = running ]; }
V1M=$(xattr v1 | awk '$1 == "memory" { print $2 }')
HOG= EV=
if [ -e "$CG/memory.events" ]; then
	EV="$CG/memory.events" OOMS=$(key "$CG/memory.events" oom) MAXB=$(cat "$CG/memory.max")
	KILLS=$(key "$EV" oom_kill)
	for p in $(cat "$CG/cgroup.procs"); do echo -1000 >"/proc/$p/oom_score_adj"; done
	[ -e "$CG/memory.swap.max" ] && echo 0 >"$CG/memory.swap.max"
	echo $((4 << 20)) >"$CG/memory.max"
	oom_seen() { [ "$(key "$EV" oom)" -gt "$OOMS" ]; }
	oom_undo() { echo "$MAXB" >"$CG/memory.max"; }
elif [ -n "$V1M" ]; then
	EV="$V1M/memory.oom_control" KILLS=$(key "$V1M/memory.oom_control" oom_kill)
	LIMB=$(cat "$V1M/memory.limit_in_bytes")
	echo 1 >"$EV"
	echo $(($(cat "$V1M/memory.usage_in_bytes") + (8 << 20))) >"$V1M/memory.limit_in_bytes"
	"$PY" -c 'import os, sys, time
open(sys.argv[1] + "/cgroup.procs", "w").write(str(os.getpid()))
b = b"x" * (64 << 20)' "$V1M" &
	HOG=$!
	oom_seen() { [ "$(key "$EV" under_oom)" = 1 ]; }
	oom_undo() {
		kill -KILL "$HOG"
		wait "$HOG" 2>/dev/null
		echo "$LIMB" >"$V1M/memory.limit_in_bytes"
		echo 0 >"$EV"
	}
fi
if [ -z "$EV" ]; then
	skip "oom during an ask: the session has no memory cgroup here"
elif poll_until 5 oom_seen && [ "$(key "$EV" oom_kill)" = "$KILLS" ]; then
	ok "oom during an ask: the OOM killer was invoked and killed nothing ($EV)"
else
	fail "oom during an ask: $(tr '\n' ' ' <"$EV") (before: oom ${OOMS:-} oom_kill $KILLS)"
fi
# Past the early freeze's wait for a kill (1 s): still the ask's freeze.
if [ -z "$EV" ]; then
	:
elif held && ! poll_until 2 not_held; then
	ok "oom during an ask: the session stays frozen for the ask (state ask) past the early freeze's 1 s"
else
	fail "oom during an ask: $(grep frozen "$CG/cgroup.events"), state '$(xattr state)'"
fi
[ -n "$EV" ] && oom_undo
expect_rc 0 "oom during an ask: the ask is still open, answered deny" \
	"$BPFBOX" answer --socket "$SOCK" "$SID" "$AID" deny
if poll_until 5 running; then
	ok "oom during an ask: after the deny the session runs (state running, thawed)"
else
	fail "oom during an ask: after the deny $(grep frozen "$CG/cgroup.events"), state '$(xattr state)'; the run: $(tail -c 600 "$TMPD/rerr")"
fi
touch "$WS/go2"
wait "$runp"
acheck "'rc=137' in out and 'after' in out and ans == ['deny'] and not any(e['type'] == 'session.paused' for e in ev)" \
	"oom during an ask: the asked exec never ran (killed at the deny), the session went on, no pause said"
if grep -q "session $SID paused" "$TMPD/rerr"; then
	fail "oom during an ask: the run said a pause: $(cat "$TMPD/rerr")"
else
	ok "oom during an ask: the run said no pause (the OOM killed nothing)"
fi
[ -e "$WS/oom-ran" ] && fail "oom during an ask: the asked command ran"

# Embedded mode (no daemon; root runs the BPF agent itself): `bpfbox pause`
# and `resume` write the session's cgroup directly. While the ask is open a
# resume is refused as the daemon refuses it; a sibling SIGCONTs the stopped
# exec as soon as it runs again (after $WS/go, made once the ask's freeze is
# complete: not in the documented window between the SIGSTOP and the freeze). A pause is
# taken on top of the ask, and after the ask's deny (no answer in 2 s) the
# session stays paused until its pause timeout ends the run (exit 123). The
# exec never ran.
EPARENT="$PARENT-embedded"
cleanup_extra() { rmdir "$EPARENT"/* "$EPARENT" 2>/dev/null; }
rm -f "$A" "$TMPD/st" "$TMPD/an" "$TMPD/asklog" "$WS/go"
mkfifo "$TMPD/st" "$TMPD/an"
"$PY" "$ROOT/tests/helpers/ask_responder.py" "$TMPD/st" "$TMPD/an" "$TMPD/asklog" none &
rp=$!
BPFBOX_CGROUP_PARENT=$EPARENT "$BPFBOX" run -q -w "$WS" --audit "$A" --task "$TMPD/ask.json" \
	--pause-timeout 2s --timeout 30s --status-fd 4 --ask-fd 3 4>"$TMPD/st" 3<"$TMPD/an" -- sh -c \
	'/usr/bin/env echo ran-unanswered & p=$!; while [ ! -e go ]; do sleep 0.05; done; while kill -CONT $p 2>/dev/null; do sleep 0.05; done; wait $p; echo "rc=$?"' \
	>"$TMPD/rout" 2>"$TMPD/rerr" &
runp=$!
poll_until 10 grep -qs '"type":"ask"' "$TMPD/asklog"
SID=$("$PY" -c 'import json, sys
print(json.loads(open(sys.argv[1]).readline())["session"])' "$TMPD/asklog" 2>/dev/null)
poll_until 5 grep -qs 'frozen 1' "$EPARENT/$SID/cgroup.events"
touch "$WS/go"
export BPFBOX_CGROUP_PARENT="$EPARENT"
expect_rc 1 "embedded: resume during an open ask is refused" "$BPFBOX" resume "$SID"
expect_grep "waits for the answer to a command rule's ask; answer it" "$TMPD/err" \
	"... naming why and what to do, as the daemon does"
expect_rc 0 "embedded: pause during an ask is taken" "$BPFBOX" pause "$SID"
expect_rc 1 "embedded: resume of the paused session is refused while the ask is open" \
	"$BPFBOX" resume "$SID"
unset BPFBOX_CGROUP_PARENT
expect_wait "$runp" 123 "embedded: pause during an ask ends the run at its pause timeout" \
	"$TMPD/rerr"
wait "$rp"
acheck "'ran-unanswered' not in out and ans == ['timeout'] and any(e['type'] == 'session.paused' and e['reason'] == 'manual' for e in ev) and any(e['type'] == 'killed' and e['reason'] == 'pause_timeout' for e in st)" \
	"embedded: the stopped exec never ran; session.paused (manual) after the ask's deny"
finish
