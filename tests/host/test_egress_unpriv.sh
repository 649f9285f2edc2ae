# Egress by name without BPF (docs/network.md, "Without BPF"): an
# unprivileged caller (uid 65534) without a daemon. The session is in a
# network namespace of its own whose only way out is bpfbox run's proxy,
# through HTTP_PROXY and HTTPS_PROXY, and whose resolver is the proxy's
# (127.0.0.1:53 in it). The upstream is the test's own (tests/host/netfix.sh).
# Each case checks what the tool got and the summary's denied lines on the
# status channel (there is no audit stream without BPF).
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 egress-unpriv "the test's network namespace and veth pair"
if ! command -v setpriv >/dev/null; then
	fail "egress-unpriv: setpriv is missing (util-linux)"
	finish
	exit $?
fi
daemon_scratch egress-unpriv
. "$ROOT/tests/host/netfix.sh"
cleanup_extra() { netfix_down; }
chmod 755 "$TMPD"
netfix_up eu 198.51.100 80 443 allowed.test,other.test,api.test \
	allowed.test=198.51.100.2 other.test=198.51.100.2 api.test=198.51.100.2 \
	loop.test=127.0.0.1
cp "$TMPD/ca.crt" "$WS/ca.crt"
mkdir -p "$TMPD/home"
chown -R 65534:65534 "$WS" "$TMPD/home"
cd "$WS" || exit 1

AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
# ubox STATUS ARGS... -- CMD: one session of the unprivileged caller.
ubox() {
	_st=$1
	shift
	$AS env HOME="$TMPD/home" BPFBOX_UPSTREAM_CA="$TMPD/ca.crt" "$BPFBOX" run --no-daemon \
		-w "$WS" --net-resolver "$SRV" --timeout 60 --status-fd 3 "$@" 3>"$_st"
}

# 0. Control: the caller cannot reach anything by itself without a rule.
$AS "$BPFBOX" run --no-daemon -w "$WS" -q -- curl -sS --max-time 5 --noproxy '*' \
	http://$SRV/ >"$TMPD/out" 2>&1
if ! grep -q hello "$TMPD/out"; then
	ok "egress-unpriv: without a rule the session reaches nothing"
else
	fail "egress-unpriv: a session without a rule reached the server"
fi

# 1. Names through the proxy: HTTPS by CONNECT, plain HTTP by absolute URI;
#    another name gets a 403 naming the rule to add; the session's resolver
#    answers an allowed name and refuses another.
cat >"$WS/one.sh" <<'EOF'
echo "proxy=$HTTPS_PROXY"
cat /etc/resolv.conf
curl -sS --max-time 10 --cacert ca.crt https://allowed.test/
curl -sS --max-time 10 http://allowed.test/plain
curl -sS --max-time 10 http://other.test/
getent hosts allowed.test && echo resolved-allowed
getent hosts other.test || echo refused-other
EOF
ubox "$TMPD/one.st" --net-allow allowed.test:443 --net-allow allowed.test:80 -- sh one.sh \
	>"$TMPD/out" 2>"$TMPD/err"
expect_grep '^proxy=http://127\.0\.0\.1:[0-9]+$' "$TMPD/out" "egress-unpriv: the session gets HTTPS_PROXY"
expect_grep '^nameserver 127\.0\.0\.1$' "$TMPD/out" "egress-unpriv: the session's resolv.conf names its own resolver"
n=$(grep -c 'hello from allowed.test' "$TMPD/out")
if [ "$n" = 2 ]; then
	ok "egress-unpriv: an allowed name is reached by CONNECT and by an absolute URI"
else
	fail "egress-unpriv: an allowed name was reached $n times, want 2: $(head -c 300 "$TMPD/out") $(head -c 300 "$TMPD/err")"
fi
expect_grep 'egress to other.test port 80 denied .*--net-allow other.test:80' "$TMPD/out" \
	"egress-unpriv: another name gets a 403 that names the rule to add"
expect_grep "^$SRV +allowed.test" "$TMPD/out" "egress-unpriv: the session's resolver answers an allowed name"
expect_grep '^refused-other$' "$TMPD/out" "egress-unpriv: the session's resolver refuses another name"
expect_grep '"type":"denied","[^}]*"layer":"egress-proxy","op":"connect","what":"other.test:80","reason":"no net_allow rule",[^}]*"hint":"other.test:80 is not in the network allow-list; allow it with --net-allow other.test:80"' \
	"$TMPD/one.st" "egress-unpriv: the proxy's refusal is a denied status line with the rule to add"
expect_grep '"type":"denied","[^}]*"layer":"egress-proxy","op":"resolve","what":"other.test"' \
	"$TMPD/one.st" "egress-unpriv: the refused query is a denied status line"
expect_grep 'not enforced.*egress by name for tools that ignore HTTP_PROXY' "$TMPD/err" \
	"egress-unpriv: stderr says what is not enforced without BPF"
expect_grep '"type":"started",.*"not_enforced":\[[^]]*"egress by name for tools that ignore HTTP_PROXY and HTTPS_PROXY \(without the BPF network layer they cannot connect out at all: the daemon.s sessions can\)"' \
	"$TMPD/one.st" "egress-unpriv: the started line says it, as one item"

# 2. A tool that ignores the proxy variables fails closed, with a hint that
#    says so; an allowed name's address connected to directly included.
cat >"$WS/two.sh" <<EOF
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy
curl -sS --max-time 5 --cacert ca.crt https://allowed.test/ || echo direct-failed
curl -sS --max-time 5 http://$SRV/ || echo address-failed
EOF
ubox "$TMPD/two.st" --net-allow allowed.test:443 --net-allow "$SRV:80" -- sh two.sh \
	>"$TMPD/out" 2>"$TMPD/err"
if grep -q '^direct-failed$' "$TMPD/out" && grep -q '^address-failed$' "$TMPD/out" &&
	! grep -q hello "$TMPD/out"; then
	ok "egress-unpriv: a tool that ignores the proxy cannot connect out"
else
	fail "egress-unpriv: a direct connect got out: $(head -c 300 "$TMPD/out")"
fi
expect_grep '"type":"denied","[^}]*"layer":"seccomp","op":"connect","what":"198\.51\.100\.2:443"[^}]*"hint":"this session reaches the network only through its proxy' \
	"$TMPD/two.st" "egress-unpriv: the direct connect is a denied line whose hint names the proxy"

# 3. An address rule holds through the proxy too; a loopback server of the
#    session's own is reached directly (NO_PROXY), while the host's loopback
#    stays out of reach, by name (loop.test), by address and by CONNECT.
"$PY" -m http.server 0 --bind 127.0.0.1 >"$TMPD/hostsrv.log" 2>&1 &
HOSTSRV=$!
poll_until 10 grep -q 'Serving HTTP' "$TMPD/hostsrv.log"
HPORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$TMPD/hostsrv.log" | head -1)
cat >"$WS/three.sh" <<EOF
curl -sS --max-time 5 http://$SRV/addr
python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &
i=0; while ! curl -s -o /dev/null http://127.0.0.1:8765/ && [ \$i -lt 50 ]; do sleep 0.1; i=\$((i + 1)); done
curl -sS -o /dev/null -w 'own-loopback=%{http_code}\n' --max-time 5 http://127.0.0.1:8765/
kill \$!
curl -sS -o /dev/null -w 'host-loopback=%{http_code}\n' --max-time 5 http://127.0.0.1:$HPORT/ 2>/dev/null
curl -sS -o /dev/null -w 'via-proxy=%{http_code}\n' --max-time 5 --noproxy '' --proxy "\$HTTP_PROXY" http://127.0.0.1:$HPORT/
curl -sS -o /dev/null -w 'by-name=%{http_code}\n' --max-time 5 http://loop.test:$HPORT/
EOF
ubox "$TMPD/three.st" --net-allow "$SRV:80" --net-allow "127.0.0.1:$HPORT" \
	--net-allow "loop.test:$HPORT" -- sh three.sh >"$TMPD/out" 2>"$TMPD/err"
kill "$HOSTSRV" 2>/dev/null
expect_grep 'hello from' "$TMPD/out" "egress-unpriv: an address rule is reached through the proxy"
expect_grep '^own-loopback=200$' "$TMPD/out" "egress-unpriv: the session's own loopback server answers (NO_PROXY)"
if grep -q '^own-loopback=200$' "$TMPD/out" && ! grep -q 'host-loopback=200' "$TMPD/out" &&
	grep -q '^via-proxy=403$' "$TMPD/out" && grep -q '^by-name=403$' "$TMPD/out" &&
	! grep -q 'GET /' "$TMPD/hostsrv.log"; then
	ok "egress-unpriv: the host's loopback server is not reached, directly, through the proxy or by name"
else
	fail "egress-unpriv: the host's loopback: $(cat "$TMPD/out") / $(grep 'GET' "$TMPD/hostsrv.log" | head -2)"
fi

# 4. A secret held outside the session, unprivileged: the server gets the
#    value, the session only its placeholder.
TOKEN="tok-$$-unpriv-value"
export TOKEN
cat >"$WS/four.sh" <<'EOF'
echo "seen=$TOKEN"
curl -sS --max-time 10 -H "Authorization: Bearer $TOKEN" https://api.test/
EOF
$AS env HOME="$TMPD/home" TOKEN="$TOKEN" BPFBOX_UPSTREAM_CA="$TMPD/ca.crt" "$BPFBOX" run \
	--no-daemon -w "$WS" --net-resolver "$SRV" --timeout 60 --net-allow api.test:443 \
	--secret TOKEN@api.test -- sh four.sh >"$TMPD/out" 2>"$TMPD/err"
expect_grep 'hello from api.test' "$TMPD/out" "egress-unpriv: a secret's host is reached through the terminating proxy"
expect_grep "auth api.test Bearer $TOKEN" "$TMPD/srv.log" "egress-unpriv: the server received the secret's value"
expect_grep '^seen=bpfbox-secret-TOKEN-[0-9a-f]{32}$' "$TMPD/out" "egress-unpriv: the session sees only the placeholder"

# 4b. The proxy's sockets cannot be taken over from inside: binding its
#     port (with SO_REUSEADDR and SO_REUSEPORT) or the resolver's 53 fails,
#     and the proxy still answers after the tries.
cat >"$WS/take.py" <<'EOF'
import os, socket
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
for kind, p in ((socket.SOCK_STREAM, port), (socket.SOCK_DGRAM, 53)):
    s = socket.socket(socket.AF_INET, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        s.bind(("127.0.0.1", p))
        print("took", p)
    except OSError as e:
        print("refused", p, e.errno)
EOF
ubox "$TMPD/take.st" --net-allow allowed.test:80 -- sh -c 'python3 take.py; curl -sS --max-time 10 http://allowed.test/' \
	>"$TMPD/out" 2>"$TMPD/err"
if ! grep -q '^took' "$TMPD/out" && [ "$(grep -c '^refused' "$TMPD/out")" = 2 ] &&
	grep -q 'hello from allowed.test' "$TMPD/out"; then
	ok "egress-unpriv: the session cannot bind the proxy's port or the resolver's; the proxy still answers"
else
	fail "egress-unpriv: the proxy's sockets: $(tr '\n' ' ' <"$TMPD/out") $(head -c 200 "$TMPD/err")"
fi

# 5. --net-ask: a name no rule lists waits for the runtime's answer on
#    --ask-fd; approved, it is allowed for the rest of the session (asked
#    once); denied, a 403. Without an allow-list of names, refused (125).
rm -f "$TMPD/st" "$TMPD/an"
mkfifo "$TMPD/st" "$TMPD/an"
chmod 666 "$TMPD/st" "$TMPD/an"
"$PY" "$ROOT/tests/helpers/ask_responder.py" "$TMPD/st" "$TMPD/an" "$TMPD/asklog" approve deny &
RP=$!
$AS env HOME="$TMPD/home" "$BPFBOX" run --no-daemon -w "$WS" --net-resolver "$SRV" --timeout 60 \
	--net-allow allowed.test:80 --net-ask --status-fd 4 --ask-fd 3 4>"$TMPD/st" 3<"$TMPD/an" \
	-- sh -c 'for h in allowed.test other.test api.test other.test; do
		curl -sS --max-time 10 http://$h/ || echo "failed $h"; done' >"$TMPD/out" 2>"$TMPD/err"
wait "$RP"
if [ "$(grep -c 'hello from other.test' "$TMPD/out")" = 2 ] && grep -q 'hello from allowed.test' "$TMPD/out" &&
	grep -q 'egress to api.test port 80 denied' "$TMPD/out" && ! grep -q 'hello from api.test' "$TMPD/out"; then
	ok "egress-unpriv: --net-ask: an approved name is reached (twice), a denied one gets a 403"
else
	fail "egress-unpriv: --net-ask: $(tr '\n' ' ' <"$TMPD/out") $(head -c 200 "$TMPD/err")"
fi
"$PY" - "$TMPD/asklog" <<'PY' >"$TMPD/asks"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
asks = [l for l in lines if l["type"] == "ask"]
ans = [l["answer"] for l in lines if l["type"] == "answered"]
print([(a["kind"], a["name"], a["port"]) for a in asks], ans)
PY
expect_grep "^\[\('net', 'other.test', 80\), \('net', 'api.test', 80\)\] \['approve', 'deny'\]$" "$TMPD/asks" \
	"egress-unpriv: --net-ask: each unlisted name asked once on the status channel (kind net, name, port), the answers said"
# Unanswered: denied at the pause timeout, said as "timeout".
rm -f "$TMPD/st" "$TMPD/an"
mkfifo "$TMPD/st" "$TMPD/an"
chmod 666 "$TMPD/st" "$TMPD/an"
"$PY" "$ROOT/tests/helpers/ask_responder.py" "$TMPD/st" "$TMPD/an" "$TMPD/asklog2" none &
RP=$!
$AS env HOME="$TMPD/home" "$BPFBOX" run --no-daemon -w "$WS" --net-resolver "$SRV" --timeout 60 \
	--pause-timeout 1s --net-allow allowed.test:80 --net-ask --status-fd 4 --ask-fd 3 \
	4>"$TMPD/st" 3<"$TMPD/an" -- curl -sS --max-time 20 http://other.test/ >"$TMPD/out" 2>"$TMPD/err"
wait "$RP"
if grep -q 'egress to other.test port 80 denied' "$TMPD/out" && ! grep -q hello "$TMPD/out" &&
	grep -q '"type":"answered",.*"answer":"timeout"' "$TMPD/asklog2"; then
	ok "egress-unpriv: --net-ask: no answer within the pause timeout is a deny (said: timeout)"
else
	fail "egress-unpriv: --net-ask unanswered: $(tr '\n' ' ' <"$TMPD/out") / $(grep answered "$TMPD/asklog2")"
fi
# Without --ask-fd nobody can answer: said as not enforced, and refused.
$AS env HOME="$TMPD/home" "$BPFBOX" run --no-daemon -w "$WS" --net-resolver "$SRV" --timeout 60 \
	--net-allow allowed.test:80 --net-ask -- curl -sS --max-time 10 http://other.test/ \
	>"$TMPD/out" 2>"$TMPD/err"
if grep -q 'not enforced.*--net-ask without --ask-fd: nobody answers' "$TMPD/err" &&
	grep -q 'egress to other.test port 80 denied' "$TMPD/out"; then
	ok "egress-unpriv: --net-ask without --ask-fd: said as not enforced, the name refused"
else
	fail "egress-unpriv: --net-ask without --ask-fd: $(head -c 200 "$TMPD/out") $(grep -o 'asking[^;]*' "$TMPD/err")"
fi
$AS env HOME="$TMPD/home" "$BPFBOX" run --no-daemon -w "$WS" --net-ask -- touch ran >"$TMPD/out" 2>"$TMPD/err"
rc=$?
if [ $rc = 125 ] && [ ! -e "$WS/ran" ] && grep -q 'give at least one --net-allow NAME' "$TMPD/err"; then
	ok "egress-unpriv: --net-ask without an allow-list of names is refused (125)"
else
	fail "egress-unpriv: --net-ask alone: exit $rc: $(head -c 200 "$TMPD/err")"
fi

# 6. Without namespaces there is no way out to give: refused, nothing ran.
$AS env HOME="$TMPD/home" "$BPFBOX" run --no-daemon --no-namespaces -w "$WS" \
	--net-allow allowed.test:443 -- touch ran >"$TMPD/out" 2>"$TMPD/err"
rc=$?
if [ $rc = 125 ] && [ ! -e "$WS/ran" ] && grep -q 'network namespace of the session' "$TMPD/err"; then
	ok "egress-unpriv: without namespaces --net-allow is refused (exit 125), nothing ran"
else
	fail "egress-unpriv: without namespaces: exit $rc, ran=$([ -e "$WS/ran" ] && echo yes): $(head -c 300 "$TMPD/err")"
fi

finish
