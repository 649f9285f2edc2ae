#!/bin/bash
# Runs the test suites and prints one closing line "N passed, N failed, N
# skipped". Suites: unit (cmocka binaries), host (tests/host/*.sh on this
# kernel), vm (tests/vm/matrix: one VM boot per kernel command line).
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
trap 'rm -f "$LOG"' EXIT

# count SUITE NAME: tallies the result lines of one test from $LOG.
count() {
	local p f s rc=$3
	p=$(grep -Ec '^(ok - |\[       OK \] )' "$LOG")
	f=$(grep -Ec '^(FAIL - |\[  FAILED  \] [^0-9])' "$LOG")
	s=$(grep -c '^skip - ' "$LOG")
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
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
		trap 'rm -f "$LOG"; rmdir "$BPFBOX_CGROUP_PARENT" 2>/dev/null' EXIT
	fi
	for t in tests/host/test_*.sh; do
		echo "== host: $(basename "$t")"
		sh "$t" 2>&1 | tee "$LOG"
		count host "$(basename "$t")" "${PIPESTATUS[0]}"
	done
fi

if want vm; then
	while IFS='|' read -r name append script cpus modules; do
		case "$name" in '#'* | '') continue ;; esac
		echo "== vm: $name ($append)"
		BPFBOX_VM_SMP=${cpus:-2} BPFBOX_VM_MODULES=${modules:-} tools/vmtest --build "$BUILD" --hostroot --append "$append" \
			-- $script 2>&1 | tee "$LOG"
		rc=${PIPESTATUS[0]}
		# A guest kernel that locked up (TCG on a loaded host; the matrix
		# panics on a soft lockup rather than hang) boots once more: the
		# lockup stays in the log, the second boot's results count.
		if [ "$rc" -ne 0 ] && grep -Eq 'soft lockup - CPU|self-detected stall on CPU' "$LOG"; then
			echo "# vm: $name: the guest kernel locked up (above); booting it once more"
			BPFBOX_VM_SMP=${cpus:-2} BPFBOX_VM_MODULES=${modules:-} tools/vmtest --build "$BUILD" --hostroot \
				--append "$append" -- $script 2>&1 | tee "$LOG"
			rc=${PIPESTATUS[0]}
		fi
		count vm "$name" "$rc"
	done < tests/vm/matrix
fi

echo
[ ${#broken[@]} -gt 0 ] && echo "failing: ${broken[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
