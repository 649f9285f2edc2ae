# Shared helpers for the shell tests (POSIX sh: also runs under busybox in
# the VM). Each check prints one line that tests/run.sh counts:
#   "ok - NAME", "FAIL - NAME: why", "skip - NAME: why".
# A skip must say why, and the case must be covered elsewhere (the VM).

BPFBOX=${BPFBOX:-bpfbox}
FAILS=0

ok() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; FAILS=$((FAILS + 1)); }
skip() { echo "skip - $*"; }

# expect_rc WANT NAME CMD...: runs CMD, checks its exit status.
expect_rc() {
	want=$1 name=$2
	shift 2
	"$@" >"$TMPD/out" 2>"$TMPD/err"
	got=$?
	if [ "$got" = "$want" ]; then
		ok "$name"
	else
		fail "$name: exit $got, want $want; stderr: $(head -c 300 "$TMPD/err")"
	fi
}

# expect_grep PATTERN FILE NAME: FILE must contain PATTERN (extended regex).
expect_grep() {
	if grep -Eq -- "$1" "$2"; then
		ok "$3"
	else
		fail "$3: '$1' not in $2: $(head -c 300 "$2")"
	fi
}

# A scratch dir removed at exit; tests put their workspaces under it.
TMPD=$(mktemp -d /tmp/bpfbox-test.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT INT TERM

# A production daemon may run on this host (its socket at the default path,
# its pins and cgroups in place): a test talks to the daemons it starts
# itself, never to that one. A test that starts one passes its socket
# explicitly; everything else finds no daemon here and runs embedded.
export BPFBOX_SOCKET="${BPFBOX_TEST_SOCKET:-$TMPD/no-daemon.sock}"

# snapshot NAME CMD...: CMD's sorted output kept as $TMPD/snap.NAME, so that a
# test checks what it added itself, not the host's state (new_since).
snapshot() {
	n=$1
	shift
	"$@" 2>/dev/null | sort >"$TMPD/snap.$n"
}

# new_since NAME CMD...: the lines of CMD's output that were not in the
# snapshot NAME (empty when CMD added nothing).
new_since() {
	n=$1
	shift
	"$@" 2>/dev/null | sort | comm -13 "$TMPD/snap.$n" -
}

# need_root_cgroup2 WHAT WHY: the preamble of the tests that run a daemon or
# make session cgroups. Skips the whole file, saying why, when not root (WHY
# says what needs root) or without a cgroup2 mount (the VM matrix has both);
# else sets PY (python3) and CG2 (the cgroup2 mount point).
need_root_cgroup2() {
	if [ "$(id -u)" != 0 ]; then
		skip "$1: $2 needs root; CI runs as root"
		finish
		exit $?
	fi
	CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -z "$CG2" ]; then
		skip "$1: no cgroup2 mount on this host; the VM matrix covers it"
		finish
		exit $?
	fi
	PY=/usr/bin/python3
	[ -x "$PY" ] || PY=$(command -v python3)
}

# start_daemon AUDIT [OPTIONS...]: a private daemon in the background on
# $SOCK, $PIN and $PARENT, its stderr appended to $DERR, its pid in DPID;
# waits up to 5 s for a new "ready" line.
start_daemon() {
	audit=$1
	shift
	before=$(grep -c 'ready' "$DERR")
	"$BPFBOX" daemon --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" \
		--audit "$audit" "$@" 2>>"$DERR" &
	DPID=$!
	i=0
	while [ "$(grep -c 'ready' "$DERR")" = "$before" ] && [ $i -lt 100 ]; do
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	[ "$(grep -c 'ready' "$DERR")" != "$before" ]
}

# poll_until SECONDS CMD...: runs CMD every 50 ms until it succeeds or
# SECONDS pass; the status is CMD's last. The one way a test waits for an
# event (a file, a line, a state) instead of sleeping a fixed time.
poll_until() {
	_pu_n=$(($1 * 20))
	shift
	while ! "$@"; do
		[ "$_pu_n" -le 0 ] && return 1
		_pu_n=$((_pu_n - 1))
		sleep 0.05
	done
}

# finish: the status of the test file.
finish() {
	[ "$FAILS" -eq 0 ]
}
