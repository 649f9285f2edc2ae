#!/usr/bin/python3
"""An HTTP/2 server over TLS for the egress tests (tests/host/test_http_rules.sh),
run inside the test's network namespace next to netsrv.py. It offers ALPN
"h2" only and closes a connection whose client did not select it. Every
request (stream) gets a 200 whose body is "h2 hello from NAME PATH\n", NAME
the request's :authority without a port; a path whose query holds big=N
gets N bytes of "x" instead (the flow control of a large answer), and one
whose query holds trailer=V ends its answer with a trailer "grpc-status: V"
(as gRPC does), and one whose query holds bighdr=N answers with N more
headers of 1000 bytes each (a header block over the proxy's bound). Each
request is one line of LOG once its stream ended:

    h2 NAME METHOD PATH body=N auth=VALUE

N the request body's length, VALUE the authorization header as received
("-" without one): what the server got, for the checks of the tests.

Several streams of a connection at once, flow control both ways (received
data acknowledged, answers sent as the windows allow), a thread for each
connection (at most MAX_CONNS at once; an idle one closed after IDLE
seconds). Needs the Debian package python3-h2, installed for
/usr/bin/python3: run it with that interpreter.

usage: /usr/bin/python3 h2srv.py ADDR PORT CERT KEY LOG READY
READY is a file written once the socket listens.
"""
import os
import socket
import ssl
import sys
import threading
import urllib.parse

import h2.config
import h2.connection
import h2.events
import h2.exceptions

MAX_CONNS = 256
IDLE = 60
BIG_MAX = 64 << 20

log_lock = threading.Lock()
conns = threading.BoundedSemaphore(MAX_CONNS)


def note(f, line):
    with log_lock:
        f.write(line + "\n")
        f.flush()


class Conn:
    def __init__(self, tls, log):
        self.tls = tls
        self.log = log
        self.h2 = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams = {}  # stream id -> the request so far, then its answer's rest

    def flush(self):
        out = self.h2.data_to_send()
        if out:
            self.tls.sendall(out)

    def request(self, ev):
        hd = {}
        for k, v in ev.headers:
            hd.setdefault(k.lower(), v)
        name = hd.get(":authority") or hd.get("host") or "?"
        if name.startswith("["):
            name = name.split("]")[0] + "]"
        else:
            name = name.split(":")[0]
        self.streams[ev.stream_id] = {
            "name": name, "method": hd.get(":method", "?"), "path": hd.get(":path", "?"),
            "auth": hd.get("authorization"), "body": 0, "rest": None}

    def data(self, ev):
        st = self.streams.get(ev.stream_id)
        if st is not None:
            st["body"] += len(ev.data)
        # Acknowledged whatever became of the stream: the connection's
        # window counts these bytes too (h2 skips a closed stream's).
        self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)

    def ended(self, sid):
        st = self.streams.get(sid)
        if st is None:
            return
        note(self.log, "h2 %s %s %s body=%d auth=%s" % (
            st["name"], st["method"], st["path"], st["body"],
            st["auth"] if st["auth"] is not None else "-"))
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(st["path"]).query)
        try:
            big = min(int(q["big"][0]), BIG_MAX) if "big" in q else -1
        except ValueError:
            big = -1
        body = b"x" * big if big >= 0 else (
            "h2 hello from %s %s\n" % (st["name"], st["path"])).encode()
        try:
            pad = int(q["bighdr"][0]) if "bighdr" in q else 0
        except ValueError:
            pad = 0
        try:
            self.h2.send_headers(sid, [(":status", "200"), ("content-type", "text/plain"),
                                       ("content-length", str(len(body))), ("server", "h2srv")]
                                 + [("x-pad-%d" % i, "p" * 1000) for i in range(min(pad, 200))])
        except h2.exceptions.StreamClosedError:
            self.streams.pop(sid, None)
            return
        st["trailer"] = q["trailer"][0] if "trailer" in q else None
        st["rest"] = memoryview(body)
        self.push(sid)

    def push(self, sid):
        """As much of the answer of sid as the windows take; the end once all went."""
        st = self.streams.get(sid)
        if st is None or st["rest"] is None:
            return
        rest = st["rest"]
        try:
            while len(rest):
                n = min(self.h2.local_flow_control_window(sid),
                        self.h2.max_outbound_frame_size, len(rest))
                if n <= 0:
                    break
                self.h2.send_data(sid, rest[:n].tobytes())
                rest = rest[n:]
            st["rest"] = rest
            if not len(rest):
                if st.get("trailer") is not None:
                    self.h2.send_headers(sid, [("grpc-status", st["trailer"])], end_stream=True)
                else:
                    self.h2.end_stream(sid)
                del self.streams[sid]
        except (h2.exceptions.StreamClosedError, h2.exceptions.FlowControlError):
            self.streams.pop(sid, None)

    def run(self):
        self.h2.initiate_connection()
        self.flush()
        while True:
            data = self.tls.recv(65536)
            if not data:
                return
            try:
                events = self.h2.receive_data(data)
            except h2.exceptions.ProtocolError as e:
                print("h2srv: protocol error: %s" % e, file=sys.stderr, flush=True)
                self.flush()  # the GOAWAY
                return
            done = False
            for ev in events:
                if isinstance(ev, h2.events.RequestReceived):
                    self.request(ev)
                elif isinstance(ev, h2.events.DataReceived):
                    self.data(ev)
                elif isinstance(ev, h2.events.StreamEnded):
                    self.ended(ev.stream_id)
                elif isinstance(ev, h2.events.StreamReset):
                    self.streams.pop(ev.stream_id, None)
                elif isinstance(ev, h2.events.WindowUpdated):
                    for sid in [ev.stream_id] if ev.stream_id else list(self.streams):
                        self.push(sid)
                elif isinstance(ev, h2.events.RemoteSettingsChanged):
                    for sid in list(self.streams):
                        self.push(sid)
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    done = True
            self.flush()
            if done:
                return


def serve(sock, ctx, log):
    tls = None
    try:
        sock.settimeout(IDLE)
        tls = ctx.wrap_socket(sock, server_side=True)
        if tls.selected_alpn_protocol() != "h2":
            print("h2srv: a client without h2 (ALPN %s), closed" % tls.selected_alpn_protocol(),
                  file=sys.stderr, flush=True)
            return
        Conn(tls, log).run()
    except (OSError, ssl.SSLError) as e:  # timeouts, resets, handshakes refused
        print("h2srv: connection: %s" % e, file=sys.stderr, flush=True)
    finally:
        (tls or sock).close()
        conns.release()


def main():
    if len(sys.argv) != 7:
        sys.exit("usage: h2srv.py ADDR PORT CERT KEY LOG READY")
    addr, port, cert, key, logpath, ready = sys.argv[1:7]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2"])
    log = open(logpath, "a")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(64)
    with open(ready + ".tmp", "w") as f:
        f.write("ready\n")
    os.rename(ready + ".tmp", ready)
    while True:
        conns.acquire()
        try:
            c, _ = s.accept()
        except OSError:
            conns.release()
            continue
        threading.Thread(target=serve, args=(c, ctx, log), daemon=True).start()


main()
