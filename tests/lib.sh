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

# finish: the status of the test file.
finish() {
	[ "$FAILS" -eq 0 ]
}
