#!/bin/sh
# Smoke test of the VM harness itself (tools/vmtest), not of bpfbox.
# Prints what the VM looks like and exits with a distinctive status (7 by
# default, or $1) so the harness's status pass-through can be checked:
#   tools/vmtest -- tests/vm/smoke.sh            -> exit 7
#   tools/vmtest -- tests/vm/smoke.sh 0          -> exit 0
set -eu

[ "${BPFBOX_VM:-}" = 1 ] || { echo "smoke: BPFBOX_VM is not set" >&2; exit 1; }
[ "$(pwd)" = /opt/bpfbox ] || { echo "smoke: cwd is $(pwd), want /opt/bpfbox" >&2; exit 1; }

echo "smoke: kernel $(uname -r)"
echo "smoke: lsm $(cat /sys/kernel/security/lsm)"
echo "smoke: cmdline $(cat /proc/cmdline)"

controllers=$(cat /sys/fs/cgroup/cgroup.controllers)
[ -n "$controllers" ] || { echo "smoke: /sys/fs/cgroup/cgroup.controllers is empty" >&2; exit 1; }
echo "smoke: cgroup2 controllers: $controllers"

for d in /sys/fs/bpf /sys/kernel/tracing /sys/kernel/security /tmp /run; do
    grep -q " $d " /proc/mounts || { echo "smoke: $d is not mounted" >&2; exit 1; }
done
[ -r /sys/kernel/btf/vmlinux ] || { echo "smoke: no BTF for the kernel" >&2; exit 1; }
echo "smoke: PATH=$PATH"
ls /opt/bpfbox/bin

exit "${1:-7}"
