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

copy() {
	rm -rf "$TMPD/t"
	mkdir -p "$TMPD/t/tools"
	cp -r "$ROOT/userspace" "$TMPD/t/"
	cp "$ROOT/tools/layers.allow" "$TMPD/t/tools/"
}

copy
echo '#include "../cli/cli.h"' >>"$TMPD/t/userspace/lib/util.c"
"$ROOT/tools/check-layers" "$TMPD/t" >"$TMPD/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q 'lib/util -> cli/cli: points up' "$TMPD/out"; then
	ok "layers: lib including cli is refused, named"
else
	fail "layers: upward include: exit $rc: $(cat "$TMPD/out")"
fi

copy
printf '#include "util.h"\n' >"$TMPD/t/userspace/lib/ring.h"
echo '#include "ring.h"' >>"$TMPD/t/userspace/lib/util.h"
"$ROOT/tools/check-layers" "$TMPD/t" >"$TMPD/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q 'cycle: lib/ring <-> lib/util' "$TMPD/out"; then
	ok "layers: a cycle of two headers is refused"
else
	fail "layers: cycle: exit $rc: $(cat "$TMPD/out")"
fi

copy
echo 'lib/util -> cli/main   # stale' >>"$TMPD/t/tools/layers.allow"
"$ROOT/tools/check-layers" "$TMPD/t" >"$TMPD/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q 'no longer needed' "$TMPD/out"; then
	ok "layers: an exception that no longer occurs must be deleted"
else
	fail "layers: stale exception: exit $rc: $(cat "$TMPD/out")"
fi

copy
mkdir "$TMPD/t/userspace/gadget"
echo 'int x;' >"$TMPD/t/userspace/gadget/x.c"
"$ROOT/tools/check-layers" "$TMPD/t" >"$TMPD/out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q 'userspace/gadget/: no layer' "$TMPD/out"; then
	ok "layers: a new folder must be given a layer"
else
	fail "layers: new folder: exit $rc: $(cat "$TMPD/out")"
fi
finish
