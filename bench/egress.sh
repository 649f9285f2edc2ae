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
# each includes the proxy minting that name's leaf; h2-spliced and
# h2-terminated: curl --http2 to an HTTP/2 server, nghttpd, spliced or
# terminated with HTTP/2 on both sides: the setup is curl's first byte less
# its name lookup, the transfer a file of BYTES) and OUTDIR/egress.why
# when it could not run. The h2 rows are left out, saying why in
# OUTDIR/egress.h2why, without nghttpd (Debian: nghttp2-server).
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
rm -f "$WHY" "$OUT/egress.h2why"
NS=bbx-bench-$$
N=$(($$ % 200 + 20))
HOSTIF=bbb$$h
SRV=10.202.$N.2
SRV2=10.202.$N.3 # nghttpd's, for the h2 rows
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
	printf 'subjectAltName=DNS:bench.test,DNS:*.wild.bench.test,DNS:h2.bench.test\n' >"$T/ext" &&
	openssl x509 -req -in "$T/c.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
		-out "$T/c.pem" -days 1 -extfile "$T/ext" >/dev/null 2>&1 ||
	why "openssl cannot make a certificate"
ip netns exec "$NS" python3 "$ROOT/tests/helpers/netsrv.py" $SRV 80 443 7000 "$T/c.pem" \
	"$T/k.pem" "$T/ready" bench.test=$SRV h2.bench.test=$SRV2 \
	$(seq -f "s%g.wild.bench.test=$SRV" 0 $((WILD - 1))) \
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
	local cmd=(python3 egress_bench.py "${HOST:-bench.test}" $SRV "$port" "$SETUPS" "$BYTES" "$RUNS"
		"${flags[@]}")
	[ -n "${H2:-}" ] && cmd=(bash h2bench.sh "$SETUPS" "$RUNS" "${flags[@]}")
	BPFBOX_UPSTREAM_CA="$T/ca.crt" BENCH_TOKEN=x "$BIN" run --audit "$T/$path.jsonl" \
		--audit-mode off -w "$T/ws" --net-resolver $SRV --timeout 600 --net-allow "$rule" \
		"${opts[@]}" -- "${cmd[@]}" >"$T/$path.out" 2>"$T/$path.err" ||
		why "the $path session failed: $(grep -v warning "$T/$path.err" | head -c 200)"
	awk -v p="$path" '$1 == "setup_us" { s = $2 " " $3 } $1 == "mbps" { m = $2 " " $3 " " $4 }
		END { print p, s, m }' "$T/$path.out" >>"$TSV"
}
run direct "$SRV:80" 80 noresolve
run proxy "bench.test:80" 80
run tls-spliced "bench.test:443" 443 tls=bench-ca.crt
run tls-terminated "bench.test:443" 443 tls -- --secret BENCH_TOKEN@bench.test
HOST=wild.bench.test run tls-wildcard '*.wild.bench.test:443 GET /**' 443 tls wild=$WILD

# HTTP/2: curl --http2 against nghttpd, spliced (the client verifies the
# server itself) and terminated (h2 on both sides of the proxy).
h2_rows() {
	command -v nghttpd >/dev/null || { echo "no nghttpd (Debian: nghttp2-server)" >"$OUT/egress.h2why"; return; }
	mkdir -p "$T/docs"
	echo small >"$T/docs/small"
	head -c "$BYTES" /dev/zero >"$T/docs/big"
	ip -n "$NS" addr add $SRV2/24 dev bbb$$n || { echo "cannot add $SRV2" >"$OUT/egress.h2why"; return; }
	ip netns exec "$NS" nghttpd -a $SRV2 -d "$T/docs" 443 "$T/k.pem" "$T/c.pem" >"$T/nghttpd.log" 2>&1 &
	for i in $(seq 100); do
		ip netns exec "$NS" ss -ltn | grep -q "$SRV2:443" && break
		sleep 0.05
	done
	# curl reads its whole trust store at each start: the spliced row's is
	# as large as the session's (the system's and the test CA) to compare.
	cat /etc/ssl/certs/ca-certificates.crt "$T/ca.crt" >"$T/ws/bench-bundle.crt" 2>/dev/null ||
		cp "$T/ca.crt" "$T/ws/bench-bundle.crt"
	cat >"$T/ws/h2bench.sh" <<'H2EOF'
# h2bench.sh SETUPS RUNS [CAFILE]: curl --http2 to h2.bench.test; the rows' lines.
o=(--http2 -sS --max-time 300 -o /dev/null)
[ -n "${3:-}" ] && o+=(--cacert "$3")
for i in $(seq "$1"); do
	curl "${o[@]}" -w '%{http_version} %{time_namelookup} %{time_starttransfer}\n' https://h2.bench.test/small
done | awk '$1 != "2" { print "not h2: " $0 > "/dev/stderr"; exit 1 } { print ($3 - $2) * 1e6 }' |
	sort -g | awk '{ v[NR] = $1 } END { printf "setup_us %.1f %.1f\n", v[int((NR + 1) / 2)], v[int(NR * 0.9) + 1] }'
for i in $(seq "$2"); do
	curl "${o[@]}" -w '%{speed_download}\n' https://h2.bench.test/big
done | sort -g | awk '{ v[NR] = $1 / 1e6 } END { printf "mbps %.0f %.0f %.0f\n", v[int((NR + 1) / 2)], v[1], v[NR] }'
H2EOF
	# A failure here leaves the other rows: its reason in egress.h2why.
	(
		WHY=$OUT/egress.h2why
		H2=1 run h2-spliced "h2.bench.test:443" 443 bench-bundle.crt
		H2=1 run h2-terminated "h2.bench.test:443" 443 -- --secret BENCH_TOKEN@h2.bench.test
	)
}
h2_rows
