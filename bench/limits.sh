#!/bin/bash
# Limits under pressure (docs/limits.md): how fast a session is paused after
# an OOM kill and after its disk limit, and what the disk monitor costs.
#
#   bench/limits.sh BIN OUTDIR RUNS SECONDS WS_BIG
#
# BIN: the bpfbox binary; RUNS: OOM and disk pauses timed; SECONDS: the
# length of each steady-write measurement; WS_BIG: a workspace of many files
# (bench/run.sh makes 100,000 in 100 directories). Root only (the sessions
# need cgroups to pause). Writes OUTDIR/limits.tsv, one row per result:
#   oom    ASKED_MS FROZEN_MS     (from the kernel's OOM kill count)
#   disk   FROZEN_MS              (from the start of the crossing write)
#   cpu    WS RATE WRITES CPU_NS WALL_NS SCAN_CPU_NS
#   du     NS                     (one `du -s` of WS_BIG)
#   bomb   BEFORE_MS DURING_MS    (5 execs of /bin/true on the host, before
#                                 and during a fork bomb held at --pids 16)
# and OUTDIR/limits.why when something could not run. bench/run.sh makes
# section 6 of docs/benchmarks.md from it.
set -uo pipefail
export LC_ALL=C

BIN=$1 OUT=$2 RUNS=$3 SECS=$4 WS_BIG=$5
ROOT=$(cd "$(dirname "$0")/.." && pwd)
H="python3 $ROOT/tests/helpers/limits.py"
TSV=$OUT/limits.tsv
WHY=$OUT/limits.why
: >"$TSV"
rm -f "$WHY"
T=$(mktemp -d /tmp/bpfbox-blim.XXXXXX)
chmod 755 "$T"
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
export BPFBOX_CGROUP_PARENT="$CG2/bpfbox-blim-$$"
cleanup() {
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rmdir "$BPFBOX_CGROUP_PARENT"/* "$BPFBOX_CGROUP_PARENT" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

why() {
	echo "$*" >"$WHY"
	exit 0
}
[ "$(id -u)" = 0 ] || why "needs root: the sessions need cgroups to be paused"
[ -n "$CG2" ] || why "no cgroup2 mount: nothing to pause a session with"
command -v python3 >/dev/null || why "needs python3"

# wait_file FILE SECONDS [ERE]
wait_file() {
	local n=$(($2 * 100))
	while [ $n -gt 0 ]; do
		if [ -n "${3:-}" ]; then
			grep -Eq -- "$3" "$1" 2>/dev/null && return 0
		elif [ -s "$1" ]; then
			return 0
		fi
		sleep 0.01
		n=$((n - 1))
	done
	return 1
}
v2cg() { echo "$CG2$(awk -F: '$1 == "0" { print $3 }' "$1")"; }
memfile() { # the session's memory.events (v2) or memory.oom_control (v1)
	local mnt p
	mnt=$(awk '$3 == "cgroup" && ("," $4 ",") ~ /,memory,/ { print $2; exit }' /proc/mounts)
	if [ -n "$mnt" ]; then
		p=$(awk -F: '("," $2 ",") ~ /,memory,/ { print $3 }' "$1")
		echo "$mnt$p/memory.oom_control"
	else
		echo "$(v2cg "$1")/memory.events"
	fi
}
# ends a paused session: bpfbox kill, then its run's exit
end_session() { # id pid
	"$BIN" kill "$1" >/dev/null 2>&1
	wait "$2" 2>/dev/null
}

# --- pause latency after an OOM kill and after the disk limit ---------------
# pause_run KIND NOTICE OOMFILE|- LATENCY-ARGS -- RUN-ARGS...: one session
# (its command writes cg and id first) until bpfbox run prints NOTICE; an
# observer polls its cgroup; `limits.py KIND_latency` makes the row.
pause_run() {
	local kind=$1 notice=$2 oomf=$3 lat=$4 pid wpid L
	shift 5
	rm -rf "${WS:?}"/* "$T"/w.*
	"$BIN" run -q -w "$WS" --ro "$ROOT/tests/helpers" "$@" >/dev/null 2>"$T/$kind.err" &
	pid=$!
	if ! wait_file "$WS/id" 20; then
		echo "$kind run $i: no session: $(head -c 200 "$T/$kind.err")" >>"$OUT/limits.log"
		kill -9 $pid 2>/dev/null
		return
	fi
	[ "$oomf" = - ] || oomf=$(memfile "$WS/cg")
	$H pausewatch "$oomf" "$(v2cg "$WS/cg")" "$T/w.$kind" &
	wpid=$!
	if wait_file "$T/$kind.err" 30 "$notice"; then
		wait $wpid
		L=$($H "${kind}_latency" $lat "$T/w.$kind")
		if [ -n "$L" ]; then echo "$kind $L" >>"$TSV"; else echo "$kind run $i: not timed" >>"$OUT/limits.log"; fi
	else
		echo "$kind run $i: no pause: $(tail -c 300 "$T/$kind.err")" >>"$OUT/limits.log"
		kill $wpid 2>/dev/null
	fi
	end_session "$(cat "$WS/id")" $pid
}
WS=$T/ws
START='cat /proc/self/cgroup > cg; echo $BPFBOX_SESSION_ID > id; sleep 0.5'
mkdir -p "$WS" "$T/log"
for i in $(seq 1 "$RUNS"); do
	pause_run oom 'paused: out of memory' memory "" -- --memory 48 -- sh -c "$START; $H hog"
done
for i in $(seq 1 "$RUNS"); do
	rm -f "$T/log/dl"
	pause_run disk 'paused: the workspace grew' - "$T/log/dl 8" -- --rw "$T/log" --disk 8 -- \
		sh -c "$START; $H writer big 24 $T/log/dl"
done

# --- the disk monitor's CPU under steady writes -----------------------------
# bpfbox run's own CPU (its threads' schedstat run time; the session's
# processes are children, not counted) while the command writes at RATE
# open/pwrite/close per second; the writes start 3 s in, after the initial
# scan, whose CPU is the whole run's up to then (start-up included).
cpu_ns() { # pid
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }'
}
WS1=$T/ws1
for ws in one big; do
	if [ $ws = one ]; then
		mkdir -p "$WS1"
		echo data >"$WS1/file"
		w=$WS1
	else
		w=$WS_BIG
	fi
	for rate in 0 100 1000; do
		size=$((rate >= 1000 ? 4096 : 65536))
		rm -rf "$w/steady" "$T"/m.*
		"$BIN" run -q -w "$w" --ro "$ROOT/tests/helpers" --rw "$T" --disk 100000 -- \
			$H steady "$w/steady" 50 $size $rate "$SECS" "$T/m" 3 >"$T/steady.out" 2>"$T/steady.err" &
		pid=$!
		if ! wait_file "$T/m.w0" 20; then
			echo "cpu $ws $rate: no start: $(head -c 200 "$T/steady.err")" >>"$OUT/limits.log"
			kill -9 $pid 2>/dev/null
			continue
		fi
		c0=$(cpu_ns $pid) t0=$(date +%s%N)
		wait_file "$T/m.w1" $((SECS + 20))
		c1=$(cpu_ns $pid) t1=$(date +%s%N)
		wait $pid
		echo "cpu $ws $rate $(cat "$T/steady.out") $((c1 - c0)) $((t1 - t0)) $c0" >>"$TSV"
	done
	rm -rf "$w/steady"
done
for i in 1 2 3 4 5; do
	t0=$(date +%s%N)
	du -s "$WS_BIG" >/dev/null
	echo "du $(($(date +%s%N) - t0))" >>"$TSV"
done

# --- the host during a fork bomb held at pids.max ---------------------------
# (was a pass/fail threshold in tests/host/test_limits.sh; a measurement here)
execs_ms() {
	local t0
	t0=$(date +%s%N)
	sh -c 'for i in 1 2 3 4 5; do /bin/true; done'
	echo $((($(date +%s%N) - t0) / 1000000))
}
for i in $(seq 1 "$RUNS"); do
	rm -rf "${WS:?}"/*
	before=$(execs_ms)
	"$BIN" run -q -w "$WS" --pids 16 -- sh -c 'echo x > id; i=0; while [ $i -lt 200 ]; do
		(sleep 3 &) 2>>forkerr; i=$((i + 1)); done; sleep 2' >/dev/null 2>&1 &
	pid=$!
	if wait_file "$WS/forkerr" 30 'fork|unavailable'; then
		echo "bomb $before $(execs_ms)" >>"$TSV"
	else
		echo "bomb run $i: the bomb never reached its limit" >>"$OUT/limits.log"
	fi
	wait $pid 2>/dev/null
done
