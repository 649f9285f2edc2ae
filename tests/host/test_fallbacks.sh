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

# --- the session's own cgroup limits, read-only, nothing of another cgroup ------
# A runtime sizes itself from /proc/self/cgroup and /sys/fs/cgroup (ns_cgroup.c).
# The limit file: v2's memory.max, or v1's memory.limit_in_bytes on a hybrid host.
CGV='cd /sys/fs/cgroup
if [ -f memory.max ]; then m=memory.max; u=.; else m=memory/memory.limit_in_bytes; u=unified; fi
echo "limit=$(cat $m)"
echo "cg=$(cut -d: -f3 /proc/self/cgroup | sort -u | tr "\n" " ")"
echo 1 >$u/cgroup.freeze 2>/dev/null && echo wrote-freeze
echo max >$m 2>/dev/null && echo wrote-limit
echo $$ >$u/cgroup.procs 2>/dev/null && echo wrote-procs
mkdir $u/x 2>/dev/null && echo made-cgroup
echo "after=$(cat $m)"
echo "dirs=$(find /sys/fs/cgroup -mindepth 2 -type d | head -3)"
echo "sibling=$(grep -rl "$1" /proc/self/mountinfo /proc/self/cgroup 2>/dev/null; find /sys/fs/cgroup -name "$1*" | head -1)"'
# A sibling session running meanwhile: its cgroup is on the host, not in the view.
"$BPFBOX" run -q --no-daemon -w "$WS" --status-fd 3 -- sh -c 'while [ ! -e sib.go ]; do sleep 0.05; done' \
	</dev/null >/dev/null 2>&1 3>"$TMPD/sib.st" &
sibpid=$!
wait_grep '"type":"started"' "$TMPD/sib.st"
sib=$(sed -n 's/.*"type":"started".*"session":"\([0-9a-f]*\)".*/\1/p' "$TMPD/sib.st")
sibdir=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "$sib" 2>/dev/null | head -1)
RT='if command -v node >/dev/null; then node -e "console.log(\"runtime=\" + process.constrainedMemory())"; else echo "runtime=none"; fi'
"$BPFBOX" run -q --no-daemon -w "$WS" --memory 256 --cpu 50 --status-fd 3 -- sh -c "$CGV
$RT" sh "${sib:-none}" </dev/null >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
rc=$?
touch "$WS/sib.go"
wait $sibpid
o=$TMPD/out
# The writes are refused (EROFS, a denial line each); a read is no denial.
verdict "the session sees its own cgroup's limits read-only at /sys/fs/cgroup: memory 256 MB, cgroup '/', no write, no other cgroup, no denied line for the reads" 0 \
	"$(grep -qx limit=268435456 "$o" || echo "limit: $(grep limit= "$o")")$(grep -qx 'cg=/ ' "$o" || echo "/proc/self/cgroup: $(grep cg= "$o")")$(grep -E '^(wrote|made)' "$o" | tr '\n' ' ')$(grep -qx after=268435456 "$o" || echo "limit after the writes: $(grep after= "$o")")$(grep -qx 'dirs=' "$o" || echo "cgroups below the view's: $(grep dirs= "$o")")$([ -n "$sibdir" ] || echo "no sibling cgroup on the host (no positive control)")$(grep -qx 'sibling=' "$o" || echo "the sibling session shows: $(grep sibling= "$o")")$(grep -h 'denied' "$TMPD/err" "$TMPD/st" | grep -v -e 'EROFS' -e '"type":"ended"' | head -2)"
case $(sed -n 's/^runtime=//p' "$o") in
none) skip "cgroup view: no node here to read its constrainedMemory()" ;;
268435456) ok "node's process.constrainedMemory() in a --memory 256 session is 256 MB" ;;
*) fail "node's process.constrainedMemory() says $(sed -n 's/^runtime=//p' "$o"), want 268435456" ;;
esac

# uid 65534 in a user namespace, in a cgroup it owns (delegated): the
# files are its own, the read-only mount alone refuses the writes.
DP=$CG2/bpfbox-test-cgv-$$
if mkdir "$DP" && chown 65534:65534 "$DP" "$DP/cgroup.procs" "$DP/cgroup.subtree_control" "$DP/cgroup.threads"; then
	mkdir -p "$TMPD/ws65" && chown 65534:65534 "$TMPD/ws65" && chmod 755 "$TMPD"
	sh -c 'echo $$ >"$1/cgroup.procs" && BPFBOX_CGROUP_PARENT=$1 exec setpriv --reuid 65534 --regid 65534 --clear-groups "$2" run -q --no-daemon -w "$3" -- sh -c "$4" sh none' \
		sh "$DP" "$BPFBOX" "$TMPD/ws65" "$CGV" </dev/null >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "uid 65534 (user namespace) in a cgroup it owns: its cgroup at /sys/fs/cgroup, every write refused" 0 \
		"$(grep -qx 'cg=/ ' "$o" || echo "/proc/self/cgroup: $(grep cg= "$o")")$(grep -E '^(wrote|made)' "$o" | tr '\n' ' ')$(grep -qx 'dirs=' "$o" || echo "cgroups below the view's: $(grep dirs= "$o")")"
	rmdir "$DP" 2>/dev/null
else
	fail "cannot make a delegated cgroup under $CG2"
fi

# --- execs not found along PATH: counted, no record, no denial ---------------
# (The search for the command itself, before its exec, stays recorded:
# test_audit.sh, test_schema.sh.)
LP=$(seq -f "$TMPD/nothere%g" 30 | tr '\n' ':')/usr/bin:/bin
: >"$A"
"$BPFBOX" run -q --no-daemon --audit "$A" -w "$WS" --env LP="$LP" --status-fd 3 -- sh -c \
	'PATH=$LP; for i in $(seq 50); do env nothere$i 2>/dev/null; done
	printf "#!/bin/sh\n" >./nox; chmod 644 ./nox; ./nox 2>/dev/null; true' </dev/null >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
rc=$?
nf=$(sed -n 's/.*"type":"ended".*"exec_not_found":\([0-9]*\).*/\1/p' "$TMPD/st")
nfa=$(sed -n 's/.*"type":"session.end".*"exec_not_found":\([0-9]*\).*/\1/p' "$A")
verdict "50 names tried along a 32-entry PATH: no exec record, no denied line, counted in exec_not_found; a refused exec still recorded" 0 \
	"$("$PY" -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
first = min((e["seq"] for e in ev if e["type"] == "exec" and e["errno"] is None), default=0)
late = [e["filename"] for e in ev if e["type"] == "exec" and e["errno"] in ("ENOENT", "ENOTDIR") and e["seq"] > first]
print(" ".join(late[:3]))' "$A")$([ "${nf:-0}" -ge 1500 ] || echo "ended.exec_not_found=${nf:-none}, want >= 1500")$([ "$nf" = "$nfa" ] || echo "session.end says ${nfa:-none}")$(grep -h 'denied' "$TMPD/err" "$TMPD/st" | grep -v 'nox' | grep -v '"denied":1' | head -2)$(grep -q '"type":"exec".*"decision":"deny".*"errno":"EACCES".*"filename":"./nox"' "$A" || echo "no EACCES record for ./nox (control)")$(grep -q '"type":"denied".*nox' "$TMPD/st" || echo "no denied line for ./nox (control)")"
if node "$ROOT/tools/validate-events.js" "$A" >"$TMPD/v.out" 2>&1; then
	ok "the stream with exec_not_found validates against the schema"
else
	fail "schema: $(head -c 400 "$TMPD/v.out")"
fi

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
