#!/bin/bash
# Boots the VM matrix (tests/vm/matrix) and leaves each boot's output in
# DIR, for tests/run.sh to print and count:
#   tests/vm/run-matrix.sh BUILD DIR
# DIR/order      the boots, in matrix order, "NAME|DESCRIPTION" a line,
#                written whole before the first boot starts
# DIR/NAME.log   a boot's console and the harness's messages
# DIR/NAME.rc    its status, written last and atomically: its existence
#                says the boot has ended
# DIR/end        "N boots, J at a time, in S s", when every boot has ended
# DIR/pid        this runner's pid, while it runs
# Boots run BPFBOX_VM_JOBS at a time (default 2), each on one vCPU unless
# its line says otherwise: two one-vCPU guests keep both cores busy without
# QEMU's multi-threaded TCG inside a guest (docs/vmtest.md).
# BPFBOX_VM_CELLS="6.12-* limits": only the boots whose names match.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: tests/vm/run-matrix.sh BUILD DIR" >&2; exit 2; }
BUILD=$1 DIR=$2
cd "$(dirname "$0")/../.." || exit 2
mkdir -p "$DIR" || exit 2
echo $$ >"$DIR/pid"

jobs=${BPFBOX_VM_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "BPFBOX_VM_JOBS wants a number >= 1, got '$jobs'" >&2; exit 2; }
# A boot takes 90 to 300 s on a loaded 2-core machine (docs/vmtest.md);
# vmtest's default of 300 s cut a 6.1 Standard boot at load 12, and 1200 s
# a 7.x Full boot (test_audit and full.sh at Full, 1,050 s of it) on
# 2026-11-28 with other work on the machine.
VM_TIMEOUT=${BPFBOX_VM_TIMEOUT:-1800}

# vm_boot NAME KERNEL APPEND CPUS MODULES SCRIPT...: one boot of the matrix.
vm_boot() {
	local name=$1 kernel=$2 append=$3 cpus=$4 modules=$5 log=$DIR/$1.log rc
	shift 5
	BPFBOX_VM_SMP=$cpus BPFBOX_VM_MODULES=$modules tools/vmtest --build "$BUILD" --kernel "$kernel" --hostroot \
		--timeout "$VM_TIMEOUT" --append "$append" -- "$@" >"$log" 2>&1
	rc=$?
	# A guest kernel that locked up (TCG on a loaded host; the matrix
	# panics on a soft lockup rather than hang) boots once more: the
	# lockup stays in the log, the second boot's results count.
	# So does one whose kernel died before the test started (once, a 7.3
	# guest under TCG: "Fatal exception in interrupt" 1.5 s into the boot).
	if [ "$rc" -ne 0 ] && { grep -Eq 'soft lockup - CPU|self-detected stall on CPU' "$log" ||
		! grep -q '^vmtest: kernel .* running ' "$log"; }; then
		mv "$log" "$log.lockup"
		BPFBOX_VM_SMP=$cpus BPFBOX_VM_MODULES=$modules tools/vmtest --build "$BUILD" --kernel "$kernel" --hostroot \
			--timeout "$VM_TIMEOUT" --append "$append" -- "$@" >"$log" 2>&1
		rc=$?
		{
			cat "$log.lockup"
			echo "# vm: $name: the guest kernel locked up or did not boot (above); booting it once more"
			cat "$log"
		} >"$log.both" && mv "$log.both" "$log"
	fi
	echo "$rc" >"$DIR/$name.rc.new" && mv "$DIR/$name.rc.new" "$DIR/$name.rc"
}

# The boots this run makes, each with its vCPUs, listed before any starts.
cells=${BPFBOX_VM_CELLS:-*}
read -ra cellv <<<"$cells" # no pathname expansion of the globs
boots=()
while IFS='|' read -r name kernel append script cpus modules; do
	case "$name" in '#'* | '') continue ;; esac
	hit=0
	for c in "${cellv[@]}"; do
		# shellcheck disable=SC2053  # a glob on purpose
		[[ $name == $c ]] && hit=1
	done
	[ "$hit" = 1 ] || continue
	if [ -z "$cpus" ]; then
		if [ "$jobs" -gt 1 ]; then cpus=1; else cpus=2; fi
	fi
	boots+=("$name|$kernel|$append|$script|$cpus|${modules:-}")
	echo "$name|kernel $kernel, $append, $cpus vCPU"
done <tests/vm/matrix >"$DIR/order.new"
mv "$DIR/order.new" "$DIR/order"

start=$(date +%s)
for b in "${boots[@]}"; do
	IFS='|' read -r name kernel append script cpus modules <<<"$b"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	# shellcheck disable=SC2086  # the script and its arguments
	vm_boot "$name" "$kernel" "$append" "$cpus" "$modules" $script &
done
wait
echo "${#boots[@]} boots, $jobs at a time, in $(($(date +%s) - start)) s" >"$DIR/end"
rm -f "$DIR/pid"
