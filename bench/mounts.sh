#!/bin/bash
# Startup against bwrap with the host's mount table as it is and with 300
# more mounts (issue 31 item 9): bpfbox builds its view from the host's
# tree, so its cost must not grow with the number of mounts the host has.
#
#   bench/mounts.sh [BUILD]     (root; prints a Markdown table)
#
# Both sandboxes run /bin/true on the same workspace: `bpfbox run -w WS`
# (mount, PID, IPC namespaces, Landlock, seccomp) and `bwrap --unshare-all
# --ro-bind / / --bind WS WS --dev /dev --proc /proc --tmpfs /tmp`. The 300
# extra mounts are tmpfs mounts made in a private mount namespace of this
# script (unshare -m), so the host's own table is never touched; both
# sandboxes run inside it. hyperfine -N, interleaved rounds, medians.
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
BIN=$(cd "$BUILD" && pwd)/bin/bpfbox
RUNS=${MOUNTS_RUNS:-100}
ROUNDS=${MOUNTS_ROUNDS:-3}

for p in hyperfine bwrap; do
	command -v "$p" >/dev/null || {
		echo "bench/mounts.sh: $p is missing; make bench installs it (bench/run.sh deps)" >&2
		exit 1
	}
done
[ "$(id -u)" = 0 ] || {
	echo "bench/mounts.sh: needs root (unshare -m for the extra mounts)" >&2
	exit 1
}
TMP=$(mktemp -d /tmp/bpfbox-mounts.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
WS=$TMP/ws
mkdir -p "$WS" "$TMP/m"

# One round: the median of RUNS of each command, in ms, one line each.
round() {
	hyperfine -N --style none --warmup 5 --runs "$RUNS" --export-json "$TMP/r.json" \
		"$BIN run -q -w $WS -- /bin/true" \
		"bwrap --unshare-all --ro-bind / / --bind $WS $WS --dev /dev --proc /proc --tmpfs /tmp /bin/true" \
		>/dev/null 2>&1
	python3 -c 'import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("%.3f" % (r["median"] * 1000))' "$TMP/r.json"
}

# measure N: ROUNDS rounds with N extra mounts; "bpfbox bwrap" medians of medians.
measure() {
	local n=$1
	export -f round
	export BIN WS RUNS TMP
	unshare -m --propagation private bash -c '
		for i in $(seq 1 '"$n"'); do
			mkdir -p "$TMP/m/$i" && mount -t tmpfs -o size=64k none "$TMP/m/$i"
		done
		echo "# $(wc -l </proc/self/mountinfo) mounts" >&2
		for r in $(seq 1 '"$ROUNDS"'); do round; done' | python3 -c 'import statistics, sys
v = [float(l) for l in sys.stdin]
print("%.3f %.3f" % (statistics.median(v[0::2]), statistics.median(v[1::2])))'
}

read -r b0 w0 < <(measure 0)
read -r b3 w3 < <(measure 300)
echo "| extra host mounts | bpfbox run -w WS (ms) | bwrap (ms) | bpfbox / bwrap |"
echo "|---|---|---|---|"
awk -v b="$b0" -v w="$w0" 'BEGIN { printf "| 0 | %.2f | %.2f | %.2f |\n", b, w, b / w }'
awk -v b="$b3" -v w="$w3" 'BEGIN { printf "| 300 | %.2f | %.2f | %.2f |\n", b, w, b / w }'
awk -v b0="$b0" -v b3="$b3" -v w0="$w0" -v w3="$w3" \
	'BEGIN { printf "\n300 more mounts add %.2f ms to bpfbox and %.2f ms to bwrap.\n", b3 - b0, w3 - w0 }'
echo "($(date -u +%F), $(uname -r), $(nproc) CPUs, bwrap $(bwrap --version | awk '{print $2}'), $RUNS runs x $ROUNDS rounds)"
