# Runs inside the VM (tools/vmtest): status must report the level the boot's
# lsm= list allows, then the sandbox suites run at that level.
want=$1
cd /opt/bpfbox
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
. tests/lib.sh

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

bpfbox status | tee "$TMPD/status.txt"
bpfbox status --json >"$TMPD/s.json"
level=$(json "$TMPD/s.json" "d['level']")
[ "$level" = "$want" ] && ok "vm: status reports $want" || fail "vm: status reports $level, want $want"

case "$want" in
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
	;;
esac
[ "$(json "$TMPD/s.json" "d['landlock']['abi']")" = "$( [ "$want" = Minimal ] && echo 0 || echo 2)" ] &&
	ok "vm: Landlock ABI as the 6.1 kernel has it" || fail "vm: Landlock ABI $(json "$TMPD/s.json" "d['landlock']['abi']")"
ls -d /sys/fs/cgroup/bpfbox-probe-* >/dev/null 2>&1 && fail "vm: scratch cgroup left" || ok "vm: no scratch cgroup left"

if [ "$want" = Minimal ]; then
	# Without Landlock: seccomp still holds, and the gap is said out loud.
	mkdir -p "$TMPD/ws"
	expect_rc 0 "vm: run at Minimal still runs" bpfbox run -w "$TMPD/ws" -- true
	expect_grep 'not enforced on this host: filesystem isolation' "$TMPD/err" "vm: Minimal warns that fs isolation is off"
	expect_rc 1 "vm: network still denied by seccomp at Minimal" \
		bpfbox run -w "$TMPD/ws" -- python3 -c 'import socket,sys
try: socket.socket()
except PermissionError: sys.exit(1)'
	finish
	exit $?
fi

suites="tests/host/test_escape.sh tests/host/test_work.sh tests/host/test_selftest.sh"
# At Full every root `bpfbox run` would load the BPF agent for its session,
# about 8 s each under TCG (docs/benchmarks.md): the generic suites ask for
# Standard, and tests/vm/full.sh covers Full embedded, plain and through a
# daemon.
for suite in $suites; do
	[ -f "$suite" ] && BPFBOX_LEVEL=standard sh "$suite"
	[ $? -eq 0 ] || FAILS=$((FAILS + 1))
done
if [ "$want" = Full ]; then
	sh tests/vm/full.sh || FAILS=$((FAILS + 1))
fi
finish
