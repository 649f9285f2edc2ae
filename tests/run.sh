#!/bin/bash
# Runs the test suites and prints one closing line "N passed, N failed, N
# skipped". BPFBOX_HOST_SUITES (paths of host suites, space-separated) runs only those host
# suites. Suites: unit (cmocka binaries), host (tests/host/*.sh on this
# kernel), vm (tests/vm/matrix: one VM boot per kernel x level, each running
# several suites).
set -uo pipefail

BUILD=build
ONLY=unit,host,vm
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	*) echo "usage: tests/run.sh [--build DIR] [--only unit,host,vm]" >&2; exit 2 ;;
	esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=$(cd "$BUILD" && pwd)
export BPFBOX="$BUILD/bin/bpfbox" BPFBOX_BUILD="$BUILD" PATH="$BUILD/bin:$PATH"

passed=0 failed=0 skipped=0 broken=()
LOG=$(mktemp)
CLEAN=(rm -f "$LOG")
cleanup() {
	"${CLEAN[@]}"
	[ -n "${VMPID:-}" ] && kill -- -"$VMPID" 2>/dev/null
	[ -n "${VMOWN:-}" ] && rm -rf "$VMOWN"
	[ -n "${CGPARENT:-}" ] && rmdir "$CGPARENT" 2>/dev/null
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# count SUITE NAME: tallies the result lines of one test from $LOG.
count() {
	local p f s rc=$3
	p=$(grep -Ec '^(ok - |\[       OK \] )' "$LOG")
	f=$(grep -Ec '^(FAIL - |\[  FAILED  \] [^0-9])' "$LOG")
	# Every skip says why in a "skip - NAME: why" line (a unit test through
	# skip_why, tests/unit/skip.h, or one line for a group it does not run):
	# those lines count. cmocka's skip() prints "[  SKIPPED ] NAME" (its
	# summary line starts with a number): more of those than why-lines is a
	# skip that said nothing, a failure.
	local cm
	s=$(grep -Ec '^skip - ' "$LOG")
	cm=$(grep -Ec '^\[  SKIPPED \] [^0-9]' "$LOG")
	if [ "$cm" -gt "$s" ]; then
		echo "FAIL - $1/$2: $((cm - s)) test(s) skipped without a 'skip - NAME: why' line"
		f=$((f + 1))
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	# A suite that calls a helper that does not exist (dash prints the suite,
	# its line and "check: not found") checks nothing there: a failure.
	nf=$(grep -Ec '^(/opt/bpfbox/)?tests/[^:]*\.sh: [0-9]+: .*: not found$' "$LOG")
	if [ "$nf" -gt 0 ]; then
		failed=$((failed + nf)) f=$((f + nf))
		echo "FAIL - $1/$2 ran $nf command(s) that do not exist:"
		grep -E '^(/opt/bpfbox/)?tests/[^:]*\.sh: [0-9]+: .*: not found$' "$LOG" | head -5
	fi
	# A test that exits non-zero without a FAIL line still fails.
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		failed=$((failed + 1))
		echo "FAIL - $1/$2 exited $rc without a FAIL line"
	fi
	[ "$rc" -ne 0 ] && broken+=("$1/$2")
}

want() { [[ ",$ONLY," == *",$1,"* ]]; }

if want unit; then
	for t in "$BUILD"/tests/test_*; do
		[ -x "$t" ] || continue
		echo "== unit: $(basename "$t")"
		"$t" 2>&1 | tee "$LOG"
		count unit "$(basename "$t")" "${PIPESTATUS[0]}"
	done
fi

if want host; then
	# Sessions run embedded by the tests get a cgroup parent of this run's
	# own, not the <cgroup2>/bpfbox a production daemon on this host uses
	# (tests that need their own set it themselves; lib.sh keeps the
	# tests off the default daemon socket).
	CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -z "${BPFBOX_CGROUP_PARENT:-}" ] && [ -n "$CG2" ] && [ "$(id -u)" = 0 ]; then
		export BPFBOX_CGROUP_PARENT="$CG2/bpfbox-run-$$"
		CGPARENT=$BPFBOX_CGROUP_PARENT
	fi
	# The stream validator's packages (make deps installs them): make
	# test-host on a fresh tree needs them before test_ask, the first suite
	# to validate a stream. Quick when they are there; says what is missing.
	tools/npm-deps.sh >/dev/null || true
	for t in ${BPFBOX_HOST_SUITES:-tests/host/test_*.sh}; do
		echo "== host: $(basename "$t")"
		t0=$(date +%s)
		sh "$t" 2>&1 | tee "$LOG"
		count host "$(basename "$t")" "${PIPESTATUS[0]}"
		echo "# $(basename "$t"): $(($(date +%s) - t0)) s"
	done
fi

if want vm; then
	# The boots run in tests/vm/run-matrix.sh (its files are listed there),
	# after the host suites: beside them, even as SCHED_IDLE, the guests
	# made them three times slower on this 2-core host (test_projects 233 s
	# against 77) and their timed checks fail (docs/vmtest.md). Each boot
	# is printed whole, in matrix order, once it and those before it ended.
	VMDIR=$(mktemp -d) VMOWN=$VMDIR
	setsid tests/vm/run-matrix.sh "$BUILD" "$VMDIR" >"$VMDIR/runner.log" 2>&1 </dev/null &
	VMPID=$!
	vm_alive() {
		[ -e "$VMDIR/end" ] && return 0
		kill -0 "$VMPID" 2>/dev/null
	}
	while [ ! -e "$VMDIR/order" ] && vm_alive; do sleep 1; done
	[ -e "$VMDIR/order" ] || { echo "FAIL - vm: the matrix did not start: $(tail -3 "$VMDIR/runner.log" 2>/dev/null)"; failed=$((failed + 1)); }
	nboots=0
	while IFS='|' read -r n desc; do
		nboots=$((nboots + 1))
		while [ ! -e "$VMDIR/$n.rc" ] && vm_alive; do sleep 2; done
		if [ ! -e "$VMDIR/$n.rc" ]; then
			echo "FAIL - vm/$n: the matrix ended without this boot's status"
			failed=$((failed + 1)) broken+=("vm/$n")
			continue
		fi
		echo "== vm: $n ($desc)"
		tee "$LOG" <"$VMDIR/$n.log"
		count vm "$n" "$(cat "$VMDIR/$n.rc")"
	done < <(cat "$VMDIR/order" 2>/dev/null)
	echo "# vm: $(cat "$VMDIR/end" 2>/dev/null || echo "$nboots boots")"
fi

echo
[ ${#broken[@]} -gt 0 ] && echo "failing: ${broken[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
