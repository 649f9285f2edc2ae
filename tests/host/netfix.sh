# The egress tests' upstream (sourced after need_root_cgroup2 and
# daemon_scratch): a network namespace of the test reached over a veth
# pair, a test CA, and tests/helpers/netsrv.py in the namespace (a DNS
# server answering the NAME=ADDR it is given, HTTP, HTTPS with a
# certificate for the SAN names, a raw TCP server on 7000).
#
# netfix_up TAG NET HTTP_PORTS HTTPS_PORTS SANS NAME=ADDR...: NET is the
# first three bytes of a /24 (the host side is NET.1, the server SRV=NET.2).
# Leaves $TMPD/ca.crt (the CA), $TMPD/srv.pem and srv.key; sets NS and SRV.
# Fails the file (and exits) when anything cannot be made.
netfix_up() {
	_nf_tag=$1 _nf_net=$2 _nf_http=$3 _nf_https=$4 _nf_sans=$5
	shift 5
	for _nf_t in curl openssl ip; do
		if ! command -v $_nf_t >/dev/null; then
			fail "$_nf_tag: $_nf_t is missing (make deps installs it)"
			finish
			exit $?
		fi
	done
	NS=bbx-$_nf_tag-$$
	NF_HOSTIF=bb${_nf_tag%"${_nf_tag#??}"}$$h
	NF_PEER=bb${_nf_tag%"${_nf_tag#??}"}$$n
	SRV=$_nf_net.2
	if ! ip netns add "$NS" || ! ip link add "$NF_HOSTIF" type veth peer name "$NF_PEER" ||
		! ip link set "$NF_PEER" netns "$NS" || ! ip addr add "$_nf_net.1/24" dev "$NF_HOSTIF" ||
		! ip link set "$NF_HOSTIF" up || ! ip -n "$NS" addr add "$SRV/24" dev "$NF_PEER" ||
		! ip -n "$NS" link set "$NF_PEER" up || ! ip -n "$NS" link set lo up; then
		fail "$_nf_tag: cannot make the test's network namespace $NS"
		finish
		exit $?
	fi
	(
		cd "$TMPD" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 \
			-subj "/CN=bpfbox-test-$_nf_tag-ca" 2>/dev/null &&
			openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr \
				-subj "/CN=${_nf_sans%%,*}" 2>/dev/null &&
			printf 'subjectAltName=%s\n' "$(echo "$_nf_sans" | sed 's/\([^,]*\)/DNS:\1/g')" >ext &&
			openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
				-out srv.pem -days 1 -extfile ext 2>/dev/null
	) || fail "$_nf_tag: cannot make the test CA"
	ip netns exec "$NS" "$PY" "$ROOT/tests/helpers/netsrv.py" "$SRV" "$_nf_http" "$_nf_https" \
		7000 "$TMPD/srv.pem" "$TMPD/srv.key" "$TMPD/ready" "$@" >"$TMPD/srv.log" 2>&1 &
	wait_file "$TMPD/ready" 10
	if [ ! -s "$TMPD/ready" ]; then
		fail "$_nf_tag: the test servers did not start: $(head -c 300 "$TMPD/srv.log")"
		finish
		exit $?
	fi
}

# netfix_down: the namespace, its processes and the veth (from cleanup_extra).
netfix_down() {
	for _nf_p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$_nf_p" 2>/dev/null; done
	ip netns del "$NS" 2>/dev/null
	ip link del "$NF_HOSTIF" 2>/dev/null
}
