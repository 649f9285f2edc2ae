#!/bin/sh
# The Debian package under a real systemd, in a throw-away VM: systemd boots
# as PID 1 of a PID namespace in the host root's copy, the .deb is installed
# with dpkg, and bpfbox.service is exercised: sandboxing and capabilities as
# the unit sets them, a client in the bpfbox group, restart with
# re-adoption, logrotate, upgrade, crash, remove and purge.
#
# It needs systemd, so it does not run on the CI host (no systemd there) and
# takes several minutes under TCG; run it after changing the unit:
#
#   dpkg-buildpackage -us -uc -b         # in a copy of the tree
#   cp ../bpfbox_*_amd64.deb build/bin/
#   tools/vmtest --hostroot --timeout 900 --mem 2048 -- packaging/vm-systemd-test.sh
. /opt/bpfbox/tests/lib.sh

DEB=${1:-$(ls /opt/bpfbox/bin/bpfbox_*.deb 2>/dev/null | tail -1)}
if [ ! -f "$DEB" ] || [ "${BPFBOX_VM_HOSTROOT:-}" != 1 ]; then
	fail "run under tools/vmtest --hostroot with the .deb in build/bin (see the header)"
	finish
	exit $?
fi

# A target with nothing of the host's services; no policy-rc.d veto.
rm -f /usr/sbin/policy-rc.d
mkdir -p /etc/systemd/system
cat >/etc/systemd/system/vmtest.target <<'EOF'
[Unit]
Description=vmtest
Requires=sysinit.target
After=sysinit.target
AllowIsolate=yes
EOF
unshare --pid --fork --mount-proc /lib/systemd/systemd --system --unit=vmtest.target \
	--log-target=kmsg --show-status=no </dev/null >/dev/null 2>&1 &
i=0
SD=
while [ $i -lt 120 ]; do
	SD=$(pgrep -x systemd | head -1)
	[ -n "$SD" ] && [ -S /run/systemd/private ] && break
	sleep 0.5
	i=$((i + 1))
done
# ns CMD...: runs CMD in systemd's namespaces (its root, its PIDs).
ns() { nsenter -t "$SD" -m -p -r -w -- "$@"; }
i=0
while [ $i -lt 180 ]; do
	st=$(ns systemctl is-system-running 2>/dev/null)
	case "$st" in running | degraded) break ;; esac
	sleep 1
	i=$((i + 1))
done
# systemd-tmpfiles emptied /tmp at boot, our scratch dir with it.
mkdir -p "$TMPD"
case "$st" in
running | degraded) ok "systemd runs as PID 1 of a PID namespace ($st)" ;;
*)
	fail "systemd did not come up: '$st'"
	finish
	exit $?
	;;
esac
# wait_active: until bpfbox.service is active (or 60 s).
wait_active() {
	i=0
	while [ "$(ns systemctl is-active bpfbox)" != active ] && [ $i -lt 60 ]; do
		sleep 1
		i=$((i + 1))
	done
	[ "$(ns systemctl is-active bpfbox)" = active ]
}
journal() { ns journalctl -u bpfbox --no-pager -o cat; }
mainpid() { ns systemctl show -p MainPID --value bpfbox; }

# --- install ---------------------------------------------------------------------
expect_rc 0 "dpkg -i $(basename "$DEB")" ns dpkg -i "$DEB"
[ "$(ns systemctl is-enabled bpfbox)" = enabled ] && ok "bpfbox.service is enabled" ||
	fail "bpfbox.service is $(ns systemctl is-enabled bpfbox)"
wait_active && ok "bpfbox.service is active" ||
	fail "bpfbox.service is $(ns systemctl is-active bpfbox): $(journal | tail -5)"
journal | grep -q 'audit tracepoints: loaded; network programs: loaded' &&
	ok "the daemon loaded its programs" || fail "daemon start: $(journal | tail -3)"
journal | grep -E 'not loaded|error|cannot' >"$TMPD/bad" &&
	fail "the daemon complained: $(head -c 300 "$TMPD/bad")" || ok "no complaint in the journal"
[ "$(ns stat -c '%a %U %G' /run/bpfbox)" = "750 root bpfbox" ] &&
	[ "$(ns stat -c '%a %U %G' /run/bpfbox/bpfbox.sock)" = "660 root bpfbox" ] &&
	ok "/run/bpfbox 0750 and its socket 0660, group bpfbox" ||
	fail "socket: $(ns ls -la /run/bpfbox)"
[ "$(ns stat -c '%a' /var/log/bpfbox/audit.jsonl)" = 640 ] && ok "audit file mode 0640" ||
	fail "audit file: $(ns ls -la /var/log/bpfbox)"
P=$(mainpid)
ns grep -E '^(CapEff|NoNewPrivs|Seccomp):' "/proc/$P/status" >"$TMPD/st"
ns capsh --decode="$(awk '/CapEff/ { print $2 }' "$TMPD/st")" >"$TMPD/caps"
expect_grep 'NoNewPrivs:[[:space:]]+1' "$TMPD/st" "the daemon runs with no_new_privs"
expect_grep 'Seccomp:[[:space:]]+2' "$TMPD/st" "the daemon runs under a seccomp filter"
have=$(cut -d= -f2 "$TMPD/caps" | tr ',' '\n' | sort | paste -sd' ' -)
want=$(ns sed -n 's/^CapabilityBoundingSet=//p' /lib/systemd/system/bpfbox.service |
	tr 'A-Z ' 'a-z\n' | sort | paste -sd' ' -)
[ "$have" = "$want" ] && ok "the daemon's effective capabilities are the unit's: $have" ||
	fail "effective capabilities: $have; the unit's: $want"
ns bpfbox status >"$TMPD/status" 2>&1
ok "bpfbox status: $(grep '^level' "$TMPD/status")"

# --- clients -------------------------------------------------------------------
ns useradd -m -G bpfbox agent
ns useradd -m outsider
ns install -d -o agent /home/agent/ws
ns install -d -o outsider /home/outsider/ws
AGENT="setpriv --reuid agent --regid agent --init-groups"
OUTSIDER="setpriv --reuid outsider --regid outsider --init-groups"
expect_rc 7 "a member of bpfbox runs a session through the daemon" ns $AGENT bpfbox run -q \
	-w /home/agent/ws --daemon-socket /run/bpfbox/bpfbox.sock -- sh -c 'cat /etc/shadow; exit 7'
ns grep '"type":"session.end"' /var/log/bpfbox/audit.jsonl | grep -q '"exit_code":7' &&
	ok "its session.end is in the audit file" || fail "no session.end with exit_code 7"
expect_rc 125 "a non-member cannot use the daemon (--daemon-socket)" ns $OUTSIDER bpfbox run -q \
	-w /home/outsider/ws --daemon-socket /run/bpfbox/bpfbox.sock -- true
expect_rc 0 "a non-member falls back to embedded mode" ns $OUTSIDER bpfbox run -q \
	-w /home/outsider/ws -- true

# --- restart, reload, upgrade, crash ------------------------------------------------
ns $AGENT bpfbox run -q -w /home/agent/ws -- sh -c 'sleep 4; exit 4' >/dev/null 2>&1 &
RP=$!
sleep 1.5
expect_rc 0 "systemctl restart with a session running" ns systemctl restart bpfbox
ns bpfbox sessions | grep -q adopted && ok "the session is re-adopted" ||
	fail "after restart: $(ns bpfbox sessions 2>&1)"
wait "$RP"
rc=$?
[ $rc = 4 ] && ok "the session ran on across the restart (exit 4)" || fail "session exit $rc"
expect_rc 0 "logrotate -f" ns logrotate -f /etc/logrotate.d/bpfbox
sleep 1
journal | grep -q 'audit file reopened' && ok "logrotate made the daemon reopen its file" ||
	fail "no reopen after logrotate"
old=$(mainpid)
expect_rc 0 "upgrade: dpkg -i again" ns dpkg -i "$DEB"
wait_active
new=$(mainpid)
[ "$new" != "$old" ] && journal | tail -5 | grep -q 're-adopted; network programs: re-adopted' &&
	ok "the upgrade restarted the daemon over its pins ($old -> $new)" ||
	fail "upgrade: pid $old -> $new, $(journal | tail -2)"
[ "${new:-0}" -gt 1 ] && ns kill -9 "$new"
sleep 4
[ "$(ns systemctl is-active bpfbox)" = active ] && [ "$(mainpid)" != "$new" ] &&
	ok "after kill -9 systemd restarted it (Restart=on-failure)" ||
	fail "after kill -9: $(ns systemctl is-active bpfbox)"

# --- remove, purge ----------------------------------------------------------------
ns $AGENT bpfbox run -q -w /home/agent/ws -- sleep 60 >/dev/null 2>&1 &
RP=$!
sleep 1.5
expect_rc 0 "dpkg -r" ns dpkg -r bpfbox
wait "$RP"
rc=$?
[ $rc = 137 ] && ok "removal ended the running session (SIGKILL)" || fail "session exit $rc"
ns test -e /sys/fs/bpf/bpfbox && fail "pins left after removal" || ok "removal removed the pins"
[ "$(ns systemctl is-active bpfbox)" != active ] && ok "the unit is stopped" ||
	fail "the unit still runs"
expect_rc 0 "dpkg --purge" ns dpkg --purge bpfbox
ns test -e /etc/bpfbox && fail "/etc/bpfbox left after purge" || ok "purge removed /etc/bpfbox"
ns test -e /var/log/bpfbox/audit.jsonl && ok "the audit files are kept" ||
	fail "purge removed the audit files"
ns systemctl poweroff >/dev/null 2>&1
finish
