cd /opt/bpfbox
/opt/bpfbox/build/tests/test_lsm 2>&1 | tail -5
