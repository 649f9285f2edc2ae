#!/bin/sh
# Egress by name where BPF LSM loads (its socket_connect hook sees the
# address before the cgroup redirect): the host suite inside the VM.
#   BPFBOX_VM_MODULES=veth tools/vmtest --hostroot --append "lsm=landlock,lockdown,yama,bpf" -- tests/vm/egress.sh
cd /opt/bpfbox || exit 1
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
exec sh tests/host/test_egress.sh
