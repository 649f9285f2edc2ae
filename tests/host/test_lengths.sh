#!/bin/sh
# tools/check-lengths, the length check CI runs: clean on this tree, and it
# fails on a scratch tree given a function over 80 lines or a file over 600
# without a written reason, or an exception that is no longer needed.
. "$(dirname "$0")/../lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if "$ROOT/tools/check-lengths" >"$TMPD/out" 2>&1; then
	ok "lengths: this tree is clean ($(tail -1 "$TMPD/out"))"
else
	fail "lengths: this tree: $(cat "$TMPD/out")"
fi

# A scratch tree of its own: two small files and an empty exception list.
copy() {
	rm -rf "$TMPD/t"
	mkdir -p "$TMPD/t/tools" "$TMPD/t/userspace/lib"
	printf 'int one(void)\n{\n\treturn 1;\n}\n' >"$TMPD/t/userspace/lib/util.c"
	printf 'int two(void)\n{\n\treturn 2;\n}\n' >"$TMPD/t/userspace/lib/names.c"
	echo "# exceptions" >"$TMPD/t/tools/lengths.allow"
}

# long_fn NAME [COMMENT]: a function of 91 lines, COMMENT on the line above.
long_fn() {
	[ -n "$2" ] && echo "$2"
	echo "int $1(void)"
	echo "{"
	i=0
	while [ $i -lt 87 ]; do
		echo "	(void)0;"
		i=$((i + 1))
	done
	echo "	return 0;"
	echo "}"
}

# expect RC PATTERN NAME: check-lengths on the scratch copy exits RC, its
# output has PATTERN (none for ""), and the check is reported as NAME.
expect() {
	"$ROOT/tools/check-lengths" "$TMPD/t" >"$TMPD/out" 2>&1
	rc=$?
	if [ $rc = "$1" ] && { [ -z "$2" ] || grep -q "$2" "$TMPD/out"; }; then
		ok "lengths: $3"
	else
		fail "lengths: $3: exit $rc: $(cat "$TMPD/out")"
	fi
}

copy
long_fn grown >>"$TMPD/t/userspace/lib/util.c"
expect 1 'userspace/lib/util.c:[0-9]*: grown() is 91 lines' "a function of 91 lines is refused, named"

copy
long_fn table "/* long: one case per event type */" >>"$TMPD/t/userspace/lib/util.c"
expect 0 "" "a long function with its reason above it passes"

copy
long_fn flat "/* The keys, one case each: long (91 lines) but flat. */" >>"$TMPD/t/userspace/lib/util.c"
expect 0 "" "a reason written as 'long (N lines)' passes too"

copy
i=0
while [ $i -lt 601 ]; do
	echo "/* line */"
	i=$((i + 1))
done >>"$TMPD/t/userspace/lib/names.c"
expect 1 'userspace/lib/names.c: [0-9]* lines (over 600)' "a file over 600 lines is refused, named"

copy
echo 'userspace/lib/util.c:rm_tree_gone   # stale' >>"$TMPD/t/tools/lengths.allow"
expect 1 'no longer needed' "an exception that no longer occurs must be deleted"
finish
