#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The daemon path against the embedded one (issue 20 item 3):
# `bpfbox run -- /bin/true` through a private daemon and with --no-daemon,
# both at --level standard and at the default, interleaved in one run
# (ratios within the run), with the CPU each command took in its client and
# in the daemon, and the daemon's register round trip (median of N). OLD_BPFBOX: also an older bpfbox through its own daemon (OLD_SOCK, or
# one started here with its own pins and cgroup parent).
# Root; usage: bench/daemon_path.sh [BUILD_DIR] [RUNS] [v2only]
# v2only: in a private mount namespace whose cgroup v1 hierarchies are
# unmounted, so that a hybrid host measures what a pure cgroup v2 host
# does (no v1 limits: the daemon path clones its child straight into the
# session cgroup, no migration).
# BPFBOX_DPATH_CPUS=split: the daemon on CPU 1, the commands on CPU 0;
# =one: both on CPU 0. Where the scheduler puts the daemon's wakeups
# decides whether its work for a session runs beside the client or in
# its way (docs/benchmarks.md, "Where the daemon's work runs").
set -eu
BUILD=${1:-build}
RUNS=${2:-200}
if [ "${3:-}" = v2only ] && [ -z "${BPFBOX_BENCH_V2ONLY:-}" ]; then
	export BPFBOX_BENCH_V2ONLY=1
	exec unshare -m sh -c 'for m in $(awk '"'"'$3 == "cgroup" { print $2 }'"'"' /proc/mounts); do
		umount "$m"; done; exec "$0" "$@"' "$0" "$@"
fi
B=$(readlink -f "$BUILD/bin/bpfbox")
DCPU= CCPU=
case "${BPFBOX_DPATH_CPUS:-}" in
'') ;;
split) DCPU="taskset -c 1" CCPU="taskset -c 0" ;;
one) DCPU="taskset -c 0" CCPU="taskset -c 0" ;;
*) echo "bench/daemon_path.sh: BPFBOX_DPATH_CPUS is split or one, not '$BPFBOX_DPATH_CPUS'" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "bench/daemon_path.sh: needs root (the daemon)" >&2; exit 1; }
T=$(mktemp -d /tmp/bpfbox-dpath.XXXXXX)
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
SOCK=$T/bpfbox.sock PIN=/sys/fs/bpf/bpfbox-dpath-$$ PARENT=$CG2/bpfbox-dpath-$$
DPID= OPID=
OLD_BPFBOX=${OLD_BPFBOX:+$(readlink -f "$OLD_BPFBOX")}
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -n "$OPID" ] && kill "$OPID" 2>/dev/null && wait "$OPID" 2>/dev/null
	"$B" daemon --cleanup --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" >/dev/null 2>&1 || true
	[ -n "$OPID" ] && "$OLD_BPFBOX" daemon --cleanup --socket "$T/old.sock" --pin-dir "$PIN-old" \
		--cgroup-parent "$PARENT-old" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/ws"
# Syscall tracepoints attached by others (or left pinned by a killed run)
# tax every command of this bench alike, and hide the difference.
TP=$(bpftool link list 2>/dev/null | awk '$2 == "perf_event"' | wc -l)
[ "$TP" -gt 0 ] && echo "bench/daemon_path.sh: warning: $TP tracepoint links of other BPF are attached (bpftool link list): every syscall here takes the slow path" >&2
: >"$T/d.err"
$DCPU "$B" daemon --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" --audit /dev/null 2>"$T/d.err" &
DPID=$!
for _ in $(seq 100); do grep -q ready "$T/d.err" && break; sleep 0.1; done
grep -q ready "$T/d.err" || { echo "bench/daemon_path.sh: no daemon: $(cat "$T/d.err")" >&2; exit 1; }
if [ -n "$OLD_BPFBOX" ] && [ -z "${OLD_SOCK:-}" ]; then
	OLD_SOCK=$T/old.sock
	: >"$T/o.err"
	$DCPU "$OLD_BPFBOX" daemon --socket "$OLD_SOCK" --pin-dir "$PIN-old" --cgroup-parent "$PARENT-old" \
		--audit /dev/null 2>"$T/o.err" &
	OPID=$!
	for _ in $(seq 100); do grep -q ready "$T/o.err" && break; sleep 0.1; done
	grep -q ready "$T/o.err" || { echo "bench/daemon_path.sh: no old daemon: $(cat "$T/o.err")" >&2; exit 1; }
fi
cd "$T/ws"
# Interleaved: each round runs every command once, in a shuffled order, so
# that the load of a shared machine falls on all of them alike; medians of
# RUNS rounds.
$CCPU python3 - "$B" "$SOCK" "$RUNS" "${OLD_BPFBOX:-}" "${OLD_SOCK:-}" "$DPID" "${OPID:-}" >"$T/h.txt" <<'PY'
import os, random, statistics, subprocess, sys, time
b, sock, runs, old, osock = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
dpid, opid = sys.argv[6], sys.argv[7]
def daemon_cpu(pid):
    """The daemon's CPU so far in ms (the scheduler's, in ns: every thread)
    and its wakeups (voluntary context switches); 0 when it is not ours."""
    ms = wakeups = 0
    if not pid:
        return 0.0, 0
    for tid in os.listdir("/proc/%s/task" % pid):
        try:
            with open("/proc/%s/task/%s/schedstat" % (pid, tid)) as f:
                ms += int(f.read().split()[0]) / 1e6
            with open("/proc/%s/task/%s/status" % (pid, tid)) as f:
                for l in f:
                    if l.startswith("voluntary_ctxt_switches:"):
                        wakeups += int(l.split()[1])
        except FileNotFoundError:
            pass
    return ms, wakeups
cmds = [
    ("embedded --level standard", [b, "run", "-q", "--no-daemon", "--level", "standard", "--", "/bin/true"]),
    ("daemon --level standard", [b, "run", "-q", "--daemon-socket", sock, "--level", "standard", "--", "/bin/true"]),
    ("embedded (default level)", [b, "run", "-q", "--no-daemon", "--", "/bin/true"]),
    ("daemon (default level)", [b, "run", "-q", "--daemon-socket", sock, "--", "/bin/true"]),
    # The same audit on both sides: the daemon audits every session
    # (aggregate by default); embedded loads the agent only with --audit.
    ("embedded --audit (aggregate)", [b, "run", "-q", "--no-daemon", "--audit", "/dev/null", "--", "/bin/true"]),
    ("daemon --audit-mode off", [b, "run", "-q", "--daemon-socket", sock, "--audit-mode", "off", "--", "/bin/true"]),
]
if old and osock:
    cmds.append(("before: daemon --level standard", [old, "run", "-q", "--daemon-socket", osock, "--level", "standard", "--", "/bin/true"]))
    cmds.append(("before: daemon (default level)", [old, "run", "-q", "--daemon-socket", osock, "--", "/bin/true"]))
t = {n: [] for n, _ in cmds}
# CPU per command: the client's (its process tree's rusage) and, for the
# rows through a daemon started here, the daemon's own over the command
# and its wakeups (voluntary context switches); its work after a reply may
# fall on the next command: the means over all rounds are what a session
# costs it.
cpu = {n: [0.0, 0.0, 0] for n, _ in cmds}
# In a new order each round: what a command leaves the kernel to do after
# it (an embedded --audit's programs freed) falls on a different one.
rnd = random.Random(20)
for i in range(runs + 10):
    order = list(cmds)
    rnd.shuffle(order)
    for n, c in order:
        who = opid if n.startswith("before: ") else dpid if "daemon" in n else ""
        d0 = daemon_cpu(who)
        s = time.perf_counter()
        with open(os.devnull, "w") as null:
            p = subprocess.Popen(c, stdout=null, stderr=null)
            _, st, ru = os.wait4(p.pid, 0)
        if i >= 10:
            t[n].append((time.perf_counter() - s) * 1e3)
            d1 = daemon_cpu(who)
            cpu[n][0] += (ru.ru_utime + ru.ru_stime) * 1e3
            cpu[n][1] += d1[0] - d0[0]
            cpu[n][2] += d1[1] - d0[1]
        if st:
            sys.exit("%s: exit status %d" % (n, st))
print("| command | p25 ms | median ms | min ms | client CPU ms | daemon CPU ms | daemon wakeups |")
print("|---|---|---|---|---|---|---|")
for n, _ in cmds:
    v = sorted(t[n])
    print("| %s | %.2f | %.2f | %.2f | %.2f | %.3f | %.1f |" % (n, v[len(v) // 4], statistics.median(v),
          v[0], cpu[n][0] / len(v), cpu[n][1] / len(v), cpu[n][2] / len(v)))
PY
[ -n "${BPFBOX_DPATH_CPUS:-}" ] && echo "CPUs: $BPFBOX_DPATH_CPUS (the daemon: ${DCPU#taskset -c }, the commands: ${CCPU#taskset -c })"
cat "$T/h.txt"
python3 - "" "$SOCK" "$RUNS" <<'PY'
import json, os, socket, statistics, subprocess, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[2])
f = s.makefile("rb")
def req(o):
    t = time.perf_counter_ns()
    s.sendall(json.dumps(o).encode() + b"\n")
    r = json.loads(f.readline())
    if not r.get("ok"):
        sys.exit("register: %s" % r)
    return (time.perf_counter_ns() - t) / 1000, r
# Named by the client (its cgroup made in the request), and "prepared" (a
# cgroup made ahead, what bpfbox run sends before its fork), interleaved.
t = {"reg": [], "unreg": [], "prep": [], "punreg": []}
for i in range(int(sys.argv[3])):
    sid = os.urandom(16).hex()
    t["reg"].append(req({"op": "register", "session": sid, "command": ["true"]})[0])
    t["unreg"].append(req({"op": "unregister", "session": sid, "exit_code": 0})[0])
    us, r = req({"op": "register", "session": os.urandom(16).hex(), "command": ["true"], "prepared": True})
    t["prep"].append(us)
    t["punreg"].append(req({"op": "unregister", "session": r["session"], "exit_code": 0})[0])
m = {k: statistics.median(v) for k, v in t.items()}
print("\nregister round trip (%d sessions): median %.0f us named by the client, %.0f us "
      "prepared; unregister %.0f / %.0f us" % (len(t["reg"]), m["reg"], m["prep"], m["unreg"], m["punreg"]))
PY
