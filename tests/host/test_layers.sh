#!/bin/sh
# tools/check-layers, the include check CI runs: clean on this tree, and it
# fails on a scratch copy given an include that points up, a cycle, or an
# exception that is no longer needed.
. "$(dirname "$0")/../lib.sh"

expect_tool layers 0 "" "this tree is clean"

# copy: a scratch copy of the tree's sources and exceptions in $TMPD/t.
copy() {
	rm -rf "$TMPD/t"
	mkdir -p "$TMPD/t/tools"
	cp -r "$ROOT/userspace" "$TMPD/t/"
	cp "$ROOT/tools/layers.allow" "$TMPD/t/tools/"
}

copy
echo '#include "../cli/cli.h"' >>"$TMPD/t/userspace/lib/util.c"
expect_tool layers 1 'lib/util -> cli/cli: points up' "lib including cli is refused, named" "$TMPD/t"

copy
printf '#include "util.h"\n' >"$TMPD/t/userspace/lib/ring.h"
echo '#include "ring.h"' >>"$TMPD/t/userspace/lib/util.h"
expect_tool layers 1 'cycle: lib/ring <-> lib/util' "a cycle of two headers is refused" "$TMPD/t"

copy
echo 'lib/util -> cli/main   # stale' >>"$TMPD/t/tools/layers.allow"
expect_tool layers 1 'no longer needed' "an exception that no longer occurs must be deleted" "$TMPD/t"

copy
mkdir "$TMPD/t/userspace/gadget"
echo 'int x;' >"$TMPD/t/userspace/gadget/x.c"
expect_tool layers 1 'userspace/gadget/: no layer' "a new folder must be given a layer" "$TMPD/t"
finish
