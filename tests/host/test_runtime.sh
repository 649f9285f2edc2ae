#!/bin/sh
# For agent runtimes (issue 18, docs/runtime.md): every tool call ends,
# every denial is explained, the defaults let ordinary work run. Each check
# looks at what the kernel and the command really did: exit codes, the
# status channel's lines, files, stderr.
#
# Runs on the host (root for the memory and disk monitors) and in the VM.

. "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
WS=$TMPD/ws
mkdir -p "$WS"
IS_ROOT=false
[ "$(id -u)" = 0 ] && IS_ROOT=true

# st_run NAME [RUN OPTIONS] -- CMD: a session with --status-fd 3 into NAME.st;
# NAME.out, NAME.err; sets rc.
st_run() {
	name=$1
	shift
	"$BPFBOX" run -w "$WS" --status-fd 3 "$@" </dev/null >"$TMPD/$name.out" \
		2>"$TMPD/$name.err" 3>"$TMPD/$name.st"
	rc=$?
}

# st_has NAME ERE: a status line of NAME matches.
st_has() { grep -Eq -- "$2" "$TMPD/$1.st"; }

# --- the status channel -------------------------------------------------------
st_run st --label tool_call=abc-1 --label agent=driver -- sh -c 'exit 7'
[ "$rc" = 7 ] &&
	st_has st '^\{"version":1,"type":"started",.*"session":"[0-9a-f]{32}".*"level_enabled":"[A-Za-z]+".*"labels":\{"tool_call":"abc-1","agent":"driver"\}' &&
	st_has st '"type":"ended",.*"exit_code":7,"cause":"exit"' &&
	[ "$(wc -l <"$TMPD/st.st")" = 2 ] &&
	ok "--status-fd: started (id, level, labels) and ended (exit code, cause), one line each" ||
	fail "--status-fd: rc $rc, $(head -c 600 "$TMPD/st.st")"
"$BPFBOX" run -w "$WS" --status-fd 3 -- sh -c 'echo x >&3' 3>"$TMPD/st2.st" 2>"$TMPD/st2.err"
rc=$?
[ "$rc" != 0 ] && ! grep -q '^x$' "$TMPD/st2.st" &&
	ok "the command cannot write to the status fd" || fail "status fd inherited: rc $rc"
expect_rc 2 "--status-fd of a closed descriptor is bad usage (2)" \
	"$BPFBOX" run -w "$WS" --status-fd 9 -- true
expect_rc 2 "--label without '=' is bad usage (2)" "$BPFBOX" run -w "$WS" --label x -- true

# --- units everywhere -----------------------------------------------------------
expect_rc 0 "--timeout 5s --memory 2G --disk 512M --output-limit 64K are accepted" \
	"$BPFBOX" run -q -w "$WS" --timeout 5s --memory 2G --disk 512M --output-limit 64K -- true
expect_rc 125 "--timeout 5x is refused (125)" "$BPFBOX" run -q -w "$WS" --timeout 5x -- true
expect_grep "limits.timeout_s: '5x' is not a duration" "$TMPD/err" "the error names the flag's value"

# --- every exit on the status channel (issue 32): ended with cause, step, reason, duration
# ended_has NAME CODE CAUSE STEP REASON-ERE: the run exited CODE and its only
# status line is that "ended".
ended_has() {
	if [ "$rc" = "$2" ] && [ "$(wc -l <"$TMPD/$1.st")" = 1 ] &&
		st_has "$1" "^\\{\"version\":1,\"type\":\"ended\",.*\"session\":\"[0-9a-f]{32}\",\"exit_code\":$2,\"cause\":\"$3\",\"duration_ms\":[0-9]+,\"step\":\"$4\",\"reason\":\"[^\"]*$5"; then
		ok "$1: exit $2 is one ended line (cause $3, step $4, the reason)"
	else
		fail "$1: rc $rc (want $2); status: $(head -c 500 "$TMPD/$1.st"); stderr: $(oneline "$TMPD/$1.err" 300)"
	fi
}
st_run usage --bogus-flag -- true
ended_has usage 2 usage usage "unknown or incomplete option '--bogus-flag'"
st_run badws -w "$TMPD/does-not-exist" -- true
ended_has badws 125 setup policy "does not exist"
st_run denied --deny-command 'touch' -- touch "$WS/denied-ran"
ended_has denied 125 setup command_rule "command denied by rule"
[ ! -e "$WS/denied-ran" ] && ok "the denied command did not run" || fail "the denied command ran"
if ! grep -q ': Operation not permitted' "$TMPD/denied.err"; then
	ok "a refusal ends with its own reason, not an errno's text"
else
	fail "a refusal ends with an errno's text: $(oneline "$TMPD/denied.err")"
fi
if [ "$(id -u)" != 0 ]; then
	st_run netref --no-daemon --no-namespaces --net-allow allowed.test:443 -- true
	ended_has netref 125 setup network "needs the BPF network layer"
else
	skip "--net-allow refused on the status channel: as root the network programs load (test_audit.sh runs the refusal as uid 65534 without namespaces)"
fi
LVL=$(status_json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["level"])' 2>/dev/null)
if [ "$LVL" != Full ]; then
	st_run lvl --no-daemon --level full -- true
	ended_has lvl 125 setup level "reaches only"
else
	skip "--level full refused on the status channel: this host is Full (the Standard VM cells run it)"
fi
st_run facts --memory 512 --timeout 30 -- true
st_has facts '"type":"started",.*"mode":"workspace-write","network":"deny","net_allow":\[\],"limits":\{"timeout_ms":30000,"output_bytes":1048576,"memory_mb":512,"pids":[0-9]+,' &&
	st_has facts '"type":"ended",.*"exit_code":0,"cause":"exit","duration_ms":[0-9]+,' &&
	ok "started carries mode, network and the effective limits; ended its duration" ||
	fail "started/ended facts: $(head -c 800 "$TMPD/facts.st")"

# --- the timeout counts wall-clock time; a hang ends ----------------------------
st_run to --timeout 1s -- sleep 30
[ "$rc" = 124 ] && st_has to '"cause":"timeout"' && ok "--timeout 1s ends 'sleep 30' with 124 (cause timeout)" ||
	fail "--timeout: rc $rc $(cat "$TMPD/to.st")"

# --- socket() denied by the network policy is recorded and explained ------------
# Without namespaces: with them --net deny gives the session a loopback of
# its own and allows inet sockets there (tests/host/test_loopback.sh).
if [ -n "$PY" ]; then
	st_run net --no-namespaces -- "$PY" -c 'import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
except OSError as e:
    print(e.errno)'
	[ "$rc" = 0 ] && grep -qx 1 "$TMPD/net.out" &&
		st_has net '"type":"denied",.*"layer":"seccomp","op":"socket","what":"AF_INET stream","errno":"EPERM","count":1,"hint":"[^"]*--net-allow' &&
		grep -q 'denied 1 time: socket AF_INET stream (seccomp, EPERM); network is denied' "$TMPD/net.err" &&
		ok "a denied socket(): EPERM for the command, a denied line and a summary with a hint" ||
		fail "socket denial: rc $rc out $(cat "$TMPD/net.out") st $(cat "$TMPD/net.st") err $(cat "$TMPD/net.err")"
	# The listener is ours: the command cannot stack one to answer for it.
	if [ "$(uname -m)" = x86_64 ]; then
		st_run lis -- "$PY" -c 'import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class F(ctypes.Structure): _fields_ = [("c", ctypes.c_ushort), ("t", ctypes.c_ubyte), ("f", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class P(ctypes.Structure): _fields_ = [("n", ctypes.c_ushort), ("f", ctypes.POINTER(F))]
f = (F * 1)(F(6, 0, 0, 0x7fff0000))
r = libc.syscall(317, 1, 8, ctypes.byref(P(1, f)))
print(r, ctypes.get_errno())'
		grep -qx -- "-1 1" "$TMPD/lis.out" &&
			ok "seccomp(NEW_LISTENER) inside the session fails with EPERM" ||
			fail "a listener of the command's own: $(cat "$TMPD/lis.out" "$TMPD/lis.err")"
	fi
else
	skip "socket denial record: no python3 here; the VM's busybox image has none, the host covers it"
fi

# --- what is not enforced is named: stderr even with -q, policy check -------------
LEVEL=$("$BPFBOX" status --json 2>/dev/null | sed -n 's/^ *"level":"\([A-Za-z]*\)".*/\1/p')
if [ "$LEVEL" != Full ] && [ -n "$LEVEL" ]; then
	"$BPFBOX" run -q -w "$WS" --exec-deny curl -- true 2>"$TMPD/q.err"
	[ "$(grep -c 'not enforced' "$TMPD/q.err")" = 1 ] && [ "$(grep -c . "$TMPD/q.err")" = 1 ] &&
		grep -q 'credential patterns in files made during the session' "$TMPD/q.err" &&
		grep -q -- '--exec-deny curl' "$TMPD/q.err" &&
		ok "-q: the rules not enforced at $LEVEL (deep credential patterns, --exec-deny) are said once, on one line" ||
		fail "-q at $LEVEL: $(cat "$TMPD/q.err")"
	printf '{"extra": {"exec_deny": ["curl"]}}\n' >"$TMPD/task.json"
	"$BPFBOX" policy check -w "$WS" --task "$TMPD/task.json" >"$TMPD/pc.out" 2>"$TMPD/pc.err"
	grep -q '"not_enforced"' "$TMPD/pc.out" && grep -q -- '--exec-deny curl' "$TMPD/pc.out" &&
		grep -q 'not enforced on this host' "$TMPD/pc.err" &&
		ok "bpfbox policy check names the rules this host does not enforce" ||
		fail "policy check: $(tail -c 300 "$TMPD/pc.out") $(cat "$TMPD/pc.err")"
else
	skip "not-enforced rules named: BPF LSM enforces them here (level '$LEVEL'); the host covers it"
fi

# --- credential entries at the top of a granted tree ------------------------------
mkdir -p "$WS/sub"
echo SECRET >"$WS/.env"
echo fine >"$WS/sub/notes"
st_run env -- sh -c 'cat .env; cat sub/notes'
! grep -q SECRET "$TMPD/env.out" && grep -q fine "$TMPD/env.out" &&
	ok "the workspace's top-level .env is not readable, the rest is" ||
	fail "top-level .env: $(cat "$TMPD/env.out")"
rm -f "$WS/.env"

# --- a private home; the caller's gitconfig without secrets; PATH under home ---
FH=$TMPD/fakehome
mkdir -p "$FH/.local/bin" "$FH/.ssh/bin"
printf '[user]\n\tname = Test User\n[credential]\n\thelper = store\n[url "https://tok:x-secret@example.invalid/"]\n\tinsteadOf = https://example.invalid/\n' \
	>"$FH/.gitconfig"
printf '#!/bin/sh\necho local-tool\n' >"$FH/.local/bin/ltool"
printf '#!/bin/sh\necho ssh-tool\n' >"$FH/.ssh/bin/stool"
chmod 755 "$FH/.local/bin/ltool" "$FH/.ssh/bin/stool"
HOME=$FH PATH="$FH/.ssh/bin:$FH/.local/bin:$FH:$PATH" "$BPFBOX" run -q -w "$WS" -- \
	sh -c 'echo "HOME=$HOME"; cat "$HOME/.gitconfig"; ltool; echo "PATH=$PATH"' \
	>"$TMPD/home.out" 2>"$TMPD/home.err"
rc=$?
hm=$(sed -n 's/^HOME=//p' "$TMPD/home.out")
problem=""
case $hm in "$WS" | "$FH" | "") problem="HOME is '$hm'" ;; esac
grep -q 'name = Test User' "$TMPD/home.out" || problem="$problem; no user.name in the copy"
grep -q 'x-secret\|helper' "$TMPD/home.out" && problem="$problem; a credential line was copied"
grep -qx local-tool "$TMPD/home.out" || problem="$problem; ~/.local/bin/ltool did not run"
grep -q "$FH/.ssh/bin" "$TMPD/home.out" && problem="$problem; the .ssh PATH entry was kept"
sed -n 's/^PATH=//p' "$TMPD/home.out" | tr ':' '\n' | grep -qx "$FH" &&
	problem="$problem; the home itself stayed on PATH"
[ "$(grep -c 'PATH entries dropped' "$TMPD/home.err")" = 1 ] || problem="$problem; no one-line warning"
[ -n "$hm" ] && [ -e "$hm" ] && problem="$problem; the private home $hm was left behind"
[ "$rc" = 0 ] && [ -z "$problem" ] &&
	ok "a private home with the gitconfig's secret-free lines; ~/.local/bin runs; .ssh on PATH dropped" ||
	fail "private home: rc $rc$problem; $(head -c 400 "$TMPD/home.out") $(head -c 300 "$TMPD/home.err")"

# --- --read-host: the host readable, the credential paths not -------------------
OUTSIDE=/opt/bpfbox-rt-$$ # neither granted nor hidden by the namespaces' view
mkdir -p "$OUTSIDE"
echo visible >"$OUTSIDE/file"
mkdir -p "$FH/.aws"
echo AKIA >"$FH/.aws/credentials"
HOME=$FH "$BPFBOX" run -q -w "$WS" -- cat "$OUTSIDE/file" >"$TMPD/rh0.out" 2>/dev/null
rc0=$?
HOME=$FH "$BPFBOX" run -q -w "$WS" --read-host -- sh -c "cat $OUTSIDE/file; cat $FH/.aws/credentials; echo x > $OUTSIDE/new" \
	>"$TMPD/rh.out" 2>/dev/null
[ "$rc0" != 0 ] && grep -qx visible "$TMPD/rh.out" && ! grep -q AKIA "$TMPD/rh.out" && [ ! -e "$OUTSIDE/new" ] &&
	ok "--read-host: a file outside is readable (not without it), ~/.aws is not, nothing is writable" ||
	fail "--read-host: rc0 $rc0 $(cat "$TMPD/rh.out")"
rm -rf "$OUTSIDE"

# --- refused file changes summarised by an unprivileged run (no BPF, a user namespace)
if $IS_ROOT && command -v setpriv >/dev/null 2>&1; then
	U=/tmp/bpfbox-rt-user-$$ # outside $TMPD (0700), reachable by the unprivileged user
	mkdir -p "$U/ws" "$U/ro"
	echo keep >"$U/ro/f"
	chown -R 65534:65534 "$U/ws"
	chmod 755 "$U" "$U/ro"
	setpriv --reuid 65534 --regid 65534 --clear-groups env HOME="$U" \
		"$BPFBOX" run -q -w "$U/ws" --ro "$U/ro" --status-fd 3 -- \
		sh -c "cd $U/ro && rm f; mkdir ../ro/d; echo x >new; echo y >>f; exit 0" 3>"$U/st" >/dev/null 2>"$U/err"
	problem=
	grep -q "\"type\":\"denied\".*\"op\":\"write\",\"what\":\"$U/ro/new\"" "$U/st" || problem="$problem; no write line for a create"
	grep -q "\"type\":\"denied\".*\"op\":\"write\",\"what\":\"$U/ro/f\"" "$U/st" || problem="$problem; no write line for an append"
	grep -q "\"type\":\"denied\".*\"op\":\"unlink\",\"what\":\"$U/ro/f\"" "$U/st" || problem="$problem; no unlink line"
	grep -q "\"type\":\"denied\".*\"op\":\"mkdir\",\"what\":\"$U/ro/d\"" "$U/st" || problem="$problem; no mkdir line"
	grep -q "denied 1 time: unlink $U/ro/f" "$U/err" || problem="$problem; no summary on stderr"
	[ -e "$U/ro/f" ] || problem="$problem; the file went"
	[ -z "$problem" ] &&
		ok "an unprivileged run without BPF summarises refused unlink, mkdir, create and append (status channel and stderr)" ||
		fail "unprivileged file-change summary$problem: $(cat "$U/st" "$U/err" | head -c 600)"
	rm -rf "$U"
else
	skip "unprivileged file-change summary: needs root to switch to an unprivileged user, and setpriv"
fi

# --- --read-host under namespaces: the dirs the view hides come back, minus credentials
if $IS_ROOT && [ -d /srv ] && [ -d /mnt ] && [ -d /home ]; then
	SRV=/srv/bpfbox-rt-$$ MNT=/mnt/bpfbox-rt-$$ OH=/home/bpfbox-rt-$$ RUN=/run/bpfbox-rt-$$
	mkdir -p "$SRV" "$MNT" "$OH/.ssh" "$OH/proj" "$RUN"
	echo run-data >"$RUN/file"
	echo srv-data >"$SRV/file"
	echo mnt-data >"$MNT/file"
	echo proj-data >"$OH/proj/file"
	echo PRIVATE-KEY >"$OH/.ssh/id_ed25519"
	rhcmd="cat $SRV/file $MNT/file $OH/proj/file; cat $OH/.ssh/id_ed25519; cat $RUN/file"
	"$BPFBOX" run -q -w "$WS" -- sh -c "$rhcmd" >"$TMPD/rhn0.out" 2>&1
	HOME=$FH "$BPFBOX" run -q -w "$WS" --read-host -- sh -c "$rhcmd" >"$TMPD/rhn.out" 2>&1
	problem=
	grep -q srv-data "$TMPD/rhn0.out" && problem="$problem; /srv readable without --read-host"
	for w in srv-data mnt-data proj-data; do
		grep -qx "$w" "$TMPD/rhn.out" || problem="$problem; $w not read"
	done
	grep -q PRIVATE-KEY "$TMPD/rhn.out" && problem="$problem; another home's .ssh was read"
	grep -q run-data "$TMPD/rhn.out" && problem="$problem; /run is not hidden"
	[ -z "$problem" ] &&
		ok "--read-host with namespaces: /srv, /mnt, /home read; another home's .ssh and /run hidden" ||
		fail "--read-host with namespaces$problem: $(head -c 400 "$TMPD/rhn.out")"
	rm -rf "$SRV" "$MNT" "$OH" "$RUN"
else
	skip "--read-host with namespaces: needs root and /srv, /mnt, /home"
fi

# --- output: 2>&1 keeps the order; a terminal stays a terminal -----------------
"$BPFBOX" run -q -w "$WS" -- sh -c 'for i in 1 2 3 4 5; do echo o$i; echo e$i >&2; done' \
	>"$TMPD/mix" 2>&1
grep -v '^bpfbox:' "$TMPD/mix" | tr '\n' ' ' >"$TMPD/mix1"
[ "$(cat "$TMPD/mix1")" = "o1 e1 o2 e2 o3 e3 o4 e4 o5 e5 " ] &&
	ok "stdout and stderr into one file (2>&1) keep their order" ||
	fail "2>&1 order: $(cat "$TMPD/mix1")"
if [ -n "$PY" ]; then
	"$PY" - "$BPFBOX" "$WS" >"$TMPD/pty.out" 2>&1 <<'PY'
import os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "run", "-q", "-w", sys.argv[2], "--", "sh", "-c",
                           "test -t 0 && echo IN_TTY; test -t 1 && echo OUT_TTY; test -t 2 && echo ERR_TTY"])
out = b""
while True:
    r, _, _ = select.select([fd], [], [], 30)
    if not r:
        break
    try:
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    out += d
os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
PY
	grep -q IN_TTY "$TMPD/pty.out" && grep -q OUT_TTY "$TMPD/pty.out" && grep -q ERR_TTY "$TMPD/pty.out" &&
		ok "under a terminal, the command's stdin, stdout and stderr are a terminal" ||
		fail "pty: $(cat "$TMPD/pty.out")"
fi

# --- limits that end: pause timeout, --on-limit kill, OOM of the only process ---
if ! $IS_ROOT || [ -z "$PY" ]; then
	skip "pause timeout, --on-limit, OOM of the first process: the memory monitor needs root and python3; CI runs as root"
else
	# The shell lives on after the OOM kill (as in the --on-limit case below):
	# the pause must come while the session runs, not race its end.
	st_run pt --memory 48M --pause-timeout 2s -- sh -c "$PY -c 'b = bytearray(300 << 20)'; sleep 10; echo after"
	[ "$rc" = 123 ] && st_has pt '"type":"paused",.*"reason":"oom",.*"kill_after_ms":2000' &&
		st_has pt '"type":"killed",.*"reason":"pause_timeout","paused":true' &&
		st_has pt '"type":"ended",.*"exit_code":123,"cause":"pause_timeout"' &&
		grep -q "within 2 s, else it is killed (exit 123)" "$TMPD/pt.err" &&
		! grep -q after "$TMPD/pt.out" &&
		ok "an OOM pause ends after --pause-timeout: exit 123, paused/killed/ended said, advice matches" ||
		fail "pause timeout: rc $rc $(cat "$TMPD/pt.st") $(tail -c 300 "$TMPD/pt.err")"

	st_run ok --memory 48M --on-limit kill -- sh -c "$PY -c 'b = bytearray(300 << 20)'; sleep 5; echo after"
	[ "$rc" = 123 ] && st_has ok '"type":"killed",.*"reason":"oom"' &&
		st_has ok '"cause":"oom"' && ! st_has ok '"type":"paused"' &&
		ok "--on-limit kill: the OOM kills the session at once (123, cause oom, no pause)" ||
		fail "--on-limit kill: rc $rc $(cat "$TMPD/ok.st")"

	st_run one --memory 48M -- "$PY" -c 'b = bytearray(300 << 20)'
	[ "$rc" = 137 ] && st_has one '"cause":"oom"' && ! grep -q "bpfbox resume" "$TMPD/one.err" &&
		grep -q "killed its first process" "$TMPD/one.err" &&
		ok "the OOM victim was the first process: exit 137, cause oom, no resume advice" ||
		fail "OOM of the first process: rc $rc $(cat "$TMPD/one.st") $(cat "$TMPD/one.err")"

	# Growth in steps, from the start: the watch is there before the command
	# runs and what it creates counts as growth (monitor/disk.c).
	st_run dk --disk 4M --on-limit disk=kill -- sh -c 'i=0; while [ $i -lt 60 ]; do head -c 1000000 /dev/zero >> big; i=$((i + 1)); sleep 0.1; done; sleep 20'
	[ "$rc" = 123 ] && st_has dk '"type":"killed",.*"reason":"disk"' &&
		ok "--on-limit disk=kill: over the disk limit the session is killed (123)" ||
		fail "--on-limit disk=kill: rc $rc $(cat "$TMPD/dk.st")"
	rm -f "$WS/big"
	st_run hk --disk 4M --on-limit disk=kill -- sh -c 'i=0; while [ $i -lt 60 ]; do head -c 1000000 /dev/zero >> "$HOME/big"; i=$((i + 1)); sleep 0.1; done; sleep 20'
	[ "$rc" = 123 ] && st_has hk '"type":"killed",.*"reason":"disk"' &&
		ok "what the private home grows by counts against the disk limit" ||
		fail "disk limit and the home: rc $rc $(cat "$TMPD/hk.st")"

	# Wall-clock timeout while paused; pause by an id prefix.
	("$BPFBOX" run -w "$WS" --status-fd 3 --timeout 3s --pause-timeout 60s -- sleep 30 \
		>/dev/null 2>"$TMPD/wc.err" 3>"$TMPD/wc.st"; echo $? >"$TMPD/wc.rc") &
	if wait_grep '"type":"started"' "$TMPD/wc.st" 10; then
		id=$(sed -n 's/.*"type":"started".*"session":"\([0-9a-f]*\)".*/\1/p' "$TMPD/wc.st")
		pre=$(echo "$id" | cut -c1-8)
		"$BPFBOX" pause "$pre" >"$TMPD/pp.out" 2>&1
		prc=$?
		wait_grep . "$TMPD/wc.rc" 15
		[ "$prc" = 0 ] && grep -q "session $id paused" "$TMPD/pp.out" &&
			ok "bpfbox pause takes an 8-digit id prefix" || fail "pause by prefix: $prc $(cat "$TMPD/pp.out")"
		[ "$(cat "$TMPD/wc.rc" 2>/dev/null)" = 124 ] && st_has wc '"type":"paused"' &&
			st_has wc '"cause":"timeout"' &&
			ok "--timeout counts wall-clock time: a paused session ends at its timeout (124)" ||
			fail "wall-clock timeout: rc $(cat "$TMPD/wc.rc" 2>/dev/null) $(cat "$TMPD/wc.st")"
	else
		fail "wall-clock timeout: the session did not start: $(cat "$TMPD/wc.err")"
	fi
	expect_rc 1 "an id prefix no session has is refused (1)" "$BPFBOX" kill 0000000
	expect_rc 2 "a prefix shorter than 4 digits is refused (2)" "$BPFBOX" kill abc
fi

# --- labels in the audit stream (embedded mode, root) -----------------------------
if $IS_ROOT; then
	"$BPFBOX" run -q --no-daemon -w "$WS" --audit "$TMPD/audit.jsonl" --label tool_call=t-9 -- true \
		2>"$TMPD/audit.err"
	rc=$?
	if [ "$rc" = 0 ]; then
		grep -q '"type":"session.start".*"labels":{"tool_call":"t-9"}' "$TMPD/audit.jsonl" &&
			ok "--label is carried in session.start of the audit stream" ||
			fail "labels in session.start: $(head -c 400 "$TMPD/audit.jsonl")"
		# Refused changes of the file system are recorded (op, layer, errno) and explained.
		OUT=$TMPD/outside
		mkdir -p "$OUT/d"
		echo x >"$OUT/f"
		# Without namespaces: their view answers EROFS/ENOENT before Landlock.
		"$BPFBOX" run -q --no-daemon --no-namespaces -w "$WS" --audit "$TMPD/ops.jsonl" --status-fd 3 -- sh -c \
			"rm -f $OUT/f; rmdir $OUT/d; mkdir $OUT/n; mv $OUT/f $OUT/g; ln -s f $OUT/s; ln $OUT/f $OUT/h; true" \
			>/dev/null 2>"$TMPD/ops.err" 3>"$TMPD/ops.st"
		problem=""
		for op in unlink rmdir mkdir rename symlink link; do
			grep -q "\"type\":\"file\".*\"decision\":\"deny\",\"layer\":\"landlock\",\"errno\":\"EACCES\",\"path\":\"$OUT/[a-z]*\".*\"op\":\"$op\"" \
				"$TMPD/ops.jsonl" || problem="$problem no $op record;"
		done
		grep -q "denied 1 time: mkdir $OUT/n (landlock, EACCES); write outside the workspace: $OUT/n; grant it with --rw $OUT" \
			"$TMPD/ops.err" || problem="$problem no summary line with a --rw hint;"
		grep -q '"type":"denied","[^}]*"op":"unlink"' "$TMPD/ops.st" || problem="$problem no denied status line;"
		[ -f "$OUT/f" ] && [ -d "$OUT/d" ] || problem="$problem a change went through;"
		[ -z "$problem" ] &&
			ok "--audit: refused unlink, rmdir, mkdir, rename, symlink, link are recorded and summarised with a hint" ||
			fail "file changes:$problem $(grep '"op"' "$TMPD/ops.jsonl" | head -c 300) $(head -c 300 "$TMPD/ops.err")"
		cat "$TMPD/ops.jsonl" >>"$TMPD/audit.jsonl"
		if [ -n "$PY" ]; then
			"$BPFBOX" run -q --no-daemon -w "$WS" --net allow --audit /dev/null -- "$PY" -c '
import socket
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("169.254.169.254", 80))
except OSError:
    pass' >/dev/null 2>"$TMPD/md.err"
			grep -q 'denied 1 time: connect 169.254.169.254:80 (cgroup-bpf, EPERM); the cloud metadata address is denied' \
				"$TMPD/md.err" &&
				ok "--audit: a refused connect is summarised with its address and a hint" ||
				fail "connect summary: $(cat "$TMPD/md.err")"
		fi
		if [ -f "$BPFBOX_BUILD/npm/node_modules/ajv/package.json" ] && command -v node >/dev/null; then
			node "$ROOT/tools/validate-events.js" --schema "$ROOT/schema/events.schema.json" \
				"$TMPD/audit.jsonl" >"$TMPD/val.out" 2>&1 &&
				ok "a stream with labels validates against the schema" ||
				fail "schema: $(head -c 300 "$TMPD/val.out")"
		else
			skip "a stream with labels validates against the schema: no node or no ajv in $BPFBOX_BUILD/npm (tools/npm-deps.sh installs it; test_schema.sh validates every stream)"
		fi
	else
		skip "labels in the audit stream: the BPF agent does not load here: $(head -c 200 "$TMPD/audit.err")"
	fi
fi

# --- every denial on the status channel, with its rule and a hint that works (issue 32)
# denied_line NAME OP WHAT-ERE HINT-ERE: NAME's status has a denied line of OP
# for WHAT whose hint matches, and no denied line proposes --ro or --rw of it.
denied_line() {
	if grep -Eq "\"type\":\"denied\",[^}]*\"op\":\"$2\",\"what\":\"$3\",[^}]*\"hint\":\"$4" "$TMPD/$1.st"; then
		ok "$1: a denied line for $2 $3 with its hint"
	else
		fail "$1: no denied line for $2 $3 hinting '$4': $(grep denied "$TMPD/$1.st" | cut -c 90-500)"
	fi
}
# A create and a write outside the writable paths: the listener without BPF,
# the records with it; either way a line.
st_run mk -- sh -c 'echo a >/usr/bpfbox-new; echo b >>/usr/bin/env; exit 0'
denied_line mk write /usr/bpfbox-new "write outside the writable paths: /usr/bpfbox-new .*grant it with --rw /usr"
denied_line mk write /usr/bin/env "write outside the writable paths: /usr/bin/env .*grant it with --rw /usr/bin"
if $IS_ROOT; then
	printf '#!/bin/sh\necho ran\n' >"$WS/nox"
	chmod 644 "$WS/nox"
	echo 'TOKEN=1' >"$WS/.env"
	printf 'touch x\n./nox\ncat .env\nexit 0\n' >"$WS/calls.sh"
	st_run why --audit /dev/null --deny-command touch -- sh calls.sh
	if st_has why '"type":"ended"' && ! st_has why '"reason":"command_rule"'; then
		denied_line why exec '[^"]*/touch' '[^"]*stopped by the command rule .deny_commands: touch. of the policy'
		st_has why '"type":"denied",[^}]*"what":"[^"]*/touch","rule":"deny_commands: touch"' &&
			! grep -q 'audit record names' "$TMPD/why.st" &&
			ok "a command rule's denied line names its rule (and no hint points at the audit record)" ||
			fail "command rule's denied line: $(grep denied "$TMPD/why.st" | head -c 500)"
		denied_line why exec '\./nox' '\./nox is not executable .*chmod \+x \./nox'
		st_has why '"type":"denied","[^}]*"layer":"kernel","op":"exec","what":"\./nox"' &&
			! grep '"what":"./nox"' "$TMPD/why.st" | grep -q -- '--ro' &&
			ok "a mode-644 exec is the kernel's refusal, not Landlock's, and no --ro is proposed" ||
			fail "nox: $(grep nox "$TMPD/why.st" | head -c 400)"
		denied_line why open "$WS/\\.env" "[^\"]*is a credential .*not allowed by policy"
		! grep '"what":"[^"]*\.env"' "$TMPD/why.st" | grep -q -- '--ro\|--rw' &&
			ok "a masked credential's denied line proposes no --ro or --rw" ||
			fail "masked credential hint: $(grep '\.env' "$TMPD/why.st" | head -c 400)"
	else
		skip "command rule, mode and mask denials: the BPF agent does not load here: $(oneline "$TMPD/why.err" 200)"
	fi
	rm -f "$WS/x"
	# A TCP server under --net-allow: Landlock refuses its bind (EACCES).
	if [ -n "$PY" ]; then
		st_run bind --net-allow 198.51.100.7:443 -- "$PY" -c 'import socket
s = socket.socket()
try:
    s.bind(("127.0.0.1", 0))
except OSError as e:
    print("bind", e.errno)'
		if grep -q '^bind 13$' "$TMPD/bind.out"; then
			denied_line bind bind '127\.0\.0\.1:0' 'a TCP server .*refused under --net-allow; run it under --net deny'
		else
			skip "a refused bind under --net-allow: it was not refused here (rc $rc, $(cat "$TMPD/bind.out"); Landlock ABI < 4?)"
		fi
	fi
fi

# --- the two modes end alike (issue 32): each end cause through a daemon -------
# shape NAME: the status lines of NAME as the runtime reads them: type,
# reason or cause, exit code (times, ids, pids and killed's "paused", which
# says whether the early freeze of an OOM came first, left out).
shape() {
	"$PY" -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    print(e["type"], e.get("reason", e.get("cause", "")), e.get("exit_code", ""))' \
		"$TMPD/$1.st" 2>/dev/null | tr '\n' ';'
}
# ends NAME: what bpfbox said on stderr of how NAME ended (its own lines but
# warnings, which name each mode's layers), ids and numbers left out.
ends() {
	grep '^bpfbox: ' "$TMPD/$1.err" | grep -v '^bpfbox: warning: ' |
		sed -E 's/[0-9a-f]{32}/ID/g; s/[0-9]+/N/g' | sort | tr '\n' ';'
}
# duration NAME: ended's duration_ms.
duration() { sed -n 's/.*"type":"ended".*"duration_ms":\([0-9]*\).*/\1/p' "$TMPD/$1.st"; }
# acted_run NAME kill|pause [RUN OPTIONS]: a session that sleeps, killed or
# paused by `bpfbox kill` or `bpfbox pause` once started (a daemon's own, or
# root's on the cgroup of an embedded one).
acted_run() {
	name=$1 act=$2
	shift 2
	("$BPFBOX" run -w "$WS" --status-fd 3 --pause-timeout 2s "$@" -- sleep 30 </dev/null \
		>"$TMPD/$name.out" 2>"$TMPD/$name.err" 3>"$TMPD/$name.st"; echo $? >"$TMPD/$name.rc") &
	if wait_grep '"type":"started"' "$TMPD/$name.st" 15; then
		id=$(sed -n 's/.*"type":"started".*"session":"\([0-9a-f]*\)".*/\1/p' "$TMPD/$name.st")
		"$BPFBOX" "$act" "$id" --socket "$SOCK" >/dev/null 2>&1
	fi
	wait_grep . "$TMPD/$name.rc" 15
	rc=$(cat "$TMPD/$name.rc" 2>/dev/null)
}
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if ! $IS_ROOT || [ -z "$PY" ] || [ -z "$CG2" ]; then
	skip "the modes end alike: a daemon and the memory monitor need root, python3 and cgroup v2; CI runs as root"
else
	WS_RT=$WS
	daemon_scratch rtmodes
	WS=$WS_RT
	if start_daemon "$TMPD/modes.jsonl"; then
		# The memory cases' embedded runs are above (pt, ok, one); the rest here.
		for c in pt ok one to dpt dk kl mp; do
			case $c in
			pt) set -- --memory 48M --pause-timeout 2s -- sh -c "$PY -c 'b = bytearray(300 << 20)'; sleep 10; echo after" ;;
			ok) set -- --memory 48M --on-limit kill -- sh -c "$PY -c 'b = bytearray(300 << 20)'; sleep 5; echo after" ;;
			one) set -- --memory 48M -- "$PY" -c 'b = bytearray(300 << 20)' ;;
			to) set -- --timeout 1s -- sleep 30 ;;
			dpt) set -- --disk 4M --pause-timeout 2s -- sh -c 'i=0; while [ $i -lt 60 ]; do head -c 1000000 /dev/zero >> big; i=$((i + 1)); sleep 0.1; done; sleep 20' ;;
			dk) set -- --disk 4M --on-limit disk=kill -- sh -c 'i=0; while [ $i -lt 60 ]; do head -c 1000000 /dev/zero >> big; i=$((i + 1)); sleep 0.1; done; sleep 20' ;;
			esac
			if [ "$c" = kl ] || [ "$c" = mp ]; then
				act=kill
				[ "$c" = mp ] && act=pause
				acted_run "e$c" $act
				erc=$rc
				acted_run "d$c" $act --daemon-socket "$SOCK"
			else
				case $c in pt | ok | one) erc=$(sed -n 's/.*"type":"ended".*"exit_code":\([0-9]*\).*/\1/p' "$TMPD/$c.st") ;; *)
					st_run "$c" "$@"
					erc=$rc
					rm -f "$WS/big"
					;;
				esac
				st_run "d$c" --daemon-socket "$SOCK" "$@"
				rm -f "$WS/big"
			fi
			e=$c
			case $c in kl | mp) e=e$c ;; esac
			want=$(shape "$e") got=$(shape "d$c") wend=$(ends "$e") gend=$(ends "d$c")
			ed=$(duration "$e") dd=$(duration "d$c")
			if [ -n "$want" ] && [ "$want" = "$got" ] && [ "$erc" = "$rc" ] && [ "$wend" = "$gend" ] &&
				[ -n "$ed" ] && [ -n "$dd" ] && [ $((ed - dd)) -lt 3000 ] && [ $((dd - ed)) -lt 3000 ]; then
				ok "the modes end alike ($c): exit $rc, status lines, stderr and time (${ed} / ${dd} ms): $got"
			else
				fail "the modes end alike ($c): embedded exit $erc '$want' '$wend' ${ed} ms, through the daemon exit $rc '$got' '$gend' ${dd} ms"
			fi
		done
		# The same denials, the same lines: the daemon's records, this run's hints.
		denials() {
			grep '"type":"denied"' "$TMPD/$1.st" | sed -E 's/"time":"[^"]*","session":"[0-9a-f]*",//' | sort
		}
		if st_has why '"type":"denied"'; then
			st_run dwhy --daemon-socket "$SOCK" --deny-command touch -- sh calls.sh
			rm -f "$WS/x"
			if [ -n "$(denials why)" ] && [ "$(denials why)" = "$(denials dwhy)" ]; then
				ok "the modes deny alike: a command rule, a mode-644 exec and a masked .env give the same denied lines"
			else
				fail "the modes deny alike: embedded $(denials why | cut -c 1-120 | tr '\n' ' '); through the daemon $(denials dwhy | cut -c 1-120 | tr '\n' ' ')"
			fi
		fi
		rm -f "$WS/nox" "$WS/.env" "$WS/calls.sh"
		# Labels where an operator looks: sessions (text and JSON) and top (issue 32).
		rm -f "$WS/lbl.held" "$WS/lbl.go"
		"$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" --label tool_call=t-9 -- sh -c \
			'echo held >lbl.held; i=0; while [ ! -e lbl.go ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' \
			</dev/null >/dev/null 2>&1 &
		LPID=$!
		if wait_file "$WS/lbl.held" 20; then
			"$BPFBOX" sessions --json --socket "$SOCK" >"$TMPD/lbl.json" 2>&1
			"$BPFBOX" sessions --socket "$SOCK" >"$TMPD/lbl.txt" 2>&1
			"$BPFBOX" top --json --socket "$SOCK" >"$TMPD/lbl.top" 2>&1
			grep -q '"labels":{"tool_call":"t-9"}' "$TMPD/lbl.json" &&
				grep -q 'tool_call=t-9' "$TMPD/lbl.txt" &&
				grep -q '"labels":"tool_call=t-9"' "$TMPD/lbl.top" &&
				ok "labels are in bpfbox sessions (text, --json) and bpfbox top --json" ||
				fail "labels: sessions $(head -c 300 "$TMPD/lbl.json"); text $(oneline "$TMPD/lbl.txt" 300); top $(head -c 300 "$TMPD/lbl.top")"
		else
			fail "labels: the held session did not start"
		fi
		touch "$WS/lbl.go"
		wait "$LPID"
	else
		fail "the modes end alike: the daemon did not get ready: $(oneline "$DERR")"
	fi
fi

# --- the agent-style driver: a dozen typical tool calls ---------------------------
if [ -n "$PY" ]; then
	mkdir -p "$TMPD/driver"
	"$PY" "$ROOT/tests/helpers/agent_driver.py" "$BPFBOX" "$TMPD/driver" >"$TMPD/driver.out" 2>&1
	cat "$TMPD/driver.out"
	grep -q '^FAIL' "$TMPD/driver.out" && FAILS=$((FAILS + 1))
else
	skip "agent driver: no python3 here; the host runs it"
fi

finish
