#!/bin/sh
# tools/check-lengths, the length check CI runs: clean on this tree, and it
# fails on a scratch tree given a function over 80 lines or a file over 600
# without a written reason, or an exception that is no longer needed.
. "$(dirname "$0")/../lib.sh"

expect_tool lengths 0 "" "this tree is clean"

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

copy
long_fn grown >>"$TMPD/t/userspace/lib/util.c"
expect_tool lengths 1 'userspace/lib/util.c:[0-9]*: grown\(\) is 91 lines' "a function of 91 lines is refused, named" "$TMPD/t"

copy
long_fn table "/* long: one case per event type */" >>"$TMPD/t/userspace/lib/util.c"
expect_tool lengths 0 "" "a long function with its reason above it passes" "$TMPD/t"

copy
long_fn flat "/* The keys, one case each: long (91 lines) but flat. */" >>"$TMPD/t/userspace/lib/util.c"
expect_tool lengths 0 "" "a reason written as 'long (N lines)' passes too" "$TMPD/t"

copy
i=0
while [ $i -lt 601 ]; do
	echo "/* line */"
	i=$((i + 1))
done >>"$TMPD/t/userspace/lib/names.c"
expect_tool lengths 1 'userspace/lib/names.c: [0-9]* lines \(over 600\)' "a file over 600 lines is refused, named" "$TMPD/t"

copy
echo 'userspace/lib/util.c:rm_tree_gone   # stale' >>"$TMPD/t/tools/lengths.allow"
expect_tool lengths 1 'no longer needed' "an exception that no longer occurs must be deleted" "$TMPD/t"
finish
