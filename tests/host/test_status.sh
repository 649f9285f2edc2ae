# bpfbox status on this host: real probes, consistent levels, nothing left behind.
. "$(dirname "$0")/../lib.sh"

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# What this host had before: a production daemon's pins, programs and
# cgroups may be there and must not count against status. Other tests run
# meanwhile: their daemons' pin dirs (bpfbox-NAME-PID, lib.sh, or with a
# suffix, bench/daemon_path.sh's bpfbox-dpath-PID-old) are theirs,
# and their probes' programs and scratch cgroups (bpfbox-probe-PID) come and
# go; what is new must be gone within a bound (left_after), not at once.
pins() { find /sys/fs/bpf -maxdepth 2 2>/dev/null | grep -Ev '/bpfbox-[a-z0-9-]+-[0-9]+(-[a-z0-9]+)*(/|$)'; }
probes() { bpftool prog show 2>/dev/null | grep ' name probe_' | cut -d: -f1; }
cgs() { ls -d "$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)"/bpfbox-probe-* 2>/dev/null; }
snapshot pins pins
snapshot probes probes
snapshot cgs cgs
expect_rc 0 "status runs" "$BPFBOX" status
expect_grep '^level: (Full|Standard|Minimal|None)' "$TMPD/out" "status prints a level line"

"$BPFBOX" status --json >"$TMPD/s.json" 2>"$TMPD/err"
if python3 -m json.tool "$TMPD/s.json" >/dev/null 2>&1; then ok "status --json is valid JSON"; else fail "status --json is not JSON: $(head -c 200 "$TMPD/s.json")"; fi
level=$(json "$TMPD/s.json" "d['level']")
[ "$(json "$TMPD/s.json" "d['schema_version']")" = 1 ] && ok "schema_version 1" || fail "schema_version"

# The Landlock ABI must match what the kernel says to an independent caller.
kabi=$(python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); r=l.syscall(444, None, 0, 1); print(r if r > 0 else 0)')
sabi=$(json "$TMPD/s.json" "d['landlock']['abi']")
[ "$kabi" = "$sabi" ] && ok "landlock ABI $sabi matches the kernel" || fail "landlock ABI: status $sabi, kernel $kabi"

# The egress resolver's sender check (sock_diag with udp_diag): this host
# loads the module on first use; the egress VM cell checks it missing.
[ "$(json "$TMPD/s.json" "d['features']['udp_diag']['available']")" = True ] &&
	ok "udp_diag: sock_diag names a UDP socket's cgroup here" ||
	fail "udp_diag: $(json "$TMPD/s.json" "d['features']['udp_diag']['detail']")"

# The level follows from the probed features (docs/status.md, Levels).
ll=$(json "$TMPD/s.json" "d['features']['landlock']['available']")
sc=$(json "$TMPD/s.json" "d['features']['seccomp']['available']")
lsm=$(json "$TMPD/s.json" "d['features']['bpf_lsm']['available']")
if [ "$lsm" = True ] && [ "$ll" = True ] && [ "$sc" = True ]; then want=Full
elif [ "$ll" = True ] && [ "$sc" = True ]; then want=Standard
elif [ "$sc" = True ]; then want=Minimal
else want=None; fi
[ "$level" = "$want" ] && ok "level $level follows from the probes" || fail "level $level, features say $want"

# Our CI hosts: bpf is listed but a BPF LSM program is refused with EPERM.
if grep -qw bpf /sys/kernel/security/lsm 2>/dev/null && [ "$lsm" = False ]; then
	err=$(json "$TMPD/s.json" "d['features']['bpf_lsm']['errno']")
	[ "$err" = EPERM ] && [ "$level" = Standard ] && ok "BPF LSM refused with EPERM: level Standard" ||
		fail "BPF LSM refused with $err, level $level"
	expect_grep 'BPF LSM program +unavailable +load failed: .*EPERM' "$TMPD/out" "text output gives the EPERM reason"
fi

# bpfbox run asks for Full by default; an explicit --level full refuses where
# it cannot hold (never silently less), --level standard runs.
mkdir -p "$TMPD/ws"
if [ "$level" != Full ]; then
	expect_rc 125 "run --level full refuses where the BPF LSM does not hold" \
		"$BPFBOX" run --no-daemon --level full -w "$TMPD/ws" -- true
	expect_grep 'level Full: this session reaches only (Standard|Minimal).*nothing ran' "$TMPD/err" \
		"the refusal names the level reached and why"
else
	skip "run --level full refusal: this host is Full (tests/vm/full.sh covers Full)"
fi
expect_rc 0 "run --level standard runs" "$BPFBOX" run --no-daemon --level standard -w "$TMPD/ws" -- true
expect_rc 2 "run --level with an unknown level is a usage error (2)" \
	"$BPFBOX" run --level bogus -w "$TMPD/ws" -- true
expect_grep "level 'bogus': use full or standard" "$TMPD/err" "the usage error names the choices"
BPFBOX_LEVEL=standard "$BPFBOX" run -v --no-daemon -w "$TMPD/ws" -- true >"$TMPD/out" 2>&1
expect_grep 'level requested Standard' "$TMPD/out" "BPFBOX_LEVEL=standard sets the level asked for"
expect_rc 2 "a bad BPFBOX_LEVEL is a usage error (2)" env BPFBOX_LEVEL=bogus "$BPFBOX" run -w "$TMPD/ws" -- true

# A seccomp probe that lied would let this through: check the kernel's view.
[ "$sc" = True ] && grep -q '^Seccomp_filters' /proc/self/status && ok "seccomp filters supported by the kernel" || fail "seccomp state"

# Probing leaves nothing behind: no scratch cgroup, program or pin that
# was not there before these runs (a daemon's pins stay by design).
# left_after NAME: what is new since snapshot NAME, once it stops changing
# for the worse: up to 10 s for other tests' transient probes to end.
none_new() { [ -z "$(new_since "$1" "$1")" ]; }
left_after() {
	poll_until 10 none_new "$1"
	new_since "$1" "$1"
}
left=$(left_after cgs)
[ -z "$left" ] && ok "no scratch cgroup left" || fail "scratch cgroup left: $left"
if command -v bpftool >/dev/null; then
	left=$(left_after probes)
	[ -z "$left" ] && ok "no probe program left loaded" || fail "probe programs still loaded: $left"
fi
left=$(left_after pins)
[ -z "$left" ] && ok "no pins left" || fail "status left pins: $left"

# --require compares levels; an unknown level is a usage error.
expect_rc 0 "--require None passes" "$BPFBOX" status --require none
if [ "$level" != Full ]; then
	expect_rc 1 "--require Full fails below Full" "$BPFBOX" status --require Full
	expect_grep 'below the required Full' "$TMPD/err" "--require names the gap"
fi
expect_rc 2 "--require with an unknown level" "$BPFBOX" status --require Ultra
expect_grep 'valid levels: None, Minimal, Standard, Full' "$TMPD/err" "unknown level error names the valid ones"
expect_rc 2 "unknown status option" "$BPFBOX" status --frobnicate
expect_rc 2 "unknown subcommand" "$BPFBOX" frobnicate
expect_grep "unknown command 'frobnicate'" "$TMPD/err" "unknown subcommand is named"

# Unprivileged: root-only probes say so instead of failing.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$BPFBOX" status --json >"$TMPD/u.json" 2>"$TMPD/err"
	st=$(json "$TMPD/u.json" "d['features']['bpf_lsm']['state']")
	[ "$st" = "needs root" ] && ok "unprivileged: BPF LSM marked needs root" || fail "unprivileged bpf_lsm state: $st"
	[ "$(json "$TMPD/u.json" "d['features']['landlock']['available']")" = "$ll" ] &&
		ok "unprivileged: Landlock probed the same" || fail "unprivileged Landlock differs"
else
	skip "unprivileged status: not root here; the VM runs this as root only"
fi

# Pins a daemon left behind keep its programs attached: status names them
# and says whether a daemon holds them (its lock, read from /proc/locks).
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ "$(id -u)" = 0 ] && [ -n "$CG2" ]; then
	daemon_scratch statuspins
	if start_daemon "$TMPD/audit.jsonl"; then
		"$BPFBOX" status >"$TMPD/st.out" 2>&1
		expect_grep "^pins: $PIN: held by a running daemon \([1-9][0-9]* links, 0 sessions\)" \
			"$TMPD/st.out" "status: a running daemon's pins are held by it"
		kill -9 "$DPID"
		wait "$DPID" 2>/dev/null
		DPID=
		"$BPFBOX" status >"$TMPD/st.out" 2>&1
		expect_grep "^pins: $PIN: no daemon holds them: [1-9][0-9]* links stay attached .*'bpfbox daemon --cleanup --pin-dir $PIN'" \
			"$TMPD/st.out" "status: a killed daemon's pins are named, with the command that removes them"
		"$BPFBOX" status --json >"$TMPD/st.json"
		[ "$(json "$TMPD/st.json" "[p['daemon'] for p in d['pins'] if p['dir'] == '$PIN']")" = "[False]" ] &&
			ok "status --json: pins[].daemon is false for them" ||
			fail "status --json pins: $(json "$TMPD/st.json" "d['pins']")"
	else
		fail "the daemon did not start: $(tail -n 3 "$DERR")"
	fi
else
	skip "status pins: a daemon needs root and cgroup2; the host suite runs as root in CI"
fi
finish
