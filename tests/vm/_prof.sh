#!/bin/bash
cd /opt/bpfbox || exit 1
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
t() { local a b; read -r a _ </proc/uptime; "$@" >/dev/null 2>&1; read -r b _ </proc/uptime; echo "$(python3 -c "print(round($b-$a,2))" 2>/dev/null || echo "$a $b") : $*"; }
command -v bpfbox
t true
t /bin/true
t bpfbox --version
t bpfbox run -q -- true
t bpfbox run -q -- true
t bpfbox run -q --net allow -- true
t bpfbox run -q --audit - -- true
t python3 -c pass
t python3 -c 'import json'
t jq -n 1
t sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done'
strace -c -f -o /tmp/st bpfbox run -q -- true >/dev/null 2>&1 && sort -k2 -n -r /tmp/st | head -15
