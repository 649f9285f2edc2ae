# One session path (run/run.c): the same command through the daemon and
# embedded yields a session.start with the same keys, the same not_enforced,
# and the same end-of-run denial summary, on stderr and on the status
# channel, though in daemon mode the BPF records that show the denials are
# the daemon's (its unregister reply carries them back).
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 session_path "a daemon and the BPF agent"

daemon_scratch spath

if ! start_daemon "$TMPD/daemon.jsonl"; then
	fail "the daemon did not get ready: $(cat "$DERR")"
	finish
	exit 1
fi

# A loopback connect outside the allow-list: refused by the BPF network
# layer (cgroup connect4 here, the LSM at Full), which only BPF records show.
CMD='import socket
s = socket.socket()
try:
    s.connect(("127.0.0.1", 1))
except OSError as e:
    print("refused", e.errno)'
run_mode() { # NAME MODE-OPTION
	"$BPFBOX" run "$2" --net-allow 127.0.0.1:9 --audit "$TMPD/$1.jsonl" -w "$WS" \
		--status-fd 3 -- python3 -c "$CMD" 3>"$TMPD/$1.status" >"$TMPD/$1.out" 2>"$TMPD/$1.err"
}
run_mode daemon "--daemon-socket=$SOCK"
rd=$?
run_mode embedded --no-daemon
re=$?
[ "$rd" = 0 ] && [ "$re" = 0 ] && grep -q "refused 1" "$TMPD/daemon.out" &&
	grep -q "refused 1" "$TMPD/embedded.out" &&
	ok "the connect is refused (EPERM) in both modes" ||
	fail "exit $rd/$re; daemon: $(head -c 300 "$TMPD/daemon.err"); embedded: $(head -c 300 "$TMPD/embedded.err")"

# compare WHAT PY_EXPR: PY_EXPR over d (daemon) and e (embedded) events.
compare() {
	if "$PY" - "$TMPD/daemon.jsonl" "$TMPD/embedded.jsonl" "$TMPD/daemon.status" \
		"$TMPD/embedded.status" "$2" <<'PY'
import json, sys
def load(p):
    return [json.loads(l) for l in open(p) if l.strip()]
d, e, ds, es = (load(p) for p in sys.argv[1:5])
def start(v):
    return next(x for x in v if x["type"] == "session.start")
def keys(x):
    return sorted(k + ("." + ",".join(sorted(v)) if isinstance(v, dict) and k != "labels" else "")
                  for k, v in x.items())
def denied(v):
    return sorted((x["layer"], x["op"], x["what"], x["errno"], x["count"])
                  for x in v if x["type"] == "denied")
try:
    ok = eval(sys.argv[5])
except (KeyError, StopIteration) as ex:
    ok = False
    print("missing: %s" % ex, file=sys.stderr)
if not ok:
    print(json.dumps([start(d), start(e)])[:1500], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
	then ok "$1"; else fail "$1"; fi
}
compare "session.start has the same keys in both modes" 'keys(start(d)) == keys(start(e))'
compare "and says which mode held the programs" \
	'start(d)["mode"] == "daemon" and start(e)["mode"] == "embedded"'
compare "and the same level and not_enforced" \
	'all(start(d)[k] == start(e)[k] for k in ("level_requested", "level_enabled", "not_enforced"))'
compare "the status channel says the same denials in both modes" \
	'denied(ds) == denied(es) and ("cgroup-bpf", "connect", "127.0.0.1:1", "EPERM", 1) in denied(ds)'
# The summary on stderr: the same lines, the daemon's from its records.
grep '^bpfbox: denied' "$TMPD/daemon.err" >"$TMPD/daemon.sum"
grep '^bpfbox: denied' "$TMPD/embedded.err" >"$TMPD/embedded.sum"
grep -q 'denied 1 time: connect 127.0.0.1:1 (cgroup-bpf, EPERM); network is denied' \
	"$TMPD/daemon.sum" && cmp -s "$TMPD/daemon.sum" "$TMPD/embedded.sum" &&
	ok "the end-of-run summary is the same in both modes, with its hint" ||
	fail "summaries differ: daemon: $(cat "$TMPD/daemon.sum"); embedded: $(cat "$TMPD/embedded.sum")"
finish
