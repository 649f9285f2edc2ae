#!/bin/sh
# The workspace and a --rw grant renamed under bpfbox between the policy's
# check and their use (docs/SECURITY.md, "One resolution"). The owner of
# the workspace's parent swaps it with a symlink to a directory the policy
# refuses (tests/helpers/swapper.c, renameat2(RENAME_EXCHANGE) in a loop)
# while the test runs RACE_RUNS sessions (500) that each write a line
# through the grant. The stand-in for /etc is a scratch directory of this
# test below /dev (refused as "a device node" like /etc is as a system
# directory), with a marker file. Every run must either have written into
# the real directory (exit 0) or have refused with exit 125 and one line
# naming the path given (or, when the policy's own check saw the symlink,
# the refused target); the stand-in must be as it was. As root, then as an
# unprivileged user (uid 65534, setpriv) who owns the parent. And a symlink
# inside the workspace, which Landlock's carve-out walk must not follow.
#
# The old code (each step resolving the path again) wrote into the
# stand-in in some runs: the count of such runs is printed as "won".

. "$(dirname "$0")/../lib.sh"
BIN=$BPFBOX_BUILD/tests/bin
RUNS=${RACE_RUNS:-500}
SWPID=""

cleanup() {
	[ -n "$SWPID" ] && kill "$SWPID" 2>/dev/null && wait "$SWPID" 2>/dev/null
	rm -rf "$TMPD" "$STANDIN"
}
trap cleanup EXIT
trap 'cleanup; exit 1' INT TERM

if [ "$(id -u)" != 0 ]; then
	skip "race: needs root (a stand-in below /dev; the unprivileged pass runs from root)"
	exit 0
fi
if [ ! -x "$BIN/swapper" ]; then
	skip "race: no $BIN/swapper (make all builds it)"
	exit 0
fi
TMPD=$(mktemp -d /tmp/bpfbox-race.XXXXXX)
STANDIN=$(mktemp -d /dev/.bpfbox-race.XXXXXX)
chmod 755 "$TMPD"
# Writable by anyone: only bpfbox stands between a session and it.
chmod 1777 "$STANDIN"
echo marker >"$STANDIN/marker"

standin_state() { ls -la --time-style=full-iso "$STANDIN" | grep -v ' \.\.$'; }
BEFORE=$(standin_state)

# race NAME AS OWNER KIND [OPTION]: RUNS sessions while the swapper flips
# P/dir. KIND ws: -w P/dir; rw: -w P/other --rw P/dir. AS prefixes bpfbox
# and the swapper (empty: root); OWNER owns P; OPTION one more for `run`.
race() {
	name=$1 as=$2 owner=$3 kind=$4 opt=${5:---no-daemon}
	P=$TMPD/$name
	mkdir -p "$P/dir" "$P/other"
	ln -s "$STANDIN" "$P/lnk"
	chown -R "$owner" "$P"
	if [ "$kind" = ws ]; then
		set -- -w "$P/dir" -- sh -c 'echo x >>pwned'
	else
		set -- -w "$P/other" --rw "$P/dir" -- sh -c "echo x >>'$P/dir/pwned'"
	fi
	# A first run before the race: the case works at all.
	if ! $as "$BPFBOX" run --no-daemon "$opt" -q "$@" </dev/null 2>"$TMPD/err"; then
		fail "race $name: a run without the race failed: $(grep -v 'warning:' "$TMPD/err")"
		return
	fi
	rm -f "$P/dir/pwned" "$P/ready"
	$as "$BIN/swapper" "$P/dir" "$P/lnk" "$P/ready" >"$TMPD/swaps" &
	SWPID=$!
	if ! poll_until 10 test -e "$P/ready"; then
		fail "race $name: the swapper did not start"
		return
	fi
	okn=0 refused=0 won=0 bad=""
	i=0
	while [ $i -lt "$RUNS" ]; do
		i=$((i + 1))
		rc=0
		$as "$BPFBOX" run --no-daemon "$opt" -q "$@" </dev/null >/dev/null 2>"$TMPD/err" || rc=$?
		if [ -e "$STANDIN/pwned" ]; then
			won=$((won + 1))
			rm -f "$STANDIN/pwned"
		fi
		grep -v '^bpfbox: warning: ' "$TMPD/err" >"$TMPD/err1"
		case $rc in
		0) okn=$((okn + 1)) ;;
		125)
			refused=$((refused + 1))
			if [ "$(wc -l <"$TMPD/err1")" != 1 ] ||
				! grep -qF -e "'$P/dir'" -e "'$STANDIN'" "$TMPD/err1"; then
				bad="run $i: exit 125 without one line naming '$P/dir': $(cat "$TMPD/err1")"
			fi
			;;
		*) bad="run $i: exit $rc: $(cat "$TMPD/err1")" ;;
		esac
	done
	kill "$SWPID"
	wait "$SWPID"
	SWPID=""
	# The swapper put the names back: P/dir is the real directory again.
	lines=0
	[ -e "$P/dir/pwned" ] && lines=$(wc -l <"$P/dir/pwned")
	echo "# race $name: $RUNS runs, $okn ran, $refused refused, $won won; $(cat "$TMPD/swaps") swaps"
	if [ "$won" != 0 ] || [ "$(standin_state)" != "$BEFORE" ]; then
		fail "race $name: a session wrote into the stand-in in $won of $RUNS runs"
	elif [ -n "$bad" ]; then
		fail "race $name: $bad"
	elif [ "$lines" != "$okn" ]; then
		fail "race $name: $okn runs exited 0 but the real directory has $lines lines"
	else
		ok "race $name: $okn of $RUNS runs wrote into the real directory, $refused refused with one line, none into the stand-in"
	fi
}

# inner_link NAME AS OWNER: a symlink inside the workspace to the stand-in,
# beside a credential file (.env): Landlock's carve-out of .env grants the
# workspace's other entries one by one, and that walk must not follow the
# link (the old one did: the stand-in got the workspace's rights). Without
# namespaces, where Landlock is the wall (with them the stand-in below /dev
# is not in the session's view at all).
inner_link() {
	name=$1 as=$2 owner=$3
	P=$TMPD/$name
	mkdir -p "$P/ws/sub"
	echo secret >"$P/ws/.env"
	ln -s "$STANDIN" "$P/ws/link"
	chown -R "$owner" "$P"
	rc=0
	$as "$BPFBOX" run --no-daemon -q --no-namespaces -w "$P/ws" -- \
		sh -c 'echo x >link/pwned; echo x >sub/mine' </dev/null >/dev/null 2>"$TMPD/err" || rc=$?
	if [ -e "$STANDIN/pwned" ] || [ "$(standin_state)" != "$BEFORE" ]; then
		rm -f "$STANDIN/pwned"
		fail "$name: the session wrote through a symlink in its workspace"
	elif [ ! -e "$P/ws/sub/mine" ]; then
		fail "$name: the session did not write its workspace (exit $rc): $(grep -v 'warning:' "$TMPD/err")"
	else
		ok "$name: a symlink in the workspace gets none of its rights (exit $rc)"
	fi
}

race workspace "" root ws
race grant-rw "" root rw
# Without namespaces: Landlock's rule and the chdir are the whole story.
race workspace-no-namespaces "" root ws --no-namespaces
inner_link inner-link "" root

NOBODY=65534
if ! command -v setpriv >/dev/null 2>&1; then
	skip "race unprivileged: no setpriv on this system"
else
	AS="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"
	race workspace-unprivileged "$AS" "$NOBODY" ws
	race grant-rw-unprivileged "$AS" "$NOBODY" rw
	inner_link inner-link-unprivileged "$AS" "$NOBODY"
fi
finish
