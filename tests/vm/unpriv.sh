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

# The test user, made in the guest's writable root (an overlay; the host's
# /etc is never written): a uid no host account has here.
U=bpfboxtest UID_T=4242
UH=/home/$U
if ! grep -q "^$U:" /etc/passwd; then
	echo "$U:x:$UID_T:$UID_T:bpfbox test user:$UH:/bin/sh" >>/etc/passwd
	echo "$U:x:$UID_T:" >>/etc/group
fi
mkdir -p "$UH" && chown "$UID_T:$UID_T" "$UH"
chmod 755 "$TMPD"

# as_user CMD...: CMD as the test user, with a login-like environment.
as_user() {
	setpriv --reuid="$UID_T" --regid="$UID_T" --clear-groups \
		env -i PATH="$PATH" HOME="$UH" USER="$U" LOGNAME="$U" TERM=dumb \
		BPFBOX="$BPFBOX" BPFBOX_BUILD="$BPFBOX_BUILD" BPFBOX_VM=1 "$@"
}

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
