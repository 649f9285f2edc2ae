#!/bin/bash
# Change sets (docs/runtime.md "Change sets", "Undo") timed: what
# --changes review adds to a session against --changes direct, what a
# session that changes nothing pays, review (bpfbox changes), apply and
# undo of N changed files, and a session on a workspace of M files against
# an empty one (with the credential scan's record and without). Prints a
# Markdown table; with OUT, writes it to OUT/changes.md too (make bench,
# section 10). Root or not; not in tests.
#
#   bench/changes.sh BIN [OUT] [N] [M] [ROUNDS]   (10000, 100000, 3)
set -euo pipefail
export LC_ALL=C
BIN=$(realpath "${1:?usage: bench/changes.sh BIN [OUT] [N] [M] [ROUNDS]}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${2:-}
N=${3:-10000}
M=${4:-100000}
ROUNDS=${5:-3}
RUNS=${BENCH_CHANGES_RUNS:-60}
T=$(mktemp -d /var/tmp/bpfbox-bench-changes.XXXXXX)
trap 'rm -rf "$T"' EXIT
export BPFBOX_CHANGES_DIR=$T/sets
mkdir -p "$T/empty" "$T/ws" "$T/big" "$T/deep"
echo x >"$T/ws/a"
command -v hyperfine >/dev/null || {
	echo "bench/changes.sh: hyperfine is needed" >&2
	exit 1
}

# hf NAME CMD...: hyperfine -N, RUNS runs; "NAME median_ms min_ms max_ms" to $T/rows.
hf() {
	local name=$1
	shift
	hyperfine -N -i -w 3 -r "$RUNS" --export-json "$T/hf.json" "$*" >/dev/null 2>&1
	python3 - "$name" "$T/hf.json" >>"$T/rows" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[2]))["results"][0]["times"]
print("%s\t%.2f\t%.2f\t%.2f" % (sys.argv[1], statistics.median(r) * 1e3, min(r) * 1e3, max(r) * 1e3))
PY
}
RUN="$BIN run -q --no-daemon"
: >"$T/rows"
hf direct $RUN -w "$T/ws" -- /bin/true
hf review $RUN -w "$T/ws" --changes review -- /bin/true
hf review_one $RUN -w "$T/ws" --changes review -- /bin/touch a
# touch leaves a set each run: not the cost measured here.
rm -rf "$BPFBOX_CHANGES_DIR"

# The start apart from the end (bench/changes_start.c): interleaved
# sessions whose command prints the clock; then, as root, the floor under
# review's start: a set's directories and an overlay with nothing of
# bpfbox around them.
: >"$T/split"
: >"$T/peers"
if gcc -O2 -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -static "$ROOT/bench/changes_start.c" \
	-o "$T/ws/.stamp" 2>"$T/cc.err"; then
	"$T/ws/.stamp" split "$RUNS" "$BIN" "$T/ws" "$T/ws/.stamp" >"$T/split" ||
		echo "bench/changes.sh: the start's split failed" >&2
	rm -rf "$BPFBOX_CHANGES_DIR"
	# The same, in two parts timed by the kernel's tracepoints (root, bpftrace):
	# review taking the set its last session's keeper made, then making it
	# (BPFBOX_CHANGES_WARM=0), then each session its workspace's first after
	# `bpfbox prepare`; as root, as root without a v1 cgroup's migration
	# (its spread is milliseconds) and as uid 65534 (a user namespace).
	for v in paired:::: paired_rlimit:::--limits-via=rlimit: paired_cold::0:: \
		paired_rlimit_prepared:::--limits-via=rlimit:prepared \
		paired_user:65534::: paired_user_cold:65534:0:: paired_user_prepared:65534:::prepared; do
		IFS=: read -r label user warm args first <<<"$v"
		BENCH_PAIRED_LABEL=$label BENCH_PAIRED_USER=$user BPFBOX_CHANGES_WARM=${warm:-30} \
			BENCH_PAIRED_ARGS=${args/=/ } BENCH_PAIRED_FIRST=$first \
			"$ROOT/bench/changes_paired.sh" "$BIN" "$T/ws" "$RUNS" >>"$T/split" ||
			echo "bench/changes.sh: the paired start ($label) failed" >&2
	done
	if [ "$(id -u)" = 0 ]; then
		"$T/ws/.stamp" overlay "$RUNS" "$T/ovl" >>"$T/split" ||
			echo "bench/changes.sh: the overlay's floor failed" >&2
	fi
	# The peers' way (issue 33 item 7), as root: a minimal launcher whose
	# workspace is bound (the floor of any sandbox) or overlaid with a fresh
	# upper each run (sandlock's overlay); bwrap's own --overlay where this
	# bwrap has it (0.10 and later).
	if [ "$(id -u)" = 0 ]; then
		TMPDIR=$T hf peer_bind "$T/ws/.stamp" launch bind "$T/ws" /bin/true
		TMPDIR=$T hf peer_overlay "$T/ws/.stamp" launch overlay "$T/ws" /bin/true
	fi
	if command -v bwrap >/dev/null && bwrap --help 2>&1 | grep -q -- '--overlay '; then
		mkdir -p "$T/bw/u" "$T/bw/w"
		hf bwrap_bind bwrap --unshare-all --ro-bind / / --bind "$T/ws" "$T/ws" /bin/true
		hf bwrap_overlay bwrap --unshare-all --ro-bind / / --overlay-src "$T/ws" \
			--overlay "$T/bw/u" "$T/bw/w" "$T/ws" /bin/true
	else
		echo "bwrap_none	$(bwrap --version 2>/dev/null || echo none)" >>"$T/peers"
	fi
else
	echo "bench/changes.sh: bench/changes_start.c did not build: $(head -1 "$T/cc.err")" >&2
fi

# A workspace of M files against an empty one (review, nothing changed).
python3 - "$T/big" "$M" <<'PY'
import os, sys
root, m = sys.argv[1], int(sys.argv[2])
for d in range(m // 1000 + 1):
    os.makedirs("%s/d%d" % (root, d), exist_ok=True)
for i in range(m):
    with open("%s/d%d/f%d" % (root, i // 1000, i), "w") as f:
        f.write("x")
PY
# The same number of files ten to a directory (node_modules' shape): what
# the scan's record still costs is a stat a directory.
python3 - "$T/deep" "$M" <<'PY'
import os, sys
root, m = sys.argv[1], int(sys.argv[2])
for i in range(m):
    d = "%s/n%d/m%d" % (root, i // 1000, (i // 10) % 100)
    if i % 10 == 0:
        os.makedirs(d, exist_ok=True)
    with open("%s/f%d" % (d, i), "w") as f:
        f.write("x")
PY
# The scan's record trusts a directory whose ctime is a second old (cred_record.h).
sleep 1.1
hf empty_ws $RUN -w "$T/empty" --changes review -- /bin/true
hf big_ws $RUN -w "$T/big" --changes review -- /bin/true
hf empty_direct $RUN -w "$T/empty" -- /bin/true
hf big_direct $RUN -w "$T/big" -- /bin/true
hf big_direct_norecord env BPFBOX_SCAN_RECORD=0 $RUN -w "$T/big" -- /bin/true
hf deep_direct $RUN -w "$T/deep" -- /bin/true
hf deep_direct_norecord env BPFBOX_SCAN_RECORD=0 $RUN -w "$T/deep" -- /bin/true

# Review, apply and undo of N changed files (ms, each timed once a round),
# in DIR (its sets in DIR/sets), rows named PREFIX-review etc.
ms() { date +%s%N; }
nfiles() {
	local dir=$1 pre=$2 r a b c d e f id
	export BPFBOX_CHANGES_DIR=$dir/sets
	for r in $(seq 1 "$ROUNDS"); do
		rm -rf "$dir/nws" && mkdir -p "$dir/nws"
		$RUN -w "$dir/nws" --changes review --status-fd 3 -- sh -c \
			'mkdir d; i=0; while [ $i -lt '"$N"' ]; do echo $i >d/f$i; i=$((i + 1)); done' \
			</dev/null >/dev/null 2>&1 3>"$T/st"
		id=$(sed -n 's/.*"type":"ended".*"session":"\([0-9a-f]*\)".*/\1/p' "$T/st")
		a=$(ms)
		"$BIN" changes "$id" --json >/dev/null
		b=$(ms)
		"$BIN" apply "$id" >/dev/null
		c=$(ms)
		"$BIN" undo "$dir/nws" >/dev/null
		d=$(ms)
		[ "$(ls "$dir/nws" | wc -l)" = 0 ] || echo "bench/changes.sh: undo left files" >&2
		# The floor on this file system: the same files copied by cp -r.
		$RUN -w "$dir/nws" --changes review --status-fd 3 -- sh -c \
			'mkdir d; i=0; while [ $i -lt '"$N"' ]; do echo $i >d/f$i; i=$((i + 1)); done' \
			</dev/null >/dev/null 2>&1 3>"$T/st"
		id=$(sed -n 's/.*"type":"ended".*"session":"\([0-9a-f]*\)".*/\1/p' "$T/st")
		e=$(ms)
		cp -r "$BPFBOX_CHANGES_DIR/$id/upper/d" "$dir/cpd"
		f=$(ms)
		rm -rf "$dir/cpd"
		"$BIN" discard "$id"
		printf '%s-review\t%s\n%s-apply\t%s\n%s-undo\t%s\n%s-cp\t%s\n' "$pre" $(((b - a) / 1000000)) \
			"$pre" $(((c - b) / 1000000)) "$pre" $(((d - c) / 1000000)) "$pre" $(((f - e) / 1000000)) >>"$T/nrows"
		# N files of the workspace (on the disk since: synced) modified by a session.
		rm -rf "$dir/mws" && mkdir -p "$dir/mws/d"
		python3 -c 'import sys
for i in range(int(sys.argv[2])):
    open("%s/d/f%d" % (sys.argv[1], i), "w").write("%d\n" % i)' "$dir/mws" "$N"
		sync -f "$dir/mws"
		$RUN -w "$dir/mws" --changes review --status-fd 3 -- sh -c \
			'i=0; while [ $i -lt '"$N"' ]; do echo x >>d/f$i; i=$((i + 1)); done' \
			</dev/null >/dev/null 2>&1 3>"$T/st"
		id=$(sed -n 's/.*"type":"ended".*"session":"\([0-9a-f]*\)".*/\1/p' "$T/st")
		a=$(ms)
		"$BIN" apply "$id" >/dev/null
		b=$(ms)
		"$BIN" undo "$dir/mws" >/dev/null
		c=$(ms)
		[ "$(cat "$dir/mws/d/f7")" = 7 ] || echo "bench/changes.sh: undo did not restore d/f7" >&2
		"$BIN" discard "$id" 2>/dev/null
		printf '%s-mapply\t%s\n%s-mundo\t%s\n' "$pre" $(((b - a) / 1000000)) "$pre" $(((c - b) / 1000000)) >>"$T/nrows"
	done
}
: >"$T/nrows"
nfiles "$T" disk
# The same on a tmpfs (root): what the file system's own create costs is
# apart from bpfbox's (a virtual disk here creates a file in 0.3 to 1 ms).
if [ "$(id -u)" = 0 ] && mkdir -p "$T/tmpfs" && mount -t tmpfs -o size=1g bpfbox-bench "$T/tmpfs"; then
	trap 'umount "$T/tmpfs" 2>/dev/null; rm -rf "$T"' EXIT
	# No overlay kept ready there: its keeper would hold the tmpfs busy
	# for its 30 s (docs/runtime.md), and apply and undo do not use it.
	BPFBOX_CHANGES_WARM=0 nfiles "$T/tmpfs" tmpfs
	# The helpers that free what undo and discard took away (10 s at most).
	for _ in $(seq 100); do
		umount "$T/tmpfs" 2>/dev/null && break
		sleep 0.1
	done
	if mountpoint -q "$T/tmpfs"; then
		echo "bench/changes.sh: $T/tmpfs still busy after 10 s: detached (umount -l)" >&2
		umount -l "$T/tmpfs"
	fi
fi

python3 - "$T/rows" "$T/nrows" "$N" "$M" "$RUNS" "$ROUNDS" "$T/split" "$T/peers" >"$T/table" <<'PY'
import statistics, sys
split = {l.split("\t")[0]: [float(x) for x in l.split("\t")[1:]] for l in open(sys.argv[7]) if l.strip()}
rows = {l.split("\t")[0]: [float(x) for x in l.split("\t")[1:]] for l in open(sys.argv[1])}
n, m, runs, rounds = sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
nr = {}
for l in open(sys.argv[2]):
    k, v = l.split("\t")
    nr.setdefault(k, []).append(int(v))
d = rows["direct"][0]
print("| what | median ms | min ms | max ms | × direct |")
print("|---|---:|---:|---:|---:|")
def row(label, k, base=d):
    med, lo, hi = rows[k]
    print("| %s | %.2f | %.2f | %.2f | %.2f× |" % (label, med, lo, hi, med / base))
row("`--changes direct`, `/bin/true`", "direct")
row("`--changes review`, `/bin/true` (nothing changed: the set made and removed)", "review")
row("`--changes review`, `touch a` (one file changed: scanned, kept)", "review_one")
row("`--changes review`, empty workspace", "empty_ws")
row("`--changes review`, workspace of %d files" % m, "big_ws")
row("`--changes direct`, empty workspace", "empty_direct")
row("`--changes direct`, workspace of %d files" % m, "big_direct")
row("`--changes direct`, workspace of %d files, the scan's record off (`BPFBOX_SCAN_RECORD=0`)" % m, "big_direct_norecord")
row("`--changes direct`, workspace of %d files ten to a directory (%d directories)" % (m, m // 10 + m // 1000), "deep_direct")
row("`--changes direct`, the same, the scan's record off" , "deep_direct_norecord")
for k, label in (("peer_bind", "minimal launcher, the workspace bound (`changes_start launch bind`)"),
                 ("peer_overlay", "minimal launcher, an overlay with a fresh upper each run (sandlock's way)"),
                 ("bwrap_bind", "bwrap, the workspace bound"),
                 ("bwrap_overlay", "bwrap `--overlay` on the workspace")):
    if k in rows:
        row(label, k)
print()
print("| %s changed files (added by a session; then as many of the workspace's own, modified) | median ms | min ms | max ms |" % n)
print("|---|---:|---:|---:|")
for fs, where in (("disk", "%s's file system" % "/var/tmp"), ("tmpfs", "a tmpfs")):
    for k, what in (("review", "`bpfbox changes ID --json`"), ("apply", "`bpfbox apply ID`"), ("undo", "`bpfbox undo WS`"), ("cp", "`cp -r` of the same files (the floor)"),
                    ("mapply", "`bpfbox apply ID`, %s files of the workspace modified" % n), ("mundo", "`bpfbox undo WS` of that")):
        v = nr.get(fs + "-" + k)
        if v:
            print("| %s, on %s | %d | %d | %d |" % (what, where, statistics.median(v), min(v), max(v)))
if "direct" in split and "review" in split:
    d0, r0 = split["direct"], split["review"]
    print()
    print("| one session of the stamp, %s interleaved rounds | direct µs | review µs | review − direct µs |" % runs)
    print("|---|---:|---:|---:|")
    print("| to the command's start, median | %.0f | %.0f | %+.0f |" % (d0[0], r0[0], r0[0] - d0[0]))
    print("| to the command's start, first quartile | %.0f | %.0f | %+.0f |" % (d0[1], r0[1], r0[1] - d0[1]))
    print("| after it (to bpfbox's exit), median | %.0f | %.0f | %+.0f |" % (d0[2], r0[2], r0[2] - d0[2]))
    print("| after it, first quartile | %.0f | %.0f | %+.0f |" % (d0[3], r0[3], r0[3] - d0[3]))
    if "review-direct" in split:
        p = split["review-direct"]
        print("| the same round's review − direct, to the start: median (quartiles) | | | %+.0f (%+.0f, %+.0f) |" % (p[0], p[1], p[2]))
        print("| the same round's review − direct, after it: median (quartiles) | | | %+.0f (%+.0f, %+.0f) |" % (p[3], p[4], p[5]))
cols = [(k, h) for k, h in (("paired", "root, kept overlay"),
                             ("paired_rlimit", "root, kept, --limits-via rlimit"), ("paired_cold", "root, made"),
                             ("paired_rlimit_prepared", "root, rlimit, first after `bpfbox prepare`"),
                             ("paired_user", "uid 65534, kept"), ("paired_user_cold", "uid 65534, made"),
                             ("paired_user_prepared", "uid 65534, first after `bpfbox prepare`"))
        if k in split]
if cols:
    print()
    print("| review − direct, %d rounds paired (tracepoints: bench/changes_paired.sh), median µs | %s |" % (
        split[cols[0][0]][0], " | ".join(h for _, h in cols)))
    print("|---|" + "---:|" * len(cols))
    def prow(what, f):
        print("| %s | %s |" % (what, " | ".join(f(split[k]) for k, _ in cols)))
    prow("bpfbox's exec to its fork of the session (the set taken)", lambda v: "%+.0f" % v[1])
    prow("that fork to the command's exec (the session's set-up, the overlay beside it)", lambda v: "%+.0f" % v[2])
    prow("both (quartiles)", lambda v: "%+.0f (%+.0f, %+.0f)" % (v[3], v[4], v[5]))
    prow("the command's exit to bpfbox's (quartiles)", lambda v: "%+.0f (%+.0f, %+.0f)" % (v[6], v[7], v[8]))
if "overlay" in split:
    print()
    print("| the floor: no bpfbox, %s times | median µs | first quartile µs |" % runs)
    print("|---|---:|---:|")
    for k, what in (("dirs", "a set's directory, upper and work made (3 `mkdir`)"),
                    ("overlay", "an overlay of them made, bpfbox's options (`fsopen` to `fsmount`)"),
                    ("teardown", "its detached mount closed (the overlay torn down)")):
        print("| %s | %.0f | %.0f |" % (what, split[k][0], split[k][1]))
print()
for a, b, who in (("peer_overlay", "peer_bind", "a minimal launcher"), ("bwrap_overlay", "bwrap_bind", "bwrap")):
    if a in rows and b in rows:
        print("An overlay added by %s: %+.2f ms (median %.2f against %.2f)." % (who, rows[a][0] - rows[b][0], rows[a][0], rows[b][0]))
for l in open(sys.argv[8]):
    print("bwrap here (%s) has no `--overlay` (0.10 and later): not measured." % l.split("\t")[1].strip())
print("Added by review to a session that changes nothing: %.2f ms (median %.2f against %.2f); "
      "a workspace of %d files against an empty one: %.2f× with review, %.2f× direct "
      "(%.2f× with the scan's record off); ten files to a directory: %.2f×, %.2f× with the record off." % (
          rows["review"][0] - d, rows["review"][0], d, m, rows["big_ws"][0] / rows["empty_ws"][0],
          rows["big_direct"][0] / rows["empty_direct"][0],
          rows["big_direct_norecord"][0] / rows["empty_direct"][0],
          rows["deep_direct"][0] / rows["empty_direct"][0],
          rows["deep_direct_norecord"][0] / rows["empty_direct"][0]))
PY
cat "$T/table"
echo
echo "($(date -u '+%F %H:%M UTC'), $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), hyperfine $RUNS runs, $ROUNDS rounds; bench/changes.sh $BIN)"
[ -z "$OUT" ] || cp "$T/table" "$OUT/changes.md"
