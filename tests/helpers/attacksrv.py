#!/usr/bin/env python3
"""The egress attack tests' servers (tests/host/test_egress_attacks.sh), run
inside a network namespace of the test:

- a DNS server on SRV:53 that logs every question as its labels (each
  label's bytes in Python's repr, so a NUL shows) to LOG, one line each,
  and answers an A record: NAME=ADDR arguments, and any name whose last
  labels are attacker.test with ATT (the attacker's own nameserver, which a
  query that reached it would exfiltrate to);
- HTTP/1.1 servers with keep-alive on SRV:8080 and ATT:8080, answering
  every request with "hello from HOST" (HOST: the request's Host header)
  and reading a request's body by its Content-Length or its chunks (no
  trailer); they hold an idle
  connection open for as long as the client does.

usage: attacksrv.py SRV ATT LOG READY NAME=ADDR...
"""
import http.server
import socket
import socketserver
import struct
import sys
import threading


def dns_server(addr, att, records, log):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    out = open(log, "a", buffering=1)

    def loop():
        while True:
            q, peer = s.recvfrom(1500)
            if len(q) < 12:
                continue
            off, labels = 12, []
            while off < len(q) and q[off]:
                n = q[off]
                labels.append(q[off + 1:off + 1 + n])
                off += n + 1
            qend = off + 5
            out.write("query %r\n" % labels)
            qtype = struct.unpack(">H", q[off + 1:off + 3])[0]
            name = b".".join(labels).decode("latin-1").lower()
            ip = records.get(name)
            if ip is None and [l.lower() for l in labels[-2:]] == [b"attacker", b"test"]:
                ip = att
            flags = 0x8180 if ip else 0x8185
            ans, an = b"", 0
            if ip and qtype == 1:
                an = 1
                ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + socket.inet_aton(ip)
            hdr = q[:2] + struct.pack(">HHHHH", flags, 1, an, 0, 0)
            s.sendto(hdr + q[12:qend] + ans, peer)

    threading.Thread(target=loop, daemon=True).start()


class Hello(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                self.rfile.read(size + 2)
                if not size:
                    break
        body = ("hello from %s\n" % self.headers.get("Host", "?").split(":")[0]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_TRACE = answer

    def log_message(self, *a):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024


def main():
    srv, att, log, ready = sys.argv[1:5]
    records = dict(a.split("=", 1) for a in sys.argv[5:])
    dns_server(srv, att, {k.lower(): v for k, v in records.items()}, log)
    for addr in (srv, att):
        h = Server((addr, 8080), Hello)
        threading.Thread(target=h.serve_forever, daemon=True).start()
    open(ready, "w").write("ready\n")
    threading.Event().wait()


main()
