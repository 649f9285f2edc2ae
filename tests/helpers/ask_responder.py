#!/usr/bin/env python3
"""A runtime's side of the command rules' ask flow, for the tests.

    ask_responder.py STATUS_FIFO ANSWER_FIFO LOG ANSWER...

Reads the status channel (bpfbox run --status-fd) from STATUS_FIFO, copies
every line to LOG, and answers the N-th "ask" with the N-th ANSWER
(approve, always, deny) on ANSWER_FIFO (bpfbox run --ask-fd) as
"ID ANSWER"; "none" (or no ANSWER left) leaves it unanswered. Ends with
the status channel.
"""
import json
import sys

status, answers_path, log_path = sys.argv[1:4]
answers = sys.argv[4:]
with open(status) as st, open(answers_path, "w") as out, open(log_path, "w") as log:
    n = 0
    for line in st:
        log.write(line)
        log.flush()
        event = json.loads(line)
        if event["type"] != "ask":
            continue
        answer = answers[n] if n < len(answers) else "none"
        n += 1
        if answer != "none":
            out.write("%d %s\n" % (event["id"], answer))
            out.flush()
