# A `bpfbox pause` that lands during the child's set-up, before the command
# exec'd (session_run.c wait_exec): the run hands the frozen set-up to the
# supervisor, so the pause timeout and --timeout bound it, a resume lets the
# command run to its own exit code, and a report that comes after the resume
# (an exec that fails) is still read. Embedded and through a private
# daemon. The set-up is made slow on purpose (20000 deny paths to mask in
# the session's mount namespace, about 150 ms) and the pause lands as soon
# as the session's cgroup has its first process (tests/helpers/pause_setup.py,
# which says whether the command had exec'd already: then it resumes and
# the case is tried again). Before, the run waited for the report pipe with
# no bound: frozen, it never ended (not even at SIGTERM). Each run is
# bounded here by `timeout -k 5 60`; the runs take 1 to 4 s each. A set-up
# stopped by SIGSTOP (no freeze: the run sees no pause) tells whether
# --timeout counts from the fork: before, it counted from the hand-over
# to the supervisor (1 s later) and the stopped set-up got the 2 s grace.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 "pause during set-up" "freezing a session's cgroup needs root and cgroup v2" ||
	exit 0
daemon_scratch pausesetup
EPARENT="$PARENT-embedded"
mkdir -p "$EPARENT"
cleanup_extra() { cgroups_remove "$EPARENT"; }
cd "$WS" || exit 1
mkdir -p "$WS/d"
# A daemon takes requests of up to 64 KiB: and 1024 deny patterns a session: its sessions get 900 of them,
# the parent's Landlock ruleset (built while the daemon registers) the time.
"$PY" - "$WS/d" "$TMPD/slow.json" "$TMPD/slow-daemon.json" <<'PY'
import json, os, sys
d, task, task_d = sys.argv[1:4]
paths = []
for i in range(20000):
    p = os.path.join(d, "f%d" % i)
    open(p, "w").close()
    paths.append(p)
json.dump({"extra": {"deny": paths}}, open(task, "w"))
json.dump({"extra": {"deny": paths[:900]}}, open(task_d, "w"))
PY
if ! start_daemon "$TMPD/daemon.jsonl"; then
	fail "the daemon did not start: $(tail -c 300 "$DERR")"
	finish
	exit $?
fi

# setup_run MODE ACTION RUN-ARGS...: bpfbox run RUN-ARGS (embedded, or
# through the daemon: the pause may come before the fork, the child is then
# cloned frozen) in $WS with the slow set-up, its status channel in
# $TMPD/st, its stdout and stderr in $TMPD/rout and $TMPD/rerr; a pause
# lands in its set-up, then ACTION: none (it stays paused), resume (0.5 s
# later), gone (the command file $WS/cmd.sh removed, resumed 0.5 s later),
# stop (SIGSTOP instead of the pause, never continued), cont (SIGSTOP, then
# SIGCONT 1.5 s later). Up to four tries
# until the pause lands. RC: the run's exit status, SECS: its seconds, MS:
# its milliseconds from the start of bpfbox run, FORK_MS (stop only): from
# its child's fork, LANDED: yes or no.
setup_run() {
	mode=$1 action=$2
	shift 2
	if [ "$mode" = embedded ]; then
		cgp=$EPARENT sock='' via='' task=$TMPD/slow.json
	else
		cgp=$PARENT sock="--socket $SOCK" via="--daemon-socket $SOCK"
		task=$TMPD/slow-daemon.json
	fi
	LANDED=no
	for _ in 1 2 3 4; do
		printf '#!/bin/sh\necho ran-cmd\nexit 5\n' >"$WS/cmd.sh"
		chmod 755 "$WS/cmd.sh"
		rm -f "$TMPD/landed" "$TMPD/landed.ready" "$TMPD/landed.forked" "$TMPD/st"
		stop=
		case $action in stop | cont) stop=--stop ;; esac
		# shellcheck disable=SC2086 # $sock: none, or two words; $stop: none or one
		BPFBOX_CGROUP_PARENT=$cgp "$PY" "$ROOT/tests/helpers/pause_setup.py" "$cgp" \
			"$BPFBOX" "$TMPD/landed" "$TMPD/st" $sock $stop &
		hp=$!
		poll_until 10 test -e "$TMPD/landed.ready"
		t0=$(date +%s%N)
		# shellcheck disable=SC2086 # $via: none, or two words; $QUIET: -q or none
		BPFBOX_CGROUP_PARENT=$cgp timeout -k 5 60 "$BPFBOX" run $QUIET $via -w "$WS" \
			--task "$task" --status-fd 3 "$@" 3>"$TMPD/st" >"$TMPD/rout" \
			2>"$TMPD/rerr" &
		runp=$!
		wait "$hp"
		hrc=$?
		sid=$(cut -d' ' -f1 "$TMPD/landed" 2>/dev/null)
		if [ "$hrc" = 0 ]; then
			LANDED=yes
			case $action in
			resume)
				# The run says the pause first (the check wants it before resumed).
				poll_until 10 grep -q '"type":"paused"' "$TMPD/st"
				BPFBOX_CGROUP_PARENT=$cgp "$BPFBOX" resume $sock "$sid" >/dev/null 2>&1
				;;
			cont)
				# Held past the hand-over to the supervisor (1 s), then on.
				sleep 1.5
				for pid in $(cat "$cgp/$sid/cgroup.procs" 2>/dev/null); do
					kill -CONT "$pid" 2>/dev/null
				done
				;;
			gone)
				rm -f "$WS/cmd.sh"
				poll_until 10 grep -q '"type":"paused"' "$TMPD/st"
				BPFBOX_CGROUP_PARENT=$cgp "$BPFBOX" resume $sock "$sid" >/dev/null 2>&1
				;;
			esac
		fi
		wait "$runp"
		RC=$?
		t1=$(date +%s%N)
		MS=$(((t1 - t0) / 1000000))
		SECS=$((MS / 1000))
		FORK_MS=$(((t1 - $(cat "$TMPD/landed.forked" 2>/dev/null || echo "$t0")) / 1000000))
		# A run that hung (the old code) is killed by timeout: its frozen child too.
		[ -n "$sid" ] && [ -d "$cgp/$sid" ] && echo 1 >"$cgp/$sid/cgroup.kill" 2>/dev/null
		[ "$LANDED" = yes ] && return 0
		[ "$hrc" = 2 ] && return 1
	done
	return 1
}

# scheck PY_EXPR NAME: PY_EXPR over the status lines (st: their list, types:
# their types in order, end: the ended line), the run's stdout (out) and its
# exit status (rc).
scheck() {
	if "$PY" - "$TMPD/st" "$TMPD/rout" "$1" "$RC" 2>/dev/null <<'PY'; then
import json, sys
rc = int(sys.argv[4])
st = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
types = [e["type"] for e in st]
end = st[-1] if st and st[-1]["type"] == "ended" else {}
out = open(sys.argv[2]).read()
sys.exit(0 if eval(sys.argv[3]) else 1)
PY
		ok "$2"
	else
		fail "$2: rc $RC in $SECS s; status: $(tr '\n' ' ' <"$TMPD/st" | head -c 700); stderr: $(grep -v 'not enforced' "$TMPD/rerr" | head -c 300)"
	fi
}

# landed NAME: the pause landed in the set-up, else NAME fails.
landed() {
	[ "$LANDED" = yes ] && return 0
	fail "$1: the pause never landed in the set-up (four tries): $(cat "$TMPD/landed" 2>/dev/null)"
	return 1
}

# bounded NAME WANT: the run ended by itself with WANT within 50 s (not at
# the outer timeout, 60 s; generous for a loaded host: about 3 s here).
bounded() {
	if ! landed "$1"; then
		:
	elif [ "$RC" = "$2" ] && [ "$SECS" -lt 50 ]; then
		ok "$1"
	else
		fail "$1: exit $RC after $SECS s, want $2 well before the outer timeout (60 s): $(grep -v 'not enforced' "$TMPD/rerr" | head -c 300)"
	fi
}

# within NAME MS MAX_MS: the run that landed took MS, at most MAX_MS.
within() {
	if [ "$LANDED" != yes ]; then
		: # said by bounded or landed
	elif [ "$2" -le "$3" ]; then
		ok "$1 ($2 ms)"
	else
		fail "$1: $2 ms, want at most $3"
	fi
}

QUIET=-q
for mode in ${PAUSE_SETUP_MODES:-embedded daemon}; do
	# 1. Paused in the set-up, nobody resumes: killed at the pause timeout.
	setup_run "$mode" none --pause-timeout 2s -- sh -c 'echo ran'
	bounded "$mode: a pause during the set-up ends the run at its pause timeout (exit 123)" 123
	scheck "'started' not in types and 'ran' not in out and types.count('paused') == 1 and any(e['type'] == 'killed' and e['reason'] == 'pause_timeout' and e['paused'] for e in st) and end.get('cause') == 'pause_timeout' and end.get('exit_code') == 123" \
		"$mode: ... paused, killed (pause_timeout), ended; never started"

	# 2. Paused, then resumed: the command runs to its own exit code. (The
	# old code got there too, once resumed, but said nothing of the pause.)
	# "ran" only once its file is made in the workspace: a held call (3c).
	rm -f "$WS/made"
	setup_run "$mode" resume --pause-timeout 30s -- sh -c 'echo ran >made && echo ran; exit 7'
	n="$mode: a pause then resume during the set-up: the command's own exit code (7)"
	landed "$n" && scheck "rc == 7 and 'ran' in out and types.index('paused') < types.index('resumed') < types.index('started') < types.index('ended') and [e['reason'] for e in st if e['type'] == 'paused'] == ['manual'] and end.get('cause') == 'exit' and end.get('exit_code') == 7 and end.get('paused_ms', 0) > 0" \
		"$n; paused (manual), resumed, then started, ended (paused_ms)"

	# 3. --timeout holds while the set-up is frozen (wall clock: paused time counts).
	setup_run "$mode" none --pause-timeout 120s --timeout 3s -- sh -c 'echo ran'
	bounded "$mode: --timeout ends a run frozen in its set-up (exit 124)" 124
	scheck "'started' not in types and 'ran' not in out and end.get('cause') == 'timeout' and end.get('exit_code') == 124" \
		"$mode: ... ended (timeout), never started"

	# 3b. A set-up stuck without a freeze (SIGSTOP): --timeout counts from
	# the fork, and the set-up is killed at once (no grace: no command yet).
	# Not -q here: stderr is to say the timeout came before the command.
	QUIET=
	setup_run "$mode" stop --pause-timeout 120s --timeout 1s -- sh -c 'echo ran'
	QUIET=-q
	bounded "$mode: --timeout ends a run whose set-up is stopped (exit 124)" 124
	scheck "'started' not in types and 'paused' not in types and 'ran' not in out and end.get('cause') == 'timeout' and end.get('exit_code') == 124" \
		"$mode: ... ended (timeout), never started"
	# From the fork only: before it, the 20000-path policy's compile takes
	# seconds on a loaded host. The old code took 4 s, the grace alone 3 s.
	within "$mode: ... within the timeout and 1.5 s of its fork (was 4 s)" "$FORK_MS" 2500
	if [ "$LANDED" != yes ]; then
		: # said above
	elif grep -q 'stopped: timeout of 1 s before its command started' "$TMPD/rerr"; then
		ok "$mode: ... stderr says the timeout came before the command started"
	else
		fail "$mode: ... stderr does not say the timeout came before the command started: $(grep -v 'not enforced' "$TMPD/rerr" | head -c 300)"
	fi

	# 3c. A set-up held past the hand-over (1 s) that then goes on: the
	# listener of the session's held calls (a file made in the workspace
	# without BPF; network deny's socket() of a family other than unix and
	# inet, embedded and through a daemon) comes to the supervisor after
	# the hand-over. Before, it was looked for once, at the hand-over, and
	# missed: the first such call waited for --timeout (a set-up slower
	# than 1 s under QEMU's TCG hung the CI's 6.12 boot, 2026-12-01). The
	# packet socket must come back refused (EPERM, the listener's answer).
	rm -f "$WS/made"
	setup_run "$mode" cont --timeout 40s -- sh -c 'echo x >made; python3 -c "
import errno, socket
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM)
    print(\"opened\")
except OSError as e:
    print(\"refused\" if e.errno == errno.EPERM else \"errno %d\" % e.errno)"; echo done'
	n="$mode: a set-up stopped 1.5 s, then continued: its calls held for the supervisor are answered (exit 0)"
	if ! landed "$n"; then
		:
	elif [ "$RC" = 0 ] && grep -qx refused "$TMPD/rout" && grep -qx done "$TMPD/rout" &&
		[ "$SECS" -lt 30 ] && { [ "$mode" = daemon ] || [ -f "$WS/made" ]; }; then
		ok "$n in $SECS s; the packet socket refused (EPERM)$([ -f "$WS/made" ] && echo ", the file made")"
	else
		fail "$n: exit $RC after $SECS s (want 0 well before the 40 s --timeout), made: $([ -f "$WS/made" ] && echo yes || echo no), stdout: $(tr '\n' ' ' <"$TMPD/rout" | head -c 100)"
	fi

	# 4. A report after the resume is read: the exec fails (the file went
	# while frozen). (The old code read it too, once resumed, unreported.)
	setup_run "$mode" gone --pause-timeout 30s -- "$WS/cmd.sh"
	n="$mode: an exec that fails after the resume is reported as such (exit 127)"
	if ! landed "$n"; then
		:
	elif ! grep -q "cannot execute '$WS/cmd.sh'" "$TMPD/rerr"; then
		fail "$n: rc $RC, no 'cannot execute' on stderr: $(head -c 300 "$TMPD/rerr")"
	else
		scheck "rc == 127 and 'ran-cmd' not in out and types.index('paused') < types.index('resumed') < types.index('ended') and end.get('cause') == 'exec_failed' and end.get('exit_code') == 127" \
			"$n; cannot execute on stderr; paused, resumed, ended (exec_failed)"
	fi
done
finish
