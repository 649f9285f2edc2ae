#!/bin/sh
# The overlay kept ready (userspace/sandbox/changes_warm.c, docs/SECURITY.md
# "The overlay kept ready"): a review session's end leaves a keeper holding
# the next session's set and its overlay, detached; the next review session
# of the same workspace takes both instead of making them. Each check reads
# what the kernel shows: the keeper's record and process, the set's inode
# (the keeper's directory becomes the session's set), the lock it carries,
# what the session saw and wrote. And what must not be taken: a workspace
# replaced or changed, a record naming another process, a keeper killed.
# Root, and uid 65534 in a user namespace.

. "$(dirname "$0")/../lib.sh"

keeper_suite

alive() { kill -0 "$1" 2>/dev/null; }
no_gone() { [ -z "$(ls -A "$1" | grep '\.gone$')" ]; }

# --- kept, taken, kept again -------------------------------------------------------

review -- true
poll_until 10 warm_kept "$SETS"
PID=$(warm_pid "$SETS")
NAME=$(warm_name "$SETS")
INO=$(stat -c %i "$SETS/$NAME" 2>/dev/null)
CMD=$(tr '\0' ' ' <"/proc/$PID/cmdline" 2>/dev/null)
verdict "a review session's end leaves a keeper of the next set: its record, its process, its directory" 0 \
	"$(warm_kept "$SETS" || echo "no record: $(ls -A "$SETS" | tr '\n' ' ')")$(case "$CMD" in *"__changes-keep r "*) ;; *) echo "pid $PID runs '$CMD'" ;; esac)$([ -n "$INO" ] || echo "no directory $NAME")$([ "$(stat -c %a "$SETS/$NAME/upper" 2>/dev/null)" = 751 ] || echo "its upper is not as the workspace's root (751)")"
# Nothing of the session's caller is held: not its stdout (a $(...) would wait), not its cwd.
HELD=$(for f in /proc/"$PID"/fd/*; do readlink "$f"; done 2>/dev/null | grep -v -e '^/dev/null$' -e "^$SETS" -e "^$WS\$" -e '^/$' | tr '\n' ' ')
verdict "the keeper holds only /dev/null, the sets, the workspace and the overlay" 0 \
	"$([ -z "$HELD" ] || echo "it holds: $HELD")$([ "$(readlink "/proc/$PID/cwd")" = / ] || echo "its cwd is $(readlink "/proc/$PID/cwd")")"

SPARE=$(stat -c %i "$SETS/.spare.0" 2>/dev/null)
review -- sh -c 'echo new >n.txt; cat a.txt; grep " $PWD " /proc/self/mountinfo | grep -c overlay'
verdict "the next session takes the kept set: its set is the keeper's directory, its writes in its upper" 0 \
	"$([ "$(stat -c %i "$SETS/$ID" 2>/dev/null)" = "$INO" ] || echo "set $ID is inode $(stat -c %i "$SETS/$ID" 2>&1), the kept one was $INO")$([ "$(cat "$SETS/$ID/upper/n.txt" 2>/dev/null)" = new ] || echo "no n.txt in its upper")$([ "$(tr '\n' ' ' <"$TMPD/out")" = "a 1 " ] || echo "it saw '$(oneline "$TMPD/out")'")$([ ! -e "$WS/n.txt" ] || echo "written through")$([ "$(stat -c %i "$SETS/.spare.0" 2>/dev/null)" = "$SPARE" ] || echo "the spare was taken too")"
"$BPFBOX" apply "$ID" >"$TMPD/aout" 2>"$TMPD/aerr"
rc=$?
verdict "... and that set applies at once (the keeper's lock let go, though it still runs)" 0 "$([ "$(cat "$WS/n.txt" 2>/dev/null)" = new ] || echo "$(oneline "$TMPD/aerr")")"
poll_until 10 test ! -d "/proc/$PID"
poll_until 10 warm_kept "$SETS"
verdict "the keeper it took from exits (told by the next one), and the session's end leaves that new one" 0 \
	"$(! alive "$PID" || echo "keeper $PID still runs")$([ -n "$(warm_pid "$SETS")" ] && [ "$(warm_pid "$SETS")" != "$PID" ] || echo "record: '$(warm_record "$SETS")'")"
rm -f "$WS/n.txt"

# The set's lock: held while the session runs.
poll_until 10 warm_kept "$SETS"
"$BPFBOX" run -q --no-daemon -w "$WS" --changes review --status-fd 3 -- sh -c 'echo x >x.txt; sleep 2' \
	</dev/null >/dev/null 2>&1 3>"$TMPD/st" &
RUN=$!
poll_until 10 grep -q '"type":"started"' "$TMPD/st"
LID=$(sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p' "$TMPD/st" | head -n 1)
# Its manifest is written once it holds the lock (changes_session_running).
poll_until 10 test -s "$SETS/$LID/manifest.json"
"$BPFBOX" apply "$LID" >"$TMPD/aout" 2>"$TMPD/aerr"
rc=$?
wait "$RUN"
verdict "a kept set's session holds its lock: an apply while it runs is refused as in use" 5 \
	"$(grep -q "in use" "$TMPD/aerr" || echo "$(oneline "$TMPD/aerr")")$([ ! -e "$WS/x.txt" ] || echo "applied under the session")"
"$BPFBOX" discard "$LID" >/dev/null 2>&1

# --- what is not taken ------------------------------------------------------------

# The workspace replaced by another directory at the same path: not that
# keeper's (its record names the old one's device and inode).
poll_until 10 warm_kept "$SETS"
OLD=$(warm_name "$SETS")
OLDINO=$(stat -c %i "$SETS/$OLD")
mv "$WS" "$TMPD/ws.old"
mkdir -p "$WS"
chmod 751 "$WS"
echo other >"$WS/a.txt"
review -- sh -c 'cat a.txt; echo m >m.txt'
verdict "a workspace replaced at the same path is not given the old one's overlay" 0 \
	"$([ "$(cat "$TMPD/out")" = other ] || echo "it read '$(oneline "$TMPD/out")'")$([ "$(stat -c %i "$SETS/$ID" 2>/dev/null)" != "$OLDINO" ] || echo "it took the old workspace's set")$([ -f "$SETS/$ID/upper/m.txt" ] || echo "no m.txt in its set")"
"$BPFBOX" discard "$ID" >/dev/null 2>&1
keepers_stop "$SETS"
rm -rf "$TMPD/ws.old"

# The workspace's root given another mode since the keeper made its upper.
review -- true
poll_until 10 warm_kept "$SETS"
KEPT=$(stat -c %i "$SETS/$(warm_name "$SETS")")
chmod 700 "$WS"
review -- stat -c %a .
verdict "a kept upper of another mode is not taken: the session sees its root's (700)" 0 \
	"$([ "$(cat "$TMPD/out")" = 700 ] || echo "it saw '$(oneline "$TMPD/out")'")$([ "$(stat -c %i "$SETS/$ID" 2>/dev/null)" != "$KEPT" ] || echo "it took the kept set")"
chmod 751 "$WS"
keepers_stop "$SETS"

# A record naming another process (a pid reused, or put there): what that
# process holds is never taken, the set is made.
sleep 30 </dev/null >/dev/null 2>&1 &
DECOY=$!
mkdir -p "$SETS/.0123456789abcdef0123456789abcdef.gone/upper" "$SETS/.0123456789abcdef0123456789abcdef.gone/work"
chmod 751 "$SETS/.0123456789abcdef0123456789abcdef.gone/upper"
WSKEY=$(printf '%s.%x' "$(stat -c %D "$WS")" "$(stat -c %i "$WS")")
ln -s "$DECOY:0:1:2:3:.0123456789abcdef0123456789abcdef.gone" "$SETS/.warm.$WSKEY.r"
review -- sh -c 'echo d >d.txt'
verdict "a record naming another process: nothing of it taken, the set made" 0 \
	"$([ -d "$SETS/.0123456789abcdef0123456789abcdef.gone" ] || echo "the named directory was taken")$([ -f "$SETS/$ID/upper/d.txt" ] || echo "no d.txt in set $ID")$(alive "$DECOY" || echo "the decoy died")"
kill "$DECOY" 2>/dev/null
"$BPFBOX" discard "$ID" >/dev/null 2>&1
rm -rf "$SETS/.0123456789abcdef0123456789abcdef.gone"
keepers_stop "$SETS"

# A keeper killed: the next session makes its set; what it left is swept
# as any killed helper's (a minute old, unlocked).
review -- true
poll_until 10 warm_kept "$SETS"
PID=$(warm_pid "$SETS")
NAME=$(warm_name "$SETS")
kill -9 "$PID"
poll_until 10 test ! -d "/proc/$PID"
review -- sh -c 'echo k >k.txt'
verdict "a killed keeper's set is not taken; the session's own set holds its write" 0 \
	"$([ -f "$SETS/$ID/upper/k.txt" ] || echo "no k.txt in set $ID")$([ "$(stat -c %i "$SETS/$ID")" != "$(stat -c %i "$SETS/$NAME" 2>/dev/null)" ] || echo "it took the dead keeper's")"
"$BPFBOX" discard "$ID" >/dev/null 2>&1
touch -d '2 minutes ago' "$SETS/$NAME"
review -- true
poll_until 10 test ! -e "$SETS/$NAME"
verdict "... and the next session's helper sweeps what the killed keeper left" 0 \
	"$([ ! -e "$SETS/$NAME" ] || echo "$NAME left")"
keepers_stop "$SETS"

# --- its time, and none at all ------------------------------------------------------

BPFBOX_CHANGES_WARM=1 review -- true
poll_until 10 warm_kept "$SETS"
PID=$(warm_pid "$SETS")
NAME=$(warm_name "$SETS")
poll_until 10 test ! -d "/proc/$PID"
verdict "a keeper nobody comes to within BPFBOX_CHANGES_WARM=1 removes its set and record and exits" 0 \
	"$(! alive "$PID" || echo "keeper $PID runs")$(! warm_kept "$SETS" || echo "record left: $(warm_record "$SETS")")$([ ! -e "$SETS/$NAME" ] || echo "$NAME left")$(no_gone "$SETS" || echo "left: $(ls -A "$SETS" | tr '\n' ' ')")"

BPFBOX_CHANGES_WARM=0 review -- true
# Its end's helper done (it holds the sets' directory until then): it made no keeper.
wait_gone 10 fd_on "$SETS"
verdict "BPFBOX_CHANGES_WARM=0: no keeper" 0 \
	"$(! warm_kept "$SETS" || echo "record: $(warm_record "$SETS")")"

for bad in abc -1 3601 99999999999999999999; do
	BPFBOX_CHANGES_WARM=$bad review -- touch ran
	verdict "BPFBOX_CHANGES_WARM=$bad: refused in one line, nothing ran" 125 \
		"$([ ! -e "$WS/ran" ] || echo "it ran")$([ "$(grep -c '^bpfbox: error' "$TMPD/err")" = 1 ] && grep -q "BPFBOX_CHANGES_WARM='$bad' is not a number of seconds from 0 to 3600; nothing ran" "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")"
	rm -f "$WS/ran"
done

# Two sessions at once: one takes the kept set, the other makes its own.
review -- true
poll_until 10 warm_kept "$SETS"
KEPT=$(stat -c %i "$SETS/$(warm_name "$SETS")")
for i in 1 2; do
	"$BPFBOX" run -q --no-daemon -w "$WS" --changes review --status-fd 3 -- sh -c "echo $i >c$i.txt" \
		</dev/null >/dev/null 2>&1 3>"$TMPD/st$i" &
done
wait
TAKEN=0
both=""
for i in 1 2; do
	id=$(tail -n 1 "$TMPD/st$i" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
	[ "$(cat "$SETS/$id/upper/c$i.txt" 2>/dev/null)" = "$i" ] || both="$both set of session $i lacks c$i.txt;"
	[ "$(stat -c %i "$SETS/$id" 2>/dev/null)" = "$KEPT" ] && TAKEN=$((TAKEN + 1))
	"$BPFBOX" discard "$id" >/dev/null 2>&1
done
verdict "two sessions at once: each has its own set, at most one is the kept one" 0 \
	"$both$([ "$TAKEN" -le 1 ] || echo "$TAKEN took it")"
keepers_stop "$SETS"

# --- inside the session -------------------------------------------------------------

review -- true
poll_until 10 warm_kept "$SETS"
review -- sh -c "ls -A '$SETS' 2>&1; readlink '$SETS'/.warm.* 2>&1; true"
verdict "a session cannot read the keepers' records (the sets are masked)" 0 \
	"$(! grep -q -e '\.warm\.' -e '\.gone' "$TMPD/out" || echo "it saw: $(oneline "$TMPD/out")")"
"$BPFBOX" discard "$ID" >/dev/null 2>&1
keepers_stop "$SETS"

# --- uid 65534: the keeper's overlay is of its own user namespace -----------------------

if nobody_ns; then
	nobody_ws
	nb "$BPFBOX" run -q --no-daemon -w "$NWS" --changes review -- true </dev/null >/dev/null 2>"$TMPD/err"
	poll_until 10 warm_kept "$NSETS" u
	PID=$(warm_pid "$NSETS" u)
	INO=$(stat -c %i "$NSETS/$(warm_name "$NSETS" u)" 2>/dev/null)
	nb "$BPFBOX" run -q --no-daemon -w "$NWS" --changes review --status-fd 3 -- sh -c 'echo n >n.txt; cat b.txt' \
		</dev/null >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
	rc=$?
	ID=$(tail -n 1 "$TMPD/st" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
	verdict "uid 65534: its keeper (its uid, its own user namespace) gives the next session its set" 0 \
		"$([ "$(stat -c %u "/proc/$PID" 2>/dev/null)" = 65534 ] || ! alive "$PID" || echo "keeper $PID is uid $(stat -c %u "/proc/$PID")")$([ -n "$INO" ] && [ "$(stat -c %i "$NSETS/$ID" 2>/dev/null)" = "$INO" ] || echo "set $ID is not the kept one ($INO)")$([ "$(stat -c %u "$NSETS/$ID/upper/n.txt" 2>/dev/null)" = 65534 ] || echo "n.txt in its upper: $(stat -c %u "$NSETS/$ID/upper/n.txt" 2>&1)")$([ "$(cat "$TMPD/out")" = b ] || echo "it read '$(oneline "$TMPD/out")' ($(oneline "$TMPD/err"))")"
	nb "$BPFBOX" apply "$ID" >"$TMPD/aout" 2>"$TMPD/aerr"
	rc=$?
	verdict "uid 65534: ... and that set applies" 0 "$([ "$(cat "$NWS/n.txt" 2>/dev/null)" = n ] || echo "$(oneline "$TMPD/aerr")")"
	keepers_stop "$NSETS"
else
	skip "a keeper as uid 65534: needs root to drop to it, setpriv and user namespaces (the VM's full_unpriv runs review sessions unprivileged)"
fi

keepers_stop "$SETS"
finish
