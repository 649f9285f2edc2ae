#!/bin/sh
# A session cannot turn off the disk limit of its user's other sessions by
# holding the user's inotify instances (fs.inotify.max_user_instances, 128
# by default; each session's disk monitor needs one). Found 2026-12-01: a
# session that held 125 of them made the next session of its uid run with
# no disk limit (said, but it ran).
#
# - A session that cannot get an instance refuses to start: 125, one line
#   naming the sysctl, nothing ran (fail closed, docs/SECURITY.md).
# - A session in a user namespace of its own holds at most its share of
#   the user's instances (a quarter, at least 16), so the next session of
#   that user starts.
#
# Each case runs as a uid of its own that nothing else on the host uses
# (a production daemon's and the other suites' uids keep their instances:
# only this uid's are exhausted). Root only: setpriv to those uids.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" != 0 ]; then
	skip "inotify instances: needs root for uids of its own (make test runs as root)"
	finish
	exit 0
fi
chmod 755 "$TMPD"
MAX=$(cat /proc/sys/fs/inotify/max_user_instances)
echo "# fs.inotify.max_user_instances $MAX"
# holder: takes every inotify instance it can, says how many, and holds
# them until ./go exists.
cat >"$TMPD/holder.py" <<'EOF'
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 100000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
with open("held.tmp", "w") as f:
    f.write("%d %d\n" % (len(fds), ctypes.get_errno()))
os.rename("held.tmp", "held")
for _ in range(600):
    if os.path.exists("go"):
        break
    time.sleep(0.05)
EOF

# as UID CMD...: CMD as uid UID, its home in $TMPD.
as() {
	u=$1
	shift
	mkdir -p "$TMPD/h$u" && chown "$u" "$TMPD/h$u"
	setpriv --reuid "$u" --regid "$u" --clear-groups env HOME="$TMPD/h$u" "$@"
}

# case UID WHAT [RUN OPTIONS]: a holder session of UID in $TMPD/wsUID, then,
# while it holds, a second session of the same uid. Sets $held (what the
# holder got), $rc2 and $TMPD/second.err.
run_case() {
	u=$1
	shift
	W=$TMPD/ws$u
	mkdir -p "$W" && cp "$TMPD/holder.py" "$W/" && chown -R "$u" "$W"
	as "$u" "$BPFBOX" run -q --no-daemon "$@" -w "$W" -- python3 holder.py \
		</dev/null >"$TMPD/holder$u.out" 2>&1 &
	HP=$!
	wait_file "$W/held" 30
	held=$(cut -d' ' -f1 "$W/held" 2>/dev/null)
	rm -f "$W/ran"
	as "$u" "$BPFBOX" run -q --no-daemon "$@" -w "$W" -- touch ran \
		</dev/null >/dev/null 2>"$TMPD/second.err"
	rc2=$?
	touch "$W/go"
	wait "$HP"
}

# Without a user namespace (--no-namespaces): nothing caps the holder.
U1=64941
run_case $U1 --no-namespaces
if [ -n "$held" ] && [ "$held" -gt 0 ]; then
	ok "a session without a user namespace took $held inotify instances of its uid (of $MAX)"
else
	fail "the holder took no instance: $(oneline "$TMPD/holder$U1.out")"
fi
rc=$rc2
verdict "the next session of that uid, with no instance left for its disk monitor, refuses: 125 in one line naming the sysctl, nothing ran" 125 \
	"$(grep -q 'cannot watch the session.s disk use.*fs.inotify.max_user_instances.*nothing ran' "$TMPD/second.err" &&
		[ "$(grep -c . "$TMPD/second.err")" = 1 ] || echo " stderr: $(oneline "$TMPD/second.err" 300)")$([ ! -e "$TMPD/ws$U1/ran" ] || echo " it ran")"
# Once the holder is gone, the same uid runs again.
rm -f "$TMPD/ws$U1/ran"
as $U1 "$BPFBOX" run -q --no-daemon --no-namespaces -w "$TMPD/ws$U1" -- touch ran </dev/null >/dev/null 2>"$TMPD/third.err"
rc3=$?
[ "$rc3" = 0 ] && [ -e "$TMPD/ws$U1/ran" ] &&
	ok "once the holder ended, the next session of that uid runs" ||
	fail "after the holder: exit $rc3 $(oneline "$TMPD/third.err" 300)"

# In a user namespace of its own: the holder gets its share only.
U2=64942
share=$((MAX / 4))
[ "$share" -lt 16 ] && share=16
run_case $U2
if [ "$(status_json | python3 -c 'import json,sys; print(json.load(sys.stdin)["features"]["session_namespaces"]["available"])' 2>/dev/null)" != True ]; then
	skip "a session's share of inotify instances: no session namespaces here (the VM cells' unpriv.sh runs unprivileged sessions)"
else
	rc=0
	verdict "a session in a user namespace holds at most its share of the user's inotify instances ($share of $MAX)" 0 \
		"$([ -n "$held" ] && [ "$held" -le "$share" ] && [ "$held" -gt 0 ] || echo "held ${held:-nothing}: $(oneline "$TMPD/holder$U2.out" 300)")"
	rc=$rc2
	verdict "while it holds them, the next session of that uid starts and runs" 0 \
		"$([ -e "$TMPD/ws$U2/ran" ] || echo "it did not run: $(oneline "$TMPD/second.err" 300)")"
	# Around it: the session raising its own share, or a user namespace
	# of its own inside (counted in the session's namespace all the same).
	as $U2 "$BPFBOX" run -q --no-daemon -w "$TMPD/ws$U2" -- sh -c \
		'echo 100000 >/proc/sys/user/max_inotify_instances 2>/dev/null && echo raised;
		unshare -U true 2>/dev/null && echo nested; cat /proc/sys/user/max_inotify_instances' \
		</dev/null >"$TMPD/raise.out" 2>&1
	rc=0
	verdict "the session cannot raise its share (the sysctl refused, no user namespace of its own inside)" 0 \
		"$(grep -q 'raised\|nested' "$TMPD/raise.out" && echo "$(oneline "$TMPD/raise.out")")$(grep -qx "$share" "$TMPD/raise.out" || echo " share now: $(oneline "$TMPD/raise.out")")"
fi
finish
