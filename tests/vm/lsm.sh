#!/bin/sh
# Runs the BPF LSM unit test where its programs load: inside the VM, booted
# with bpf in the LSM list. Its status is the test's.
#   tools/vmtest --hostroot --append "lsm=landlock,lockdown,yama,bpf" -- tests/vm/lsm.sh
exec /opt/bpfbox/build/tests/test_lsm
