#!/usr/bin/env python3
"""Egress benchmark client, run inside a bpfbox session (bench/egress.sh).

usage: egress_bench.py HOST ADDR PORT SETUPS BYTES RUNS [noresolve] [tls[=CAFILE]] [wild=N]

Resolves HOST once (through the session's resolver when it has name
rules; not with noresolve), then against ADDR:PORT: SETUPS times a fresh connection, a GET /
and its first response byte (connection setup as a tool sees it); RUNS
times a GET of BYTES bytes read to the end (throughput). Prints
"setup_us MEDIAN P90" and "mbps MEDIAN MIN MAX". With tls, each
connection is TLS to HOST (the handshake counts in the setup), verified
against CAFILE, or the default trust (SSL_CERT_FILE: a session's CA).
With wild=N (HOST a domain under a wildcard rule), the setups go to N
names never reached before, sN-1.HOST .. s0.HOST, each resolved first
and untimed: each one's setup includes the proxy minting its leaf; the
transfers go to s0.HOST.
"""
import socket
import ssl
import statistics
import sys
import time


TLS = None


def request(addr, port, host, path):
    s = socket.create_connection((addr, port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if TLS:
        s = TLS.wrap_socket(s, server_hostname=host)
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, host)).encode())
    return s


def main():
    host, addr, port, setups, size, runs = sys.argv[1:7]
    port, setups, size, runs = int(port), int(setups), int(size), int(runs)
    global TLS
    names = [host] * setups
    for flag in sys.argv[7:]:
        if flag == "tls" or flag.startswith("tls="):
            TLS = ssl.create_default_context(cafile=flag[4:] or None)
        if flag.startswith("wild="):
            names = ["s%d.%s" % (i, host) for i in reversed(range(int(flag[5:])))]
    if "noresolve" not in sys.argv[7:]:
        socket.getaddrinfo(names[-1], port, socket.AF_INET)
    times = []
    for name in names:
        if name != names[-1]:
            socket.getaddrinfo(name, port, socket.AF_INET)
        t0 = time.perf_counter()
        s = request(addr, port, name, "/")
        if not s.recv(1):
            raise SystemExit("no response")
        times.append((time.perf_counter() - t0) * 1e6)
        s.close()
    times.sort()
    print("setup_us %.1f %.1f" % (statistics.median(times), times[int(len(times) * 0.9)]))
    rates = []
    buf = bytearray(1 << 20)
    for _ in range(runs):
        t0 = time.perf_counter()
        s = request(addr, port, names[-1], "/big=%d" % size)
        got = 0
        while True:
            n = s.recv_into(buf)
            if not n:
                break
            got += n
        dt = time.perf_counter() - t0
        s.close()
        if got < size:
            raise SystemExit("short read: %d of %d" % (got, size))
        rates.append(got / dt / 1e6)
    print("mbps %.0f %.0f %.0f" % (statistics.median(rates), min(rates), max(rates)))


main()
