#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Lands a `bpfbox pause` inside a session's set-up (tests/host/test_pause_setup.sh).

pause_setup.py PARENT BPFBOX OUT STATUS [--socket SOCK]

Embedded: watches PARENT (the cgroup parent of the sessions) for the
first session cgroup that has a process: the child bpfbox forked, still
before its exec (a test makes the set-up slow with many deny paths to
mask). Through a daemon (--socket): for the first cgroup a register took
from the daemon's pool (its trusted.bpfbox.pool mark removed), made ahead
of the fork, so the pause may come before the child exists (it is cloned
frozen). Runs `bpfbox pause SID` at once (again until the daemon knows the
session), waits for the freeze to be complete, then looks whether the
command had exec'd: a process of the session with a comm other than
bpfbox's, or a "started" line in the run's status file STATUS (the command
may have exec'd and ended already, its init still there). Writes "SID landed" or "SID missed" to OUT; a miss is resumed at
once, so the run goes on and the test tries again. Exit 0 landed, 1 missed,
2 no session appeared within 60 s (or the run ended first). OUT.ready is made once it watches: the
run is to start after it.
"""
import os
import subprocess
import sys
import time


def procs_of(cg):
    try:
        with open(os.path.join(cg, "cgroup.procs")) as f:
            return f.read().split()
    except OSError:
        return []


def comm(pid):
    try:
        with open("/proc/%s/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def frozen(cg):
    try:
        with open(os.path.join(cg, "cgroup.events")) as f:
            return "frozen 1" in f.read()
    except OSError:
        return False


def taken(cg):
    try:
        os.getxattr(cg, "trusted.bpfbox.pool")
        return False
    except OSError:
        return os.path.isdir(cg)


def sessions(parent):
    try:
        return [n for n in os.listdir(parent) if len(n) == 32]
    except OSError:
        return []


def said(status, what):
    try:
        with open(status) as f:
            return '"type":"%s"' % what in f.read()
    except OSError:
        return False


def main():
    parent, bpfbox, out, status = sys.argv[1:5]
    sock = sys.argv[5:7] if sys.argv[5:6] == ["--socket"] else []
    before = set(n for n in sessions(parent) if taken(os.path.join(parent, n)))
    # The test starts the run once this is there: its session is not in before.
    open(out + ".ready", "w").close()
    end = time.monotonic() + 60
    sid = None
    while sid is None and time.monotonic() < end and not said(status, "ended"):
        for n in sessions(parent):
            cg = os.path.join(parent, n)
            if sock and n not in before and taken(cg):
                sid = n
                break
            if not sock and os.path.isdir(cg) and procs_of(cg):
                sid = n
                break
    if sid is None:
        with open(out, "w") as f:
            f.write("none\n")
        return 2
    cg = os.path.join(parent, sid)
    end = time.monotonic() + 2
    while subprocess.run([bpfbox, "pause"] + sock + [sid], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode != 0 and time.monotonic() < end:
        time.sleep(0.002)
    end = time.monotonic() + 5
    while not frozen(cg) and time.monotonic() < end:
        time.sleep(0.01)
    names = [comm(p) for p in procs_of(cg)]
    # The run says "started" within a moment of an exec that came first.
    time.sleep(0.3)
    landed = frozen(cg) and not said(status, "started") and all(c in (None, "bpfbox") for c in names)
    if not landed:
        subprocess.run([bpfbox, "resume"] + sock + [sid], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    with open(out, "w") as f:
        f.write("%s %s %s\n" % (sid, "landed" if landed else "missed", ",".join(map(str, names))))
    return 0 if landed else 1


if __name__ == "__main__":
    sys.exit(main())
