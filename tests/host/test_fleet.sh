# Fleet-side features against real servers: syslog over TLS (RFC 5425) to a
# real rsyslog with rsyslog-gnutls and a test CA made here (a collector with
# a wrong certificate refused, events spooled and delivered later; the
# collector killed mid-stream loses nothing), journald priority prefixes,
# config reload (SIGHUP and bpfbox daemon reload) and policy ceilings.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 fleet "the daemon, which loads BPF programs,"
need_rsyslog fleet lmnsd_gtls.so rsyslog-gnutls

daemon_scratch fleet
RS="$TMPD/rsyslog"
C="$TMPD/certs"
A="$TMPD/audit.jsonl"
mkdir -p "$SOCKDIR" "$RS/work" "$C"

# --- a test CA, the collector's certificates (right and wrong), ours --------
cert() { # NAME CA EKU SAN: a P-256 key and a certificate signed by CA
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$C/$1.key" \
		-out "$C/$1.csr" -subj "/CN=$1" 2>/dev/null &&
		printf 'extendedKeyUsage=%s\n%s\n' "$3" "${4:+subjectAltName=$4}" >"$C/$1.ext" &&
		openssl x509 -req -in "$C/$1.csr" -CA "$C/$2.pem" -CAkey "$C/$2.key" -CAcreateserial \
			-days 2 -extfile "$C/$1.ext" -out "$C/$1.pem" 2>/dev/null
}
for ca in ca other-ca; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$C/$ca.key" -out "$C/$ca.pem" -subj "/CN=bpfbox test $ca $$" 2>/dev/null
done
cert server ca serverAuth "IP:127.0.0.1,DNS:collector.test" &&
	cert wrong other-ca serverAuth "IP:127.0.0.1,DNS:collector.test" &&
	cert client ca clientAuth "" &&
	ok "a test CA, the collector's certificate, a wrong one (another CA) and a client certificate" ||
	fail "cannot make the test certificates with openssl"

TPORT=$(free_ports tcp)
# rsyslog_conf SERVERCERT: TLS only, the client must present a certificate of the CA.
rsyslog_conf() {
	cat >"$RS/rsyslog.conf" <<EOF
global(workDirectory="$RS/work" maxMessageSize="64k"
       defaultNetstreamDriver="gtls" defaultNetstreamDriverCAFile="$C/ca.pem"
       defaultNetstreamDriverCertFile="$C/$1.pem" defaultNetstreamDriverKeyFile="$C/$1.key")
module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1"
       streamDriver.authMode="x509/certvalid")
template(name="msgonly" type="string" string="%msg%\n")
ruleset(name="tls") { action(type="omfile" file="$RS/tls.out" template="msgonly") }
input(type="imtcp" port="$TPORT" address="127.0.0.1" ruleset="tls")
EOF
}

WORK='echo $BPFBOX_SESSION_ID > "$SID_FILE"; for i in 1 2 3 4 5 6; do /bin/true work $i; cat /etc/hostname >/dev/null; done; cat /etc/shadow 2>/dev/null; exit 0'
work() {
	SID_FILE="$WS/$1.sid" "$BPFBOX" run -q --env SID_FILE --daemon-socket "$SOCK" -w "$WS" -- \
		sh -c "$WORK" >/dev/null 2>&1
}
TLS="syslog+tls://127.0.0.1:$TPORT?ca=$C/ca.pem&cert=$C/client.pem&key=$C/client.key&spool=$TMPD/spool&confirm=200ms"
TLSNAME="syslog\+tls://127.0.0.1:$TPORT" # as a regular expression

# Bad TLS settings are refused before anything starts, in one line.
expect_rc 1 "a CA file that does not exist is refused at start" "$BPFBOX" daemon --socket "$SOCK" \
	--pin-dir "$PIN" --cgroup-parent "$PARENT" --audit /dev/null \
	--sink "syslog+tls://127.0.0.1:$TPORT?ca=$C/nope.pem&spool=$TMPD/spool"
expect_grep "ca=$C/nope.pem: " "$TMPD/err" "the refusal names the CA file"
expect_rc 2 "cert without key is bad usage" "$BPFBOX" daemon --socket "$SOCK" --audit /dev/null \
	--sink "syslog+tls://127.0.0.1:$TPORT?cert=$C/client.pem"

# The TLS library is opened only for a TLS sink: a run without one never
# loads it. A library that lacks what the sink calls is refused at start.
ldd "$BPFBOX" | grep -q libgnutls && fail "bpfbox links libgnutls: every run pays its start-up" ||
	ok "bpfbox does not link the TLS library (opened for a TLS sink only)"
mkdir "$TMPD/fakelib" && printf 'int bpfbox_not_tls;\n' >"$TMPD/fakelib/x.c" &&
	cc -shared -o "$TMPD/fakelib/libgnutls.so.30" "$TMPD/fakelib/x.c" || fail "cannot build a stand-in library"
expect_rc 1 "a TLS library without the functions the sink calls is refused at start" \
	env LD_LIBRARY_PATH="$TMPD/fakelib" "$BPFBOX" daemon --socket "$SOCK" --pin-dir "$PIN" \
	--cgroup-parent "$PARENT" --audit /dev/null --sink "$TLS"
expect_grep "libgnutls.so.30 lacks a function bpfbox calls: .*gnutls_" "$TMPD/err" \
	"the refusal names the library and the missing function"

# --- 1. the collector shows a certificate of another CA ---------------------
rsyslog_conf wrong
start_rsyslog && ok "rsyslog (gtls) listens on 127.0.0.1:$TPORT with a wrong certificate" ||
	fail "rsyslog did not start: $(cat "$RS/rsyslog.log")"
start_daemon "$A" --sink "$TLS" && ok "the daemon starts with a syslog+tls sink" ||
	fail "the daemon did not start: $(cat "$DERR")"
wait_grep "sink $TLSNAME: the collector's certificate is refused for 127.0.0.1: .*; events are kept" \
	"$DERR" 10 && ok "the wrong certificate is refused, in one line naming why" ||
	fail "no refusal: $(grep sink "$DERR")"
work w1
work w2
wait_grep "\"type\":\"sink.error\".*\"error\":\"EKEYREJECTED\"" "$A" 5 &&
	ok "the refusal is a sink.error event (EKEYREJECTED) in the other sinks" ||
	fail "no sink.error in the audit file"
kill -TERM "$DPID"
wait "$DPID"
DPID=
expect_grep "sink $TLSNAME: [1-9][0-9]* events kept in the spool $TMPD/spool for the next start" "$DERR" \
	"what was refused is kept in the spool at shutdown"
[ ! -s "$RS/tls.out" ] && ok "nothing reached the collector with the wrong certificate" ||
	fail "rsyslog got data over a refused session: $(head -c 200 "$RS/tls.out")"
stop_rsyslog

# --- 2. the right certificate: the spool goes first, nothing lost ------------
rsyslog_conf server
start_rsyslog && ok "rsyslog restarted with the right certificate" ||
	fail "rsyslog did not restart: $(tail -3 "$RS/rsyslog.log")"
start_daemon "$A" --sink "$TLS" || fail "the daemon did not start again: $(tail -3 "$DERR")"
work w3
W="$(cat "$WS/w1.sid") $(cat "$WS/w2.sid") $(cat "$WS/w3.sid")"
wait_grep "\"type\":\"session.end\",.*\"session\":\"$(cat "$WS/w3.sid")\"" "$RS/tls.out" 10 || true
seqcheck "$RS/tls.out" $W >"$TMPD/w.check"
expect_grep "^lines [1-9][0-9]* bad 0 events [1-9][0-9]* missing 0 order 0" "$TMPD/w.check" \
	"TLS: the spooled sessions and a new one all arrived, in order ($(cat "$TMPD/w.check"))"
"$PY" -c 'import ssl, socket, sys
# A TLS client without our client certificate is turned away by the collector:
# it really asks for one (x509/certvalid), so the sink really presented its own.
c = ssl.create_default_context(cafile=sys.argv[1]); c.check_hostname = False
s = c.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[2])), 3))
try:
    s.sendall(b"5 hello"); s.settimeout(3); s.recv(1)
except (ssl.SSLError, ConnectionError, OSError):
    pass' "$C/ca.pem" "$TPORT" 2>/dev/null
work w4 # the positive control: what the sink sends after it arrives
wait_grep "\"type\":\"session.end\",.*\"session\":\"$(cat "$WS/w4.sid")\"" "$RS/tls.out" 10 ||
	fail "the sink's session after the probe did not arrive"
grep -q 'hello' "$RS/tls.out" && fail "rsyslog took a client without a certificate" ||
	ok "the collector requires a client certificate (x509/certvalid): the sink presented one"

# --- 3. the collector is killed mid-stream and started again -----------------
(
	for i in 1 2 3 4 5 6 7 8; do
		work k$i
	done
) &
GEN=$!
wait_grep . "$WS/k2.sid" 20
stop_rsyslog
ok "rsyslog killed with SIGKILL while sessions run"
wait_count 2 "sink $TLSNAME: .*; events are kept" "$DERR" 20 &&
	ok "the sink saw the collector go" || fail "no outage seen: $(grep sink "$DERR" | tail -3)"
start_rsyslog && ok "rsyslog started again" || fail "rsyslog did not restart: $(tail -3 "$RS/rsyslog.log")"
wait $GEN
K=""
for i in 1 2 3 4 5 6 7 8; do K="$K $(cat "$WS/k$i.sid")"; done
wait_grep "\"type\":\"session.end\",.*\"session\":\"$(cat "$WS/k8.sid")\"" "$RS/tls.out" 30 || true
seqcheck "$RS/tls.out" $K >"$TMPD/k.check"
# At most one line cut short, by the killed rsyslog's own block write (as in
# test_sinks); every seq must still be there.
expect_grep "^lines [1-9][0-9]* bad [01] events [1-9][0-9]* missing 0 order 0" "$TMPD/k.check" \
	"TLS across the kill: every seq of 8 sessions arrived at least once, in order ($(cat "$TMPD/k.check"))"
wait_grep "sink $TLSNAME: connected again" "$DERR" 10 &&
	ok "the sink reconnected over TLS" || fail "no reconnect: $(grep sink "$DERR" | tail -3)"
kill -0 "$DPID" 2>/dev/null && ok "the daemon lived through it" || fail "the daemon died: $(tail -3 "$DERR")"
stop_rsyslog
kill -TERM "$DPID"
wait "$DPID"
DPID=

# --- 4. journald priorities, reload, ceilings ---------------------------------
A2="$TMPD/audit2.jsonl" S1="$TMPD/s1.jsonl" S2="$TMPD/s2.jsonl" CFG="$TMPD/daemon.json"
DERR2="$TMPD/daemon2.err"
: >"$DERR2"
printf '{"sinks": ["file:%s"]}\n' "$S1" >"$CFG"
# systemd names the journal's stream in $JOURNAL_STREAM (device:inode): here
# the daemon's stderr file plays the journal.
JOURNAL_STREAM=$(stat -c %d:%i "$DERR2") "$BPFBOX" daemon --socket "$SOCK" --pin-dir "$PIN" \
	--cgroup-parent "$PARENT" --audit "$A2" --config "$CFG" 2>>"$DERR2" &
DPID=$!
wait_grep 'ready' "$DERR2" 10 || fail "the daemon with --config did not start: $(cat "$DERR2")"
expect_grep '^<6>bpfbox daemon: ready' "$DERR2" "on the journal's stream, lines carry <N> priorities (ready: <6> info)"
grep -v '^<[0-7]>' "$DERR2" | grep -q . && fail "a line without a priority: $(grep -v '^<[0-7]>' "$DERR2" | head -1)" ||
	ok "every daemon line has its priority"
grep -q '^<' "$DERR" && fail "a priority prefix on a plain stderr file" || ok "no prefix when stderr is not the journal"

# A session that runs across the reload.
hold_session r '/bin/true after-reload; cat /etc/hostname >/dev/null'
R=$HELD
wait_grep "\"type\":\"session.start\".*\"session\":\"$R\"" "$S1" 5 || true
printf '%s\n' '{"sinks": ["file:'"$S2"'"],' \
	' "ceilings": {"rules": [{"name": "root-box", "uid": 0, "modes": ["workspace-write", "read-only"],' \
	'   "network": "allow-list", "limits": {"memory_mb": 256}, "action": "clamp"}]}}' >"$CFG"
expect_rc 0 "bpfbox daemon reload: a sink removed, another added, ceilings set" \
	"$BPFBOX" daemon reload --socket "$SOCK"
expect_grep '^reloaded: 2 sinks, 1 ceiling rules' "$TMPD/out" "reload says what it loaded"
release_session r
wait $RUNPID
wait_grep "\"type\":\"session.end\".*\"session\":\"$R\"" "$S2" 5 &&
	ok "the running session went on; its end went to the new sink" ||
	fail "no session.end in the new sink: $(tail -c 300 "$S2")"
cat >"$TMPD/r.py" <<'PY'
import json, sys
a, s1, s2, sid = sys.argv[1:5]
def seqs(f):
    return {json.loads(l)["seq"] for l in open(f) if '"%s"' % sid in l and '"seq"' in l}
ref, one, two = seqs(a), seqs(s1), seqs(s2)
print("ok" if ref and ref == one | two and ref == set(range(len(ref))) else "bad",
      "ref %d old %d new %d" % (len(ref), len(one), len(two)))
PY
"$PY" "$TMPD/r.py" "$A2" "$S1" "$S2" "$R" >"$TMPD/r.check"
expect_grep '^ok' "$TMPD/r.check" "no event of the running session lost across the reload ($(cat "$TMPD/r.check"))"
grep -q '"argv":\["/bin/true","after-reload"\]' "$S2" &&
	! grep -q '"argv":\["/bin/true","after-reload"\]' "$S1" &&
	ok "the exec after the reload went to the new sink only" ||
	fail "the exec after the reload: in the old sink or not in the new"

# Ceilings: above the rule is refused, in one line; limits are clamped.
expect_rc 125 "a mode above the ceiling is refused (exit 125)" "$BPFBOX" run -q --mode full-access \
	--daemon-socket "$SOCK" -w "$WS" -- touch "$WS/ran-full"
expect_grep "refused by ceiling 'root-box': mode full-access is not allowed" "$TMPD/err" \
	"the refusal names the rule and what is above it"
[ ! -e "$WS/ran-full" ] && ok "nothing ran" || fail "the command ran despite the refusal"
expect_rc 125 "network allow above an allow-list ceiling is refused" "$BPFBOX" run -q --net allow \
	--daemon-socket "$SOCK" -w "$WS" -- true
expect_grep "network allow is above allow-list" "$TMPD/err" "and says which"
wait_grep '"type":"ceiling".*"action":"refuse"' "$A2" 5 &&
	ok "each refusal is a ceiling event in the audit stream" || fail "no ceiling event"
SID_FILE="$WS/c.sid" "$BPFBOX" run -q --env SID_FILE --daemon-socket "$SOCK" -w "$WS" --status-fd 3 -- sh -c \
	'echo $BPFBOX_SESSION_ID > "$SID_FILE"; echo $$ > pid; while [ ! -e go2 ]; do sleep 0.05; done' \
	>/dev/null 2>"$TMPD/c.err" 3>"$TMPD/c.st" &
RUNPID=$!
wait_grep . "$WS/pid" 10
# $$ inside is a pid of the session's PID namespace: take bpfbox's child
# (the namespace's init, in the same cgroups) as the host sees it.
CPID=$(cut -d' ' -f1 "/proc/$RUNPID/task/$RUNPID/children")
MEMCG=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' "/proc/$CPID/cgroup")
LIMIT=$(cat "/sys/fs/cgroup/memory$MEMCG/memory.limit_in_bytes" 2>/dev/null ||
	cat "$CG2$(awk -F: '$1 == 0 { print $3 }' "/proc/$CPID/cgroup")/memory.max" 2>/dev/null)
[ "$LIMIT" = $((256 * 1024 * 1024)) ] &&
	ok "the memory limit asked for (2048 MB) is clamped to 256 MB in the kernel" ||
	fail "memory limit of the session: '$LIMIT'"
touch "$WS/go2"
wait $RUNPID && ok "the clamped session ran" || fail "the clamped session failed: $(cat "$TMPD/c.err")"
C=$(cat "$WS/c.sid")
expect_grep "\"type\":\"ceiling\".*\"session\":\"$C\".*\"action\":\"clamp\",\"reason\":\"ceiling 'root-box': lowered memory_mb 256\"" \
	"$A2" "the clamp is a ceiling event naming what was lowered"
expect_grep "\"type\":\"session.start\".*\"session\":\"$C\".*\"memory_mb\":256" "$A2" \
	"session.start carries the clamped policy (and its hash)"
expect_grep '"type":"started".*"limits":\{[^}]*"memory_mb":256[^}]*\},"clamped":"ceiling .root-box.: lowered memory_mb 256"' \
	"$TMPD/c.st" "the status channel's started says the clamped limit and the clamp (issue 32)"

# The rule does not allow --no-daemon: a run that would bypass the daemon is refused.
BPFBOX_SOCKET="$SOCK" expect_rc 125 "--no-daemon is refused where the ceiling does not allow it" \
	"$BPFBOX" run -q --no-daemon -w "$WS" -- touch "$WS/ran-nd"
expect_grep "does not allow --no-daemon for this user \(ceiling root-box\)" "$TMPD/err" \
	"and says which ceiling"
[ ! -e "$WS/ran-nd" ] && ok "nothing ran without the daemon" || fail "--no-daemon ran"

# A bad config is refused and the running one stays.
echo '{"sinks": ["file:relative"]' >"$CFG"
kill -HUP "$DPID"
wait_grep 'reload refused: .*; the running configuration stays' "$DERR2" 5 &&
	ok "SIGHUP with a bad config: refused in one line, the running configuration stays" ||
	fail "no refusal: $(tail -3 "$DERR2")"
expect_grep '^<3>bpfbox: error: reload refused' "$DERR2" "the refusal is an error for the journal (<3>)"
echo '{"sinks": [], "ceilings": {"rules": [{"name": "x", "modes": ["nope"]}]}}' >"$CFG"
expect_rc 1 "bpfbox daemon reload with a bad ceiling is refused (exit 1)" \
	"$BPFBOX" daemon reload --socket "$SOCK"
expect_grep "ceilings.rules\[0\].modes: 'nope' is not a mode" "$TMPD/err" "and names the bad key"
expect_rc 125 "the old ceilings still hold after the refused reloads" "$BPFBOX" run -q \
	--mode full-access --daemon-socket "$SOCK" -w "$WS" -- true
kill -0 "$DPID" 2>/dev/null && ok "the daemon runs on" || fail "the daemon died: $(tail -3 "$DERR2")"
finish
