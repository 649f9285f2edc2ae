cd /opt/bpfbox
mkdir -p /tmp/w
bpfbox run -v --no-daemon --audit /tmp/a.jsonl -w /tmp/w -- true 2>&1 | tail -5
head -1 /tmp/a.jsonl | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["level_enabled"], e["not_enforced"])'
/opt/bpfbox/build/tests/test_lsm 2>&1 | tail -30
