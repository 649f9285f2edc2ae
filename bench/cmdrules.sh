#!/bin/bash
# Command rules (docs/config.md): what checking every exec costs, per exec.
#
#   bench/cmdrules.sh BIN OUTDIR EXECS
#
# One embedded session (--audit-mode off: only decisions) per case runs
# EXECS execs of /bin/true from a shell loop, then waits on a FIFO while
# this script reads the kernel's own counters of bpf/cmd.bpf.c's program
# (kernel.bpf_stats_enabled=1: run_time_ns / EXECS = ns per exec in the
# program; the host's other execs, which return at the session lookup,
# are in the sum too, so it is an upper bound) and the loop's wall time per exec (fork + exec + wait, measured
# inside the session). Cases:
#   none      the operator's config empties deny_commands: no rules, no
#             program loaded (its columns are 0)
#   defaults  the 26 default patterns (every pattern searched, none found)
#   max       64 rules: the default patterns, exe and argv rules that miss
#             up to 64
#   longargv  the defaults against a 4000-byte argument (the scan bound)
#   adverse   the defaults against 4000 bytes of "rm -r" (a pair that
#             starts patterns at every fifth byte: the worst for the filter)
# Root only. Writes OUTDIR/cmdrules.tsv, one row per case:
#   CASE PROG_NS_PER_EXEC RUN_CNT WALL_US_PER_EXEC
# and OUTDIR/cmdrules.why when it could not run.
set -uo pipefail
export LC_ALL=C

BIN=$1 OUT=$2 EXECS=${3:-2000}
TSV=$OUT/cmdrules.tsv
WHY=$OUT/cmdrules.why
mkdir -p "$OUT"
: >"$TSV"
rm -f "$WHY"
why() {
	echo "$*" >"$WHY"
	exit 0
}
[ "$(id -u)" = 0 ] || why "needs root (the BPF agent)"
command -v bpftool >/dev/null || why "no bpftool"
T=$(mktemp -d /tmp/bpfbox-bcmd.XXXXXX)
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
	rm -rf "$T"
}
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1 || why "cannot enable kernel.bpf_stats_enabled"
mkdir -p "$T/ws"

echo '{ "sandbox": { "restrictions": { "deny_commands": [] } } }' >"$T/none.json"
echo '{}' >"$T/defaults.json"
NDEF=$("$BIN" policy check -w "$T/ws" 2>/dev/null |
	python3 -c 'import json, sys; print(len(json.load(sys.stdin).get("deny_commands", [])))') ||
	why "bpfbox policy check failed"
{
	printf '{ "sandbox": { "extra": { "commands": ['
	for i in $(seq 1 $((64 - NDEF))); do
		[ "$i" = 1 ] || printf ','
		if [ $((i % 2)) = 0 ]; then
			printf '{ "exe": "tool%d", "action": "deny" }' "$i"
		else
			printf '{ "exe": "/opt/t%d/*", "argv": "--flag-%d", "action": "ask" }' "$i" "$i"
		fi
	done
	printf '] } } }\n'
} >"$T/max.json"
LONG=$(head -c 4000 /dev/zero | tr '\0' x)
ADV=$(for i in $(seq 800); do printf 'rm -r'; done)

# The ids of the loaded cmd_exec programs, one a line.
cmd_progs() {
	bpftool prog show name cmd_exec -j 2>/dev/null | python3 -c 'import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    d = []
for p in d if isinstance(d, list) else [d]:
    print(p["id"])'
}

# run CASE CONFIG ARG: one session; prints the row.
run() {
	local name=$1 cfg=$2 arg=$3 pid prog wall before i=0
	rm -f "$T/ws/go" "$T/ws/wall"
	# Only a program this session loaded counts (other runs on the host may load theirs).
	before=$(cmd_progs | tr '\n' ' ')
	mkfifo "$T/ws/go"
	"$BIN" run -q --no-daemon --audit /dev/null --audit-mode off --config "$cfg" \
		-w "$T/ws" --timeout 600 -- sh -c '
		n=$1 a=$2 i=0
		s=$(date +%s%N)
		while [ $i -lt "$n" ]; do /bin/true "$a"; i=$((i + 1)); done
		e=$(date +%s%N)
		echo $(((e - s) / n / 1000)) >wall.tmp && mv wall.tmp wall
		read x <go' sh "$EXECS" "$arg" >/dev/null 2>"$T/err" &
	pid=$!
	while [ ! -s "$T/ws/wall" ] && [ $i -lt 6000 ]; do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	prog=$(bpftool prog show name cmd_exec -j 2>/dev/null |
		python3 -c 'import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    d = []
# New since the session started, and it saw at least the execs of the session.
d = [p for p in (d if isinstance(d, list) else [d])
     if str(p["id"]) not in sys.argv[2].split() and p.get("run_cnt", 0) >= int(sys.argv[1])]
if not d:
    print("0 0")
    sys.exit()
p = max(d, key=lambda p: p["id"])
print("%.0f %d" % (p.get("run_time_ns", 0) / int(sys.argv[1]), p.get("run_cnt", 0)))' "$EXECS" "$before")
	wall=$(cat "$T/ws/wall" 2>/dev/null)
	# A session that died never opens the FIFO: do not wait for it.
	kill -0 "$pid" 2>/dev/null && timeout 10 sh -c 'echo >"$1"' sh "$T/ws/go"
	wait "$pid"
	if [ -z "$wall" ] || [ -z "$prog" ]; then
		echo "case $name did not finish: $(head -c 300 "$T/err")" >"$WHY"
		return
	fi
	printf '%s\t%s\t%s\t%s\n' "$name" "${prog% *}" "${prog#* }" "$wall" >>"$TSV"
}

run none "$T/none.json" x
run defaults "$T/defaults.json" x
run max "$T/max.json" x
run longargv "$T/defaults.json" "$LONG"
run adverse "$T/defaults.json" "$ADV"
cat "$TSV"
