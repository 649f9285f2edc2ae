#!/bin/sh
# A loopback of the session's own under --net deny (docs/network.md): a
# server on 127.0.0.1 and ::1 inside a session answers a client inside,
# while the host's loopback services (a server this test starts), the cloud
# metadata address and every other address stay unreachable. As root
# without BPF, as root with the BPF network layer (--audit), and as an
# unprivileged user (a user namespace); without namespaces inet sockets
# stay denied, as before, and the session says so.
#
# Runs on the host and unmodified in the test VM.

. "$(dirname "$0")/../lib.sh"
PY=${PY:-python3}
HPID=""

cleanup() {
	[ -n "$HPID" ] && kill "$HPID" 2>/dev/null
	rm -rf "$TMPD"
}
trap cleanup EXIT
trap 'cleanup; exit 1' INT TERM

if ! command -v "$PY" >/dev/null 2>&1; then
	skip "loopback: no python3 here; the VM matrix covers it"
	finish
	exit $?
fi

WS=$TMPD/ws
mkdir -p "$WS"
chmod 755 "$TMPD" "$WS"

# The host's own loopback services: one TCP listener on 127.0.0.1 and ::1
# (the same port where it can), one line in $TMPD/host.log per connection.
cat >"$TMPD/host.py" <<'EOF'
import socket, sys, threading
log, ready = sys.argv[1], sys.argv[2]
s4 = socket.socket(socket.AF_INET)
s4.bind(("127.0.0.1", 0))
s4.listen(16)
port = s4.getsockname()[1]
s6 = socket.socket(socket.AF_INET6)
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
try:
    s6.bind(("::1", port))
except OSError:
    s6.bind(("::1", 0))
s6.listen(16)
def serve(s):
    while True:
        c, a = s.accept()
        with open(log, "a") as f:
            f.write("%s\n" % a[0])
        c.sendall(b"host\n")
        c.close()
for s in (s4, s6):
    threading.Thread(target=serve, args=(s,), daemon=True).start()
with open(ready + ".tmp", "w") as f:
    f.write("%d %d\n" % (port, s6.getsockname()[1]))
import os
os.rename(ready + ".tmp", ready)
threading.Event().wait()
EOF

# The session's program: its own servers and clients, then the host's.
cat >"$WS/lo.py" <<'EOF'
import errno, socket, sys, threading
p4, p6 = int(sys.argv[1]), int(sys.argv[2])

def name(e):
    return errno.errorcode.get(e.errno, str(e)) if isinstance(e, OSError) else str(e)

def own(fam, host, port=0):
    s = socket.socket(fam)
    s.bind((host, port))
    s.listen(1)
    def one():
        c, _ = s.accept()
        c.sendall(b"own\n")
        c.close()
    threading.Thread(target=one, daemon=True).start()
    c = socket.create_connection((host, s.getsockname()[1]), timeout=5)
    got = c.recv(16).decode().strip()
    c.close()
    s.close()
    return got

for tag, fam, host in (("own4", socket.AF_INET, "127.0.0.1"), ("own6", socket.AF_INET6, "::1")):
    try:
        print(tag, own(fam, host))
    except OSError as e:
        print(tag, name(e))
for tag, host, port in (("host4", "127.0.0.1", p4), ("host6", "::1", p6),
                        ("meta", "169.254.169.254", 80), ("other", "203.0.113.1", 80)):
    try:
        c = socket.create_connection((host, port), timeout=3)
        print(tag, "reached", c.recv(16).decode().strip())
    except OSError as e:
        print(tag, name(e))
# The host's port number, bound again: a loopback of its own.
try:
    print("sameport", own(socket.AF_INET, "127.0.0.1", p4))
except OSError as e:
    print("sameport", name(e))
EOF
chmod 644 "$WS/lo.py"

"$PY" "$TMPD/host.py" "$TMPD/host.log" "$TMPD/host.ready" &
HPID=$!
if ! wait_file "$TMPD/host.ready"; then
	fail "loopback: the host's listener did not start"
	finish
	exit $?
fi
read -r P4 P6 <"$TMPD/host.ready"
: >"$TMPD/host.log"

# host_hits: connections the host's listener has seen.
host_hits() { grep -c . "$TMPD/host.log"; }

# host_control: a connect from the host reaches the listener (positive
# control before and after each session); "" or why not.
host_control() {
	_hc_n=$(host_hits)
	"$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5).recv(8)' "$P4" 2>/dev/null
	wait_count $((_hc_n + 1)) . "$TMPD/host.log" 10 || echo "a connect from the host did not reach the host's listener"
}

# has LINE: "" if the session printed LINE, else what it printed.
has() { grep -qx "$1" "$TMPD/out" || echo "no '$1' in its output"; }

# unreached: the host lines were refused (any errno), the listener saw nothing.
unreached() {
	for _u in host4 host6 meta other; do
		grep -q "^$_u reached" "$TMPD/out" && echo "$_u was reached"
		grep -q "^$_u " "$TMPD/out" || echo "no $_u line"
	done
}

# loopback_case NAME RUNNER...: the session program through RUNNER...
loopback_case() {
	_lc=$1
	shift
	_ctl=$(host_control)
	_before=$(host_hits)
	"$@" -w "$WS" -- "$PY" lo.py "$P4" "$P6" </dev/null >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	_after_ctl=$(host_control)
	# The session's connects, had they arrived, came before the control's one.
	_seen=$(($(host_hits) - _before - 1))
	verdict "loopback ($_lc): servers on 127.0.0.1 and ::1 inside answer a client inside" 0 \
		"$(has "own4 own")$(has "own6 own")$(has "sameport own")"
	verdict "loopback ($_lc): the host's 127.0.0.1/::1 listener, 169.254.169.254 and 203.0.113.1 are unreachable" 0 \
		"$_ctl$_after_ctl$(unreached)$([ "$_seen" -gt 0 ] && echo "the host's listener saw $_seen connection(s) from the session")"
	# A connect out is the policy's refusal, said so (issue 18), not ENETUNREACH.
	verdict "loopback ($_lc): a connect out of the namespace fails with EPERM and a denied line" 0 \
		"$(has "other EPERM")$(has "meta EPERM")$(grep -q "denied 1 time: connect 203.0.113.1:80 (" "$TMPD/err" || echo "no denied line for 203.0.113.1:80")"
}

loopback_case "root, seccomp and Landlock" "$BPFBOX" run -q --no-daemon
if [ "$(id -u)" = 0 ]; then
	loopback_case "root, with the BPF network layer" "$BPFBOX" run -q --no-daemon --audit "$TMPD/audit.jsonl"
else
	skip "loopback (root, with the BPF network layer): needs root; CI runs as root"
fi

NOBODY=65534
if [ "$(id -u)" != 0 ]; then
	skip "loopback (unprivileged): already unprivileged (the first case)"
elif ! command -v setpriv >/dev/null 2>&1; then
	skip "loopback (unprivileged): no setpriv on this system"
else
	chown -R "$NOBODY:$NOBODY" "$WS"
	loopback_case "unprivileged, a user namespace" \
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$BPFBOX" run -q --no-daemon
fi

# Without namespaces: inet sockets stay denied (seccomp), and the
# not-enforced line names the loopback.
"$BPFBOX" run --no-daemon --no-namespaces -w "$WS" -- "$PY" lo.py "$P4" "$P6" </dev/null >"$TMPD/out" 2>"$TMPD/err"
rc=$?
verdict "loopback (--no-namespaces): inet sockets stay denied (EPERM) and the session says so" 0 \
	"$(has "own4 EPERM")$(has "own6 EPERM")$(grep -q "not enforced on this host: .*a loopback of its own" "$TMPD/err" || echo "no not-enforced line for the loopback")"

# --net allow: the host's network, no namespace of its own.
if [ "$(id -u)" = 0 ]; then
	_ctl=$(host_control)
	"$BPFBOX" run -q --no-daemon --net allow -w "$WS" -- "$PY" lo.py "$P4" "$P6" </dev/null >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "loopback (--net allow): the host's network as before (its listener reached)" 0 \
		"$_ctl$(has "host4 reached host")$(has "own4 own")"
fi

# Through a daemon: its BPF programs see the register's private_net flag.
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ "$(id -u)" != 0 ] || [ -z "$CG2" ]; then
	skip "loopback (through a daemon): needs root and a cgroup2 mount; CI runs as root"
else
	cleanup_extra() { [ -n "$HPID" ] && kill "$HPID" 2>/dev/null; }
	daemon_scratch loopback
	if start_daemon "$TMPD/daemon.jsonl"; then
		loopback_case "root, through a daemon" "$BPFBOX" run -q --daemon-socket "$SOCK"
	else
		fail "loopback (through a daemon): the daemon did not start: $(oneline "$DERR")"
	fi
fi

finish
