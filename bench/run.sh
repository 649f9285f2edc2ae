#!/bin/bash
# bpfbox benchmark suite: what wrapping one tool call costs, next to the
# sandboxes an agent could use instead, all measured in one run on one host.
#
#   bench/run.sh [--quick] [BUILD]     (`make bench` runs `bench/run.sh build`)
#
# 1. Startup: hyperfine runs bare /bin/true and /bin/true inside bpfbox,
#    bwrap, firejail and srt; then bpfbox's setup against workspace size and
#    against the number of deny rules.
# 2. Enforcement overhead: loops timed inside the confined process
#    (bench/loops.c), so only the per-syscall cost of the sandbox counts.
#
# A full run writes docs/benchmarks.md; --quick (a smoke test, few runs)
# writes $BUILD/bench/benchmarks-quick.md instead, so that a smoke test never
# replaces the numbers of a real run. Everything is printed as well.
set -euo pipefail
export LC_ALL=C # awk and printf must use '.' as the decimal point

ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUICK=0
BUILD=build
for arg in "$@"; do
	case "$arg" in
	--quick) QUICK=1 ;;
	-h | --help)
		sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "bench: unknown option '$arg'" >&2
		exit 2
		;;
	*) BUILD=$arg ;;
	esac
done
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac

BIN=$BUILD/bin/bpfbox
OUT=$BUILD/bench                 # helper binaries, logs, the quick report
CACHE=$BUILD/bench-cache         # npm packages survive `make bench` reruns
LOG=$OUT/bench.log
DOC=$ROOT/docs/benchmarks.md

if [ "$QUICK" = 1 ]; then
	# Enough to run every code path once or twice, in well under 30 s.
	RUNS=10 ROUNDS=2 WARMUP=2 REPS=2
	N_OPEN=20000 N_EXEC=200 N_CONNECT=500 N_FILES=10000
	DOC=$OUT/benchmarks-quick.md
else
	RUNS=200 ROUNDS=4 WARMUP=5 REPS=5
	N_OPEN=200000 N_EXEC=2000 N_CONNECT=5000 N_FILES=100000
fi
N_DENY=100

# The command, as the report shows it (make sets MAKELEVEL for its children).
COMMAND_LINE="\`bench/run.sh $*\`"
if [ -n "${MAKELEVEL:-}" ] && [ "$QUICK" = 0 ]; then
	COMMAND_LINE="\`make bench\` (which runs \`bench/run.sh $*\`)"
fi

TMP=$(mktemp -d /tmp/bpfbox-bench.XXXXXX)
PORT= # the loopback listener's, once it runs
LISTENER_PID=
cleanup() {
	# Only the listener this script started; nothing else is signalled.
	if [ -n "$LISTENER_PID" ]; then
		kill "$LISTENER_PID" 2>/dev/null || true
		wait "$LISTENER_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# One line per measured or skipped row, tab-separated:
#   table  kind  label  command  min  median  max  why-not
# kind is bare, bpfbox, peer (startup and loops) or base, var (scaling).
RES=$TMP/results.tsv
: >"$RES"

say() { printf 'bench: %s\n' "$*"; }

record() { # table kind label command min median max why
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"
}

# Paths of this run replaced by stable names, for the report.
show() {
	local s="$*"
	s=${s//"$BIN"/${BIN_SRC#"$ROOT"/}}
	s=${s//"$WS_BIG"/WS_BIG}
	s=${s//"$WS"/WS}
	s=${s//"$TMP"/TMP}
	s=${s//"$CACHE/npm/node_modules/.bin/srt"/srt}
	s=${s//"$ROOT"\//}
	[ -n "$PORT" ] && s=${s//" $PORT "/" PORT "}
	printf '%s' "$s"
}

# min, median, max of the numbers on stdin, one per line, times $1.
stats() {
	sort -g | awk -v k="$1" '{ v[NR] = $1 * k }
		END {
			if (NR == 0) exit 1
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.6g\t%.6g\t%.6g\n", v[1], m, v[NR]
		}'
}

# Runs a command once; on failure prints why (exit code, first stderr line).
try_once() {
	local rc=0
	timeout 120 "$@" >/dev/null 2>"$TMP/err" </dev/null || rc=$?
	[ "$rc" = 0 ] && return 0
	printf 'exit %s: %s' "$rc" "$(grep -m1 -v '^\s*$' "$TMP/err" | cut -c1-200 | tr '\t' ' ')"
	return 1
}

# ---------------------------------------------------------------- setup

# Debian packages the peers and the harness need, installed only if missing
# (apt-get update only then). socat and ripgrep are srt's Linux dependencies.
ensure_packages() {
	local pkgs=(hyperfine bubblewrap firejail jq gcc socat ripgrep) missing=() p
	command -v npm >/dev/null || pkgs+=(npm)
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		say "missing packages: ${missing[*]} (not root: install them, or the peers that need them are skipped)"
		return 0
	fi
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >>"$LOG" 2>&1
	# One at a time: a package this Debian lacks must not stop the others.
	for p in "${missing[@]}"; do
		apt-get install -y -qq --no-install-recommends "$p" >>"$LOG" 2>&1 ||
			say "could not install $p (see $LOG)"
	done
}

# srt (@anthropic-ai/sandbox-runtime) from the npm registry, into a cache
# dir. Sets SRT to the CLI, or SRT_WHY to the reason it is not used.
SRT='' SRT_WHY='' SRT_VERSION=''
ensure_srt() {
	local bin=$CACHE/npm/node_modules/.bin/srt why
	# srt reads ~/.srt-settings.json by default; a settings file of our own
	# keeps the caller's settings out and grants what bpfbox -w grants: the
	# workspace writable, no network.
	SRT_SETTINGS=$TMP/srt-settings.json
	printf '{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowRead":[],"allowWrite":["%s"],"denyWrite":[]}}\n' \
		"$WS" >"$SRT_SETTINGS"
	if [ ! -x "$bin" ]; then
		if ! command -v npm >/dev/null; then
			SRT_WHY="npm is not installed"
			return
		fi
		say "installing @anthropic-ai/sandbox-runtime into ${CACHE#"$ROOT"/}/npm"
		mkdir -p "$CACHE/npm"
		if ! npm install --prefix "$CACHE/npm" --no-audit --no-fund --loglevel=error \
			@anthropic-ai/sandbox-runtime >>"$LOG" 2>&1; then
			SRT_WHY="npm install @anthropic-ai/sandbox-runtime failed: $(tail -n1 "$LOG")"
			return
		fi
	fi
	SRT_VERSION=$(jq -r .version \
		"$CACHE/npm/node_modules/@anthropic-ai/sandbox-runtime/package.json" 2>/dev/null || echo '?')
	if why=$(cd "$WS" && try_once "$bin" --settings "$SRT_SETTINGS" /bin/true); then
		SRT=$bin
	else
		SRT_WHY="srt $SRT_VERSION does not run here: $why"
	fi
}

build_helpers() {
	mkdir -p "$OUT"
	gcc -O2 -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE \
		"$ROOT/bench/loops.c" -o "$OUT/loops"
	LOOPS=$OUT/loops
}

# WS: the workspace of every session, holding the one file the open loop
# opens. WS_BIG: N_FILES files in 100 directories, like a large checkout.
make_workspaces() {
	WS=$TMP/ws
	WS_BIG=$TMP/ws-big
	mkdir -p "$WS" "$WS_BIG"
	echo data >"$WS/file"
	local per=$((N_FILES / 100)) d
	for d in $(seq 0 99); do
		mkdir "$WS_BIG/d$d"
		(cd "$WS_BIG/d$d" && seq -f 'f%.0f' 1 "$per" | xargs touch)
	done
	# Global configs that leave exactly 0 and exactly N_DENY deny patterns
	# (restrictions.deny may replace the list in the global sandbox layer).
	DENY0=$TMP/deny-0.json
	DENYN=$TMP/deny-$N_DENY.json
	echo '{"sandbox":{"restrictions":{"deny":[]}}}' >"$DENY0"
	{
		printf '{"sandbox":{"restrictions":{"deny":[]},"extra":{"deny":['
		seq -f '"**/name-%.0f"' 1 "$N_DENY" | paste -sd,
		printf ']}}}\n'
	} >"$DENYN"
}

# ---------------------------------------------------------------- startup

# Startup rows are first declared (row), then measured together
# (measure_rows): the runs of every command are split into ROUNDS rounds
# and the rounds interleaved, so that a slow minute on this shared machine
# is spread over all rows instead of inflating one. Each round is one
# hyperfine call without a shell (-N), so no shell start-up is in the
# number; min/median/max come from the per-run times of its JSON export.
ROWS=$TMP/rows.tsv
: >"$ROWS"

row() { # table kind label command...
	local table=$1 kind=$2 label=$3
	shift 3
	printf '%s\t%s\t%s\t%s\n' "$table" "$kind" "$label" "$(printf '%q ' "$@")" >>"$ROWS"
}

measure_rows() {
	local n=0 table kind label cmd why round mn md mx
	local -a live=()
	while IFS=$'\t' read -r table kind label cmd; do
		n=$((n + 1))
		# A peer that cannot run here is recorded with the reason, once.
		if why=$(cd "$WS" && eval "try_once $cmd"); then
			live+=("$n")
			: >"$TMP/times.$n"
		else
			say "  $label: not run ($why)"
			echo "$why" >"$TMP/times.$n.why"
		fi
	done <"$ROWS"
	for round in $(seq 1 "$ROUNDS"); do
		say "  round $round of $ROUNDS"
		for n in "${live[@]}"; do
			[ -e "$TMP/times.$n.why" ] && continue
			IFS=$'\t' read -r table kind label cmd < <(sed -n "${n}p" "$ROWS")
			echo "== $label, round $round: $cmd" >>"$LOG"
			if (cd "$WS" && hyperfine -N --style basic --warmup "$WARMUP" \
				--runs $((RUNS / ROUNDS)) --export-json "$TMP/hf.json" -- "$cmd") >>"$LOG" 2>&1; then
				jq -r '.results[0].times[]' "$TMP/hf.json" >>"$TMP/times.$n"
			else
				say "  $label: hyperfine failed (see $LOG)"
				echo "hyperfine failed in round $round" >"$TMP/times.$n.why"
			fi
		done
	done
	n=0
	while IFS=$'\t' read -r table kind label cmd; do
		n=$((n + 1))
		cmd=$(eval "show $cmd")
		if [ -e "$TMP/times.$n.why" ]; then
			record "$table" "$kind" "$label" "$cmd" - - - "$(cat "$TMP/times.$n.why")"
		else
			IFS=$'\t' read -r mn md mx < <(stats 1000 <"$TMP/times.$n") # s -> ms
			record "$table" "$kind" "$label" "$cmd" "$mn" "$md" "$mx" ""
		fi
	done <"$ROWS"
}

startup_rows() {
	row startup bare "bare /bin/true" /bin/true
	row startup bpfbox "bpfbox run (workspace-write)" "$BIN" run -w "$WS" -- /bin/true
	row startup bpfbox "bpfbox run (read-only)" "$BIN" run --mode read-only -w "$WS" -- /bin/true
	# bwrap twice: the cheapest possible view (/ read-only) and the view
	# sandboxes usually build (only /usr, the merged-/usr symlinks, a fresh
	# /proc and /dev), which costs more mounts.
	row startup peer "bwrap (/ read-only)" bwrap --unshare-all --ro-bind / / /bin/true
	row startup peer "bwrap (/usr only)" bwrap --unshare-all --ro-bind /usr /usr \
		--symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin \
		--proc /proc --dev /dev /bin/true
	row startup peer "firejail" firejail --quiet --noprofile --net=none /bin/true
	if [ -n "$SRT" ]; then
		row startup peer "srt" "$SRT" --settings "$SRT_SETTINGS" /bin/true
	else
		record startup peer "srt" "srt /bin/true" - - - "$SRT_WHY"
	fi
}

# bpfbox builds its Landlock ruleset from the policy's paths and does not
# walk the workspace, so neither a big workspace nor a long deny list
# should move the setup time. The "1 file" row is the startup table's
# workspace-write command again: two medians of one command in one run
# show how far this machine's noise goes.
scaling_rows() {
	row scaling base "workspace with 1 file" "$BIN" run -w "$WS" -- /bin/true
	row scaling var "workspace with $N_FILES files" "$BIN" run -w "$WS_BIG" -- /bin/true
	row scaling base "0 deny patterns" "$BIN" run --config "$DENY0" -w "$WS" -- /bin/true
	row scaling var "$N_DENY deny patterns" "$BIN" run --config "$DENYN" -w "$WS" -- /bin/true
	# The same two configs through policy check alone (parse, merge,
	# validate, print; no session): where a deny-list cost comes from.
	row scaling base "policy check, 0 deny patterns" "$BIN" policy check --config "$DENY0" -w "$WS"
	row scaling var "policy check, $N_DENY deny patterns" "$BIN" policy check --config "$DENYN" -w "$WS"
}

bench_startup() {
	say "startup: hyperfine, $RUNS runs of each command in $ROUNDS interleaved rounds," \
		"$WARMUP warm-up runs per round"
	startup_rows
	scaling_rows
	measure_rows
}

# ---------------------------------------------------------------- loops

ENVS=(bare bpfbox bwrap firejail srt)

# The command prefix that confines a loop in environment $1; $2 is "net"
# when the loop needs the host's loopback network.
env_prefix() {
	local env=$1 net=${2:-}
	PREFIX=()
	case "$env" in
	bare) ;;
	bpfbox)
		# --ro: the loop binary lives under the build tree, outside the
		# default read-only system paths.
		PREFIX=("$BIN" run -q -w "$WS" --ro "$OUT")
		[ "$net" = net ] && PREFIX+=(--net allow)
		PREFIX+=(--)
		;;
	bwrap)
		PREFIX=(bwrap --unshare-all)
		[ "$net" = net ] && PREFIX+=(--share-net)
		PREFIX+=(--ro-bind / / --bind "$WS" "$WS" --proc /proc --dev /dev)
		;;
	firejail)
		# --seccomp: firejail's default filter, which its default
		# profile would load; bpfbox always has a filter too.
		PREFIX=(firejail --quiet --noprofile --seccomp)
		[ "$net" = net ] || PREFIX+=(--net=none)
		;;
	srt)
		PREFIX=("${SRT:-srt}" --settings "${SRT_SETTINGS:-}")
		;;
	esac
}

env_label() {
	case "$1" in
	bare) echo "bare" ;;
	bpfbox) echo "bpfbox run" ;;
	*) echo "$1" ;;
	esac
}

# Repetitions are interleaved (bare, bpfbox, bwrap, ..., then again) so
# that a burst of noise on this shared machine hits every environment
# rather than all runs of one.
bench_loop() { # table net loop-args...
	local table=$1 net=$2 rep env out why
	shift 2
	for env in "${ENVS[@]}"; do
		: >"$TMP/$table.$env"
		rm -f "$TMP/$table.$env.why"
		if [ "$env" = srt ] && [ -z "$SRT" ]; then
			echo "$SRT_WHY" >"$TMP/$table.$env.why"
		fi
	done
	for rep in $(seq 1 "$REPS"); do
		for env in "${ENVS[@]}"; do
			[ -e "$TMP/$table.$env.why" ] && continue
			env_prefix "$env" "$net"
			echo "== $table/$env #$rep: ${PREFIX[*]} $LOOPS $*" >>"$LOG"
			if out=$(cd "$WS" && timeout 300 "${PREFIX[@]}" "$LOOPS" "$@" \
				2>>"$LOG" </dev/null) && [[ "$out" =~ ^[0-9.]+$ ]]; then
				echo "$out" >>"$TMP/$table.$env"
			else
				why="no result: $(tail -n1 "$LOG" | cut -c1-200)"
				[ "$env" = srt ] && [ "$net" = net ] &&
					why="$why (srt runs the command without the host's network namespace: TCP leaves only through srt's proxy)"
				echo "$why" >"$TMP/$table.$env.why"
				say "  $table/$env: not run ($why)"
			fi
		done
	done
	for env in "${ENVS[@]}"; do
		local kind=peer mn md mx
		[ "$env" = bare ] && kind=bare
		[ "$env" = bpfbox ] && kind=bpfbox
		env_prefix "$env" "$net"
		local cmd
		cmd=$(show "${PREFIX[*]:+${PREFIX[*]} }$LOOPS $*")
		if [ -e "$TMP/$table.$env.why" ]; then
			record "$table" "$kind" "$(env_label "$env")" "$cmd" - - - "$(cat "$TMP/$table.$env.why")"
		else
			# ns from the loop; the exec and connect tables read better in us.
			local k=1
			[ "$table" != open ] && k=0.001
			IFS=$'\t' read -r mn md mx < <(stats "$k" <"$TMP/$table.$env")
			record "$table" "$kind" "$(env_label "$env")" "$cmd" "$mn" "$md" "$mx" ""
		fi
	done
}

bench_enforcement() {
	say "enforcement: $REPS repetitions of each loop, timed inside the process"
	say "  open/close x $N_OPEN"
	bench_loop open "" open "$WS/file" "$N_OPEN"
	say "  fork+exec /bin/true x $N_EXEC"
	bench_loop exec "" exec "$N_EXEC"

	# The listener runs outside every sandbox, as a host service would.
	"$LOOPS" listen "$TMP/port" 2>>"$LOG" &
	LISTENER_PID=$!
	for _ in $(seq 50); do
		[ -s "$TMP/port" ] && break
		sleep 0.1
	done
	PORT=$(cat "$TMP/port")
	say "  TCP connect to 127.0.0.1:$PORT x $N_CONNECT"
	bench_loop connect net connect "$PORT" "$N_CONNECT"
	kill "$LISTENER_PID"
	wait "$LISTENER_PID" 2>/dev/null || true
	LISTENER_PID=
}

# ---------------------------------------------------------------- report

# A markdown table of one result table: min/median/max and the median's
# ratio to bare and to the best (lowest-median) peer. The scaling table
# compares each row with the row before it (1 file, 0 patterns) instead.
render_table() { # table unit [bare-median]
	awk -F'\t' -v T="$1" -v U="$2" -v BARE="${3:-}" '
	function f(v) {
		if (v == "-") return "–"
		if (U == "ms") return sprintf(v < 1 ? "%.3f" : v < 100 ? "%.2f" : "%.1f", v)
		return sprintf(v < 100 ? "%.2f" : v < 1000 ? "%.1f" : "%.0f", v)
	}
	function dashes(k,   d) { d = ""; while (k-- > 0) d = d "-"; return d }
	# Width in characters: awk counts bytes, and × and µ are two each.
	function clen(t) { gsub(/[\200-\277]/, "", t); return length(t) }
	function pad(t, k, left,   sp) { sp = ""; k -= clen(t); while (k-- > 0) sp = sp " "; return left ? t sp : sp t }
	function r(a, b) { return (a == "-" || b == "" || b == "-" || b == 0) ? "–" : sprintf("%.2f×", a / b) }
	$1 == T {
		n++; kind[n] = $2; label[n] = $3; mn[n] = $5; md[n] = $6; mx[n] = $7
		if ($2 == "bare" && $6 != "-") BARE = $6
		if ($2 == "peer" && $6 != "-" && (best == "" || $6 + 0 < best + 0)) { best = $6; bestl = $3 }
	}
	END {
		if (T == "scaling") h[6] = "× first of pair"; else h[6] = "× best peer"
		h[1] = ""; h[2] = "min " U; h[3] = "median " U; h[4] = "max " U; h[5] = "× bare"
		nc = 6
		for (i = 1; i <= n; i++) {
			c[i, 1] = label[i]; c[i, 2] = f(mn[i]); c[i, 3] = f(md[i]); c[i, 4] = f(mx[i])
			c[i, 5] = r(md[i], BARE)
			if (T == "scaling") {
				if (kind[i] == "base") base = md[i]
				c[i, 6] = r(md[i], base)
			} else c[i, 6] = r(md[i], best)
			if (md[i] == "-") c[i, 1] = label[i] " (not run)"
		}
		for (j = 1; j <= nc; j++) {
			w[j] = clen(h[j])
			for (i = 1; i <= n; i++) if (clen(c[i, j]) > w[j]) w[j] = clen(c[i, j])
		}
		line = "|"
		for (j = 1; j <= nc; j++) line = line " " pad(h[j], w[j], j == 1) " |"
		print line
		# first column left-aligned, numbers right-aligned
		line = "|"
		for (j = 1; j <= nc; j++) line = line " " dashes(w[j] - 1) (j == 1 ? "-" : ":") " |"
		print line
		for (i = 1; i <= n; i++) {
			line = "|"
			for (j = 1; j <= nc; j++) line = line " " pad(c[i, j], w[j], j == 1) " |"
			print line
		}
		if (T != "scaling" && bestl != "") printf "\nBest peer: %s.\n", bestl
	}' "$RES"
}

# The commands of a table, and why any row did not run.
render_commands() { # table
	echo
	echo '```'
	awk -F'\t' -v T="$1" 'NR == FNR { if ($1 == T && length($3) > w) w = length($3); next }
		$1 == T { printf "%-*s %s\n", w + 2, $3 ":", $4 }' "$RES" "$RES"
	echo '```'
	awk -F'\t' -v T="$1" '$1 == T && $8 != "" { printf "\n- %s not run: %s\n", $3, $8 }' "$RES"
}

# The median of one row, or empty.
med() { awk -F'\t' -v T="$1" -v L="$2" '$1 == T && $3 == L && $6 != "-" { print $6 }' "$RES"; }

# The paragraph on what the numbers mean, its figures from this run. It
# states differences, not verdicts, and how large the noise of this run
# was (one command measured twice), so a reader can tell the two apart.
interpretation() {
	local bare bp best bestl
	bare=$(med startup "bare /bin/true")
	bp=$(med startup "bpfbox run (workspace-write)")
	read -r best bestl < <(awk -F'\t' '$1 == "startup" && $2 == "peer" && $6 != "-" { print $6 "\t" $3 }' "$RES" |
		sort -g | head -n1 | tr '\t' ' ') || true
	awk -v bare="$bare" -v bp="$bp" -v best="$best" -v bestl="$bestl" \
		-v ws1="$(med scaling "workspace with 1 file")" \
		-v wsn="$(med scaling "workspace with $N_FILES files")" \
		-v d0="$(med scaling "0 deny patterns")" -v dn="$(med scaling "$N_DENY deny patterns")" \
		-v p0="$(med scaling "policy check, 0 deny patterns")" \
		-v pn="$(med scaling "policy check, $N_DENY deny patterns")" \
		-v o0="$(med open bare)" -v o1="$(med open "bpfbox run")" \
		-v e0="$(med exec bare)" -v e1="$(med exec "bpfbox run")" \
		-v c0="$(med connect bare)" -v c1="$(med connect "bpfbox run")" \
		-v nfiles="$N_FILES" -v ndeny="$N_DENY" \
		-v level="$(echo "$BPFBOX_LEVEL" | sed -n 's/.*enabled \([A-Za-z]*\).*/\1/p')" '
	function pct(a, b) { return sprintf("%+.0f%%", (a / b - 1) * 100) }
	BEGIN {
		if (bare == "" || bp == "") { print "bpfbox or the bare baseline did not run; no interpretation."; exit }
		printf "Startup is what every tool call of an agent pays once: bpfbox adds %.2f ms to a bare `/bin/true` (median %.2f ms against %.3f ms). ", bp - bare, bp, bare
		printf "That time is loading and merging the policy, building the Landlock ruleset and the seccomp filter, one fork, and the child restricting itself before exec; there are no namespaces, mounts or helper processes to set up. "
		if (best != "")
			printf "The fastest peer here, %s, adds %.2f ms (%.2f× bpfbox'"'"'s added time). ", bestl, best - bare, (best - bare) / (bp - bare)
		if (ws1 != "" && wsn != "")
			printf "A workspace of %d files instead of 1 moves the median by %s (%+.3f ms). ", nfiles, pct(wsn, ws1), wsn - ws1
		if (d0 != "" && dn != "") {
			printf "%d deny patterns instead of 0 move it by %s (%+.3f ms)", ndeny, pct(dn, d0), dn - d0
			if (p0 != "" && pn != "")
				printf "; `bpfbox policy check` alone, with the same two configs, moves by %+.3f ms", pn - p0
			printf ". "
		}
		if (level != "" && level != "Full")
			printf "The sessions ran at level %s: at that level `**/` patterns are kept in the policy but make no kernel rule (docs/SECURITY.md: the BPF LSM layer enforces them, at level Full), so the deny pair must be measured again where that layer loads. ", level
		printf "Inside the session the cost moves to the syscalls: "
		if (o0 != "" && o1 != "") printf "open+close costs %.2f× bare (Landlock checks each path walk against the ruleset, seccomp runs its filter on each syscall), ", o1 / o0
		if (e0 != "" && e1 != "") printf "fork+exec %.2f× (every child inherits the seccomp filter and the Landlock domain), ", e1 / e0
		if (c0 != "" && c1 != "") printf "a loopback TCP connect %.2f×", c1 / c0
		printf ". "
		if (ws1 != "")
			printf "How much of this is noise: the same `bpfbox run -w WS -- /bin/true` measured twice in this run (the startup table and the first scaling row) gave medians of %.2f and %.2f ms, %.0f%% apart; differences of that order between any two rows are this shared 2-core machine, not the sandbox.\n", bp, ws1, (bp > ws1 ? bp / ws1 - 1 : ws1 / bp - 1) * 100
		else
			printf "\n"
	}'
}

machine_info() {
	local model kernel
	model=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')
	kernel=$(uname -r)
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- command: $COMMAND_LINE$([ "$QUICK" = 1 ] && echo ' (quick: a smoke test, not for reading)')"
	echo "- suite runtime: ${SECONDS} s"
	echo "- machine: nproc $(nproc), ${model:-unknown model}, kernel $kernel, Debian $(cat /etc/debian_version 2>/dev/null || echo '?')"
	echo "- bpfbox: ${BPFBOX_VERSION:-?} (a copy of ${BIN_SRC#"$ROOT"/} taken at the start; the tree was at $(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo '?')), $BPFBOX_LEVEL"
	echo "- peers: bwrap $(bwrap --version 2>/dev/null | awk '{print $2}' || true), firejail $(firejail --version 2>/dev/null | awk 'NR==1 {print $3}' || true), srt ${SRT_VERSION:-not installed} (node $(node --version 2>/dev/null || echo none)), $(hyperfine --version 2>/dev/null || true)"
	echo "- runs: startup $RUNS per command, in $ROUNDS interleaved rounds of $((RUNS / ROUNDS)) after $WARMUP warm-up runs each; loops $REPS repetitions each, interleaved"
}

write_report() {
	{
		echo "# Benchmarks"
		echo
		echo "Generated by \`bench/run.sh\`; rerun \`make bench\` to refresh, do not edit"
		echo "the numbers by hand. Every number below was measured in the same run,"
		echo "on the machine described here."
		echo
		machine_info
		echo
		echo "## 1. Startup: one sandboxed \`/bin/true\`"
		echo
		echo "Wall time of the whole command, from hyperfine without a shell (\`-N\`)."
		echo "Ratios are of medians. WS is a temporary workspace holding one file."
		echo
		render_table startup ms
		render_commands startup
		if [ -n "$SRT" ]; then
			echo
			echo "srt's settings file grants what \`bpfbox run -w WS\` grants (WS writable,"
			echo "no network): \`$(show "$(cat "$SRT_SETTINGS")")\`"
		fi
		echo
		echo "### Setup time vs workspace size and deny rules"
		echo
		echo "The same \`bpfbox run\` with a workspace of 1 file and of $N_FILES files"
		echo "(in 100 directories), and with a global config (\`--config\`) whose deny"
		echo "list holds exactly 0 and exactly $N_DENY \`**/name-N\` patterns; then those two"
		echo "configs through \`bpfbox policy check\` alone, which loads the policy and"
		echo "starts no session."
		echo
		render_table scaling ms "$(med startup "bare /bin/true")"
		render_commands scaling
		echo
		echo "## 2. Enforcement overhead"
		echo
		echo "Each loop is timed inside the confined process (\`clock_gettime\`), so"
		echo "the sandbox's start-up is not in these numbers. Source: \`bench/loops.c\`,"
		echo "built with \`gcc -O2\`. bwrap has no seccomp filter in this configuration;"
		echo "firejail runs its default seccomp filter (\`--seccomp\`)."
		echo
		echo "### open + close of a workspace file, $N_OPEN times (ns per open+close)"
		echo
		render_table open ns
		render_commands open
		echo
		echo "### fork + exec of /bin/true + wait, $N_EXEC times (µs per process)"
		echo
		render_table exec µs
		render_commands exec
		echo
		echo "### TCP connect + close to a listener on 127.0.0.1, $N_CONNECT times (µs per connection)"
		echo
		echo "The listener runs outside every sandbox; bpfbox needs \`--net allow\`,"
		echo "bwrap \`--share-net\`. Closing with \`SO_LINGER\` 0 (a RST) keeps TIME_WAIT"
		echo "sockets from exhausting the ephemeral ports over the whole run."
		echo
		render_table connect µs
		render_commands connect
		echo
		echo "## What the numbers mean"
		echo
		interpretation | fold -s -w 76 | sed 's/ *$//'
		echo
		echo "## Not yet measured"
		echo
		echo "These tables cover what exists today: the Landlock + seccomp session."
		echo "Later work adds layers whose cost is not in them:"
		echo
		echo "- audit overhead: the eBPF audit programs (exec, open, connect events into"
		echo "  a ring buffer) against auditd rules, opensnoop and a bpftrace one-liner"
		echo "  doing the same tracing, on the loops above;"
		echo "- the audit pipeline: events per second through ring buffer -> decoder ->"
		echo "  redactor -> JSON encoder -> sinks, and the events lost under load;"
		echo "- BPF LSM enforcement (the \`**/\` deny patterns inside the workspace) and"
		echo "  cgroup limits, which this host cannot load or does not yet apply;"
		echo "- scale: 1, 10, 100 and 1000 concurrent sessions (setup latency, memory,"
		echo "  and the cost per session of the shared BPF maps);"
		echo "- the daemon, when there is one: request latency of a session started"
		echo "  through it rather than by \`bpfbox run\`."
	} >"$DOC"
}

# ---------------------------------------------------------------- main

main() {
	mkdir -p "$OUT" "$CACHE"
	: >"$LOG"
	if [ ! -x "$BIN" ]; then
		echo "bench: $BIN is missing; run 'make all' first (make bench does)" >&2
		exit 1
	fi
	ensure_packages
	for c in hyperfine jq gcc; do
		if ! command -v "$c" >/dev/null; then
			echo "bench: $c is required and not installed" >&2
			exit 1
		fi
	done
	# Other work may rebuild build/bin/bpfbox while this runs (a relink
	# makes it briefly unexecutable, and the numbers would mix two
	# builds): every session runs a copy taken now.
	BIN_SRC=$BIN
	BIN=$TMP/bpfbox
	cp "$BIN_SRC" "$BIN"
	BPFBOX_VERSION=$("$BIN" --version 2>/dev/null | head -n1)
	build_helpers
	make_workspaces
	ensure_srt
	[ -n "$SRT_WHY" ] && say "srt: not used: $SRT_WHY"
	BPFBOX_LEVEL=$("$BIN" run -v -w "$WS" -- /bin/true 2>&1 >/dev/null |
		sed -n 's/^bpfbox: session [0-9a-f]*, //p; s/^bpfbox: \(landlock.*\)/\1/p' | paste -sd';' | sed 's/;/; /')

	bench_startup
	bench_enforcement

	write_report
	echo
	sed -n '/^## 1\./,/^## What/p' "$DOC" | sed '$d'
	sed -n '/^## What/,/^## Not yet/p' "$DOC" | sed '$d'
	say "done in ${SECONDS} s; report written to ${DOC#"$ROOT"/}; log in ${LOG#"$ROOT"/}"
}

main
