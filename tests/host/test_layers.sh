#!/bin/sh
# tools/check-layers, the include check CI runs: clean on this tree, and it
# fails on a scratch copy given an include that points up, a cycle, or an
# exception that is no longer needed.
. "$(dirname "$0")/../lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if "$ROOT/tools/check-layers" >"$TMPD/out" 2>&1; then
	ok "layers: this tree is clean ($(tail -1 "$TMPD/out"))"
else
	fail "layers: this tree: $(cat "$TMPD/out")"
fi

# copy: a scratch copy of the tree's sources and exceptions in $TMPD/t.
copy() {
	rm -rf "$TMPD/t"
	mkdir -p "$TMPD/t/tools"
	cp -r "$ROOT/userspace" "$TMPD/t/"
	cp "$ROOT/tools/layers.allow" "$TMPD/t/tools/"
}

# refused NAME ERE: the check on the (changed) copy exits 1 and says ERE.
refused() {
	"$ROOT/tools/check-layers" "$TMPD/t" >"$TMPD/out" 2>&1
	rc=$?
	if [ $rc = 1 ] && grep -Eq -- "$2" "$TMPD/out"; then
		ok "layers: $1"
	else
		fail "layers: $1: exit $rc, want 1 and '$2': $(cat "$TMPD/out")"
	fi
}

copy
echo '#include "../cli/cli.h"' >>"$TMPD/t/userspace/lib/util.c"
refused "lib including cli is refused, named" 'lib/util -> cli/cli: points up'

copy
printf '#include "util.h"\n' >"$TMPD/t/userspace/lib/ring.h"
echo '#include "ring.h"' >>"$TMPD/t/userspace/lib/util.h"
refused "a cycle of two headers is refused" 'cycle: lib/ring <-> lib/util'

copy
echo 'lib/util -> cli/main   # stale' >>"$TMPD/t/tools/layers.allow"
refused "an exception that no longer occurs must be deleted" 'no longer needed'

copy
mkdir "$TMPD/t/userspace/gadget"
echo 'int x;' >"$TMPD/t/userspace/gadget/x.c"
refused "a new folder must be given a layer" 'userspace/gadget/: no layer'
finish
