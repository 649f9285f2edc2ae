#!/usr/bin/env python3
"""The egress tests' servers, run inside a network namespace of the test:
a DNS server answering A records from NAME=ADDR arguments (REFUSED else),
an HTTP server and an HTTPS server (certificate and key given) that answer
every GET with "hello from NAME" where NAME is the request's Host (and
print "auth NAME VALUE" for a request with an Authorization header (and
"query NAME QUERY" for one with a query): what
the server received, for tests/host/test_secrets.sh), and a
plain TCP server that greets with "raw hello". GET /big=N answers N bytes
(the benchmark's transfers).

usage: netsrv.py ADDR HTTP_PORTS HTTPS_PORTS RAW_PORT CERT KEY READY NAME=ADDR...
HTTP_PORTS and HTTPS_PORTS are comma-separated. READY is a file written when
every socket listens.
"""
import http.server
import re
import socket
import socketserver
import ssl
import struct
import sys
import threading


def dns_server(addr, records):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))

    def loop():
        while True:
            q, peer = s.recvfrom(1500)
            if len(q) < 12:
                continue
            off, labels = 12, []
            while q[off]:
                n = q[off]
                labels.append(q[off + 1:off + 1 + n].decode().lower())
                off += n + 1
            qend = off + 5
            name = ".".join(labels)
            qtype = struct.unpack(">H", q[off + 1:off + 3])[0]
            ip = records.get(name)
            flags = 0x8180 if ip else 0x8185
            ans = b""
            an = 0
            if ip and qtype == 1:
                an = 1
                ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + socket.inet_aton(ip)
            hdr = q[:2] + struct.pack(">HHHHH", flags, 1, an, 0, 0)
            s.sendto(hdr + q[12:qend] + ans, peer)

    threading.Thread(target=loop, daemon=True).start()
    return s


BIG = {}


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        host = self.headers.get("Host", "?").split(":")[0]
        body = ("hello from %s\n" % host).encode()
        if self.headers.get("Authorization"):
            print("auth %s %s" % (host, self.headers["Authorization"]), flush=True)
        if "?" in self.path:
            print("query %s %s" % (host, self.path.split("?", 1)[1]), flush=True)
        if self.path.startswith("/big="):
            n = int(self.path.split("=")[1])
            body = BIG.setdefault(n, b"x" * n)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        """The body read whole, its length and whether it holds a placeholder logged."""
        host = self.headers.get("Host", "?").split(":")[0]
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        whole = re.search(rb"bpfbox-secret-\w+-[0-9a-fA-F]{32}", body)
        print("post %s %s %d%s" % (host, self.path, len(body),
                                   " placeholder" if whole else ""), flush=True)
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *a):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def raw_server(addr, port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)

    def loop():
        while True:
            c, _ = s.accept()
            c.sendall(b"raw hello\n")
            c.close()

    threading.Thread(target=loop, daemon=True).start()


def main():
    addr, http_ports, https_ports, raw_port, cert, key, ready = sys.argv[1:8]
    records = dict(a.split("=", 1) for a in sys.argv[8:])
    dns_server(addr, {k.lower(): v for k, v in records.items()})
    for p in http_ports.split(","):
        srv = Server((addr, int(p)), Hello)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    for p in https_ports.split(","):
        srv = Server((addr, int(p)), Hello)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    raw_server(addr, int(raw_port))
    open(ready, "w").write("ready\n")
    threading.Event().wait()


main()
