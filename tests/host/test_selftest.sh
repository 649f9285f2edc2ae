# bpfbox test: the smoke checks pass on this host, and really check.
. "$(dirname "$0")/../lib.sh"

snapshot tmp ls -d /tmp/bpfbox-selftest-*
snapshot ssh ls "$HOME"/.ssh/bpfbox-selftest-*
expect_rc 0 "bpfbox test passes on this host" "$BPFBOX" test
for c in "write in the workspace allowed" "write outside the workspace denied" \
	"read of a planted file under ~/.ssh denied" "network denied" \
	"children inherit the restrictions" "timeout enforced"; do
	expect_grep "^ok +$c" "$TMPD/out" "bpfbox test reports: $c"
done
# It cleans up: no temp dirs and no planted file are left.
# (compared with before the run: an earlier, killed run may have left some)
left=$(new_since tmp ls -d /tmp/bpfbox-selftest-*)
[ -n "$left" ] && fail "bpfbox test left temp dirs: $left" || ok "bpfbox test leaves no temp dirs"
left=$(new_since ssh ls "$HOME"/.ssh/bpfbox-selftest-*)
[ -n "$left" ] && fail "bpfbox test left a planted file: $left" || ok "bpfbox test removes its planted file"
# The probe really tells allowed from denied: outside a sandbox it is allowed.
expect_rc 0 "the probe itself can write outside a session" "$BPFBOX" __probe write "$TMPD/probe-out"
expect_rc 1 "the probe reports a DAC denial as denied" sh -c "chmod 000 '$TMPD' 2>/dev/null; setpriv --reuid=65534 --regid=65534 --clear-groups '$BPFBOX' __probe write '$TMPD/x'; rc=\$?; chmod 700 '$TMPD'; exit \$rc"
expect_rc 2 "bpfbox test rejects arguments" "$BPFBOX" test extra
finish
