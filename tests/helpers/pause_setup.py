#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Lands a `bpfbox pause` inside a session's set-up (tests/host/test_pause_setup.sh).

pause_setup.py PARENT BPFBOX OUT STATUS [--socket SOCK] [--stop]

Embedded: watches PARENT (the cgroup parent of the sessions, inotify) for
the session cgroup bpfbox run makes just before its fork, so the pause
lands before the child's exec (a test makes the set-up slow with many deny
paths to mask), or even before the fork (the child is cloned frozen). Through a daemon (--socket): for the first cgroup a register took
from the daemon's pool (its trusted.bpfbox.pool mark removed), made ahead
of the fork, so the pause may come before the child exists (it is cloned
frozen). Runs `bpfbox pause SID` at once (again until the daemon knows the
session), waits for the freeze to be complete, then looks whether the
command had exec'd: a process of the session with a comm other than
bpfbox's, or a "started" line in the run's status file STATUS (the command
may have exec'd and ended already, its init still there). Writes "SID landed" or "SID missed" to OUT; a miss is resumed at
once, so the run goes on and the test tries again. --stop: the set-up is
held by SIGSTOP to each of its processes instead (a set-up stuck without
a freeze: the run sees no pause), and a miss gets SIGCONT; OUT.forked
then says when the session's first process was seen (ns since the epoch,
within a few ms of the fork). Exit 0 landed, 1 missed,
2 no session appeared within 60 s (or the run ended first). OUT.ready is made once it watches: the
run is to start after it.
"""
import ctypes
import os
import select
import struct
import subprocess
import sys
import time

IN_CREATE = 0x100
IN_ONLYDIR = 0x1000000


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


def state(pid):
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def stop_all(cg, end, forked):
    """SIGSTOP to every process of cg until none is left running (one forked
    meanwhile is stopped in the next round); whether all are stopped. The
    time the first one was seen goes to the file forked."""
    seen = False
    while time.monotonic() < end:
        pids = procs_of(cg)
        if not pids:
            time.sleep(0.002)
            continue
        if not seen:
            seen = True
            with open(forked, "w") as f:
                f.write("%d\n" % time.time_ns())
        for p in pids:
            try:
                os.kill(int(p), 19)  # SIGSTOP
            except OSError:
                pass
        time.sleep(0.01)
        if procs_of(cg) == pids and all(state(p) in ("T", None) for p in pids):
            return True
    return False


def cont_all(cg):
    for p in procs_of(cg):
        try:
            os.kill(int(p), 18)  # SIGCONT
        except OSError:
            pass


def said(status, what):
    try:
        with open(status) as f:
            return '"type":"%s"' % what in f.read()
    except OSError:
        return False


def created(parent, status, end, ready):
    """The first session directory made in parent after the watch is on (it
    says so with the file ready). inotify: a woken sleeper runs at once on a
    loaded host, where a polling loop may miss the set-up."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, parent.encode(), IN_CREATE | IN_ONLYDIR) < 0:
        return None
    open(ready, "w").close()
    try:
        while time.monotonic() < end and not said(status, "ended"):
            if not select.select([fd], [], [], 0.2)[0]:
                continue
            buf = os.read(fd, 4096)
            off = 0
            while off + 16 <= len(buf):
                n = struct.unpack_from("iIII", buf, off)[3]
                name = buf[off + 16:off + 16 + n].rstrip(b"\0").decode()
                off += 16 + n
                if len(name) == 32:
                    return name
    finally:
        os.close(fd)
    return None


def main():
    parent, bpfbox, out, status = sys.argv[1:5]
    sock = sys.argv[5:7] if sys.argv[5:6] == ["--socket"] else []
    stop = "--stop" in sys.argv[5:]
    before = set(n for n in sessions(parent) if taken(os.path.join(parent, n)))
    end = time.monotonic() + 60
    sid = None
    if not sock:
        sid = created(parent, status, end, out + ".ready")
    else:
        # The test starts the run once this is there: its session is not in before.
        open(out + ".ready", "w").close()
    while sock and sid is None and time.monotonic() < end and not said(status, "ended"):
        for n in sessions(parent):
            cg = os.path.join(parent, n)
            if n not in before and taken(cg):
                sid = n
                break
    if sid is None:
        with open(out, "w") as f:
            f.write("none\n")
        return 2
    cg = os.path.join(parent, sid)
    if stop:
        held = stop_all(cg, time.monotonic() + 5, out + ".forked")
    else:
        end = time.monotonic() + 2
        while subprocess.run([bpfbox, "pause"] + sock + [sid], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL).returncode != 0 and time.monotonic() < end:
            time.sleep(0.002)
        end = time.monotonic() + 5
        while not frozen(cg) and time.monotonic() < end:
            time.sleep(0.01)
        held = frozen(cg)
    names = [comm(p) for p in procs_of(cg)]
    # The run says "started" within a moment of an exec that came first.
    time.sleep(0.3)
    landed = held and not said(status, "started") and all(c in (None, "bpfbox") for c in names)
    if not landed and stop:
        cont_all(cg)
    elif not landed:
        subprocess.run([bpfbox, "resume"] + sock + [sid], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    with open(out, "w") as f:
        f.write("%s %s %s\n" % (sid, "landed" if landed else "missed", ",".join(map(str, names))))
    return 0 if landed else 1


if __name__ == "__main__":
    sys.exit(main())
