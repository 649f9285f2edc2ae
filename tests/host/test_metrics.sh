# Prometheus metrics (docs/operating.md): a real daemon with --metrics runs
# real sessions, a real Prometheus server (Debian's prometheus) scrapes it,
# and its HTTP API must return the series: host level and probes, events by
# type and decision, denials by layer, request latency, sinks, program run
# counts from bpf_stats. Also /healthz, promtool's lint of the exposition,
# and a bad --metrics address refused before anything starts.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 metrics "the daemon, which loads BPF programs,"
need_prog prometheus /usr/bin/prometheus \
	"metrics: prometheus is not installed; run 'make deps' (tools/deps.sh installs it)"
PROM=$PROG

daemon_scratch metrics
mkdir -p "$SOCKDIR" "$TMPD/prom"
PPID_=
cleanup_extra() { [ -n "$PPID_" ] && kill -9 "$PPID_" 2>/dev/null; }

# Two free loopback ports, picked by the kernel.
set -- $(free_ports tcp tcp)
MPORT=$1 PPORT=$2

# get URL: prints "CODE BODY" (python: no curl needed in the VM).
get() {
	"$PY" -c '
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=5); print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
except Exception as e:
    print(0, e)' "$1"
}

# A bad address: refused with one line, exit 1, nothing left listening.
expect_rc 1 "--metrics with a bad address is refused" "$BPFBOX" daemon --socket "$SOCK" \
	--pin-dir "$PIN" --cgroup-parent "$PARENT" --audit /dev/null --metrics nonsense
expect_grep 'metrics nonsense: give HOST:PORT' "$TMPD/err" "the refusal names the option and the form"
[ ! -e "$SOCK" ] && ok "nothing listens after the refusal" || fail "the socket stayed"
expect_rc 2 "--bpf-stats without --metrics is a usage error" "$BPFBOX" daemon --bpf-stats

if start_daemon "$TMPD/audit.jsonl" --metrics "127.0.0.1:$MPORT" --bpf-stats; then
	ok "the daemon starts with --metrics 127.0.0.1:$MPORT --bpf-stats"
else
	fail "the daemon did not start: $(cat "$DERR")"
	finish
	exit 1
fi
set -- $(get "http://127.0.0.1:$MPORT/healthz")
[ "$1 $2" = "200 ok" ] && ok "/healthz answers 200 ok" || fail "/healthz: $*"
set -- $(get "http://127.0.0.1:$MPORT/nope")
[ "$1" = 404 ] && ok "an unknown path is 404" || fail "unknown path: $1"

# Sessions: a denied open (Landlock) and a denied connect (the metadata
# address, denied by the cgroup program even with --net allow).
"$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" -- sh -c 'cat /etc/shadow; true' >/dev/null 2>&1
# A write to the read-only host (EROFS under the namespace layer: layer mount).
"$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" -- sh -c ': > /etc/bpfbox-metrics-$$; true' >/dev/null 2>&1
"$BPFBOX" run -q --net allow --daemon-socket "$SOCK" -w "$WS" -- "$PY" -c '
import socket
s = socket.socket(); s.settimeout(1)
try: s.connect(("169.254.169.254", 80))
except OSError: pass' >/dev/null 2>&1

get "http://127.0.0.1:$MPORT/metrics" | sed 1s/^200\ // >"$TMPD/metrics.txt"
if command -v promtool >/dev/null; then
	if promtool check metrics <"$TMPD/metrics.txt" >"$TMPD/lint" 2>&1; then
		ok "promtool finds nothing to say about the exposition (naming, types, units)"
	else
		fail "promtool check metrics: $(head -5 "$TMPD/lint")"
	fi
fi

cat >"$TMPD/prom/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: bpfbox
    static_configs:
      - targets: ["127.0.0.1:$MPORT"]
EOF
"$PROM" --config.file="$TMPD/prom/prometheus.yml" --storage.tsdb.path="$TMPD/prom/data" \
	--web.listen-address="127.0.0.1:$PPORT" >"$TMPD/prom/log" 2>&1 &
PPID_=$!

LEVEL=$("$BPFBOX" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["level"])')
# The queries, each with what its answer must hold; polled until all hold
# (Prometheus needs its first scrapes) or 30 s pass.
"$PY" - "$PPORT" "$LEVEL" >"$TMPD/prom.check" 2>&1 <<'PY'
import json, sys, time, urllib.parse, urllib.request
port, level = sys.argv[1], sys.argv[2]
def q(expr):
    u = "http://127.0.0.1:%s/api/v1/query?query=%s" % (port, urllib.parse.quote(expr))
    try:
        d = json.load(urllib.request.urlopen(u, timeout=2))
    except Exception:
        return None
    return d["data"]["result"] if d.get("status") == "success" else None
checks = [
    ('up{job="bpfbox"} == 1', "Prometheus scrapes the daemon (up == 1)"),
    ('bpfbox_host_info{level="%s"} == 1' % level, "the host's level %s as bpfbox_host_info" % level),
    ('bpfbox_probe_info{feature="landlock",state="available"}', "each probe as bpfbox_probe_info"),
    ('bpfbox_events_total{type="session.start",decision="none"} >= 2', "session.start counted"),
    ('bpfbox_events_total{type="file",decision="deny"} >= 1', "denied opens counted by type and decision"),
    ('bpfbox_denials_total{layer="landlock"} >= 1', "Landlock denials counted by layer"),
    ('bpfbox_denials_total{layer="cgroup-bpf"} >= 1', "cgroup BPF connect denials counted by layer"),
    ('bpfbox_denials_total{layer="mount"} >= 1', "read-only mount denials counted as layer mount"),
    ('bpfbox_denials_total{layer="exec-tracepoint"} >= 0', "every layer of the stream is a series"),
    ('bpfbox_request_duration_seconds_count{op="register"} >= 2', "register latency histogram"),
    ('histogram_quantile(0.5, bpfbox_request_duration_seconds_bucket{op="register"}) > 0',
     "histogram_quantile works on the register buckets"),
    ('bpfbox_sink_up{kind="file"} == 1', "the audit file sink is up"),
    ('bpfbox_sink_dropped_events_total{kind="file"} == 0', "the file sink dropped nothing"),
    ('bpfbox_ring_lost_events_total == 0', "ring-buffer loss exported (0 here)"),
    ('sum(bpfbox_bpf_program_runs_total) > 0', "program run counts from bpf_stats"),
    ('sum(bpfbox_bpf_program_run_seconds_total) > 0', "program run time from bpf_stats"),
    ('bpfbox_sessions', "sessions by state and level"),
]
left = dict(checks)
deadline = time.time() + 30
while left and time.time() < deadline:
    for expr in list(left):
        r = q(expr)
        if r:
            print("ok - Prometheus: %s" % left.pop(expr))
    if left:
        time.sleep(0.3)
for expr, name in left.items():
    print("FAIL - Prometheus: %s: no result for %s within 30 s" % (name, expr))
PY
cat "$TMPD/prom.check"
grep -q '^FAIL' "$TMPD/prom.check" && FAILS=$((FAILS + 1)) && tail -5 "$TMPD/prom/log"

# The Grafana dashboard (packaging/grafana): Prometheus accepts each of its
# queries, and each bpfbox series it names is one the daemon serves.
"$PY" - "$PPORT" "$ROOT/packaging/grafana/bpfbox-fleet.json" "$TMPD/metrics.txt" \
	>"$TMPD/dash.check" 2>&1 <<'PY'
import json, re, sys, urllib.parse, urllib.request
port, dash, expo = sys.argv[1:4]
served = set(re.findall(r"^(bpfbox_[a-z_]+)", open(expo).read(), re.M))
bad = []
for p in json.load(open(dash))["panels"]:
    for t in p["targets"]:
        e = t["expr"].replace("$__rate_interval", "1m").replace("$instance", ".*").replace("$job", ".*")
        for n in re.findall(r"bpfbox_[a-z_]+", e):
            if n not in served:
                bad.append("%s: %s is not served" % (p["title"], n))
        u = "http://127.0.0.1:%s/api/v1/query?query=%s" % (port, urllib.parse.quote(e))
        try:
            d = json.load(urllib.request.urlopen(u, timeout=5))
            if d.get("status") != "success":
                bad.append("%s: %s" % (p["title"], d))
        except Exception as ex:
            bad.append("%s: %s: %s" % (p["title"], e, ex))
print("ok - the Grafana dashboard's queries run in Prometheus on served series" if not bad
      else "FAIL - dashboard: " + "; ".join(bad[:5]))
PY
cat "$TMPD/dash.check"
grep -q '^ok' "$TMPD/dash.check" || FAILS=$((FAILS + 1))

# The scrape target is healthy in Prometheus's own view.
get "http://127.0.0.1:$PPORT/api/v1/targets" | sed 1s/^200\ // >"$TMPD/targets.json"
"$PY" -c 'import json,sys; t=json.load(open(sys.argv[1]))["data"]["activeTargets"]
sys.exit(0 if t and t[0]["health"] == "up" and not t[0]["lastError"] else 1)' "$TMPD/targets.json" &&
	ok "Prometheus lists the target as up, no scrape error" ||
	fail "target: $(head -c 400 "$TMPD/targets.json")"
finish
