# Egress by name (docs/network.md): the test's own resolver, HTTP and HTTPS
# servers (a test CA) and a raw TCP server in a network namespace of its
# own, reached over a veth pair; sessions with name rules through the
# embedded agent. Each case checks what the tool got and the net.allow /
# net.deny records, and every line validates against the schema.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 egress "network namespaces and the BPF redirect"
daemon_scratch egress-test
. "$ROOT/tests/host/netfix.sh"
cleanup_extra() { netfix_down; }
chmod 755 "$TMPD"
# The session reads the test CA as ca.crt: **/*.pem is a credential pattern
# the BPF LSM denies (the Full level, tests/vm/egress.sh).
N=$(($$ % 200 + 20))
S=10.201.$N.2
netfix_up eg 10.201.$N 80,8080 443 allowed.test,other.test,a.wild.test,loop.test \
	allowed.test=$S other.test=$S a.wild.test=$S wild.test=$S \
	loop.test=127.0.0.1 meta.test=169.254.169.254
cp "$TMPD/ca.crt" "$WS/ca.crt"
# Positive control, outside any session: the servers answer.
if curl -sS --max-time 5 --noproxy '*' --cacert "$WS/ca.crt" \
	--resolve allowed.test:443:$SRV https://allowed.test/ 2>&1 | grep -q 'hello from allowed.test'; then
	ok "egress: the test's HTTPS server answers outside a session"
else
	fail "egress: the test's HTTPS server does not answer"
fi
cd "$WS" || exit 1

# box AUDIT RULES... -- CMD: one embedded session against the test resolver.
box() {
	audit=$1
	shift
	"$BPFBOX" run --audit "$audit" -w "$WS" --net-resolver $SRV --timeout 30 "$@"
}

# A tool that ignores HTTP_PROXY: curl with the proxy variables unset.
cat >"$WS/nocurl" <<'EOF'
#!/bin/sh
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy
exec curl --cacert ca.crt -sS --max-time 10 "$@"
EOF
chmod +x "$WS/nocurl"

# 1. An allowed name over TLS, by a tool that ignores HTTP_PROXY: the SNI decides.
A="$TMPD/a.jsonl"
box "$A" --net-allow allowed.test:443 -- ./nocurl https://allowed.test/ >"$TMPD/out" 2>"$TMPD/err"
expect_grep 'hello from allowed.test' "$TMPD/out" "egress: an allowed name is reached over TLS without HTTP_PROXY"
check_events "$A" "any(e['type'] == 'net.allow' and e['protocol'] == 'tcp' and e['name_from'] == 'sni' and e['name'] == 'allowed.test' and e['address'] == '$SRV' and e['port'] == 443 and e['rule'] == 'allowed.test:443' and e['bytes_in'] > 0 and e['bytes_out'] > 0 and e['comm'] == 'curl' and e['pid'] > 0 for e in net)" \
	"egress: net.allow names the SNI, the address, the rule and the bytes both ways"
check_events "$A" "any(e['type'] == 'net.allow' and e['protocol'] == 'dns' and e['name'] == 'allowed.test' and e['address'] == '$SRV' for e in net)" \
	"egress: the allowed query is a net.allow record with its answer"

# 2. Another name: the resolver refuses it, the tool cannot even resolve it.
B="$TMPD/b.jsonl"
box "$B" --net-allow allowed.test:443 -- ./nocurl https://other.test/ >"$TMPD/out" 2>"$TMPD/err"
rc=$?
# curl 6: could not resolve the host (the resolver's REFUSED).
if [ $rc -eq 6 ] && ! grep -q hello "$TMPD/out"; then
	ok "egress: another name is refused (curl exit $rc)"
else
	fail "egress: another name was reached: $(cat "$TMPD/out")"
fi
check_events "$B" "any(e['type'] == 'net.deny' and e['protocol'] == 'dns' and e['name'] == 'other.test' and e['rule'] is None and e['layer'] == 'egress-proxy' for e in net)" \
	"egress: the refused query is a net.deny record"

# 3. A wildcard matches a subdomain, not the bare domain.
C="$TMPD/c.jsonl"
box "$C" --net-allow '*.wild.test:443' -- sh -c "./nocurl https://a.wild.test/; ./nocurl --resolve wild.test:443:$SRV https://wild.test/" >"$TMPD/out" 2>"$TMPD/err"
expect_grep 'hello from a.wild.test' "$TMPD/out" "egress: *.wild.test reaches a.wild.test"
# A negative check, after its positive control in the same session.
if grep -q 'hello from a.wild.test' "$TMPD/out" && ! grep -q 'hello from wild.test' "$TMPD/out"; then
	ok "egress: *.wild.test does not reach wild.test"
else
	fail "egress: *.wild.test reached wild.test"
fi

# 4. Port ranges: 8000-8100 allows 8080, not 80 (an HTTP 403 naming the rule to add).
D="$TMPD/d.jsonl"
box "$D" --net-allow allowed.test:8000-8100 -- sh -c "./nocurl http://allowed.test:8080/; ./nocurl http://allowed.test:80/" >"$TMPD/out" 2>"$TMPD/err"
expect_grep 'hello from allowed.test' "$TMPD/out" "egress: a port inside the range is reached"
expect_grep '^bpfbox: egress to allowed.test port 80 denied .*--net-allow allowed.test:80' "$TMPD/out" \
	"egress: a port outside the range gets a 403 that names the rule to add"
check_events "$D" "any(e['type'] == 'net.deny' and e['name_from'] == 'host' and e['name'] == 'allowed.test' and e['port'] == 80 for e in net)" \
	"egress: the denied port is a net.deny record from the Host header"

# 5. Tools that honour HTTP_PROXY (set by bpfbox) go through CONNECT.
E="$TMPD/e.jsonl"
box "$E" --net-allow allowed.test:443 --status-fd 3 -- sh -c 'echo "proxy=$HTTPS_PROXY"; curl --cacert ca.crt -sS --max-time 10 https://allowed.test/; curl -sS --max-time 10 http://other.test/' >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/e.st"
expect_grep '^proxy=http://127.0.0.1:[0-9]+$' "$TMPD/out" "egress: the session gets HTTP_PROXY and HTTPS_PROXY"
expect_grep 'hello from allowed.test' "$TMPD/out" "egress: an allowed name is reached through HTTP CONNECT"
expect_grep 'egress to other.test port 80 denied' "$TMPD/out" "egress: a proxied request to another name gets a 403"
check_events "$E" "any(e['type'] == 'net.allow' and e['protocol'] == 'proxy' and e['name'] == 'allowed.test' and e['bytes_in'] > 0 for e in net) and any(e['type'] == 'net.deny' and e['protocol'] == 'proxy' and e['name'] == 'other.test' for e in net)" \
	"egress: CONNECT and absolute-URI requests are net.allow / net.deny records"
# The proxy's refusal is a denial of the summary (issue 32): a status line
# naming the host and port, the proxy's reason and the rule that would allow it.
expect_grep '"type":"denied","[^}]*"layer":"egress-proxy","op":"connect","what":"other.test:80","reason":"no net_allow rule",[^}]*"hint":"other.test:80 is not in the network allow-list; allow it with --net-allow other.test:80' \
	"$TMPD/e.st" "egress: a request the proxy refused is a denied status line whose hint names the --net-allow"

# 6. DNS rebinding: allowed names that resolve to loopback or the metadata address.
F="$TMPD/f.jsonl"
box "$F" --net-allow loop.test --net-allow meta.test --status-fd 3 -- sh -c "./nocurl http://loop.test/; echo rc=\$?; ./nocurl http://meta.test/; echo rc=\$?" >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/f.st"
if grep -q '^rc=6' "$TMPD/out" && [ "$(grep -c '^rc=6' "$TMPD/out")" = 2 ]; then
	ok "egress: names resolving to 127.0.0.1 and 169.254.169.254 do not resolve in the session"
else
	fail "egress: rebinding: $(cat "$TMPD/out") $(head -c 300 "$TMPD/err")"
fi
check_events "$F" "sum(1 for e in net if e['type'] == 'net.deny' and e['protocol'] == 'dns' and e['reason'].startswith('rebinding') and e['address'] in ('127.0.0.1', '169.254.169.254')) >= 2" \
	"egress: each rebinding answer is a net.deny record naming the address"
# Never allowable: the denied line says so and proposes no --net-allow
# (one line for both names when they share a reason: either may be the one).
if grep -q '"type":"denied","[^}]*"op":"resolve","what":"\(meta\|loop\).test",[^}]*"reason":"rebinding[^}]*"hint":"\(meta\|loop\).test resolves to an address no session may reach by name[^"]*not allowed by policy"' "$TMPD/f.st" &&
	! grep '"type":"denied"' "$TMPD/f.st" | grep -q -- '--net-allow'; then
	ok "egress: a rebinding refusal is a denied line that says 'not allowed by policy' and proposes nothing"
else
	fail "egress: rebinding denial: $(grep denied "$TMPD/f.st" | cut -c 100-)"
fi

# 7. Literal addresses: one the resolver answered for an allowed name is
# judged by that name; one it never answered is refused at connect().
cat >"$WS/raw.py" <<EOF
import socket, sys
def talk(addr, port):
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect((addr, port))
        print("peer", s.getpeername()[0], s.getpeername()[1])
        print("got", s.recv(100).decode().strip() or "eof")
    except OSError as e:
        print("error", e.errno)
def talk6(addr, port):
    s = socket.socket(socket.AF_INET6)
    s.settimeout(10)
    s.connect((addr, port))
    print("peer6", s.getpeername()[0], s.getpeername()[1])
    print("got6", s.recv(100).decode().strip() or "eof")
if sys.argv[1] != "noresolve":
    socket.getaddrinfo("allowed.test", 7000, socket.AF_INET)
if sys.argv[1] == "resolve6":
    talk6("::ffff:$SRV", int(sys.argv[2]))
elif sys.argv[1] == "udp":
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.sendto(b"x", ("$SRV", int(sys.argv[2])))
        print("udp sent")
    except OSError as e:
        print("udp error", e.errno)
else:
    talk("$SRV", int(sys.argv[2]))
EOF
G="$TMPD/g.jsonl"
box "$G" --net-allow allowed.test -- "$PY" raw.py noresolve 7000 >"$TMPD/out" 2>"$TMPD/err"
expect_grep '^error 1$' "$TMPD/out" "egress: a raw connect to an address no allowed name resolved to is refused (EPERM)"
check_events "$G" "any(e['type'] == 'connect' and e['decision'] == 'deny' and e['address'] == '$SRV' and e['port'] == 7000 for e in ev)" \
	"egress: the refused raw connect is a connect deny record"
H="$TMPD/h.jsonl"
box "$H" --net-allow allowed.test -- "$PY" raw.py resolve 7000 >"$TMPD/out" 2>"$TMPD/err"
expect_grep '^got raw hello$' "$TMPD/out" "egress: an allowed name used by its literal address is reached"
expect_grep "^peer $SRV 7000\$" "$TMPD/out" "egress: getpeername shows the original destination, not the proxy"
check_events "$H" "any(e['type'] == 'net.allow' and e['name_from'] == 'address' and e['name'] == 'allowed.test' and e['port'] == 7000 for e in net)" \
	"egress: the literal-address connect is judged by the name the resolver gave it"
# The same through an IPv6 socket (connect6, the mapped address).
box "$TMPD/h6.jsonl" --net-allow allowed.test -- "$PY" raw.py resolve6 7000 >"$TMPD/out" 2>"$TMPD/err"
expect_grep '^got6 raw hello$' "$TMPD/out" "egress: an IPv6 socket to the mapped address goes through the proxy"
expect_grep "^peer6 ::ffff:$SRV 7000\$" "$TMPD/out" "egress: getpeername6 shows the original destination"
# UDP other than DNS (QUIC) to an allowed name's address stays denied.
box "$TMPD/u.jsonl" --net-allow allowed.test -- "$PY" raw.py udp 443 >"$TMPD/out" 2>"$TMPD/err"
expect_grep '^udp error 1$' "$TMPD/out" "egress: UDP to an allowed name's address (QUIC) is refused (EPERM)"
I="$TMPD/i.jsonl"
box "$I" --net-allow allowed.test:443 -- "$PY" raw.py resolve 7000 >"$TMPD/out" 2>"$TMPD/err"
if grep -q '^got raw hello' "$TMPD/out"; then
	fail "egress: a literal address reached a port its name's rule does not allow"
else
	check_events "$I" "any(e['type'] == 'net.deny' and e['name_from'] == 'address' and e['name'] == 'allowed.test' and e['port'] == 7000 for e in net)" \
		"egress: a literal address is held to its name's ports (net.deny by address)"
fi

# A tool that drops a connection while the proxy still writes to it: the
# session goes on (the proxy gets EPIPE, not SIGPIPE), and so does the proxy.
cat >"$WS/drop.py" <<EOF
import socket
socket.getaddrinfo("allowed.test", 80, socket.AF_INET)
for i in range(3):
    s = socket.create_connection(("$SRV", 80), timeout=10)
    s.sendall(b"GET /big=20000000 HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n")
    s.recv(1)
    s.close()
s = socket.create_connection(("$SRV", 80), timeout=10)
s.sendall(b"GET / HTTP/1.1\\r\\nHost: allowed.test\\r\\nConnection: close\\r\\n\\r\\n")
print(s.makefile().read().splitlines()[-1])
EOF
L="$TMPD/l.jsonl"
expect_rc 0 "egress: a tool dropping proxied connections mid-transfer does not end the session" \
	box "$L" --net-allow allowed.test:80 -- "$PY" drop.py
expect_grep '^hello from allowed.test$' "$TMPD/out" "egress: the proxy serves the next connection after dropped ones"

# A request head split over two segments is read whole: judged by its Host.
cat >"$WS/split.py" <<EOF
import socket, time
socket.getaddrinfo("allowed.test", 80, socket.AF_INET)
s = socket.create_connection(("$SRV", 80), timeout=10)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(b"GET / HTTP/1.1\\r\\nHo")
time.sleep(0.2)
s.sendall(b"st: allowed.test\\r\\nConnection: close\\r\\n\\r\\n")
print(s.makefile().read().splitlines()[-1])
EOF
SP="$TMPD/sp.jsonl"
box "$SP" --net-allow allowed.test:80 -- "$PY" split.py >"$TMPD/out" 2>"$TMPD/err"
expect_grep '^hello from allowed.test$' "$TMPD/out" "egress: a request head in two segments is served"
check_events "$SP" "any(e['type'] == 'net.allow' and e['name_from'] == 'host' and e['name'] == 'allowed.test' for e in net)" \
	"egress: a request head in two segments is judged by its Host, not by its address"

# 8. net_deny carves an exception out of a wildcard.
J="$TMPD/j.jsonl"
box "$J" --net-allow '*.test:443' --net-deny other.test -- sh -c "./nocurl https://allowed.test/; ./nocurl https://other.test/" >"$TMPD/out" 2>"$TMPD/err"
expect_grep 'hello from allowed.test' "$TMPD/out" "egress: *.test reaches allowed.test"
check_events "$J" "any(e['type'] == 'net.deny' and e['name'] == 'other.test' and e['rule'] == 'other.test' for e in net) and not any(e['type'] == 'net.allow' and e['name'] == 'other.test' for e in net)" \
	"egress: --net-deny other.test refuses it and names the rule"

# With --net allow everything is open: name rules start no proxy.
box "$TMPD/m.jsonl" --net allow --net-allow allowed.test -- sh -c 'echo "proxy=${HTTP_PROXY:-none}"' >"$TMPD/out" 2>"$TMPD/err"
expect_grep '^proxy=none$' "$TMPD/out" "egress: --net allow with a name rule sets no proxy"

# 9. Without the BPF network layer (unprivileged, no daemon: nothing can
# load it; as root it loads by itself, issue 31) name rules go through the
# proxy of the session's network namespace (test_egress_unpriv.sh); without
# namespaces either, they are refused.
if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	mkdir -p "$TMPD/ws-nb" && chmod 777 "$TMPD/ws-nb" && chmod 755 "$TMPD"
	expect_rc 125 "egress: name rules without BPF or namespaces (uid 65534, no daemon) are refused with exit 125" \
		setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$BPFBOX" run --no-daemon --no-namespaces -w "$TMPD/ws-nb" --net-allow allowed.test:443 -- true
	expect_rc 0 "egress: as root a name rule needs no --audit (the programs load by themselves)" \
		"$BPFBOX" run --no-daemon -q -w "$WS" --net-allow allowed.test:443 -- true
else
	skip "egress: name rules refused unprivileged: needs root and setpriv (the host suite runs it)"
fi
expect_rc 125 "egress: a malformed name rule is refused with exit 125" \
	"$BPFBOX" run --no-daemon -w "$WS" --net-allow 'bad..name:443' -- true
expect_grep "invalid network rule 'bad..name:443'" "$TMPD/err" "egress: the error names the rule and the form"

# net_ask_case TAG RUN...: a session run by RUN with --net-ask, whose
# runtime approves the first question and denies the second: other.test
# (a query, any port) is reached, a.wild.test refused, each asked once.
net_ask_case() {
	_nt=$1
	shift
	rm -f "$TMPD/ast" "$TMPD/aan"
	mkfifo "$TMPD/ast" "$TMPD/aan"
	"$PY" "$ROOT/tests/helpers/ask_responder.py" "$TMPD/ast" "$TMPD/aan" "$TMPD/asklog" approve deny &
	_rp=$!
	"$@" --net-allow allowed.test:443 --net-ask --status-fd 4 --ask-fd 3 4>"$TMPD/ast" 3<"$TMPD/aan" \
		-- sh -c './nocurl https://other.test/; ./nocurl https://a.wild.test/ || echo "refused a.wild.test"' \
		>"$TMPD/out" 2>"$TMPD/err"
	wait "$_rp"
	if grep -q 'hello from other.test' "$TMPD/out" && grep -q '^refused a.wild.test$' "$TMPD/out" &&
		[ "$(grep -c '"type":"ask",.*"kind":"net","name":"other.test","port":null' "$TMPD/asklog")" = 1 ] &&
		[ "$(grep -c '"type":"ask",.*"kind":"net","name":"a.wild.test","port":null' "$TMPD/asklog")" = 1 ] &&
		grep -q '"type":"answered",.*"answer":"deny"' "$TMPD/asklog"; then
		ok "egress: --net-ask ($_nt): each name asked once; approved, reached; denied, refused"
	else
		fail "egress: --net-ask ($_nt): $(tr '\n' ' ' <"$TMPD/out") / $(grep '"ask"' "$TMPD/asklog" | head -c 300) $(head -c 300 "$TMPD/err")"
	fi
}

# 10. Daemon mode: the daemon runs the proxy; an operator approves a domain
# of a running session (op net, `bpfbox net`).
K="$TMPD/k.jsonl"
if start_daemon "$K" --group nogroup; then
	rm -f "$WS/sid" "$WS/go"
	cat >"$WS/approve.sh" <<'EOF'
echo "$BPFBOX_SESSION_ID" > sid
./nocurl https://allowed.test/
./nocurl https://other.test/ || echo "other refused"
i=0
while [ ! -e go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
./nocurl https://other.test/
EOF
	"$BPFBOX" run --daemon-socket "$SOCK" -w "$WS" --net-resolver $SRV --timeout 30 \
		--net-allow allowed.test:443 -- sh approve.sh >"$TMPD/out" 2>"$TMPD/err" &
	RUNPID=$!
	wait_grep 'other refused' "$TMPD/out" 10
	SID=$(cat "$WS/sid" 2>/dev/null)
	# An id prefix, as pause and kill take (issue 32).
	"$BPFBOX" net "$(printf %.8s "$SID")" allow other.test:443 --socket "$SOCK" >"$TMPD/net.out" 2>&1 &&
		ok "egress: bpfbox net adds a rule to a running session of the daemon, named by an id prefix" ||
		fail "egress: bpfbox net: $(cat "$TMPD/net.out")"
	touch "$WS/go"
	wait $RUNPID
	expect_grep 'hello from allowed.test' "$TMPD/out" "egress: daemon mode reaches an allowed name"
	expect_grep 'other refused' "$TMPD/out" "egress: daemon mode refuses another name"
	expect_grep 'hello from other.test' "$TMPD/out" "egress: the approved name is reached while the session runs"
	check_events "$K" "any(e['type'] == 'net.allow' and e['session'] == '$SID' and e['name'] == 'other.test' and e['rule'] == 'other.test:443' and e['protocol'] == 'tcp' for e in net) and any(e['type'] == 'net.deny' and e['session'] == '$SID' and e['name'] == 'other.test' for e in net)" \
		"egress: the daemon's stream has the denial, then the allow by the added rule"
	expect_rc 1 "egress: bpfbox net refuses an unknown session" \
		"$BPFBOX" net 0123456789abcdef0123456789abcdef allow x.test --socket "$SOCK"
	# A session's owner (not root) may deny a destination, not widen.
	WSN="$TMPD/ws-nobody"
	mkdir -p "$WSN"
	chown 65534:65534 "$WSN"
	setpriv --reuid 65534 --regid 65534 --clear-groups "$BPFBOX" run -q --daemon-socket "$SOCK" \
		-w "$WSN" --net-resolver $SRV --net-allow allowed.test:443 -- sh -c \
		'echo $BPFBOX_SESSION_ID > sid; i=0; while [ ! -e go ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done' \
		>"$TMPD/nobody.out" 2>&1 &
	RUNPID=$!
	wait_file "$WSN/sid" 60
	NSID=$(cat "$WSN/sid" 2>/dev/null)
	[ -n "$NSID" ] || fail "egress: the owner's session did not start in 60 s: $(head -c 600 "$TMPD/nobody.out")"
	expect_rc 0 "egress: the owner may add a net_deny rule to its running session" \
		setpriv --reuid 65534 --regid 65534 --clear-groups "$BPFBOX" net "$NSID" deny other.test --socket "$SOCK"
	expect_rc 1 "egress: the owner may not widen its running session's egress" \
		setpriv --reuid 65534 --regid 65534 --clear-groups "$BPFBOX" net "$NSID" allow other.test --socket "$SOCK"
	expect_grep 'only root may allow' "$TMPD/err" "egress: the refusal says who may"
	touch "$WSN/go"
	wait $RUNPID
	# --net-ask through the daemon: its proxy asks the loop, which says
	# session.ask (kind net) on the stream; bpfbox run relays the runtime's
	# answers (--ask-fd), as for a command rule's ask.
	net_ask_case daemon "$BPFBOX" run --daemon-socket "$SOCK" --audit "$TMPD/dn.jsonl" -w "$WS" \
		--net-resolver $SRV --timeout 30
	check_events "$K" "sum(1 for e in ev if e['type'] == 'session.ask' and e.get('kind') == 'net' and e['name'] in ('other.test', 'a.wild.test') and e['port'] is None and e['answer'] is not None and 'seq' not in e) == 2 and any(e['type'] == 'session.ask' and e.get('kind') == 'net' and e['name'] == 'other.test' and e['answer'] == 'approve' and e['answered']['how'] == 'ask_fd' for e in ev)" \
		"egress: --net-ask (daemon): session.ask (kind net) asked and answered in the daemon's stream, without a sequence number"
else
	fail "egress: the daemon did not get ready: $(cat "$DERR")"
fi

# 11. --net-ask, embedded: a tool's DNS query of a name no rule lists waits
#     for the runtime (port null: a query asks for the name on every port);
#     approved, the connect by SNI that follows passes; denied, the query is
#     refused.
L="$TMPD/l.jsonl"
net_ask_case embedded box "$L"
check_events "$L" "any(e['type'] == 'net.allow' and e['protocol'] == 'tcp' and e['name'] == 'other.test' and e['rule'] == 'other.test' for e in net) and any(e['type'] == 'net.deny' and e['protocol'] == 'dns' and e['name'] == 'a.wild.test' for e in net)" \
	"egress: --net-ask (embedded): the approved name is the rule of its net.allow, the denied query a net.deny"

# 12. Every record validates against the schema.
VALIDATE="$ROOT/tools/validate-events.js"
node "$VALIDATE" /dev/null >/dev/null 2>&1 || "$ROOT/tools/npm-deps.sh" >/dev/null 2>&1
if node "$VALIDATE" /dev/null >/dev/null 2>&1; then
	if cat "$A" "$B" "$D" "$E" "$F" "$G" "$H" "$J" "$K" "$L" >"$TMPD/all.jsonl" &&
		node "$VALIDATE" "$TMPD/all.jsonl" >"$TMPD/v.out" 2>&1; then
		ok "egress: every record validates against the schema"
	else
		fail "egress: schema: $(head -c 600 "$TMPD/v.out")"
	fi
else
	fail "egress: the schema validator does not run (make deps installs ajv)"
fi

finish
