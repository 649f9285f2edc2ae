#!/bin/sh
# Change sets (docs/runtime.md, "Change sets"): with --changes review what a
# session writes never reaches its workspace; `bpfbox changes` lists it
# exactly; `bpfbox apply` makes the workspace what the session saw, refuses
# a path changed meanwhile (writing nothing), never writes through a
# symlink the session made, refuses set-uid files and fifos, and finishes
# an apply that was killed; `bpfbox discard` removes the set. Root and uid
# 65534 (a user namespace's overlayfs). Each check reads the files.

. "$(dirname "$0")/../lib.sh"

if ! command -v python3 >/dev/null 2>&1; then
	skip "change sets: python3 is needed to read the JSON listing"
	finish
fi
chmod 755 "$TMPD"
SETS=$TMPD/sets
export BPFBOX_CHANGES_DIR="$SETS"

# A tree as one text: each path, its type, mode and symlink target, sorted,
# then each file's md5 (no python: its start-up is the cost on a busy host).
SIG='find . -mindepth 1 -printf "%p|%y|%m|%l\n" | LC_ALL=C sort
find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum'

# mkws DIR: the workspace every test starts from.
mkws() {
	rm -rf "$1"
	mkdir -p "$1/sub" "$1/dd" "$1/gone/deep" "$1/victim"
	echo hello >"$1/a.txt"
	echo keep >"$1/sub/b.txt"
	echo del >"$1/c.txt"
	echo z >"$1/dd/z"
	echo g >"$1/gone/deep/g"
	echo f >"$1/fileto"
	echo v >"$1/victim/v"
	echo r >"$1/old"
}

sig() { (cd "$1" && sh -c "$SIG"); }

# The session's edits: every kind, and the adversarial ones.
EDITS='echo world >>a.txt; echo new >n.txt; rm c.txt; rm -r dd; mkdir dd; echo q >dd/q
chmod 600 sub/b.txt; rm -r gone; mv old renamed; ln -s /etc/passwd lnk
rm fileto; mkdir fileto; echo in >fileto/x; printf x >"$(printf "nl\nname")"
rm -r victim; ln -s "$1" victim'

# session WS [RUN OPTIONS] -- CMD...: sets $rc, $ID (from the ended line), $TMPD/out, err, st.
session() {
	ws=$1
	shift
	"$BPFBOX" run -q --no-daemon -w "$ws" --status-fd 3 "$@" </dev/null >"$TMPD/out" \
		2>"$TMPD/err" 3>"$TMPD/st"
	rc=$?
	ID=$(sid)
}

# sid: the session id of the ended line.
sid() { tail -n 1 "$TMPD/st" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p'; }

# ended KEY: the ended line's changes.KEY (a number or true/false).
ended() { tail -n 1 "$TMPD/st" | sed -n "s/.*\"changes\":{.*\"$1\":\([a-z0-9]*\).*/\1/p"; }

# listing ID: "change path" per line from bpfbox changes --json, sorted.
listing() {
	"$BPFBOX" changes "$1" --json | python3 -c '
import json, sys
for c in json.load(sys.stdin)["changes"]:
    print(c["change"], repr(c["path"]), c["type"])'
}

WANT="modified 'a.txt' file
deleted 'c.txt' file
added 'dd/q' file
deleted 'dd/z' file
modified 'fileto' dir
added 'fileto/x' file
deleted 'gone' dir
added 'lnk' symlink
added 'n.txt' file
added 'nl\\nname' file
deleted 'old' file
added 'renamed' file
mode 'sub/b.txt' file
modified 'victim' symlink"

WANT_TEXT='modified a.txt
deleted  c.txt
added    dd/q
deleted  dd/z
modified fileto
added    fileto/x
deleted  gone
added    lnk
added    n.txt
added    nl\nname
deleted  old
added    renamed
mode     sub/b.txt
modified victim'

# --- root --------------------------------------------------------------------------

if [ "$(id -u)" = 0 ]; then
	WS=$TMPD/ws
	OUT=$TMPD/outside
	mkdir -p "$OUT"
	mkws "$WS"
	BEFORE=$(sig "$WS")
	session "$WS" --changes review -- sh -c "$EDITS"'
sh -c "$2"' sh "$OUT" "$SIG"
	SEEN=$(cat "$TMPD/out")
	verdict "review: the session's edits, creates, deletes, renames, chmod do not reach the workspace" 0 \
		"$([ "$(sig "$WS")" = "$BEFORE" ] || echo "the workspace changed")$([ -n "$SEEN" ] || echo "no tree from the session")"
	rc=0
	verdict "the ended line counts the change set (added, modified, deleted)" 0 \
		"$([ "$(ended added)/$(ended modified)/$(ended deleted)/$(ended kept)" = "6/4/4/true" ] ||
			echo "ended: $(tail -n 1 "$TMPD/st")")"
	GOT=$(listing "$ID" 2>"$TMPD/err")
	rc=$?
	verdict "bpfbox changes --json lists exactly what the session changed" 0 \
		"$([ "$GOT" = "$WANT" ] || echo "got: $(echo "$GOT" | tr '\n' '|')")"
	"$BPFBOX" changes "$ID" --diff >"$TMPD/diff" 2>"$TMPD/err"
	rc=$?
	verdict "bpfbox changes --diff: a unified diff of the text files" 0 \
		"$(grep -qx '+world' "$TMPD/diff" && grep -qx -- '-del' "$TMPD/diff" || echo "diff: $(oneline "$TMPD/diff" 300)")"

	INO_A=$(stat -c %i "$WS/a.txt")
	"$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "apply: the workspace is what the session saw" 0 \
		"$([ "$(sig "$WS")" = "$SEEN" ] || echo "trees differ: $(sig "$WS" | tr '\n' '|' | head -c 400)")"
	rc=0
	verdict "apply: the session's symlinks are symlinks, nothing written through them" 0 \
		"$([ -L "$WS/victim" ] && [ -L "$WS/lnk" ] || echo "not symlinks")$([ -z "$(ls -A "$OUT")" ] || echo "written outside: $(ls -A "$OUT")")$(grep -q '^root:' /etc/passwd || echo "/etc/passwd changed")"
	GEN1=$(ls -d "$SETS"/history/*/1 2>/dev/null)
	verdict "apply: what it replaced or deleted is kept (generation 1 of the history)" 0 \
		"$([ "$(cat "$GEN1/prev/a.txt" 2>/dev/null)" = hello ] && [ -f "$GEN1/prev/victim/v" ] || echo "history: $(ls -R "$SETS" | tr '\n' ' ' | head -c 300)")"
	"$BPFBOX" discard "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "discard removes the set" 0 "$([ ! -e "$SETS/$ID" ] || echo "$SETS/$ID is still there")"
	"$BPFBOX" undo "$WS" --list >"$TMPD/list" 2>"$TMPD/err"
	rc=$?
	verdict "undo --list: generation 1, its paths and disk use" 0 \
		"$(grep -q "^1 .* $ID  *14 " "$TMPD/list" && grep -q '^1 generation, .* (kept: the newest 20, up to 1024 MB)' "$TMPD/list" || echo "list: $(oneline "$TMPD/list")")"
	STALE_T=$(dirname "$GEN1")/.trash-0123456789abcdef0123456789abcdef
	FRESH_T=$(dirname "$GEN1")/.trash-1123456789abcdef0123456789abcdef
	mkdir -p "$STALE_T/d" "$FRESH_T"
	touch -d '2 minutes ago' "$STALE_T"
	"$BPFBOX" undo "$WS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "undo: the workspace is as before the apply (files, modes, symlinks, the replaced trees)" 0 \
		"$([ "$(sig "$WS")" = "$BEFORE" ] || echo "trees differ: $(sig "$WS" | tr '\n' '|' | head -c 400)")$([ ! -e "$GEN1" ] || echo "generation kept")$([ -z "$(ls -A "$OUT")" ] || echo "written outside")"
	# Apply kept a.txt's file by a link and undo linked it back: the same
	# inode. What undo took away went to a trash its helper frees after it,
	# with an old trash a killed helper left, not a fresh one.
	wait_gone 10 sh -c 'ls -d "$1"/.trash-* | grep -v "$2"' sh "$(dirname "$GEN1")" "$FRESH_T"
	verdict "undo: a.txt is its file from before the apply (inode $INO_A); the trash is freed after it, an old one too, not a fresh one" 0 \
		"$([ "$(stat -c %i "$WS/a.txt")" = "$INO_A" ] || echo "a.txt: inode $(stat -c %i "$WS/a.txt")")$(ls -d "$(dirname "$GEN1")"/.trash-* | grep -v "$FRESH_T" | sed 's/^/left: /')$([ -d "$FRESH_T" ] || echo "the fresh trash removed")"
	rm -rf "$FRESH_T"
	"$BPFBOX" undo "$WS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "undo with nothing left: exit 4" 4
	"$BPFBOX" changes "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "changes of an unknown set: exit 4" 4

	# Discard without applying: the workspace stays.
	mkws "$WS"
	BEFORE=$(sig "$WS")
	session "$WS" --changes review -- sh -c 'echo x >a.txt; rm c.txt'
	"$BPFBOX" discard "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "discard of an unapplied set: set gone, workspace as before" 0 \
		"$([ ! -e "$SETS/$ID" ] || echo "set kept")$([ "$(sig "$WS")" = "$BEFORE" ] || echo "workspace changed")"

	# A path changed in the workspace meanwhile: refused, nothing written.
	session "$WS" --changes review -- sh -c 'echo session >a.txt; echo new >n2.txt'
	echo editor >"$WS/a.txt"
	BEFORE=$(sig "$WS")
	"$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "apply refuses a path changed in the workspace since the start, and writes nothing" 3 \
		"$(grep -q 'refused: a.txt: changed' "$TMPD/err" || echo "no refusal naming a.txt")$([ "$(sig "$WS")" = "$BEFORE" ] || echo "the workspace changed")"
	"$BPFBOX" discard "$ID"

	# A file written just before bpfbox reads the tick it started in (the
	# same clock tick as the start's bound, by the fault hook) is not
	# changed since the start: three times.
	R=""
	for i in 1 2 3; do
		BPFBOX_FAULT_TOUCH_BEFORE_START="$WS/a.txt" session "$WS" --changes review -- \
			sh -c 'cat a.txt; echo more >>a.txt'
		"$BPFBOX" apply "$ID" >"$TMPD/out2" 2>"$TMPD/err" ||
			R="$R run $i: $(oneline "$TMPD/err")"
		[ "$(cat "$WS/a.txt")" = "$(printf 'touched\nmore')" ] || R="$R run $i: a.txt $(cat "$WS/a.txt" | tr '\n' ' ')"
		"$BPFBOX" discard "$ID" >/dev/null 2>&1
	done
	verdict "a file written in the tick before the start applies (not changed since the start)" 0 "$R"

	# An editor's write to a file as soon as the command has started (the
	# fault hook, by bpfbox's parent, mostly in the start's own tick): the
	# start is taken in the child, after the set-up, and must be at or
	# before it. Three times.
	R=""
	for i in 1 2 3; do
		echo base >"$WS/a.txt"
		BPFBOX_FAULT_TOUCH_AT_START="$WS/a.txt" session "$WS" --changes review -- \
			sh -c 'echo more >>a.txt'
		BEFORE=$(sig "$WS")
		"$BPFBOX" apply "$ID" >"$TMPD/out2" 2>"$TMPD/err"
		rc2=$?
		[ $rc2 = 3 ] && grep -q 'refused: a.txt: changed' "$TMPD/err" ||
			R="$R run $i: exit $rc2 $(oneline "$TMPD/err")"
		[ "$(sig "$WS")" = "$BEFORE" ] || R="$R run $i: written"
		"$BPFBOX" discard "$ID" >/dev/null 2>&1
	done
	rc=0
	verdict "an editor's write as the command starts is refused at apply, nothing written" 0 "$R"

	# A fifo and a set-uid file in a set (the seccomp filter refuses both in a session).
	session "$WS" --changes review -- sh -c 'echo s >suid; echo p >plain'
	chmod 4755 "$SETS/$ID/upper/suid"
	mkfifo "$SETS/$ID/upper/fifo"
	BEFORE=$(sig "$WS")
	"$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "apply refuses a set-uid file and a fifo, and writes nothing" 3 \
		"$(grep -q 'refused: suid: set-uid' "$TMPD/err" && grep -q 'refused: fifo:' "$TMPD/err" || echo "refusals: $(oneline "$TMPD/err")")$([ "$(sig "$WS")" = "$BEFORE" ] || echo "written")"
	"$BPFBOX" discard "$ID"

	# Apply links a file of the set into the workspace where it can (the
	# same file system, one name, no extended attribute), and copies it
	# otherwise: a file capability or any other attribute put on a file of
	# the set stays behind, two names of one file become two files.
	# a.txt, copied up, carries the overlay's origin: taken off, then linked.
	session "$WS" --changes review -- sh -c 'echo one >one; echo h >h1; ln h1 h2; echo c >capf; echo u >uattr; echo more >>a.txt'
	UP=$SETS/$ID/upper
	INO=$(stat -c %i "$UP/one")
	INO_UA=$(stat -c %i "$UP/a.txt")
	touch -d '1 hour ago' "$UP/one"
	touch "$TMPD/mark"
	XSET=$(python3 - "$UP" 2>&1 <<'PY'
import os, struct, sys
u = sys.argv[1]
os.setxattr(u + "/capf", "security.capability", struct.pack("<5I", 0x02000001, 1 << 13, 0, 0, 0))
os.setxattr(u + "/uattr", "user.bpfbox", b"x")
want = {"capf": "security.capability", "uattr": "user.bpfbox", "a.txt": "trusted.overlay.origin"}
for f, x in want.items():
    if x not in os.listxattr(u + "/" + f):
        print("the upper's %s has no %s: %s" % (f, x, os.listxattr(u + "/" + f)))
PY
)
	"$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	XA=$(python3 -c 'import os, sys; print(" ".join("%s:%s" % (f, os.listxattr(f)) for f in sys.argv[1:] if os.listxattr(f)))' \
		"$WS/capf" "$WS/uattr" "$WS/one" "$WS/h1" "$WS/a.txt")
	verdict "apply links a file of the set (its inode, one name left, the apply's mtime), a copied-up one without the overlay's origin, and copies one with a file capability, a user.* attribute or two names, without them" 0 \
		"$(echo "$XSET" | head -c 300)$([ "$(stat -c '%i %h' "$WS/one")" = "$INO 1" ] || echo "one: $(stat -c '%i %h' "$WS/one"), not inode $INO with one name")$([ "$(stat -c %i "$WS/a.txt")" = "$INO_UA" ] || echo "a.txt: not linked")$([ ! "$WS/one" -ot "$TMPD/mark" ] || echo "one: mtime $(stat -c %y "$WS/one"), the session's")$([ -z "$XA" ] || echo "attributes kept: $XA")$([ "$(stat -c %h "$WS/h1" "$WS/h2" | tr '\n' ' ')" = "1 1 " ] || echo "h1, h2 share an inode")$([ "$(cat "$WS/h1" "$WS/h2" "$WS/capf" "$WS/uattr" | tr '\n' ' ')" = "h h c u " ] || echo "contents differ")$([ ! -e "$UP" ] || echo "upper left")"
	"$BPFBOX" discard "$ID" >/dev/null 2>&1

	# The temporaries' names are refused in a set: a leftover one is
	# removed before each write, and must never be the set's own file.
	session "$WS" --changes review -- sh -c 'echo t >.bpfbox-apply-0; echo u >.bpfbox-undo-3'
	BEFORE=$(sig "$WS")
	"$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "apply refuses a path named as its temporaries, and writes nothing" 3 \
		"$(grep -q 'refused: .bpfbox-apply-0: a name apply and undo give' "$TMPD/err" && grep -q 'refused: .bpfbox-undo-3:' "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")$([ "$(sig "$WS")" = "$BEFORE" ] || echo "written")"
	"$BPFBOX" discard "$ID" >/dev/null 2>&1

	# A set-uid file of the workspace the session rewrites: apply keeps it
	# by a copy without the bit, and undo puts that copy back.
	echo s >"$WS/suidws"
	chmod 4755 "$WS/suidws"
	session "$WS" --changes review -- sh -c 'echo t >suidws'
	"$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err" && "$BPFBOX" undo "$WS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "undo of a set-uid file the session rewrote: its bytes back, not its set-uid bit" 0 \
		"$([ "$(stat -c %a "$WS/suidws")" = 755 ] && [ "$(cat "$WS/suidws")" = s ] || echo "suidws: $(stat -c %a "$WS/suidws") $(cat "$WS/suidws")")"
	"$BPFBOX" discard "$ID" >/dev/null 2>&1
	rm -f "$WS/suidws"

	# Nothing changed: nothing left behind. The set's name is gone when
	# bpfbox returns; its directories go just after, in a helper that
	# outlives bpfbox (changes.c, remove_later), mode-0 work dirs and all.
	# The same helper removes what one killed before its end left: a
	# ".ID.gone" unchanged for a minute (lib/closer.h closer_sweep); not a
	# fresh one, not another name.
	STALE=$SETS/.0123456789abcdef0123456789abcdef.gone
	FRESH=$SETS/.1123456789abcdef0123456789abcdef.gone
	mkdir -p "$STALE/upper/d" "$STALE/work/work" "$FRESH/upper" "$SETS/.0123456789abcdef.gone"
	chmod 0 "$STALE/work/work"
	touch -d '2 minutes ago' "$STALE" "$SETS/.0123456789abcdef.gone"
	session "$WS" --changes review -- cat a.txt
	NAMED=$([ -e "$SETS/$ID" ] && echo "still named $ID")
	# Its helper holds an fd of the sets' directory until it has ended.
	wait_gone 10 fd_on "$SETS"
	verdict "a session that changes nothing leaves no set" 0 \
		"$NAMED$([ -z "$(ls -A "$SETS" | grep -vx history | grep -v '^\.')" ] || echo "left: $(ls -A "$SETS")")$([ "$(ended kept)" = false ] || echo "kept: $(ended kept)")"
	verdict "its helper removes an old .ID.gone a killed helper left, not a fresh one nor another name" 0 \
		"$([ ! -e "$STALE" ] || echo "stale left")$([ -d "$FRESH" ] || echo "fresh removed")$([ -d "$SETS/.0123456789abcdef.gone" ] || echo "short name removed")"
	rm -rf "$FRESH" "$SETS/.0123456789abcdef.gone"

	# session.changes in the audit stream (embedded mode), before session.end.
	"$BPFBOX" run -q --no-daemon -w "$WS" --changes review --audit "$TMPD/audit.jsonl" \
		-- sh -c 'echo a >audited' </dev/null >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "--audit: session.changes with the set, just before session.end" 0 \
		"$(tail -n 2 "$TMPD/audit.jsonl" | head -n 1 | grep -q '"type":"session.changes".*"added":1,.*"paths":\["audited"\]' || echo "stream: $(tail -n 2 "$TMPD/audit.jsonl" | head -c 400)")"
	if [ -f "$BPFBOX_BUILD/npm/node_modules/ajv/package.json" ] && command -v node >/dev/null; then
		expect_schema "session.changes validates against the schema" \
			--schema "$ROOT/schema/events.schema.json" "$TMPD/audit.jsonl"
	else
		skip "session.changes schema: no ajv (tools/npm-deps.sh)"
	fi
	"$BPFBOX" discard "$(sed -n 's/.*"changes_id":"\([0-9a-f]*\)".*/\1/p' "$TMPD/audit.jsonl")"

	# --changes apply: applied on exit 0, kept otherwise.
	session "$WS" --changes apply -- sh -c 'echo applied >ap.txt'
	verdict "--changes apply: applied when the command exits 0" 0 \
		"$([ "$(cat "$WS/ap.txt" 2>/dev/null)" = applied ] || echo "ap.txt not there")$([ "$(ended applied)" = true ] || echo "ended: applied $(ended applied)")"
	session "$WS" --changes apply -- sh -c 'echo failed >fail.txt; exit 3'
	verdict "--changes apply: kept, not applied, when the command fails" 3 \
		"$([ ! -e "$WS/fail.txt" ] || echo "applied")$([ -d "$SETS/$ID/upper" ] || echo "set not kept")"
	"$BPFBOX" discard "$ID"

	# The disk limit counts the set's upper (the session's writes).
	session "$WS" --changes review --disk 8M --on-limit kill -- python3 -c '
import time
f = open("big", "wb")
for i in range(40):
    f.write(b"x" * (1 << 20)); f.flush(); time.sleep(0.02)'
	verdict "--disk counts what the session wrote into its change set" 123 \
		"$([ ! -e "$WS/big" ] || echo "big reached the workspace")"
	"$BPFBOX" discard "$ID"

	session "$WS" --no-namespaces --changes review -- true
	verdict "--no-namespaces --changes review: refused with one line, exit 125" 125 \
		"$(grep -q 'needs the session.s mount namespace' "$TMPD/err" && [ "$(grep -c '^bpfbox: error' "$TMPD/err")" = 1 ] || echo "stderr: $(oneline "$TMPD/err")")"

	# The sets' directory, where the session could see it, is masked.
	VIS=/var/lib/bpfbox-test-changes.$$
	BPFBOX_CHANGES_DIR=$VIS session "$WS" --changes review -- sh -c '
echo x >mine; ls "$1" 2>&1 && echo LISTED; cat "$1"/*/upper/mine 2>&1 && echo READ; true' sh "$VIS"
	verdict "the session cannot reach its upper directory" 0 \
		"$(grep -q 'LISTED\|READ' "$TMPD/out" && echo "reached: $(oneline "$TMPD/out")")$([ -f "$VIS/$ID/upper/mine" ] || echo "no set at $VIS")"
	rm -rf "$VIS"

	# kill -9 in the middle of an apply; running it again finishes it.
	PRE=$(sig "$WS")
	A0=$(cat "$WS/a.txt")
	session "$WS" --changes review -- sh -c 'mkdir many; for i in $(seq 1 200); do echo $i >many/f$i; done; echo changed >a.txt'
	SEEN=$("$BPFBOX" changes "$ID" | wc -l)
	BPFBOX_FAULT_APPLY_KILL_AFTER=50 "$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	N=$(ls "$WS/many" 2>/dev/null | wc -l)
	verdict "apply killed (SIGKILL) after 50 writes: partial, its journal there" 137 \
		"$([ "$N" -gt 0 ] && [ "$N" -lt 200 ] || echo "$N of 200 written")$([ -f "$SETS/$ID/journal" ] || echo "no journal")"
	"$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "apply again finishes it" 0 \
		"$([ "$(ls "$WS/many" | wc -l)" = 200 ] && [ "$(cat "$WS/a.txt")" = changed ] || echo "$(ls "$WS/many" | wc -l) of 200, a.txt $(cat "$WS/a.txt")")$([ ! -e "$SETS/$ID/journal" ] || echo "journal left")$([ "$SEEN" = 202 ] || echo "listed $SEEN")"
	"$BPFBOX" discard "$ID"

	# kill -9 in the middle of an undo; running it again finishes it.
	UGEN=$(ls -d "$SETS"/history/*/[0-9]* | awk -F/ '{ print $NF, $0 }' | sort -n | tail -n 1 | cut -d' ' -f2)
	BPFBOX_FAULT_APPLY_KILL_AFTER=50 "$BPFBOX" undo "$WS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	N=$(ls "$WS/many" 2>/dev/null | wc -l)
	verdict "undo killed (SIGKILL) after 50 writes: partial, its journal there" 137 \
		"$([ "$N" -gt 0 ] && [ "$N" -lt 200 ] || echo "$N of 200 left")$([ -f "$UGEN/journal" ] || echo "no journal in $UGEN")"
	"$BPFBOX" undo "$WS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "undo again finishes it" 0 \
		"$([ "$(sig "$WS")" = "$PRE" ] || echo "many: $(ls "$WS/many" 2>/dev/null | wc -l), a.txt $(cat "$WS/a.txt")")$([ ! -e "$UGEN" ] || echo "generation $UGEN left")"

	# Undo refuses a path changed after the apply, and writes nothing.
	session "$WS" --changes apply -- sh -c 'echo v1 >a.txt; echo n >u.txt'
	echo editor >"$WS/a.txt"
	BEFORE=$(sig "$WS")
	"$BPFBOX" undo "$WS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "undo refuses a path changed since the apply, and writes nothing" 3 \
		"$(grep -q 'refused: a.txt: changed since the apply' "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")$([ "$(sig "$WS")" = "$BEFORE" ] || echo "written")"
	echo v1 >"$WS/a.txt"
	"$BPFBOX" undo "$WS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "undo: the same bytes back (an edit undone by hand) is no conflict" 0 \
		"$([ "$(cat "$WS/a.txt")" = "$A0" ] && [ ! -e "$WS/u.txt" ] || echo "a.txt: $(cat "$WS/a.txt")")"

	# The history's bound (the policy's undo.generations): the oldest dropped.
	echo '{"undo": {"generations": 1}}' >"$TMPD/task.json"
	for v in 1 2; do
		session "$WS" --task "$TMPD/task.json" --changes apply -- sh -c "echo g$v >a.txt"
		[ $v = 1 ] && ID1=$("$BPFBOX" undo "$WS" --list --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["generations"][-1]["changes_id"])')
	done
	GENS=$("$BPFBOX" undo "$WS" --list --json | python3 -c '
import json, sys
h = json.load(sys.stdin)
print(len(h["generations"]), h["keep_generations"], h["bytes"] > 0)')
	verdict "undo.generations 1: the newest kept, the one before dropped, disk use counted" 0 \
		"$([ "$GENS" = "1 1 True" ] || echo "generations: $GENS")"
	"$BPFBOX" changes "$ID1" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "the set of a dropped generation goes with it (its directory, bpfbox changes exit 4)" 4 \
		"$([ -n "$ID1" ] && [ ! -e "$SETS/$ID1" ] || echo "set '$ID1' left: $(ls "$SETS" | head -3)")"
	"$BPFBOX" undo "$WS" >/dev/null 2>&1 && "$BPFBOX" undo "$WS" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "undo: back one generation, the dropped one gone (exit 4)" 4 \
		"$([ "$(cat "$WS/a.txt")" = g1 ] || echo "a.txt: $(cat "$WS/a.txt")")"

	# A chain: the second session starts on the first's set; one apply for both.
	mkws "$WS"
	session "$WS" --changes review -- sh -c 'echo one >one.txt; echo more >>a.txt'
	P=$ID
	session "$WS" --changes-from "$P" -- sh -c 'cat one.txt; echo two >two.txt; rm c.txt'
	C=$ID
	verdict "--changes-from: the second session sees the first's changes; its set holds both" 0 \
		"$([ "$(cat "$TMPD/out")" = one ] || echo "saw: $(oneline "$TMPD/out")")$([ "$("$BPFBOX" changes "$C" | tr '\n' ' ')" = "modified a.txt deleted  c.txt added    one.txt added    two.txt " ] || echo "set: $("$BPFBOX" changes "$C" | tr '\n' ' ')")$([ ! -e "$WS/one.txt" ] || echo "reached the workspace")"
	"$BPFBOX" apply "$P" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "the first set, continued, cannot be applied alone" 3 \
		"$(grep -q "continued by $C" "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")"
	"$BPFBOX" apply "$C" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "apply of the second applies both, and removes the first" 0 \
		"$([ -f "$WS/one.txt" ] && [ -f "$WS/two.txt" ] && [ ! -e "$WS/c.txt" ] && grep -q more "$WS/a.txt" || echo "workspace: $(ls "$WS" | tr '\n' ' ')")$([ ! -e "$SETS/$P" ] || echo "first set left")"

	# A set in use by a running session: apply and discard refuse it (exit 5).
	CTL=$TMPD/ctl
	mkdir -p "$CTL"
	"$BPFBOX" run -q --no-daemon -w "$WS" --rw "$CTL" --changes review --status-fd 3 -- sh -c \
		'echo x >x; echo up >"$1/up"; while [ ! -e "$1/go" ]; do sleep 0.05; done' sh "$CTL" \
		</dev/null >/dev/null 2>&1 3>"$TMPD/hst" &
	HPID=$!
	wait_file "$CTL/up" 10
	HID=$(head -n 1 "$TMPD/hst" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
	"$BPFBOX" apply "$HID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "apply of a set a session is running on: refused, exit 5" 5 \
		"$(grep -q 'in use by a running session' "$TMPD/err" || echo "stderr: $(oneline "$TMPD/err")")$([ ! -e "$WS/x" ] || echo "applied")"
	"$BPFBOX" discard "$HID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "discard of a set a session is running on: refused, exit 5" 5 \
		"$([ -d "$SETS/$HID/upper" ] || echo "set removed")"
	touch "$CTL/go"
	wait "$HPID"
	"$BPFBOX" apply "$HID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "once the session ended, apply takes it" 0 "$([ -f "$WS/x" ] || echo "x not applied")"

	# A set's start writes its manifest unflushed: after a crash during its
	# session the directory can be there with no manifest, or an empty one.
	# Discard removes such a set, unless a session holds its lock.
	"$BPFBOX" run -q --no-daemon -w "$WS" --changes review --status-fd 3 -- sh -c 'echo o >o' \
		</dev/null >/dev/null 2>&1 3>"$TMPD/ost"
	OID=$(head -n 1 "$TMPD/ost" | sed -n 's/.*"session":"\([0-9a-f]*\)".*/\1/p')
	: >"$SETS/$OID/manifest.json"
	"$BPFBOX" discard "$OID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "discard of a set whose manifest a crash emptied: removed, said" 0 \
		"$([ ! -e "$SETS/$OID" ] || echo "set left")$(grep -q 'had no readable manifest' "$TMPD/err" || echo "not said")"
	mkdir -p "$SETS/0123456789abcdef/upper" "$SETS/0123456789abcdef/work"
	# The holder waits for its lock, on the set's directory (the probe below
	# takes it for an instant).
	(exec 9<"$SETS/0123456789abcdef" && flock 9 && exec sleep 30) &
	FPID=$!
	# Held once another taker is refused.
	poll_until 5 sh -c '! flock -n "$1" true' sh "$SETS/0123456789abcdef" ||
		fail "the test's holder of the lock never took it"
	"$BPFBOX" discard 0123456789abcdef >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "discard of a set with no manifest that a session holds: refused, exit 5" 5 \
		"$([ -d "$SETS/0123456789abcdef/upper" ] || echo "set removed")"
	kill "$FPID" 2>/dev/null
	wait "$FPID" 2>/dev/null
	"$BPFBOX" discard 0123456789abcdef >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "discard of a set with no manifest: removed" 0 \
		"$([ ! -e "$SETS/0123456789abcdef" ] || echo "set left")"
	"$BPFBOX" discard fedcba9876543210 >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "discard of an id with no set: exit 4" 4 ""

	# Through a daemon: review, session.changes in its audit stream and the run's, apply.
	CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -n "$CG2" ]; then
		cleanup_extra() { :; }
		daemon_scratch changes
		mkws "$WS"
		if start_daemon "$TMPD/daudit.jsonl"; then
			"$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" --changes review --status-fd 3 \
				--audit "$TMPD/raudit.jsonl" -- sh -c 'echo d >viad.txt' \
				</dev/null >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
			rc=$?
			ID=$(sid)
			verdict "through a daemon: review keeps the workspace, the set is listed" 0 \
				"$([ ! -e "$WS/viad.txt" ] || echo "written")$([ "$("$BPFBOX" changes "$ID")" = "added    viad.txt" ] || echo "set: $("$BPFBOX" changes "$ID" 2>&1)")$(grep -q '"mode":"daemon"' "$TMPD/raudit.jsonl" || echo "not via the daemon")"
			wait_grep '"type":"session.changes"' "$TMPD/daudit.jsonl" 5
			verdict "through a daemon: session.changes before session.end, in the daemon's stream and the run's" 0 \
				"$(for f in daudit raudit; do grep "\"session\":\"$ID\"" "$TMPD/$f.jsonl" | grep -o '"type":"session\.[a-z]*"' | tail -n 2 | tr '\n' ' ' | grep -qx '"type":"session.changes" "type":"session.end" ' || echo "$f: $(grep -o '"type":"session\.[a-z]*"' "$TMPD/$f.jsonl" | tr '\n' ' ')"; done)$(grep '"type":"session.changes"' "$TMPD/daudit.jsonl" | grep -q '"added":1,.*"paths":\["viad.txt"\]' || echo "no counts")"
			"$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
			rc=$?
			verdict "through a daemon: apply" 0 "$([ "$(cat "$WS/viad.txt")" = d ] || echo "not applied")"
		else
			fail "the private daemon did not start: $(oneline "$DERR")"
		fi
	else
		skip "change sets through a daemon: no cgroup2 mount"
	fi
else
	skip "change sets as root: not root"
fi

# --- uid 65534: overlayfs in a user namespace ----------------------------------------

if nobody_ns; then
	NWS=$TMPD/nws
	NST=$TMPD/nstate
	NOUT=$TMPD/noutside
	mkdir -p "$NST" "$NOUT"
	mkws "$NWS"
	chown -R 65534:65534 "$NWS" "$NST" "$NOUT"
	BEFORE=$(sig "$NWS")
	nb() { setpriv --reuid=65534 --regid=65534 --clear-groups env -u BPFBOX_CHANGES_DIR XDG_STATE_HOME="$NST" "$@"; }
	nb "$BPFBOX" run -q --no-daemon -w "$NWS" --changes review --status-fd 3 -- sh -c "$EDITS"'
sh -c "$2"' sh "$NOUT" "$SIG" </dev/null >"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
	rc=$?
	ID=$(sid)
	SEEN=$(cat "$TMPD/out")
	verdict "uid 65534: review keeps the workspace as it was" 0 \
		"$([ "$(sig "$NWS")" = "$BEFORE" ] || echo "the workspace changed")$([ -d "$NST/bpfbox/changes/$ID/upper" ] || echo "no set in \$XDG_STATE_HOME")"
	GOT=$(nb "$BPFBOX" changes "$ID" 2>"$TMPD/err")
	rc=$?
	verdict "uid 65534: bpfbox changes lists exactly what changed (user.overlay.opaque)" 0 \
		"$([ "$GOT" = "$WANT_TEXT" ] || echo "got: $(echo "$GOT" | tr '\n' '|')")"
	INO=$(stat -c %i "$NST/bpfbox/changes/$ID/upper/n.txt")
	nb "$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "uid 65534: apply makes the workspace what the session saw (n.txt linked, not copied)" 0 \
		"$([ "$(sig "$NWS")" = "$SEEN" ] || echo "trees differ")$([ -z "$(ls -A "$NOUT")" ] || echo "written outside")$([ "$(stat -c '%i %h' "$NWS/n.txt")" = "$INO 1" ] || echo "n.txt: $(stat -c '%i %h' "$NWS/n.txt"), not inode $INO")"
	nb "$BPFBOX" discard "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "uid 65534: discard" 0 "$([ ! -e "$NST/bpfbox/changes/$ID" ] || echo "kept")"
	# The start taken in the child of a user namespace too (the editor's write).
	nb env BPFBOX_FAULT_TOUCH_AT_START="$NWS/a.txt" "$BPFBOX" run -q --no-daemon -w "$NWS" \
		--changes review --status-fd 3 -- sh -c 'echo more >>a.txt' </dev/null \
		>"$TMPD/out" 2>"$TMPD/err" 3>"$TMPD/st"
	ID=$(sid)
	nb "$BPFBOX" apply "$ID" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	verdict "uid 65534: an editor's write as the command starts is refused at apply" 3 \
		"$(grep -q 'refused: a.txt: changed' "$TMPD/err" || echo "$(oneline "$TMPD/err")")"
	nb "$BPFBOX" discard "$ID" >/dev/null 2>&1
else
	skip "change sets as uid 65534: needs root to drop to it, setpriv and user namespaces"
fi

# refused NAME WS [ENV]: a session whose change set is refused before its
# directory exists; rc 125, nothing ran, no set left. Under strace, every
# open, chmod, unlink, rmdir or rename of /work or /work/work fails
# (EACCES, injected) and is logged: once such a refusal removed "" +
# "/work", the host's /work, whole (changes.c). None may happen.
# (LeakSanitizer's exit check needs ptrace, which strace holds: off here.)
refused() {
	name=$1 ws=$2
	shift 2
	rm -f "$ws/ran"
	strace -f -qq -e signal=none -P /work -P /work/work \
		-e trace=open,openat,chmod,fchmodat,unlink,unlinkat,rmdir,rename,renameat,renameat2 \
		-e inject=all:error=EACCES -o "$TMPD/guard" \
		env ASAN_OPTIONS=detect_leaks=0 "$@" "$BPFBOX" run -q --no-daemon -w "$ws" --changes review -- touch ran \
		>"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc = 125 ] && [ ! -e "$ws/ran" ] && ! grep -v '^[0-9]* +++ exited' "$TMPD/guard" | grep -q .; then
		ok "$name: refused (125) before the set existed, nothing ran, no syscall on /work ($(tail -n 1 "$TMPD/err" | head -c 200))"
	else
		fail "$name: exit $rc: $(head -c 300 "$TMPD/err"); syscalls on /work: $(grep -v exited "$TMPD/guard" | head -3 | tr '\n' '|')"
	fi
}
if [ "$(id -u)" = 0 ] && command -v strace >/dev/null 2>&1; then
	mkws "$TMPD/ows"
	refused "the change sets' directory inside the workspace" "$TMPD/ows" BPFBOX_CHANGES_DIR="$TMPD/ows/sets"
	# An overlayfs (a home in a container, the VM harness's root) cannot
	# hold an upper layer: said before anything runs, with what to do.
	OV=$TMPD/ov
	mkdir -p "$OV/l" "$OV/u" "$OV/w" "$OV/m"
	if mount -t overlay overlay -o "lowerdir=$OV/l,upperdir=$OV/u,workdir=$OV/w" "$OV/m" 2>"$TMPD/err"; then
		refused "the change sets' directory on an overlayfs" "$TMPD/ows" BPFBOX_CHANGES_DIR="$OV/m/sets"
		grep -q "is on an overlayfs.*BPFBOX_CHANGES_DIR" "$TMPD/err" && [ -z "$(ls -A "$OV/m/sets" 2>/dev/null)" ] &&
			ok "the overlayfs refusal names the file system and what to set, and leaves no set" ||
			fail "the overlayfs refusal: $(head -c 300 "$TMPD/err"); $(ls -A "$OV/m/sets" 2>&1)"
		umount "$OV/m"
	else
		skip "the change sets' directory on an overlayfs: this host mounts no overlayfs ($(head -c 200 "$TMPD/err"))"
	fi
	# Root's overlay is made by bpfbox just after the fork (session_changes.c):
	# the kernel refusing it (ENODEV injected into its fsconfig, which only
	# bpfbox calls now) ends the run before anything ran, said in one
	# line, and the set made for it is gone.
	mkws "$TMPD/fws"
	rm -rf "$TMPD/fsets"
	strace -f -qq -e signal=none -e trace=fsconfig -e inject=fsconfig:error=ENODEV -o "$TMPD/inj" \
		env ASAN_OPTIONS=detect_leaks=0 BPFBOX_CHANGES_DIR="$TMPD/fsets" \
		"$BPFBOX" run -q --no-daemon -w "$TMPD/fws" --changes review -- touch ran >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	if [ $rc = 125 ] && [ ! -e "$TMPD/fws/ran" ] && [ -z "$(ls -A "$TMPD/fsets" 2>/dev/null)" ] &&
		[ "$(grep -c "^bpfbox: error" "$TMPD/err")" = 1 ] && grep -q "overlay.*nothing ran.*No such device" "$TMPD/err"; then
		ok "root's overlay refused by the kernel: 125 in one line, nothing ran, no set left ($(grep "^bpfbox: error" "$TMPD/err" | head -c 160))"
	else
		fail "root's overlay refused: exit $rc, ran: $([ -e "$TMPD/fws/ran" ] && echo yes || echo no), sets: $(ls -A "$TMPD/fsets" 2>&1 | head -3 | tr '\n' ' '), err: $(head -c 300 "$TMPD/err")"
	fi
	# bpfbox killed between the fork and the overlay's send (at its
	# fsconfig): the child, waiting for the overlay, sees the socket's end
	# and never runs the command, in the live workspace or anywhere; the
	# set left without a manifest is one `bpfbox discard` removes.
	mkws "$TMPD/kws"
	rm -rf "$TMPD/ksets"
	strace -f -qq -e signal=none -e trace=fsconfig -e inject=fsconfig:signal=KILL:when=1 -o "$TMPD/inj" \
		env ASAN_OPTIONS=detect_leaks=0 BPFBOX_CHANGES_DIR="$TMPD/ksets" \
		"$BPFBOX" run -q --no-daemon -w "$TMPD/kws" --changes review -- \
		sh -c "touch '$TMPD/kws/ran'; exec sleep 7$$" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	# The child (bpfbox's image until its exec, its workspace on its command
	# line) ends on its own once the socket is closed: waited for, 5 s at most.
	for _ in $(seq 50); do
		pgrep -f -- "-w $TMPD/kws " >/dev/null || break
		sleep 0.1
	done
	left=$(pgrep -f -- "sleep 7$$|-w $TMPD/kws " | tr '\n' ' ')
	kid=$(ls "$TMPD/ksets" 2>/dev/null | head -1)
	if [ $rc = 137 ] && [ ! -e "$TMPD/kws/ran" ] && [ ! -e "$TMPD/ksets/$kid/upper/ran" ] && [ -z "$left" ] &&
		[ -n "$kid" ] &&
		BPFBOX_CHANGES_DIR="$TMPD/ksets" "$BPFBOX" discard "$kid" >"$TMPD/dout" 2>&1 &&
		[ -z "$(ls -A "$TMPD/ksets")" ]; then
		ok "bpfbox killed before the overlay's send: the command never ran, nothing of the session left, its set discarded ($(head -c 120 "$TMPD/dout"))"
	else
		fail "bpfbox killed before the overlay's send: exit $rc, ran: $([ -e "$TMPD/kws/ran" ] || [ -e "$TMPD/ksets/$kid/upper/ran" ] && echo yes || echo no), left: '$left', sets: $(ls -A "$TMPD/ksets" 2>&1 | tr '\n' ' '), discard: $(head -c 200 "$TMPD/dout" 2>/dev/null)"
		[ -n "$left" ] && kill -9 $left
	fi
	# A sets' directory nothing may be made in (immutable, even for root):
	# the set's directories refused end the run in one line, nothing ran,
	# no set left.
	mkws "$TMPD/iws"
	rm -rf "$TMPD/isets" && mkdir -p "$TMPD/isets"
	if chattr +i "$TMPD/isets" 2>"$TMPD/err"; then
		BPFBOX_CHANGES_DIR="$TMPD/isets" "$BPFBOX" run -q --no-daemon -w "$TMPD/iws" --changes review \
			-- touch ran >"$TMPD/out" 2>"$TMPD/err"
		rc=$?
		chattr -i "$TMPD/isets"
		if [ $rc = 125 ] && [ ! -e "$TMPD/iws/ran" ] && [ -z "$(ls -A "$TMPD/isets")" ] &&
			[ "$(grep -c "^bpfbox: error" "$TMPD/err")" = 1 ] &&
			grep -q "cannot make the change set .*Operation not permitted; nothing ran" "$TMPD/err"; then
			ok "root's set's directories refused: 125 in one line, nothing ran, no set ($(grep "^bpfbox: error" "$TMPD/err" | head -c 160))"
		else
			fail "root's set's directories refused: exit $rc, ran: $([ -e "$TMPD/iws/ran" ] && echo yes || echo no), sets: $(ls -A "$TMPD/isets" | head -3 | tr '\n' ' '), err: $(grep -v warning "$TMPD/err" | head -c 300)"
		fi
	else
		skip "root's set's directories refused: chattr +i on $TMPD: $(head -c 200 "$TMPD/err"); the overlay's refusal above ends the run the same way"
	fi
	# ... and by whom: bpfbox's own process (the execve's), never the
	# session's child, in a session that runs.
	# After the fork, beside the child's set-up: its CMD_CREATE follows
	# bpfbox's clone3 of the child in the trace. No keeper (its overlay is
	# the next session's, made by its own process: test_changes_warm.sh).
	strace -f -qq -e signal=none -e trace=execve,fsconfig,clone3 -o "$TMPD/inj" \
		env ASAN_OPTIONS=detect_leaks=0 BPFBOX_CHANGES_DIR="$TMPD/fsets" BPFBOX_CHANGES_WARM=0 \
		"$BPFBOX" run -q --no-daemon -w "$TMPD/fws" --changes review -- touch ran >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	self=$(grep -m1 "execve(.*bpfbox" "$TMPD/inj" | cut -d' ' -f1)
	others=$(grep fsconfig "$TMPD/inj" | cut -d' ' -f1 | grep -vx "$self" | sort -u | tr '\n' ' ')
	if [ $rc = 0 ] && ls "$TMPD"/fsets/*/upper/ran >/dev/null 2>&1 && [ -n "$self" ] &&
		awk -v p="$self" '$1 == p && /clone3\(.*CLONE_NEWNS/ { c = 1 } $1 == p && /fsconfig\(.*CMD_CREATE/ && c { f = 1 } END { exit !f }' "$TMPD/inj" &&
		[ -z "$others" ]; then
		ok "root's overlay is made by bpfbox's process ($self), after its clone3 of the child, which only attaches it"
	else
		fail "root's overlay: exit $rc, bpfbox $self, fsconfig by others: '$others': $(grep fsconfig "$TMPD/inj" | head -3 | tr '\n' '|')"
	fi
else
	skip "change sets refused before their directory exists: needs root and strace (the guard on /work)"
fi


# --- every session's view ------------------------------------------------------
# The sets' directory is masked in every session's view, whatever its mode:
# a direct session granted the tree that holds it (--rw of a home, of
# ~/.local) would otherwise plant a file in a set that waits for apply, or
# rewrite its manifest (its workspace). Missing, it is made first, so that
# the session cannot put a symlink there for a later review session; a
# symlink found there is refused.
G=$TMPD/grant
GS=$G/state/sets
mkws "$TMPD/gws"
mkdir -p "$G"
BPFBOX_CHANGES_DIR=$GS session "$TMPD/gws" --changes review -- sh -c 'echo kept >k.txt'
KID=$ID
if [ "$rc" = 0 ] && [ -f "$GS/$KID/upper/k.txt" ]; then
	PRE=$(sig "$GS/$KID")
	BPFBOX_CHANGES_DIR=$GS session "$TMPD/gws" --rw "$G" -- sh -c '
ls "$1" >/dev/null 2>&1 && echo LISTED
echo planted 2>/dev/null >"$1/$2/upper/planted" && echo PLANTED
echo "{}" 2>/dev/null >"$1/$2/manifest.json" && echo MANIFEST
mv "$1" "$1.away" 2>/dev/null && echo MOVED
echo mine >"$3/mine" && echo GRANTED' sh "$GS" "$KID" "$G"
	verdict "a direct session granted the tree that holds the sets cannot list them, plant in a set, rewrite its manifest or move them" 0 \
		"$(grep -q 'LISTED\|PLANTED\|MANIFEST\|MOVED' "$TMPD/out" && echo "reached: $(oneline "$TMPD/out")")$(grep -q GRANTED "$TMPD/out" || echo "its grant was not writable: $(oneline "$TMPD/err")")$([ "$(sig "$GS/$KID")" = "$PRE" ] || echo "the set changed")"
	[ "$(BPFBOX_CHANGES_DIR=$GS "$BPFBOX" changes "$KID" 2>&1)" = "added    k.txt" ] &&
		ok "that set still lists only its own session's file" ||
		fail "that set lists: $(BPFBOX_CHANGES_DIR=$GS "$BPFBOX" changes "$KID" 2>&1 | tr '\n' '|')"
	BPFBOX_CHANGES_DIR=$GS "$BPFBOX" discard "$KID" >/dev/null 2>&1
else
	fail "a kept set to attack: exit $rc, $(oneline "$TMPD/err")"
fi
rm -rf "$GS"
BPFBOX_CHANGES_DIR=$GS session "$TMPD/gws" --rw "$G" -- sh -c '
rmdir "$1" 2>/dev/null && echo REMOVED; ln -s /tmp "$1" 2>/dev/null && echo LINKED; true' sh "$GS"
verdict "missing under the grant, the sets' directory is made first and masked: no symlink put in its place" 0 \
	"$(grep -q 'REMOVED\|LINKED' "$TMPD/out" && echo "$(oneline "$TMPD/out")")$([ -d "$GS" ] && [ ! -L "$GS" ] || echo "not a directory after: $(ls -ld "$GS" 2>&1)")"
rm -rf "$GS" "$TMPD/gws/ran"
mkdir -p "$TMPD/elsewhere"
ln -s "$TMPD/elsewhere" "$GS"
BPFBOX_CHANGES_DIR=$GS session "$TMPD/gws" --rw "$G" -- touch ran
verdict "a symlink in place of the sets' directory, under a grant: refused with one line, nothing ran" 125 \
	"$(grep -q 'is a symlink or not a directory.*BPFBOX_CHANGES_DIR' "$TMPD/err" && [ "$(grep -c '^bpfbox: error' "$TMPD/err")" = 1 ] || echo "stderr: $(oneline "$TMPD/err")")$([ ! -e "$TMPD/gws/ran" ] || echo "it ran")"
BPFBOX_CHANGES_DIR=$GS session "$TMPD/gws" --changes review -- touch ran
verdict "... and a review session makes no set through it" 125 \
	"$([ "$(grep -c '^bpfbox: error' "$TMPD/err")" = 1 ] || echo "stderr: $(oneline "$TMPD/err")")$([ -z "$(ls -A "$TMPD/elsewhere")" ] || echo "a set in the link's target")"
BPFBOX_CHANGES_DIR=$GS session "$TMPD/gws" -- touch ran
verdict "... while a session that no grant lets reach it runs" 0 \
	"$([ -e "$TMPD/gws/ran" ] || echo "it did not run: $(oneline "$TMPD/err")")"
rm -f "$GS"
# Without a mount namespace nothing masks them: said where a grant holds them, not elsewhere.
BPFBOX_CHANGES_DIR=$GS session "$TMPD/gws" --no-namespaces --rw "$G" -- true
W1=$(grep -c "not enforced.*the change sets in $GS, which a writable grant holds" "$TMPD/err")
BPFBOX_CHANGES_DIR=$GS session "$TMPD/gws" --no-namespaces -- true
W2=$(grep -c "the change sets in" "$TMPD/err")
[ "$W1" = 1 ] && [ "$W2" = 0 ] &&
	ok "--no-namespaces with a grant that holds the sets: 'not enforced' names them, once; without such a grant, not" ||
	fail "--no-namespaces: warned $W1 time(s) with the grant, $W2 without: $(oneline "$TMPD/err")"

finish
