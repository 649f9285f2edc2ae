#!/bin/bash
# bpfbox benchmark suite: what wrapping one tool call costs, next to the
# sandboxes and audit tools an agent host could use instead, all measured in
# one run on one host.
#
#   [BENCH_LOSS_RATES="R ..."] bench/run.sh [--quick] [--only SECTION,...] [BUILD]
#                                      (`make bench` runs `bench/run.sh build`)
#
# --only runs those sections alone (startup embedded loops pipeline scale
# attach loss limits egress cmdrules changes, the bench_* below) and writes
# $BUILD/bench/benchmarks-only.md, never docs/benchmarks.md: the report
# of a partial run would drop every other section's numbers.
#
# 1. Startup: hyperfine runs bare /bin/true and /bin/true inside bpfbox
#    (embedded, and through a private daemon), bwrap, firejail and srt; then
#    bpfbox's setup against workspace size and deny rules; then embedded
#    mode with BPF (--no-daemon --audit), its load and unload apart.
# 2. Enforcement overhead: loops timed inside the confined process
#    (bench/loops.c) at each level this host has, in and out of a daemon.
# 3. Audit overhead and completeness: the same loops recorded by the bpfbox
#    daemon, auditd, libbpf-tools and bpftrace; events recorded vs done.
# 4. Pipeline: redact + encode events per second on one core.
# 5. Scale: 1 to 1000 sessions in the daemon: registration, daemon RSS,
#    the cost to a process outside every session (in each audit attach
#    mode: bench/attach.sh), and the record rate where loss begins.
# 6. Limits under pressure (bench/limits.sh): pause latency after an OOM
#    kill and after the disk limit, the disk monitor's CPU under writes.
# 7. Egress by name (bench/egress.sh): 100 MB transfers and connection
#    setup through the session's proxy against a direct connection.
# 9. Command rules (bench/cmdrules.sh; 8 is bench/full.sh, run on its own): the exec program's time per exec
#    without rules, with the defaults, 64 rules, long and adverse argv.
# 10. Change sets (bench/changes.sh): --changes review against direct,
#    review, apply and undo of 10,000 changed files, a 100,000-file workspace.
#
# Root is needed for the daemon, auditd and the tracers; without it those
# rows say why they did not run. A full run writes docs/benchmarks.md;
# --quick (a smoke test, few runs) writes $BUILD/bench/benchmarks-quick.md
# instead, so that a smoke test never replaces the numbers of a real run.
set -euo pipefail
export LC_ALL=C # awk and printf must use '.' as the decimal point

ROOT=$(cd "$(dirname "$0")/.." && pwd)
QUICK=0
BUILD=build
ONLY=''
SECTIONS=' startup embedded loops pipeline scale attach loss limits egress cmdrules changes '
for arg in "$@"; do
	if [ "$ONLY" = - ]; then
		ONLY=" ${arg//,/ } "
		for a in $ONLY; do
			if [[ "$SECTIONS" != *" $a "* ]]; then
				echo "bench: --only: no section '$a' (one of:$SECTIONS)" >&2
				exit 2
			fi
		done
		continue
	fi
	case "$arg" in
	--quick) QUICK=1 ;;
	--only) ONLY=- ;;
	-h | --help)
		sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "bench: unknown option '$arg'" >&2
		exit 2
		;;
	*) BUILD=$arg ;;
	esac
done
if [ "$ONLY" = - ]; then
	echo "bench: --only needs a list of sections (one of:$SECTIONS)" >&2
	exit 2
fi
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BUILD=${BUILD%/}
BTREE=$(dirname "$BUILD") # the source tree the build belongs to

BIN=$BUILD/bin/bpfbox
OUT=$BUILD/bench                 # helper binaries, logs, the quick report
CACHE=$BUILD/bench-cache         # npm packages survive `make bench` reruns
LOG=$OUT/bench.log
DOC=$ROOT/docs/benchmarks.md

# The knobs, each with its quick value (enough to run every code path once
# or twice, in well under 30 s) and its full one.
knob() {
	if [ "$QUICK" = 1 ]; then eval "$1=\$2"; else eval "$1=\$3"; fi
}
knob RUNS 6 200
knob ROUNDS 2 4
knob WARMUP 1 5
knob REPS 1 5
knob TRACE_REPS 1 5
knob E_RUNS 2 10
knob N_OPEN 20000 200000
knob N_EXEC 200 2000
knob N_CONNECT 500 5000
knob N_FILES 1000 100000
knob SCALE_NS "1 10" "1 10 100 1000"
knob PROBES 10 100
knob PIPE_EVENTS 200000 2000000
knob PIPE_RUNS 1 5
knob SETTLE 1 5
knob LIM_RUNS 2 20
knob LIM_SECS 1 10
knob EG_SETUPS 20 500
knob EG_RUNS 1 5
knob EG_BYTES 10485760 104857600
knob CMD_EXECS 200 2000
knob CH_RUNS 20 100
knob CH_FILES 1000 10000
knob CH_WS 10000 100000
knob CH_ROUNDS 1 3
knob ATT_NS 10 100
knob LOSS_RATES "50000 200000" "50000 100000 150000 200000 300000 400000 600000 800000"
knob LOSS_SECS 1 5
# A finer grid of rates for the loss onset alone (--only loss), e.g.
# BENCH_LOSS_RATES="150000 160000 170000"; the default grid above else.
LOSS_RATES=${BENCH_LOSS_RATES:-$LOSS_RATES}
[ "$QUICK" = 1 ] && DOC=$OUT/benchmarks-quick.md
[ -n "$ONLY" ] && DOC=$OUT/benchmarks-only.md
# wanted SECTION: the section runs (every one without --only).
wanted() { [ -z "$ONLY" ] || [[ "$ONLY" == *" $1 "* ]]; }
N_DENY=100

# The command, as the report shows it (make sets MAKELEVEL for its children).
COMMAND_LINE="\`bench/run.sh $*\`"
if [ -n "${MAKELEVEL:-}" ] && [ "$QUICK" = 0 ]; then
	COMMAND_LINE="\`make bench\` (which runs \`bench/run.sh $*\`)"
fi

TMP=$(mktemp -d /tmp/bpfbox-bench.XXXXXX)
chmod 755 "$TMP"
PORT= # the loopback listener's, once it runs
LISTENER_PID=
# The private daemon: its own socket, pins and cgroup parent, named after
# this script's pid, so that it never meets a real daemon or another run.
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
DSOCK=$TMP/daemon/bpfbox.sock
DPIN=/sys/fs/bpf/bpfbox-bench-$$
DCG=${CG2:+$CG2/bpfbox-bench-$$}
DPID='' DAUDIT='' DAEMON_WHY=''
DAEMON_EXTRA=()
DAEMON_STARTS=0
AUDITD_PID='' AUDIT_RULE_ON=0 AUDIT_ENABLED0='' AUDIT_BACKLOG0=''
TRACER_PIDS=()
SCALE_PIDS=()

cleanup() {
	# Only what this script started is signalled, by pid.
	local p
	set +e
	for p in ${SCALE_PIDS[@]+"${SCALE_PIDS[@]}"} ${TRACER_PIDS[@]+"${TRACER_PIDS[@]}"} $LISTENER_PID; do
		kill "$p" 2>/dev/null || true
	done
	[ "$AUDIT_RULE_ON" = 1 ] || [ -n "$AUDITD_PID" ] && auditd_stop
	[ -n "${BPF_STATS0:-}" ] && sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS0"
	[ -n "$DPID" ] || [ -d "$DPIN" ] && daemon_stop
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One line per measured or skipped row, tab-separated:
#   table  kind  label  command  min  median  max  why-not  [recorded  lost]
# kind is bare, bpfbox, peer (startup and loops) or base, var (scaling).
RES=$TMP/results.tsv
: >"$RES"

say() { printf 'bench: [%3d s] %s\n' "$SECONDS" "$*"; }
mark() { echo "== [$SECONDS s] $*" >>"$LOG"; } # progress, in the log only

record() { # table kind label command min median max why [recorded lost]
	local IFS=$'\t'
	printf '%s\n' "$*" >>"$RES"
}

# Paths of this run replaced by stable names, for the report.
show() {
	local s="$*"
	s=${s//"$BIN"/${BIN_SRC#"$BTREE"/}}
	s=${s//"$WS_BIG"/WS_BIG}
	s=${s//"$WS"/WS}
	s=${s//"$TMP"/TMP}
	s=${s//"$DPIN"/\/sys\/fs\/bpf\/bpfbox-bench-PID}
	[ -n "$DCG" ] && s=${s//"$DCG"/"$CG2"\/bpfbox-bench-PID}
	s=${s//"$CACHE/npm/node_modules/.bin/srt"/srt}
	s=${s//"$BTREE"\//}
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
median() { stats 1 | cut -f2; }

# Runs a command once; on failure prints why (exit code, first stderr line).
try_once() {
	local rc=0
	timeout 120 "$@" >/dev/null 2>"$TMP/err" </dev/null || rc=$?
	[ "$rc" = 0 ] && return 0
	printf 'exit %s: %s' "$rc" "$(grep -m1 -v '^\s*$' "$TMP/err" | cut -c1-200 | tr '\t' ' ')"
	return 1
}

# Polls a condition (a command) every 20 ms for up to $1 seconds of wall
# time (a condition may take time of its own).
wait_until() {
	local end=$((${EPOCHREALTIME/./} + $1 * 1000000))
	shift
	while :; do
		"$@" && return 0
		[ "${EPOCHREALTIME/./}" -ge "$end" ] && return 1
		sleep 0.02
	done
}

# ---------------------------------------------------------------- setup

# Debian packages the peers and the harness need, installed only if missing
# (apt-get update only then). socat and ripgrep are srt's Linux dependencies.
# auditd is not installed here: its package starts a system auditd, which
# would then be a host service, not a peer this script starts and stops.
ensure_packages() {
	local pkgs=(hyperfine bubblewrap firejail jq gcc socat ripgrep bpftrace libbpf-tools python3)
	local missing=() p
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

# loops is linked statically: its only syscalls are then the loop's own (no
# dynamic loader opening ld.so.cache and libc), so that every audit tool's
# events of the loop can be counted by process name or pid.
LOOPS_LINK=static
build_helpers() {
	mkdir -p "$OUT"
	if ! gcc -O2 -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -static \
		"$ROOT/bench/loops.c" -o "$OUT/loops" 2>>"$LOG"; then
		LOOPS_LINK=dynamic
		gcc -O2 -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE \
			"$ROOT/bench/loops.c" -o "$OUT/loops"
	fi
	LOOPS=$OUT/loops
	# The registration probe speaks the daemon's protocol (docs/daemon.md)
	# on one connection: register (timed), start a sleep, attach it
	# (timed), unregister (timed). Prints medians and p90 in µs.
	cat >"$OUT/regprobe.py" <<'PY'
import json, os, socket, statistics, subprocess, sys, time
path, k = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(path)
f = s.makefile("rb")
def req(o):
    t = time.perf_counter_ns()
    s.sendall(json.dumps(o).encode() + b"\n")
    r = json.loads(f.readline())
    dt = time.perf_counter_ns() - t
    if not r.get("ok"):
        sys.exit("regprobe: %s: %s" % (o["op"], r))
    return dt / 1000
reg, att, unreg = [], [], []
for i in range(k):
    sid = os.urandom(16).hex()
    reg.append(req({"op": "register", "session": sid, "command": ["sleep", "1000"]}))
    p = subprocess.Popen(["sleep", "1000"])
    att.append(req({"op": "attach", "session": sid, "pid": p.pid}))
    unreg.append(req({"op": "unregister", "session": sid, "exit_code": 0}))
    p.wait()
p90 = lambda v: sorted(v)[min(len(v) - 1, int(len(v) * 0.9))]
print("%.1f %.1f %.1f %.1f" % (statistics.median(reg), p90(reg),
                               statistics.median(att), statistics.median(unreg)))
PY
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

# ---------------------------------------------------------------- daemon

# The daemon runs only while rows that use it are measured: between them no
# program of ours is attached, so the bare rows and the peers run without
# its tracepoints. daemon_stop also removes the pins (--cleanup), which
# detaches the programs.
daemon_check() {
	if [ "$(id -u)" -ne 0 ]; then
		DAEMON_WHY="not root: the daemon loads and pins BPF programs"
	elif [ -z "$CG2" ]; then
		DAEMON_WHY="no cgroup2 mount on this host"
	elif [ -S /run/bpfbox/bpfbox.sock ]; then
		# Not an obstacle (every row names its socket), but worth knowing.
		say "note: a system daemon answers on /run/bpfbox/bpfbox.sock; rows without --daemon-socket may use it"
	fi
	mkdir -p "$TMP/daemon"
	: >"$TMP/daemon.err"
}

daemon_start() { # audit-file
	DAUDIT=$1
	: >"$DAUDIT"
	[ -n "$DAEMON_WHY" ] && return 1
	local before
	before=$(grep -c 'ready' "$TMP/daemon.err" || true)
	"$BIN" daemon --socket "$DSOCK" --pin-dir "$DPIN" --cgroup-parent "$DCG" \
		--audit "$DAUDIT" ${DAEMON_EXTRA[@]+"${DAEMON_EXTRA[@]}"} 2>>"$TMP/daemon.err" </dev/null &
	DPID=$!
	DAEMON_STARTS=$((DAEMON_STARTS + 1))
	if wait_until 10 daemon_ready "$before"; then
		return 0
	fi
	DAEMON_WHY="the daemon did not get ready: $(tail -n1 "$TMP/daemon.err" | cut -c1-200)"
	say "$DAEMON_WHY"
	daemon_stop
	return 1
}
daemon_ready() {
	kill -0 "$DPID" 2>/dev/null || return 1
	[ "$(grep -c 'ready' "$TMP/daemon.err" || true)" != "$1" ]
}

daemon_stop() {
	if [ -n "$DPID" ]; then
		kill -TERM "$DPID" 2>/dev/null || true
		wait "$DPID" 2>/dev/null || true
		DPID=
	fi
	"$BIN" daemon --cleanup --socket "$DSOCK" --pin-dir "$DPIN" --cgroup-parent "$DCG" \
		>>"$LOG" 2>&1 || say "daemon --cleanup failed (see $LOG)"
}

daemon_rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$DPID/status"; }

# ---------------------------------------------------------------- tracers

# auditd, started by this script with a private configuration: Debian's
# auditd.conf (ENRICHED log format, INCREMENTAL_ASYNC flush every 50
# records) but with its log in TMP and no size limit or space actions; the
# backlog of Debian's default rules (-b 8192). Refused when an auditd
# already runs: the kernel has one audit daemon.
# shellcheck disable=SC2054 # one auditctl argument with commas
AUDIT_RULE=(always,exit -F arch=b64 -S openat -S execve -S connect)
AUDITD_WHY='' AUDITD_VERSION=''
auditd_check() {
	local st
	if [ "$(id -u)" -ne 0 ]; then
		AUDITD_WHY="not root"
	elif ! command -v auditd >/dev/null || ! command -v auditctl >/dev/null; then
		AUDITD_WHY="auditd is not installed (apt-get install auditd)"
	elif ! st=$(auditctl -s 2>&1); then
		AUDITD_WHY="auditctl -s failed: $(echo "$st" | head -n1)"
	elif [ "$(echo "$st" | awk '$1 == "pid" { print $2 }')" != 0 ]; then
		AUDITD_WHY="an audit daemon already runs (pid $(echo "$st" | awk '$1 == "pid" { print $2 }'))"
	elif [ "$(echo "$st" | awk '$1 == "enabled" { print $2 }')" = 2 ]; then
		AUDITD_WHY="the kernel's audit configuration is locked (enabled 2)"
	fi
	AUDITD_VERSION=$(dpkg-query -W -f='${Version}' auditd 2>/dev/null || echo '?')
}

auditd_start() {
	[ -n "$AUDITD_WHY" ] && return 1
	local d=$TMP/auditd st
	mkdir -p "$d/plugins.d"
	cat >"$d/auditd.conf" <<EOF
local_events = yes
write_logs = yes
log_file = $d/audit.log
log_format = ENRICHED
flush = INCREMENTAL_ASYNC
freq = 50
max_log_file = 0
max_log_file_action = IGNORE
space_left = 2
space_left_action = IGNORE
admin_space_left = 1
admin_space_left_action = IGNORE
disk_full_action = IGNORE
disk_error_action = IGNORE
name_format = NONE
q_depth = 2000
overflow_action = IGNORE
plugin_dir = $d/plugins.d
end_of_event_timeout = 2
EOF
	chmod 640 "$d/auditd.conf"
	: >"$d/audit.log"
	st=$(auditctl -s)
	AUDIT_ENABLED0=$(echo "$st" | awk '$1 == "enabled" { print $2 }')
	AUDIT_BACKLOG0=$(echo "$st" | awk '$1 == "backlog_limit" { print $2 }')
	auditd -n -c "$d" 2>>"$LOG" </dev/null &
	AUDITD_PID=$!
	if ! wait_until 10 auditd_ready; then
		AUDITD_WHY="auditd did not start (see $LOG)"
		auditd_stop
		return 1
	fi
	auditctl -b 8192 >>"$LOG" 2>&1
	auditctl -a "${AUDIT_RULE[@]}" >>"$LOG" 2>&1 || {
		AUDITD_WHY="auditctl -a failed (see $LOG)"
		auditd_stop
		return 1
	}
	AUDIT_RULE_ON=1
}
auditd_ready() { [ "$(auditctl -s | awk '$1 == "pid" { print $2 }')" = "$AUDITD_PID" ]; }
audit_lost() { auditctl -s | awk '$1 == "lost" { print $2 }'; }
audit_drained() { [ "$(auditctl -s | awk '$1 == "backlog" { print $2 }')" = 0 ]; }

# Removes our rule only (never -D: other rules are not ours), lets auditd
# write out what the kernel still queues for it, stops it, and puts the
# kernel's enabled flag and backlog limit back.
auditd_stop() {
	if [ "$AUDIT_RULE_ON" = 1 ]; then
		auditctl -d "${AUDIT_RULE[@]}" >>"$LOG" 2>&1 || true
		AUDIT_RULE_ON=0
		# What the kernel still queues for auditd (other records, BPF
		# loads of other tools, keep coming while it runs; ours stopped).
		wait_until 30 audit_drained || say "  auditd: its backlog did not empty within 30 s"
		sleep 0.5
	fi
	if [ -n "$AUDITD_PID" ]; then
		kill -TERM "$AUDITD_PID" 2>/dev/null || true
		wait "$AUDITD_PID" 2>/dev/null || true
		AUDITD_PID=
	fi
	[ -n "$AUDIT_ENABLED0" ] && auditctl -e "$AUDIT_ENABLED0" >>"$LOG" 2>&1 || true
	[ -n "$AUDIT_BACKLOG0" ] && auditctl -b "$AUDIT_BACKLOG0" >>"$LOG" 2>&1 || true
}

# libbpf-tools (Debian package libbpf-tools; some distributions prefix the
# names with libbpf-), writing to files. tcpconnect needs kprobes.
SNOOP_WHY='' TCPC_WHY='' BPFTRACE_WHY='' OPENSNOOP='' EXECSNOOP='' TCPCONNECT='' BPFTRACE=''
find_tool() {
	local t
	for t in "$1" "libbpf-$1" "/usr/sbin/$1" "/usr/sbin/libbpf-$1"; do
		command -v "$t" 2>/dev/null && return 0
	done
	return 1
}
tracers_check() {
	if [ "$(id -u)" -ne 0 ]; then
		SNOOP_WHY="not root" TCPC_WHY="not root" BPFTRACE_WHY="not root"
		return
	fi
	OPENSNOOP=$(find_tool opensnoop) || SNOOP_WHY="opensnoop is not installed (libbpf-tools)"
	EXECSNOOP=$(find_tool execsnoop) || SNOOP_WHY="execsnoop is not installed (libbpf-tools)"
	if TCPCONNECT=$(find_tool tcpconnect); then
		# It fails at attach where the kernel has no kprobes.
		"$TCPCONNECT" >/dev/null 2>"$TMP/tcpc.err" &
		local p=$!
		sleep 0.5
		if kill -0 "$p" 2>/dev/null; then
			kill -INT "$p"
			wait "$p" 2>/dev/null || true
		else
			wait "$p" 2>/dev/null || true
			TCPCONNECT=
			TCPC_WHY="tcpconnect does not attach here: $(grep -m1 'failed to create kprobe' "$TMP/tcpc.err" |
				sed 's/^libbpf: //' | cut -c1-150) (no kprobes in this kernel)"
		fi
	else
		TCPC_WHY="tcpconnect is not installed (libbpf-tools)"
	fi
	[ -n "$SNOOP_WHY" ] && TCPC_WHY=$SNOOP_WHY
	BPFTRACE=$(command -v bpftrace) || BPFTRACE_WHY="bpftrace is not installed"
	command -v bpftool >/dev/null || BPFTRACE_WHY="bpftool is not installed (it tells when bpftrace has attached)"
}

bpf_links() {
	local fd n=0
	for fd in "/proc/$1/fd"/*; do
		[ "$(readlink "$fd" 2>/dev/null)" = "anon_inode:bpf_link" ] && n=$((n + 1))
	done
	echo "$n"
}

# Starts a tracer in the background writing to $2; ready when it holds $3
# BPF links (it has attached its programs). Output is fully buffered, as it
# is when an operator redirects it to a file.
start_tracer() { # binary outfile links
	"$1" >"$2" 2>"$2.err" </dev/null &
	local p=$!
	TRACER_PIDS+=("$p")
	wait_until 10 tracer_attached "$p" "$3" || return 1
	sleep 0.05
}
tracer_attached() { kill -0 "$1" 2>/dev/null && [ "$(bpf_links "$1")" -ge "$2" ]; }

# SIGINT makes each write out what it holds and exit. A SIGINT can get
# lost (bpftrace 0.17 was seen asleep in epoll_wait after one): it is sent
# again, then SIGTERM, then SIGKILL, 5 s apart.
stop_tracers() {
	local p sig
	for p in ${TRACER_PIDS[@]+"${TRACER_PIDS[@]}"}; do
		for sig in INT INT TERM KILL; do
			kill -"$sig" "$p" 2>/dev/null || break
			wait_until 5 gone "$p" && break
			say "  tracer $p still runs 5 s after SIG$sig"
		done
		wait "$p" 2>/dev/null || true
	done
	TRACER_PIDS=()
}
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ]; }

snoop_start() {
	[ -n "$SNOOP_WHY" ] && return 1
	rm -f "$TMP"/snoop.*
	start_tracer "$OPENSNOOP" "$TMP/snoop.open" 2 &&
		start_tracer "$EXECSNOOP" "$TMP/snoop.exec" 2 &&
		{ [ -z "$TCPCONNECT" ] || start_tracer "$TCPCONNECT" "$TMP/snoop.connect" 1; } && return 0
	SNOOP_WHY="a libbpf-tools tracer did not attach: $(cat "$TMP"/snoop.*.err 2>/dev/null | head -n1)"
	stop_tracers
	return 1
}

BT_SCRIPT='BEGIN { printf("ready\n"); }
tracepoint:syscalls:sys_enter_openat { @open[comm] = count(); }
tracepoint:syscalls:sys_enter_execve { @exec[comm] = count(); }
tracepoint:syscalls:sys_enter_connect { @connect[comm] = count(); }'

bt_attached() {
	[ "$(bpftool -j perf list 2>/dev/null | jq --argjson p "$1" \
		'[.[] | select(.pid == $p and .fd_type == "tracepoint")] | length' 2>/dev/null)" = 3 ]
}

bpftrace_start() {
	[ -n "$BPFTRACE_WHY" ] && return 1
	"$BPFTRACE" -e "$BT_SCRIPT" >"$TMP/bt.out" 2>"$TMP/bt.err" </dev/null &
	local p=$!
	TRACER_PIDS+=("$p")
	# BEGIN runs before the other probes are attached: ready is when
	# bpftool lists the three tracepoint programs of this bpftrace.
	wait_until 20 grep -q '^ready$' "$TMP/bt.out" && wait_until 20 bt_attached "$p" && return 0
	BPFTRACE_WHY="bpftrace did not attach: $(grep -v RLIMIT_MEMLOCK "$TMP/bt.err" | head -n1)"
	stop_tracers
	return 1
}

# ---------------------------------------------------------------- startup

# Startup rows are first declared (row), then measured together
# (measure_rows): the runs of every command are split into ROUNDS rounds
# and the rounds interleaved, so that a slow minute on this shared machine
# is spread over all rows instead of inflating one. Each round is one
# hyperfine call without a shell (-N), so no shell start-up is in the
# number; min/median/max come from the per-run times of its JSON export.
# Rows declared with ROW_CTX=daemon run at the end of each round, while
# the private daemon runs; the other rows run without it.
ROWS=$TMP/rows.tsv
: >"$ROWS"
ROW_CTX=host # tab-separated fields must not be empty: read would merge them

row() { # table kind label command...
	local table=$1 kind=$2 label=$3
	shift 3
	printf '%s\t%s\t%s\t%s\t%s\n' "$table" "$kind" "$label" "$ROW_CTX" "$(printf '%q ' "$@")" >>"$ROWS"
}

row_check() { # n cmd label
	local why
	if why=$(cd "$WS" && eval "try_once $2"); then
		: >"$TMP/times.$1"
	else
		say "  $3: not run ($why)"
		echo "$why" >"$TMP/times.$1.why"
	fi
}

row_round() { # n round cmd label
	[ -e "$TMP/times.$1.why" ] && return 0
	echo "== $4, round $2: $3" >>"$LOG"
	if (cd "$WS" && hyperfine -N --style basic --warmup "$WARMUP" \
		--runs $((RUNS / ROUNDS)) --export-json "$TMP/hf.json" -- "$3") >>"$LOG" 2>&1; then
		jq -r '.results[0].times[]' "$TMP/hf.json" >>"$TMP/times.$1"
	else
		say "  $4: hyperfine failed (see $LOG)"
		echo "hyperfine failed in round $2" >"$TMP/times.$1.why"
	fi
}

# Runs row_$1 (check or round) over the rows of context $2.
each_row() { # what ctx [round]
	local n=0 table kind label ctx cmd
	while IFS=$'\t' read -r table kind label ctx cmd; do
		n=$((n + 1))
		[ "$ctx" = "$2" ] || continue
		if [ "$1" = check ]; then
			row_check "$n" "$cmd" "$label"
		else
			row_round "$n" "$3" "$cmd" "$label"
		fi
	done <"$ROWS"
}

has_daemon_rows() { awk -F'\t' '$4 == "daemon" { f = 1 } END { exit !f }' "$ROWS"; }

daemon_rows_off() { # why
	local n=0 table kind label ctx cmd
	while IFS=$'\t' read -r table kind label ctx cmd; do
		n=$((n + 1))
		[ "$ctx" = daemon ] && echo "$1" >"$TMP/times.$n.why"
	done <"$ROWS"
	return 0
}

measure_rows() {
	local n=0 table kind label ctx cmd round mn md mx
	# A peer that cannot run here is recorded with the reason, once.
	each_row check host
	if has_daemon_rows; then
		if daemon_start "$TMP/daemon-startup.jsonl"; then
			each_row check daemon
			daemon_stop
		else
			daemon_rows_off "$DAEMON_WHY"
		fi
	fi
	for round in $(seq 1 "$ROUNDS"); do
		say "  round $round of $ROUNDS"
		each_row round host "$round"
		if has_daemon_rows; then
			if daemon_start "$TMP/daemon-startup.jsonl"; then
				each_row round daemon "$round"
				daemon_stop
			else
				daemon_rows_off "$DAEMON_WHY"
			fi
		fi
	done
	while IFS=$'\t' read -r table kind label ctx cmd; do
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
	# Through the daemon: register, fork, attach, run, unregister; the
	# daemon records the session (default --audit-mode aggregate).
	ROW_CTX=daemon row startup bpfbox "bpfbox run via daemon" \
		"$BIN" run --daemon-socket "$DSOCK" -w "$WS" -- /bin/true
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

# bpfbox builds its Landlock ruleset from the policy's paths; with
# namespaces its credential scan walks the workspace once and then reads
# only the directories changed since (its record, sandbox/cred_record.c;
# bench/changes.sh times it with the record off too), so neither a big
# workspace nor a long deny list should move the setup time much. The
# "1 file" row is the startup table's
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
	# The namespace layer (docs/SECURITY.md): bpfbox without and with it,
	# then what each namespace costs the kernel alone (util-linux unshare,
	# against unshare making none), the network namespace included: the
	# numbers behind not making one for --net deny.
	row scaling base "bpfbox run --no-namespaces" "$BIN" run --no-namespaces -w "$WS" -- /bin/true
	row scaling var "bpfbox run (with namespaces)" "$BIN" run -w "$WS" -- /bin/true
	row scaling base "unshare, no namespace" unshare /bin/true
	row scaling var "unshare -m (mount)" unshare -m /bin/true
	row scaling var "unshare -p -f (PID, with its fork)" unshare -p -f /bin/true
	row scaling var "unshare -i (IPC)" unshare -i /bin/true
	row scaling var "unshare -U (user)" unshare -U /bin/true
	row scaling var "unshare -n (network)" unshare -n /bin/true
}

bench_startup() {
	say "startup: hyperfine, $RUNS runs of each command in $ROUNDS interleaved rounds," \
		"$WARMUP warm-up runs per round"
	startup_rows
	scaling_rows
	measure_rows
}

# ------------------------------------------------ embedded mode with BPF

# Embedded mode with BPF (`--no-daemon --audit`) loads the audit and
# network programs for the one session and unloads them after it, which
# takes most of a second: too slow for hyperfine's run counts. Each run
# here is timed in three parts with wall-clock stamps: the shell's before
# the command, `loops now` as the sandboxed command starts, the shell's
# after bpfbox exits. "to command" is then setup (and the BPF load), "after
# command" the end (drain, unload, unregister). Both include the shell's
# fork and exec, the same in every row.
EMB=$TMP/embedded.tsv
: >"$EMB"

stamp_once() { # name command...
	local name=$1 t0 t1 t2
	shift
	t0=$EPOCHREALTIME
	if (cd "$WS" && "$@" >"$TMP/stamp" 2>>"$LOG" </dev/null); then
		t2=$EPOCHREALTIME
		t1=$(cat "$TMP/stamp")
		echo "$t0 $t1 $t2" >>"$TMP/emb.$name"
	else
		echo "exit $?: $(tail -n1 "$LOG" | cut -c1-200)" >"$TMP/emb.$name.why"
	fi
}

emb_cmd() { # name
	case "$1" in
	plain) EMB_CMD=("$BIN" run -q --level standard -w "$WS" --ro "$OUT" -- "$LOOPS" now) ;;
	embedded) EMB_CMD=("$BIN" run -q --no-daemon --audit /dev/null -w "$WS" --ro "$OUT" -- "$LOOPS" now) ;;
	daemon) EMB_CMD=("$BIN" run -q --daemon-socket "$DSOCK" -w "$WS" --ro "$OUT" -- "$LOOPS" now) ;;
	esac
}

bench_embedded() {
	local name
	say "embedded mode with BPF: $E_RUNS runs each, interleaved, timed in parts"
	rm -f "$TMP"/emb.*
	if [ "$(id -u)" -ne 0 ]; then
		echo "not root: --audit loads BPF programs" >"$TMP/emb.embedded.why"
	fi
	for _ in $(seq 1 "$E_RUNS"); do
		for name in plain embedded; do
			[ -e "$TMP/emb.$name.why" ] && continue
			emb_cmd "$name"
			stamp_once "$name" "${EMB_CMD[@]}"
		done
	done
	if daemon_start "$TMP/daemon-embedded.jsonl"; then
		emb_cmd daemon
		for _ in $(seq 1 "$E_RUNS"); do
			stamp_once daemon "${EMB_CMD[@]}"
		done
		daemon_stop
	else
		echo "$DAEMON_WHY" >"$TMP/emb.daemon.why"
	fi
	for name in plain embedded daemon; do
		local label
		case $name in
		plain) label="bpfbox run (no BPF)" ;;
		embedded) label="bpfbox run --no-daemon --audit /dev/null" ;;
		daemon) label="bpfbox run via daemon" ;;
		esac
		emb_cmd "$name"
		if [ -e "$TMP/emb.$name.why" ] || [ ! -s "$TMP/emb.$name" ]; then
			printf '%s\t%s\t-\t-\t-\t-\t-\t%s\n' "$name" "$label" \
				"$(cat "$TMP/emb.$name.why" 2>/dev/null || echo 'no run')" >>"$EMB"
			continue
		fi
		local a b mn md mx
		a=$(awk '{ print ($2 - $1) * 1000 }' "$TMP/emb.$name" | median)
		b=$(awk '{ print ($3 - $2) * 1000 }' "$TMP/emb.$name" | median)
		IFS=$'\t' read -r mn md mx < <(awk '{ print ($3 - $1) * 1000 }' "$TMP/emb.$name" | stats 1)
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t%s\n' "$name" "$label" "$a" "$b" "$mn" "$md" "$mx" \
			"$(show "${EMB_CMD[*]}")" >>"$EMB"
	done
}

emb_val() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n && $c != "-" { print $c }' "$EMB"; }

# ---------------------------------------------------------------- loops

# Environments of the loops, run in groups: the ones that need nothing
# running on the host, then the daemon's (the daemon up), then one group
# per audit tool (the tool up). A repetition runs every group once, so a
# burst of noise on this shared machine hits every environment rather than
# all runs of one; the host-wide tools never run while another group does.
ENV_PLAIN=(bare bpfbox bpfbox-fa bwrap firejail srt)
ENV_DAEMON=(d-off d-agg d-all)
ENV_TRACE=(auditd snoop bpftrace)
TABLES=(open exec connect)

# The command prefix that confines a loop in environment $1; $2 is "net"
# when the loop needs the host's loopback network.
env_prefix() {
	local env=$1 net=${2:-}
	PREFIX=()
	case "$env" in
	bare) ;;
	bpfbox | bpfbox-fa | d-*)
		# --ro: the loop binary lives under the build tree, outside the
		# default read-only system paths.
		PREFIX=("$BIN" run -q)
		case "$env" in
		bpfbox-fa) PREFIX+=(--mode full-access) ;;
		d-off) PREFIX+=(--daemon-socket "$DSOCK" --audit-mode off) ;;
		d-agg) PREFIX+=(--daemon-socket "$DSOCK" --audit-mode aggregate) ;;
		d-all) PREFIX+=(--daemon-socket "$DSOCK" --audit-mode all) ;;
		esac
		PREFIX+=(-w "$WS" --ro "$OUT")
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
	auditd | snoop | bpftrace)
		# Bare, under a host-wide tool: a shell writes the loop's pid
		# (exec keeps it) so that its events can be told from others'.
		PREFIX=(sh -c 'echo $$ >"$0"; exec "$@"' "$TMP/loop.pid")
		;;
	esac
}

env_label() {
	case "$1" in
	bare) echo "bare" ;;
	bpfbox) echo "bpfbox run" ;;
	bpfbox-fa) echo "bpfbox run --mode full-access" ;;
	d-off) echo "bpfbox daemon session, audit off" ;;
	d-agg) echo "bpfbox daemon session, aggregate" ;;
	d-all) echo "bpfbox daemon session, all" ;;
	auditd) echo "auditd, 3 syscall rules" ;;
	snoop) echo "libbpf-tools snoop to file" ;;
	bpftrace) echo "bpftrace, counts in kernel" ;;
	*) echo "$1" ;;
	esac
}

# What the tool around a bare loop runs, for the report.
tracer_cmd() {
	case "$1" in
	auditd) echo "auditd -n -c TMP/auditd; auditctl -b 8192; auditctl -a ${AUDIT_RULE[*]}; then" ;;
	snoop)
		local tc=''
		[ -n "$TCPCONNECT" ] && tc=", tcpconnect"
		case "$2" in
		open) echo "$(basename "${OPENSNOOP:-opensnoop}") >TMP/snoop.open & (and execsnoop$tc) then" ;;
		exec) echo "$(basename "${EXECSNOOP:-execsnoop}") >TMP/snoop.exec & (and opensnoop$tc) then" ;;
		connect) echo "tcpconnect >TMP/snoop.connect & (and opensnoop, execsnoop) then" ;;
		esac
		;;
	bpftrace) echo "bpftrace -e 'PROGRAM' >TMP/bt.out & then" ;;
	esac
}

loop_args() { # table
	case "$1" in
	open) LARGS=(open "$WS/file" "$N_OPEN") ;;
	exec) LARGS=(exec "$N_EXEC") ;;
	connect) LARGS=(connect "$PORT" "$N_CONNECT") ;;
	esac
}

# Operations a loop does, warm-up included (bench/loops.c): the count is
# the last of its arguments. Runs in a subshell ($(...)): LARGS is left alone.
ops_done() { # table
	loop_args "$1"
	local n=${LARGS[-1]}
	echo $((n + (n / 100 > 10 ? n / 100 : 10)))
}

is_off() { [ -e "$TMP/l.$1.$2.why" ]; }
off() { # table env why
	[ -e "$TMP/l.$1.$2.why" ] || echo "$3" >"$TMP/l.$1.$2.why"
}

run_loop() { # env table
	local env=$1 table=$2 net='' out why
	is_off "$table" "$env" && return 1
	[ "$table" = connect ] && net=net
	env_prefix "$env" "$net"
	loop_args "$table"
	echo "== $table/$env: ${PREFIX[*]} $LOOPS ${LARGS[*]}" >>"$LOG"
	rm -f "$TMP/loop.pid"
	if out=$(cd "$WS" && timeout 300 ${PREFIX[@]+"${PREFIX[@]}"} "$LOOPS" "${LARGS[@]}" \
		2>>"$LOG" </dev/null) && [[ "$out" =~ ^[0-9.]+$ ]]; then
		echo "$out" >>"$TMP/l.$table.$env"
		[ -s "$TMP/loop.pid" ] && cp "$TMP/loop.pid" "$TMP/pid.$table"
		return 0
	fi
	why="no result: $(tail -n1 "$LOG" | cut -c1-200)"
	[ "$env" = srt ] && [ "$net" = net ] &&
		why="$why (srt runs the command without the host's network namespace: TCP leaves only through srt's proxy)"
	off "$table" "$env" "$why"
	say "  $table/$env: not run ($why)"
	return 1
}

# One completeness line per run: recorded done lost lines.
rec() { # table env recorded lost [lines]
	echo "$3 $(ops_done "$1") $4 ${5:-$3}" >>"$TMP/l.$1.$2.rec"
}

# The daemon's events of the one session that ran (its audit file is
# emptied before each run; O_APPEND keeps the daemon writing at its end).
count_daemon() { # env table
	local f=$DAUDIT n lines lost
	wait_until 10 sh -c 'tail -c 2048 "$0" | grep -q "\"type\":\"session.end\""' "$f" ||
		say "  $2/$1: no session.end in the daemon's file"
	lost=$(grep -F '"type":"session.end"' "$f" | sed -n 's/.*"lost":\([0-9]*\).*/\1/p' | tail -n1 || true)
	case "$2" in
	open)
		grep -F '"type":"file"' "$f" | grep -F "\"path\":\"$WS/file\"" >"$TMP/sel" || true
		n=$(sed -n 's/.*"count":\([0-9]*\).*/\1/p' "$TMP/sel" | awk '{ s += $1 } END { print s + 0 }')
		lines=$(wc -l <"$TMP/sel")
		;;
	exec)
		n=$(grep -F '"type":"exec"' "$f" | grep -F '"comm":"true"' | grep -cF '"argv":["/bin/true"]' || true)
		lines=$n
		;;
	connect)
		n=$(grep -F '"type":"connect"' "$f" | grep -cE "\"port\":${PORT}[,}]" || true)
		lines=$n
		;;
	esac
	rec "$2" "$1" "$n" "${lost:-?}" "$lines"
}

# auditd: SYSCALL records of the loop's pid and name (open, connect: not
# the shell that wrote the pid file before it exec'd the loop) or of its
# children's exec of /bin/true (the record is written at the syscall's
# exit, when comm is already "true"). Lost: the kernel's counter, read
# before and after each loop.
count_auditd() {
	local table pid n log=$TMP/auditd/audit.log
	for table in "${TABLES[@]}"; do
		[ -s "$TMP/pid.$table" ] && [ -s "$TMP/auditlost.$table" ] || continue
		pid=$(cat "$TMP/pid.$table")
		case "$table" in
		open) n=$(grep -F "syscall=257 " "$log" | grep -F " pid=$pid " | grep -cF 'comm="loops"' || true) ;;
		exec) n=$(grep -F "syscall=59 " "$log" | grep -F " ppid=$pid " | grep -cF 'comm="true"' || true) ;;
		connect) n=$(grep -F "syscall=42 " "$log" | grep -F " pid=$pid " | grep -cF 'comm="loops"' || true) ;;
		esac
		rec "$table" auditd "$n" "$(cat "$TMP/auditlost.$table")"
	done
}

# libbpf-tools: lines of the loop's pid and path (opensnoop: PID COMM FD
# ERR PATH), of its children (execsnoop: PCOMM PID PPID RET ARGS) and of its
# connects (tcpconnect: PID COMM IP SADDR DADDR DPORT). Lost: what each tool
# reports on stderr ("Lost N events") over the whole group.
count_snoop() {
	local table pid n lost f
	for table in "${TABLES[@]}"; do
		[ -s "$TMP/pid.$table" ] || continue
		pid=$(cat "$TMP/pid.$table")
		f=$TMP/snoop.$table
		[ -e "$f" ] || continue
		case "$table" in
		open) n=$(awk -v p="$pid" -v f="$WS/file" '$1 == p && $5 == f' "$f" | wc -l) ;;
		exec) n=$(awk -v p="$pid" '$1 == "true" && $3 == p' "$f" | wc -l) ;;
		connect) n=$(awk -v p="$pid" -v port="$PORT" '$1 == p && $6 == port' "$f" | wc -l) ;;
		esac
		lost=$(grep -o 'Lost [0-9]*' "$f.err" 2>/dev/null | awk '{ s += $2 } END { print s + 0 }' || true)
		rec "$table" snoop "$n" "$lost"
	done
}

# bpftrace: the in-kernel count of the loop's process name (the loops
# binary is static: the loop's syscalls are its only ones). Nothing to lose.
count_bpftrace() {
	local table n
	for table in "${TABLES[@]}"; do
		[ -s "$TMP/pid.$table" ] || continue
		n=$(sed -n "s/^@$table\[loops\]: \([0-9]*\)$/\1/p" "$TMP/bt.out")
		rec "$table" bpftrace "${n:-0}" "n/a"
	done
}

group_plain() {
	local env table
	mark "group plain"
	for env in "${ENV_PLAIN[@]}"; do
		for table in "${TABLES[@]}"; do
			run_loop "$env" "$table" || true
		done
	done
}

group_daemon() {
	local env table
	mark "group daemon"
	if ! daemon_start "$TMP/daemon-loops.jsonl"; then
		for env in "${ENV_DAEMON[@]}"; do
			for table in "${TABLES[@]}"; do off "$table" "$env" "$DAEMON_WHY"; done
		done
		return
	fi
	for env in "${ENV_DAEMON[@]}"; do
		for table in "${TABLES[@]}"; do
			: >"$DAUDIT"
			# audit off records nothing of the loop: nothing to count
			run_loop "$env" "$table" && [ "$env" != d-off ] && count_daemon "$env" "$table"
		done
	done
	: >"$DAUDIT"
	daemon_stop
}

group_trace() { # env
	local env=$1 table ok=0
	mark "group $env"
	rm -f "$TMP"/pid.*
	case "$env" in
	auditd) auditd_start && ok=1 ;;
	snoop) snoop_start && ok=1 ;;
	bpftrace) bpftrace_start && ok=1 ;;
	esac
	if [ "$ok" = 0 ]; then
		local why
		case "$env" in
		auditd) why=$AUDITD_WHY ;;
		snoop) why=$SNOOP_WHY ;;
		bpftrace) why=$BPFTRACE_WHY ;;
		esac
		for table in "${TABLES[@]}"; do off "$table" "$env" "$why"; done
		say "  $env: not run ($why)"
		return
	fi
	for table in "${TABLES[@]}"; do
		if [ "$env" = snoop ] && [ "$table" = connect ] && [ -z "$TCPCONNECT" ]; then
			off connect snoop "$TCPC_WHY"
			continue
		fi
		local l0
		[ "$env" = auditd ] && l0=$(audit_lost)
		run_loop "$env" "$table" || continue
		[ "$env" = auditd ] && echo $(($(audit_lost) - l0)) >"$TMP/auditlost.$table"
	done
	mark "group $env: loops done"
	case "$env" in
	auditd)
		auditd_stop # auditd writes out what it holds before it exits
		count_auditd
		rm -f "$TMP/auditd/audit.log" "$TMP"/auditlost.*
		;;
	snoop)
		# They poll their perf buffers every 100 ms; SIGINT then makes them
		# write out what they hold. (The host's other processes keep them
		# busy, so their output never stops growing to wait for.)
		sleep 1
		stop_tracers
		count_snoop
		rm -f "$TMP"/snoop.*
		;;
	bpftrace)
		stop_tracers
		count_bpftrace
		;;
	esac
	mark "group $env: counted"
}

bench_loops() {
	local rep env table
	say "enforcement and audit: $REPS repetitions of each loop ($TRACE_REPS under the audit tools)," \
		"timed inside the process: open/close x $N_OPEN, fork+exec x $N_EXEC, connect x $N_CONNECT"
	rm -f "$TMP"/l.*
	for env in "${ENV_PLAIN[@]}" "${ENV_DAEMON[@]}" "${ENV_TRACE[@]}"; do
		for table in "${TABLES[@]}"; do : >"$TMP/l.$table.$env"; done
	done
	[ -z "$SRT" ] && for table in "${TABLES[@]}"; do off "$table" srt "$SRT_WHY"; done

	# The listener runs outside every sandbox, as a host service would.
	"$LOOPS" listen "$TMP/port" 2>>"$LOG" &
	LISTENER_PID=$!
	wait_until 5 test -s "$TMP/port"
	PORT=$(cat "$TMP/port")

	for rep in $(seq 1 "$REPS"); do
		say "  repetition $rep of $REPS"
		group_plain
		group_daemon
		if [ "$rep" -le "$TRACE_REPS" ]; then
			for env in "${ENV_TRACE[@]}"; do group_trace "$env"; done
		fi
	done
	kill "$LISTENER_PID"
	wait "$LISTENER_PID" 2>/dev/null || true
	LISTENER_PID=

	# Enforcement tables: open, exec, connect. Audit tables: aopen, ...
	for table in "${TABLES[@]}"; do
		for env in bare bpfbox bpfbox-fa d-off bwrap firejail srt; do
			loop_record "$table" "$table" "$env"
		done
		for env in bare d-off d-agg d-all "${ENV_TRACE[@]}"; do
			loop_record "a$table" "$table" "$env"
		done
	done
}

loop_record() { # result-table loop-table env
	local rt=$1 table=$2 env=$3 kind=peer mn md mx k=1 cmd recd='' lost=''
	case "$env" in
	bare) kind=bare ;;
	bpfbox | bpfbox-fa | d-*) kind=bpfbox ;;
	esac
	local net=''
	[ "$table" = connect ] && net=net
	env_prefix "$env" "$net"
	loop_args "$table"
	cmd=$(show "${PREFIX[*]:+${PREFIX[*]} }$LOOPS ${LARGS[*]}")
	case "$env" in
	auditd | snoop | bpftrace) cmd="$(tracer_cmd "$env" "$table") $(show "$LOOPS ${LARGS[*]}")" ;;
	esac
	# Completeness over all runs: recorded / done, and what the tool says it lost.
	if [ -s "$TMP/l.$table.$env.rec" ]; then
		recd=$(awk '{ r += $1; d += $2 } END { printf "%d / %d (%.1f%%)", r, d, d ? 100 * r / d : 0 }' "$TMP/l.$table.$env.rec")
		lost=$(awk '$3 ~ /^[0-9]+$/ { s += $3; n++ } $3 !~ /^[0-9]+$/ { o = $3 } END { print n ? s : (o != "" ? o : "?") }' "$TMP/l.$table.$env.rec")
	elif [ "$env" = d-off ] && [ -s "$TMP/l.$table.$env" ]; then
		recd="not recording"
	fi
	[ "$rt" = "$table" ] && recd='' lost='' # the enforcement tables have no such columns
	if [ -e "$TMP/l.$table.$env.why" ] && [ ! -s "$TMP/l.$table.$env" ]; then
		record "$rt" "$kind" "$(env_label "$env")" "$cmd" - - - "$(cat "$TMP/l.$table.$env.why")" "$recd" "$lost"
		return
	fi
	if [ ! -s "$TMP/l.$table.$env" ]; then
		record "$rt" "$kind" "$(env_label "$env")" "$cmd" - - - "no run" "$recd" "$lost"
		return
	fi
	# ns from the loop; the exec and connect tables read better in µs.
	[ "$table" != open ] && k=0.001
	IFS=$'\t' read -r mn md mx < <(stats "$k" <"$TMP/l.$table.$env")
	record "$rt" "$kind" "$(env_label "$env")" "$cmd" "$mn" "$md" "$mx" "" "$recd" "$lost"
}

# ---------------------------------------------------------------- pipeline

# Redact + encode on one core: tests/unit/test_redact's throughput test
# (a typical mix per exec: 2 forks, 2 exits, 8 opens of which one denied,
# 1 connect; the exec's argv goes through the redactor, every record
# through audit_encode_record into one JSON line) pinned to CPU 1.
PIPE=$TMP/pipeline.tsv
bench_pipeline() {
	local t=$TMP/test_redact
	: >"$PIPE"
	say "pipeline: redact + encode, $PIPE_RUNS run(s) of $PIPE_EVENTS events on one core"
	if [ ! -x "$t" ]; then
		echo "why	$BUILD/tests/test_redact is missing (make all builds it)" >>"$PIPE"
		return
	fi
	for _ in $(seq 1 "$PIPE_RUNS"); do
		if ! BENCH_EVENTS=$PIPE_EVENTS taskset -c 1 "$t" >"$TMP/pipe.out" 2>&1; then
			echo "why	test_redact failed: $(grep -m1 -i 'fail\|error' "$TMP/pipe.out")" >>"$PIPE"
			return
		fi
		cat "$TMP/pipe.out" >>"$LOG"
		sed -n 's|^redact+encode: .*: \([0-9]*\) events/s, \([0-9]*\) MB/s.*|enc\t\1\t\2|p' "$TMP/pipe.out" >>"$PIPE"
		sed -n 's|^redact: .*: \([0-9]*\)/s, \([0-9]*\) MB/s.*|red\t\1\t\2|p' "$TMP/pipe.out" >>"$PIPE"
	done
}

# ---------------------------------------------------------------- scale

# N sessions that sleep, each a real `bpfbox run` with its own connection
# to the daemon. At each N: the daemon's RSS, the registration probe
# (PROBES more sessions registered, attached and unregistered one at a
# time on one connection), and the open/close loop run by a process
# outside every session, against the same loop with no agent of ours
# attached (before the daemon starts and after it is cleaned up).
SCALE=$TMP/scale.tsv
scale_loops() { # name
	local _
	for _ in $(seq 1 "$REPS"); do
		(cd "$WS" && "$LOOPS" open "$WS/file" "$N_OPEN") >>"$TMP/sc.$1" 2>>"$LOG"
		"$LOOPS" getppid "$((N_OPEN * 10))" >>"$TMP/sg.$1" 2>>"$LOG"
	done
}

scale_point() { # n bring-up-seconds
	local probe rss hook
	if ! probe=$(timeout 300 python3 "$OUT/regprobe.py" "$DSOCK" "$PROBES" 2>>"$LOG"); then
		probe="- - - -"
		say "  scale $1: the registration probe failed (see $LOG)"
	fi
	rss=$(daemon_rss_kb)
	scale_loops "$1"
	hook=$(hook_cost)
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$probe" "$rss" "$hook" >>"$SCALE"
}

# What our openat programs cost a process outside every session, measured
# by the kernel (bpf_stats: run time and run count of each program) over
# one more open loop: the loop's timing is too noisy on a shared machine
# to resolve a few percent. bpf_stats is enabled only for that loop (it
# adds clock reads to every BPF program on the host) and put back.
# Prints ns per openat of the program of the attach mode in use (exit_openat
# on the tracepoint, fx_openat on the trampoline), or -.
BPF_STATS0=''
hook_cost() {
	local ids=() id l t0=0 c0=0 t1=0 c1=0 t c
	command -v bpftool >/dev/null || { echo -; return; }
	for l in exit_openat fx_openat; do
		id=$(bpftool -j link show pinned "$DPIN/link_$l" 2>/dev/null | jq -r .prog_id 2>/dev/null) || true
		[[ "$id" =~ ^[0-9]+$ ]] && ids+=("$id")
	done
	[ ${#ids[@]} -gt 0 ] || { echo -; return; }
	BPF_STATS0=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null) || { echo -; return; }
	sysctl -qw kernel.bpf_stats_enabled=1 || { BPF_STATS0=''; echo -; return; }
	read -r t0 c0 < <(prog_stats "${ids[@]}")
	(cd "$WS" && "$LOOPS" open "$WS/file" "$N_OPEN") >/dev/null 2>>"$LOG"
	read -r t1 c1 < <(prog_stats "${ids[@]}")
	sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS0" || true
	BPF_STATS0=''
	t=$((t1 - t0)) c=$((c1 - c0))
	[ "$c" -gt 0 ] && awk -v t="$t" -v c="$c" 'BEGIN { printf "%.1f", t / c }' || echo -
}
# Total run time of the programs, and the run count of the first (enter).
prog_stats() {
	local id a b t=0 c=''
	for id in "$@"; do
		read -r a b < <(bpftool -j prog show id "$id" | jq -r '"\(.run_time_ns // 0) \(.run_cnt // 0)"')
		t=$((t + a))
		[ -z "$c" ] && c=$b
	done
	echo "$t ${c:-0}"
}

running_sessions() {
	"$BIN" sessions --json --socket "$DSOCK" 2>/dev/null |
		jq '[.[] | select(.state == "running")] | length' 2>/dev/null || echo 0
}
# Polls `bpfbox sessions` every 0.2 s (a list of 1000 sessions is work
# for the daemon too) until N sessions run, for up to SECS seconds.
wait_sessions() { # secs n
	local _
	for _ in $(seq $(($1 * 5))); do
		[ "$(running_sessions)" -ge "$2" ] && return 0
		sleep 0.2
	done
	return 1
}
wait_no_sessions() { # secs
	local _
	for _ in $(seq $(($1 * 2))); do
		[ "$("$BIN" sessions --json --socket "$DSOCK" 2>/dev/null | jq length 2>/dev/null || echo x)" = 0 ] && return 0
		sleep 0.5
	done
	return 1
}
all_gone() {
	local p
	for p in ${SCALE_PIDS[@]+"${SCALE_PIDS[@]}"}; do
		kill -0 "$p" 2>/dev/null && return 1
	done
	return 0
}

bench_scale() {
	local n cur=0 t0 up p
	: >"$SCALE"
	rm -f "$TMP"/sc.* "$TMP"/sg.*
	say "scale: sessions $SCALE_NS, $PROBES registration probes and $REPS open loops at each"
	scale_loops none
	cp "$TMP/sc.none" "$TMP/sc.before"
	cp "$TMP/sg.none" "$TMP/sg.before"
	if ! command -v python3 >/dev/null; then
		SCALE_WHY="python3 is not installed (the registration probe)"
		return
	fi
	if ! daemon_start "$TMP/daemon-scale.jsonl"; then
		SCALE_WHY=$DAEMON_WHY
		return
	fi
	scale_point 0 0
	for n in $SCALE_NS; do
		t0=$EPOCHREALTIME
		while [ "$cur" -lt "$n" ]; do
			(cd "$WS" && exec "$BIN" run -q --timeout 0 --daemon-socket "$DSOCK" -w "$WS" \
				-- sleep 1000000) >/dev/null 2>>"$TMP/scale.err" </dev/null &
			SCALE_PIDS+=("$!")
			cur=$((cur + 1))
		done
		if ! wait_sessions 300 "$n"; then
			SCALE_WHY="only $(running_sessions) of $n sessions came up: $(tail -n1 "$TMP/scale.err")"
			say "  $SCALE_WHY"
			break
		fi
		up=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
		say "  $n sessions running (the last $((n - ${prev_n:-0})) up in $up s)"
		scale_point "$n" "$up"
		prev_n=$n
	done
	# The end: SIGTERM to every client at once; each forwards it to its
	# sleep and unregisters (a client waits 5 s for the reply, then exits
	# anyway and the daemon ends the session when it reads the request).
	local lines0
	lines0=$(wc -l <"$DAUDIT")
	t0=$EPOCHREALTIME
	for p in ${SCALE_PIDS[@]+"${SCALE_PIDS[@]}"}; do kill -TERM "$p" 2>/dev/null || true; done
	if ! wait_until 300 all_gone; then
		say "  some clients did not exit within 300 s of SIGTERM; killing them"
		for p in ${SCALE_PIDS[@]+"${SCALE_PIDS[@]}"}; do kill -KILL "$p" 2>/dev/null || true; done
	fi
	for p in ${SCALE_PIDS[@]+"${SCALE_PIDS[@]}"}; do wait "$p" 2>/dev/null || true; done
	SCALE_CLIENTS_S=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	SCALE_PIDS=()
	if wait_no_sessions 600; then
		SCALE_END_S=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	else
		SCALE_END_S="more than 600"
	fi
	SCALE_REASONS=$(tail -n +"$((lines0 + 1))" "$DAUDIT" | grep -F '"type":"session.end"' |
		sed -n 's/.*"reason":"\([^"]*\)".*/\1/p' | sort | uniq -c | awk '{ $1 = $1; print }' | paste -sd, | sed 's/,/, /g' || true)
	SCALE_WARNED=$(grep -c 'went away\|could not end' "$TMP/scale.err" || true)
	SCALE_END_RSS=$(daemon_rss_kb)
	SCALE_ATTACH=$(grep -m1 -o '"bpf_audit_attach":"[a-z]*"' "$DAUDIT" | cut -d'"' -f4 || true)
	daemon_stop
	# The kernel frees the removed cgroups after they go; let that pass.
	sleep "$SETTLE"
	: >"$TMP/sc.after"
	: >"$TMP/sg.after"
	scale_loops after
	cat "$TMP/sc.after" >>"$TMP/sc.none"
	cat "$TMP/sg.after" >>"$TMP/sg.none"
}
SCALE_WHY='' SCALE_ATTACH='' SCALE_WARNED=0 SCALE_CLIENTS_S='' SCALE_END_S='' SCALE_REASONS='' SCALE_END_RSS='' prev_n=''

# ------------------------------------------------------- attach modes

# bench/attach.sh: the outside loops with no agent, then with a private
# daemon forced into each audit attach mode and ATT_NS sessions open.
ATT=$TMP/attach.tsv ATT_WHY=''
bench_attach() {
	: >"$ATT"
	if [ -n "$DAEMON_WHY" ]; then
		ATT_WHY=$DAEMON_WHY
		return
	fi
	say "attach modes: outside loops with no agent and with $ATT_NS sessions in each mode"
	mark attach
	"$ROOT/bench/attach.sh" "$BIN" "$LOOPS" "$WS/file" "$N_OPEN" "$REPS" "$ATT_NS" \
		>"$ATT" 2>>"$LOG" || ATT_WHY="bench/attach.sh failed (see $LOG)"
}
att_med() { # mode loop -> median, or nothing when there is no row
	awk -F'\t' -v m="$1" -v l="$2" '$1 == m && $2 == l { print $3 }' "$ATT" | median || true
}
render_attach() {
	local none_o none_g m o g why
	none_o=$(att_med none open) none_g=$(att_med none getppid)
	{
		printf 'outside every session\topen+close ns (median)\t× no agent\tgetppid ns (median)\t× no agent\n'
		printf 'no agent of ours\t%s\t1.00×\t%s\t1.00×\n' "$none_o" "$none_g"
		for m in fexit tracepoint; do
			why=$(awk -F'\t' -v m="$m" '$1 == m && $2 == "why" { print $3; exit }' "$ATT")
			if [ -n "$why" ]; then
				printf 'daemon, attach %s\tnot loaded here: %s\t–\t–\t–\n' "$m" "$why"
				continue
			fi
			o=$(att_med "$m" open) g=$(att_med "$m" getppid)
			[ -z "$o" ] && continue
			printf 'daemon, attach %s\t%s\t%s\t%s\t%s\n' "$m" "$o" \
				"$(awk -v a="$o" -v b="$none_o" 'BEGIN { printf "%.2f×", a / b }')" "$g" \
				"$(awk -v a="$g" -v b="$none_g" 'BEGIN { printf "%.2f×", a / b }')"
		done
	} | md_table
}
interpret_attach() {
	[ -s "$ATT" ] || return 0
	local none_o none_g m o g worst=''
	none_o=$(att_med none open) none_g=$(att_med none getppid)
	for m in fexit tracepoint; do
		o=$(att_med "$m" open) g=$(att_med "$m" getppid)
		[ -z "$o" ] && continue
		worst="$worst$m $(awk -v a="$o" -v b="$none_o" -v c="$g" -v d="$none_g" 'BEGIN { x = a / b; y = c / d; printf "%.2f %.2f", x, y }');"
	done
	awk -v w="$worst" -v n="$ATT_NS" 'BEGIN {
		printf "**Attach modes.** With the daemon up and %d sessions open, a process outside every session ran ", n
		k = split(w, r, ";"); said = 0
		for (i = 1; i <= k; i++) {
			if (split(r[i], f, " ") < 3) continue
			printf "%sopen+close at %.2fx and getppid at %.2fx of no agent with attach %s (target at most 1.05x: %s)", (said ? "; " : ""), f[2], f[3], f[1], (f[2] <= 1.05 && f[3] <= 1.05 ? "met" : "missed")
			said = 1
		}
		if (!said) printf "no loop with a daemon of ours (see the rows)"
		printf ". Where the kernel refuses BPF trampolines (a row says so), the syscall tracepoints are the only attach point for opens left (this host has no kprobes either): enabling one sets the syscall-tracepoint work flag on every task, so every syscall of the host pays the slow path while the daemon runs, and every openat pays our program'"'"'s cgroup lookup.\n"
	}' | para
}

# ------------------------------------------------------- loss onset

# The sustained record rate at which the default ring (4 MiB) starts to
# lose records: one daemon session with --audit-mode all (one record per
# open) running `loops openrate` at each rate of LOSS_RATES for LOSS_SECS
# seconds, the daemon's own rate limit lifted (--audit-rate) so that the
# ring and the consumer are all that is measured.
LOSSF=$TMP/loss.tsv LOSS_WHY=''
bench_loss() {
	: >"$LOSSF"
	[ -n "$DAEMON_WHY" ] && { LOSS_WHY=$DAEMON_WHY; return; }
	say "loss onset: record rates $LOSS_RATES, $LOSS_SECS s each"
	mark loss
	local r got lost rec
	DAEMON_EXTRA=(--audit-rate 1000000000/1000000000)
	if ! daemon_start "$TMP/daemon-loss.jsonl"; then
		DAEMON_EXTRA=()
		LOSS_WHY=$DAEMON_WHY
		return
	fi
	DAEMON_EXTRA=()
	for r in $LOSS_RATES; do
		got=$("$BIN" run -q --daemon-socket "$DSOCK" --audit-mode all -w "$WS" --ro "$OUT" -- \
			"$LOOPS" openrate "$WS/file" "$r" "$LOSS_SECS" 2>>"$LOG") || continue
		wait_until 10 session_ended "$r" || true
		lost=$(grep -F '"type":"session.end"' "$DAUDIT" | tail -n1 | sed -n 's/.*"lost":\([0-9]*\).*/\1/p')
		rec=$(grep -F '"type":"session.end"' "$DAUDIT" | tail -n1 | sed -n 's/.*"records":\([0-9]*\).*/\1/p')
		printf '%s\t%s\t%s\t%s\n' "$r" "$got" "${rec:-?}" "${lost:-?}" >>"$LOSSF"
	done
	daemon_stop
}
session_ended() { [ "$(grep -cF '"type":"session.end"' "$DAUDIT")" -ge "$(($(wc -l <"$LOSSF") + 1))" ]; }
render_loss() {
	[ -s "$LOSSF" ] || return 0
	{
		printf 'opens a second asked\treached\trecords written\trecords lost\n'
		awk -F'\t' '{ printf "%s\t%.0f\t%s\t%s\n", $1, $2, $3, $4 }' "$LOSSF"
	} | md_table
}
interpret_loss() {
	[ -s "$LOSSF" ] || return 0
	awk -F'\t' '{ if ($4 + 0 == 0 && $2 + 0 > ok) ok = $2 + 0; if ($4 + 0 > 0 && (first == "" || $2 + 0 < first)) first = $2 + 0 }
	END {
		printf "**Loss onset.** With one record per open and the default ring, no record was lost up to %.0f records a second", ok
		if (first != "") printf "; loss began at %.0f records a second, where the daemon (one thread: ring, redaction, encoding, the file write) no longer kept up with the session on this 2-core machine", first
		else printf "; no rate tried lost records"
		printf ". The audit-all open loop above writes one record per open+close, at the rate its row shows.\n"
	}' "$LOSSF" | para
}

# ---------------------------------------------------------------- limits

# bench/limits.sh does the work (its header says what each row is).
LIM=$OUT/limits.tsv
bench_limits() {
	say "limits: pause latency ($LIM_RUNS OOM and $LIM_RUNS disk runs), disk monitor CPU"
	mark limits
	"$ROOT/bench/limits.sh" "$BIN" "$OUT" "$LIM_RUNS" "$LIM_SECS" "$WS_BIG" >>"$LOG" 2>&1 ||
		echo "bench/limits.sh failed (see $LOG)" >"$OUT/limits.why"
}
bench_egress() {
	say "egress: $EG_SETUPS connection setups and $EG_RUNS transfers of $EG_BYTES bytes, proxy and direct"
	mark egress
	"$ROOT/bench/egress.sh" "$BIN" "$OUT" "$EG_SETUPS" "$EG_RUNS" "$EG_BYTES" >>"$LOG" 2>&1 ||
		echo "bench/egress.sh failed (see $LOG)" >"$OUT/egress.why"
}
# bench/cmdrules.sh: the command rules' cost per exec (its header says how).
bench_cmdrules() {
	say "command rules: $CMD_EXECS execs per case"
	mark cmdrules
	"$ROOT/bench/cmdrules.sh" "$BIN" "$OUT" "$CMD_EXECS" >>"$LOG" 2>&1 ||
		echo "bench/cmdrules.sh failed (see $LOG)" >"$OUT/cmdrules.why"
}
# bench/changes.sh: change sets' costs (its header says what each row is).
bench_changes() {
	say "change sets: review against direct, $CH_FILES changed files, a workspace of $CH_WS files"
	mark changes
	BENCH_CHANGES_RUNS=$CH_RUNS "$ROOT/bench/changes.sh" "$BIN" "$OUT" "$CH_FILES" "$CH_WS" \
		"$CH_ROUNDS" >>"$LOG" 2>&1 || echo "bench/changes.sh failed (see $LOG)" >"$OUT/changes.why"
}
render_changes() {
	not_run changes "$OUT/changes.md" && return
	cat "$OUT/changes.md"
}
# not_run NAME [RESULTS]: says "Not run: why." and succeeds when bench NAME
# left $OUT/NAME.why, or when its RESULTS file is missing or empty.
not_run() {
	if [ -s "$OUT/$1.why" ] || { [ -n "${2:-}" ] && [ ! -s "$2" ]; }; then
		echo "Not run: $(cat "$OUT/$1.why" 2>/dev/null || echo 'no results')."
		return 0
	fi
	return 1
}
render_cmdrules() {
	not_run cmdrules "$OUT/cmdrules.tsv" && return
	echo "| case | program ns / exec | wall us / exec (fork+exec+wait) |"
	echo "|---|---|---|"
	awk -F'\t' '{ printf "| %s | %s | %s |\n", $1, $2, $4 }' "$OUT/cmdrules.tsv"
}
EG=$OUT/egress.tsv
eg_col() { awk -v p="$1" -v c="$2" '$1 == p { print $c }' "$EG"; }
render_egress() {
	not_run egress "$EG" && return
	echo "| path | setup median µs | setup p90 µs | MB/s median | MB/s min | MB/s max |"
	echo "|---|---:|---:|---:|---:|---:|"
	awk '{ n = $1 == "proxy" ? "name rule (proxy, splice)" : $1 == "direct" ? "address rule (direct)" : $1 == "tls-spliced" ? "TLS, name rule (proxy, splice)" : $1 == "tls-wildcard" ? "TLS terminated, a wildcard HTTP rule (each setup mints a leaf)" : $1 == "h2-spliced" ? "HTTP/2 (curl, nghttpd), name rule (proxy, splice)" : $1 == "h2-terminated" ? "HTTP/2 terminated (a --secret host, h2 on both sides)" : "TLS terminated (a --secret host)"; printf "| %s | %s | %s | %s | %s | %s |\n", n, $2, $3, $4, $5, $6 }' "$EG"
}
interpret_egress() {
	[ -s "$OUT/egress.why" ] && return 0
	[ -s "$EG" ] || return 0
	awk -v dm="$(eg_col direct 4)" -v pm="$(eg_col proxy 4)" -v ds="$(eg_col direct 2)" \
		-v ps="$(eg_col proxy 2)" 'BEGIN {
		printf "**Egress by name.** Through the proxy a transfer runs at %.0f%% of the direct connection'"'"'s throughput (%s against %s MB/s, median), and a connection is ready %.0f µs later (median setup %s against %s µs): the redirect, accept, a thread, the peek at the request and a second TCP handshake. The target is at most 10%% of throughput and 0.2 ms of setup.", pm / dm * 100, pm, dm, ps - ds, ps, ds
	}'
	[ -n "$(eg_col tls-terminated 4)" ] || return 0
	echo
	awk -v sm="$(eg_col tls-spliced 4)" -v tm="$(eg_col tls-terminated 4)" -v ss="$(eg_col tls-spliced 2)" \
		-v ts="$(eg_col tls-terminated 2)" 'BEGIN {
		printf "**TLS terminated** (a `--secret` host): a transfer runs at %.0f%% of the spliced one'"'"'s throughput (%s against %s MB/s, median; the target: at least 80%%), and a connection is ready %.0f µs later (median setup %s against %s µs, TLS handshake included; the target: at most 1 ms): the proxy'"'"'s own handshakes with the server and the tool, and every byte decrypted and encrypted again.", tm / sm * 100, tm, sm, ts - ss, ts, ss
	}'
	[ -n "$(eg_col tls-wildcard 2)" ] || return 0
	echo
	awk -v ts="$(eg_col tls-terminated 2)" -v ws="$(eg_col tls-wildcard 2)" 'BEGIN {
		printf "**A wildcard HTTP rule**: the first connection to each name under it waits for the proxy to mint that name'"'"'s leaf (one signature by the session CA, the leaf key made once per session); its median setup is %s µs against %s µs for a host whose leaf exists, so a leaf costs about %.0f µs, once per name and session.", ws, ts, ws - ts
	}'
	if [ -s "$OUT/egress.h2why" ]; then
		echo
		echo "HTTP/2 rows not run: $(cat "$OUT/egress.h2why")"
	fi
	[ -n "$(eg_col h2-terminated 4)" ] || return 0
	echo
	awk -v sm="$(eg_col h2-spliced 4)" -v tm="$(eg_col h2-terminated 4)" -v ss="$(eg_col h2-spliced 2)" \
		-v ts="$(eg_col h2-terminated 2)" 'BEGIN {
		d = ts - ss; printf "**HTTP/2 terminated** (curl --http2, a `--secret` host): a transfer runs at %.0f%% of the spliced one'"'"'s throughput (%s against %s MB/s, median; the target: at least 80%%), and a connection is ready %.0f µs %s (median setup %s against %s µs, each less its name lookup; both include curl loading a trust store of the system'"'"'s size, about 20 ms here): for a tool that offers h2, the proxy finishes its handshake with the server before it answers the tool'"'"'s (the server'"'"'s choice of protocol is offered to the tool), then every frame goes through nghttp2 on both sides.", tm / sm * 100, tm, sm, d < 0 ? -d : d, d < 0 ? "sooner" : "later", ts, ss
	}'
}
# nearest-rank percentile P of column C of the rows of kind K
lim_pct() { # kind col pct
	awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$LIM" | sort -g |
		awk -v p="$3" '{ v[NR] = $1 } END { if (NR) { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] } }'
}
lim_n() { awk -v k="$1" '$1 == k' "$LIM" | wc -l; }
render_limits() {
	not_run limits && return
	echo "| pause | runs | p50 ms | p99 ms | max ms |"
	echo "|---|---:|---:|---:|---:|"
	local r
	for r in "oom 2 OOM kill counted → \`cgroup.freeze\` set" "oom 3 OOM kill counted → every task frozen" \
		"disk 2 crossing write begins → every task frozen"; do
		set -- $r
		local k=$1 c=$2
		shift 2
		[ "$(lim_n "$k")" -gt 0 ] || continue
		echo "| $* | $(lim_n "$k") | $(lim_pct "$k" "$c" 50) | $(lim_pct "$k" "$c" 99) | $(lim_pct "$k" "$c" 100) |"
	done
	echo
	echo "| workspace | writes/s (size) | writes done | \`bpfbox run\` CPU, % of one core | start-up + initial scan, ms CPU |"
	echo "|---|---:|---:|---:|---:|"
	awk '$1 == "cpu" {
		ws = ($2 == "one" ? "1 file" : "'"$N_FILES"' files")
		sz = ($3 >= 1000 ? "4 KiB" : "64 KiB")
		printf "| %s | %s | %d | %.3f | %.1f |\n", ws, ($3 == 0 ? "0 (idle)" : $3 " (" sz ")"), $4, $5 / $6 * 100, $7 / 1e6
	}' "$LIM"
	local du b0 b1
	du=$(awk '$1 == "du" { print $2 / 1e6 }' "$LIM" | median)
	[ -n "$du" ] && printf '\n`du -s WS_BIG` (%s files, warm cache, 5 runs): median %.1f ms.\n' "$N_FILES" "$du"
	b0=$(awk '$1 == "bomb" { print $2 }' "$LIM" | median)
	b1=$(awk '$1 == "bomb" { print $3 }' "$LIM" | median)
	[ -n "$b0" ] && [ -n "$b1" ] &&
		printf '\nThe host during a fork bomb held at `--pids 16` (%d runs): 5 execs of /bin/true took %s ms (median) before it and %s ms during it.\n' \
			"$(lim_n bomb)" "$b0" "$b1"
}
interpret_limits() {
	[ -s "$OUT/limits.why" ] && return 0
	[ -s "$LIM" ] || return 0
	local du
	du=$(awk '$1 == "du" { print $2 / 1e6 }' "$LIM" | median)
	awk -v du="$du" -v oa50="$(lim_pct oom 2 50)" -v oa99="$(lim_pct oom 2 99)" -v of99="$(lim_pct oom 3 99)" \
		-v d50="$(lim_pct disk 2 50)" -v d99="$(lim_pct disk 2 99)" -v n="$N_FILES" '
	$1 == "cpu" && $2 == "big" { pct[$3] = $5 / $6 * 100 }
	END {
		printf "**Limits.** "
		if (oa99 != "") printf "After an OOM kill the session'"'"'s `cgroup.freeze` was set %s ms (p50) and %s ms (p99) after the kernel counted the kill, every task frozen by %s ms (p99; that waits for the victim to finish exiting): target 100 ms %s. ", oa50, oa99, of99, (of99 + 0 <= 100 ? "met" : "missed")
		if (d99 != "") printf "Past the disk limit every task was frozen %s ms (p50) and %s ms (p99) after the crossing write began: target 1 s %s; a peer that measures the workspace every 30 s pauses up to 30 s late. ", d50, d99, (d99 + 0 <= 1000 ? "met" : "missed")
		worst = -1; for (r in pct) if (pct[r] > worst) worst = pct[r]
		if (worst >= 0) printf "With %s files in the workspace the disk monitor cost %.2f%% of one core at 100 writes/s and %.2f%% at 1000 writes/s (target at most 1%%: %s). ", n, pct[100], pct[1000], (worst <= 1 ? "met" : "missed")
		if (du != "") printf "Rescanning instead would cost one `du -s` of %.1f ms per check, %.1f%% of a core at one check per second.", du, du / 10
		printf "\n"
	}' "$LIM" | para
}

# ---------------------------------------------------------------- report

# A markdown table from tab-separated lines on stdin, the first line the
# header; the first column left-aligned, the others right-aligned.
md_table() {
	awk -F'\t' '
	function clen(t) { gsub(/[\200-\277]/, "", t); return length(t) }
	function pad(t, k, left,   sp) { sp = ""; k -= clen(t); while (k-- > 0) sp = sp " "; return left ? t sp : sp t }
	function dashes(k,   d) { d = ""; while (k-- > 0) d = d "-"; return d }
	{ n++; if (NF > nc) nc = NF; for (j = 1; j <= NF; j++) { c[n, j] = $j; if (clen($j) > w[j]) w[j] = clen($j) } }
	END {
		for (i = 1; i <= n; i++) {
			line = "|"
			for (j = 1; j <= nc; j++) line = line " " pad(c[i, j], w[j], j == 1) " |"
			print line
			if (i == 1) {
				line = "|"
				for (j = 1; j <= nc; j++) line = line " " dashes(w[j] - 1) (j == 1 ? "-" : ":") " |"
				print line
			}
		}
	}'
}

# A markdown table of one result table: min/median/max and the median's
# ratio to bare and to the best (lowest-median) peer. The scaling table
# compares each row with the row before it (1 file, 0 patterns) instead.
# Audit tables add what the tool recorded against what the loop did, and
# what the tool itself counted as lost.
# What --only startup and --only loops print (write_partial): the same
# tables as the full report's sections 1, 2 and 3.
render_startup() {
	render_table startup ms
	render_commands startup
}
render_loops() {
	local t u
	for t in open:ns exec:µs connect:µs aopen:ns aexec:µs aconnect:µs; do
		u=${t#*:} t=${t%%:*}
		echo "### $t ($u per operation)"
		echo
		render_table "$t" "$u"
		render_commands "$t"
		echo
	done
}
interpret_loops() {
	interpret_enforcement
	echo
	interpret_audit
}

render_table() { # table unit [bare-median]
	awk -F'\t' -v T="$1" -v U="$2" -v BARE="${3:-}" '
	function f(v) {
		if (v == "-") return "–"
		if (U == "ms") return sprintf(v < 1 ? "%.3f" : v < 100 ? "%.2f" : "%.1f", v)
		return sprintf(v < 100 ? "%.2f" : v < 1000 ? "%.1f" : "%.0f", v)
	}
	function r(a, b) { return (a == "-" || b == "" || b == "-" || b == 0) ? "–" : sprintf("%.2f×", a / b) }
	$1 == T {
		n++; kind[n] = $2; label[n] = $3; mn[n] = $5; md[n] = $6; mx[n] = $7; rc[n] = $9; lo[n] = $10
		if ($9 != "" || $10 != "") extra = 1
		if ($2 == "bare" && $6 != "-") BARE = $6
		if ($2 == "peer" && $6 != "-" && (best == "" || $6 + 0 < best + 0)) { best = $6; bestl = $3 }
	}
	END {
		if (T == "scaling") h6 = "× first of pair"; else h6 = "× best peer"
		printf "\tmin %s\tmedian %s\tmax %s\t× bare\t%s", U, U, U, h6
		if (extra) printf "\trecorded / done\tlost"
		printf "\n"
		for (i = 1; i <= n; i++) {
			l = label[i]
			if (md[i] == "-") l = l " (not run)"
			if (T == "scaling") { if (kind[i] == "base") base = md[i]; x = r(md[i], base) } else x = r(md[i], best)
			printf "%s\t%s\t%s\t%s\t%s\t%s", l, f(mn[i]), f(md[i]), f(mx[i]), r(md[i], BARE), x
			if (extra) printf "\t%s\t%s", (rc[i] == "" ? "–" : rc[i]), (lo[i] == "" ? "–" : lo[i])
			printf "\n"
		}
	}' "$RES" | md_table
	awk -F'\t' -v T="$1" '$1 == T && $2 == "peer" && $6 != "-" { print $6 "\t" $3 }' "$RES" |
		sort -g | head -n1 | cut -f2 | sed 's/^\(..*\)$/\nBest peer: \1./'
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
# Column 9 or 10 of one row.
col() { awk -F'\t' -v T="$1" -v L="$2" -v C="$3" '$1 == T && $3 == L { print $C }' "$RES"; }

render_embedded() {
	{
		printf '\tto command ms\tafter command ms\tmin total ms\tmedian total ms\tmax total ms\n'
		awk -F'\t' '
		function f(v) { return v == "-" ? "–" : sprintf(v < 1 ? "%.3f" : v < 100 ? "%.2f" : "%.1f", v) }
		{ l = $2; if ($4 == "-") l = l " (not run)"; printf "%s\t%s\t%s\t%s\t%s\t%s\n", l, f($3), f($4), f($5), f($6), f($7) }' "$EMB"
	} | md_table
	echo
	echo '```'
	awk -F'\t' '$9 != "" { printf "%-42s %s\n", $2 ":", $9 }' "$EMB"
	echo '```'
	awk -F'\t' '$8 != "" { printf "\n- %s not run: %s\n", $2, $8 }' "$EMB"
}

render_pipeline() {
	if grep -q '^why' "$PIPE"; then
		printf '\n- not run: %s\n' "$(grep '^why' "$PIPE" | cut -f2-)"
		return
	fi
	{
		printf '\tmin per s\tmedian per s\tmax per s\tmedian MB/s\n'
		local what label
		for what in enc red; do
			if [ "$what" = enc ]; then
				label="redact + encode: events (MB/s: JSON out)"
			else
				label="redact alone: 67-byte argv (MB/s: argv in)"
			fi
			grep "^$what	" "$PIPE" | cut -f2 | stats 1 | awk -F'\t' -v l="$label" \
				-v mb="$(grep "^$what	" "$PIPE" | cut -f3 | median)" \
				'{ printf "%s\t%.0f\t%.0f\t%.0f\t%s\n", l, $1, $2, $3, mb }'
		done
	} | md_table
}

scale_med() { # name [sc|sg] -> median ns of the outside open (or getppid) loop
	[ -s "$TMP/${2:-sc}.$1" ] && median <"$TMP/${2:-sc}.$1"
}

render_scale() {
	local none
	none=$(scale_med none)
	{
		printf 'sessions\tup in s\tregister µs (median)\tregister µs (p90)\tattach µs\tunregister µs\tdaemon VmRSS MB\toutside open+close ns (median)\t× no agent\toutside getppid ns (median)\t× no agent\topenat hook ns/call\n'
		local which gnone
		gnone=$(scale_med none sg)
		for which in before after; do
			[ -s "$TMP/sc.$which" ] || continue
			printf 'no agent of ours, %s\t–\t–\t–\t–\t–\t–\t%s\t%s\t%s\t%s\t–\n' \
				"$([ "$which" = before ] && echo "before the daemon" || echo "after its cleanup")" \
				"$(scale_med "$which" | awk '{ printf "%.1f", $1 }')" \
				"$(awk -v m="$(scale_med "$which")" -v n="$none" 'BEGIN { printf "%.2f×", m / n }')" \
				"$(scale_med "$which" sg | awk '{ printf "%.1f", $1 }')" \
				"$(awk -v m="$(scale_med "$which" sg)" -v n="$gnone" 'BEGIN { if (m != "" && n != "") printf "%.2f×", m / n; else printf "–" }')"
		done
		local n up reg p90 att unreg rss m g hook
		while IFS=$'\t' read -r n up probe rss hook; do
			read -r reg p90 att unreg <<<"$probe"
			m=$(scale_med "$n")
			g=$(scale_med "$n" sg)
			awk -v n="$n" -v up="$up" -v reg="$reg" -v p90="$p90" -v att="$att" -v un="$unreg" \
				-v rss="$rss" -v m="$m" -v none="$none" -v g="$g" -v gnone="$gnone" -v hook="$hook" 'BEGIN {
				printf "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\n", (n == 0 ? "daemon, 0 sessions" : n),
					(n == 0 ? "–" : up), reg, p90, att, un, rss / 1024,
					(m == "" ? "–" : sprintf("%.1f", m)), (m == "" || none == "" ? "–" : sprintf("%.2f×", m / none)),
					(g == "" ? "–" : sprintf("%.1f", g)), (g == "" || gnone == "" ? "–" : sprintf("%.2f×", g / gnone)),
					(hook == "-" || hook == "" ? "–" : hook)
			}'
		done <"$SCALE"
	} | md_table
}

# What the numbers mean, one paragraph per section, the figures from this
# run. They state differences and the issues' targets, not verdicts
# beyond "met" or "missed", and how large the noise of this run was.
para() { fold -s -w 76 | sed 's/ *$//'; }

interpret_startup() {
	local bare bp bd bw best bestl
	bare=$(med startup "bare /bin/true")
	bp=$(med startup "bpfbox run (workspace-write)")
	bd=$(med startup "bpfbox run via daemon")
	bw=$(med startup "bwrap (/ read-only)")
	read -r best bestl < <(awk -F'\t' '$1 == "startup" && $2 == "peer" && $6 != "-" { print $6 "\t" $3 }' "$RES" |
		sort -g | head -n1 | tr '\t' ' ') || true
	awk -v bare="$bare" -v bp="$bp" -v bd="$bd" -v bw="$bw" -v best="$best" -v bestl="$bestl" \
		-v ws1="$(med scaling "workspace with 1 file")" \
		-v wsn="$(med scaling "workspace with $N_FILES files")" \
		-v d0="$(med scaling "0 deny patterns")" -v dn="$(med scaling "$N_DENY deny patterns")" \
		-v p0="$(med scaling "policy check, 0 deny patterns")" \
		-v pn="$(med scaling "policy check, $N_DENY deny patterns")" \
		-v nn="$(med scaling "bpfbox run --no-namespaces")" -v nw="$(med scaling "bpfbox run (with namespaces)")" \
		-v u0="$(med scaling "unshare, no namespace")" -v um="$(med scaling "unshare -m (mount)")" \
		-v up="$(med scaling "unshare -p -f (PID, with its fork)")" -v ui="$(med scaling "unshare -i (IPC)")" \
		-v uu="$(med scaling "unshare -U (user)")" -v un="$(med scaling "unshare -n (network)")" \
		-v nfiles="$N_FILES" -v ndeny="$N_DENY" -v limits="${BPFBOX_LIMITS:-}" \
		-v level="$(echo "$BPFBOX_LEVEL" | sed -n 's/.*enabled \([A-Za-z]*\).*/\1/p')" '
	function pct(a, b) { return sprintf("%+.0f%%", (a / b - 1) * 100) }
	function met(c) { return c ? "met" : "missed" }
	BEGIN {
		if (bare == "" || bp == "") { print "bpfbox or the bare baseline did not run; no interpretation."; exit }
		printf "**Startup.** Every tool call of an agent pays this once. `bpfbox run` adds %.2f ms to a bare `/bin/true` (median %.2f ms against %.3f ms): loading and merging the policy, building the Landlock ruleset and the seccomp filter, one clone into new mount, PID and IPC namespaces%s, the child building its view of the host (a recursive read-only flag, a minimal /dev, tmpfs /tmp and /dev/shm, a fresh /proc, binds over the hidden dirs and deny paths) and restricting itself, and the vfork of the command by the namespace'"'"'s init. ", bp - bare, bp, bare, (limits != "" ? sprintf(", the session'"'"'s resource-limit cgroups (`bpfbox status` here: %s)", limits) : "")
		if (bd != "")
			printf "Through the daemon it adds %.2f ms (median %.2f ms): the same, plus a register, an attach and an unregister round trip on the unix socket and the cgroup the daemon makes and removes; the daemon records the session meanwhile. ", bd - bare, bd
		if (bw != "") {
			printf "Target: within 2 ms of bare, %s (%.2f ms%s); and under half of bwrap, %s: bpfbox'"'"'s median is %.2f× bwrap (/ read-only)'"'"'s %.2f ms", met(bp - bare <= 2), bp - bare, (bd != "" ? sprintf(", %.2f ms through the daemon", bd - bare) : ""), met(bp <= bw / 2), bp / bw, bw
			printf ", and its added time %.2f× bwrap'"'"'s added %.2f ms. ", (bp - bare) / (bw - bare), bw - bare
		}
		if (best != "" && bestl != "bwrap (/ read-only)")
			printf "The fastest peer here, %s, adds %.2f ms. ", bestl, best - bare
		if (ws1 != "" && wsn != "")
			printf "A workspace of %d files instead of 1 moves the median by %s (%+.3f ms; bpfbox builds the ruleset from the policy'"'"'s paths and does not walk the workspace). ", nfiles, pct(wsn, ws1), wsn - ws1
		if (d0 != "" && dn != "") {
			printf "%d deny patterns instead of 0 move it by %s (%+.3f ms)", ndeny, pct(dn, d0), dn - d0
			if (p0 != "" && pn != "")
				printf "; `bpfbox policy check` alone, with the same two configs, moves by %+.3f ms", pn - p0
			printf ". "
		}
		if (nn != "" && nw != "")
			printf "The namespace layer costs %+.3f ms (median with it %.2f ms, %.2f ms with --no-namespaces); the kernel alone, against `unshare` making none (%.2f ms): mount %+.3f ms, PID with its fork %+.3f ms, IPC %+.3f ms, user %+.3f ms, network %+.3f ms. ", nw - nn, nw, nn, u0, um - u0, up - u0, ui - u0, uu - u0, un - u0
		if (level != "" && level != "Full")
			printf "The sessions ran at level %s: there `**/` patterns are kept in the policy but make no kernel rule (docs/SECURITY.md: the BPF LSM layer enforces them, at level Full), so the deny pair must be measured again where that layer loads. ", level
		if (ws1 != "")
			printf "Noise: the same `bpfbox run -w WS -- /bin/true` measured twice in this run (the startup table and the first scaling row) gave medians of %.2f and %.2f ms, %.0f%% apart; differences of that order between two rows are this shared 2-core machine, not the sandbox.\n", bp, ws1, (bp > ws1 ? bp / ws1 - 1 : ws1 / bp - 1) * 100
		else printf "\n"
	}' | para
}

interpret_embedded() {
	awk -v pa="$(emb_val plain 3)" -v pb="$(emb_val plain 4)" -v pt="$(emb_val plain 6)" \
		-v ea="$(emb_val embedded 3)" -v eb="$(emb_val embedded 4)" -v et="$(emb_val embedded 6)" \
		-v da="$(emb_val daemon 3)" -v db="$(emb_val daemon 4)" -v dt="$(emb_val daemon 6)" -v n="$E_RUNS" '
	function ms(v) { return sprintf(v < 10 && v > -10 ? "%.2f ms" : "%.0f ms", v) }
	BEGIN {
		if (pa == "" || ea == "") { print "**Embedded mode with BPF** did not run; no interpretation."; exit }
		printf "**Embedded mode with BPF.** Without a daemon, `--audit` as root loads the audit and network programs for the one session: %s from the shell to the command against %s without BPF, so loading costs %s; after the command exits bpfbox needs %s against %s, so draining the ring, writing session.end and detaching the cgroup programs cost %s (the tracepoint links, whose last close waits for grace periods, are closed by a helper after bpfbox exits, `userspace/lib/closer.c`). ", ms(ea), ms(pa), ms(ea - pa), ms(eb), ms(pb), ms(eb - pb)
		printf "In all, %s per session (median of %d runs). ", ms(et), n
		if (da != "")
			printf "Through a daemon, which loaded the programs once, the same session takes %.2f ms to the command and %.2f ms after it (%.2f ms in all): the load and unload are not part of the session.", da, db, dt
		printf "\n"
	}' | para
}

interpret_enforcement() {
	awk -v o0="$(med open bare)" -v o1="$(med open "bpfbox run")" -v ofa="$(med open "bpfbox run --mode full-access")" \
		-v od="$(med open "bpfbox daemon session, audit off")" -v obw="$(med open bwrap)" \
		-v e0="$(med exec bare)" -v e1="$(med exec "bpfbox run")" -v ed="$(med exec "bpfbox daemon session, audit off")" \
		-v c0="$(med connect bare)" -v c1="$(med connect "bpfbox run")" -v cd="$(med connect "bpfbox daemon session, audit off")" '
	function met(c) { return c ? "met" : "missed" }
	BEGIN {
		if (o0 == "" || o1 == "") { print "**Enforcement.** bpfbox or the bare baseline did not run; no interpretation."; exit }
		printf "**Enforcement.** Inside the session the cost is per syscall. open+close costs %.2f× bare at level Standard (%.0f against %.0f ns: Landlock checks each path walk against the ruleset, seccomp runs its filter on each syscall)", o1 / o0, o1, o0
		if (ofa != "") printf "; with `--mode full-access`, which keeps the seccomp filter but gives Landlock no file-system rights to handle, %.2f× (%.0f ns)", ofa / o0, ofa
		if (od != "") printf "; in a daemon session (Standard plus the session cgroup and the BPF programs, audit off) %.2f× (%.0f ns, %+.0f ns against `bpfbox run`: the audit hooks run for its opens even with audit off, see above)", od / o0, od, od - o1
		printf ". "
		printf "Target: open/close in a session within 5%% of bare, %s (%+.0f%%). ", met(o1 / o0 <= 1.05), (o1 / o0 - 1) * 100
		if (ofa != "") {
			ll = (o1 - ofa) / o0
			printf "Landlock'"'"'s file-system rules alone %s: they add %+.0f ns per open+close (Standard %.0f ns against full-access %.0f ns, %+.0f%% of bare), while seccomp and the rest add %.0f ns (%+.0f%%). ", (ll > 0.05 ? "cost more than that" : "stay within it"), o1 - ofa, o1, ofa, ll * 100, ofa - o0, (ofa / o0 - 1) * 100
		}
		if (obw != "") printf "bwrap, with no seccomp filter and no Landlock, is at %.2f×. ", obw / o0
		if (e0 != "" && e1 != "") {
			printf "fork+exec: %.2f× bare", e1 / e0
			if (ed != "") printf " (%.2f× in a daemon session)", ed / e0
			printf ", with every child inheriting the seccomp filter and the Landlock domain. "
		}
		if (c0 != "" && c1 != "") {
			printf "A loopback TCP connect: %.2f×", c1 / c0
			if (cd != "") printf " (%.2f× in a daemon session, where each connect also runs the cgroup connect4 program)", cd / c0
			printf "."
		}
		printf "\n"
	}' | para
}

interpret_audit() {
	local t
	{
		printf '**Audit.** '
		for t in open exec connect; do
			awk -v t="$t" -v b="$(med "a$t" bare)" -v off="$(med "a$t" "bpfbox daemon session, audit off")" \
				-v agg="$(med "a$t" "bpfbox daemon session, aggregate")" -v all="$(med "a$t" "bpfbox daemon session, all")" \
				-v au="$(med "a$t" "auditd, 3 syscall rules")" -v sn="$(med "a$t" "libbpf-tools snoop to file")" \
				-v bt="$(med "a$t" "bpftrace, counts in kernel")" \
				-v ragg="$(col "a$t" "bpfbox daemon session, aggregate" 9)" -v rall="$(col "a$t" "bpfbox daemon session, all" 9)" \
				-v rau="$(col "a$t" "auditd, 3 syscall rules" 9)" -v rsn="$(col "a$t" "libbpf-tools snoop to file" 9)" \
				-v rbt="$(col "a$t" "bpftrace, counts in kernel" 9)" \
				-v lall="$(col "a$t" "bpfbox daemon session, all" 10)" -v lau="$(col "a$t" "auditd, 3 syscall rules" 10)" '
			function x(v) { return v == "" ? "not run" : sprintf("%.2f×", v / b) }
			function pc(s) { return s == "" ? "" : (match(s, /\([0-9.]+%\)/) ? substr(s, RSTART + 1, RLENGTH - 2) : s) }
			BEGIN {
				if (b == "") exit
				name = (t == "open") ? "The open/close loop" : (t == "exec") ? "The fork+exec loop" : "The connect loop"
				printf "%s: bpfbox aggregate %s bare, all %s (audit off: %s); auditd %s, libbpf-tools %s, bpftrace %s. ", name, x(agg), x(all), x(off), x(au), x(sn), x(bt)
				printf "Recorded: bpfbox aggregate %s, all %s, auditd %s, libbpf-tools %s, bpftrace %s. ", (ragg == "" ? "–" : pc(ragg)), (rall == "" ? "–" : pc(rall)), (rau == "" ? "–" : pc(rau)), (rsn == "" ? "–" : pc(rsn)), (rbt == "" ? "–" : pc(rbt))
				if (t == "open") {
					if (agg != "") printf "Target: the loop within 1.5× of bare with audit aggregate, %s (%.2f×; against the same session with audit off, %.2f×). ", (agg / b <= 1.5 ? "met" : "missed"), agg / b, (off != "" ? agg / off : 0)
					if (lall != "") printf "Target: no ring drops at the default ring size (4 MiB) for this loop with aggregation off, %s (%s records lost over all runs). ", (lall == "0" ? "met" : "missed"), lall
				}
			}'
		done
		printf 'bpfbox records only the sessions'"'"' processes (the programs look the task'"'"'s cgroup up first); auditd, the snoop tools and bpftrace trace every process on the host and were counted for the loop'"'"'s pid or name only. auditd pays in the syscall path itself (each event is built, queued to the audit daemon and written by it, and the kernel makes the caller wait when the backlog is full), the others in a BPF program plus, for the snoop tools, one perf-buffer record per event that userspace formats; bpftrace only counts in a per-CPU map.\n'
	} | para
}

interpret_pipeline() {
	local m
	m=$(grep "^enc	" "$PIPE" 2>/dev/null | cut -f2 | median || true)
	[ -z "$m" ] && return
	awk -v m="$m" -v r="$(grep "^red	" "$PIPE" | cut -f2 | median)" -v n="$([ "$PIPE_RUNS" = 1 ] && echo "1 run" || echo "$PIPE_RUNS runs")" '
	BEGIN {
		printf "**Pipeline.** One core redacts and encodes %.2f million events per second (median of %s); target >= 1,000,000 events/s, %s. The redactor alone handles %.1f million argv per second. The daemon and embedded mode run this on one thread, next to the ring buffer poll and the 64 KiB writes to the sink, so it bounds how fast a flood of records can be written out; what does not keep up waits in the ring, and what the ring cannot hold is counted as lost (the audit tables).\n", m / 1e6, n, (m >= 1000000 ? "met" : "missed"), r / 1e6
	}' | para
}

interpret_scale() {
	[ -s "$SCALE" ] || return 0
	local none
	none=$(scale_med none)
	awk -F'\t' -v none="$none" -v before="$(scale_med before)" -v after="$(scale_med after)" -v end_rss="$SCALE_END_RSS" -v cl_s="$SCALE_CLIENTS_S" -v end_s="$SCALE_END_S" \
		-v reasons="$SCALE_REASONS" -v warned="$SCALE_WARNED" \
		-v meds="$(for n in $(cut -f1 "$SCALE"); do printf '%s=%s ' "$n" "$(scale_med "$n")"; done)" \
		-v gmeds="$(for n in $(cut -f1 "$SCALE"); do printf '%s=%s ' "$n" "$(scale_med "$n" sg)"; done)" \
		-v gnone="$(scale_med none sg)" -v attach="${SCALE_ATTACH:-unknown}" '
	function ses(k) { return k == 1 ? "1 session" : k " sessions" }
	{ n[NR] = $1; up[NR] = $2; split($3, p, " "); reg[NR] = p[1]; p90[NR] = p[2]; rss[NR] = $4; hook[NR] = $5 }
	END {
		split(meds, mm, " "); for (i in mm) { split(mm[i], kv, "="); m[kv[1]] = kv[2] }
		split(gmeds, gg, " "); for (i in gg) { split(gg[i], kv, "="); g[kv[1]] = kv[2] }
		last = NR
		printf "**Scale.** The median register round trip took "
		for (i = 1; i <= NR; i++) printf "%s µs with %s%s", reg[i], ses(n[i]), (i < NR ? ", " : "")
		maxr = 0; for (i = 1; i <= NR; i++) if (reg[i] + 0 > maxr) maxr = reg[i] + 0
		printf " (target under 1 ms: %s; p90 at most %s µs). ", (maxr < 1000 ? "met" : "missed"), p90[last]
		if (NR > 1) printf "The daemon'"'"'s RSS goes from %.1f MB with no session to %.1f MB with %s (%.1f KB per session). ", rss[1] / 1024, rss[last] / 1024, n[last], (rss[last] - rss[1]) / (n[last] > 0 ? n[last] : 1)
		if (none != "") {
			if (attach == "tracepoint")
				printf "The audit programs were attached to syscall tracepoints (`bpfbox status`: audit attach tracepoint; this kernel refuses BPF trampolines). Enabling a syscall tracepoint sets the syscall-tracepoint work flag on every task of the host, so each syscall of every process takes the slow path (syscall_trace_enter and syscall_exit_work), and each openat of every process runs our exit_openat program, which returns after one map lookup of its cgroup. "
			else
				printf "The audit programs were attached as %s (`bpfbox status`: audit attach %s): a BPF trampoline on each audited syscall only; other syscalls keep their fast path, and each openat of every process runs fx_openat, which returns after one map lookup of its cgroup. ", attach, attach
			printf "A process outside every session: its open+close took "
			for (i = 1; i <= NR; i++) if (m[n[i]] != "") printf "%+.1f%% with %s%s", (m[n[i]] / none - 1) * 100, ses(n[i]), (i < NR ? ", " : "")
			worst = 0; for (i = 1; i <= NR; i++) if (m[n[i]] != "" && m[n[i]] / none > worst) worst = m[n[i]] / none
			d = 0
			if (before != "" && after != "") d = (before > after ? before / after : after / before) - 1
			printf " against the median of the runs with no agent of ours (%.1f ns), at most %+.1f%%. ", none, (worst - 1) * 100
			gworst = 0
			if (gnone != "") {
				printf "Its getppid loop (a syscall we never audit) took "
				for (i = 1; i <= NR; i++) if (g[n[i]] != "") { printf "%+.1f%% with %s%s", (g[n[i]] / gnone - 1) * 100, ses(n[i]), (i < NR ? ", " : ""); if (g[n[i]] / gnone > gworst) gworst = g[n[i]] / gnone }
				printf " against no agent (%.1f ns), at most %+.1f%%. ", gnone, (gworst - 1) * 100
				if (gworst > worst) worst = gworst
			}
			if (before != "" && after != "")
				printf "The no-agent runs alone gave %.1f ns before the daemon and %.1f ns after its cleanup, %.1f%% apart. ", before, after, d * 100
			if (d > 0.05)
				printf "Target within 5%%: not resolved by the loop, whose noise in this run is larger than that. "
			else
				printf "Target within 5%%: %s. ", (worst <= 1.05 ? "met" : "missed")
			hk = ""; hmax = 0
			for (i = 1; i <= NR; i++) if (hook[i] != "-" && hook[i] != "") { hk = hk sprintf("%s%s ns with %s", (hk == "" ? "" : ", "), hook[i], ses(n[i])); if (hook[i] + 0 > hmax) hmax = hook[i] + 0 }
			if (hk != "")
				printf "Measured by the kernel instead (bpf_stats, over one more loop at each step), our openat program took %s per call, at most %.1f%% of the no-agent open+close; that is an upper bound for the program (bpf_stats times each run with clock reads of its own), and leaves out its dispatch%s. ", hk, hmax / none * 100, (attach == "tracepoint" ? " and the syscall slow path every task of the host takes while a syscall tracepoint is attached, which the loops above carry" : " (the trampoline)")
		}
		if (end_s != "") {
			printf "Ending all %s sessions at once (SIGTERM to every `bpfbox run`, each then unregisters): the clients had exited after %s s, the daemon had ended every session after %s s (session.end reasons: %s)", n[last], cl_s, end_s, (reasons == "" ? "none seen" : reasons)
			if (end_rss != "") printf "; its RSS was then %.1f MB", end_rss / 1024
			printf "; %d client(s) warned that their unregister got no reply. The daemon is one thread, so the ends queue behind each other; a client waits 5 s for its reply, retries once on a new connection, then exits with that warning, and the daemon ends the session when it reaches the request.", warned
		}
		printf "\n"
	}' "$SCALE" | para
}

machine_info() {
	local model kernel
	model=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')
	kernel=$(uname -r)
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- command: $COMMAND_LINE$([ "$QUICK" = 1 ] && echo ' (quick: a smoke test, not for reading)')"
	echo "- suite runtime: ${SECONDS} s"
	echo "- machine: nproc $(nproc), ${model:-unknown model}, $(awk '$1 == "MemTotal:" { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo), kernel $kernel, Debian $(cat /etc/debian_version 2>/dev/null || echo '?')"
	echo "- bpfbox: ${BPFBOX_VERSION:-?} (a copy of ${BIN_SRC#"$BTREE"/} taken at the start; built from $BTREE at $(git -C "$BTREE" describe --always --dirty 2>/dev/null || echo '?')), $BPFBOX_LEVEL${BPFBOX_LIMITS:+; session limits by cgroup: $BPFBOX_LIMITS}"
	echo "- peers: bwrap $(bwrap --version 2>/dev/null | awk '{print $2}' || true), firejail $(firejail --version 2>/dev/null | awk 'NR==1 {print $3}' || true), srt ${SRT_VERSION:-not installed} (node $(node --version 2>/dev/null || echo none)), $(hyperfine --version 2>/dev/null || true)"
	echo "- audit tools: auditd ${AUDITD_VERSION:-?}, libbpf-tools $(dpkg-query -W -f='${Version}' libbpf-tools 2>/dev/null || echo '?'), bpftrace $(bpftrace --version 2>/dev/null | awk '{print $2}' || echo '?')"
	echo "- other BPF on this host (not ours, not stoppable): $FOREIGN_BPF at the start, $(foreign_bpf) at the end"
	echo "- open files limit (\`ulimit -n\`) of the run, which the daemon inherits: $(ulimit -n)"
	echo "- runs: startup $RUNS per command, in $ROUNDS interleaved rounds of $((RUNS / ROUNDS)) after $WARMUP warm-up runs each; embedded BPF $E_RUNS runs; loops $REPS repetitions each ($TRACE_REPS under each audit tool), interleaved; the private daemon started $DAEMON_STARTS times"
}

# Tracepoint links on the host: other agents' programs run on every
# syscall they hook, in every row of this run alike.
foreign_bpf() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "unknown (not root)"
	elif command -v bpftool >/dev/null; then
		bpftool link list 2>/dev/null | awk '$2 == "perf_event" { t++ } $2 == "cgroup" { c++ }
			END { printf "%d tracepoint links and %d cgroup links", t, c }'
	else
		echo "unknown (no bpftool)"
	fi
}

# The report of a --only run: the machine, the load average around the
# run, then each section's table and reading where it has functions for
# them (render_SECTION, interpret_SECTION); the log has the rest.
write_partial() {
	local sec
	{
		echo "# Benchmarks:$(echo "$ONLY" | sed "s/ *$//")"
		echo
		machine_info
		echo "- load average (1, 5, 15 min) at the start: $LOAD0; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
		for sec in $ONLY; do
			echo
			echo "## $sec"
			echo
			if declare -F "render_$sec" >/dev/null; then "render_$sec"; fi
			echo
			if declare -F "interpret_$sec" >/dev/null; then "interpret_$sec"; fi
		done
	} >"$DOC"
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
		echo "The daemon row runs while a private daemon (its own socket, pin directory"
		echo "and cgroup parent) is up; every other row runs with no daemon of ours."
		echo
		render_table startup ms
		render_commands startup
		if [ -n "$SRT" ]; then
			echo
			echo "srt's settings file grants what \`bpfbox run -w WS\` grants (WS writable,"
			echo "no network): \`$(show "$(cat "$SRT_SETTINGS")")\`"
		fi
		echo
		echo "The daemon: \`$(show "$BIN daemon --socket $DSOCK --pin-dir $DPIN --cgroup-parent $DCG --audit TMP/daemon-N.jsonl")\`,"
		echo "stopped with SIGTERM and \`daemon --cleanup\` after each use."
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
		echo "### Embedded mode with BPF: load and unload"
		echo
		echo "$E_RUNS runs of each, interleaved (the daemon row in a block of its own while"
		echo "the daemon runs). Each run is cut in two by wall-clock stamps: the"
		echo "shell's before starting bpfbox, \`loops now\` as the sandboxed command"
		echo "starts, the shell's after bpfbox exits. Medians; both parts include the"
		echo "shell's fork and exec of bpfbox, the same in every row."
		echo
		render_embedded
		echo
		echo "## 2. Enforcement overhead"
		echo
		echo "Each loop is timed inside the confined process (\`clock_gettime\`), so"
		echo "the sandbox's start-up is not in these numbers. Source: \`bench/loops.c\`,"
		echo "built with \`gcc -O2\` ($LOOPS_LINK). bwrap has no seccomp filter in this"
		echo "configuration; firejail runs its default seccomp filter (\`--seccomp\`)."
		echo
		echo "The levels this host has (\`bpfbox status\`: $(echo "$BPFBOX_LEVEL" | sed -n 's/.*enabled \([A-Za-z]*\).*/\1/p'); no BPF LSM):"
		echo "\`bpfbox run\` is level Standard (Landlock file system and TCP rules,"
		echo "seccomp); \`--mode full-access\` keeps the seccomp filter and gives"
		echo "Landlock no file-system rights to handle, which isolates what the"
		echo "Landlock file-system rules cost; the daemon session is Standard plus the"
		echo "session cgroup with the BPF network programs and the audit programs"
		echo "(\`--audit-mode off\`: nothing is recorded; each audited syscall's"
		echo "program returns after one map lookup of the caller's cgroup)."
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
		echo "## 3. Audit overhead and completeness"
		echo
		echo "The same loops while they are recorded: by the bpfbox daemon (a session"
		echo "with \`--audit-mode aggregate\`, the default, and \`all\`; \`off\` for"
		echo "reference), and, around the bare loop, by auditd with the equivalent"
		echo "syscall rule, libbpf-tools' snoop tools writing to files, and bpftrace"
		echo "counting in the kernel. Each tool records open, exec and connect at once"
		echo "and runs only during its own group of loops. \"recorded / done\" sums all"
		echo "runs: the events the tool wrote for the loop (bpfbox: the \`count\` of the"
		echo "loop's \`file\` lines, its \`exec\` lines of /bin/true, its \`connect\` lines"
		echo "to the port; auditd: SYSCALL records of the loop's pid, or of its"
		echo "children's execve; snoop tools: output lines of the loop's pid, or"
		echo "children; bpftrace: its count for the process name \`loops\`) against the"
		echo "operations the loop did, warm-up included. \"lost\" is what the tool"
		echo "itself counted as lost: bpfbox's \`session.end.lost\` (ring buffer full),"
		echo "the kernel's audit \`lost\` counter, the snoop tools' \"Lost N events\"."
		echo
		echo "auditd ran with a private configuration: Debian's auditd.conf (ENRICHED"
		echo "format, \`flush = INCREMENTAL_ASYNC\`, \`freq = 50\`) with its log in TMP"
		echo "and no size limits, the backlog of Debian's default rules (\`-b 8192\`,"
		echo "waiting up to the kernel's backlog_wait_time when full). Our rule was"
		echo "deleted with \`auditctl -d\` and the kernel's enabled flag and backlog"
		echo "limit restored after each group. The bpftrace PROGRAM:"
		echo
		echo '```'
		echo "$BT_SCRIPT"
		echo '```'
		echo
		echo "### open + close, $N_OPEN times (ns per open+close)"
		echo
		render_table aopen ns
		render_commands aopen
		echo
		echo "### fork + exec of /bin/true, $N_EXEC times (µs per process)"
		echo
		render_table aexec µs
		render_commands aexec
		echo
		echo "### TCP connect, $N_CONNECT times (µs per connection)"
		echo
		render_table aconnect µs
		render_commands aconnect
		local agl
		agl=$(awk '{ l += $4; r += $1 } END { if (NR) printf "%d lines for %d opens", l, r }' "$TMP/l.open.d-agg.rec" 2>/dev/null || true)
		if [ -n "$agl" ]; then
			echo
			echo "With aggregation the open loop's opens were written as $agl over all runs (one line at the first open, then one per second of repeats, then the rest at the end)." | para
		fi
		echo
		echo "## 4. Pipeline: redact + encode on one core"
		echo
		echo "\`BENCH_EVENTS=$PIPE_EVENTS taskset -c 1 build/tests/test_redact\` (its throughput tests;"
		echo "a copy taken at the start): a typical mix per exec of 2 forks, 2 exits,"
		echo "8 opens (one denied) and 1 connect, the exec's argv (a git command or a"
		echo "curl with a bearer token, alternately) through the redactor, every record"
		echo "through \`audit_encode_record\` into a JSON line in memory; and the"
		echo "redactor alone on a 67-byte argv. No sink write is included."
		echo
		render_pipeline
		echo
		echo "## 5. Scale: sessions in one daemon"
		echo
		echo "N sessions that sleep, each a real \`bpfbox run --timeout 0 --daemon-socket"
		echo "SOCK -w WS -- sleep 1000000\` (its own connection to the daemon), brought up"
		echo "in steps; \"up in s\" is the wall time until \`bpfbox sessions\` listed the"
		echo "step's new sessions as running. At each step: $PROBES more sessions"
		echo "registered, attached (a \`sleep\` child) and unregistered one at a time by"
		echo "a probe on one connection (\`bench\` writes it to build/bench/regprobe.py),"
		echo "round trips in µs as seen by the probe (Python, so a few µs of its own);"
		echo "the daemon's VmRSS; and the open/close loop ($N_OPEN times, $REPS runs) and"
		echo "the getppid loop ($((N_OPEN * 10)) times: a syscall we never audit) of a"
		echo "process outside every session, against the same loops with no daemon of"
		echo "ours (before it started and after its cleanup, $((REPS * 2)) runs). The"
		echo "daemon's audit attach mode: ${SCALE_ATTACH:-unknown} (docs/ARCHITECTURE.md)."
		echo "\"openat hook ns/call\" is what the kernel counted for our openat program"
		echo "(\`exit_openat\` or \`fx_openat\`; \`kernel.bpf_stats_enabled\`, on for"
		echo "one more loop at each step, then put back): its run time over its run"
		echo "count, for every openat on the host during that loop (the loop's own are"
		echo "nearly all of them). It includes bpf_stats' own clock reads around each"
		echo "run, and leaves out the dispatch to it (the tracepoint or trampoline)."
		echo
		if [ -s "$SCALE" ]; then
			render_scale
		fi
		[ -n "$SCALE_WHY" ] && printf '\n- not (fully) run: %s\n' "$SCALE_WHY"
		echo
		echo "### Host tax per audit attach mode"
		echo
		echo "\`bench/attach.sh\`: the same two loops of a process outside every session"
		echo "($REPS runs each) with no agent of ours, then with a private daemon forced"
		echo "into each audit attach mode (\`BPFBOX_AUDIT_ATTACH\`, docs/ARCHITECTURE.md)"
		echo "and $ATT_NS sessions open, then with no agent again. The no-agent rows are"
		echo "the median of all three no-agent blocks."
		echo
		[ -s "$ATT" ] && render_attach
		[ -n "$ATT_WHY" ] && printf '\n- not (fully) run: %s\n' "$ATT_WHY"
		echo
		echo "### Loss onset"
		echo
		echo "One daemon session with \`--audit-mode all\` (one record per open) runs"
		echo "\`loops openrate WS/file R $LOSS_SECS\` (opens paced at R a second) for each R;"
		echo "the daemon's rate limit is lifted (\`--audit-rate 1000000000/1000000000\`)"
		echo "so that only the ring (default size, 4 MiB) and its reader are measured."
		echo "\"reached\" is the rate the loop kept; the counts are session.end's."
		echo
		render_loss
		[ -n "$LOSS_WHY" ] && printf '\n- not run: %s\n' "$LOSS_WHY"
		echo
		echo "## 6. Limits under pressure"
		echo
		echo "\`bench/limits.sh\` (root; the sessions are paused through their cgroups,"
		echo "here ${BPFBOX_LIMITS:-as \`bpfbox status\` says}). Pause latency: $LIM_RUNS sessions"
		echo "\`--memory 48\` running a Python allocator until the OOM killer stops it,"
		echo "and $LIM_RUNS sessions \`--disk 8\` writing 24 MiB in fsync'ed 1 MiB writes"
		echo "(\`tests/helpers/limits.py\`); an observer outside polls the cgroup files"
		echo "every 0.5 ms (so ±0.5 ms; p99 is the nearest rank). Disk monitor CPU:"
		echo "\`bpfbox run --disk 100000\`'s own run time (\`/proc/PID/task/*/schedstat\`;"
		echo "the command's processes are not in it) over $LIM_SECS s while the command"
		echo "opens, writes and closes one of 50 files at a steady rate, starting 3 s"
		echo "in; the last column is the run's CPU before that (start-up and the"
		echo "initial scan of the workspace)."
		echo
		render_limits
		echo
		echo "## 7. Egress by name"
		echo
		echo "\`bench/egress.sh\` (root): one embedded session with a name rule"
		echo "(\`--net-allow bench.test:80\`, the proxy and resolver of docs/network.md)"
		echo "and one with an address rule (direct, no proxy) run"
		echo "\`tests/helpers/egress_bench.py\` against an HTTP server in a network"
		echo "namespace of the script's own over a veth pair (a name never reaches a"
		echo "loopback address: that is the rebinding rule). $EG_SETUPS connections each"
		echo "timed from \`connect\` to the first response byte, then $EG_RUNS transfers"
		echo "of $EG_BYTES bytes read to the end."
		echo
		render_egress
		echo
		echo "## 9. Command rules"
		echo
		echo "\`bench/cmdrules.sh\` (root): one embedded session per case runs"
		echo "$CMD_EXECS execs of \`/bin/true ARG\`; the program's own time comes from the"
		echo "kernel (\`kernel.bpf_stats_enabled\`, run time over the session's execs;"
		echo "the host's other execs add their early return to it). \`none\`: the"
		echo "operator emptied \`deny_commands\`, no program is loaded; \`defaults\`: the"
		echo "26 patterns; \`max\`: 64 rules; \`longargv\`: the defaults against a"
		echo "4000-byte argument; \`adverse\`: against 4000 bytes of \`rm -r\`, which"
		echo "starts a pattern every fifth byte."
		echo
		render_cmdrules
		echo
		echo "## 10. Change sets"
		echo
		echo "\`bench/changes.sh\`: one embedded session of \`/bin/true\` with"
		echo "\`--changes direct\` and \`review\` (hyperfine, $CH_RUNS runs; review"
		echo "makes the set and, nothing changed, removes it at the end), one that"
		echo "touches a file, the same on an empty workspace and on one of $CH_WS files;"
		echo "then a session writes $CH_FILES files and \`bpfbox changes\`, \`apply\`"
		echo "and \`undo\` are timed ($CH_ROUNDS rounds)."
		echo
		render_changes
		echo
		echo "## What the numbers mean"
		echo
		interpret_startup
		echo
		interpret_embedded
		echo
		interpret_enforcement
		echo
		interpret_audit
		echo
		interpret_pipeline
		echo
		interpret_scale
		echo
		interpret_attach
		echo
		interpret_loss
		echo
		interpret_limits
		echo
		interpret_egress
		echo
		echo "## Not yet measured"
		echo
		echo "- BPF LSM enforcement (the \`**/\` deny patterns inside the workspace,"
		echo "  level Full): this host cannot load BPF LSM programs;"
		echo "- the audit sinks beyond a local file (syslog, spool, OCSF) and the cost"
		echo "  of a slow sink;"
		echo "- libbpf-tools tcpconnect, where the kernel has no kprobes (this one)."
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
	[ -x "$BUILD/tests/test_redact" ] && cp "$BUILD/tests/test_redact" "$TMP/test_redact"
	BPFBOX_VERSION=$("$BIN" --version 2>/dev/null | head -n1)
	FOREIGN_BPF=$(foreign_bpf)
	# Someone else's syscall tracepoints (or a killed run's pinned ones) put
	# every syscall of the host on the slow path, the baselines too.
	case $FOREIGN_BPF in
	[1-9]*" tracepoint links"*)
		say "warning: other BPF is attached ($FOREIGN_BPF; bpftool link list): a syscall tracepoint puts every syscall of every row on the slow path, the no-agent baselines too; leftovers of a killed bpfbox run go with bpfbox daemon --cleanup --pin-dir DIR" ;;
	esac
	build_helpers
	make_workspaces
	LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
	# srt runs in the startup rows only.
	if wanted startup; then
		ensure_srt
		[ -n "$SRT_WHY" ] && say "srt: not used: $SRT_WHY"
	fi
	daemon_check
	auditd_check
	tracers_check
	[ -n "$DAEMON_WHY" ] && say "daemon: not used: $DAEMON_WHY"
	[ -n "$AUDITD_WHY" ] && say "auditd: not used: $AUDITD_WHY"
	[ -n "$TCPC_WHY" ] && say "tcpconnect: not used: $TCPC_WHY"
	# How the sessions' resource limits hold here (one status probe line,
	# "session limits by cgroup"; empty with a bpfbox that has none).
	BPFBOX_LIMITS=$("$BIN" status 2>/dev/null | sed -n 's/^ *session limits by cgroup *//p' | sed 's/  */ /g; s/^available //' || true)
	BPFBOX_LEVEL=$("$BIN" run -v -w "$WS" -- /bin/true 2>&1 >/dev/null |
		sed -n 's/^bpfbox: session [0-9a-f]*, //p; s/^bpfbox: \(landlock.*\)/\1/p' | paste -sd';' | sed 's/;/; /')

	for sec in $SECTIONS; do
		if wanted "$sec"; then "bench_$sec"; fi
	done

	if [ -n "$ONLY" ]; then
		write_partial
		cat "$DOC"
		say "done in ${SECONDS} s; report written to ${DOC#"$ROOT"/}; log in ${LOG#"$ROOT"/}"
		return
	fi
	write_report
	echo
	sed -n '/^## 1\./,/^## What/p' "$DOC" | sed '$d'
	sed -n '/^## What/,/^## Not yet/p' "$DOC" | sed '$d'
	say "done in ${SECONDS} s; report written to ${DOC#"$ROOT"/}; log in ${LOG#"$ROOT"/}"
}

main
