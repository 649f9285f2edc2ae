# The RELP sink (docs/sinks.md): a real daemon running real sessions, a
# real rsyslog receiving with imrelp on loopback, stopped mid-stream and
# started again. Every event arrives; what was sent and not answered when
# the collector went is sent again (RELP's at-least-once), nothing else twice.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 relp "the daemon, which loads BPF programs,"
need_rsyslog relp imrelp.so rsyslog-relp

daemon_scratch relp
RS="$TMPD/rsyslog"
A="$TMPD/audit.jsonl" # the reference: --audit, every event
mkdir -p "$RS/work" "$SOCKDIR"

set -- $(free_ports tcp tcp)
PORT=$1 TLSPORT=$2

# relp+tls: a test CA, the collector's certificate and ours.
C="$TMPD/ca"
mkdir -p "$C"
cert() { # NAME EKU SAN: a P-256 key and a certificate signed by the test CA
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$C/$1.key" \
		-out "$C/$1.csr" -subj "/CN=$1" 2>/dev/null &&
		printf 'extendedKeyUsage=%s\n%s\n' "$2" "${3:+subjectAltName=$3}" >"$C/$1.ext" &&
		openssl x509 -req -in "$C/$1.csr" -CA "$C/ca.pem" -CAkey "$C/ca.key" -CAcreateserial \
			-days 2 -extfile "$C/$1.ext" -out "$C/$1.pem" 2>/dev/null
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	-keyout "$C/ca.key" -out "$C/ca.pem" -subj "/CN=bpfbox relp test $$" 2>/dev/null &&
	cert server serverAuth "IP:127.0.0.1" && cert client clientAuth "" ||
	fail "cannot make the test certificates with openssl"

cat >"$RS/rsyslog.conf" <<EOF
global(workDirectory="$RS/work" maxMessageSize="64k")
module(load="imrelp")
template(name="msgonly" type="string" string="%msg%\n")
ruleset(name="relp") { action(type="omfile" file="$RS/relp.out" template="msgonly") }
input(type="imrelp" port="$PORT" address="127.0.0.1" ruleset="relp")
ruleset(name="relptls") { action(type="omfile" file="$RS/relptls.out" template="msgonly") }
input(type="imrelp" port="$TLSPORT" address="127.0.0.1" ruleset="relptls" tls="on"
      tls.caCert="$C/ca.pem" tls.myCert="$C/server.pem" tls.myPrivKey="$C/server.key"
      tls.authMode="certvalid")
EOF

start_rsyslog() {
	rm -f "$RS/rsyslog.pid"
	"$RSYSLOGD" -n -f "$RS/rsyslog.conf" -i "$RS/rsyslog.pid" >>"$RS/rsyslog.log" 2>&1 &
	RPID=$!
	poll_until 5 "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 1).close()" \
		2>/dev/null
}

WORK='echo $BPFBOX_SESSION_ID > "$SID_FILE"; for i in 1 2 3 4 5 6; do /bin/true work $i; cat /etc/hostname >/dev/null; done; exit 0'
work() {
	SID_FILE="$WS/$1.sid" "$BPFBOX" run -q --env SID_FILE --daemon-socket "$SOCK" -w "$WS" -- \
		sh -c "$WORK" >/dev/null 2>&1
}


start_rsyslog && ok "rsyslog listens with imrelp on 127.0.0.1:$PORT" ||
	fail "rsyslog did not start: $(cat "$RS/rsyslog.log")"
start_daemon "$A" --sink "relp://127.0.0.1:$PORT?spool=$TMPD/spool&queue=256K" && ok "the daemon starts with a relp:// sink" || {
	fail "the daemon did not get ready: $(cat "$DERR")"
	finish
	exit 1
}

# Phase 1: the collector is up; every event once.
work p1a
work p1b
SID=$(cat "$WS/p1b.sid")
poll_until 10 grep -qs "\"type\":\"session.end\",.*\"session\":\"$SID\"" "$RS/relp.out"
P1="$(cat "$WS/p1a.sid") $(cat "$WS/p1b.sid")"
seqcheck "$RS/relp.out" $P1 >"$TMPD/p1"
expect_grep "^lines [1-9][0-9]* bad 0 events [1-9][0-9]* missing 0 order 0 dups 0$" "$TMPD/p1" \
	"RELP: rsyslog got every event of 2 sessions once, each line JSON ($(cat "$TMPD/p1"))"

# Phase 2: rsyslog stops (SIGTERM: it writes what it answered) while
# sessions go on, and starts again.
(
	for i in 1 2 3 4 5 6 7 8; do
		work p2-$i
	done
) &
GEN=$!
poll_until 10 test -s "$WS/p2-2.sid"
kill -TERM "$RPID"
wait "$RPID" 2>/dev/null
RPID=
poll_until 10 grep -qs "sink relp://127.0.0.1:$PORT: .*events are kept" "$DERR" &&
	ok "the daemon saw the collector go" ||
	fail "the daemon did not see the collector go: $(grep sink "$DERR")"
poll_until 20 test -s "$WS/p2-5.sid"
start_rsyslog && ok "rsyslog started again" || fail "rsyslog did not restart: $(tail -3 "$RS/rsyslog.log")"
wait $GEN
LAST=$(cat "$WS/p2-8.sid")
poll_until 30 grep -qs "\"type\":\"session.end\",.*\"session\":\"$LAST\"" "$RS/relp.out"
P2=""
for i in 1 2 3 4 5 6 7 8; do P2="$P2 $(cat "$WS/p2-$i.sid")"; done
seqcheck "$RS/relp.out" $P2 >"$TMPD/p2"
expect_grep "^lines [1-9][0-9]* bad 0 events [1-9][0-9]* missing 0 order 0 " "$TMPD/p2" \
	"RELP across a restart: every seq of 8 sessions arrived, in order ($(cat "$TMPD/p2"))"
# Twice only what was sent and not answered when the collector went: at
# most one window (128 frames, RELP_WINDOW), never a replay of what it answered.
DUPS=$(sed -n 's/.* dups \([0-9]*\)$/\1/p' "$TMPD/p2")
SENT=$(grep -c . "$A")
[ -n "$DUPS" ] && [ "$DUPS" -lt "$SENT" ] && [ "$DUPS" -le 128 ] &&
	ok "duplicates only of unanswered frames ($DUPS)" ||
	fail "duplicates: $DUPS of $SENT events"
expect_grep "sink relp://127.0.0.1:$PORT: connected again" "$DERR" "the sink reconnected"
kill -0 "$DPID" 2>/dev/null && ok "the daemon lived through it" || fail "the daemon died: $(tail -3 "$DERR")"

# relp+tls: the collector's certificate verified, ours presented.
kill "$DPID"
wait "$DPID" 2>/dev/null
start_daemon "$A" \
	--sink "relp+tls://127.0.0.1:$TLSPORT?ca=$C/ca.pem&cert=$C/client.pem&key=$C/client.key&spool=$TMPD/spool-tls"
poll_until 10 grep -qs "relp+tls.*connected" "$DERR"
work tls
SID=$(cat "$WS/tls.sid")
poll_until 10 grep -qs "\"type\":\"session.end\",.*\"session\":\"$SID\"" "$RS/relptls.out"
seqcheck "$RS/relptls.out" "$SID" >"$TMPD/tls"
expect_grep "^lines [1-9][0-9]* bad 0 events [1-9][0-9]* missing 0 order 0 dups 0$" "$TMPD/tls" \
	"relp+tls: every event of a session once, through TLS with certificates ($(cat "$TMPD/tls"))"

# collector PYTHON: a collector of our own on a loopback port the kernel
# picks ($CPORT, pid $CPID); PYTHON runs once the sink connected (c).
collector() {
	rm -f "$TMPD/cport"
	"$PY" -c "import os, re, socket, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
$1" >"$TMPD/cport" &
	CPID=$!
	poll_until 5 test -s "$TMPD/cport"
	CPORT=$(cat "$TMPD/cport")
}
# daemon_to PORT SPOOL: the daemon again, its sink relp://127.0.0.1:PORT.
daemon_to() {
	kill "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	: >"$DERR"
	start_daemon "$A" --sink "relp://127.0.0.1:$1?spool=$2"
}

# A collector that does not speak RELP (it answers garbage).
collector 'c.recv(4096); c.sendall(b"hello there\n"); c.recv(4096)'
daemon_to "$CPORT" "$TMPD/spool2"
poll_until 10 grep -qs "sink relp://127.0.0.1:$CPORT: .*does not speak RELP" "$DERR" &&
	ok "a collector that does not speak RELP is an outage, said in one line" ||
	fail "no RELP error: $(grep sink "$DERR")"
kill "$CPID" 2>/dev/null

# A collector that takes the open and then frames without answering them:
# the sink sends one window of frames (128) and waits, however many events
# are queued; the window is what bounds the duplicates above. Then it
# answers the first frame, and the sink sends exactly one more (the control:
# the sink is alive, and only the window held it).
collector "buf, answered = b'', False
while b'\\n' not in buf: buf += c.recv(4096)
c.sendall(b'1 rsp 6 200 OK\\n')
c.settimeout(0.2)
end = time.time() + 60
while time.time() < end:
    if not answered and os.path.exists('$TMPD/answer'):
        c.sendall(b'2 rsp 6 200 OK\\n'); answered = True
    try: d = c.recv(65536)
    except socket.timeout: continue
    if not d: break
    buf += d
    open('$TMPD/silent.tmp', 'w').write('%d\\n' % len(re.findall(rb'(?:^|\\n)[0-9]+ syslog [0-9]+ ', buf)))
    os.rename('$TMPD/silent.tmp', '$TMPD/silent.count')"
daemon_to "$CPORT" "$TMPD/spool3"
work silent1
work silent2
QUEUED=$(grep -c -e "$(cat "$WS/silent1.sid")" -e "$(cat "$WS/silent2.sid")" "$A")
frames_at_least() { [ "$(cat "$TMPD/silent.count" 2>/dev/null || echo 0)" -ge "$1" ]; }
poll_until 10 frames_at_least 128
N=$(cat "$TMPD/silent.count" 2>/dev/null)
touch "$TMPD/answer"
poll_until 10 frames_at_least 129
N2=$(cat "$TMPD/silent.count" 2>/dev/null)
[ "$N" = 128 ] && [ "$N2" = 129 ] &&
	ok "a collector that does not answer gets one window of frames (128 of $QUEUED queued events), one answer lets one more go" ||
	fail "a silent collector got ${N:-no} frames, then ${N2:-no} after one answer (window 128, $QUEUED events)"
kill "$CPID" 2>/dev/null
finish
