#!/usr/bin/python3
"""An HTTP/2 client for the egress tests (tests/host/test_http_rules.sh):
one GET over TLS with ALPN "h2" only, through $HTTPS_PROXY (CONNECT) when
it is set, else straight to the host (where the kernel redirects it). It
prints the answer's headers, then its trailers, one "h: NAME: VALUE" or
"t: NAME: VALUE" line each, and "body=N". The trust store is OpenSSL's
default (SSL_CERT_FILE). Needs python3-h2 for /usr/bin/python3.

usage: /usr/bin/python3 h2cli.py HOST PATH [NAME:VALUE ...] [=BODY ...]
       /usr/bin/python3 h2cli.py HOST --each FILE
(NAME:VALUE: headers added to the request, e.g. a second "host";
:NAME:VALUE replaces a pseudo-header, ::NAME:VALUE adds one more;
H2CLI_ESC=1 in the environment reads backslash escapes in them; with
=BODY arguments the request is a POST whose body is each BODY in a DATA
frame of its own, 0.3 s apart)
"""
import os
import socket
import ssl
import sys
import time
import urllib.parse

import h2.config
import h2.connection
import h2.events


def connect(host):
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    if not proxy:
        return socket.create_connection((host, 443), timeout=10)
    p = urllib.parse.urlsplit(proxy)
    s = socket.create_connection((p.hostname, p.port or 80), timeout=10)
    s.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host, host)).encode())
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("h2cli: the proxy closed: %r" % got)
        got += chunk
    if got.split(b" ", 2)[1] != b"200":
        sys.exit("h2cli: the proxy refused: %r" % got.split(b"\r\n")[0])
    return s


class Ended(Exception):
    """The request's end short of an answer: the message says how."""


def one(host, path, args, out):
    """One request on a connection of its own; its lines go to out."""
    ctx = ssl.create_default_context()
    ctx.set_alpn_protocols(["h2"])
    tls = ctx.wrap_socket(connect(host), server_hostname=host)
    if tls.selected_alpn_protocol() != "h2":
        raise Ended("h2cli: no h2 (ALPN %r)" % tls.selected_alpn_protocol())
    # Unchecked: the headers given may be what a client must not send.
    c = h2.connection.H2Connection(config=h2.config.H2Configuration(
        header_encoding="utf-8", validate_outbound_headers=not args))
    c.initiate_connection()
    sid = c.get_next_available_stream_id()
    extra = [tuple(a.split(":", 1)) for a in args if a[:1] not in "=:"]
    parts = [a[1:].encode() for a in args if a.startswith("=")]
    pseudo = {":method": "POST" if parts else "GET", ":path": path, ":scheme": "https",
              ":authority": host}
    # ":NAME:VALUE" replaces a pseudo-header; "::NAME:VALUE" adds a second one.
    dup = []
    for a in args:
        if a.startswith("::"):
            n, v = a[2:].split(":", 1)
            dup.append((":" + n, v))
        elif a.startswith(":"):
            n, v = a[1:].split(":", 1)
            pseudo[":" + n] = v
    c.send_headers(sid, list(pseudo.items()) + dup + extra, end_stream=not parts)
    tls.sendall(c.data_to_send())
    for i, part in enumerate(parts):
        time.sleep(0.3)
        c.send_data(sid, part, end_stream=i == len(parts) - 1)
        tls.sendall(c.data_to_send())
    body = 0
    try:
        while True:
            data = tls.recv(65536)
            if not data:
                raise Ended("h2cli: the connection ended before the answer did")
            for ev in c.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    for k, v in ev.headers:
                        out.append("h: %s: %s" % (k, v))
                elif isinstance(ev, h2.events.TrailersReceived):
                    for k, v in ev.headers:
                        out.append("t: %s: %s" % (k, v))
                elif isinstance(ev, h2.events.DataReceived):
                    body += len(ev.data)
                    c.acknowledge_received_data(ev.flow_controlled_length, sid)
                elif isinstance(ev, h2.events.StreamReset):
                    raise Ended("h2cli: the stream was reset (%s)" % ev.error_code)
                elif isinstance(ev, h2.events.StreamEnded):
                    out.append("body=%d" % body)
                    return
            tls.sendall(c.data_to_send())
    finally:
        tls.close()


def main():
    host, path = sys.argv[1:3]
    if os.environ.get("H2CLI_ESC"):  # \\r, \\n, \\0... in the path and headers as bytes
        sys.argv = [a.encode().decode("unicode_escape") for a in sys.argv]
        path = sys.argv[2]
    if path == "--each":
        # One request per line of the file (PATH, then its arguments, by
        # tabs), each on a connection of its own: "FIRST-LINE<tab>LINE".
        for line in open(sys.argv[3], encoding="utf-8").read().splitlines():
            case = [f.encode().decode("unicode_escape") for f in line.split("\t")]
            out = []
            try:
                one(host, case[0], case[1:], out)
            except (Ended, OSError, h2.exceptions.ProtocolError) as e:
                out.append(str(e))
            print("%s\t%s" % ((out or ["-"])[0], line), flush=True)
        return
    out = []
    try:
        one(host, path, sys.argv[3:], out)
    except Ended as e:
        out.append(str(e))
        print("\n".join(out), flush=True)
        sys.exit(1)
    print("\n".join(out), flush=True)


main()
