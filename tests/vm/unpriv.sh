#!/bin/sh
# Runs inside the Standard VM of each kernel (tests/vm/level.sh), as root:
# bpfbox used by an unprivileged test user, first with unprivileged user
# namespaces allowed, then with them refused by sysctl. Both times the
# user's sessions must hold what the level promises, and `bpfbox status`
# must say whether user namespaces are there. It changes a sysctl: run it
# last in a boot.
cd /opt/bpfbox || exit 1
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
. tests/lib.sh

. tests/vm/test_user.sh

userns_state() {
	as_user bpfbox status --json >"$TMPD/s.json" 2>"$TMPD/s.err"
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
f = d["features"]["unprivileged_userns"]
print("root" if d["root"] else "user", f["available"], f["detail"])' "$TMPD/s.json"
}

# The kernel's switch for unprivileged user namespaces: Debian's own sysctl
# where the kernel has it, else the namespace count limit (which refuses
# root's too).
if [ -e /proc/sys/kernel/unprivileged_userns_clone ]; then
	KNOB=kernel.unprivileged_userns_clone OFF=0
else
	KNOB=user.max_user_namespaces OFF=0
fi
before=$(sysctl -n "$KNOB")

# --- user namespaces allowed ----------------------------------------------------

st=$(userns_state)
case "$st" in
"user True "*) ok "unpriv: as uid $UID_T, status reports unprivileged user namespaces available ($KNOB = $before)" ;;
*) fail "unpriv: status as uid $UID_T says '$st' with $KNOB = $before; want available (stderr: $(head -c 200 "$TMPD/s.err"))" ;;
esac
as_user unshare -U true 2>"$TMPD/err" && ok "unpriv: uid $UID_T creates a user namespace (control)" ||
	fail "unpriv: uid $UID_T cannot create a user namespace with $KNOB = $before: $(head -c 200 "$TMPD/err")"
for suite in tests/host/test_escape.sh tests/host/test_work.sh; do
	echo "# unpriv: $suite as uid $UID_T, user namespaces allowed"
	as_user sh "$suite" || FAILS=$((FAILS + 1))
done

# Through a daemon on pure cgroup v2 (this guest): the user's session sees
# its own cgroup at /sys/fs/cgroup. The host's cgroup2 mount is locked in
# the session's user namespace, and the same superblock mounted on its
# root was EBUSY: every unprivileged session through a daemon failed.
SOCK="$TMPD/d.sock" PIN="/sys/fs/bpf/bpfbox-unpriv-$$" PARENT="/sys/fs/cgroup/bpfbox-unpriv-$$" DERR="$TMPD/derr"
: >"$DERR"
mkdir -p "$TMPD/uws" && chown "$UID_T:$UID_T" "$TMPD/uws"
if start_daemon "$TMPD/d.jsonl" --group "$U"; then
	as_user bpfbox run -q --daemon-socket "$SOCK" -w "$TMPD/uws" -- \
		sh -c 'cat /proc/self/cgroup; cat /sys/fs/cgroup/pids.max' >"$TMPD/cg.out" 2>&1
	rc=$?
	if [ "$rc" = 0 ] && grep -qx '0::/' "$TMPD/cg.out" && grep -Eqx '[0-9]+|max' "$TMPD/cg.out"; then
		ok "unpriv: through a daemon, uid $UID_T's session sees its own cgroup (0::/ and its pids.max)"
	else
		fail "unpriv: through a daemon: exit $rc: $(head -c 400 "$TMPD/cg.out")"
	fi
	kill "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	bpfbox daemon --cleanup --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" >/dev/null 2>&1
	rmdir "$PARENT" 2>/dev/null
else
	fail "unpriv: the daemon did not get ready: $(head -c 400 "$DERR")"
fi

# --- user namespaces refused ----------------------------------------------------

if sysctl -qw "$KNOB=$OFF"; then
	if as_user unshare -U true 2>/dev/null; then
		fail "unpriv: uid $UID_T still creates a user namespace with $KNOB = $OFF"
	else
		ok "unpriv: $KNOB = $OFF refuses uid $UID_T a user namespace (control)"
	fi
	st=$(userns_state)
	case "$st" in
	"user False "*) ok "unpriv: status reports unprivileged user namespaces unavailable: ${st#user False }" ;;
	*) fail "unpriv: status as uid $UID_T says '$st' with $KNOB = $OFF; want unavailable" ;;
	esac
	echo "# unpriv: tests/host/test_escape.sh as uid $UID_T, user namespaces refused"
	as_user sh tests/host/test_escape.sh || FAILS=$((FAILS + 1))
	sysctl -qw "$KNOB=$before"
else
	fail "unpriv: cannot set $KNOB = $OFF"
fi
finish
