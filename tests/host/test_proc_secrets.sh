#!/bin/sh
# Nothing of the caller's environment, argv or memory is readable from
# inside a session (issue 30, item 1): the session's pid 1 is a copy of
# bpfbox, so it is made not dumpable and its argv and environment are wiped
# (docs/SECURITY.md, "The session's init"); without a PID namespace the
# session sees bpfbox run itself, which is not dumpable either (its command
# line is then as visible as every host process's, docs/SECURITY.md).
#
# The attack, tests/helpers/procscan.c, reads every process's environ,
# cmdline, maps and mem under the session's /proc for two markers: one in
# bpfbox's environment, one in its argv (a label, kept in its memory). A
# planted control (a child of the scanner with the marker in its own
# environment) must be found first: a scan that finds nothing proves
# nothing otherwise.
#
# Runs as root: embedded with and without namespaces, unprivileged (uid
# 65534) with and without, and through a daemon; in each VM cell too
# (tests/vm/level.sh).
. "$(dirname "$0")/../lib.sh"

SCAN=$BPFBOX_BUILD/tests/bin/procscan
if [ ! -x "$SCAN" ]; then
	fail "preflight: $SCAN missing (run make all)"
	finish
	exit 1
fi
chmod 755 "$TMPD" # the unprivileged runs go through it
WS=$TMPD/ws
mkdir -p "$WS"
cp "$SCAN" "$WS/procscan"
chmod 777 "$WS"

ABI=$(status_json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["landlock"]["abi"] or 0)' 2>/dev/null)
echo "# Landlock ABI ${ABI:-?}"

# Two markers made here at random; the scanner gets them reversed.
M1=bpfboxleak$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
M2=bpfboxmem$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
R1=$(printf '%s' "$M1" | rev)
R2=$(printf '%s' "$M2" | rev)

printf '{ "sandbox": { "extra": { "deny": ["**/%s.*"] } } }\n' "$M2" >"$TMPD/config.json"
chmod 644 "$TMPD/config.json"

# scan NAME [PREFIX...] -- [RUN OPTIONS]: the attack in a session started
# with M1 in the caller's environment and M2 in bpfbox's memory.
scan() {
	name=$1
	shift
	pre=""
	while [ "$1" != -- ]; do
		pre="$pre $1"
		shift
	done
	shift
	# Without Landlock and without a PID namespace every same-uid process
	# (this test's shell, which holds the markers, the agent runtime) is
	# readable: level Minimal does not promise it (docs/SECURITY.md).
	case "$ABI $*" in
	"0 "*--no-namespaces*)
		skip "$name: not promised at level Minimal without namespaces (no Landlock: every same-uid process's /proc/PID/mem is readable)"
		return
		;;
	esac
	rc=0
	# shellcheck disable=SC2086
	env BPFBOX_TEST_SECRET="$M1" $pre "$BPFBOX" run -q -w "$WS" --timeout 60 \
		--config "$TMPD/config.json" "$@" -- "$WS/procscan" "$R1" "$R2" \
		</dev/null >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	problem=""
	grep -q '^control: .* environ ' "$TMPD/out" || problem="the control marker was not found in environ"
	grep -q '^control: .* mem ' "$TMPD/out" || problem="$problem; the control marker was not found in mem"
	grep -q '^leak: ' "$TMPD/out" && problem="$problem; $(grep '^leak: ' "$TMPD/out" | tr '\n' ' ')"
	grep -q '^scanned [1-9]' "$TMPD/out" || problem="$problem; no process but the scanner's own was scanned"
	problem=${problem#; }
	verdict "$name: no marker of the caller in any /proc/PID/{environ,cmdline,maps,mem}" 0 "$problem"
}

if [ "$(id -u)" != 0 ]; then
	scan "as uid $(id -u), embedded" -- --no-daemon
	scan "as uid $(id -u), embedded, --no-namespaces" -- --no-daemon --no-namespaces
	skip "root and daemon runs: need root; CI runs this suite as root"
	finish
	exit $?
fi

scan "root, embedded" -- --no-daemon
scan "root, embedded, --no-namespaces" -- --no-daemon --no-namespaces
NOBODY="setpriv --reuid 65534 --regid 65534 --clear-groups"
if command -v setpriv >/dev/null 2>&1; then
	scan "uid 65534, embedded" $NOBODY -- --no-daemon
	scan "uid 65534, embedded, --no-namespaces" $NOBODY -- --no-daemon --no-namespaces
else
	skip "uid 65534 runs: no setpriv on this system (the VM's busybox has none; the host runs them)"
fi

# Through a daemon: the session's child is bpfbox run's, the daemon holds
# its programs.
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -z "$CG2" ]; then
	skip "through a daemon: no cgroup v2 here (the VM cells have one)"
else
	WS_KEEP=$WS
	daemon_scratch procsecrets
	WS=$WS_KEEP
	if start_daemon "$TMPD/daemon.jsonl"; then
		scan "root, through a daemon" -- --daemon-socket "$SOCK"
		grep -q '"session.start"' "$TMPD/daemon.jsonl" ||
			fail "through a daemon: the daemon's stream has no session.start (the run went embedded)"
	else
		fail "through a daemon: the daemon did not get ready: $(oneline "$DERR")"
	fi
fi
finish
