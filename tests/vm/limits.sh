#!/bin/sh
# Runs inside the VM (tools/vmtest --hostroot): a pure cgroup v2 host with
# every controller, where the limits, the OOM and disk monitors and pause,
# resume and kill must hold through the v2 controllers (tests/host/test_limits.sh
# asserts what the kernel did).
#   tools/vmtest --hostroot --timeout 900 --append "lsm=landlock,lockdown,yama,bpf" -- tests/vm/limits.sh
cd /opt/bpfbox || exit 1
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
. tests/lib.sh

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

bpfbox status --json >"$TMPD/s.json"
for r in memory pids cpu; do
	h=$(json "$TMPD/s.json" "d['limits']['$r']")
	[ "$h" = cgroup2 ] && ok "vm: the $r limit holds through cgroup v2" ||
		fail "vm: the $r limit holds through '$h', want cgroup2"
done
[ "$(json "$TMPD/s.json" "d['cgroup']['hybrid']")" = False ] && ok "vm: a pure v2 host" ||
	fail "vm: the VM's cgroups are hybrid"
# The limits suite asks for Standard: on this Full kernel a root run would
# load the BPF LSM for each session, which tests/vm/full.sh covers.
BPFBOX_LEVEL=standard LIMITS_TIMEOUT=8 sh tests/host/test_limits.sh
[ $? -eq 0 ] || FAILS=$((FAILS + 1))
finish
