#!/bin/sh
# No noise, no dangerous hints (docs/runtime.md, "Denial summary"). A name
# lookup tries the name services' sockets (nscd, systemd's user database,
# systemd-resolved, sssd) before its own files: refused, it falls back, and
# the session must print no denied line for it (counted apart as
# "fallbacks"). And no hint may propose --rw or --ro of /run, /var/run,
# /proc, /sys, /dev, /etc or a home directory: a model told so asks for it.
#
# The probes are refused by the BPF network layer (pathname unix connects,
# kernel >= 6.7): root with --audit. Runs on the host and in the test VM.

. "$(dirname "$0")/../lib.sh"
PY=${PY:-python3}
need_root_cgroup2 "fallbacks" "the BPF network layer (--audit)"

cleanup() { rm -rf "$TMPD"; }
trap cleanup EXIT
trap 'cleanup; exit 1' INT TERM

WS=$TMPD/ws
mkdir -p "$WS"
A=$TMPD/audit.jsonl

# fb_run NAME CMD...: CMD in a session with the BPF layer; $TMPD/NAME.{out,err,st}.
fb_run() {
	_n=$1
	shift
	: >"$A"
	"$BPFBOX" run -q --no-daemon --audit "$A" -w "$WS" --status-fd 3 -- "$@" </dev/null \
		>"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
	rc=$?
	cp "$TMPD/err" "$TMPD/$_n.err"
}

# Whether the BPF layer judges pathname unix connects here (6.7+): the
# probe of a socket under /run is refused with a record.
fb_run probe "$PY" -c 'import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("/run/bpfbox-test-no-such.sock")
except OSError as e:
    print(e.errno)'
if ! grep -q '"type":"connect".*"decision":"deny".*bpfbox-test-no-such' "$A"; then
	skip "fallbacks: no pathname unix connect records here (kernel < 6.7 or no BPF network layer: $(oneline "$TMPD/probe.err" 200)); the VM matrix covers 6.7+"
	finish
	exit $?
fi

# --- name lookups: probes counted apart, no denied line ----------------------
fb_run lookup sh -c 'getent passwd root >/dev/null && getent ahostsv4 localhost >/dev/null &&
	python3 -c "import socket, pwd; socket.getaddrinfo(\"localhost\", 80, socket.AF_INET); pwd.getpwnam(\"root\")" && echo looked-up'
# Positive control: the lookups did try a name service's socket, refused.
probes=$(grep -c '"type":"connect".*"decision":"deny".*"\(/var\)\?/run/\(nscd\|systemd/userdb\|systemd/resolve\)' "$A")
fallbacks=$(sed -n 's/.*"type":"ended".*"fallbacks":\([0-9]*\).*/\1/p' "$TMPD/st")
verdict "getent passwd/ahostsv4 and python getaddrinfo/getpwnam: no denied line for the name services' sockets, counted as fallbacks" 0 \
	"$(grep -qx looked-up "$TMPD/out" || echo "the lookups failed")$([ "$probes" -gt 0 ] || echo "no refused name-service connect in the audit (no positive control)")$(grep 'denied' "$TMPD/lookup.err" | head -3)$([ "${fallbacks:-0}" -ge "$probes" ] || echo "status ended has fallbacks=${fallbacks:-none}, the audit $probes")"

# A name service's socket named by the session itself, through /var/run.
fb_run nscd "$PY" -c 'import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("/var/run/nscd/socket")
except OSError as e:
    print(e.errno)'
verdict "a connect to /var/run/nscd/socket: refused, not listed" 0 \
	"$(grep -q '"decision":"deny".*nscd/socket' "$A" || echo "no refused connect in the audit")$(grep 'denied' "$TMPD/nscd.err")"

# --- hints never propose the host's own trees ----------------------------------
H=${HOME:-/root}
fb_run hints sh -c '
	for f in /run/x /var/run/x /etc/x /dev/x /sys/x /proc/x /root/x /root/.ssh/x "$1/.config/x" /home/x; do
		touch "$f"
	done 2>/dev/null
	mkdir /home/bpfbox-nobody 2>/dev/null
	cat /etc/shadow >/dev/null 2>&1
	python3 -c "
import socket
for p in (\"/run/dbus/system_bus_socket\", \"/var/run/bpfbox-x.sock\", \"/root/.gnupg/S.gpg-agent\"):
    try:
        socket.socket(socket.AF_UNIX).connect(p)
    except OSError:
        pass"
	touch /usr/bpfbox-x 2>/dev/null
	true' sh "$H"
# Positive controls: the denials are listed (with a hint), and a grant that
# is not the host's own still gets its --rw hint.
bad=$(grep -E -- "--(rw|ro) (/|/run|/var/run|/proc|/sys|/dev|/etc|/root|/home|$H)([/ ;,]|$)|grant its directory" "$TMPD/hints.err" | head -3)
verdict "no hint proposes --rw/--ro of /run, /var/run, /proc, /sys, /dev, /etc, / or a home directory" 0 \
	"$(grep -q 'denied 1 time: write /run/x' "$TMPD/hints.err" || echo "no denied line for /run/x")$(grep -q 'connect unix:/run/dbus/system_bus_socket' "$TMPD/hints.err" || echo "no denied line for the dbus socket")$(grep -q 'grant it with --rw /usr' "$TMPD/hints.err" || echo "no --rw hint for /usr/bpfbox-x (control)")$bad"

finish
