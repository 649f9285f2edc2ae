#!/bin/bash
# Runs the test suites and prints one closing line "N passed, N failed, N
# skipped". BPFBOX_HOST_SUITES (paths of host suites, space-separated) runs only those host
# suites; BPFBOX_TEST_JOBS (default 2 with two CPUs) how many run at
# once. Suites: unit (cmocka binaries), host (tests/host/*.sh on this
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
VMDIR=$(mktemp -d) # the VM boots' logs and statuses
trap 'rm -f "$LOG"; rm -rf "$VMDIR"' EXIT

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
		trap 'rm -f "$LOG"; rm -rf "$VMDIR"; rmdir "$BPFBOX_CGROUP_PARENT" 2>/dev/null' EXIT
	fi
	# The stream validator's packages (make deps installs them): make
	# test-host on a fresh tree needs them before test_ask, the first suite
	# to validate a stream. Quick when they are there; says what is missing.
	tools/npm-deps.sh >/dev/null || true
	# Suites run BPFBOX_TEST_JOBS at a time (default 2 where there are two
	# CPUs): each uses about one core (docs/vmtest.md, "Time"), and each
	# keeps to what it made (its own directories, cgroups, namespaces and
	# programs: a production daemon may run beside it too), and each gets
	# a cgroup parent of its own beside this run's. Longest first, by their
	# seconds in the CI (docs/vmtest.md), so the two end close together; the logs are
	# printed whole, in that order, as soon as a suite and the ones before
	# it have ended.
	hjobs=${BPFBOX_TEST_JOBS:-$(($(nproc) >= 2 ? 2 : 1))}
	[[ $hjobs =~ ^[1-9][0-9]*$ ]] || { echo "BPFBOX_TEST_JOBS wants a number >= 1, got '$hjobs'" >&2; exit 2; }
	HOSTDIR=$VMDIR/host
	mkdir -p "$HOSTDIR"
	suites=()
	for t in tests/host/test_race.sh tests/host/test_projects.sh tests/host/test_limits.sh \
		tests/host/test_packaging.sh tests/host/test_runtime.sh ${BPFBOX_HOST_SUITES:-tests/host/test_*.sh}; do
		case " ${BPFBOX_HOST_SUITES:-tests/host/test_*.sh} " in
		*" $t "* | *"tests/host/test_*.sh"*) [ -e "$t" ] || continue ;;
		*) continue ;;
		esac
		case " ${suites[*]} " in *" $t "*) continue ;; esac
		suites+=("$t")
	done
	# host_suite I SUITE: runs one suite, its output in $HOSTDIR/I.log, its
	# seconds in I.s and its status in I.rc (written last: the suite ended).
	host_suite() {
		local i=$1 t=$2 t0 rc cg=""
		t0=$(date +%s)
		[ -n "$CG_BASE" ] && cg="$CG_BASE-$i"
		BPFBOX_CGROUP_PARENT=${cg:-${BPFBOX_CGROUP_PARENT:-}} sh "$t" >"$HOSTDIR/$i.log" 2>&1
		rc=$?
		echo $(($(date +%s) - t0)) >"$HOSTDIR/$i.s"
		echo "$rc" >"$HOSTDIR/$i.rc.new" && mv "$HOSTDIR/$i.rc.new" "$HOSTDIR/$i.rc"
	}
	CG_BASE=""
	[ -n "${BPFBOX_CGROUP_PARENT:-}" ] && [ "$hjobs" -gt 1 ] && CG_BASE=$BPFBOX_CGROUP_PARENT
	hshown=0
	host_done() {
		local t
		while [ "$hshown" -lt "${#suites[@]}" ] && [ -e "$HOSTDIR/$hshown.rc" ]; do
			t=${suites[$hshown]}
			echo "== host: $(basename "$t")"
			tee "$LOG" <"$HOSTDIR/$hshown.log"
			count host "$(basename "$t")" "$(cat "$HOSTDIR/$hshown.rc")"
			echo "# $(basename "$t"): $(cat "$HOSTDIR/$hshown.s") s"
			hshown=$((hshown + 1))
		done
	}
	# The suites that keep a core busy by themselves (2,500 runs of
	# bpfbox, real toolchains, a package's build) each took twice their
	# time beside one another: one of them runs at a time, beside the
	# others.
	heavy=" tests/host/test_race.sh tests/host/test_projects.sh tests/host/test_packaging.sh "
	heavy_at=-1
	# The suites that route a test network of 198.51.100.0/24 or
	# 203.0.113.0/24 to a namespace of their own (tests/host/netfix.sh
	# takes a whole /24, test_egress_attacks a free /29 of it, test_escape
	# a free /30) run one at a time too: side by side, a smaller block
	# added outranks the larger one, and the other suite's server is not
	# the one answering (on 2026-12-01 test_egress_unpriv's upstream
	# refused, test_egress_attacks started just before it; on 2026-12-02
	# test_escape's /30 lay inside test_egress_attacks' /29 and its HTTP
	# server answered; alone each passed).
	nets=" tests/host/test_egress_attacks.sh tests/host/test_egress_unpriv.sh tests/host/test_http_rules.sh tests/host/test_secrets.sh tests/host/test_escape.sh "
	net_at=-1
	pending=("${!suites[@]}")
	host_start=$(date +%s)
	while [ "$hshown" -lt "${#suites[@]}" ]; do
		[ "$heavy_at" -ge 0 ] && [ -e "$HOSTDIR/$heavy_at.rc" ] && heavy_at=-1
		[ "$net_at" -ge 0 ] && [ -e "$HOSTDIR/$net_at.rc" ] && net_at=-1
		started=0
		if [ "$(jobs -rp | wc -l)" -lt "$hjobs" ]; then
			for k in "${!pending[@]}"; do
				i=${pending[$k]}
				if [[ $heavy == *" ${suites[$i]} "* ]]; then
					[ "$heavy_at" -ge 0 ] && continue
					heavy_at=$i
				fi
				if [[ $nets == *" ${suites[$i]} "* ]]; then
					[ "$net_at" -ge 0 ] && continue
					net_at=$i
				fi
				host_suite "$i" "${suites[$i]}" &
				unset "pending[$k]"
				started=1
				break
			done
		fi
		[ "$started" = 1 ] && continue
		wait -n 2>/dev/null || sleep 0.2
		host_done
	done
	echo "# host: ${#suites[@]} suites, $hjobs at a time, in $(($(date +%s) - host_start)) s"
	[ -n "$CG_BASE" ] && for i in "${!suites[@]}"; do rmdir "$CG_BASE-$i" 2>/dev/null; done
fi

# vm_boot NAME KERNEL APPEND CPUS MODULES SCRIPT...: one boot of the matrix,
# its output in $VMDIR/NAME.log and its status in $VMDIR/NAME.rc.
vm_boot() {
	local name=$1 kernel=$2 append=$3 cpus=$4 modules=$5 log=$VMDIR/$1.log rc
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
	# Written last and atomically: its existence says the boot has ended.
	echo "$rc" >"$VMDIR/$name.rc.new" && mv "$VMDIR/$name.rc.new" "$VMDIR/$name.rc"
}

if want vm; then
	# Boots run BPFBOX_VM_JOBS at a time (default 2), each on one vCPU
	# unless its line says otherwise: two one-vCPU guests keep both cores
	# busy without QEMU's multi-threaded TCG inside a guest (docs/vmtest.md).
	# Their logs are printed whole, in matrix order, as soon as a boot and
	# all the boots before it have ended.
	jobs=${BPFBOX_VM_JOBS:-2}
	# A boot takes 90 to 300 s on a loaded 2-core machine (docs/vmtest.md);
	# vmtest's default of 300 s cut a 6.1 Standard boot at load 12, and
	# 1200 s a 7.x Full boot (test_audit and full.sh at Full, 1,050 s of
	# it) on 2026-11-28 with other work on the machine.
	VM_TIMEOUT=${BPFBOX_VM_TIMEOUT:-1800}
	[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "BPFBOX_VM_JOBS wants a number >= 1, got '$jobs'" >&2; exit 2; }
	# BPFBOX_VM_CELLS="6.12-* limits": only the boots whose names match.
	cells=${BPFBOX_VM_CELLS:-*}
	names=() shown=0
	# show_done: prints the logs of the boots that have ended, in matrix
	# order, up to the first one still running.
	show_done() {
		local n
		while [ "$shown" -lt "${#names[@]}" ]; do
			n=${names[$shown]}
			[ -e "$VMDIR/$n.rc" ] || return 0
			echo "== vm: $n (${descs[$shown]})"
			tee "$LOG" <"$VMDIR/$n.log"
			count vm "$n" "$(cat "$VMDIR/$n.rc")"
			shown=$((shown + 1))
		done
	}
	descs=()
	vm_start=$(date +%s)
	while IFS='|' read -r name kernel append script cpus modules; do
		case "$name" in '#'* | '') continue ;; esac
		hit=0
		read -ra cellv <<<"$cells"  # no pathname expansion of the globs
		for c in "${cellv[@]}"; do
			# shellcheck disable=SC2053  # a glob on purpose
			[[ $name == $c ]] && hit=1
		done
		[ "$hit" = 1 ] || continue
		if [ -z "$cpus" ]; then
			if [ "$jobs" -gt 1 ]; then cpus=1; else cpus=2; fi
		fi
		while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
			wait -n
			show_done
		done
		# shellcheck disable=SC2086  # the script and its arguments
		vm_boot "$name" "$kernel" "$append" "$cpus" "${modules:-}" $script &
		names+=("$name") descs+=("kernel $kernel, $append, $cpus vCPU")
	done < tests/vm/matrix
	while [ "$shown" -lt "${#names[@]}" ]; do
		wait -n
		show_done
	done
	echo "# vm: ${#names[@]} boots, $jobs at a time, in $(($(date +%s) - vm_start)) s"
fi

echo
[ ${#broken[@]} -gt 0 ] && echo "failing: ${broken[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
