# Sourced by the VM scripts that run bpfbox as an unprivileged user
# (unpriv.sh, full_unpriv.sh), after tests/lib.sh: the test user, made in
# the guest's writable root (an overlay; the host's /etc is never
# written), a uid no host account has here, and as_user.
U=bpfboxtest UID_T=4242
UH=/home/$U
if ! grep -q "^$U:" /etc/passwd; then
	echo "$U:x:$UID_T:$UID_T:bpfbox test user:$UH:/bin/sh" >>/etc/passwd
	echo "$U:x:$UID_T:" >>/etc/group
fi
mkdir -p "$UH" && chown "$UID_T:$UID_T" "$UH"
chmod 755 "$TMPD"

# as_user CMD...: CMD as the test user, with a login-like environment and
# the NAME=VALUE words of $AS_USER_ENV (none by default).
as_user() {
	# shellcheck disable=SC2086  # words on purpose
	setpriv --reuid="$UID_T" --regid="$UID_T" --clear-groups \
		env -i PATH="$PATH" HOME="$UH" USER="$U" LOGNAME="$U" TERM=dumb \
		BPFBOX="$BPFBOX" BPFBOX_BUILD="$BPFBOX_BUILD" BPFBOX_VM=1 ${AS_USER_ENV:-} "$@"
}
