# Command rules (docs/config.md "Command rules"): the top-level command is
# checked before anything runs; with the BPF agent every exec of the session
# is checked in the kernel and a denied one is killed before it runs.
. "$(dirname "$0")/../lib.sh"

mkdir -p "$TMPD/ws"
cd "$TMPD/ws" || exit 1
RAN="$TMPD/ws/ran"

# The default patterns, from the effective policy (one a line).
"$BPFBOX" policy check -w "$TMPD/ws" 2>/dev/null |
	python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin)["deny_commands"]))' \
		>"$TMPD/patterns"
n=$(wc -l <"$TMPD/patterns")
# The rule that names each: the first pattern the line contains (rm -rf /
# comes before rm -rf /*, which it is part of).
# The kernel's matching in Python (whole words, include/bpfbox/events.h).
cat >"$TMPD/cmdmatch.py" <<'PY'
word = lambda c: c.isalnum() or c in "_-."
sep = lambda c: c in " \t\n;|&'\"`"
def found(q, line):
    i = line.find(q)
    while i >= 0:
        prev = line[i - 1] if i else ""
        nxt = line[i + len(q)] if i + len(q) < len(line) else ""
        if ((not prev or not word(q[0]) or sep(prev) or prev in "(/") and
                (not nxt or q[-1] in "=. " or sep(nxt) or nxt == ")")):
            return True
        i = line.find(q, i + 1)
    return False
PY
PYTHONPATH=$TMPD python3 - "$TMPD/patterns" >"$TMPD/first" <<'PY'
import sys
from cmdmatch import found
pats = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
for p in pats:
    print(next(q for q in pats if found(q, p)))
PY
if [ "$n" -ge 26 ]; then ok "defaults: $n denied command patterns"; else fail "defaults: $n patterns"; fi

# In the VM matrix (tests/vm/level.sh, 6.1-full: the oldest verifier) a
# bpfbox run costs seconds under TCG: there only the kernel side runs again
# (the script and ask sessions); the rest is covered on the host.
QUICK=${BPFBOX_CMDRULES_QUICK:-0}
cat >"$TMPD/ask.json" <<'EOF'
{ "extra": { "commands": [ { "exe": "/usr/bin/env", "action": "ask" } ] } }
EOF

if [ "$QUICK" != 1 ]; then
	# Top level: each default pattern in the command line is exit 125, one line
	# naming the rule, and nothing ran (the marker file is not made). The
	# pattern sits in single quotes: were it to run, it would only be echoed.
	bad=""
	exec 3<"$TMPD/first"
	while IFS= read -r p; do
		IFS= read -r first <&3
		rm -f "$RAN"
		"$BPFBOX" run -q -w "$TMPD/ws" -- sh -c "touch '$RAN'; echo '$p' >/dev/null" \
			>"$TMPD/out" 2>"$TMPD/err"
		rc=$?
		if [ "$rc" != 125 ] || [ -e "$RAN" ] || ! grep -qF "rule 'deny_commands: $first'" "$TMPD/err" ||
			[ "$(grep -c . "$TMPD/err")" != 1 ]; then
			bad="$bad [$p: exit $rc, $(head -c 200 "$TMPD/err")]"
		fi
	done <"$TMPD/patterns"
	exec 3<&-
	if [ -z "$bad" ] && [ "$n" -ge 26 ]; then ok "top level: every default pattern is 125, one line, nothing ran"
	else fail "top level:$bad"; fi

	# A flag adds a pattern; a task file cannot replace the list; an allow
	# rule does not get past the patterns (they come first).
	expect_rc 125 "top level: --deny-command adds a pattern" \
		"$BPFBOX" run -q -w "$TMPD/ws" --deny-command "git push" -- sh -c ': git push origin'
	expect_grep "rule 'deny_commands: git push'" "$TMPD/err" "... and names it"
	cat >"$TMPD/shrink.json" <<'EOF'
{ "restrictions": { "deny_commands": [] } }
EOF
	expect_rc 125 "a task file cannot replace deny_commands" \
		"$BPFBOX" run -q -w "$TMPD/ws" --task "$TMPD/shrink.json" -- true
	expect_grep "deny_commands can only be replaced in the global or agent config" "$TMPD/err" \
		"... and says where it can"
	cat >"$TMPD/allowall.json" <<'EOF'
{ "extra": { "commands": [ { "exe": "*", "action": "allow" } ] } }
EOF
	expect_rc 125 "an allow-all rule does not shrink the patterns" \
		"$BPFBOX" run -q -w "$TMPD/ws" --task "$TMPD/allowall.json" -- sh -c ': mkfs'
	expect_grep "rule 'deny_commands: mkfs'" "$TMPD/err" "... the pattern is named"

	# First match wins, in the order of the list.
	cat >"$TMPD/order1.json" <<'EOF'
{ "extra": { "commands": [
  { "exe": "echo", "argv": "fine", "action": "allow" },
  { "exe": "echo", "action": "deny" } ] } }
EOF
	cat >"$TMPD/order2.json" <<'EOF'
{ "extra": { "commands": [
  { "exe": "echo", "action": "deny" },
  { "exe": "echo", "argv": "fine", "action": "allow" } ] } }
EOF
	expect_rc 0 "first match wins: allow before deny runs" \
		"$BPFBOX" run -q -w "$TMPD/ws" --task "$TMPD/order1.json" -- echo fine
	expect_rc 125 "first match wins: the next rule denies the rest" \
		"$BPFBOX" run -q -w "$TMPD/ws" --task "$TMPD/order1.json" -- echo other
	expect_grep "rule 'commands\[1\] exe=echo'" "$TMPD/err" "... naming the rule"
	expect_rc 125 "first match wins: deny before allow denies" \
		"$BPFBOX" run -q -w "$TMPD/ws" --task "$TMPD/order2.json" -- echo fine
	expect_grep "rule 'commands\[0\] exe=echo'" "$TMPD/err" "... naming the first rule"
	# Whole words: a longer path, a word that holds a pattern, a method
	# call and another command's option are not the patterns.
	mkdir -p "$TMPD/ws/build/sub"
	expect_rc 0 "top level: rm -rf of a path under / is not 'rm -rf /'" \
		"$BPFBOX" run -q -w "$TMPD/ws" -- rm -rf "$TMPD/ws/build"
	[ ! -e "$TMPD/ws/build" ] && ok "... and it ran: the tree is gone" ||
		fail "... the tree is still there"
	expect_rc 0 "top level: asphalt, sock.shutdown(), rsync -e, mkfsx are not patterns" \
		"$BPFBOX" run -q -w "$TMPD/ws" -- echo asphalt 'sock.shutdown()' rsync -e ssh mkfsx
	expect_rc 125 "top level: /sbin/mkfs.ext4 is 'mkfs.'" \
		"$BPFBOX" run -q -w "$TMPD/ws" -- sh -c ': /sbin/mkfs.ext4 /dev/null'
	expect_rc 125 "top level: a quoted 'rm -rf /' inside sh -c is still one" \
		"$BPFBOX" run -q -w "$TMPD/ws" -- sh -c "echo 'rm -rf /'"
	expect_rc 125 "top level: ask with nobody to answer is 125" \
		"$BPFBOX" run -q -w "$TMPD/ws" --task "$TMPD/ask.json" -- /usr/bin/env true
	expect_grep "needs approval by rule 'commands\[0\] exe=/usr/bin/env'" "$TMPD/err" "... saying so"
fi

# Every exec of the session: the embedded BPF agent (root).
if [ "$(id -u)" != 0 ]; then
	skip "execs inside the session: --audit loads BPF programs and needs root; CI runs as root"
	finish
	exit $?
fi
CG2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
export BPFBOX_CGROUP_PARENT="$CG2/bpfbox-test-$$"
trap 'rmdir "$BPFBOX_CGROUP_PARENT" 2>/dev/null; rm -rf "$TMPD"' EXIT INT TERM
A="$TMPD/audit.jsonl"

# check PY_EXPR NAME: a Python expression over the events (ev) and $TMPD/out (out).
check() {
	if PYTHONPATH=$TMPD python3 - "$A" "$TMPD/out" "$TMPD/patterns" "$1" <<'PY'
import json, sys
from cmdmatch import found
ev = [json.loads(l) for l in open(sys.argv[1])]
out = open(sys.argv[2]).read()
pats = [l.rstrip("\n") for l in open(sys.argv[3]) if l.strip()]
assert len(pats) >= 26, "the default patterns are missing"
denied = [e for e in ev if e["type"] == "exec" and e["decision"] == "deny"]
ok = eval(sys.argv[4])
sys.exit(0 if ok else 1)
PY
	then ok "$2"; else fail "$2: $(tail -c 600 "$A")"; fi
}

# One line per pattern: /bin/echo with the pattern as its argument, then
# its status. A killed echo printed nothing and its status is 137.
: >"$TMPD/ws/s.sh"
while IFS= read -r p; do
	printf "/bin/echo 'OUT %s'; echo \"rc=\$?\"\n" "$p" >>"$TMPD/ws/s.sh"
done <"$TMPD/patterns"

# In a script file.
rm -f "$A"
"$BPFBOX" run -q -w "$TMPD/ws" --audit "$A" -- sh s.sh >"$TMPD/out" 2>"$TMPD/err"
check "out.count('rc=137') == len(pats) and 'OUT' not in out" \
	"script: every default pattern killed before it printed"
check "[e['rule'] for e in denied] == ['deny_commands: ' + next(q for q in pats if found(q, p)) for p in pats]" \
	"script: one deny record per pattern, naming the first that matches"
check "all(e['layer'] == 'exec-tracepoint' and e['action'] == 'deny' and e['filename'] == '/bin/echo' for e in denied)" \
	"script: the records say the exec tracepoint killed it"
# The records against the schema (ajv: make deps).
expect_schema "script: the stream validates against schema/events.schema.json" "$A"

# Whole words inside the session too: none of these is killed.
printf '%s\n' "/bin/echo 'OUT rm -rf /tmp/build'; echo \"rc=\$?\"" \
	"/bin/echo asphalt; echo \"rc=\$?\"" "/bin/echo 'sock.shutdown()'; echo \"rc=\$?\"" \
	"/bin/echo rsync -e ssh; echo \"rc=\$?\"" >"$TMPD/ws/words.sh"
rm -f "$A"
"$BPFBOX" run -q -w "$TMPD/ws" --audit "$A" -- sh words.sh >"$TMPD/out" 2>"$TMPD/err"
check "out.count('rc=0') == 4 and not denied and out.count('asphalt') == 1" \
	"script: a longer path, asphalt, a method call, rsync -e run (whole words only)"

if [ "$QUICK" != 1 ]; then
	# Through sh -c "$(... | base64 -d)": the command line holds no pattern.
	B64=$(base64 -w0 <"$TMPD/ws/s.sh")
	rm -f "$A"
	"$BPFBOX" run -q -w "$TMPD/ws" --audit "$A" -- sh -c "eval \"\$(echo $B64 | base64 -d)\"" \
		>"$TMPD/out" 2>"$TMPD/err"
	check "out.count('rc=137') == len(pats) and 'OUT' not in out" \
		"base64: every default pattern killed before it printed"
	check "len(denied) == len(pats)" "base64: one deny record per pattern"
fi

# First match wins inside the session too; a symlink is judged by its
# target's name as well.
if [ "$QUICK" != 1 ]; then
	ln -sf /bin/echo "$TMPD/ws/alias"
	rm -f "$A"
	"$BPFBOX" run -q -w "$TMPD/ws" --audit "$A" --task "$TMPD/order1.json" -- \
		sh -c '/bin/echo fine; /bin/echo other; echo "rc=$?"; ./alias viasymlink; echo "rc=$?"' \
		>"$TMPD/out" 2>"$TMPD/err"
	check "'fine' in out and 'other' not in out and 'viasymlink' not in out and out.count('rc=137') == 2" \
		"session: allow then deny, first match wins; a symlink to echo is echo"
	check "[e['rule'] for e in denied] == ['commands[1] exe=echo'] * 2" "session: records name commands[1]"

	# Deny before allow, by exe alone: the first rule decides for every
	# echo. The layer that acts is the level's (docs/config.md "Which
	# layer acts"): the exec tracepoint's kill (137) at Standard, the LSM
	# exec hook's EPERM (126) at Full.
	rm -f "$A"
	"$BPFBOX" run -q -w "$TMPD/ws" --audit "$A" --task "$TMPD/order2.json" -- \
		sh -c '/bin/echo fine; echo "rc=$?"' >"$TMPD/out" 2>"$TMPD/err"
	check "'fine\\n' not in out and [e['rule'] for e in denied] == ['commands[0] exe=echo'] and ((ev[0]['level_enabled'] == 'Full' and 'rc=126' in out and denied[0]['layer'] == 'bpf-lsm') or (ev[0]['level_enabled'] != 'Full' and 'rc=137' in out and denied[0]['layer'] == 'exec-tracepoint'))" \
		"session: deny before allow, first match wins; the level's layer acts"

	# ask: nobody can answer, so the exec is denied (killed) and says ask.
	rm -f "$A"
	"$BPFBOX" run -q -w "$TMPD/ws" --audit "$A" --task "$TMPD/ask.json" -- \
		sh -c '/usr/bin/env echo asked; echo "rc=$?"' >"$TMPD/out" 2>"$TMPD/err"
	check "'asked' not in out and 'rc=137' in out and [e['action'] for e in denied] == ['ask']" \
		"session: an unanswered ask is denied and recorded as ask"
fi

# ask with a runtime answering (--status-fd, --ask-fd): the exec is stopped
# and the session frozen until the answer. ask_run ANSWERS...: two asked
# execs; the runtime's answers in order.
ask_run() {
	rm -f "$A" "$TMPD/st" "$TMPD/an" "$TMPD/asklog"
	mkfifo "$TMPD/st" "$TMPD/an"
	python3 "$ROOT/tests/helpers/ask_responder.py" "$TMPD/st" "$TMPD/an" "$TMPD/asklog" "$@" &
	rp=$!
	"$BPFBOX" run -q -w "$TMPD/ws" --audit "$A" --task "$TMPD/ask.json" --pause-timeout 2s \
		--status-fd 4 --ask-fd 3 4>"$TMPD/st" 3<"$TMPD/an" -- \
		sh -c '/usr/bin/env echo first; echo "rc=$?"; /usr/bin/env echo second; echo "rc=$?"' \
		>"$TMPD/out" 2>"$TMPD/err"
	wait "$rp"
}
# checks over the status lines too (tests/helpers/ask_check.py)
acheck() {
	if python3 "$ROOT/tests/helpers/ask_check.py" "$A" "$TMPD/out" "$TMPD/asklog" "$1"
	then ok "$2"; else fail "$2: $(cat "$TMPD/out" "$TMPD/err" "$TMPD/asklog" | tail -c 700)"; fi
}
ask_run approve deny
acheck "'first' in out and 'rc=0' in out and 'second' not in out and 'rc=137' in out" \
	"ask: approved once runs, denied is killed before it runs"
acheck "ans == ['approve', 'deny'] and [q['argv'][1:] for q in qs] == [['echo', 'first'], ['echo', 'second']] and [a['answer'] for a in asks] == ['approve', 'deny'] and all(a['frozen'] for a in asks)" \
	"ask: the status channel asked twice; session.ask records answer and freeze"
expect_schema "ask: the stream validates against the schema" "$A"
if [ "$QUICK" = 1 ]; then
	finish
	exit $?
fi
ask_run always
acheck "'first' in out and 'second' in out and out.count('rc=0') == 2 and len(qs) == 1 and ans == ['always']" \
	"ask: approve always lets the rule's next exec run unasked"
ask_run none
acheck "'first' not in out and 'rc=137' in out and ans[:1] == ['timeout'] and asks[0]['waited_ms'] >= 2000" \
	"ask: no answer within the pause timeout is deny"
check "ev[-1]['type'] == 'session.end'" "ask: the stream still ends"
# The top-level command itself asks at its exec when someone answers.
rm -f "$A" "$TMPD/st" "$TMPD/an" "$TMPD/asklog"
mkfifo "$TMPD/st" "$TMPD/an"
python3 "$ROOT/tests/helpers/ask_responder.py" "$TMPD/st" "$TMPD/an" "$TMPD/asklog" approve &
rp=$!
"$BPFBOX" run -q -w "$TMPD/ws" --audit "$A" --task "$TMPD/ask.json" --status-fd 4 --ask-fd 3 \
	4>"$TMPD/st" 3<"$TMPD/an" -- /usr/bin/env echo toplevel >"$TMPD/out" 2>"$TMPD/err"
wait "$rp"
acheck "out.strip() == 'toplevel' and ans == ['approve']" "ask: the top-level command asked at its exec"

# Daemon mode: the top-level command is checked the same way, and the
# daemon's exec program (pinned) checks every exec of its sessions.
daemon_scratch cmdrules
cleanup_extra() { rmdir "$BPFBOX_CGROUP_PARENT" 2>/dev/null; }
DA="$TMPD/daemon.jsonl"
if start_daemon "$DA"; then
	expect_rc 125 "daemon: a denied top-level command is 125" \
		"$BPFBOX" run --daemon-socket "$SOCK" -w "$TMPD/ws" -- sh -c ': mkfs'
	expect_grep "rule 'deny_commands: mkfs'; nothing ran" "$TMPD/err" "daemon: ... naming the rule"
	printf '/bin/echo OUT mkfs; echo "rc=$?"; echo after\n' >"$TMPD/ws/d.sh"
	"$BPFBOX" run --daemon-socket "$SOCK" -w "$TMPD/ws" -- sh d.sh >"$TMPD/out" 2>"$TMPD/err"
	if grep -q '^rc=137$' "$TMPD/out" && grep -q '^after$' "$TMPD/out" &&
		! grep -q 'OUT' "$TMPD/out"; then
		ok "daemon: an exec inside the session is killed before it runs"
	else
		fail "daemon: inside the session: $(cat "$TMPD/out" "$TMPD/err" | head -c 400)"
	fi
	if grep -q 'command rules on the execs' "$TMPD/err"; then
		fail "daemon: says the per-exec check is not enforced: $(head -c 300 "$TMPD/err")"
	else
		ok "daemon: no not-enforced line for the command rules"
	fi
	# the record reaches the daemon's audit stream (written as it arrives)
	poll_until 5 grep -q '"rule":"deny_commands: mkfs"' "$DA" &&
		ok "daemon: its audit stream has the deny record" ||
		fail "daemon: no deny record in $DA: $(tail -c 300 "$DA")"
	kill "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=
else
	fail "daemon: it did not start: $(tail -c 300 "$DERR")"
fi

# The operator (global config) may replace the patterns: then nothing is
# compiled and the session pays no rule table.
cat >"$TMPD/global.json" <<'EOF'
{ "sandbox": { "restrictions": { "deny_commands": [] } } }
EOF
rm -f "$A"
"$BPFBOX" run -q -w "$TMPD/ws" --config "$TMPD/global.json" --audit "$A" -- \
	sh -c '/bin/echo OUT mkfs; echo "rc=$?"' >"$TMPD/out" 2>"$TMPD/err"
check "'OUT mkfs' in out and 'rc=0' in out and not denied" \
	"global config without patterns: mkfs in argv runs"
finish
