#!/bin/bash
# The real-project corpus (tests/host/test_projects.sh, issue 31) timed:
# each project's command bare and under `bpfbox run`, from fresh copies,
# ROUNDS times; prints a Markdown table of the medians and their ratio.
#
#   bench/projects.sh [BUILD]     (BENCH_PROJECT_ROUNDS, default 3)
#
# The corpus itself asserts that each project passes in both; a round
# whose project failed is left out of its row (and said).
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
ROUNDS=${BENCH_PROJECT_ROUNDS:-3}
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

for r in $(seq 1 "$ROUNDS"); do
	BPFBOX="$BUILD/bin/bpfbox" BPFBOX_BUILD="$BUILD" BPFBOX_TREE_FILES=${BPFBOX_TREE_FILES:-100000} sh "$ROOT/tests/host/test_projects.sh" \
		>>"$OUT" 2>&1 || true
done
grep -E '^FAIL' "$OUT" | sed 's/^/# /' >&2 || true
echo "| project | bare (ms) | bpfbox run (ms) | ratio |"
echo "|---|---|---|---|"
python3 - "$OUT" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"# (\w+): bare (\d+) ms, bpfbox run (\d+) ms", line)
    if m:
        rows.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3))))
for name, v in rows.items():
    b = statistics.median(x for x, _ in v)
    s = statistics.median(y for _, y in v)
    print("| %s | %d | %d | %.2f |" % (name, b, s, s / b if b else 0))
PY
echo
echo "($(date -u +%F), $(uname -r), $(nproc) CPUs, $ROUNDS rounds, bench/projects.sh)"
