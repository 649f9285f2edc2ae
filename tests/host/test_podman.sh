#!/bin/sh
# Containers adopted through the OCI hook with a real runtime (issue 35 item
# 4): Podman (runc, from Debian) runs an image this test builds from local
# files (busybox, `podman import`: no registry) with the hook's hooks.d file
# pointing at this build. An annotated container is adopted before its
# process runs: its execs are recorded, a command rule kills one, and its
# session ends with it. A container whose policy the daemon does not have
# does not start. crun where the cgroups are v2 only (the VM's 6.12 Full
# cell); runc where they are hybrid (v1 controllers and the v2 tree), as
# this CI host's are, which crun refuses: runc makes the container's
# cgroup in the v2 tree too, which is what is adopted.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 podman "running containers"
RUNTIME=runc
if ! grep -q ' cgroup ' /proc/mounts; then
	RUNTIME=crun
else
	skip "podman: crun refuses this host's hybrid cgroups; runc runs the containers here, crun in the VM's 6.12 Full cell"
fi
for p in podman $RUNTIME busybox; do
	need_prog "$p" "/usr/bin/$p" "podman: no $p; run 'make deps' (tools/deps.sh installs podman, runc and busybox-static)"
done

chmod 755 "$TMPD"
daemon_scratch podman
A="$TMPD/audit.jsonl"
IMG=localhost/bpfbox-test-busybox:$$
STORE="$TMPD/store" # a storage of this test's own: no image or container of the host's
PODMAN="podman --root $STORE/root --runroot $STORE/run --runtime $RUNTIME --cgroup-manager cgroupfs --events-backend none --hooks-dir $TMPD/hooks.d"
cleanup_extra() {
	$PODMAN rm -af -t 0 >/dev/null 2>&1
	$PODMAN rmi -af >/dev/null 2>&1
	umount -R "$STORE" 2>/dev/null
	[ -n "${NS:-}" ] && netfix_down
}

# Egress by name's upstream: the test's resolver and HTTP server in a
# network namespace of its own (tests/host/netfix.sh).
. "$ROOT/tests/host/netfix.sh"
N=$(($$ % 200 + 20))
netfix_up pm 10.203.$N 8080 443 allowed.test,other.test allowed.test=10.203.$N.2 other.test=10.203.$N.2
cat >"$TMPD/config.json" <<EOF
{"policies": {"agent": {"network": "deny", "extra": {"deny_commands": ["bpfbox-podman-forbidden"]}},
              "web": {"network": "deny", "extra": {"net_allow": ["allowed.test:8080"]}, "net_resolver": "$SRV"}}}
EOF
if ! start_daemon "$A" --config "$TMPD/config.json"; then
	fail "the daemon did not get ready: $(cat "$DERR")"
	finish
	exit 1
fi

# The hook file as packaged, pointing at this build and this daemon.
mkdir -p "$TMPD/hooks.d" "$TMPD/root/bin" "$TMPD/out"
if ! "$PY" - "$ROOT/packaging/oci/bpfbox.json" "$(command -v "$BPFBOX")" "$SOCK" \
	>"$TMPD/hooks.d/bpfbox.json" 2>"$TMPD/hook.err" <<'PY'; then
import json, sys
h = json.load(open(sys.argv[1]))
h["hook"]["path"] = sys.argv[2]
h["hook"]["args"] += ["--socket", sys.argv[3]]
print(json.dumps(h))
PY
	fail "the hooks.d file from packaging/oci/bpfbox.json: $(oneline "$TMPD/hook.err")"
	finish
	exit 1
fi
cp "$(command -v busybox)" "$TMPD/root/bin/busybox"
for c in sh cat echo sleep true wget; do ln -s busybox "$TMPD/root/bin/$c"; done
# A credential file in the image: on the container's overlay root.
mkdir -p "$TMPD/root/app" && echo TOKEN=podman-secret >"$TMPD/root/app/.env"
tar -C "$TMPD/root" -cf "$TMPD/root.tar" .
if $PODMAN import "$TMPD/root.tar" "$IMG" >"$TMPD/import.out" 2>&1; then
	ok "an image built from local files (busybox, podman import)"
else
	fail "podman import: $(oneline "$TMPD/import.out")"
	finish
	exit 1
fi
# ctr NAME POLICY CMD: the container NAME run to its end, annotated POLICY.
# (The limits: runc cannot raise the test's own nofile and nproc.)
ULIM="--ulimit nofile=1024:1024 --ulimit nproc=1024:1024"
ctr() {
	$PODMAN run --name "$1" --network none $ULIM \
		--annotation "io.bpfbox.policy=$2" -v "$TMPD/out:/out" "$IMG" /bin/sh -c "$3" \
		>"$TMPD/$1.out" 2>&1
}

echo "# podman: runtime $RUNTIME, storage driver $($PODMAN info -f '{{.Store.GraphDriverName}}' 2>/dev/null)"

# --- an annotated container is adopted before it runs -------------------------
# (The rule's word is put together inside: in sh's own argv it would kill sh.)
ctr c1 agent 'echo ran >/out/c1; cat /app/.env >/dev/null 2>&1; echo "env rc=$?"; w=bpfbox-podman; /bin/echo $w-forbidden; echo "rc=$?"'
rc=$?
[ "$rc" = 0 ] && [ -s "$TMPD/out/c1" ] && ok "the annotated container ran" ||
	fail "podman run: exit $rc: $(oneline "$TMPD/c1.out")"
expect_grep "rc=137" "$TMPD/c1.out" "a command rule kills an exec inside the container"
# session_of ID: the session the hook made of container ID.
session_of() {
	"$PY" -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == "session.start" and e.get("labels", {}).get("oci.id") == sys.argv[2]:
        print(e["session"])' "$A" "$1"
}
ID=$($PODMAN inspect -f '{{.Id}}' c1 2>/dev/null)
SID=$(session_of "$ID")
export SID
[ -n "$SID" ] && ok "the hook made it a session labelled with the container's id" ||
	fail "no session.start with oci.id $ID: $(tail -c 400 "$A")"
# Podman's cgroup for it is named after its id (libpod-ID; crun gives the
# container a cgroup namespace, so the container itself sees "/").
check_events "$A" "'$ID' and '$ID' in [e for e in mine if e['type'] == 'session.start'][0]['cgroup']" \
	"the session is the container's cgroup (named after its id)"
check_events "$A" "any(e['type'] == 'exec' and e['decision'] == 'deny' and e.get('rule') == 'deny_commands: bpfbox-podman-forbidden' for e in mine)" \
	"the killed exec is a deny record naming the rule"
check_events "$A" "any(e['type'] == 'exec' and e['filename'] == '/bin/sh' for e in mine)" \
	"the container's first exec (its process, after the hook) is recorded"
# At Full the BPF LSM judges the container's files by the paths it sees, on
# its overlay root: its .env is denied as /app/.env.
if wait_events "$A" "[e for e in mine if e['type'] == 'session.start'][0]['layers']['bpf_lsm']" 0; then
	expect_grep "env rc=1" "$TMPD/c1.out" "at Full, the BPF LSM denies a .env on the container's overlay root"
	check_events "$A" "any(e['type'] == 'file' and e['decision'] == 'deny' and e['layer'] == 'bpf-lsm' and e['path'] == '/app/.env' for e in mine)" \
		"the denied open is a bpf-lsm record with the container's own path"
else
	skip "podman: no BPF LSM here: the .env on a container's overlay root is denied in the VM's 6.12 Full cell"
fi
wait_events "$A" "any(e['type'] == 'session.end' for e in mine)" 15 &&
	ok "the session ends with the container" || fail "no session.end for the container"

# --- egress by name inside the container -----------------------------------------
# Its own network namespace (--network none: only its loopback): the daemon's
# proxy and resolver listen on that loopback, so an allowed name is reached
# through them and another is not even resolved.
ctr c4 web 'wget -q -O - http://allowed.test:8080/ >/out/c4.allowed 2>&1; echo "allowed rc=$?"; wget -q -O - http://other.test:8080/ 2>&1; echo "other rc=$?"'
expect_grep "hello from allowed.test" "$TMPD/out/c4.allowed" \
	"egress by name: the container reaches an allowed name (its own network namespace, the daemon's proxy)"
expect_grep "other rc=1" "$TMPD/c4.out" "egress by name: another name fails inside the container"
ID4=$($PODMAN inspect -f '{{.Id}}' c4 2>/dev/null)
check_events "$A" "any(e['type'] == 'net.allow' and e['name'] == 'allowed.test' and e['rule'] == 'allowed.test:8080' and e['session'] == [s['session'] for s in ev if s['type'] == 'session.start' and s.get('labels', {}).get('oci.id') == '$ID4'][0] for e in net)" \
	"egress by name: the connection is a net.allow record of the container's session"

# --- pause and resume a running container ---------------------------------------
$PODMAN run -d --name c5 --network none $ULIM --annotation io.bpfbox.policy=agent "$IMG" sleep 60 >/dev/null 2>"$TMPD/c5.err"
ID5=$($PODMAN inspect -f '{{.Id}}' c5 2>/dev/null)
SID=$(session_of "$ID5")
CG5=$("$PY" -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == "session.start" and e["session"] == sys.argv[2]:
        print(e["cgroup"])' "$A" "$SID")
"$BPFBOX" pause "$SID" --socket "$SOCK" >/dev/null 2>&1
[ -n "$CG5" ] && poll_until 5 grep -q "frozen 1" "$CG5/cgroup.events" &&
	ok "bpfbox pause freezes a running container" || fail "pause c5: '$CG5' $(oneline "$TMPD/c5.err")"
"$BPFBOX" resume "$SID" --socket "$SOCK" >/dev/null 2>&1
[ -n "$CG5" ] && poll_until 5 grep -q "frozen 0" "$CG5/cgroup.events" &&
	ok "bpfbox resume thaws it" || fail "resume c5: '$CG5'"
$PODMAN rm -f -t 0 c5 >/dev/null 2>&1

# --- twenty at once -----------------------------------------------------------------
# Each podman run is seconds under the VM's TCG: the host runs this one.
if [ "${BPFBOX_VM:-0}" = 1 ]; then
	skip "podman: twenty containers at once run on the host (seconds each under TCG here)"
else
	pids=
	for i in $(seq 1 20); do
		$PODMAN run -d --name "m$i" --network none $ULIM --annotation io.bpfbox.policy=agent "$IMG" sleep 60 \
			>"$TMPD/m$i.id" 2>"$TMPD/m$i.err" &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086  # the pids
	wait $pids
	"$PY" -c 'import json, sys
ids = {open(sys.argv[2] + "/m%d.id" % i).read().strip() for i in range(1, 21)}
for e in map(json.loads, open(sys.argv[1])):
    if e["type"] == "session.start" and e.get("labels", {}).get("oci.id") in ids:
        print(e["session"])' "$A" "$TMPD" | sort -u >"$TMPD/m.sids"
	n=$(wc -l <"$TMPD/m.sids")
	[ "$n" = 20 ] && ok "twenty containers started at once are twenty sessions" ||
		fail "twenty at once: $n sessions; $(cat "$TMPD"/m*.err | head -c 300)"
	$PODMAN rm -f -t 0 $(seq -f 'm%g' 1 20) >/dev/null 2>&1
	wait_events "$A" "len({e['session'] for e in ev if e['type'] == 'session.end' and e['session'] in open('$TMPD/m.sids').read().split()}) == 20" 30 &&
		ok "and each of them ends with its container" ||
		fail "twenty at once: not every session ended: $(tail -c 300 "$A")"
fi

# --- a container the daemon cannot adopt does not start ------------------------
ctr c2 nope 'echo ran >/out/c2'
rc=$?
[ "$rc" != 0 ] && [ ! -e "$TMPD/out/c2" ] &&
	ok "a container whose policy the daemon lacks does not start (podman exit $rc)" ||
	fail "c2: exit $rc, ran: $(cat "$TMPD/out/c2" 2>/dev/null)"
# runc passes the hook's line on; crun says only that the hook failed.
if [ "$RUNTIME" = runc ]; then
	expect_grep "no policy 'nope'" "$TMPD/c2.out" "podman's error carries the hook's line"
else
	expect_grep "error executing hook .*bpfbox.* \\(exit code: 1\\)" "$TMPD/c2.out" \
		"podman's error names the failed hook (crun does not pass its line on)"
fi

# --- a container without the annotation is left alone ----------------------------
$PODMAN run --name c3 --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
	-v "$TMPD/out:/out" "$IMG" /bin/sh -c 'echo ran >/out/c3' >"$TMPD/c3.out" 2>&1
ID3=$($PODMAN inspect -f '{{.Id}}' c3 2>/dev/null)
[ -s "$TMPD/out/c3" ] && ! grep -q "$ID3" "$A" &&
	ok "a container without the annotation runs, and is no session" ||
	fail "c3: $(oneline "$TMPD/c3.out")"
expect_schema "the containers' stream validates against the schema" "$A"
finish
