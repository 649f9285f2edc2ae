#!/bin/sh
# Runs inside the Full VMs: a change set of an unprivileged user's session
# through a daemon at Full (issue 33 item 1: root and unprivileged,
# embedded and daemon, and at Full; full.sh has root's, embedded). The
# user's own namespaces mount the set's overlay; the daemon's BPF LSM must
# judge the session's files by the paths it sees (the overlay's), deny a
# .pem the session makes there (.env, there before, the mount view and
# Landlock refuse first), and leave the overlay's own work alone; then the user
# reviews, applies and undoes the set with the ordinary commands.
cd /opt/bpfbox || exit 1
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
. tests/lib.sh

. tests/vm/test_user.sh
# The user's change sets in the test's directory: the default, under the
# home, lies on the guest's root, an overlayfs, which cannot hold an
# upper layer (bpfbox refuses it; tests/host/test_changes.sh).
mkdir -p "$TMPD/usets" && chown "$UID_T:$UID_T" "$TMPD/usets"
AS_USER_ENV="BPFBOX_CHANGES_DIR=$TMPD/usets"

SOCK="$TMPD/d.sock" PIN="/sys/fs/bpf/bpfbox-fullu-$$" PARENT="/sys/fs/cgroup/bpfbox-fullu-$$" DERR="$TMPD/derr"
: >"$DERR"
W=$TMPD/uws
mkdir -p "$W/proj"
echo SECRET=1 >"$W/proj/.env"
echo fine >"$W/notes.txt"
echo old >"$W/old.txt"
chown -R "$UID_T:$UID_T" "$W"
D=$TMPD/d.jsonl
if ! start_daemon "$D" --group "$U"; then
	fail "vm unpriv changes: the daemon did not get ready: $(oneline "$DERR" 400)"
	finish
	exit $?
fi
as_user bpfbox run -q --daemon-socket "$SOCK" -w "$W" --changes review --status-fd 3 -- sh -c \
	'cat proj/.env; echo KEY >proj/made.pem; cat proj/made.pem; echo new >new.txt;
	echo rewritten >notes.txt; chmod 600 notes.txt; touch -d 2001-01-01 notes.txt; rm old.txt;
	mkdir d && echo in >d/f; cat notes.txt' \
	>"$TMPD/out" 2>&1 3>"$TMPD/st"
rc=$?
SID=$(sed -n 's/.*"type":"ended".*"session":"\([0-9a-f]*\)".*/\1/p' "$TMPD/st")
# cat of .env fails: the command's status is the last one's (cat notes.txt).
if [ $rc = 0 ] && grep -q 'proj/.env: Permission denied' "$TMPD/out" && grep -q '^rewritten$' "$TMPD/out" &&
	grep -Eq 'proj/made.pem: (Permission denied|Operation not permitted)' "$TMPD/out" && ! grep -q -e SECRET -e KEY "$TMPD/out"; then
	ok "vm unpriv changes: uid $UID_T's session through the daemon writes, chmods and touches in its set's overlay; .env and a .pem it made stay denied"
else
	fail "vm unpriv changes: exit $rc: $(oneline "$TMPD/out" 600)"
fi
# .env was there before: the mount view and Landlock refuse it first. The
# .pem made in the overlay only the BPF LSM knows, by the workspace's path.
if [ -n "$SID" ] && wait_events "$D" "any(e['type'] == 'session.start' and e['level_enabled'] == 'Full' for e in mine) and any(e.get('decision') == 'deny' and e.get('layer') == 'bpf-lsm' and e.get('path', '').endswith('/uws/proj/made.pem') for e in mine)" 10; then
	ok "vm unpriv changes: the session ran at Full and the BPF LSM denied the .pem made in the overlay by the workspace's path"
else
	fail "vm unpriv changes: session '$SID': no Full start or no bpf-lsm denial of uws/proj/made.pem: $(grep '"type":"file"' "$D" | grep 'proj/made' | head -3 | cut -c300-900 | tr '\n' ' ')"
fi
[ "$(cat "$W/notes.txt")" = fine ] && [ -e "$W/old.txt" ] && [ ! -e "$W/new.txt" ] ||
	fail "vm unpriv changes: the workspace changed before the apply: $(ls "$W" | tr '\n' ' ')"
listed=$(as_user bpfbox changes "$SID" 2>&1 | tr -s ' ' | sort | tr '\n' ';')
case "$listed" in
*"added d/f;"*"added new.txt;"*"added proj/made.pem;"*"deleted old.txt;"*"modified notes.txt;"*)
	ok "vm unpriv changes: the user lists the set: $listed" ;;
*) fail "vm unpriv changes: bpfbox changes $SID as uid $UID_T: '$listed'" ;;
esac
as_user bpfbox apply "$SID" >"$TMPD/ap.out" 2>&1
rc=$?
if [ $rc = 0 ] && [ "$(cat "$W/notes.txt")" = rewritten ] && [ "$(stat -c %a "$W/notes.txt")" = 600 ] &&
	[ "$(cat "$W/d/f")" = in ] && [ ! -e "$W/old.txt" ] && [ "$(stat -c %u "$W/new.txt")" = "$UID_T" ]; then
	ok "vm unpriv changes: the user applies it: the rewrite with its mode, the new files (theirs), the removal"
else
	fail "vm unpriv changes: apply exit $rc ($(oneline "$TMPD/ap.out" 300)): $(ls -ln "$W" | tr '\n' ' ')"
fi
as_user bpfbox undo "$W" >"$TMPD/un.out" 2>&1
rc=$?
if [ $rc = 0 ] && [ "$(cat "$W/notes.txt")" = fine ] && [ "$(cat "$W/old.txt")" = old ] &&
	[ ! -e "$W/new.txt" ] && [ ! -e "$W/d" ]; then
	ok "vm unpriv changes: the user's undo puts the workspace back"
else
	fail "vm unpriv changes: undo exit $rc ($(oneline "$TMPD/un.out" 300)): $(ls -ln "$W" | tr '\n' ' ')"
fi
# The next review session takes the set and overlay its last session's
# keeper made (userspace/sandbox/changes_warm.c): the keeper's own user
# namespace's overlay, at Full, judged by the workspace's paths as one the
# session made.
poll_until 30 warm_kept "$TMPD/usets" u
KEPT=$(warm_record "$TMPD/usets" u | cut -d: -f6)
KINO=$(stat -c %i "$TMPD/usets/$KEPT" 2>/dev/null)
as_user bpfbox run -q --daemon-socket "$SOCK" -w "$W" --changes review --status-fd 3 -- sh -c \
	'echo KEY >proj/again.pem; cat proj/again.pem; echo again >again.txt; cat again.txt' \
	>"$TMPD/out" 2>&1 3>"$TMPD/st"
rc=$?
SID=$(sed -n 's/.*"type":"ended".*"session":"\([0-9a-f]*\)".*/\1/p' "$TMPD/st")
# Yama's ptrace_scope of 1 or more refuses a user pidfd_getfd of a process
# not its descendant: the set is then made, as without a keeper.
SCOPE=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ -n "$KINO" ] && { [ "$(stat -c %i "$TMPD/usets/$SID" 2>/dev/null)" = "$KINO" ] || [ "$SCOPE" != 0 ]; } &&
	[ "$(cat "$TMPD/usets/$SID/upper/again.txt" 2>/dev/null)" = again ] && ! grep -q KEY "$TMPD/out" &&
	wait_events "$D" "any(e['type'] == 'session.start' and e['level_enabled'] == 'Full' for e in mine) and any(e.get('decision') == 'deny' and e.get('layer') == 'bpf-lsm' and e.get('path', '').endswith('/uws/proj/again.pem') for e in mine)" 10; then
	ok "vm unpriv changes: the next session $([ "$SCOPE" = 0 ] && echo "takes the kept set and overlay" || echo "makes its set (Yama ptrace_scope $SCOPE)") at Full; the BPF LSM denies a .pem made there by the workspace's path"
else
	fail "vm unpriv changes: kept set '$KEPT' ($KINO), session '$SID' ($(stat -c %i "$TMPD/usets/$SID" 2>&1)), exit $rc: $(oneline "$TMPD/out" 400)"
fi
as_user bpfbox discard "$SID" >/dev/null 2>&1
keepers_stop "$TMPD/usets"
kill "$DPID" 2>/dev/null
wait "$DPID" 2>/dev/null
bpfbox daemon --cleanup --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" >/dev/null 2>&1
rmdir "$PARENT" 2>/dev/null
finish
