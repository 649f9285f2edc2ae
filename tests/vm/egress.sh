#!/bin/sh
# Egress by name where BPF LSM loads (its socket_connect hook sees the
# address before the cgroup redirect): the host suites inside the VM.
#   BPFBOX_VM_MODULES="veth inet_diag udp_diag" tools/vmtest --hostroot --append "lsm=landlock,lockdown,yama,bpf" -- tests/vm/egress.sh
# inet_diag and udp_diag: the resolver asks sock_diag which cgroup sent each
# query (userspace/net/dns.c); the guest cannot load modules by itself.
cd /opt/bpfbox || exit 1
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
sh tests/host/test_egress.sh
rc=$?
# Terminated connections where BPF LSM loads: per-request rules (HTTP/1.1
# and HTTP/2) and secrets injected (docs/network.md "Secrets",
# "Per-request rules"). The h2 sessions carry two secrets each: as root
# and through the daemon here; as nobody, and test_secrets.sh's cases
# (the proxy's own, the same with or without BPF LSM), on the host only:
# they were about 170 s of this boot's 1,005 (docs/vmtest.md, "Time").
BPFBOX_H2_USERS="root daemon" sh tests/host/test_http_rules.sh || rc=1
. tests/lib.sh
skip "vm egress: tests/host/test_secrets.sh: the h2 sessions above inject secrets where BPF LSM loads; make test runs it on the host"
# Without udp_diag (module loading off on a fleet host, or this guest once
# the module is gone) no query could be told to come from the session: a
# session with a name rule is refused at its start, saying what to load.
# delete_module(2) by number: the host root the guest runs has no kmod.
if python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(176, b"udp_diag", os.O_NONBLOCK) != 0:
    sys.exit(os.strerror(ctypes.get_errno()))' 2>"$TMPD/rmmod"; then
	out=$($BPFBOX run -w "$TMPD" --net-allow allowed.test:443 -- true 2>&1)
	r=$?
	[ "$r" = 125 ] && ok "egress: without udp_diag a name rule is refused at the start (125)" ||
		fail "egress: without udp_diag: exit $r, want 125: $out"
	echo "$out" | grep -q "modprobe udp_diag" &&
		ok "egress: the refusal says to load udp_diag" ||
		fail "egress: the refusal does not name udp_diag: $out"
	st=$($BPFBOX status --json | python3 -c 'import json, sys
f = json.load(sys.stdin)["features"]["udp_diag"]
print(f["available"], f["detail"])')
	case "$st" in
	"False "*udp_diag*) ok "egress: bpfbox status says udp_diag is unavailable and what that refuses" ;;
	*) fail "egress: bpfbox status without udp_diag says: $st" ;;
	esac
else
	fail "egress: delete_module(udp_diag): $(cat "$TMPD/rmmod")"
fi
[ "$FAILS" = 0 ] && exit "$rc"
exit 1
