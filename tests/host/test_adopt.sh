#!/bin/sh
# Adopted cgroups (issue 35 items 1 and 2, docs/daemon.md "Adopted
# cgroups"): a cgroup the test made and started processes in, as a
# container runtime would, becomes a daemon session under a policy of the
# daemon's config, through `bpfbox adopt` and through the OCI hook with a
# container state on stdin. Its execs are recorded and judged by the
# command rules, its connects by the network rules (its own network
# namespace keeps its loopback; the host's does not), pause, resume and
# kill act on it, it ends when its processes exit and its cgroup stays its
# owner's. Every refusal is one line and adopts nothing.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 adopt "adopting a cgroup"

chmod 755 "$TMPD" # the unprivileged caller below must reach the socket
daemon_scratch adopt
A="$TMPD/audit.jsonl"
CT="$CG2/bpfbox-adoptct-$$" # the "runtime's" cgroups: not under the daemon's parent
mkdir -p "$CT"
NOBODY="setpriv --reuid 65534 --regid 65534 --clear-groups"
LPID=
cleanup_extra() {
	[ -n "$LPID" ] && kill "$LPID" 2>/dev/null
	[ -n "${NS:-}" ] && netfix_down
	for c in "$CT"/*/; do
		[ -d "$c" ] && echo 1 >"$c/cgroup.kill" 2>/dev/null
	done
	for c in "$CT"/*/; do
		[ -d "$c" ] && poll_until 5 grep -q "populated 0" "$c/cgroup.events"
	done
	# Deepest first: a case nests cgroups (nested/child), which left CT behind.
	find "$CT" -depth -type d -exec rmdir {} \; 2>/dev/null
}

# Egress by name's upstream: the test's resolver and HTTP server in a
# network namespace of the test's own (tests/host/netfix.sh).
. "$ROOT/tests/host/netfix.sh"
N=$(($$ % 200 + 20))
# The VM's quick run stops before any name is used (and has no veth there).
if [ "${BPFBOX_ADOPT_QUICK:-0}" = 1 ]; then
	SRV=198.51.100.53
else
	netfix_up ad 10.202.$N 8080 443 allowed.test,other.test allowed.test=10.202.$N.2 other.test=10.202.$N.2
fi
cat >"$TMPD/config.json" <<EOF
{"policies": {
  "agent": {"network": "deny", "extra": {"deny_commands": ["bpfbox-adopt-forbidden"]}},
  "named": {"network": "deny", "extra": {"net_allow": ["allowed.test:8080"]},
            "net_resolver": "$SRV"},
  "short": {"network": "deny", "limits": {"pause_timeout_s": 2}}
}}
EOF

# --- 1. a config whose policies do not parse is refused at start --------------
printf '{"policies": {"bad name!": {}}}\n' >"$TMPD/bad1.json"
printf '{"policies": {"p": {"network": "sometimes"}}}\n' >"$TMPD/bad2.json"
for b in bad1 bad2; do
	"$BPFBOX" daemon --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" \
		--config "$TMPD/$b.json" >"$TMPD/$b.out" 2>&1
	rc=$?
	[ "$rc" = 2 ] && [ "$(wc -l <"$TMPD/$b.out")" = 1 ] &&
		grep -q "policies" "$TMPD/$b.out" &&
		ok "config $b: refused at start in one line naming the policy (exit 2)" ||
		fail "config $b: exit $rc: $(oneline "$TMPD/$b.out")"
done
grep -q "bad name" "$TMPD/bad1.out" && grep -q "policies.p" "$TMPD/bad2.out" &&
	ok "the refusals name the bad name and the bad policy's key path" ||
	fail "refusals: $(cat "$TMPD/bad1.out" "$TMPD/bad2.out")"

MPORT=$(free_ports tcp)
if ! start_daemon "$A" --config "$TMPD/config.json" --group nogroup --metrics "127.0.0.1:$MPORT"; then
	fail "the daemon did not get ready: $(cat "$DERR")"
	finish
	exit 1
fi
ok "the daemon starts with named policies"

# container NAME [unshare options]: a process in cgroup $CT/NAME (as a runtime
# starts one), waiting for $WS/NAME.go, then running $WS/NAME.sh; its pid as
# the host sees it in $WS/NAME.hostpid.
container() {
	mkdir -p "$CT/$1"
	n=$1
	shift
	sh -c 'echo $$ >"$1/cgroup.procs"; echo $$ >"$2.hostpid"; shift 2; exec "$@"' sh "$CT/$n" "$WS/$n" \
		unshare "$@" -- sh -c 'echo $$ >"$0.pid"; while [ ! -e "$0.go" ]; do sleep 0.05; done; . "$0.sh"' \
		"$WS/$n" >"$WS/$n.out" 2>&1 &
	wait_file "$WS/$n.pid"
}

# A listener on the host's loopback: a connect to it from the host's network
# namespace is outside the policy (network deny, no loopback of its own).
PORT=$(free_ports tcp)
"$PY" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); time.sleep(120)' "$PORT" &
LPID=$!
poll_until 5 tcp_accepts "$PORT"

# --- 2. bpfbox adopt ----------------------------------------------------------
cat >"$WS/connect.py" <<EOF
import socket
s = socket.socket(); s.settimeout(3)
try:
    s.connect(("127.0.0.1", $PORT)); print("host loopback: connected")
except OSError as e:
    print("host loopback:", e.errno)
EOF
mkdir -p "$WS/proj"
echo TOKEN=adopt-secret >"$WS/proj/.env"
cat >"$WS/c1.sh" <<EOF
cat /etc/hostname >/dev/null
cat "$WS/proj/.env" >/dev/null 2>&1; echo "env rc=\$?"
/bin/echo bpfbox-adopt-forbidden
echo "forbidden rc=\$?"
$PY "$WS/connect.py"
EOF
container c1 --fork --pid
"$BPFBOX" adopt --cgroup "$CT/c1" --policy agent --label team=a --socket "$SOCK" \
	>"$TMPD/adopt.out" 2>"$TMPD/adopt.err"
rc=$?
SID=$(cat "$TMPD/adopt.out")
[ "$rc" = 0 ] && echo "$SID" | grep -Eq '^[0-9a-f]{32}$' &&
	ok "bpfbox adopt prints the new session's id" ||
	fail "bpfbox adopt: exit $rc: $(oneline "$TMPD/adopt.out") $(oneline "$TMPD/adopt.err")"
export SID
wait_events "$A" "any(e['type'] == 'session.start' for e in mine)" 5
check_events "$A" "[e for e in mine if e['type'] == 'session.start'][0]['cgroup'] == '$CT/c1'" \
	"session.start names the adopted cgroup"
check_events "$A" "[e for e in mine if e['type'] == 'session.start'][0]['labels'] == {'team': 'a', 'bpfbox.policy': 'agent'}" \
	"session.start carries the labels and the policy's name"
check_events "$A" "any('runtime' in n for n in [e for e in mine if e['type'] == 'session.start'][0]['not_enforced'])" \
	"session.start says what bpfbox does not enforce in an adopted cgroup"
expect_listed "$SID" "s['state'] == 'running'" "bpfbox sessions lists the adopted session"
touch "$WS/c1.go"
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 15
expect_grep "forbidden rc=137" "$WS/c1.out" "a command rule kills an exec inside the adopted cgroup"
check_events "$A" "any(e['type'] == 'exec' and e['decision'] == 'deny' and e.get('rule') == 'deny_commands: bpfbox-adopt-forbidden' for e in mine)" \
	"the killed exec is a deny record naming the rule"
check_events "$A" "any(e['type'] == 'exec' and e['filename'].endswith('/cat') for e in mine)" \
	"the adopted cgroup's execs are recorded"
expect_grep "host loopback: 1$" "$WS/c1.out" \
	"in the host's network namespace, a connect to the host's loopback is refused (EPERM)"
# The BPF LSM's deny lists hold by the paths the cgroup's processes see.
if wait_events "$A" "[e for e in mine if e['type'] == 'session.start'][0]['layers']['bpf_lsm']" 0; then
	expect_grep "env rc=1" "$WS/c1.out" "at Full, the BPF LSM denies a .env inside the adopted cgroup"
	check_events "$A" "any(e['type'] == 'file' and e['decision'] == 'deny' and e['layer'] == 'bpf-lsm' and e['path'].endswith('/proj/.env') for e in mine)" \
		"the denied open is a bpf-lsm deny record"
else
	skip "no BPF LSM here: the .env deny in an adopted cgroup runs in the VM's 6.12 Full cell"
fi
check_events "$A" "any(e['type'] == 'session.end' and e['reason'] == 'processes exited' for e in mine)" \
	"the session ends when the cgroup's processes exit"
[ -d "$CT/c1" ] && ok "the adopted cgroup is left to its owner" ||
	fail "the daemon removed the adopted cgroup"
# --- 2b. an OOM kill pauses it; every pause ends --------------------------------
# No bpfbox run's monitor watches an adopted cgroup: the daemon does, each
# second. Where the memory controller is on for it (the VM's pure cgroup v2),
# an OOM kill in it pauses the session; elsewhere its start event says the
# pause is not enforced. A pause longer than the policy's pause_timeout
# kills it, whoever paused it.
if [ -w "$CG2/cgroup.subtree_control" ] && grep -qw memory "$CG2/cgroup.controllers" &&
	echo +memory >"$CG2/cgroup.subtree_control" 2>/dev/null &&
	echo +memory >"$CT/cgroup.subtree_control" 2>/dev/null; then
	cat >"$WS/co.sh" <<EOF
$PY -c 'b = []
while True: b.append(bytearray(1 << 20))' 2>/dev/null
echo "hog rc=\$?"
sleep 30
EOF
	container co --fork --pid
	echo 64M >"$CT/co/memory.max"
	echo 0 >"$CT/co/memory.swap.max" 2>/dev/null
	SID=$("$BPFBOX" adopt --cgroup "$CT/co" --policy short --socket "$SOCK" 2>"$TMPD/adopt.err")
	export SID
	touch "$WS/co.go"
	wait_events "$A" "any(e['type'] == 'session.paused' for e in mine)" 20
	check_events "$A" "any(e['type'] == 'session.paused' and e['reason'] == 'oom' and e['oom_kills'] >= 1 for e in mine)" \
		"an OOM kill in an adopted cgroup pauses its session (reason oom, the kills counted)"
	wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 20
	check_events "$A" "any(e['type'] == 'session.killed' and e['reason'] == 'pause_timeout' for e in mine)" \
		"the OOM pause, not resumed, ends in a kill after the policy's pause_timeout"
else
	skip "adopt: no memory controller for a cgroup of the v2 tree here: an adopted cgroup's OOM pause runs in the VM's 6.12 Full cell"
fi
printf 'sleep 60\n' >"$WS/cp.sh"
container cp --fork --pid
SID=$("$BPFBOX" adopt --cgroup "$CT/cp" --policy short --socket "$SOCK" 2>"$TMPD/adopt.err")
export SID
wait_events "$A" "any(e['type'] == 'session.start' for e in mine)" 5
if [ -e "$CT/cp/memory.events" ]; then
	check_events "$A" "not any('OOM' in n for n in [e for e in mine if e['type'] == 'session.start'][0]['not_enforced'])" \
		"with memory.events to watch, the OOM pause is not listed as not enforced"
else
	check_events "$A" "any('pause on an OOM kill' in n for n in [e for e in mine if e['type'] == 'session.start'][0]['not_enforced'])" \
		"without a memory controller, session.start says the OOM pause is not enforced"
fi
touch "$WS/cp.go"
"$BPFBOX" pause "$SID" --socket "$SOCK" >/dev/null 2>&1
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 10
check_events "$A" "any(e['type'] == 'session.killed' and e['reason'] == 'pause_timeout' and e['paused'] for e in mine)" \
	"a pause nobody undoes kills the adopted session after its policy's pause_timeout (2 s)"
poll_until 5 grep -q "populated 0" "$CT/cp/cgroup.events" &&
	ok "and its processes are gone" || fail "pause_timeout: $(cat "$CT/cp/cgroup.events")"

# The VM's Full cell: only what Full adds (the BPF LSM above); the rest is
# the same on every kernel, and under TCG it took 150 s of the cell.
if [ "${BPFBOX_ADOPT_QUICK:-0}" = 1 ]; then
	skip "adopt: loopback, egress by name, pause, refusals, the hook, twenty at once and a restart: the host runs them (BPFBOX_ADOPT_QUICK)"
	finish
	exit $?
fi

# --- 3. a network namespace of its own keeps its loopback -----------------------
cat >"$WS/c2.sh" <<EOF
ip link set lo up
$PY -c 'import socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
s = socket.socket(); s.settimeout(3)
try:
    s.connect(l.getsockname()); print("own loopback: connected")
except OSError as e:
    print("own loopback:", e.errno)'
EOF
container c2 --fork --pid --net
SID=$("$BPFBOX" adopt --cgroup "$CT/c2" --policy agent --socket "$SOCK" 2>"$TMPD/adopt.err")
touch "$WS/c2.go"
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 15
expect_grep "own loopback: connected" "$WS/c2.out" \
	"in a network namespace of its own, the adopted cgroup reaches its own loopback"

# --- 3b. egress by name in its own network namespace ---------------------------
# The redirect lands on 127.0.0.1 of the container's namespace: the daemon's
# proxy and resolver listen there, and the proxy's connections leave from
# the host. A tool that ignores HTTP_PROXY reaches the allowed name; another
# name is not even resolved.
cat >"$WS/ce.sh" <<EOF
$PY -c 'import socket, urllib.request
op = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    print("allowed:", op.open("http://allowed.test:8080/", timeout=10).read().decode().strip())
except Exception as e:
    print("allowed: error", e)
try:
    socket.getaddrinfo("other.test", 8080); print("other: resolved")
except OSError as e:
    print("other: unresolved", e)
s = socket.socket(); s.settimeout(3)
try:
    s.connect(("10.202.$N.1", 7000)); print("literal: connected")
except OSError as e:
    print("literal:", e.errno)'
while [ ! -e "$WS/ce.stop" ]; do sleep 0.1; done
EOF
container ce --fork --pid --net
nsenter -t "$(cat "$WS/ce.hostpid")" -n ip link set lo up
SID=$("$BPFBOX" adopt --cgroup "$CT/ce" --policy named --socket "$SOCK" 2>"$TMPD/adopt.err")
[ -n "$SID" ] && ok "a policy with name rules adopts a cgroup in a network namespace of its own" ||
	fail "adopt with names: $(oneline "$TMPD/adopt.err")"
export SID
touch "$WS/ce.go"
wait_grep "^literal:" "$WS/ce.out" 30
# A process in the same network namespace but outside the cgroup (a pod's
# other container shares its namespace) gets nothing from the proxy or the
# resolver: neither serves a socket the session's programs did not mark.
NSX="nsenter -t $(cat "$WS/ce.hostpid") -n"
PP=$($NSX ss -Hltn | awk '$4 ~ /^127.0.0.1:/ { sub(/.*:/, "", $4); print $4; exit }')
DP=$($NSX ss -Hlun | awk '$4 ~ /^127.0.0.1:/ { sub(/.*:/, "", $4); print $4; exit }')
$NSX "$PY" -c 'import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    s.sendall(b"GET / HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n")
    print("proxy:", s.recv(100) or b"closed")
except ConnectionError as e:
    print("proxy: reset", e.errno)
q = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); q.settimeout(2)
q.sendto(bytes.fromhex("1234010000010000000000000761") + b"llowed\x04test\x00\x00\x01\x00\x01", ("127.0.0.1", int(sys.argv[2])))
try:
    print("resolver: answered", len(q.recv(512)))
except OSError:
    print("resolver: no answer")' "${PP:-1}" "${DP:-1}" >"$TMPD/sidecar.out" 2>&1
[ -n "$PP" ] && [ -n "$DP" ] && grep -Eq "^proxy: (b'closed'|closed|reset)" "$TMPD/sidecar.out" &&
	grep -q "^resolver: no answer" "$TMPD/sidecar.out" &&
	ok "egress by name: a process of the namespace outside the cgroup gets nothing from its proxy or resolver" ||
	fail "sidecar: ports '$PP' '$DP': $(oneline "$TMPD/sidecar.out")"
touch "$WS/ce.stop"
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 30
expect_grep "allowed: hello from allowed.test" "$WS/ce.out" \
	"egress by name: the adopted cgroup reaches an allowed name, without HTTP_PROXY, through the daemon's proxy"
expect_grep "other: unresolved" "$WS/ce.out" "egress by name: another name is not resolved for it"
expect_grep "literal: 1$" "$WS/ce.out" "egress by name: a literal address no answer gave is refused (EPERM)"
check_events "$A" "any(e['type'] == 'net.allow' and e['protocol'] == 'tcp' and e['name'] == 'allowed.test' and e['port'] == 8080 and e['rule'] == 'allowed.test:8080' and e['bytes_in'] > 0 for e in mine)" \
	"egress by name: the connection is a net.allow record of the adopted session, naming the rule"
check_events "$A" "any(e['type'] == 'net.deny' and e['protocol'] == 'dns' and e['name'] == 'other.test' for e in mine)" \
	"egress by name: the refused name is a net.deny record of the adopted session"

# --- 4. pause, resume and kill ------------------------------------------------
printf 'sleep 60\n' >"$WS/c3.sh"
container c3 --fork --pid
SID=$("$BPFBOX" adopt --cgroup "$CT/c3" --policy agent --socket "$SOCK" 2>"$TMPD/adopt.err")
touch "$WS/c3.go"
# The metrics count it as any session: running, at the level bpfbox itself enforces.
LVL=$("$PY" -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == "session.start" and e["session"] == sys.argv[2]:
        print(e["level_enabled"])' "$A" "$SID")
curl -s --max-time 5 "http://127.0.0.1:$MPORT/metrics" >"$TMPD/metrics.txt"
grep -Eq "^bpfbox_sessions\{state=\"running\",level=\"$LVL\"\} [1-9]" "$TMPD/metrics.txt" &&
	ok "the metrics count the adopted session (running, level $LVL)" ||
	fail "metrics: $(grep '^bpfbox_sessions{' "$TMPD/metrics.txt" | tr '\n' ' ')"
"$BPFBOX" pause "$SID" --socket "$SOCK" >/dev/null 2>&1
[ "$(cat "$CT/c3/cgroup.freeze")" = 1 ] && poll_until 5 grep -q "frozen 1" "$CT/c3/cgroup.events" &&
	ok "bpfbox pause freezes the adopted cgroup" || fail "not frozen: $(cat "$CT/c3/cgroup.events")"
"$BPFBOX" resume "$SID" --socket "$SOCK" >/dev/null 2>&1
poll_until 5 grep -q "frozen 0" "$CT/c3/cgroup.events" &&
	ok "bpfbox resume thaws it" || fail "not thawed: $(cat "$CT/c3/cgroup.events")"
"$BPFBOX" kill "$SID" --socket "$SOCK" >/dev/null 2>&1
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 15 &&
	poll_until 5 grep -q "populated 0" "$CT/c3/cgroup.events" &&
	ok "bpfbox kill ends the adopted cgroup's processes and its session" ||
	fail "kill: $(cat "$CT/c3/cgroup.events")"

# --- 5. refusals: one line, nothing adopted -----------------------------------
printf 'sleep 60\n' >"$WS/c4.sh"
container c4 --fork --pid
mkdir -p "$CT/nested/child"
before=$(grep -c '"type":"session.start"' "$A")
refused() { # WANT-RC PATTERN NAME CMD...
	want=$1 pat=$2 name=$3
	shift 3
	"$@" >"$TMPD/r.out" 2>"$TMPD/r.err"
	rc=$?
	if [ "$rc" = "$want" ] && [ "$(wc -l <"$TMPD/r.err")" = 1 ] && grep -Eq -- "$pat" "$TMPD/r.err" &&
		[ ! -s "$TMPD/r.out" ]; then
		ok "$name (exit $want, one line)"
	else
		fail "$name: exit $rc, want $want: $(oneline "$TMPD/r.err")"
	fi
}
refused 1 "no policy 'nope' in the daemon's config" "an unknown policy is refused" \
	"$BPFBOX" adopt --cgroup "$CT/c4" --policy nope --socket "$SOCK"
refused 1 "not a cgroup v2 directory" "a path that is no cgroup is refused" \
	"$BPFBOX" adopt --cgroup "$TMPD" --policy agent --socket "$SOCK"
refused 1 "the cgroup2 root or the daemon's own" "the daemon's own cgroup parent is refused" \
	"$BPFBOX" adopt --cgroup "$PARENT" --policy agent --socket "$SOCK"
refused 1 "has child cgroups" "a cgroup with child cgroups is refused" \
	"$BPFBOX" adopt --cgroup "$CT/nested" --policy agent --socket "$SOCK"
mkdir -p "$CT/empty"
refused 1 "has no process yet" "a policy with name rules is refused for a cgroup with no process (no namespace to listen in)" \
	"$BPFBOX" adopt --cgroup "$CT/empty" --policy named --socket "$SOCK"
refused 1 "only root may adopt" "an unprivileged caller is refused" \
	$NOBODY "$BPFBOX" adopt --cgroup "$CT/c4" --policy agent --socket "$SOCK"
refused 2 "give --cgroup PATH and --policy NAME" "adopt without --policy is bad usage" \
	"$BPFBOX" adopt --cgroup "$CT/c4" --socket "$SOCK"
refused 2 "KEY=VALUE" "a label without = is bad usage" \
	"$BPFBOX" adopt --cgroup "$CT/c4" --policy agent --label x --socket "$SOCK"
refused 2 "KEY of letters, digits" "a label key bpfbox run would refuse is refused here too" \
	"$BPFBOX" adopt --cgroup "$CT/c4" --policy agent --label 'a b=x' --socket "$SOCK"
# What a caller sends as the namespace must be one: a file, or a PID
# namespace, is refused for a policy with names (the proxy would listen
# nowhere the container is).
"$PY" - "$SOCK" "$CT/c4" >"$TMPD/nsfd.out" 2>&1 <<'PY2'
import array, json, os, socket, sys
for what in ("/dev/null", "/proc/self/ns/pid"):
    fd = os.open(what, os.O_RDONLY)
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
    req = json.dumps({"op": "adopt", "cgroup": sys.argv[2], "policy_name": "named"}).encode() + b"\n"
    s.sendmsg([req], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    r = json.loads(s.makefile("rb").readline())
    print(what, "refused" if not r["ok"] else "ADOPTED", r.get("code"), "no network namespace" in r.get("error", ""))
PY2
[ "$(grep -c 'refused ESRCH True$' "$TMPD/nsfd.out")" = 2 ] &&
	ok "an fd that is not a network namespace, sent with adopt, is refused (ESRCH)" ||
	fail "namespace fds: $(oneline "$TMPD/nsfd.out")"
# The protocol itself: members of the wrong type are refused, the daemon lives.
"$PY" - "$SOCK" "$CT/c4" >"$TMPD/proto.out" 2>&1 <<'PY'
import json, socket, sys
for req in ({"op": "adopt", "cgroup": 5, "policy_name": "agent"},
            {"op": "adopt", "cgroup": sys.argv[2], "policy_name": ["agent"]},
            {"op": "adopt", "cgroup": sys.argv[2], "policy_name": "agent", "labels": "x"},
            {"op": "adopt", "cgroup": sys.argv[2], "policy_name": "agent", "labels": {"k": 1}},
            {"op": "adopt", "cgroup": sys.argv[2], "policy_name": "../etc"}):
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
    s.sendall(json.dumps(req).encode() + b"\n")
    r = json.loads(s.makefile("rb").readline())
    print("refused" if not r["ok"] else "ADOPTED", r.get("code"), r.get("error"))
PY
[ "$(grep -c '^refused' "$TMPD/proto.out")" = 5 ] && kill -0 "$DPID" 2>/dev/null &&
	ok "adopt requests with members of the wrong type are refused; the daemon lives" ||
	fail "adopt protocol: $(oneline "$TMPD/proto.out")"
[ "$(grep -c '"type":"session.start"' "$A")" = "$before" ] &&
	ok "no refused adopt made a session" || fail "a refused adopt made a session"
SID=$("$BPFBOX" adopt --cgroup "$CT/c4" --policy agent --socket "$SOCK" 2>/dev/null)
refused 1 "is session $SID already" "a cgroup adopted twice is refused" \
	"$BPFBOX" adopt --cgroup "$CT/c4" --policy agent --socket "$SOCK"
echo 1 >"$CT/c4/cgroup.kill"
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 15 &&
	ok "a cgroup killed by its owner ends its session" || fail "no session.end after cgroup.kill"

POOL=$(pool_cgroups "$PARENT" | sed -n 1p)
if [ -n "$POOL" ]; then
	refused 1 "the cgroup2 root or the daemon's own" "a cgroup the daemon made ahead is refused" \
		"$BPFBOX" adopt --cgroup "$PARENT/$POOL/" --policy agent --socket "$SOCK"
else
	fail "no cgroup made ahead under $PARENT to try"
fi

# A child cgroup made after the adoption: its processes would be outside the
# session (sessions are keyed by the exact cgroup). The tree is killed.
printf 'sleep 60\n' >"$WS/c8.sh"
container c8 --fork --pid
SID=$("$BPFBOX" adopt --cgroup "$CT/c8" --policy agent --socket "$SOCK" 2>"$TMPD/adopt.err")
touch "$WS/c8.go"
mkdir "$CT/c8/escape"
cat "$CT/c8/cgroup.procs" >"$TMPD/c8.pids"
while read -r p; do echo "$p" >"$CT/c8/escape/cgroup.procs"; done <"$TMPD/c8.pids"
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 10
check_events "$A" "any(e['type'] == 'session.end' and e['reason'].startswith('killed: a child cgroup appeared') for e in mine)" \
	"a child cgroup made in an adopted cgroup ends the session, saying why"
poll_until 5 grep -q "populated 0" "$CT/c8/cgroup.events" &&
	ok "and kills what moved into it" || fail "processes left: $(cat "$CT/c8/escape/cgroup.procs")"
rmdir "$CT/c8/escape"

# The cgroup removed and made again under the same path (a unit restarted):
# the session ends, and what runs in the new one is not touched.
printf 'sleep 60\n' >"$WS/c9.sh"
container c9 --fork --pid
SID=$("$BPFBOX" adopt --cgroup "$CT/c9" --policy agent --socket "$SOCK" 2>"$TMPD/adopt.err")
touch "$WS/c9.go"
echo 1 >"$CT/c9/cgroup.kill"
poll_until 5 grep -q "populated 0" "$CT/c9/cgroup.events"
rmdir "$CT/c9" && mkdir "$CT/c9"
sh -c 'echo $$ >"$1/cgroup.procs"; exec sleep 60' sh "$CT/c9" &
NEWP=$!
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 10 &&
	ok "a removed adopted cgroup ends its session" || fail "no session.end after the cgroup went"
# The session is gone from the daemon's table once its end is done (its
# last step, where an owned cgroup would be removed).
poll_until 5 sh -c "! '$BPFBOX' sessions --json --socket '$SOCK' | grep -q '$SID'"
kill -0 "$NEWP" 2>/dev/null && ok "a new cgroup under the same path is not the session's: its process lives" ||
	fail "the daemon killed the process of a new cgroup at the old path"
kill "$NEWP" 2>/dev/null

# --- 6. the OCI hook ------------------------------------------------------------
printf 'sleep 60\n' >"$WS/c5.sh"
container c5 --fork --pid
state() { # ID PID POLICY
	printf '{"ociVersion":"1.0.2","id":"%s","status":"creating","pid":%s,"bundle":"/b",' "$1" "$2"
	printf '"annotations":{"io.bpfbox.policy":"%s","io.kubernetes.pod.name":"pod-1"}}' "$3"
}
state ct-5 "$(cat "$WS/c5.hostpid")" agent | "$BPFBOX" hook oci createRuntime --socket "$SOCK" \
	>"$TMPD/hook.out" 2>"$TMPD/hook.err"
rc=$?
SID=$(cat "$TMPD/hook.out")
[ "$rc" = 0 ] && echo "$SID" | grep -Eq '^[0-9a-f]{32}$' &&
	ok "the OCI hook adopts an annotated container at createRuntime" ||
	fail "hook: exit $rc: $(oneline "$TMPD/hook.err")"
wait_events "$A" "any(e['type'] == 'session.start' for e in mine)" 5
check_events "$A" "[e for e in mine if e['type'] == 'session.start'][0]['labels'] == {'oci.id': 'ct-5', 'k8s.pod': 'pod-1', 'bpfbox.policy': 'agent'} and [e for e in mine if e['type'] == 'session.start'][0]['cgroup'] == '$CT/c5'" \
	"its session is the container's cgroup, labelled with its id and pod"
refused 1 "^bpfbox hook oci: adopt: no policy 'nope'.*; container ct-6 does not start unwatched" \
	"a hook that cannot adopt fails, so the runtime does not start the container" \
	sh -c "printf '%s' '$(state ct-6 "$(cat "$WS/c5.hostpid")" nope)' | '$BPFBOX' hook oci createRuntime --socket '$SOCK'"
refused 1 "container ct-7 does not start unwatched" \
	"with no daemon the hook fails too" \
	sh -c "printf '%s' '$(state ct-7 "$(cat "$WS/c5.hostpid")" agent)' | '$BPFBOX' hook oci createRuntime --socket '$TMPD/none.sock'"
printf '{"id":"ct-8","pid":1,"annotations":{}}' | "$BPFBOX" hook oci createRuntime --socket "$SOCK" \
	>"$TMPD/h8.out" 2>&1
rc=$?
[ "$rc" = 0 ] && [ ! -s "$TMPD/h8.out" ] && ok "a container without the annotation is left alone" ||
	fail "unannotated: exit $rc: $(oneline "$TMPD/h8.out")"
refused 2 "not an OCI container state" "stdin that is not a state is bad usage" \
	sh -c "echo nonsense | '$BPFBOX' hook oci createRuntime --socket '$SOCK'"
refused 2 "createRuntime or poststop" "an unknown stage is bad usage" \
	sh -c "echo '{}' | '$BPFBOX' hook oci prestart --socket '$SOCK'"
echo 1 >"$CT/c5/cgroup.kill"
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 15

# --- 7. twenty at once --------------------------------------------------------
for i in $(seq 1 20); do
	printf 'sleep 60\n' >"$WS/m$i.sh"
	container "m$i" --fork --pid
done
APIDS=
for i in $(seq 1 20); do
	"$BPFBOX" adopt --cgroup "$CT/m$i" --policy agent --label "n=$i" --socket "$SOCK" \
		>"$TMPD/m$i.sid" 2>&1 &
	APIDS="$APIDS $!"
done
for p in $APIDS; do wait "$p"; done
"$BPFBOX" sessions --json --socket "$SOCK" >"$TMPD/list.json" 2>&1
n=$("$PY" -c 'import json, sys
print(sum(1 for s in json.load(open(sys.argv[1])) if s["cgroup"].startswith(sys.argv[2] + "/m")))' \
	"$TMPD/list.json" "$CT")
[ "$n" = 20 ] && ok "twenty cgroups adopted at once are twenty sessions" ||
	fail "adopted at once: $n of 20: $(head -c 300 "$TMPD/list.json")"
for i in $(seq 1 20); do echo 1 >"$CT/m$i/cgroup.kill"; done
poll_until 15 sh -c "[ \$(grep -c '\"type\":\"session.end\"' '$A') -ge \$(grep -c '\"type\":\"session.start\"' '$A') ]" &&
	ok "each of them ends when its cgroup is killed" || fail "adopted sessions did not all end"
# --- 8. the daemon killed: enforcement stays, the next daemon takes it back ----
cat >"$WS/c6.sh" <<EOF
while [ ! -e "$WS/c6.go2" ]; do sleep 0.05; done
$PY "$WS/connect.py"
sleep 60
EOF
container c6 --fork --pid
SID6=$("$BPFBOX" adopt --cgroup "$CT/c6" --policy agent --socket "$SOCK" 2>"$TMPD/adopt.err")
touch "$WS/c6.go"
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
touch "$WS/c6.go2"
wait_grep "host loopback" "$WS/c6.out" 10
expect_grep "host loopback: 1$" "$WS/c6.out" \
	"with the daemon killed, the adopted cgroup's network rules still hold (pinned links)"
if start_daemon "$A" --config "$TMPD/config.json" --group nogroup; then
	expect_grep "re-adopted adopted cgroup $CT/c6 as session $SID6" "$DERR" \
		"the next daemon takes the adopted cgroup back as the same session"
else
	fail "the daemon did not start again: $(tail -3 "$DERR")"
fi
expect_listed "$SID6" "s['cgroup'] == '$CT/c6'" "bpfbox sessions lists it again"
echo 1 >"$CT/c6/cgroup.kill"
SID=$SID6 wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 15 &&
	ok "it ends when its cgroup is killed" || fail "no session.end for the re-adopted session"
poll_until 5 sh -c "! ls '$PIN' | grep -q '^adopt_'" &&
	ok "its pinned links are gone with it" || fail "pins left: $(ls "$PIN" | grep adopt_)"
expect_schema "the adopted sessions' stream validates against the schema" "$A"
kill -0 "$DPID" 2>/dev/null && ok "the daemon runs on" || fail "the daemon died: $(tail -3 "$DERR")"
finish
