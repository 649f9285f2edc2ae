#!/bin/sh
# What the verifier does for each BPF program an embedded session loads:
#   bench/verifier.sh [BPFBOX] [RUNS]
# Runs `bpfbox run -q --no-daemon --audit /dev/null -- true` RUNS times
# (default 5) with BPFBOX_VERIFIER_STATS=1 and prints a markdown table:
# per program, the instructions the verifier processed (the same every
# run) and the median of its verification time, largest first, then the
# sums and the median wall time of a run. As root; on a host without the
# BPF LSM the LSM programs are absent: run it in the Full VM too
# (tools/vmtest --hostroot --append "lsm=landlock,lockdown,yama,bpf" --
# bench/verifier.sh /opt/bpfbox/bin/bpfbox), where TCG makes only the
# ratios meaningful. The bound the suites hold every program to is in
# tests/host/test_audit.sh.
set -u
B=${1:-build/bin/bpfbox}
N=${2:-5}
[ "$(id -u)" = 0 ] || { echo "bench/verifier.sh: needs root" >&2; exit 1; }
T=$(mktemp -d /tmp/bpfbox-bench-verifier.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
mkdir -p "$T/ws"
python3 - "$B" "$N" "$T" <<'PY'
import re, statistics, subprocess, sys, time, platform, datetime
b, n, t = sys.argv[1], int(sys.argv[2]), sys.argv[3]
insns, usec, walls = {}, {}, []
for _ in range(n):
    t0 = time.monotonic()
    r = subprocess.run([b, "run", "-q", "--no-daemon", "--audit", "/dev/null", "-w", t + "/ws", "--", "true"],
                       env={"PATH": "/usr/bin:/bin", "BPFBOX_VERIFIER_STATS": "1"},
                       stderr=subprocess.PIPE, text=True)
    walls.append((time.monotonic() - t0) * 1000)
    if r.returncode:
        sys.exit(f"bench/verifier.sh: the run failed ({r.returncode}): {r.stderr[-300:]}")
    for m in re.finditer(r"bpfbox: verifier: (\w+): verification time (\d+) usec.*?processed (\d+) insns", r.stderr):
        insns[m[1]] = int(m[3])
        usec.setdefault(m[1], []).append(int(m[2]))
if not insns:
    sys.exit("bench/verifier.sh: no statistics printed (no BPF agent loaded?)")
print(f"`bench/verifier.sh {b} {n}`, {datetime.date.today()}, kernel {platform.release()}, {len(insns)} programs:\n")
print("| program | processed insns | verification ms (median) |")
print("| --- | ---: | ---: |")
rows = sorted(insns, key=lambda k: -insns[k])
for k in rows:
    print(f"| {k} | {insns[k]:,} | {statistics.median(usec[k]) / 1000:.1f} |")
tot_ms = sum(statistics.median(v) for v in usec.values()) / 1000
print(f"| all {len(rows)} | {sum(insns.values()):,} | {tot_ms:.1f} |")
print(f"\nWall time of one run (median of {n}): {statistics.median(walls):.0f} ms.")
PY
