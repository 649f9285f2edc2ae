#!/bin/sh
# The Kubernetes files (issue 35 item 3, packaging/kubernetes/,
# docs/operating.md "Kubernetes"): every manifest parses; the DaemonSet asks
# for the systemd unit's capabilities and no more, is not privileged, and
# mounts what the daemon needs from the node; the hook's hooks.d file is
# packaging/oci/bpfbox.json at the path the init container installs; the
# daemon's config in the ConfigMap is one the daemon takes. No schema
# validator for Kubernetes is packaged in Debian: these are the checks.
. "$(dirname "$0")/../lib.sh"

K="$ROOT/packaging/kubernetes"
PY=/usr/bin/python3
"$PY" - "$K" "$ROOT/packaging/systemd/bpfbox.service" "$ROOT/packaging/oci/bpfbox.json" "$TMPD" <<'PY'
import json, re, sys, yaml
k, unit, hookfile, tmp = sys.argv[1:5]
def ok(c, name):
    print(("ok - " if c else "FAIL - ") + name)
docs = {}
for f in ("daemonset.yaml", "configmap.yaml", "metrics.yaml"):
    try:
        for d in yaml.safe_load_all(open(f"{k}/{f}")):
            docs[(d["kind"], d["metadata"]["name"])] = d
        ok(True, f"{f} parses as YAML, each document with a kind and a name")
    except Exception as e:
        ok(False, f"{f}: {e}")
ds = docs.get(("DaemonSet", "bpfbox"))
ok(ds is not None, "a DaemonSet named bpfbox")
spec = ds["spec"]["template"]["spec"]
c = [x for x in spec["containers"] if x["name"] == "daemon"][0]
sc = c["securityContext"]
caps = set(re.search(r"^CapabilityBoundingSet=(.*)$", open(unit).read(), re.M).group(1).split())
want = {x[4:] for x in caps}
ok(set(sc["capabilities"]["add"]) == want and sc["capabilities"]["drop"] == ["ALL"],
   f"the daemon's capabilities are the unit's ({' '.join(sorted(want))}), all others dropped")
ok(sc.get("privileged") is False and sc.get("allowPrivilegeEscalation") is False,
   "not privileged, no privilege escalation")
ok(sc.get("readOnlyRootFilesystem") is True, "a read-only root file system")
ok(spec.get("hostPID") is True, "the node's PID namespace (the socket's peers are the node's processes)")
paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
for p in ("/sys/fs/cgroup", "/sys/fs/bpf", "/run/bpfbox"):
    ok(any(paths.get(n) == p and mounts.get(n) == p for n in paths), f"the node's {p} at the same path")
ok(spec.get("automountServiceAccountToken") is False, "no API token in the pod")
hook = json.loads(docs[("ConfigMap", "bpfbox-hook")]["data"]["bpfbox.json"])
mine = json.load(open(hookfile))
path = hook["hook"].pop("path")
mine["hook"].pop("path")
ok(hook == mine, "the hook's hooks.d file is packaging/oci/bpfbox.json")
init = spec["initContainers"][0]
ok(path.startswith(init["volumeMounts"][0]["mountPath"].replace("/host", "", 1)) and
   f"/host{path}" in " ".join(init["args"]), f"its path ({path}) is where the init container puts bpfbox")
open(f"{tmp}/daemon.json", "w").write(docs[("ConfigMap", "bpfbox-config")]["data"]["daemon.json"])
arg = [a for a in c["args"] if a.startswith("--config=")]
ok(arg == ["--config=/etc/bpfbox/daemon.json"] and
   any(m["mountPath"] == "/etc/bpfbox" and m["name"] == "config" for m in c["volumeMounts"]),
   "the daemon reads the ConfigMap's daemon.json")
sm = docs.get(("ServiceMonitor", "bpfbox"))
svc = docs.get(("Service", "bpfbox-metrics"))
ok(sm and svc and any(a.endswith(":9464") for a in c["args"] if a.startswith("--metrics=")) and
   svc["spec"]["ports"][0]["port"] == 9464, "a Service and a ServiceMonitor on the daemon's metrics port")
PY
"$BPFBOX" daemon --check --config "$TMPD/daemon.json" >"$TMPD/check.out" 2>&1
rc=$?
[ "$rc" = 0 ] && ok "the ConfigMap's daemon.json is a config the daemon takes (daemon --check)" ||
	fail "daemon --check on the ConfigMap's config: exit $rc: $(oneline "$TMPD/check.out")"
# The control: a config the daemon refuses fails the same check.
printf '{"policies": {"p": {"network": "sometimes"}}}\n' >"$TMPD/bad.json"
"$BPFBOX" daemon --check --config "$TMPD/bad.json" >"$TMPD/bad.out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "policies.p" "$TMPD/bad.out" &&
	ok "daemon --check refuses a bad policy (exit 2, naming it)" ||
	fail "daemon --check on a bad config: exit $rc: $(oneline "$TMPD/bad.out")"
finish
