# An ask whose answerer is gone is a deny (docs/SECURITY.md "fail
# closed"): the exec stopped for it never runs. Its answerer, the daemon,
# killed (SIGKILL) while the ask is open and started again: re-adoption
# denies it (the asked process killed, the denial logged and said as the
# ask's session.ask line, how "restarted", the session thawed), so neither `bpfbox resume` nor a SIGCONT from the test to every
# process of the session runs it. Embedded: a stale mark (its holder's pid
# gone) on a session cgroup the test makes is denied by `bpfbox resume`
# first, or refused when it does not name the asked process. A positive
# control: an ask answered approve runs. One private daemon, restarted once.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 "asks across a daemon restart" "a daemon needs root and cgroup v2" || exit 0
daemon_scratch askrestart
DA="$TMPD/daemon.jsonl"
A="$TMPD/audit.jsonl"
cd "$WS" || exit 1
cat >"$TMPD/ask.json" <<'EOF'
{ "extra": { "commands": [ { "exe": "/usr/bin/env", "action": "ask" } ] } }
EOF
if ! start_daemon "$DA"; then
	fail "the daemon did not start: $(tail -c 300 "$DERR")"
	finish
	exit $?
fi

# ask_start SCRIPT ANSWER: SCRIPT in a session of the daemon with the ask
# rule, in the background (RUNP), a runtime answering its first ask with
# ANSWER ("none": left open); waits (10 s) for the ask. SID: the session.
ask_start() {
	rm -f "$A" "$TMPD/st" "$TMPD/an" "$TMPD/asklog"
	mkfifo "$TMPD/st" "$TMPD/an"
	"$PY" "$ROOT/tests/helpers/ask_responder.py" "$TMPD/st" "$TMPD/an" "$TMPD/asklog" "$2" &
	RP=$!
	"$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" --audit "$A" --task "$TMPD/ask.json" \
		--pause-timeout 120s --status-fd 4 --ask-fd 3 4>"$TMPD/st" 3<"$TMPD/an" \
		-- sh -c "$1" >"$TMPD/rout" 2>"$TMPD/rerr" &
	RUNP=$!
	poll_until 10 grep -qs '"type":"ask"' "$TMPD/asklog"
	SID=$("$PY" -c 'import json, sys
print(json.loads(open(sys.argv[1]).readline())["session"])' "$TMPD/asklog" 2>/dev/null)
}
# cont_all CG: SIGCONT to every process of cgroup CG, as a sibling would.
cont_all() {
	for p in $(cat "$1/cgroup.procs" 2>/dev/null); do
		kill -CONT "$p" 2>/dev/null
	done
}
# restarted SID FILE ARGS: the daemon's stream ($DA) says the restart's deny
# of session SID's ask as the asked line's twin: the same id (and seq), pid
# and rule, filename FILE, argv ARGS (a Python list), answer deny, how
# restarted; and the whole stream validates against the schema.
restarted() {
	if "$PY" - "$DA" "$@" <<'PY'; then
import json, sys
sid, file, argv = sys.argv[2], sys.argv[3], eval(sys.argv[4])
ev = [json.loads(l) for l in open(sys.argv[1])]
qs = [e for e in ev if e["type"] == "session.ask" and e["session"] == sid]
asked = [e for e in qs if e["answer"] is None]
said = [e for e in qs if e["answer"] is not None]
ok = len(asked) == 1 and len(said) == 1
a, r = (asked[0], said[0]) if ok else ({}, {})
sys.exit(0 if ok and r["answer"] == "deny" and r["answered"] == {"how": "restarted"}
         and r["id"] == a["id"] == r["seq"] and r["pid"] == a["pid"] and r["rule"] == a["rule"]
         and r["filename"] == file and r["argv"] == argv and r["frozen"] and r["waited_ms"] >= 0
         else 1)
PY
		ok "restart: the deny is a session.ask line (answer deny, how restarted, the asked line's id, pid, rule, argv)"
	else
		fail "restart: no restarted line for session $1: $(grep session.ask "$DA" | grep "$1" | tail -c 900)"
	fi
	expect_schema "restart: the daemon's stream with the restarted line validates" "$DA"
}
# never_file FILE SECONDS: FILE does not appear within SECONDS.
never_file() { ! poll_until "$2" test -e "$1"; }

# xget DIR NAME: the xattr NAME of DIR (fails when unset); xset DIR NAME VALUE.
xget() {
	"$PY" -c 'import os, sys; print(os.getxattr(sys.argv[1], sys.argv[2]).decode())' "$1" "$2" \
		2>/dev/null
}
xset() { "$PY" -c 'import os, sys; os.setxattr(*sys.argv[1:3], sys.argv[3].encode())' "$@"; }

# 3. The positive control: an ask answered approve runs its command.
ask_start '/usr/bin/env touch approved; echo "rc=$?"' approve
if poll_until 10 test -e "$WS/approved"; then
	ok "control: an ask answered approve runs the command"
else
	fail "control: approved, but the command did not run: $(tail -c 400 "$TMPD/asklog" "$TMPD/rerr")"
fi
wait "$RUNP"
wait "$RP"

# 1. The daemon killed while the ask is open, started again on the same
# pins, socket and cgroup parent. The session waits on $WS/go afterwards.
ask_start '/usr/bin/env touch asked-ran; echo "rc=$?" >rc; while [ ! -e go ]; do sleep 0.05; done' none
CG="$PARENT/$SID"
if [ -n "$SID" ] && poll_until 5 grep -qs 'frozen 1' "$CG/cgroup.events"; then
	ok "restart: the ask is open, the session frozen"
else
	fail "restart: no open ask (session '$SID'): $(tail -c 400 "$TMPD/asklog" "$TMPD/rerr" "$DERR")"
fi
ASKED=$(xget "$CG" user.bpfbox.ask)
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
if start_daemon "$DA"; then
	ok "restart: the daemon started again and re-adopted the session"
else
	fail "restart: the daemon did not start again: $(tail -c 300 "$DERR")"
fi
if grep -q "session $SID: exec of .* waited for an ask whose answerer (pid [0-9]*) is gone: denied, killed" "$DERR"; then
	ok "restart: re-adoption denied the open ask (the daemon's log says it)"
else
	fail "restart: no denial of the stale ask (mark '$ASKED') in the daemon's log: $(tail -c 600 "$DERR")"
fi
restarted "$SID" /usr/bin/env "['/usr/bin/env', 'touch', 'asked-ran']"
if poll_until 5 grep -qs 'rc=137' "$WS/rc"; then
	ok "restart: the asked process was killed (the session's shell saw 137)"
else
	fail "restart: the asked process was not killed: rc '$(cat "$WS/rc" 2>/dev/null)'"
fi
if ! xget "$CG" user.bpfbox.ask >/dev/null &&
	[ "$(xget "$CG" user.bpfbox.state)" = running ] &&
	grep -qs 'frozen 0' "$CG/cgroup.events"; then
	ok "restart: the mark is gone, the session thawed and says running"
else
	fail "restart: mark '$(xget "$CG" user.bpfbox.ask)', state '$(xget "$CG" user.bpfbox.state)', $(grep frozen "$CG/cgroup.events")"
fi
# Whatever resume says (running: not paused), nothing runs the exec.
"$BPFBOX" resume --socket "$SOCK" "$SID" >"$TMPD/out" 2>"$TMPD/err"
cont_all "$CG"
if never_file "$WS/asked-ran" 2; then
	ok "restart: after bpfbox resume and a SIGCONT to every process, the asked command never ran"
else
	fail "restart: the asked command ran unanswered (resume: $(cat "$TMPD/out" "$TMPD/err"))"
fi
if "$BPFBOX" sessions --socket "$SOCK" 2>/dev/null | grep -q "$SID"; then
	ok "restart: the session lives on, adopted"
else
	fail "restart: the session is not listed: $("$BPFBOX" sessions --socket "$SOCK" 2>&1 | tail -c 300)"
fi
touch "$WS/go"
wait "$RUNP" 2>/dev/null
wait "$RP" 2>/dev/null
never_file "$WS/asked-ran" 1 || fail "restart: the asked command ran at the session's end"

# _dead PID: PID is gone or a zombie.
_dead() { [ -z "$1" ] && return 1; ! _state "$1" >/dev/null || [ "$(_state "$1")" = Z ]; }
_state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null | grep .; }

# restart_daemon: SIGKILL to the daemon, then started again on the same
# pins, socket and cgroup parent.
restart_daemon() {
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	start_daemon "$DA"
}

# 1b. A pause taken on top of the open ask, then the restart: the ask is
# denied all the same, and the session stays paused (adopted paused) until
# a resume, which then has nothing stopped to release.
ask_start '/usr/bin/env touch paused-ran; echo "rc=$?" >rc2; while [ ! -e go2 ]; do sleep 0.05; done' none
CG="$PARENT/$SID"
poll_until 5 grep -qs 'frozen 1' "$CG/cgroup.events"
expect_rc 0 "restart, paused: bpfbox pause on top of the open ask is taken" \
	"$BPFBOX" pause --socket "$SOCK" "$SID"
ASKEDP=$(xget "$CG" user.bpfbox.ask | cut -d' ' -f2)
restart_daemon || fail "restart, paused: the daemon did not start again: $(tail -c 300 "$DERR")"
# Killed while frozen: a zombie until its frozen parent reaps it.
if grep -q "session $SID: exec of .* is gone: denied, killed" "$DERR" &&
	poll_until 5 _dead "$ASKEDP" && grep -qs 'frozen 1' "$CG/cgroup.events"; then
	ok "restart, paused: the ask is denied (its process dead), the session stays frozen"
else
	fail "restart, paused: asked pid '$ASKEDP' $(cat "/proc/$ASKEDP/stat" 2>/dev/null); $(grep frozen "$CG/cgroup.events"); $(tail -c 400 "$DERR")"
fi
restarted "$SID" /usr/bin/env "['/usr/bin/env', 'touch', 'paused-ran']"
if "$BPFBOX" sessions --socket "$SOCK" 2>/dev/null | grep "$SID" | grep -q paused; then
	ok "restart, paused: the session is adopted paused"
else
	fail "restart, paused: not listed paused: $("$BPFBOX" sessions --socket "$SOCK" 2>&1 | tail -c 300)"
fi
expect_rc 0 "restart, paused: bpfbox resume thaws it" "$BPFBOX" resume --socket "$SOCK" "$SID"
cont_all "$CG"
never_file "$WS/paused-ran" 2 && ok "restart, paused: the asked command never ran" ||
	fail "restart, paused: the asked command ran unanswered"
grep -qs 'rc=137' "$WS/rc2" && ok "restart, paused: its parent saw it killed (137)" ||
	fail "restart, paused: rc2 '$(cat "$WS/rc2" 2>/dev/null)'"
touch "$WS/go2"
wait "$RUNP" 2>/dev/null
wait "$RP" 2>/dev/null

# 1c. The mark of an older bpfbox (its holder alone): which process waits
# is not known, so re-adoption kills the session.
ask_start '/usr/bin/env touch old-ran; echo "rc=$?" >rc3; while [ ! -e go3 ]; do sleep 0.05; done' none
CG="$PARENT/$SID"
poll_until 5 grep -qs 'frozen 1' "$CG/cgroup.events"
xset "$CG" user.bpfbox.ask "$DPID"
restart_daemon || fail "restart, old mark: the daemon did not start again: $(tail -c 300 "$DERR")"
if grep -q "session $SID: an ask whose answerer (pid [0-9]*) is gone waits, its process unknown: the session is killed" "$DERR"; then
	ok "restart, old mark: re-adoption kills the session (logged)"
else
	fail "restart, old mark: $(tail -c 400 "$DERR")"
fi
restarted "$SID" /usr/bin/env "['/usr/bin/env', 'touch', 'old-ran']"
cont_all "$CG"
never_file "$WS/old-ran" 2 && ok "restart, old mark: the asked command never ran" ||
	fail "restart, old mark: the asked command ran unanswered"
wait "$RUNP" 2>/dev/null
wait "$RP" 2>/dev/null
poll_until 5 test -z "$(cat "$CG/cgroup.procs" 2>/dev/null)" &&
	ok "restart, old mark: nothing of the session is left" ||
	fail "restart, old mark: processes left: $(cat "$CG/cgroup.procs")"

# 2. Embedded: a session cgroup the test makes, a process stopped in it as
# at an asked exec, the cgroup frozen and marked by a holder that is gone.
EPARENT="$PARENT-embedded"
cleanup_extra() { cgroups_remove "$EPARENT"; }
mkdir -p "$EPARENT"
# stale_session NAME MARK: ESID and ECG, a session cgroup whose process
# (EPID) stopped itself before its `touch NAME`; frozen, state "ask", the
# mark MARK with HOLDER for a pid that is gone and ASKED for EPID.
stale_session() {
	ESID=$("$PY" -c 'import secrets; print(secrets.token_hex(16))')
	ECG="$EPARENT/$ESID"
	mkdir "$ECG"
	sh -c 'echo $$ >"$1/cgroup.procs"; kill -STOP $$; touch "$2"' - "$ECG" "$WS/$1" &
	EPID=$!
	poll_until 5 _stopped "$EPID"
	echo 1 >"$ECG/cgroup.freeze"
	poll_until 5 grep -qs 'frozen 1' "$ECG/cgroup.events"
	sh -c 'exit 0' &
	HOLDER=$!
	wait "$HOLDER"
	xset "$ECG" user.bpfbox.state ask
	xset "$ECG" user.bpfbox.ask "$(echo "$2" | sed "s/HOLDER/$HOLDER/; s/ASKED/$EPID/")"
}
_stopped() { [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = T ]; }
# asked_never_ran NAME CHECK: after a SIGCONT to all, the stale session's
# asked process ($EPID) is gone and never made $WS/NAME.
asked_never_ran() {
	cont_all "$ECG"
	if never_file "$WS/$1" 2 && ! kill -0 "$EPID" 2>/dev/null; then
		ok "$2"
	else
		fail "$2: the asked process ran or lives ($(cat "/proc/$EPID/stat" 2>/dev/null))"
		kill -KILL "$EPID" 2>/dev/null # frozen: the wait below would not end
	fi
	wait "$EPID" 2>/dev/null
}

stale_session emb-ran "HOLDER ASKED"
export BPFBOX_CGROUP_PARENT="$EPARENT" BPFBOX_SOCKET="$TMPD/none.sock"
expect_err 0 "embedded: resume of a stale ask denies it first (one line naming the process), then resumes" \
	"denied, killed" "$BPFBOX" resume "$ESID"
asked_never_ran emb-ran "embedded: the asked process was killed, it never ran, also after a SIGCONT to all"
if ! xget "$ECG" user.bpfbox.ask >/dev/null; then
	ok "embedded: the stale mark is removed"
else
	fail "embedded: the stale mark stays: $(xget "$ECG" user.bpfbox.ask)"
fi

# The holder's pid taken by another process after it died: the mark's
# start time is not that process's, so the holder is gone all the same and
# the resume denies the ask (it was refused until a kill). The control: the
# same live process with its own start time holds the ask open.
LIVE_P=
cleanup_extra() {
	[ -n "$LIVE_P" ] && kill "$LIVE_P" 2>/dev/null
	cgroups_remove "$EPARENT"
}
sleep 300 &
LIVE_P=$!
LIVE_START=$(awk '{ print $22 }' "/proc/$LIVE_P/stat")
stale_session emb-reused "HOLDER ASKED"
xset "$ECG" user.bpfbox.ask "$LIVE_P $EPID start=$LIVE_START"
expect_err 1 "embedded: control: an ask whose holder runs (pid and start time) keeps resume refused" \
	"waits for the answer to a command rule's ask" "$BPFBOX" resume "$ESID"
xset "$ECG" user.bpfbox.ask "$LIVE_P $EPID start=$((LIVE_START + 1))"
expect_err 0 "embedded: resume of an ask whose holder's pid another process took (its start time differs) denies it" \
	"denied, killed" "$BPFBOX" resume "$ESID"
asked_never_ran emb-reused "embedded: ... its process was killed, it never ran"
kill "$LIVE_P"
wait "$LIVE_P" 2>/dev/null
LIVE_P=

# An older bpfbox's mark, its holder alone: which process waits is unknown.
stale_session emb-old "HOLDER"
expect_err 1 "embedded: resume of a stale ask whose process is unknown is refused, saying to kill the session" \
	"answerer \(pid [0-9]+\) is gone and whose process is unknown; kill the session" \
	"$BPFBOX" resume "$ESID"
cont_all "$ECG"
if never_file "$WS/emb-old" 2 && grep -qs 'frozen 1' "$ECG/cgroup.events"; then
	ok "embedded: ... the session stays frozen, the process never ran"
else
	fail "embedded: refused, but the process ran or the session thawed: $(grep frozen "$ECG/cgroup.events")"
fi
expect_rc 0 "embedded: bpfbox kill ends it" "$BPFBOX" kill "$ESID"
wait "$EPID" 2>/dev/null
never_file "$WS/emb-old" 1 || fail "embedded: the old-mark process ran after the kill"
unset BPFBOX_CGROUP_PARENT BPFBOX_SOCKET
finish
