# The register reply's "cgroup1" (docs/daemon.md "register"): on a hybrid
# host a root `bpfbox run --daemon-socket` registers before its fork and its
# child joins the v1 cgroup of each limit that the reply names
# (userspace/run/via_daemon.c: take_cgroup1, join_v1_ahead, and lib/util.c path_plain).
# A fake daemon (root's socket, the line protocol, the real reply's shape)
# names cgroups a child must never join; docs/SECURITY.md says any other
# than one under the controller's mount, one level down or more, with no
# empty, '.' or '..' component, is left to the daemon's attach. The fake
# refuses every attach: a refused name ends in exit 125 with the attach's
# one-line error and an attach request in its log, and the command never
# ran. A name that the client took would have been joined (each resolves
# to a real cgroup) and the command would have run.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 reply "a fake daemon on a root-owned socket and v1 cgroups"

# This host's v1 mount of each limit's controller, as the client finds it
# (the first cgroup v1 mount whose options name the controller).
v1_mount() {
	awk -v c="$1" '$3 == "cgroup" { n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] == c) { print $2; exit } }' /proc/mounts
}
CTRLS=''
for c in memory pids cpu; do
	m=$(v1_mount "$c")
	[ -n "$m" ] || continue
	CTRLS="$CTRLS $c"
	eval "M_$c=\$m"
done
if [ -z "$CTRLS" ]; then
	skip "reply: no v1 controller is mounted (pure cgroup2): the cgroup1 reply is for hybrid hosts, and no VM cell is hybrid"
	finish
	exit $?
fi
mnt() { eval "echo \$M_$1"; }

T=bpfbox-reply-$$
CG2S="$CG2/$T" # the v2 cgroup the reply names
# Nested v1 cgroups whose path is longer than the client keeps (512 bytes).
LONG=''
for i in 1 2 3 4 5 6 7 8 9; do LONG="$LONG/$(printf 'l%.0s' $(seq 60))"; done
cleanup_extra() {
	[ -n "${FPID:-}" ] && kill "$FPID" 2>/dev/null
	for c in $CTRLS; do
		d="$(mnt "$c")/$T/x$LONG"
		while [ "$d" != "$(mnt "$c")/$T" ]; do
			rmdir "$d" 2>/dev/null
			d=${d%/*}
		done
		rmdir "$(mnt "$c")/$T" 2>/dev/null
	done
	rmdir "$CG2S" 2>/dev/null
	rm -rf "$TMPD"
}
trap 'cleanup_extra' EXIT INT TERM
for c in $CTRLS; do
	mkdir -p "$(mnt "$c")/$T/x$LONG" || {
		fail "reply: cannot make v1 cgroups under $(mnt "$c"): $T/x..."
		finish
		exit 1
	}
done
mkdir "$CG2S"

# The fake daemon: one thread a connection, one JSON reply a request line.
# register: the real daemon's reply on this host (copied from one), its
# cgroup and cgroup1 from $TMPD/case.json; attach: refused; the rest ok.
# Every request's op goes to $TMPD/ops, one a line.
cat >"$TMPD/fake.py" <<'PY'
import json, os, socketserver, sys
path, case, ops = sys.argv[1:4]
class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            req = json.loads(line)
            op = req.get("op")
            with open(ops, "a") as f:
                f.write("%s\n" % op)
            if op == "register":
                c = json.load(open(case))
                rep = {"ok": True, "session": req.get("session"), "index": 1, "cgroup": c["cgroup"],
                       "layers": {"bpf_audit": True, "bpf_network": True, "bpf_unix_connect": True,
                                  "bpf_lsm": False, "cmd_rules": False, "cmd_ask": False},
                       "limits": {"memory": "cgroup1", "pids": "cgroup1", "cpu": "cgroup1",
                                  "disk": "inotify", "pause": "cgroup2", "kill": "cgroup2"},
                       "cgroup1": c["cgroup1"]}
            elif op == "attach":
                rep = {"ok": False, "error": "fake daemon: attach refused", "code": "EPERM"}
            elif op == "unregister":
                rep = {"ok": True, "session": req.get("session"), "state": "ended",
                       "denials": [], "denials_other": 0}
            else:
                rep = {"ok": True}
            self.wfile.write((json.dumps(rep) + "\n").encode())
class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
s = S(path, H)
os.chmod(path, 0o660)  # the real daemon's mode; the client wants root's socket
open(path + ".up", "w").close()
s.serve_forever()
PY
SOCKDIR="$TMPD/sock"
SOCK="$SOCKDIR/bpfbox.sock"
mkdir -m 750 "$SOCKDIR"
"$PY" "$TMPD/fake.py" "$SOCK" "$TMPD/case.json" "$TMPD/ops" 2>"$TMPD/fake.err" &
FPID=$!
if ! poll_until 10 test -e "$SOCK.up"; then
	fail "reply: the fake daemon did not start: $(oneline "$TMPD/fake.err")"
	finish
	exit 1
fi
WS="$TMPD/ws"
mkdir -p "$WS"

# case NAME CTRL PATH: the reply names PATH for CTRL and the valid
# $MOUNT/$T/x for the other controllers. The command writes its cgroups to
# $WS/ran.NAME. Runs bpfbox from / (a relative name resolves there); sets
# rc, and keeps its stderr in $TMPD/err.NAME.
case_run() {
	"$PY" - "$TMPD/case.json" "$CG2S" "$2" "$3" $CTRLS <<'PY'
import json, sys
out, cg2, ctrl, path = sys.argv[1:5]
mounts = {}
for l in open("/proc/mounts"):
    f = l.split()
    if f[2] == "cgroup":
        for o in f[3].split(","):
            mounts.setdefault(o, f[1])
t = cg2.rsplit("/", 1)[1]
c1 = {c: mounts[c] + "/" + t + "/x" for c in sys.argv[5:]}
if ctrl:
    c1[ctrl] = path
json.dump({"cgroup": cg2, "cgroup1": c1}, open(out, "w"))
PY
	: >"$TMPD/ops"
	(cd / && "$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" -- sh -c \
		'cat /proc/self/cgroup >"ran.$1"' sh "$1") >"$TMPD/out.$1" 2>"$TMPD/err.$1"
	rc=$?
}

# refused NAME CTRL PATH: the client did not take PATH for CTRL.
refused() {
	case_run "$@"
	if [ "$rc" = 125 ] && [ ! -e "$WS/ran.$1" ] && [ "$(wc -l <"$TMPD/err.$1")" = 1 ] &&
		grep -q 'could not move the command into its session cgroup: fake daemon: attach refused' "$TMPD/err.$1" &&
		grep -qx attach "$TMPD/ops"; then
		ok "reply: $2 cgroup1 '$4' is not joined: the daemon's attach is asked, and its refusal is exit 125 with one line"
	else
		fail "reply: $2 cgroup1 $4: exit $rc, want 125; ops $(oneline "$TMPD/ops"); ran: $(oneline "$WS/ran.$1"); stderr: $(oneline "$TMPD/err.$1")"
	fi
}

# The positive control: valid names are joined, with no attach.
case_run valid '' ''
want=$(for c in $CTRLS; do printf '%s:/%s/x\n' "$c" "$T"; done)
got=$(for c in $CTRLS; do grep -E "^[0-9]+:([^:]*,)?$c(,[^:]*)?:" "$WS/ran.valid" 2>/dev/null | sed "s/^[0-9]*:[^:]*:/$c:/"; done)
if [ "$rc" = 0 ] && [ "$got" = "$want" ] && ! grep -qx attach "$TMPD/ops"; then
	ok "reply: the child joins the v1 cgroups the reply names ($(echo $want)), with no attach"
else
	fail "reply: valid cgroup1: exit $rc; joined '$(echo $got)', want '$(echo $want)'; ops $(oneline "$TMPD/ops"); stderr: $(oneline "$TMPD/err.valid")"
fi

# Each bad name, for each controller, resolves to a real cgroup (but the
# empty and the over-long one): the controller's root ('/', no limit), the
# test's parent, another controller's cgroup.
prev=$(echo $CTRLS | awk '{ print $NF }')
for c in $CTRLS; do
	M=$(mnt "$c")
	refused "$c.mount" "$c" "$M" "MOUNT"
	refused "$c.dot" "$c" "$M/." "MOUNT/."
	refused "$c.dotdot" "$c" "$M/$T/x/.." "MOUNT/$T/x/.."
	refused "$c.slashes" "$c" "$M//" "MOUNT//"
	refused "$c.relative" "$c" "${M#/}/$T/x" "${M#/}/$T/x (from /)"
	[ "$prev" != "$c" ] && refused "$c.outside" "$c" "$(mnt "$prev")/$T/x" "$(mnt "$prev")/$T/x"
	refused "$c.long" "$c" "$M/$T/x$LONG" "MOUNT/$T/x/(9 x 60 bytes)"
	prev=$c
done
finish
