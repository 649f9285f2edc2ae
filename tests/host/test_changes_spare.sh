#!/bin/sh
# A review session's set made ahead (docs/benchmarks.md section 10, the
# spare; userspace/sandbox/changes_spare.c): the helper that ends a review
# session leaves ".spare.N" (an empty upper as this workspace's root, and a
# work dir) and the next session takes it with one rename. Each check reads
# the sets' directory: the spare made, taken (the same inode becomes the
# set), never used when it is not as the helper makes it (a symlinked
# upper), the empty set removed once bpfbox has exited, and an apply just
# after a session never finds its set "in use" (the helper's copy of our
# fds holds no lock); a set whose session wrote at once is kept, though the
# end knows an untouched upper without walking it. Root, and uid 65534 in a
# user namespace.

. "$(dirname "$0")/../lib.sh"

chmod 755 "$TMPD"
SETS=$TMPD/sets
export BPFBOX_CHANGES_DIR="$SETS"
# No keeper (test_changes_warm.sh): the spare is what a session takes without one.
export BPFBOX_CHANGES_WARM=0
WS=$TMPD/ws
mkdir -p "$WS"
chmod 751 "$WS"
echo a >"$WS/a.txt"

# spare_ready DIR: .spare.0 complete in DIR (its helper renames it in whole).
spare_ready() { [ -d "$1/.spare.0/upper" ] && [ -d "$1/.spare.0/work" ]; }
# no_gone DIR: no set of an ended session waits for its removal in DIR.
no_gone() { [ -z "$(ls -A "$1" | grep '\.gone$')" ]; }

# --- made, taken, made again -------------------------------------------------------

rm -rf "$SETS"
review -- true
poll_until 10 spare_ready "$SETS"
poll_until 10 no_gone "$SETS"
verdict "an empty review session leaves no set, and leaves the next session's spare" 0 \
	"$([ ! -e "$SETS/$ID" ] || echo "its set is still there")$(spare_ready "$SETS" || echo "no spare: $(ls -A "$SETS" | tr '\n' ' ')")$(no_gone "$SETS" || echo "left: $(ls -A "$SETS" | tr '\n' ' ')")"
MODE=$(stat -c %a "$SETS/.spare.0/upper" 2>/dev/null)
[ "$MODE" = 751 ] && ok "the spare's upper is made as this workspace's root (mode 751)" ||
	fail "the spare's upper has mode '$MODE', not the workspace's 751"

INO=$(stat -c %i "$SETS/.spare.0")
review -- sh -c 'echo new >n.txt; cat a.txt'
verdict "the next session takes the spare: its set is that directory, holding what it wrote" 0 \
	"$([ "$(stat -c %i "$SETS/$ID" 2>/dev/null)" = "$INO" ] || echo "set $ID is inode $(stat -c %i "$SETS/$ID" 2>&1), the spare was $INO")$([ "$(cat "$SETS/$ID/upper/n.txt" 2>/dev/null)" = new ] || echo "no n.txt in its upper")$([ "$(cat "$TMPD/out")" = a ] || echo "it read '$(oneline "$TMPD/out")'")$([ ! -e "$WS/n.txt" ] || echo "written through")"
poll_until 10 spare_ready "$SETS"
verdict "a session that keeps its set leaves a new spare too" 0 \
	"$(spare_ready "$SETS" && [ "$(stat -c %i "$SETS/.spare.0")" != "$INO" ] || echo "no new spare: $(ls -A "$SETS" | tr '\n' ' ')")"
"$BPFBOX" apply "$ID" >"$TMPD/aout" 2>"$TMPD/aerr"
rc=$?
verdict "... and that set applies" 0 "$([ "$(cat "$WS/n.txt" 2>/dev/null)" = new ] || echo "$(oneline "$TMPD/aerr")")"
rm -f "$WS/n.txt"

# A workspace root of another mode: the spare made for the last one is set right.
chmod 700 "$WS"
review -- stat -c %a .
verdict "a spare made for another mode: the session still sees its root's (700)" 0 \
	"$([ "$(cat "$TMPD/out")" = 700 ] || echo "it saw '$(oneline "$TMPD/out")'")"
chmod 751 "$WS"

# --- the empty set's removal ---------------------------------------------------------

for cmd in true "sleep 0.3"; do
	review -- sh -c "$cmd"
	poll_until 10 no_gone "$SETS"
	verdict "an empty set is removed after bpfbox's exit (command: $cmd)" 0 \
		"$([ ! -e "$SETS/$ID" ] || echo "its set is there")$(no_gone "$SETS" || echo "left for a helper that never ran: $(ls -A "$SETS" | tr '\n' ' ')")"
done

# --- nothing written, known without a walk -------------------------------------------

# The end skips the upper's walk when the upper's root still has the ctime
# it was taken with (changes.c, upper_untouched). A write in the command's
# very first instruction, in the tick the session starts in, must still be
# kept: twelve sessions whose command is the write itself.
lost=""
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
	review -- touch "t$i"
	[ $rc = 0 ] && "$BPFBOX" changes "$ID" 2>&1 | grep -q "added *t$i\$" || lost="$lost t$i($rc)"
	"$BPFBOX" discard "$ID" >/dev/null 2>&1
done
verdict "a write as the command's first act is kept, 12 times of 12" 0 "$lost"

# A change deep in the tree, then the root's times put back as the session
# saw them (the overlay's root is the upper's): its ctime still moved.
mkdir -p "$WS/d/e"
echo f >"$WS/d/e/f.txt"
review -- sh -c 't=$(stat -c %y .); echo x >>d/e/f.txt; touch -d "$t" .'
verdict "a deep change with the root's times restored is kept" 0 \
	"$("$BPFBOX" changes "$ID" 2>&1 | grep -q "modified *d/e/f.txt\$" || echo "set $ID ($rc): $(oneline "$TMPD/err") $("$BPFBOX" changes "$ID" 2>&1 | tr '\n' ' ')")$([ "$(cat "$WS/d/e/f.txt")" = f ] || echo "written through")"
"$BPFBOX" discard "$ID" >/dev/null 2>&1
rm -rf "$WS/d"

# --- an apply just after the session -------------------------------------------------

# The set is unlocked before its helper starts: no copy of the lock
# outlives bpfbox, so the set is never "in use" once the session ended.
busy=""
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
	review -- sh -c "echo $i >f$i"
	"$BPFBOX" apply "$ID" >"$TMPD/aout" 2>"$TMPD/aerr" || busy="$busy $i: $(oneline "$TMPD/aerr" 200)"
done
verdict "an apply right after each of 12 sessions is never refused as in use" 0 \
	"$busy$([ "$(cat "$WS"/f* | wc -l)" = 12 ] || echo "$(cat "$WS"/f* | wc -l) of 12 files applied")"
rm -f "$WS"/f*

# --- what is not a spare as the helper makes it is never used ------------------------

poll_until 10 spare_ready "$SETS"
rm -rf "$SETS/.spare.0" "$SETS/.spare.1"
OUT=$TMPD/outside
mkdir -p "$OUT" "$SETS/.spare.0/work"
echo mine >"$OUT/mine"
ln -s "$OUT" "$SETS/.spare.0/upper"
review -- sh -c 'echo planted >planted'
verdict "a spare whose upper is a symlink is not used: the set is made afresh, nothing written through it" 0 \
	"$([ "$(ls -A "$OUT")" = mine ] && [ "$(cat "$OUT/mine")" = mine ] || echo "outside now: $(ls -A "$OUT" | tr '\n' ' ')")$([ "$(cat "$SETS/$ID/upper/planted" 2>/dev/null)" = planted ] && [ ! -L "$SETS/$ID/upper" ] || echo "set $ID: $(ls -la "$SETS/$ID" 2>&1 | tr '\n' '|')")"
"$BPFBOX" discard "$ID" >/dev/null 2>&1

"$BPFBOX" changes .spare.0 >"$TMPD/out" 2>"$TMPD/err"
rc=$?
[ $rc != 0 ] && grep -q "not a change set id" "$TMPD/err" && ok "a spare is no set: bpfbox changes .spare.0 refuses the name ($rc)" ||
	fail "bpfbox changes .spare.0: exit $rc: $(oneline "$TMPD/err")"

# --- uid 65534: the child makes the overlay on the spare ---------------------------

if nobody_ns; then
	nobody_ws
	nb "$BPFBOX" run -q --no-daemon -w "$NWS" --changes review -- true </dev/null >/dev/null 2>"$TMPD/err"
	poll_until 10 spare_ready "$NSETS"
	INO=$(stat -c %i "$NSETS/.spare.0" 2>/dev/null)
	OWN=$(stat -c %u "$NSETS/.spare.0/upper" 2>/dev/null)
	nb "$BPFBOX" run -q --no-daemon -w "$NWS" --changes review --status-fd 3 -- sh -c 'echo n >n.txt; cat b.txt' \
		</dev/null >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
	rc=$?
	ID=$(tail -n 1 "$TMPD/st" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
	verdict "uid 65534: the spare is its own (65534), and the next session's overlay is made on it" 0 \
		"$([ "$OWN" = 65534 ] || echo "the spare's upper is uid '$OWN'")$([ -n "$INO" ] && [ "$(stat -c %i "$NSETS/$ID" 2>/dev/null)" = "$INO" ] || echo "set $ID is not the spare ($INO)")$([ "$(cat "$NSETS/$ID/upper/n.txt" 2>/dev/null)" = n ] || echo "no n.txt in its upper")$([ "$(cat "$TMPD/out")" = b ] || echo "it read '$(oneline "$TMPD/out")' ($(oneline "$TMPD/err"))")"
	nb "$BPFBOX" discard "$ID" >/dev/null 2>&1
	nb "$BPFBOX" run -q --no-daemon -w "$NWS" --changes review --status-fd 3 -- touch first \
		</dev/null >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
	ID=$(tail -n 1 "$TMPD/st" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
	verdict "uid 65534: a write as the command's first act is kept (the child's overlay)" 0 \
		"$(nb "$BPFBOX" changes "$ID" 2>&1 | grep -q "added *first\$" || echo "set $ID: $(oneline "$TMPD/err") $(nb "$BPFBOX" changes "$ID" 2>&1 | tr '\n' ' ')")"
	nb "$BPFBOX" discard "$ID" >/dev/null 2>&1
else
	skip "spares as uid 65534: needs root to drop to it, setpriv and user namespaces (the VM's full_unpriv runs review sessions unprivileged)"
fi

# The helpers' last fds of the sets' directories, before the scratch goes.
wait_gone 10 fd_on "$SETS"
finish
