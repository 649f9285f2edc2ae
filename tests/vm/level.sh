#!/bin/sh
# Runs inside one VM of the matrix (tools/vmtest --hostroot, see
# tests/vm/matrix): one boot is one kernel x level. `bpfbox status` must
# report the level the boot's lsm= list allows and the Landlock ABI the
# kernel has, then the suites run against what that level and ABI promise
# (a case they do not promise prints a skip saying so, never nothing).
#   tests/vm/level.sh LEVEL ABI      LEVEL Full|Standard|Minimal,
#                                    ABI the kernel's Landlock ABI, "N+" for
#                                    at least N (Minimal expects 0)
LEVEL_WANT=$1  # not "want": lib.sh's expect_rc sets that
want_abi=${2:-}
cd /opt/bpfbox || exit 1
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
. tests/lib.sh

# The suites of one boot, in order: every level runs the escape, normal-work,
# audit and self-test suites; a level adds its own. Add suites here.
SUITES="tests/host/test_escape.sh tests/host/test_proc_secrets.sh tests/host/test_work.sh tests/host/test_audit.sh tests/host/test_selftest.sh"
case "$LEVEL_WANT" in
Full)
	# The escape, work and self-test suites would run here at Standard
	# (each Full run loads the BPF agent, about 8 s under TCG): work and
	# self-test run in this kernel's Standard cell, escape in 6.1's and on
	# the host (the Standard case below says why). The Full cell keeps
	# what only Full has.
	# The caller's secrets under /proc: the init of a Full session is the same.
	SUITES="tests/host/test_audit.sh tests/vm/full.sh tests/vm/full_unpriv.sh tests/host/test_proc_secrets.sh"
	# The command rules' exec program on the oldest verifier (bpf/cmd.bpf.c),
	# and real projects at Full, embedded (issue 31: a venv failed here on
	# pip's certifi/cacert.pem): once, on the oldest kernel.
	case $(uname -r) in 6.1.*) SUITES="$SUITES tests/host/test_cmdrules.sh tests/host/test_projects.sh" ;; esac
	# Adopted cgroups at Full (the BPF LSM's lists in them), and Podman with
	# crun, which needs cgroup v2 only: once, on 6.12. Its audit suite does
	# not run here: the oldest (6.1) and newest (7.x) Full cells run it on
	# the same programs, and full.sh checks this kernel's BPF LSM and exec
	# events in the stream (177 of this boot's 487 s on 2026-12-01).
	case $(uname -r) in 6.12.*) SUITES="tests/vm/full.sh tests/vm/full_unpriv.sh tests/host/test_proc_secrets.sh tests/host/test_adopt.sh tests/host/test_podman.sh" ;; esac
	;;
# Last: it turns unprivileged user namespaces off for its second half.
Standard)
	SUITES="$SUITES tests/vm/unpriv.sh"
	# 6.12 and 7.x: the escape cases run at Landlock ABI 2 in the 6.1
	# Standard cell and at ABI 7 on the 6.18 CI host, as root and
	# unprivileged (6.12's ABI 6 differs from 7 only by its logging
	# flags; 7.x uses 7); the pure v2 tree and Debian's userns sysctl are
	# the 6.1 cell's too. The audit stream runs in the 6.1 and 7.x Full
	# cells, and without BPF LSM (connect denials by cgroup-bpf) in 6.1's
	# Standard cell and on the host. What stays: the level's status and
	# sessions, the caller's secrets under /proc, normal work and the
	# self-test on this kernel without BPF LSM. Escape, unpriv.sh and
	# audit were 371 of the 6.12 boot's 450 s and 461 of the 7.x boot's
	# 560 (docs/vmtest.md, "Time").
	case $(uname -r) in 6.12.* | 7.*) SUITES="tests/host/test_proc_secrets.sh tests/host/test_work.sh tests/host/test_selftest.sh" ;; esac
	;;
# Minimal boots on 6.1 only (tests/vm/matrix): the audit stream without
# Landlock is the level's, not the kernel's.
Minimal) ;;
esac

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

echo "# vm: kernel $(uname -r) (${BPFBOX_VM_KERNEL:-?}), level $LEVEL_WANT, lsm $(cat /sys/kernel/security/lsm)"
bpfbox status | tee "$TMPD/status.txt"
bpfbox status --json >"$TMPD/s.json"
# The suites of this boot read it as root (tests/lib.sh status_json): each
# status probes by loading BPF programs, seconds under TCG.
export BPFBOX_STATUS_JSON="$TMPD/s.json"
level=$(json "$TMPD/s.json" "d['level']")
[ "$level" = "$LEVEL_WANT" ] && ok "vm: status reports $LEVEL_WANT" || fail "vm: status reports $level, want $LEVEL_WANT"

case "$LEVEL_WANT" in
Full)
	[ "$(json "$TMPD/s.json" "d['features']['bpf_lsm']['available']")" = True ] &&
		ok "vm: a BPF LSM program loaded and attached" || fail "vm: BPF LSM not available"
	[ "$(json "$TMPD/s.json" "d['features']['lsm_cgroup']['available']")" = True ] &&
		ok "vm: lsm_cgroup attached to a cgroup" || fail "vm: lsm_cgroup not available"
	;;
Standard)
	expect_grep 'BPF LSM in LSM list +unavailable +not in the active LSM list' "$TMPD/status.txt" \
		"vm: BPF LSM reported as not in the active LSM list"
	;;
Minimal)
	expect_grep 'Landlock +unavailable' "$TMPD/status.txt" "vm: Landlock reported unavailable"
	want_abi=0
	;;
esac
# The kernel's ABI (the probe's detail, "ABI N...") and the one bpfbox
# uses (landlock.abi: at most the newest it knows).
abi=$(json "$TMPD/s.json" "d['landlock']['abi']")
kabi=$(json "$TMPD/s.json" "(__import__('re').match(r'ABI (\\d+)', d['features']['landlock']['detail'] or '') or [0, 0])[1]")
case "$want_abi" in
*+) [ "$kabi" -ge "${want_abi%+}" ] 2>/dev/null ;;
*) [ "$kabi" = "$want_abi" ] ;;
esac && ok "vm: Landlock ABI $kabi, as kernel $(uname -r) has it at $LEVEL_WANT" ||
	fail "vm: Landlock ABI '$kabi', want $want_abi"
if [ "$abi" != "$kabi" ]; then
	skip "vm: Landlock ABI $((abi + 1))..$kabi rights of this kernel: bpfbox uses ABI $abi, the newest it knows; their cases run as ABI $abi"
fi
ls -d /sys/fs/cgroup/bpfbox-probe-* >/dev/null 2>&1 && fail "vm: scratch cgroup left" || ok "vm: no scratch cgroup left"

# --- namespaces (issue 14): at every level, they do not need Landlock ------
# The session's own PID namespace, read-only host and private /tmp, as root
# and as an unprivileged user (a user namespace: the guest runs the suites
# after pivot_root, so CLONE_NEWUSER is allowed; docs/vmtest.md). The chmod
# sets /bin/sh's own mode: a no-op should the read-only view be missing.
if [ "$(json "$TMPD/s.json" "d['features']['session_namespaces']['available']")" = True ]; then
	ok "vm: status reports the session namespaces available"
	mkdir -p "$TMPD/nsws"
	chmod 777 "$TMPD" "$TMPD/nsws"
	for as in "" "setpriv --reuid=65534 --regid=65534 --clear-groups"; do
		who=${as:+unprivileged: }
		# A chrooted guest refuses user namespaces: then the run says so.
		$as bpfbox status --json >"$TMPD/us.json" 2>/dev/null
		if [ "$(json "$TMPD/us.json" "d['features']['session_namespaces']['available']")" != True ]; then
			skip "vm: ${who}no namespaces for this user here: $(json "$TMPD/us.json" "d['features']['session_namespaces']['detail']")"
			continue
		fi
		rc=0
		$as bpfbox run -q -w "$TMPD/nsws" -- sh -c 'echo "init=$(tr "\0" " " </proc/1/cmdline | cut -c1-10)";
			echo "n=$(ps -e -o pid= | wc -l)"; echo "tmp=$(stat -f -c %T /tmp)";
			chmod "$(stat -L -c %a /bin/sh)" /bin/sh 2>&1; exit 0' \
			>"$TMPD/out" 2>"$TMPD/err" || rc=$?
		problem=""
		grep -q '^init=bpfbox-ini' "$TMPD/out" || problem="pid 1 is not the session's init;"
		grep -Eq '^n=[1-6]$' "$TMPD/out" || problem="$problem more than the session's processes;"
		grep -q '^tmp=tmpfs$' "$TMPD/out" || problem="$problem /tmp is not a tmpfs;"
		grep -q 'Read-only file system' "$TMPD/out" || problem="$problem chmod outside did not fail with EROFS;"
		if [ "$rc" = 0 ] && [ -z "$problem" ]; then
			ok "vm: ${who}own PID namespace, private /tmp, read-only host"
		else
			fail "vm: ${who}namespaces: exit $rc; $problem $(tr '\n' '|' <"$TMPD/out" | head -c 300) $(head -c 200 "$TMPD/err")"
		fi
	done
else
	skip "vm: session namespaces: $(json "$TMPD/s.json" "d['features']['session_namespaces']['detail']"); the host suites cover them"
fi

if [ "$LEVEL_WANT" = Minimal ]; then
	# Without Landlock: seccomp still holds, and the gap is said out loud.
	mkdir -p "$TMPD/ws"
	expect_rc 0 "vm: run at Minimal still runs" bpfbox run -w "$TMPD/ws" -- true
	expect_grep 'not enforced on this host: filesystem isolation' "$TMPD/err" "vm: Minimal warns that fs isolation is off"
	# A netlink socket: inet ones are allowed in the session's own network
	# namespace (docs/network.md); every other family stays seccomp's.
	expect_rc 1 "vm: network still denied by seccomp at Minimal" \
		bpfbox run -w "$TMPD/ws" -- python3 -c 'import socket,sys
try: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)
except PermissionError: sys.exit(1)'
fi

case "$LEVEL_WANT:$SUITES" in
Full:*) skip "vm: the escape, work and self-test suites at Full: this kernel's Standard cell runs work and self-test, 6.1's Standard cell and the host run escape (the same sandbox; here they would ask for Standard, since each Full run loads the BPF agent, about 8 s under TCG)" ;;
Minimal:*test_audit*) ;;
Minimal:*) skip "vm: the audit suite at Minimal: run in the 6.1 Minimal cell; this kernel's audit runs in its Full and Standard cells" ;;
esac
for suite in $SUITES; do
	echo "# vm: suite $suite (kernel $(uname -r), level $LEVEL_WANT, at $(cut -d" " -f1 /proc/uptime) s)"
	lvl=
	# The command rules' quick cases need only the exec program: Standard.
	case "$LEVEL_WANT:$suite" in
	Full:tests/host/test_cmdrules.sh) lvl=standard ;;
	esac
	if [ -f "$suite" ]; then
		if [ "$suite" = tests/host/test_cmdrules.sh ]; then
			BPFBOX_LEVEL=$lvl BPFBOX_CMDRULES_QUICK=1 sh "$suite" || FAILS=$((FAILS + 1))
		elif [ "$suite" = tests/host/test_adopt.sh ]; then
			# What only Full adds (the BPF LSM in an adopted cgroup); the rest is the host's.
			BPFBOX_ADOPT_QUICK=1 sh "$suite" || FAILS=$((FAILS + 1))
		elif [ "$suite" = tests/host/test_projects.sh ]; then
			BPFBOX_PROJECTS="python node c git nested" BPFBOX_PROJECTS_EMBEDDED_ONLY=1 BPFBOX_PROJECTS_BARE_ON_FAIL=1 \
				sh "$suite" || FAILS=$((FAILS + 1))
		elif [ -n "$lvl" ]; then
			BPFBOX_LEVEL=$lvl sh "$suite" || FAILS=$((FAILS + 1))
		elif [ "$LEVEL_WANT" != Full ] && [ "$suite" = tests/host/test_audit.sh ]; then
			# the forced attach modes run once per kernel, in its Full cell
			BPFBOX_AUDIT_MODES_IN_FULL=1 sh "$suite" || FAILS=$((FAILS + 1))
		else
			sh "$suite" || FAILS=$((FAILS + 1))
		fi
	else
		fail "vm: suite $suite is missing"
	fi
done
echo "# vm: suites done at $(cut -d" " -f1 /proc/uptime) s"
finish
