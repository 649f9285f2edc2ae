#!/usr/bin/env python3
"""Checks over one run of the command rules' ask flow, for the tests.

    ask_check.py AUDIT OUT STATUS_LOG EXPR

Exits 0 when the Python expression EXPR holds over: ev (the run's audit
stream), asks (its answered session.ask lines), asked (those with answer
null: the daemon's, when it asked), out (the command's stdout), and the
status channel's lines (STATUS_LOG, as ask_responder.py copied them): qs
(the "ask" lines) and ans (the answers of the "answered" lines).
"""
import json
import sys

audit, out_path, status_log, expr = sys.argv[1:5]
ev = [json.loads(l) for l in open(audit)]
out = open(out_path).read()
st = [json.loads(l) for l in open(status_log)]
asks = [e for e in ev if e["type"] == "session.ask" and e["answer"]]
asked = [e for e in ev if e["type"] == "session.ask" and not e["answer"]]
qs = [e for e in st if e["type"] == "ask"]
ans = [e["answer"] for e in st if e["type"] == "answered"]
sys.exit(0 if eval(expr) else 1)
