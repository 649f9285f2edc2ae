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
# The session's own cgroup at /sys/fs/cgroup (ns_cgroup.c), the cgroup2
# mount itself here: its limits read, a write refused.
mkdir -p "$TMPD/cgv"
BPFBOX_LEVEL=standard bpfbox run -q --no-daemon -w "$TMPD/cgv" --memory 256 --cpu 50 -- sh -c \
	'cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.max; echo max >/sys/fs/cgroup/memory.max 2>/dev/null && echo wrote' \
	>"$TMPD/cgv.out" 2>"$TMPD/cgv.err"
[ "$(tr '\n' ' ' <"$TMPD/cgv.out")" = "268435456 50000 100000 " ] &&
	ok "vm: the session reads its memory.max and cpu.max at /sys/fs/cgroup, cannot write them" ||
	fail "vm: cgroup view: $(oneline "$TMPD/cgv.out") $(oneline "$TMPD/cgv.err" 300)"
# The limits suite asks for Standard: on this Full kernel a root run would
# load the BPF LSM for each session, which tests/vm/full.sh covers.
BPFBOX_LEVEL=standard LIMITS_TIMEOUT=8 sh tests/host/test_limits.sh
[ $? -eq 0 ] || FAILS=$((FAILS + 1))
finish
