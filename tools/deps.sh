#!/bin/bash
# Installs every build and test dependency from Debian packages. Quick and
# silent when everything is present; runs apt-get update only when needed.
# Then the npm packages of the tests (tools/npm-deps.sh: ajv for
# tests/host/test_schema.sh), with the nodejs and npm installed here.
set -euo pipefail

PACKAGES=(
	# build
	clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev libseccomp-dev
	# make check: the format check
	clang-format
	libjson-c-dev pkg-config make gcc
	# unit tests, sanitizers and fuzzing (make test-asan, make fuzz)
	libcmocka-dev libclang-rt-14-dev
	# bpfbox top (static ncursesw) and its terminal tests
	libncurses-dev tmux
	# audit sinks: TLS syslog (RFC 5425) and host ids through GnuTLS; a real
	# syslog collector with TLS and RELP (imrelp), a test CA (certtool), a
	# real Prometheus
	libgnutls28-dev rsyslog rsyslog-gnutls rsyslog-relp gnutls-bin prometheus
	# HTTP/2 on the egress proxy's terminated connections (nghttp2's header;
	# the library is opened at run time) and the tests' HTTP/2 upstream
	# (tests/helpers/h2srv.py)
	libnghttp2-dev python3-h2
	# make bench: an HTTP/2 server in C for the egress rows (bench/egress.sh),
	# the timed runs (hyperfine) and the kernel's view of a session's start
	# (bpftrace: bench/changes_paired.sh)
	nghttp2-server hyperfine bpftrace
	# packaging: the Debian package, man pages, the systemd unit
	debhelper dpkg-dev lintian mandoc scdoc systemd man-db
	# the Kubernetes manifests' checks (tests/host/test_kubernetes.sh)
	python3-yaml
	# containers adopted through the OCI hook (tests/host/test_podman.sh;
	# runc: crun refuses hosts with hybrid cgroups; crun: the VM's 6.12
	# Full cell, pure v2, runs it, and podman does not always pull it in)
	podman runc crun
	# VM harness (xz-utils: the 6.12 and 7.x kernels ship .ko.xz modules;
	# debian-archive-keyring: the harness's own apt sources are signed by it)
	qemu-system-x86 busybox-static cpio xz-utils debian-archive-keyring
	# test_audit: the kept CO-RE subsets, by the files a load opens
	strace
	# integration tests: the sandbox's normal-work suite
	git python3 tar util-linux iproute2
	# egress by name: the tool in sessions and the test CA (tests/host/test_egress.sh)
	curl openssl
)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing+=("$p")
	fi
done
# node and npm for tools/npm-deps.sh: Debian's unless the machine has them
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	missing+=(nodejs npm)
fi
if [ ${#missing[@]} -ne 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: missing packages: ${missing[*]}; run 'make deps' as root" >&2
		exit 1
	fi
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
exec "$(dirname "$0")/npm-deps.sh"
