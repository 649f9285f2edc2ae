#!/bin/sh
# Audit floods in embedded mode (issue 17): 50 processes opening distinct
# missing files once wrote 1.09 M records in 4 s. A per-session token bucket
# (--audit-rate) writes what fits and counts the rest exactly, by type, in
# "loss" lines (where "rate limit"); session.end says how many in all.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 audit-flood "loading the BPF agent (--audit)"
WS="$TMPD/ws"
mkdir -p "$WS"
F="$TMPD/flood.jsonl"

expect_rc 0 "a session of 4 processes opening 20,000 distinct missing files, --audit-rate 500/1000" \
	"$BPFBOX" run -q --audit "$F" --audit-rate 500/1000 -w "$WS" -- python3 -c '
import os
for p in range(4):
    if os.fork() == 0:
        for i in range(5000):
            try: open("/nonexistent-flood/%d-%d" % (p, i))
            except OSError: pass
        os._exit(0)
for p in range(4): os.wait()'
python3 - "$F" >"$TMPD/check.out" 2>&1 <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
end = ev[-1]
rec = [e for e in ev if e["type"] in ("exec", "exit", "fork", "file", "connect", "rename")]
rl = [e for e in ev if e["type"] == "loss" and e.get("where") == "rate limit"]
ring = [e for e in ev if e["type"] == "loss" and e.get("where") == "ring buffer full"]
flood = sum(1 for e in rec if e["type"] == "file" and e["path"].startswith("/nonexistent-flood/"))
print("end", end["type"], "limited", len(rl) > 0, "cut", flood < 20000,
      "types", all(set(e["types"]) <= {"exec", "exit", "fork", "file", "connect", "rename", "other"} for e in rl),
      "counts", sum(e["count"] for e in rl) == end["suppressed"] == sum(sum(e["types"].values()) for e in rl),
      "gaps", end["seq"] - 1 - len(ring) == len(rec) + end["suppressed"] + end["lost"],
      "records", end["records"] == len(rec),
      "all", flood + sum(e["types"].get("file", 0) for e in rl) + end["lost"] >= 20000)
PY
expect_grep "^end session.end limited True cut True types True counts True gaps True records True all True$" \
	"$TMPD/check.out" "the flood is cut; what was not written is counted exactly, by type"
expect_rc 2 "--audit-rate with a bad value is bad usage (2): nothing runs" \
	"$BPFBOX" run -q --audit-rate lots -w "$WS" -- true
expect_grep "^bpfbox run: --audit-rate lots: give records a second" "$TMPD/err" "and it says what to give"
finish
