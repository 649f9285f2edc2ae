#!/bin/sh
# What the Full level costs a plain `bpfbox run -- /bin/true` as root:
#   bench/full.sh [BPFBOX] [RUNS]
# Rows, interleaved, RUNS each (default 30), median and quartiles of the
# wall time: --level standard (no BPF at all), the default without a daemon
# (Full where the BPF LSM loads: the embedded agent; elsewhere the per-boot
# probe answer read from /run), the same with that answer removed before
# each run (the first run of a boot pays the probe), and through a private
# daemon that holds the programs. Prints a markdown section for
# docs/benchmarks.md. On the CI hosts the BPF LSM does not load (EPERM): run
# it in the Full VM too (tools/vmtest --hostroot ... -- bench/full.sh),
# where TCG makes only the ratios meaningful.
set -u
B=${1:-build/bin/bpfbox}
N=${2:-30}
[ "$(id -u)" = 0 ] || { echo "bench/full.sh: needs root" >&2; exit 1; }
T=$(mktemp -d /tmp/bpfbox-bench-full.XXXXXX)
SOCK=$T/sock/bpfbox.sock
PIN=/sys/fs/bpf/bpfbox-bench-full-$$
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
PARENT=$CG2/bpfbox-bench-full-$$
mkdir -p "$T/ws" "$T/sock"
cleanup() {
	[ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	"$B" daemon --cleanup --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
"$B" daemon --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" --audit /dev/null 2>"$T/d.err" &
DPID=$!
i=0
while ! grep -q ready "$T/d.err" && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
grep -q ready "$T/d.err" || { echo "bench/full.sh: no daemon: $(cat "$T/d.err")" >&2; exit 1; }
level=$("$B" run -v --no-daemon -w "$T/ws" -- true 2>&1 | sed -n 's/.*level requested \([A-Za-z]*\), enabled \([A-Za-z]*\).*/requested \1, enabled \2/p')
dlevel=$("$B" run -v --daemon-socket "$SOCK" -w "$T/ws" -- true 2>&1 | sed -n 's/.*level requested \([A-Za-z]*\), enabled \([A-Za-z]*\).*/requested \1, enabled \2/p')
python3 - "$B" "$N" "$T/ws" "$SOCK" "$level" "$dlevel" <<'PY'
import os, statistics, subprocess, sys, time, platform, datetime
b, n, ws, sock, level, dlevel = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
rows = [
    ("run --level standard --no-daemon", [b, "run", "-q", "--level", "standard", "--no-daemon", "-w", ws, "--", "true"], False),
    ("run --no-daemon (default: Full if it loads)", [b, "run", "-q", "--no-daemon", "-w", ws, "--", "true"], False),
    ("the same, first run of a boot (probe)", [b, "run", "-q", "--no-daemon", "-w", ws, "--", "true"], True),
    ("run via daemon (default: Full)", [b, "run", "-q", "--daemon-socket", sock, "-w", ws, "--", "true"], False),
]
t = {r[0]: [] for r in rows}
for _ in range(n):
    for name, cmd, fresh in rows:
        if fresh:
            try: os.unlink("/run/bpfbox.lsm-probe")
            except FileNotFoundError: pass
        s = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t[name].append((time.perf_counter() - s) * 1e3)
base = statistics.median(t[rows[0][0]])
print("### Full level: cost of a `bpfbox run -- /bin/true` as root\n")
print("- date: %s UTC" % datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"))
print("- command: `bench/full.sh %s %d`" % (b, n))
print("- kernel %s; without a daemon: level %s; via daemon: level %s" % (platform.release(), level, dlevel))
print("- %d runs of each row, interleaved; wall time in ms\n" % n)
print("| | p25 | median | p75 | median / standard |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, _, _ in rows:
    q = statistics.quantiles(t[name], n=4)
    print("| %s | %.1f | %.1f | %.1f | %.2f |" % (name, q[0], q[1], q[2], q[1] / base))
PY
