#!/bin/bash
# The host tax of each audit attach mode (docs/ARCHITECTURE.md, "Audit
# attach modes"): a process outside every session runs the open+close loop
# and the getppid loop (a syscall we never audit) with no agent of ours,
# then with a private daemon forced into each mode (BPFBOX_AUDIT_ATTACH)
# and NSESS sessions open, then with no agent again. A mode this kernel
# does not load gives a row saying why.
#
#   bench/attach.sh BIN LOOPS FILE N_OPEN REPS NSESS
#
# One line per measurement on stdout, tab-separated:
#   mode  loop  ns-per-op  (or: mode  why  reason)
# Run by bench/run.sh on the host, and by hand in a VM (docs/vmtest.md)
# for the kernels where trampolines load.
set -u
BIN=$1 LOOPS=$2 FILE=$3 N_OPEN=$4 REPS=$5 NSESS=$6
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
T=$(mktemp -d /tmp/bpfbox-attach.XXXXXX)
PIN=/sys/fs/bpf/bpfbox-attach-$$
DCG=$CG2/bpfbox-attach-$$
DPID='' PIDS=()

cleanup() {
	local p
	for p in ${PIDS[@]+"${PIDS[@]}"} $DPID; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	"$BIN" daemon --cleanup --socket "$T/s.sock" --pin-dir "$PIN" --cgroup-parent "$DCG" \
		>/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

loops() { # label
	local _
	for _ in $(seq "$REPS"); do
		printf '%s\topen\t%s\n' "$1" "$("$LOOPS" open "$FILE" "$N_OPEN")"
		printf '%s\tgetppid\t%s\n' "$1" "$("$LOOPS" getppid "$((N_OPEN * 10))")"
	done
}

running() {
	"$BIN" sessions --json --socket "$T/s.sock" 2>/dev/null |
		jq '[.[] | select(.state == "running")] | length' 2>/dev/null || echo 0
}

# Polls for up to $1 seconds until the command succeeds.
poll() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.1
	done
}
enough() { [ "$(running)" -ge "$NSESS" ]; }
ready() { grep -q ready "$T/d.err" || ! kill -0 "$DPID" 2>/dev/null; }

mode() { # fexit|tracepoint
	local p got
	: >"$T/d.err"
	BPFBOX_AUDIT_ATTACH=$1 "$BIN" daemon --socket "$T/s.sock" --pin-dir "$PIN" \
		--cgroup-parent "$DCG" --audit "$T/a.jsonl" 2>"$T/d.err" </dev/null &
	DPID=$!
	poll 30 ready
	for _ in $(seq "$NSESS"); do
		"$BIN" run -q --timeout 0 --daemon-socket "$T/s.sock" -w "$(dirname "$FILE")" \
			-- sleep 1000000 >/dev/null 2>>"$T/r.err" </dev/null &
		PIDS+=("$!")
	done
	poll 300 enough
	got=$(grep -m1 -o '"bpf_audit_attach":"[a-z]*"' "$T/a.jsonl" | cut -d'"' -f4)
	if [ "$got" = "$1" ] && enough; then
		loops "$1"
	else
		printf '%s\twhy\t%s\n' "$1" "$(grep -m1 -o '"not_enforced":\[[^]]*' "$T/a.jsonl" |
			grep -o 'audit programs: [^";]*' || echo "the daemon did not start $NSESS sessions")"
	fi
	for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -TERM "$p" 2>/dev/null; done
	for p in ${PIDS[@]+"${PIDS[@]}"}; do wait "$p" 2>/dev/null; done
	PIDS=()
	kill -TERM "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=''
	"$BIN" daemon --cleanup --socket "$T/s.sock" --pin-dir "$PIN" --cgroup-parent "$DCG" \
		>/dev/null 2>&1
	rm -f "$T/a.jsonl"
}

loops none
mode fexit
loops none
mode tracepoint
loops none
