#!/bin/sh
# bpfbox policy check: the effective policy as JSON, or one line saying what
# is wrong and exit 2. Every run names its global config, so the host's
# /etc/bpfbox/config.json never changes the outcome.
. "$(dirname "$0")/../lib.sh"

# The tests run in the scratch dir: a relative $BPFBOX must survive the cd.
case "$BPFBOX" in
/*) ;;
*/*) BPFBOX=$(pwd -P)/$BPFBOX ;;
esac
D=$(cd "$TMPD" && pwd -P)
mkdir -p "$D/ws/sub" "$D/ro" "$D/rw"
echo '{}' >"$D/empty.json"
C="--config $D/empty.json"
cd "$D" || exit 1

# --- usage ---
expect_rc 2 "no subcommand is a usage error" "$BPFBOX" policy
expect_rc 0 "policy --help" "$BPFBOX" policy --help
expect_grep "usage: bpfbox policy check" "$TMPD/out" "help goes to stdout"
expect_rc 0 "policy check --help" "$BPFBOX" policy check --help
expect_err 2 "unknown subcommand is named" "^bpfbox policy: unknown subcommand 'frob'" \
	"$BPFBOX" policy frob
expect_err 2 "unknown option is named" "unknown option '--frob'" \
	"$BPFBOX" policy check --frob
expect_err 2 "missing argument is said" "needs an argument" \
	"$BPFBOX" policy check --task
expect_err 2 "bad --mode lists the modes" \
	"^bpfbox policy: --mode: unknown mode 'yolo'; use workspace-write" \
	"$BPFBOX" policy check $C --mode yolo

# --- the defaults ---
expect_rc 0 "defaults" "$BPFBOX" policy check $C -w "$D/ws"
expect_grep "\"workspace\": \"$D/ws\"" "$TMPD/out" "-w becomes the workspace"
expect_grep '"mode": "workspace-write"' "$TMPD/out" "default mode"
expect_grep '"network": "deny"' "$TMPD/out" "default network"
expect_grep '"private_tmp": true' "$TMPD/out" "default private_tmp"
expect_grep '"timeout_s": 120' "$TMPD/out" "default timeout"
expect_grep '"output_bytes": 1048576' "$TMPD/out" "default output cap"
expect_grep '"\*\*/\.ssh"' "$TMPD/out" "default deny has **/.ssh"
expect_grep '"/etc/shadow"' "$TMPD/out" "default deny has /etc/shadow"
expect_grep '"flags"' "$TMPD/out" "flags layer listed"
(cd "$D/ws" && "$BPFBOX" policy check $C) >"$TMPD/out" 2>"$TMPD/err"
expect_grep "\"workspace\": \"$D/ws\"" "$TMPD/out" "workspace defaults to cwd"

# --- a single file, and layer order ---
cat >"$D/a.json" <<'EOF'
{ "mode": "read-only", "limits": { "pids": 10 }, "extra": { "ro": ["<cwd>/ro"] } }
EOF
cat >"$D/b.json" <<'EOF'
{ "limits": { "pids": 20 }, "extra": { "rw": ["rw"], "env": { "A": "1" } } }
EOF
expect_rc 0 "check one file" "$BPFBOX" policy check $C -w ws a.json
expect_grep '"mode": "read-only"' "$TMPD/out" "file sets the mode"
expect_grep "\"$D/ro\"" "$TMPD/out" "<cwd> expanded"
expect_grep '"file:a.json"' "$TMPD/out" "file layer listed"
expect_rc 0 "two files" "$BPFBOX" policy check $C -w ws a.json b.json
expect_grep '"pids": 20' "$TMPD/out" "the later file wins"
expect_grep '"A": "1"' "$TMPD/out" "env from a file"
expect_grep "\"$D/rw\"" "$TMPD/out" "relative rw made absolute"
expect_rc 0 "two files reversed" "$BPFBOX" policy check $C -w ws b.json a.json
expect_grep '"pids": 10' "$TMPD/out" "order of FILES counts"
expect_rc 0 "flags beat files" "$BPFBOX" policy check $C -w ws --mode full-access a.json
expect_grep '"mode": "full-access"' "$TMPD/out" "--mode beats the file"

# --- global config: sandbox, agents, modes ---
cat >"$D/global.json" <<'EOF'
{
  "sandbox": { "limits": { "pids": 100 } },
  "agents": {
    "claude": { "mode": "read-only", "limits": { "pids": 50 } },
    "codex": { "restrictions": { "deny": ["**/.ssh"] } }
  },
  "modes": {
    "read-only": { "network": "allow" },
    "full-access": { "private_tmp": false }
  }
}
EOF
G="--config $D/global.json"
expect_rc 0 "global sandbox" "$BPFBOX" policy check $G -w ws
expect_grep '"pids": 100' "$TMPD/out" "global sandbox applies"
expect_grep "\"$D/global.json:sandbox\"" "$TMPD/out" "global layer listed"
expect_rc 0 "agent" "$BPFBOX" policy check $G --agent claude -w ws
expect_grep '"pids": 50' "$TMPD/out" "agent beats global"
expect_grep '"network": "allow"' "$TMPD/out" "agent's mode picks modes.read-only"
expect_grep "global.json:modes.read-only" "$TMPD/out" "mode layer listed"
echo '{ "limits": { "pids": 40 } }' >"$D/task.json"
expect_rc 0 "task" "$BPFBOX" policy check $G --agent claude --task task.json -w ws
expect_grep '"pids": 40' "$TMPD/out" "task beats agent"
expect_grep '"task:task.json"' "$TMPD/out" "task layer listed"
expect_rc 0 "mode from flags" "$BPFBOX" policy check $G --agent claude --mode full-access -w ws
expect_grep '"private_tmp": false' "$TMPD/out" "--mode picks modes.full-access"
expect_grep '"network": "deny"' "$TMPD/out" "modes.read-only not applied"
expect_rc 0 "agent replaces deny" "$BPFBOX" policy check $G --agent codex -w ws
if grep -q '"\*\*/\.ssh"' "$TMPD/out" && ! grep -q '/etc/shadow' "$TMPD/out"; then
	ok "agent restrictions.deny replaces the defaults"
else
	fail "agent restrictions.deny replaces the defaults: $(head -c 300 "$TMPD/out")"
fi
expect_err 2 "unknown agent lists the known ones" \
	"^bpfbox policy: $D/global.json: at agents: unknown agent 'gpt'; known agents: claude, codex$" \
	"$BPFBOX" policy check $G --agent gpt -w ws

# --- errors: one line, file, JSON path, what to do ---
expect_err 2 "missing config named" \
	"^bpfbox policy: $D/nope.json: cannot read the global config: No such file" \
	"$BPFBOX" policy check --config "$D/nope.json" -w ws
expect_err 2 "missing task named" "^bpfbox policy: nope.json: cannot read the task file" \
	"$BPFBOX" policy check $C --task nope.json -w ws
echo '{ "limits": { "pid": 5 } }' >"$D/typo.json"
expect_err 2 "unknown key: file, path, valid keys" \
	"^bpfbox policy: typo.json: at limits.pid: unknown limit 'pid'; valid limits: timeout_s" \
	"$BPFBOX" policy check $C -w ws typo.json
if [ "$(wc -l <"$TMPD/err")" -eq 1 ] && [ ! -s "$TMPD/out" ] &&
	grep -q '^bpfbox policy: ' "$TMPD/err"; then
	ok "an error is one line on stderr, nothing on stdout"
else
	fail "an error is one line on stderr, nothing on stdout: $(cat "$TMPD/err")"
fi
printf '{ "agents": { "claude": { "limits": { "pids": 2 } } } }\n' >"$D/g2.json"
expect_err 2 "JSON path of a nested error" "at agents.claude.limits.pids: must be at least 4" \
	"$BPFBOX" policy check --config "$D/g2.json" -w ws
printf '{\n  "mode": "read-only",\n}\n' >"$D/comma.json"
expect_err 2 "JSON syntax error has a line" "^bpfbox policy: comma.json: invalid JSON at line 3" \
	"$BPFBOX" policy check $C -w ws comma.json
echo '{ "restrictions": { "deny": [] } }' >"$D/nodeny.json"
expect_err 2 "deny protection message" \
	"at restrictions.deny: deny list can only be replaced in the global or agent config; use extra.deny" \
	"$BPFBOX" policy check $C -w ws --task nodeny.json
echo '{ "extra": { "deny": ["secrets/*"] } }' >"$D/badpat.json"
expect_err 2 "bad pattern named" "at extra.deny\[0\]: invalid deny pattern 'secrets/\*'" \
	"$BPFBOX" policy check $C -w ws badpat.json
echo '{ "extra": { "deny": ["**/*.tok"] } }' >"$D/moredeny.json"
expect_rc 0 "task adds to the deny list" "$BPFBOX" policy check $C -w ws --task moredeny.json
expect_grep '"\*\*/\*\.tok"' "$TMPD/out" "extra.deny appended"
expect_grep '"\*\*/\.ssh"' "$TMPD/out" "defaults kept with extra.deny"

# --- expansion and validation ---
echo '{ "extra": { "ro": ["$BPFBOX_T_UNSET/ro"] } }' >"$D/var.json"
expect_err 2 "unset variable named" "at extra.ro\[0\]: \\\$BPFBOX_T_UNSET is not set" \
	env -u BPFBOX_T_UNSET "$BPFBOX" policy check $C -w ws var.json
expect_rc 0 "set variable" env BPFBOX_T_UNSET="$D" "$BPFBOX" policy check $C -w ws var.json
echo '{ "extra": { "ro": ["${BPFBOX_T_DIR}/ro", "~/ro"] } }' >"$D/var2.json"
expect_rc 0 "\${VAR} and ~" env BPFBOX_T_DIR="$D" HOME="$D" "$BPFBOX" policy check $C -w ws var2.json
expect_grep "\"$D/ro\"" "$TMPD/out" "\${VAR} and ~ expanded"
echo '{ "extra": { "ro": ["missing"] } }' >"$D/missing.json"
expect_err 2 "missing path named" "at extra.ro\[0\]: '$D/missing' does not exist" \
	"$BPFBOX" policy check $C -w ws missing.json
expect_err 2 "workspace / refused with advice" \
	"^bpfbox policy: command line: at workspace: .*choose a project directory with -w DIR" \
	"$BPFBOX" policy check $C -w /
expect_rc 2 "workspace /etc" "$BPFBOX" policy check $C -w /etc
expect_err 2 "missing workspace named" "does not exist" \
	"$BPFBOX" policy check $C -w "$D/nope"
expect_err 2 "home refused" "is your home directory" \
	env HOME="$D/ws" "$BPFBOX" policy check $C -w ws
expect_rc 0 "workspace below home" env HOME="$D/ws" "$BPFBOX" policy check $C -w ws/sub
echo '{ "user": "no-such-user-bpfbox" }' >"$D/user.json"
expect_err 2 "unknown user named" "at user: unknown user 'no-such-user-bpfbox'" \
	"$BPFBOX" policy check $C -w ws user.json

# --- writable grants that reach the kernel, bpfbox or a shared root ---
# (finding 3 of issue 17: --rw /sys/fs/cgroup let a session leave its cgroup)
ln -sf /sys/fs/cgroup "$D/cg-link"
for g in /sys/fs/cgroup /sys/fs/bpf /proc/sys /dev /tmp "$D/cg-link"; do
	[ -e "$g" ] || { skip "rw $g: absent on this host, nothing to refuse"; continue; }
	printf '{ "extra": { "rw": ["%s"] } }\n' "$g" >"$D/grant.json"
	expect_err 2 "rw $g: one line names the path and the rule" \
		"^bpfbox policy: grant.json: at extra.rw\[0\]: write access to '.*' would undo the sandbox: it is " \
		"$BPFBOX" policy check $C -w ws grant.json
done
expect_err 2 "workspace /tmp: the rule is named" "'/tmp' is a directory every user shares" \
	"$BPFBOX" policy check $C -w /tmp
printf '{ "extra": { "rw": ["%s"] } }\n' "$D/rw" >"$D/grant.json"
expect_rc 0 "rw below /tmp still granted" "$BPFBOX" policy check $C -w ws grant.json
rm -f "$D/ran"
expect_err 125 "run --rw /sys/fs/cgroup: the rule is named" \
	"write access to '/sys/fs/cgroup' would undo the sandbox: it is a kernel interface" \
	"$BPFBOX" run -q $C -w "$D/ws" --rw /sys/fs/cgroup -- touch "$D/ran"
[ ! -e "$D/ran" ] && ok "run --rw /sys/fs/cgroup: the command did not run" ||
	fail "run --rw /sys/fs/cgroup: the command did not run" "$D/ran exists"

finish
