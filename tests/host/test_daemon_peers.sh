#!/bin/sh
# The daemon against its own peers (issue 17): a connection outlived by the
# process that opened it speaks for nobody, one uid cannot take every
# connection or session slot, what a session stores and what list returns
# are bounded, and the client sends nothing to a socket that is not the
# daemon's and never falls back to embedded mode silently.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 daemon-peers "running a daemon"

chmod 755 "$TMPD" # the unprivileged clients below must reach the socket
daemon_scratch peers
NB="$TMPD/nobody" # what the unprivileged clients write
mkdir -p "$SOCKDIR" "$NB"
chown 65534:65534 "$NB"
chgrp nogroup "$SOCKDIR"
NOBODY="setpriv --reuid 65534 --regid 65534 --clear-groups"
HOLD= FAKE=

cleanup_extra() {
	[ -n "$HOLD" ] && kill "$HOLD" 2>/dev/null
	[ -n "$FAKE" ] && kill "$FAKE" 2>/dev/null
}

if start_daemon "$TMPD/audit.jsonl" --group nogroup --max-conns-per-uid 4 \
	--max-sessions-per-uid 3 --audit-rate 200/400; then
	ok "the daemon starts with --max-conns-per-uid 4 --max-sessions-per-uid 3 --audit-rate 200/400"
else
	fail "the daemon did not get ready: $(cat "$DERR")"
	finish
	exit 1
fi

# --- 1. a connection whose opener exited (the stale peer pid) ---
# The opener forks, hands the socket to its child and exits; once it is
# reaped, its pid could be anyone's: the child's requests are refused.
"$PY" - "$SOCK" >"$TMPD/stale.out" 2>&1 <<'PY'
import json, os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
f = s.makefile("rb")
s.sendall(b'{"op":"ping"}\n')
print("control", json.loads(f.readline())["ok"], flush=True)
r, w = os.pipe()
parent = os.getpid()
if os.fork() == 0:
    # the grandchild holds the socket; the child (the opener's stand-in) exits
    if os.fork() != 0:
        os._exit(0)
    os.close(r)
    os.write(w, b"x")
    # wait until the intermediate process is reaped (its /proc entry gone)
    for _ in range(200):
        if os.getppid() != parent:
            break
        time.sleep(0.01)
    os._exit(0)
os.close(w)
os.read(r, 1)
os.wait()
PY
grep -q "^control True" "$TMPD/stale.out" && ok "a live peer is answered (control)" ||
	fail "control ping: $(cat "$TMPD/stale.out")"
"$PY" - "$SOCK" >"$TMPD/stale2.out" 2>&1 <<'PY'
import json, os, socket, sys, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    # the opener: connects, registers, forks a holder, exits
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
    f = s.makefile("rb")
    s.sendall(b'{"op":"ping"}\n'); f.readline()
    if os.fork() == 0:
        os.close(r)
        os.write(w, b"%d\n" % os.getppid())
        opener = os.getppid()
        for _ in range(500):  # until the opener is reaped
            if not os.path.exists("/proc/%d" % opener):
                break
            time.sleep(0.01)
        s.sendall(b'{"op":"list"}\n')
        line = f.readline().decode().strip()
        os.write(w, (line + "\n").encode())
        os._exit(0)
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)  # reap the opener at once
out = b""
while True:
    b = os.read(r, 4096)
    if not b: break
    out += b
print(out.decode().split("\n", 1)[1].strip())
PY
expect_grep '"ok":false,.*has exited.*"code":"EPERM"' "$TMPD/stale2.out" \
	"a request over a socket whose opener exited is refused (EPERM, says why)"

# --- 2. connection limits: one uid cannot take every connection ---
$NOBODY "$PY" - "$SOCK" "$NB/held" >"$TMPD/hold.out" 2>&1 <<'PY' &
import json, socket, sys, time
conns = []
for i in range(4):
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
    s.sendall(b'{"op":"ping"}\n'); assert json.loads(s.makefile("rb").readline())["ok"]
    conns.append(s)
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
line = s.makefile("rb").readline().decode().strip()
open(sys.argv[2], "w").write(line + "\n")
time.sleep(60)
PY
HOLD=$!
wait_file "$NB/held"
expect_grep '"ok":false,"error":"busy: uid 65534 has 4 connections open.*--max-conns-per-uid.*"code":"EBUSY"' \
	"$NB/held" "the 5th connection of one uid is answered busy (EBUSY, says why)"
expect_rc 0 "root is still served while that uid holds its connections" \
	"$BPFBOX" sessions --socket "$SOCK"
# Required (BPFBOX_REQUIRE_DAEMON=1): exit 125, nothing runs.
$NOBODY env BPFBOX_SOCKET="$SOCK" BPFBOX_REQUIRE_DAEMON=1 "$BPFBOX" run -q -w "$NB" -- \
	touch "$NB/ran" >"$TMPD/out" 2>"$TMPD/err"
rc=$?
[ $rc = 125 ] && ok "bpfbox run with BPFBOX_REQUIRE_DAEMON=1 and a busy daemon exits 125" ||
	fail "bpfbox run against a busy daemon: exit $rc, want 125: $(cat "$TMPD/err")"
expect_grep "busy" "$TMPD/err" "and says the daemon is busy"
[ ! -e "$NB/ran" ] && ok "and nothing ran" || fail "the command ran without the daemon"
# Not required: embedded mode, never silently (not even with -q). The
# register is refused after the fork (an unprivileged client registers
# at its child's release): the run starts again without the daemon, and
# its status channel and exit code are the second run's alone.
$NOBODY env BPFBOX_SOCKET="$SOCK" "$BPFBOX" run -q -w "$NB" --status-fd 3 -- \
	sh -c "touch '$NB/ran'; exit 3" >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/fb.st"
rc=$?
[ $rc = 3 ] && [ -e "$NB/ran" ] && ok "not required: the command runs in embedded mode (its exit 3)" ||
	fail "not required: exit $rc, want 3: $(cat "$TMPD/err")"
expect_grep "the daemon at $SOCK is busy .*busy: uid 65534 has 4 connections.*running without it" \
	"$TMPD/err" "and a line says the daemon was busy, even with -q"
if "$PY" - "$TMPD/fb.st" <<'PY'; then
import json, sys
st = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
types = [e["type"] for e in st]
end = st[-1]
sys.exit(0 if types == ["started", "ended"] and end["cause"] == "exit" and end["exit_code"] == 3 else 1)
PY
	ok "its status channel says started, then ended with cause exit and exit_code 3 (not the refused try's setup)"
else
	fail "the status channel after the fallback: $(grep -o '"type":"[a-z]*"' "$TMPD/fb.st" | tr '\n' ' '); $(grep '"type":"ended"' "$TMPD/fb.st")"
fi
kill "$HOLD" 2>/dev/null
wait "$HOLD" 2>/dev/null
HOLD=
# A fork that fails with EAGAIN (RLIMIT_NPROC; uid 61234 has no other
# process) is a set-up failure, not a refusal by the daemon: said once, exit
# 125 with its ended line, never run again without the daemon. (Under
# ASan, LeakSanitizer's exit-time check needs a thread of its own, which
# the same limit refuses: leaks are not looked for in this one run.)
if command -v prlimit >/dev/null 2>&1; then
	mkdir -p "$TMPD/np"
	chown 61234 "$TMPD/np"
	prlimit --nproc=1:1 setpriv --reuid 61234 --regid 65534 --clear-groups \
		env BPFBOX_SOCKET="$SOCK" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"$BPFBOX" run -q -w "$TMPD/np" --status-fd 3 -- touch "$TMPD/np/ran" \
		>"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/np.st"
	rc=$?
	[ $rc = 125 ] && [ ! -e "$TMPD/np/ran" ] && ok "a fork refused by RLIMIT_NPROC through the daemon: exit 125, nothing ran" ||
		fail "fork at RLIMIT_NPROC: exit $rc, want 125: $(cat "$TMPD/err")"
	[ "$(grep -c 'cannot fork\|cannot create the session' "$TMPD/err")" = 1 ] &&
		! grep -q "running without it" "$TMPD/err" &&
		ok "it says the fork failed, once, and runs nothing without the daemon" ||
		fail "fork at RLIMIT_NPROC, stderr: $(cat "$TMPD/err")"
	if "$PY" - "$TMPD/np.st" <<'PY'; then
import json, sys
st = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sys.exit(0 if [e["type"] for e in st] == ["ended"] and st[0]["cause"] == "setup" and st[0]["exit_code"] == 125 else 1)
PY
		ok "and its status channel says ended (cause setup, exit_code 125)"
	else
		fail "fork at RLIMIT_NPROC, status channel: $(cat "$TMPD/np.st")"
	fi
else
	skip "a fork at RLIMIT_NPROC through the daemon: no prlimit"
fi

# --- 3. sessions per uid: one uid cannot take every session slot ---
$NOBODY "$PY" - "$SOCK" >"$TMPD/quota.out" 2>&1 <<'PY'
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); f = s.makefile("rb")
for i in range(4):
    s.sendall(json.dumps({"op": "register", "session": os.urandom(16).hex()}).encode() + b"\n")
    r = json.loads(f.readline())
    print(i, r.get("ok"), r.get("code"), r.get("error", ""))
PY
expect_grep '^2 True' "$TMPD/quota.out" "uid 65534 registers 3 sessions"
expect_grep '^3 False EDQUOT register: uid 65534 has 3 sessions.*--max-sessions-per-uid' \
	"$TMPD/quota.out" "its 4th is refused (EDQUOT, says why)"
"$PY" - "$SOCK" >"$TMPD/rootreg.out" 2>&1 <<'PY'
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); f = s.makefile("rb")
for i in range(4):
    sid = os.urandom(16).hex()
    s.sendall(json.dumps({"op": "register", "session": sid}).encode() + b"\n")
    ok = json.loads(f.readline()).get("ok")
    s.sendall(json.dumps({"op": "unregister", "session": sid}).encode() + b"\n")
    f.readline()
    print(i, ok)
PY
expect_grep '^3 True' "$TMPD/rootreg.out" "root registers past the per-uid quota"

# --- 4. what register stores and what list returns are bounded ---
# 150 sessions with 60 KB command arrays: 9 MB of commands, more than one
# reply may hold; each keeps 8 KiB, and list answers in pages.
"$PY" - "$SOCK" "$TMPD/big.ids" >"$TMPD/big.out" 2>&1 <<'PY' &
import json, os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1]); f = s.makefile("rb")
ids = []
for i in range(150):
    sid = os.urandom(16).hex()
    cmd = ["sh", "-c", "x" * 60000]
    s.sendall(json.dumps({"op": "register", "session": sid, "command": cmd}).encode() + b"\n")
    r = json.loads(f.readline())
    if not r.get("ok"):
        print("register failed", r); break
    ids.append(sid)
open(sys.argv[2], "w").write("\n".join(ids) + "\n")
time.sleep(60)
PY
BIG=$!
wait_file "$TMPD/big.ids"
"$BPFBOX" sessions --json --socket "$SOCK" >"$TMPD/list.json" 2>"$TMPD/list.err"
"$PY" - "$TMPD/list.json" "$TMPD/big.ids" >"$TMPD/list.check" 2>&1 <<'PY'
import json, sys
l = json.load(open(sys.argv[1])); ids = set(open(sys.argv[2]).read().split())
big = [x for x in l if x["session"] in ids]
print("listed", len(big), "of", len(ids), "truncated", all(x.get("command_truncated") for x in big),
      "max", max(len("".join(x["command"])) for x in big))
PY
expect_grep "^listed 150 of 150 truncated True max (8[01][0-9][0-9]|[1-7][0-9]{3})$" "$TMPD/list.check" \
	"bpfbox sessions lists 150 sessions with 60 KB commands, each cut to 8 KiB and flagged"
"$PY" - "$SOCK" >"$TMPD/page.out" 2>&1 <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); f = s.makefile("rb")
s.sendall(b'{"op":"list"}\n'); line = f.readline(); r = json.loads(line)
print("page", len(line) <= (1 << 20) + 65536, "next" in str(r.get("next_offset", "")) or r.get("next_offset", 0) > 0)
PY
expect_grep "^page True True" "$TMPD/page.out" "one list reply stays near 1 MiB and says where the next page starts"
grep -q '"command_truncated":true' "$TMPD/audit.jsonl" &&
	ok "session.start says command_truncated" || fail "no command_truncated in session.start"
kill "$BIG" 2>/dev/null
wait "$BIG" 2>/dev/null

# --- 5. the client sends nothing to a socket that is not the daemon's ---
mkdir -p "$TMPD/fake"
chown 65534 "$TMPD/fake"
rm -f "$TMPD/fake.got"
$NOBODY "$PY" - "$TMPD/fake/bpfbox.sock" "$TMPD/fake/got" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
open(sys.argv[2] + ".ready", "w").write("1")
while True:
    c, _ = s.accept(); c.settimeout(2)
    try: data = c.recv(65536)
    except OSError: data = b""
    with open(sys.argv[2], "ab") as f: f.write(b"%d\n" % len(data))
    try: c.sendall(b'{"ok":true,"session":"x","index":1}\n')
    except OSError: pass
    c.close()
PY
FAKE=$!
wait_file "$TMPD/fake/got.ready"
rm -f "$WS/ran"
expect_rc 125 "bpfbox run refuses a socket served by a non-root process" \
	env BPFBOX_SOCKET="$TMPD/fake/bpfbox.sock" "$BPFBOX" run -q -w "$WS" -- touch "$WS/ran"
expect_grep "not a socket owned by root|runs as uid 65534, not root" "$TMPD/err" "and says why"
[ ! -e "$WS/ran" ] && ok "nothing ran" || fail "the command ran under a fake daemon"
# The positive control: a connect after bpfbox run's; the fake serves them
# in order, so its first line is bpfbox run's, written before the control's.
"$PY" -c "
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'probe\n'); s.recv(100)" \
	"$TMPD/fake/bpfbox.sock"
wait_file "$TMPD/fake/got"
[ "$(head -n 1 "$TMPD/fake/got")" = 0 ] && ok "the fake daemon received nothing from bpfbox run" ||
	fail "the fake daemon got bytes: $(cat "$TMPD/fake/got" | tr '\n' ' ')"
kill "$FAKE" 2>/dev/null
FAKE=

# --- 6. BPFBOX_REQUIRE_DAEMON=1: no run without the daemon ---
rm -f "$WS/ran"
expect_rc 125 "BPFBOX_REQUIRE_DAEMON=1 and no daemon there: exit 125" \
	env BPFBOX_SOCKET="$TMPD/none.sock" BPFBOX_REQUIRE_DAEMON=1 "$BPFBOX" run -q -w "$WS" -- \
	touch "$WS/ran"
expect_grep "no daemon answers on $TMPD/none.sock and BPFBOX_REQUIRE_DAEMON=1 requires one.*--no-daemon" \
	"$TMPD/err" "and says so, with the way out"
[ ! -e "$WS/ran" ] && ok "nothing ran without the required daemon" || fail "it ran embedded"
expect_rc 0 "--no-daemon still runs embedded" \
	env BPFBOX_SOCKET="$TMPD/none.sock" BPFBOX_REQUIRE_DAEMON=1 "$BPFBOX" run -q --no-daemon \
	-w "$WS" -- true

# --- 7. audit floods: a per-session rate limit with exact counts ----------
# 5,000 opens of distinct missing files: each a record in aggregate mode.
rm -f "$WS/id"
expect_rc 0 "a session opens 5,000 distinct missing files through the daemon" \
	"$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" -- sh -c "echo \$BPFBOX_SESSION_ID > id
	$PY -c \"
for i in range(5000):
    try: open('/nonexistent-flood/%d' % i)
    except OSError: pass\""
SID=$(cat "$WS/id")
"$PY" - "$TMPD/audit.jsonl" "$SID" >"$TMPD/flood.out" 2>&1 <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mine = [e for e in ev if e.get("session") == sys.argv[2]]
end = mine[-1]
rec = [e for e in mine if e["type"] in ("exec", "exit", "fork", "file", "connect", "rename")]
rl = [e for e in mine if e["type"] == "loss" and e.get("where") == "rate limit"]
ring = [e for e in mine if e["type"] == "loss" and e.get("where") == "ring buffer full"]
flood = sum(1 for e in rec if e["type"] == "file" and e["path"].startswith("/nonexistent-flood/"))
supp_file = sum(e["types"].get("file", 0) for e in rl)
print("type", end["type"], "lines", len(rl), "written", flood,
      "exact", flood + supp_file >= 5000 and sum(e["count"] for e in rl) == end["suppressed"]
      and end["records"] == len(rec)
      and end["seq"] - 1 - len(ring) == len(rec) + end["suppressed"] + end["lost"],
      "bounded", flood <= 400 + 200 * 30,
      "detail", supp_file, end["suppressed"], end["records"], len(rec), end["seq"], len(ring), end["lost"],
      [e["count"] for e in rl])
PY
expect_grep "^type session.end lines [1-9][0-9]* written [0-9]+ exact True bounded True" "$TMPD/flood.out" \
	"the flood is cut to the rate; loss lines (rate limit) count by type exactly what was not written"

# --- 8. the daemon's own log is rate limited ---------------------------------
# A connect loop from inside a session: each connection is refused and logged.
before=$(grep -c "refused pid" "$DERR")
"$BPFBOX" run -q --net allow --rw "$SOCKDIR" --daemon-socket "$SOCK" -w "$WS" -- "$PY" -c "
import socket, sys
for i in range(3000):
    s = socket.socket(socket.AF_UNIX)
    try: s.connect(sys.argv[1])
    except OSError: pass
    s.close()" "$SOCK" >/dev/null 2>&1
after=$(grep -c "refused pid" "$DERR")
expect_rc 0 "a later session through the daemon" "$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" -- true
n=$((after - before))
[ "$n" -gt 0 ] && [ "$n" -lt 1500 ] && ok "3,000 refused connections logged $n lines (rate limited)" ||
	fail "3,000 refused connections logged $n lines"
expect_grep "lines not logged: more than 20 a second" "$DERR" "the next line says how many were not logged"

finish
