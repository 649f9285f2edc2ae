#!/bin/bash
# What --changes review adds to a session's start, in two parts and paired
# (docs/benchmarks.md section 10): root, bpftrace. N rounds, each a session
# of `bpfbox run -q --no-daemon -w WS --changes direct -- /bin/true` then
# the same with review; the kernel's tracepoints time, per session,
# bpfbox's exec to the session's fork ("before": its set-up, the set taken)
# and that fork to the exec of /bin/true ("child": the session's set-up;
# the fork is the session's, CLONE_NEWNS: not bpfbox's threads nor, for an
# unprivileged user, the helper it forks first), and the command's exit to
# bpfbox's ("end": the set scanned, the empty one handed to its helper,
# the session's teardown). Printed: the medians of each
# round's review − direct, which a drift of the host between rounds
# cancels out of, and the quartiles of the total's. Nothing is timed from
# user space: no probe inside bpfbox slows what it measures.
#
# A review session takes the set and overlay the last one's keeper made
# (userspace/sandbox/changes_warm.c) unless BPFBOX_CHANGES_WARM=0 (the
# overlay made at the start). BENCH_PAIRED_USER=UID runs the sessions as
# that user (a user namespace's, its own copy of WS); BENCH_PAIRED_LABEL
# names the printed line ("paired"); BENCH_PAIRED_ARGS adds options to
# both modes' `bpfbox run` (`--limits-via rlimit`: no v1 cgroup's
# migration, whose RCU grace period, 3 to 15 ms, is most of root's spread
# on a hybrid host). BENCH_PAIRED_FIRST=cold makes every review session
# its workspace's first (`bpfbox prepare --release WS` before each round:
# no keeper); =prepared, the first after `bpfbox prepare WS` (released,
# then prepared, before each round).
#
#   bench/changes_paired.sh BPFBOX WS [N]
set -euo pipefail

BIN=$(realpath "$1")
WS=$2
N=${3:-200}
LABEL=${BENCH_PAIRED_LABEL:-paired}
AS=${BENCH_PAIRED_USER:-}
read -r -a ARGS <<<"${BENCH_PAIRED_ARGS:-}"
if [ "$(id -u)" != 0 ] || ! command -v bpftrace >/dev/null; then
	echo "bench/changes_paired.sh: needs root and bpftrace (make deps installs it); not measured" >&2
	exit 0
fi
# bpftrace 0.17 finds the tracepoints in tracefs, which a fresh host may not have mounted.
[ -d /sys/kernel/tracing/events ] || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
T=$(mktemp -d /tmp/bpfbox-paired.XXXXXX)
trap '[ -z "$BT" ] || kill "$BT" 2>/dev/null; rm -rf "$T"' EXIT
export BPFBOX_CHANGES_DIR=$T/sets
RUNAS=()
if [ -n "$AS" ]; then
	chmod 755 "$T"
	cp -a "$WS" "$T/ws"
	mkdir -p "$T/sets"
	chown -R "$AS:$AS" "$T/ws" "$T/sets"
	WS=$T/ws
	RUNAS=(setpriv --reuid="$AS" --regid="$AS" --clear-groups)
fi

cat >"$T/seg.bt" <<EOF
BEGIN { printf("ready\n"); }
tracepoint:sched:sched_process_exec /str(args->filename) == "$BIN"/ { @x[pid] = nsecs; @top[pid] = 1; }
tracepoint:task:task_newtask /@top[pid] == 1 && (args->clone_flags & 0x20000)/ {
	@top[pid] = 2; @f = nsecs; @t0 = @x[pid];
}
tracepoint:sched:sched_process_exec /str(args->filename) == "/bin/true" && @f/ {
	@pre = (@f - @t0) / 1000; @child = (nsecs - @f) / 1000; @f = 0; @cmd[pid] = 1;
}
tracepoint:sched:sched_process_exit /@cmd[pid] && pid == tid/ { @e = nsecs; delete(@cmd[pid]); }
tracepoint:sched:sched_process_exit /@top[pid] == 2 && pid == tid && @e/ {
	printf("seg %d %d %d\n", @pre, @child, (nsecs - @e) / 1000); @e = 0; delete(@top[pid]);
}
EOF
BT=
bpftrace "$T/seg.bt" >"$T/out" 2>"$T/err" &
BT=$!
# BEGIN runs once every probe is attached (a few seconds): waited for, 30 s at most.
for _ in $(seq 300); do
	grep -qx ready "$T/out" 2>/dev/null && break
	sleep 0.1
done
grep -qx ready "$T/out" || {
	echo "bench/changes_paired.sh: bpftrace did not attach: $(head -c 200 "$T/err")" >&2
	exit 1
}
FIRST=${BENCH_PAIRED_FIRST:-}
for _ in $(seq "$N"); do
	if [ -n "$FIRST" ]; then
		"${RUNAS[@]}" "$BIN" prepare --release "$WS" >/dev/null 2>&1 || true
		[ "$FIRST" != prepared ] || "${RUNAS[@]}" "$BIN" prepare "$WS" >/dev/null 2>&1 || true
		sleep 0.03
	fi
	for m in direct review; do
		"${RUNAS[@]}" "$BIN" run -q --no-daemon -w "$WS" --changes "$m" "${ARGS[@]}" -- /bin/true </dev/null >/dev/null 2>&1 || true
		sleep 0.03
	done
done
sleep 0.5
kill -INT "$BT"
wait "$BT" || true
BT=
python3 - "$T/out" "$N" "$LABEL" <<'PY'
import statistics as st, sys
v = [tuple(map(int, l.split()[1:])) for l in open(sys.argv[1]) if l.startswith("seg ")]
if len(v) < 4 or len(v) % 2:
    sys.exit("bench/changes_paired.sh: %d sessions traced, not 2 a round" % len(v))
pre = [v[i + 1][0] - v[i][0] for i in range(0, len(v), 2)]
child = [v[i + 1][1] - v[i][1] for i in range(0, len(v), 2)]
end = [v[i + 1][2] - v[i][2] for i in range(0, len(v), 2)]
tot = [a + b for a, b in zip(pre, child)]
q, qe = st.quantiles(tot, n=4), st.quantiles(end, n=4)
print(sys.argv[3] + "\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f" % (
    len(tot), st.median(pre), st.median(child), st.median(tot), q[0], q[2], st.median(end), qe[0], qe[2]))
PY
