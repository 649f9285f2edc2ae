#!/bin/sh
# bpfbox prepare (userspace/sandbox/changes_prepare.c, docs/runtime.md
# "Change sets"): the next review session's set and overlay of a workspace
# made ahead of any session, so that a runtime's first tool call also takes
# them; and --release, every keeper of a workspace told to go and waited
# for, so that its file system can be unmounted. Each check reads what the
# kernel shows: the keeper's record and process, the set's inode (the kept
# directory becomes the session's set), its fds, an umount's result.
# Root, and uid 65534 in a user namespace.

. "$(dirname "$0")/../lib.sh"

keeper_suite

alive() { kill -0 "$1" 2>/dev/null; }
# keepers_of DIR: the pids of the keepers holding DIR (the sets' directory or a workspace).
keepers_of() {
	for _k in /proc/[0-9]*/fd/*; do
		[ "$(readlink "$_k" 2>/dev/null)" = "$1" ] || continue
		_kp=${_k#/proc/}
		_kp=${_kp%%/*}
		tr '\0' ' ' <"/proc/$_kp/cmdline" 2>/dev/null | grep -q '^bpfbox __changes-keep ' && echo "$_kp"
	done | sort -u | tr '\n' ' '
}

# --- made ahead, taken by the first session -----------------------------------------

"$BPFBOX" prepare "$WS" >"$TMPD/out" 2>"$TMPD/err"
rc=$?
# No poll: the record is there when prepare returns.
PID=$(warm_pid "$SETS")
NAME=$(warm_name "$SETS")
INO=$(stat -c %i "$SETS/$NAME" 2>/dev/null)
CMD=$(tr '\0' ' ' <"/proc/$PID/cmdline" 2>/dev/null)
verdict "bpfbox prepare: the keeper's record, process and set are there when it returns, nothing printed" 0 \
	"$(warm_kept "$SETS" || echo "no record: $(ls -A "$SETS" 2>&1 | tr '\n' ' ')")$(case "$CMD" in "bpfbox __changes-keep r "*) ;; *) echo "pid $PID runs '$CMD'" ;; esac)$([ -n "$INO" ] || echo "no directory '$NAME'")$([ "$(stat -c %a "$SETS/$NAME/upper" 2>/dev/null)" = 751 ] || echo "its upper is not as the workspace's root (751)")$([ ! -s "$TMPD/out" ] && [ ! -s "$TMPD/err" ] || echo "it printed: $(oneline "$TMPD/out") $(oneline "$TMPD/err")")"

review -- sh -c 'echo new >n.txt; cat a.txt'
verdict "the first review session takes it: its set is the prepared directory, its write in its upper" 0 \
	"$([ "$(stat -c %i "$SETS/$ID" 2>/dev/null)" = "$INO" ] || echo "set $ID is inode $(stat -c %i "$SETS/$ID" 2>&1), the prepared one was $INO")$([ "$(cat "$SETS/$ID/upper/n.txt" 2>/dev/null)" = new ] || echo "no n.txt in its upper")$([ "$(cat "$TMPD/out")" = a ] || echo "it read '$(oneline "$TMPD/out")'")$([ ! -e "$WS/n.txt" ] || echo "written through")"
poll_until 10 test ! -d "/proc/$PID"
verdict "... and the prepared keeper exits once the session's end has made the next one" 0 \
	"$(! alive "$PID" || echo "keeper $PID still runs")"
"$BPFBOX" discard "$ID" >/dev/null 2>&1
keepers_stop "$SETS"

# Prepared twice: the second replaces the first, which it tells to go.
"$BPFBOX" prepare "$WS" 2>"$TMPD/err"
FIRST=$(warm_pid "$SETS")
"$BPFBOX" prepare "$WS" 2>>"$TMPD/err"
rc=$?
SECOND=$(warm_pid "$SETS")
poll_until 10 test ! -d "/proc/$FIRST"
verdict "prepared twice: one keeper left, the newer; the first removed its set" 0 \
	"$([ "$(keepers_of "$SETS")" = "$SECOND " ] || echo "keepers: '$(keepers_of "$SETS")', first $FIRST, second $SECOND")$([ "$(ls -A "$SETS" | grep -c '\.gone$')" = 1 ] || echo "sets: $(ls -A "$SETS" | tr '\n' ' ')")$([ ! -s "$TMPD/err" ] || echo "$(oneline "$TMPD/err")")"
keepers_stop "$SETS"

# Nothing of the caller's is held: not its stdout (a $(...) would wait the
# keeper's 30 s), not another fd it passed down.
timeout 10 sh -c '"$1" prepare "$2" 7>"$3/held"; echo done' sh "$BPFBOX" "$WS" "$TMPD" >"$TMPD/out"
rc=$?
PID=$(warm_pid "$SETS")
HELD=$(for f in /proc/"$PID"/fd/*; do readlink "$f"; done 2>/dev/null | grep -v -e '^/dev/null$' -e "^$SETS" -e "^$WS\$" -e '^/$' -e '^anon_inode:' | tr '\n' ' ')
verdict "prepare's keeper holds none of the caller's fds: a \$(...) of it returns at once" 0 \
	"$([ "$(cat "$TMPD/out")" = done ] || echo "timed out")$([ -z "$HELD" ] || echo "it holds: $HELD")"
keepers_stop "$SETS"

# --- refused, nothing made ------------------------------------------------------------

"$BPFBOX" prepare "$TMPD/nope" >"$TMPD/out" 2>"$TMPD/err"
rc=$?
verdict "a workspace that does not exist: one line, exit 1" 1 \
	"$([ "$(wc -l <"$TMPD/err")" = 1 ] && grep -q "nope" "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")"
"$BPFBOX" prepare >"$TMPD/out" 2>"$TMPD/err"
rc=$?
verdict "no workspace: bad usage" 2 "$(grep -q "give the workspace" "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")"
for w in 0 abc; do
	BPFBOX_CHANGES_WARM=$w "$BPFBOX" prepare "$WS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "BPFBOX_CHANGES_WARM=$w: refused in one line, no keeper" 1 \
		"$([ "$(wc -l <"$TMPD/err")" = 1 ] && grep -q "BPFBOX_CHANGES_WARM" "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")$([ -z "$(keepers_of "$SETS")" ] || echo "keeper: $(keepers_of "$SETS")")"
done
BPFBOX_CHANGES_DIR=$WS/sets "$BPFBOX" prepare "$WS" >"$TMPD/out" 2>"$TMPD/err"
rc=$?
verdict "the sets' directory inside the workspace: refused, nothing made in it" 1 \
	"$(grep -q "overlap" "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")$([ -z "$(keepers_of "$WS/sets")" ] || echo "keeper: $(keepers_of "$WS/sets")")$([ -z "$(ls -A "$WS/sets" 2>/dev/null)" ] || echo "made: $(ls -A "$WS/sets" | tr '\n' ' ')")"
rm -rf "$WS/sets"

# --- released: the workspace's file system can be unmounted ---------------------------

MNT=$TMPD/mnt
mkdir -p "$MNT"
if mount -t tmpfs -o size=8m bpfbox-test "$MNT" 2>/dev/null; then
	mkdir "$MNT/ws"
	echo x >"$MNT/ws/x.txt"
	"$BPFBOX" run -q --no-daemon -w "$MNT/ws" --changes review -- true </dev/null >/dev/null 2>&1
	poll_until 10 test -n "$(keepers_of "$MNT/ws")"
	umount "$MNT" 2>"$TMPD/err"
	rc=$?
	verdict "(the case) a kept overlay holds the workspace's file system: umount is refused (32)" 32 \
		"$(grep -q busy "$TMPD/err" || echo "umount: $(oneline "$TMPD/err")")"
	# Right after a session, whose end may still be making its keeper.
	"$BPFBOX" run -q --no-daemon -w "$MNT/ws" --changes review -- true </dev/null >/dev/null 2>&1
	"$BPFBOX" prepare --release "$MNT/ws" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	umount "$MNT" 2>"$TMPD/uerr"
	UM=$?
	verdict "bpfbox prepare --release right after a session: the keepers gone, the file system unmounts" 0 \
		"$([ "$UM" = 0 ] || echo "umount: $(oneline "$TMPD/uerr"); keepers $(keepers_of "$MNT/ws")")$([ -z "$(keepers_of "$SETS")" ] || echo "keeper left: $(keepers_of "$SETS")")$([ -z "$(ls -A "$SETS" | grep '\.gone$')" ] || echo "left: $(ls -A "$SETS" | tr '\n' ' ')")$(! warm_kept "$SETS" || echo "record left")$([ ! -s "$TMPD/err" ] || echo "$(oneline "$TMPD/err")")"
	mountpoint -q "$MNT" && umount -l "$MNT"
else
	skip "prepare --release and umount: no tmpfs could be mounted here (needs root)"
fi

# Another workspace's keeper is left alone; one workspace's released.
WS2=$TMPD/ws2
mkdir -p "$WS2"
"$BPFBOX" prepare "$WS" 2>"$TMPD/err"
"$BPFBOX" prepare "$WS2" 2>>"$TMPD/err"
K2=$(keepers_of "$WS2")
"$BPFBOX" prepare --release "$WS" >"$TMPD/out" 2>>"$TMPD/err"
rc=$?
verdict "released one workspace: its keeper gone, another workspace's left" 0 \
	"$([ -z "$(keepers_of "$WS")" ] || echo "keeper of ws left: $(keepers_of "$WS")")$([ -n "$K2" ] && [ "$(keepers_of "$WS2")" = "$K2" ] || echo "ws2's keeper '$K2' now '$(keepers_of "$WS2")'")$([ ! -s "$TMPD/err" ] || echo "$(oneline "$TMPD/err")")"
"$BPFBOX" prepare --release "$WS" >"$TMPD/out" 2>"$TMPD/err"
rc=$?
verdict "released with nothing kept: exit 0 at once" 0 "$([ ! -s "$TMPD/err" ] || echo "$(oneline "$TMPD/err")")"

# A session running in the workspace holds it: said, exit 1, the session untouched.
"$BPFBOX" run -q --no-daemon -w "$WS" --changes review --status-fd 3 -- sh -c 'sleep 11; echo done >d.txt' \
	</dev/null >/dev/null 2>&1 3>"$TMPD/st" &
RUN=$!
poll_until 10 grep -q '"type":"started"' "$TMPD/st"
"$BPFBOX" prepare --release "$WS" >"$TMPD/out" 2>"$TMPD/err"
rc=$?
wait "$RUN"
RRC=$?
LID=$(tail -n 1 "$TMPD/st" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
verdict "a session running there: --release says it still holds the workspace, and leaves it be" 1 \
	"$([ "$(wc -l <"$TMPD/err")" = 1 ] && grep -q "still hold" "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")$([ "$RRC" = 0 ] && [ "$(cat "$SETS/$LID/upper/d.txt" 2>/dev/null)" = done ] || echo "the session ended $RRC, set $LID")"
"$BPFBOX" discard "$LID" >/dev/null 2>&1
keepers_stop "$SETS"

# --- uid 65534: the keeper's overlay is of its own user namespace ---------------------

if nobody_ns; then
	nobody_ws
	nb "$BPFBOX" prepare "$NWS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	PID=$(warm_pid "$NSETS" u)
	INO=$(stat -c %i "$NSETS/$(warm_name "$NSETS" u)" 2>/dev/null)
	verdict "uid 65534: prepare leaves its keeper (its uid) and the record of an overlay of its own user namespace" 0 \
		"$([ -n "$PID" ] && [ "$(stat -c %u "/proc/$PID" 2>/dev/null)" = 65534 ] || echo "keeper '$PID': $(warm_record "$NSETS" u) $(oneline "$TMPD/err")")"
	nb "$BPFBOX" run -q --no-daemon -w "$NWS" --changes review --status-fd 3 -- sh -c 'echo n >n.txt; cat b.txt' \
		</dev/null >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
	ID=$(tail -n 1 "$TMPD/st" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
	verdict "uid 65534: the first review session takes the prepared set" 0 \
		"$([ -n "$INO" ] && [ "$(stat -c %i "$NSETS/$ID" 2>/dev/null)" = "$INO" ] || echo "set $ID is not the prepared one ($INO)")$([ "$(stat -c %u "$NSETS/$ID/upper/n.txt" 2>/dev/null)" = 65534 ] || echo "n.txt in its upper: $(stat -c %u "$NSETS/$ID/upper/n.txt" 2>&1)")$([ "$(cat "$TMPD/out")" = b ] || echo "it read '$(oneline "$TMPD/out")' ($(oneline "$TMPD/err"))")"
	# Root's keeper of the same workspace is not another user's to release.
	"$BPFBOX" prepare "$NWS" 2>"$TMPD/err"
	RK=$(warm_pid "$SETS")
	nb "$BPFBOX" prepare --release "$NWS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "uid 65534: --release ends its own keepers, not root's of the same workspace" 0 \
		"$([ -z "$(keepers_of "$NSETS")" ] || echo "its keeper left: $(keepers_of "$NSETS")")$([ -n "$RK" ] && alive "$RK" || echo "root's keeper '$RK' is gone")$([ ! -s "$TMPD/err" ] || echo "$(oneline "$TMPD/err")")"
	nb "$BPFBOX" discard "$ID" >/dev/null 2>&1
	keepers_stop "$SETS"
	# A keeper that fails (here: it cannot write the sets' directory) leaves
	# the keeper it was to replace, whose set no session took, in place.
	nb "$BPFBOX" prepare "$NWS" 2>"$TMPD/err"
	A=$(warm_pid "$NSETS" u)
	AINO=$(stat -c %i "$NSETS/$(warm_name "$NSETS" u)" 2>/dev/null)
	MODE=$(stat -c %a "$NSETS")
	chmod 500 "$NSETS"
	nb "$BPFBOX" prepare "$NWS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	chmod "$MODE" "$NSETS"
	poll_until 1 test ! -d "/proc/$A" # a keeper told to go is gone within ms
	AFTER=$(warm_pid "$NSETS" u)
	ALIVE=$(alive "$A" && echo yes)
	nb "$BPFBOX" run -q --no-daemon -w "$NWS" --changes review --status-fd 3 -- sh -c 'echo k >k.txt' \
		</dev/null >/dev/null 2>"$TMPD/rerr" 3>"$TMPD/st"
	ID=$(tail -n 1 "$TMPD/st" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
	verdict "uid 65534: a prepare whose keeper fails says so in one line and leaves the keeper before it, whose set the next session takes" 1 \
		"$([ "$(wc -l <"$TMPD/err")" = 1 ] && grep -q "keeper exited" "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")$([ -n "$A" ] && [ "$ALIVE" = yes ] && [ "$AFTER" = "$A" ] || echo "keeper '$A' alive '$ALIVE', recorded now '$AFTER'")$([ -n "$AINO" ] && [ "$(stat -c %i "$NSETS/$ID" 2>/dev/null)" = "$AINO" ] || echo "set '$ID' is not the kept one ($AINO): $(oneline "$TMPD/rerr")")"
	nb "$BPFBOX" discard "$ID" >/dev/null 2>&1
	keepers_stop "$NSETS"
else
	skip "prepare as uid 65534: needs root to drop to it, setpriv and user namespaces (the VM's full_unpriv runs review sessions unprivileged)"
fi

keepers_stop "$SETS"
finish
