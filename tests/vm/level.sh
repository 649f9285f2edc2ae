# Runs inside the VM (tools/vmtest): status must report the level the boot's
# lsm= list allows, then the sandbox suites run at that level.
want=$1
cd /opt/bpfbox
export BPFBOX=bpfbox BPFBOX_BUILD=/opt/bpfbox/build
. tests/lib.sh

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

bpfbox status | tee "$TMPD/status.txt"
bpfbox status --json >"$TMPD/s.json"
level=$(json "$TMPD/s.json" "d['level']")
[ "$level" = "$want" ] && ok "vm: status reports $want" || fail "vm: status reports $level, want $want"

case "$want" in
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
	;;
esac
[ "$(json "$TMPD/s.json" "d['landlock']['abi']")" = "$( [ "$want" = Minimal ] && echo 0 || echo 2)" ] &&
	ok "vm: Landlock ABI as the 6.1 kernel has it" || fail "vm: Landlock ABI $(json "$TMPD/s.json" "d['landlock']['abi']")"
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
			chmod "$(stat -c %a /bin/sh)" /bin/sh 2>&1; exit 0' \
			>"$TMPD/out" 2>"$TMPD/err" || rc=$?
		problem=""
		grep -q '^init=bpfbox run' "$TMPD/out" || problem="pid 1 is not the session's init;"
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

if [ "$want" = Minimal ]; then
	# Without Landlock: seccomp still holds, and the gap is said out loud.
	mkdir -p "$TMPD/ws"
	expect_rc 0 "vm: run at Minimal still runs" bpfbox run -w "$TMPD/ws" -- true
	expect_grep 'not enforced on this host: filesystem isolation' "$TMPD/err" "vm: Minimal warns that fs isolation is off"
	expect_rc 1 "vm: network still denied by seccomp at Minimal" \
		bpfbox run -w "$TMPD/ws" -- python3 -c 'import socket,sys
try: socket.socket()
except PermissionError: sys.exit(1)'
	finish
	exit $?
fi

suites="tests/host/test_escape.sh tests/host/test_work.sh tests/host/test_selftest.sh"
# At Full every root `bpfbox run` would load the BPF agent for its session,
# about 8 s each under TCG (docs/benchmarks.md): the generic suites ask for
# Standard, and tests/vm/full.sh covers Full embedded, plain and through a
# daemon.
for suite in $suites; do
	[ -f "$suite" ] && BPFBOX_LEVEL=standard sh "$suite"
	[ $? -eq 0 ] || FAILS=$((FAILS + 1))
done
if [ "$want" = Full ]; then
	sh tests/vm/full.sh || FAILS=$((FAILS + 1))
fi
finish
