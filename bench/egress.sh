#!/bin/bash
# Egress by name (docs/network.md): what the proxy costs a tool, against
# the same tool reaching the same server directly (an address rule, no
# proxy), both inside an embedded bpfbox session with BPF loaded.
#
#   bench/egress.sh BIN OUTDIR SETUPS RUNS BYTES
#
# The server (tests/helpers/netsrv.py) runs in a network namespace of this
# script's own, over a veth pair: a name rule never reaches the host's own
# or loopback addresses, so "loopback" here is a veth inside this host.
# tests/helpers/egress_bench.py times SETUPS connections (connect, GET /,
# first byte) and RUNS transfers of BYTES. Root only. Writes
# OUTDIR/egress.tsv, one row per path:
#   PATH SETUP_MEDIAN_US SETUP_P90_US MBPS_MEDIAN MBPS_MIN MBPS_MAX
# (PATH: direct or proxy; tls-spliced and tls-terminated: TLS to port 443
# through the proxy, spliced untouched, or terminated by the proxy as for a
# --secret, the client trusting the session CA; tls-wildcard: terminated
# for a wildcard HTTP rule, each setup to a name never reached before, so
# each includes the proxy minting that name's leaf) and OUTDIR/egress.why
# when it could not run.
set -uo pipefail
export LC_ALL=C

BIN=$1 OUT=$2 SETUPS=$3 RUNS=$4 BYTES=$5
# A session terminates at most 32 hosts (docs/network.md): the wildcard
# row's setups, each to a fresh name.
WILD=$((SETUPS < 30 ? SETUPS : 30))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TSV=$OUT/egress.tsv
WHY=$OUT/egress.why
: >"$TSV"
rm -f "$WHY"
NS=bbx-bench-$$
N=$(($$ % 200 + 20))
HOSTIF=bbb$$h
SRV=10.202.$N.2
T=$(mktemp -d /tmp/bpfbox-begress.XXXXXX)
chmod 755 "$T"
cleanup() {
	local p
	for p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	ip netns del "$NS" 2>/dev/null
	ip link del "$HOSTIF" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
why() {
	echo "$*" >"$WHY"
	exit 0
}

[ "$(id -u)" = 0 ] || why "needs root (network namespace, BPF redirect)"
ip netns add "$NS" && ip link add "$HOSTIF" type veth peer name bbb$$n &&
	ip link set bbb$$n netns "$NS" && ip addr add 10.202.$N.1/24 dev "$HOSTIF" &&
	ip link set "$HOSTIF" up && ip -n "$NS" addr add $SRV/24 dev bbb$$n &&
	ip -n "$NS" link set bbb$$n up && ip -n "$NS" link set lo up ||
	why "cannot make a network namespace with a veth pair"
# A CA and a leaf for bench.test: the terminating proxy verifies the server (BPFBOX_UPSTREAM_CA).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.crt" -days 1 \
	-subj /CN=bench-ca >/dev/null 2>&1 &&
	openssl req -newkey rsa:2048 -nodes -keyout "$T/k.pem" -out "$T/c.csr" -subj /CN=bench.test \
		>/dev/null 2>&1 &&
	printf 'subjectAltName=DNS:bench.test,DNS:*.wild.bench.test\n' >"$T/ext" &&
	openssl x509 -req -in "$T/c.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
		-out "$T/c.pem" -days 1 -extfile "$T/ext" >/dev/null 2>&1 ||
	why "openssl cannot make a certificate"
ip netns exec "$NS" python3 "$ROOT/tests/helpers/netsrv.py" $SRV 80 443 7000 "$T/c.pem" \
	"$T/k.pem" "$T/ready" bench.test=$SRV $(seq -f "s%g.wild.bench.test=$SRV" 0 $((WILD - 1))) \
	>"$T/srv.log" 2>&1 &
i=0
while [ ! -s "$T/ready" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -s "$T/ready" ] || why "the test server did not start: $(head -c 200 "$T/srv.log")"
mkdir -p "$T/ws"
cp "$ROOT/tests/helpers/egress_bench.py" "$T/ws/"
cp "$T/ca.crt" "$T/ws/bench-ca.crt"

run() { # path rule port [client flags...] [-- bpfbox run options]
	local path=$1 rule=$2 port=$3 flags=() opts=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
	[ $# -gt 0 ] && shift && opts=("$@")
	BPFBOX_UPSTREAM_CA="$T/ca.crt" BENCH_TOKEN=x "$BIN" run --audit "$T/$path.jsonl" \
		--audit-mode off -w "$T/ws" --net-resolver $SRV --timeout 600 --net-allow "$rule" \
		"${opts[@]}" -- python3 egress_bench.py "${HOST:-bench.test}" $SRV "$port" "$SETUPS" \
		"$BYTES" "$RUNS" "${flags[@]}" >"$T/$path.out" 2>"$T/$path.err" ||
		why "the $path session failed: $(grep -v warning "$T/$path.err" | head -c 200)"
	awk -v p="$path" '$1 == "setup_us" { s = $2 " " $3 } $1 == "mbps" { m = $2 " " $3 " " $4 }
		END { print p, s, m }' "$T/$path.out" >>"$TSV"
}
run direct "$SRV:80" 80 noresolve
run proxy "bench.test:80" 80
run tls-spliced "bench.test:443" 443 tls=bench-ca.crt
run tls-terminated "bench.test:443" 443 tls -- --secret BENCH_TOKEN@bench.test
HOST=wild.bench.test run tls-wildcard '*.wild.bench.test:443 GET /**' 443 tls wild=$WILD
