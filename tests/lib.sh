# Shared helpers for the shell tests (POSIX sh: also runs under busybox in
# the VM). Each check prints one line that tests/run.sh counts:
#   "ok - NAME", "FAIL - NAME: why", "skip - NAME: why".
# A skip must say why, and the case must be covered elsewhere (the VM).

# ROOT: the source tree (the test is tests/DIR/NAME.sh). BPFBOX: the binary
# under test (tests/run.sh sets it); else bpfbox from PATH, else the build
# tree's. BPFBOX_BUILD: the build tree (test programs).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BPFBOX_BUILD=${BPFBOX_BUILD:-$(cd "$ROOT/build" 2>/dev/null && pwd)}
if [ -z "${BPFBOX:-}" ]; then
	BPFBOX=$(command -v bpfbox 2>/dev/null || echo "$BPFBOX_BUILD/bin/bpfbox")
fi
FAILS=0

ok() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }
skip() { echo "skip - $*"; }

# status_json: `bpfbox status --json` of this host, as this user. A boot of
# the VM matrix probes once as root and its suites read that (level.sh sets
# BPFBOX_STATUS_JSON): each probe loads BPF programs, seconds under TCG.
status_json() {
	if [ -n "${BPFBOX_STATUS_JSON:-}" ] && [ -s "$BPFBOX_STATUS_JSON" ] && [ "$(id -u)" = 0 ]; then
		cat "$BPFBOX_STATUS_JSON"
	else
		"$BPFBOX" status --json
	fi
}

# expect_rc WANT NAME CMD...: runs CMD, checks its exit status.
expect_rc() {
	want=$1 name=$2
	shift 2
	"$@" >"$TMPD/out" 2>"$TMPD/err"
	got=$?
	if [ "$got" = "$want" ]; then
		ok "$name"
	else
		fail "$name: exit $got, want $want; stderr: $(head -c 300 "$TMPD/err")"
	fi
}

# expect_err WANT NAME ERE CMD...: runs CMD, checks that it exits WANT and
# that a line of its stderr matches ERE (an error that says what is wrong).
expect_err() {
	_ee_want=$1 _ee_name=$2 _ee_ere=$3
	shift 3
	"$@" >"$TMPD/out" 2>"$TMPD/err"
	got=$?
	if [ "$got" = "$_ee_want" ] && grep -Eq -- "$_ee_ere" "$TMPD/err"; then
		ok "$_ee_name"
	else
		fail "$_ee_name: exit $got, want $_ee_want and '$_ee_ere' on stderr: $(head -c 300 "$TMPD/err")"
	fi
}

# expect_wait PID WANT NAME [FILE]: the background job PID ends with status
# WANT (kept in rc); the FAIL line shows FILE (its output) when given.
expect_wait() {
	wait "$1"
	rc=$?
	if [ "$rc" = "$2" ]; then
		ok "$3"
	else
		fail "$3: exit $rc, want $2${4:+: $(oneline "$4")}"
	fi
}

# expect_grep PATTERN FILE NAME: FILE must contain PATTERN (extended regex).
expect_grep() {
	if grep -Eq -- "$1" "$2"; then
		ok "$3"
	else
		fail "$3: '$1' not in $2: $(head -c 300 "$2")"
	fi
}

# expect_tool TOOL WANT ERE NAME [TREE]: tools/check-TOOL (a check CI runs)
# on TREE (the source tree itself when absent) exits WANT, its output
# matching ERE (anything when ERE is empty); reported as "TOOL: NAME".
expect_tool() {
	"$ROOT/tools/check-$1" ${5:+"$5"} >"$TMPD/out" 2>&1
	rc=$?
	if [ "$rc" = "$2" ] && { [ -z "$3" ] || grep -Eq -- "$3" "$TMPD/out"; }; then
		ok "$1: $4"
	else
		fail "$1: $4: exit $rc, want $2${3:+ and '$3'}: $(head -c 600 "$TMPD/out")"
	fi
}

# expect_schema NAME FILE...: every line of the FILEs validates against
# schema/events.schema.json (tools/validate-events.js; ajv: make deps).
expect_schema() {
	_es_name=$1
	shift
	if node "$ROOT/tools/validate-events.js" "$@" >"$TMPD/schema.out" 2>&1; then
		ok "$_es_name"
	else
		fail "$_es_name: $(head -c 400 "$TMPD/schema.out")"
	fi
}

# A scratch dir removed at exit; tests put their workspaces under it.
TMPD=$(mktemp -d /tmp/bpfbox-test.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT INT TERM

# A production daemon may run on this host (its socket at the default path,
# its pins and cgroups in place): a test talks to the daemons it starts
# itself, never to that one. A test that starts one passes its socket
# explicitly; everything else finds no daemon here and runs embedded.
export BPFBOX_SOCKET="${BPFBOX_TEST_SOCKET:-$TMPD/no-daemon.sock}"

# expect_listed SID PY_EXPR NAME: `bpfbox sessions --json` on $SOCK lists
# session SID, and PY_EXPR is true of its entry s (s['state'] == 'running').
expect_listed() {
	"$BPFBOX" sessions --json --socket "$SOCK" >"$TMPD/list.json" 2>&1
	if "${PY:-python3}" -c 'import json, sys
s = [x for x in json.load(open(sys.argv[1])) if x["session"] == sys.argv[2]]
sys.exit(0 if s and eval(sys.argv[3], {"s": s[0]}) else 1)' "$TMPD/list.json" "$1" "$2" 2>/dev/null; then
		ok "$3"
	else
		fail "$3: session $1 in $(head -c 600 "$TMPD/list.json")"
	fi
}

# snapshot NAME CMD...: CMD's sorted output kept as $TMPD/snap.NAME, so that a
# test checks what it added itself, not the host's state (new_since).
snapshot() {
	n=$1
	shift
	"$@" 2>/dev/null | sort >"$TMPD/snap.$n"
}

# new_since NAME CMD...: the lines of CMD's output that were not in the
# snapshot NAME (empty when CMD added nothing).
new_since() {
	n=$1
	shift
	"$@" 2>/dev/null | sort | comm -13 "$TMPD/snap.$n" -
}

# need_root_cgroup2 WHAT WHY: the preamble of the tests that run a daemon or
# make session cgroups. Skips the whole file, saying why, when not root (WHY
# says what needs root) or without a cgroup2 mount (the VM matrix has both);
# else sets PY (python3) and CG2 (the cgroup2 mount point).
need_root_cgroup2() {
	if [ "$(id -u)" != 0 ]; then
		skip "$1: $2 needs root; CI runs as root"
		finish
		exit $?
	fi
	CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -z "$CG2" ]; then
		skip "$1: no cgroup2 mount on this host; the VM matrix covers it"
		finish
		exit $?
	fi
	PY=/usr/bin/python3
	[ -x "$PY" ] || PY=$(command -v python3)
}

# need_prog NAME DEFAULT WHAT: PROG, the path of program NAME (from PATH,
# else DEFAULT); without it the whole file fails with WHAT, which says how to
# get it (make deps installs what the tests use: a missing one is no skip).
need_prog() {
	PROG=$(command -v "$1" || echo "$2")
	if [ ! -x "$PROG" ]; then
		fail "$3"
		finish
		exit 1
	fi
}

# need_rsyslog NAME [MODULE WHAT]: RSYSLOGD, the path of rsyslogd; without
# it (or without its MODULE, a file name under /usr/lib/*/rsyslog/, which
# the Debian package WHAT ships) the whole file NAME fails saying how to get
# it (tools/deps.sh installs them: a missing one is no skip).
need_rsyslog() {
	RSYSLOGD=$(command -v rsyslogd || echo /usr/sbin/rsyslogd)
	if [ ! -x "$RSYSLOGD" ] || { [ -n "${2:-}" ] && ! ls /usr/lib/*/rsyslog/"$2" >/dev/null 2>&1; }; then
		fail "$1: rsyslogd${2:+ with $2} is not installed; run 'make deps' (tools/deps.sh installs ${3:-rsyslog})"
		finish
		exit 1
	fi
}

# daemon_scratch NAME: the names a test that runs its own daemon uses, all
# private to this run: SOCKDIR (not made: the daemon makes it), SOCK, PIN (bpffs), PARENT (cgroup), DERR (its
# stderr, emptied), WS (a workspace); DPID and RPID (a daemon, an rsyslog)
# empty. Installs daemon_cleanup at exit. Call after need_root_cgroup2.
daemon_scratch() {
	sweep_killed_runs
	SOCKDIR="$TMPD/sock"
	SOCK="$SOCKDIR/bpfbox.sock"
	PIN=/sys/fs/bpf/bpfbox-$1-$$
	PARENT="$CG2/bpfbox-$1-$$"
	DERR="$TMPD/daemon.err"
	WS="$TMPD/ws"
	mkdir -p "$WS"
	: >"$DERR"
	DPID= RPID=
	trap daemon_cleanup EXIT INT TERM
}

# sweep_killed_runs: the pins and cgroup parent of a test or bench daemon
# whose shell was killed (SIGKILL runs no trap). Left, its programs stay
# attached until reboot, and every syscall of the host pays for its
# tracepoints, the timings of every later test and bench too. Only names
# of the form bpfbox-NAME-PID (what tests and bench/ use; a production
# daemon's pin dir has no such suffix), only when no process PID exists,
# and only pins older than 30 minutes (a run in another PID namespace
# whose PID we cannot see is not swept mid-run).
sweep_killed_runs() {
	for _sk in /sys/fs/bpf/bpfbox-*-[0-9]*; do
		[ -d "$_sk" ] || continue
		_sk_name=${_sk##*/}
		_sk_pid=${_sk_name##*-}
		case $_sk_pid in '' | *[!0-9]*) continue ;; esac
		[ -d "/proc/$_sk_pid" ] && continue
		[ $(($(date +%s) - $(stat -c %Y "$_sk"))) -gt 1800 ] || continue
		"$BPFBOX" daemon --cleanup --pin-dir "$_sk" --cgroup-parent "$CG2/$_sk_name" \
			>/dev/null 2>&1 &&
			echo "# removed the pins and cgroups of a killed run: $_sk_name (process $_sk_pid is gone)"
	done
}

# session_cgroups DIR: the session cgroups under DIR, one a line; the empty
# ones a daemon made ahead (xattr trusted.bpfbox.pool, docs/daemon.md) are not
# sessions'. pool_cgroups DIR: those.
session_cgroups() { _cg_list "$1" 0; }
pool_cgroups() { _cg_list "$1" 1; }
_cg_list() {
	"${PY:-python3}" - "$1" "$2" <<'PY'
import os, sys
d, want = sys.argv[1], sys.argv[2] == "1"
for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
    p = os.path.join(d, n)
    if not os.path.isdir(p):
        continue
    try:
        pool = os.getxattr(p, "trusted.bpfbox.pool") == b"1"
    except OSError:
        pool = False
    if pool == want:
        print(n)
PY
}
no_session_cgroups() { [ -z "$(session_cgroups "$1")" ]; }

# cleanup_extra: a test's own teardown, run by daemon_cleanup first.
cleanup_extra() { :; }

# daemon_cleanup: kills the daemon and rsyslog the test started, removes the
# daemon's pins and cgroups and the scratch dir.
daemon_cleanup() {
	cleanup_extra
	[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
	[ -n "$RPID" ] && kill -9 "$RPID" 2>/dev/null
	"$BPFBOX" daemon --cleanup --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" \
		>/dev/null 2>&1
	rm -rf "$TMPD"
}

# start_daemon AUDIT [OPTIONS...]: a private daemon in the background on
# $SOCK, $PIN and $PARENT, its stderr appended to $DERR, its pid in DPID;
# waits up to 60 s for a new "ready" line (or for the daemon to die).
start_daemon() {
	audit=$1
	shift
	_sd_before=$(grep -c 'ready' "$DERR")
	"$BPFBOX" daemon --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" \
		--audit "$audit" "$@" 2>>"$DERR" &
	DPID=$!
	# Up to 60 s: under TCG (the VM matrix) the daemon's load and verify of
	# every program takes several seconds on 7.x; the wait ends at once when
	# the daemon is ready or dies.
	poll_until 60 _sd_ready
	[ "$(grep -c 'ready' "$DERR")" != "$_sd_before" ]
}
_sd_ready() {
	[ "$(grep -c 'ready' "$DERR")" != "$_sd_before" ] || ! kill -0 "$DPID" 2>/dev/null
}

# hold_session NAME [SHELL]: a session through the daemon on $SOCK in $WS,
# in the background (its bpfbox run's pid in RUNPID). It writes its id to
# $WS/NAME.sid, then waits for $WS/NAME.go (release_session NAME) before it
# runs SHELL and ends. Waits (10 s) for the id: HELD, empty when it never came.
hold_session() {
	rm -f "$WS/$1.sid" "$WS/$1.go"
	HOLD_NAME=$1 "$BPFBOX" run -q --env HOLD_NAME --daemon-socket "$SOCK" -w "$WS" -- sh -c \
		'echo $BPFBOX_SESSION_ID >"$HOLD_NAME.sid"; while [ ! -e "$HOLD_NAME.go" ]; do sleep 0.05; done; '"${2:-}" \
		>/dev/null 2>&1 &
	RUNPID=$!
	HELD=
	wait_file "$WS/$1.sid" && HELD=$(cat "$WS/$1.sid")
}
release_session() { touch "$WS/$1.go"; }

# start_rsyslog: $RSYSLOGD in the foreground with $RS/rsyslog.conf, its work
# dir and pid file under $RS, its pid in RPID; waits up to 5 s until it
# accepts on 127.0.0.1:$TPORT (fails at once if it died).
start_rsyslog() {
	rm -f "$RS/rsyslog.pid" # a SIGKILL leaves it, and its pid may be reused
	"$RSYSLOGD" -n -f "$RS/rsyslog.conf" -i "$RS/rsyslog.pid" >>"$RS/rsyslog.log" 2>&1 &
	RPID=$!
	poll_until 5 _rs_up
	kill -0 "$RPID" 2>/dev/null && tcp_accepts "$TPORT"
}
_rs_up() { tcp_accepts "$TPORT" || ! kill -0 "$RPID" 2>/dev/null; }

# stop_rsyslog: SIGKILL, as a crash would.
stop_rsyslog() {
	kill -9 "$RPID" 2>/dev/null
	wait "$RPID" 2>/dev/null
	RPID=
}

# free_ports KIND...: a free loopback port for each KIND (tcp or udp), all
# bound at once (so all different) and picked by the kernel; one line.
free_ports() {
	"${PY:-python3}" - "$@" <<'PY'
import socket, sys
kinds = {"tcp": socket.SOCK_STREAM, "udp": socket.SOCK_DGRAM}
socks = [socket.socket(type=kinds[k]) for k in sys.argv[1:]]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# free_net_block SIZE: the offset in 198.51.100.0/24 of a block of SIZE
# addresses (4 or 8) that no route of this host covers or enters (another
# suite, another run or the host may hold one), tried from one the pid
# picks; fails when none is free. A /30 routed inside a test's /29 wins
# over it and answers in its place (CI of 2026-12-02: test_escape's HTTP
# server answered test_egress_attacks' requests).
free_net_block() {
	_nb_pl=$((${1} == 4 ? 30 : 29)) _nb_n=$((256 / $1)) _nb_i=0
	while [ $_nb_i -lt $_nb_n ]; do
		_nb_b=$(((($$ + _nb_i) % _nb_n) * $1))
		if [ -z "$(ip -4 route show to match 198.51.100.$_nb_b 2>/dev/null | grep -v '^default')$(ip -4 route show root 198.51.100.$_nb_b/$_nb_pl 2>/dev/null)" ]; then
			echo $_nb_b
			return 0
		fi
		_nb_i=$((_nb_i + 1))
	done
	return 1
}

# tcp_accepts PORT: something accepts a TCP connection on 127.0.0.1:PORT.
tcp_accepts() {
	"${PY:-python3}" -c "import socket; socket.create_connection(('127.0.0.1', $1), 1).close()" \
		2>/dev/null
}

# poll_until SECONDS CMD...: runs CMD every 50 ms until it succeeds or
# SECONDS (an integer) pass; the status is CMD's last. The one way a test
# waits for an event (a file, a line, a state) instead of sleeping a fixed
# time; the wait_* below are its common cases.
poll_until() {
	_pu_n=$(($1 * 20))
	shift
	while ! "$@"; do
		[ "$_pu_n" -le 0 ] && return 1
		_pu_n=$((_pu_n - 1))
		sleep 0.05
	done
}

# fd_on DIR: whether a process still holds an fd of DIR itself (a
# closer's helper sweeping it holds one until it has finished: wait_gone 10
# fd_on DIR waits for that, not for a guessed time).
fd_on() {
	for _fo in /proc/[0-9]*/fd/*; do
		[ "$(readlink "$_fo" 2>/dev/null)" = "$1" ] && return 0
	done
	return 1
}

# review [OPTIONS] -- CMD...: a review session of $WS (no daemon, the status
# channel in $TMPD/st, stdout and stderr in $TMPD/out and err); sets $rc
# and $ID (the ended line's session).
review() {
	"$BPFBOX" run -q --no-daemon -w "$WS" --changes review --status-fd 3 "$@" </dev/null \
		>"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
	rc=$?
	ID=$(tail -n 1 "$TMPD/st" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
}

# nobody_ns: whether this run can be uid 65534 (root, setpriv) and that
# user's sessions get their namespaces (a user namespace of their own).
nobody_ns() {
	[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
		[ "$(setpriv --reuid=65534 --regid=65534 --clear-groups "$BPFBOX" status --json 2>/dev/null |
			python3 -c 'import json, sys; print(json.load(sys.stdin)["features"]["session_namespaces"]["available"])' 2>/dev/null)" = True ]
}

# nobody_ws: $NWS (holding b.txt) and $NST, uid 65534's workspace and
# state home, made; $NSETS its change sets. nb CMD...: CMD as that user
# with them.
nobody_ws() {
	NWS=$TMPD/nws
	NST=$TMPD/nstate
	NSETS=$NST/bpfbox/changes
	mkdir -p "$NWS" "$NST"
	echo b >"$NWS/b.txt"
	chown -R 65534:65534 "$NWS" "$NST"
}
nb() { setpriv --reuid=65534 --regid=65534 --clear-groups env -u BPFBOX_CHANGES_DIR XDG_STATE_HOME="$NST" "$@"; }

# warm_record DIR [r|u]: the record of the keeper of the next review
# session's set in DIR ("PID:FDS...:NAME", userspace/sandbox/changes_warm.c;
# u: an unprivileged user's), empty when none; warm_kept: whether one is.
warm_record() { readlink "$1"/.warm.*."${2:-r}" 2>/dev/null; }
warm_kept() { [ -n "$(warm_record "$@")" ]; }
# keeper_suite: for the suites of the keepers, the sets' directory $SETS
# (BPFBOX_CHANGES_DIR) and a workspace $WS (mode 751, holding a.txt) in
# $TMPD, which uid 65534 may search.
keeper_suite() {
	chmod 755 "$TMPD"
	SETS=$TMPD/sets
	export BPFBOX_CHANGES_DIR="$SETS"
	WS=$TMPD/ws
	mkdir -p "$WS"
	chmod 751 "$WS"
	echo a >"$WS/a.txt"
}
# warm_pid, warm_name DIR [r|u]: that keeper's pid, its set's name.
warm_pid() { warm_record "$@" | cut -d: -f1; }
warm_name() { warm_record "$@" | cut -d: -f6; }

# keepers_stop DIR: the keepers of the change sets in DIR (a review
# session's end leaves one for the next, userspace/sandbox/changes_warm.c)
# told to stop as when their time is out, and waited for (10 s); another
# directory's keepers (another suite's, the host's) are left alone.
keepers_stop() {
	for _ks in /proc/[0-9]*/fd/*; do
		[ "$(readlink "$_ks" 2>/dev/null)" = "$1" ] || continue
		_ks_pid=${_ks#/proc/}
		_ks_pid=${_ks_pid%%/*}
		tr '\0' ' ' <"/proc/$_ks_pid/cmdline" 2>/dev/null | grep -q '__changes-keep' &&
			kill -USR1 "$_ks_pid" 2>/dev/null
	done
	wait_gone 10 fd_on "$1"
}

# cgroups_remove PARENT: the session cgroups a test made itself under
# PARENT killed, waited for (5 s) until empty, removed with PARENT.
cgroups_remove() {
	for _cr in "$1"/*/; do
		[ -d "$_cr" ] || continue
		echo 1 >"$_cr/cgroup.kill" 2>/dev/null
		poll_until 5 test -z "$(cat "$_cr/cgroup.procs" 2>/dev/null)"
		rmdir "$_cr" 2>/dev/null
	done
	rmdir "$1" 2>/dev/null
}

# wait_file FILE [SECONDS]: until FILE exists and is not empty (10 s).
wait_file() { poll_until "${2:-10}" test -s "$1"; }

# wait_grep ERE FILE [SECONDS]: until a line of FILE matches ERE (10 s).
wait_grep() { poll_until "${3:-10}" grep -Eq -- "$1" "$2" 2>/dev/null; }

# wait_count N ERE FILE [SECONDS]: until N lines of FILE match ERE (10 s).
wait_count() { poll_until "${4:-10}" _wc_enough "$@"; }
_wc_enough() { [ "$(grep -Ec -- "$2" "$3" 2>/dev/null)" -ge "$1" ]; }

# wait_gone SECONDS CMD...: until CMD fails (a process gone, a file removed).
wait_gone() {
	_wg_s=$1
	shift
	poll_until "$_wg_s" _wg_not "$@"
}
_wg_not() { ! "$@"; }

# wait_events FILE PY_EXPR [SECONDS]: until the Python expression PY_EXPR
# is true over the complete JSON lines of FILE (10 s; 0: look once). It sees
# ev (every event), raw (the lines as bytes), mine (the events of session
# $SID, when SID is set), net (the net.allow/net.deny events) and env (the
# environment). An expression that raises (mine[-1] of no events) is false.
wait_events() {
	SID="${SID:-}" "${PY:-python3}" - "$1" "$2" "${3:-10}" <<'PY'
import json, os, sys, time
end = time.monotonic() + float(sys.argv[3])
env = os.environ
while True:
    try:
        raw = [l for l in open(sys.argv[1], "rb").read().split(b"\n")[:-1] if l.strip()]
        ev = [json.loads(l) for l in raw]
        mine = [e for e in ev if e.get("session") == env["SID"]]
        net = [e for e in ev if e.get("type") in ("net.allow", "net.deny", "net.request")]
        if eval(sys.argv[2]):
            sys.exit(0)
    except Exception:
        pass
    if time.monotonic() >= end:
        sys.exit(1)
    time.sleep(0.05)
PY
}

# check_events FILE PY_EXPR NAME: ok when PY_EXPR (as in wait_events) is true
# over FILE now; the FAIL line shows FILE's last CHECK_TAIL bytes (400), and
# the status is 1.
check_events() {
	if wait_events "$1" "$2" 0; then
		ok "$3"
	else
		fail "$3: $(tail -c "${CHECK_TAIL:-400}" "$1")"
		return 1
	fi
}

# seqcheck FILE SIDS...: what a sink delivered to FILE against the reference
# stream $A: every seq of each session is in FILE at least once, first
# occurrences in order; every line is JSON. Prints "lines N bad N events N
# missing N order N dups N" (dups: seqs delivered again, after a reconnect).
seqcheck() {
	"$PY" - "$A" "$@" <<'PY'
import json, sys
ref_file, got_file, sids = sys.argv[1], sys.argv[2], sys.argv[3:]
ref = {}
for l in open(ref_file):
    e = json.loads(l)
    if e.get("session") in sids and "seq" in e:
        ref.setdefault(e["session"], []).append(e["seq"])
got, bad, lines = {}, 0, 0
for l in open(got_file, encoding="utf-8"):
    lines += 1
    try:
        e = json.loads(l)
    except ValueError:
        bad += 1
        continue
    if e.get("session") in sids and "seq" in e:
        got.setdefault(e["session"], []).append(e["seq"])
missing = order = dups = 0
for s in sids:
    firsts, seen = [], set()
    for q in got.get(s, []):
        if q in seen:
            dups += 1
        else:
            seen.add(q)
            firsts.append(q)
    missing += len(set(ref.get(s, [])) - seen)
    order += firsts != sorted(firsts)
    if not ref.get(s) or ref[s] != list(range(len(ref[s]))):
        missing += 1  # the reference itself must be whole
total = sum(len(v) for v in ref.values())
print("lines %d bad %d events %d missing %d order %d dups %d" % (lines, bad, total, missing, order, dups))
PY
}

# oneline FILE [BYTES]: FILE on one line ('|' for newlines), its first BYTES (600).
oneline() { tr '\n' '|' <"$1" 2>/dev/null | head -c "${2:-600}"; }

# verdict NAME WANT [PROBLEM]: ok if $rc is WANT and PROBLEM is empty. A
# test that runs where a promise does not hold defines not_promised (then a
# miss is a skip saying so, "not promised $(promise_why)") and verdict_note
# (text appended to the ok line).
not_promised() { false; }
verdict_note() { :; }
verdict() {
	if [ "$rc" = "$2" ] && [ -z "${3:-}" ]; then
		ok "$1$(verdict_note)"
	elif not_promised; then
		skip "$1: not promised $(promise_why): exit $rc${3:+; $3}; stdout: $(oneline "$TMPD/out" 300)"
	else
		fail "$1: exit $rc, want $2${3:+; $3}; stdout: $(oneline "$TMPD/out"); stderr: $(oneline "$TMPD/err" 400)"
	fi
}
promise_why() { echo here; }

# finish: the status of the test file.
finish() {
	[ "$FAILS" -eq 0 ]
}

# host_cg DIR [SECONDS]: once DIR/id holds a session id, writes to DIR/cg the
# /proc/PID/cgroup of a process of that session as the host sees it (inside,
# a session sees its own cgroup namespace: "0::/"); 10 s at most. Root only.
host_cg() {
	wait_grep . "$1/id" "${2:-10}" || return 1
	poll_until "${2:-10}" "$PY" -c '
import os, sys
want = ("BPFBOX_SESSION_ID=" + open(sys.argv[1] + "/id").read().strip()).encode()
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        if want in open("/proc/%s/environ" % p, "rb").read().split(b"\0"):
            cg = open("/proc/%s/cgroup" % p).read()
            open(sys.argv[1] + "/cg.new", "w").write(cg)
            os.rename(sys.argv[1] + "/cg.new", sys.argv[1] + "/cg")
            sys.exit(0)
    except OSError:
        pass
sys.exit(1)' "$1"
}
