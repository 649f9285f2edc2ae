#!/bin/sh
# Runs inside one VM of the matrix (tools/vmtest --hostroot, see
# tests/vm/matrix): one boot is one kernel x level. `bpfbox status` must
# report the level the boot's lsm= list allows and the Landlock ABI the
# kernel has, then the suites run against what that level and ABI promise
# (a case they do not promise prints a skip saying so, never nothing).
#   tests/vm/level.sh LEVEL ABI      LEVEL Full|Standard|Minimal,
#                                    ABI the kernel's Landlock ABI, "N+" for
#                                    at least N (Minimal expects 0)
LEVEL_WANT=$1  # not "want": lib.sh's expect_rc sets that
want_abi=${2:-}
cd /opt/bpfbox || exit 1
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
. tests/lib.sh

# The suites of one boot, in order: every level runs the escape, normal-work,
# audit and self-test suites; a level adds its own. Add suites here.
SUITES="tests/host/test_escape.sh tests/host/test_work.sh tests/host/test_audit.sh tests/host/test_selftest.sh"
case "$LEVEL_WANT" in
Full) SUITES="$SUITES tests/vm/full.sh" ;;
# Last: it turns unprivileged user namespaces off for its second half.
Standard) SUITES="$SUITES tests/vm/unpriv.sh" ;;
esac

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

echo "# vm: kernel $(uname -r) (${BPFBOX_VM_KERNEL:-?}), level $LEVEL_WANT, lsm $(cat /sys/kernel/security/lsm)"
bpfbox status | tee "$TMPD/status.txt"
bpfbox status --json >"$TMPD/s.json"
level=$(json "$TMPD/s.json" "d['level']")
[ "$level" = "$LEVEL_WANT" ] && ok "vm: status reports $LEVEL_WANT" || fail "vm: status reports $level, want $LEVEL_WANT"

case "$LEVEL_WANT" in
Full)
	[ "$(json "$TMPD/s.json" "d['features']['bpf_lsm']['available']")" = True ] &&
		ok "vm: a BPF LSM program loaded and attached" || fail "vm: BPF LSM not available"
	[ "$(json "$TMPD/s.json" "d['features']['lsm_cgroup']['available']")" = True ] &&
		ok "vm: lsm_cgroup attached to a cgroup" || fail "vm: lsm_cgroup not available"
	;;
Standard)
	expect_grep 'BPF LSM in LSM list +unavailable +not in the active LSM list' "$TMPD/status.txt" \
		"vm: BPF LSM reported as not in the active LSM list"
	;;
Minimal)
	expect_grep 'Landlock +unavailable' "$TMPD/status.txt" "vm: Landlock reported unavailable"
	want_abi=0
	;;
esac
# The kernel's ABI (the probe's detail, "ABI N...") and the one bpfbox
# uses (landlock.abi: at most the newest it knows).
abi=$(json "$TMPD/s.json" "d['landlock']['abi']")
kabi=$(json "$TMPD/s.json" "(__import__('re').match(r'ABI (\\d+)', d['features']['landlock']['detail'] or '') or [0, 0])[1]")
case "$want_abi" in
*+) [ "$kabi" -ge "${want_abi%+}" ] 2>/dev/null ;;
*) [ "$kabi" = "$want_abi" ] ;;
esac && ok "vm: Landlock ABI $kabi, as kernel $(uname -r) has it at $LEVEL_WANT" ||
	fail "vm: Landlock ABI '$kabi', want $want_abi"
if [ "$abi" != "$kabi" ]; then
	skip "vm: Landlock ABI $((abi + 1))..$kabi rights of this kernel: bpfbox uses ABI $abi, the newest it knows; their cases run as ABI $abi"
fi
ls -d /sys/fs/cgroup/bpfbox-probe-* >/dev/null 2>&1 && fail "vm: scratch cgroup left" || ok "vm: no scratch cgroup left"

if [ "$LEVEL_WANT" = Minimal ]; then
	# Without Landlock: seccomp still holds, and the gap is said out loud.
	mkdir -p "$TMPD/ws"
	expect_rc 0 "vm: run at Minimal still runs" bpfbox run -w "$TMPD/ws" -- true
	expect_grep 'not enforced on this host: filesystem isolation' "$TMPD/err" "vm: Minimal warns that fs isolation is off"
	expect_rc 1 "vm: network still denied by seccomp at Minimal" \
		bpfbox run -w "$TMPD/ws" -- python3 -c 'import socket,sys
try: socket.socket()
except PermissionError: sys.exit(1)'
fi

for suite in $SUITES; do
	echo "# vm: suite $suite (kernel $(uname -r), level $LEVEL_WANT)"
	if [ -f "$suite" ]; then
		sh "$suite" || FAILS=$((FAILS + 1))
	else
		fail "vm: suite $suite is missing"
	fi
done
finish
