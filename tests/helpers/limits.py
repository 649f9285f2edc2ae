# The programs the limits tests and benchmarks run inside sessions, and the
# observer that times a pause from outside (tests/host/test_limits.sh,
# tests/host/test_disk_held.sh, bench/limits.sh). python3 limits.py WHAT ARGS...
import os
import sys
import time

what = sys.argv[1]


def mark(path):
    with open(path, "w") as f:
        f.write("%d\n" % time.monotonic_ns())


if what == "ticker":            # CLOCK_MONOTONIC ns into FILE every ms, until killed
    path = sys.argv[2]
    while True:
        with open(path + ".tmp", "w") as f:
            f.write("%d\n" % time.monotonic_ns())
        os.replace(path + ".tmp", path)
        time.sleep(0.001)
elif what == "runfor":          # stays busy-sleeping for SECONDS of its own running time
    secs, left, last = float(sys.argv[2]), float(sys.argv[2]), time.monotonic()
    while left > 0:
        time.sleep(0.01)
        now = time.monotonic()
        left -= min(now - last, 0.05)  # a long gap is a pause, not running time
        last = now
elif what == "hog":             # allocates until the OOM killer stops it
    x = []
    while True:
        x.append(bytearray(1 << 20))
elif what == "writer":          # N MiB into FILE, logging "mono_ns bytes-after" before each MiB
    path, n, log = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    buf = b"x" * (1 << 20)
    with open(path, "wb") as f, open(log, "a") as lg:
        for i in range(n):
            lg.write("%d %d\n" % (time.monotonic_ns(), (i + 1) << 20))
            lg.flush()
            f.write(buf)
            f.flush()
            os.fsync(f.fileno())
elif what == "steady":          # DIR NFILES SIZE RATE SECONDS MARKS WAIT: after WAIT s,
    # RATE open/pwrite/close per second of SIZE bytes into DIR/s-N (round robin over
    # NFILES, each file cycling through its first MiB) for SECONDS; MARKS.w0 and
    # MARKS.w1 are written as the writes start and end; 2 s later it exits.
    d, nfiles, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rate, secs, marks, wait = float(sys.argv[5]), float(sys.argv[6]), sys.argv[7], float(sys.argv[8])
    os.makedirs(d, exist_ok=True)
    buf = b"y" * size
    time.sleep(wait)
    mark(marks + ".w0")
    t0 = time.monotonic()
    i = 0
    while rate > 0:
        due = t0 + i / rate
        now = time.monotonic()
        if now - t0 >= secs:
            break
        if due > now:
            time.sleep(due - now)
        fd = os.open("%s/s-%d" % (d, i % nfiles), os.O_WRONLY | os.O_CREAT, 0o644)
        os.pwrite(fd, buf, ((i // nfiles) * size) % (1 << 20))
        os.close(fd)
        i += 1
    if rate <= 0:
        time.sleep(secs)
    mark(marks + ".w1")
    print(i, flush=True)
    time.sleep(2)  # the observer reads bpfbox's CPU at w1, while it still runs
elif what == "busy":            # a busy loop for SECONDS of wall time: cpu share
    t0, c0 = time.monotonic(), time.process_time()
    while time.monotonic() - t0 < float(sys.argv[2]):
        pass
    print("%.3f" % ((time.process_time() - c0) / (time.monotonic() - t0)))
elif what == "spin":            # MARK STOP SECONDS: busy until STOP exists (SECONDS at most),
    mark_path, stop = sys.argv[2], sys.argv[3]  # MARK written once it spins; cpu share
    t0, c0 = time.monotonic(), time.process_time()
    end, n = t0 + float(sys.argv[4]), 0
    mark(mark_path)
    while time.monotonic() < end and not (n % 10000 == 0 and os.path.exists(stop)):
        n += 1
    print("%.3f" % ((time.process_time() - c0) / (time.monotonic() - t0)))
elif what == "pausewatch":      # OOMFILE CG OUT [READY]: polls every 0.5 ms: when OOMFILE's oom_kill moves ("-": no),
    oomf, cg, out = sys.argv[2], sys.argv[3], sys.argv[4]  # cgroup.freeze is set, frozen 1 said

    def kills():
        for line in open(oomf):
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0
    k0 = kills() if oomf != "-" else 0
    if len(sys.argv) > 5:                      # READY: written once it watches
        open(sys.argv[5], "w").write("watching\n")
    kill = asked = frozen = 0
    end = time.monotonic() + 120
    while not frozen and time.monotonic() < end:
        now = time.monotonic_ns()
        if oomf != "-" and not kill and kills() != k0:
            kill = now
        if not asked and open(cg + "/cgroup.freeze").read().startswith("1"):
            asked = now
        if "frozen 1" in open(cg + "/cgroup.events").read():
            frozen = now
        time.sleep(0.0005)
    open(out, "w").write("%d %d %d\n" % (kill, asked, frozen))
elif what == "oom_latency":     # ms from the OOM kill to cgroup.freeze set, and to frozen
    kill, asked, frozen = map(int, open(sys.argv[2]).read().split())
    ok = kill and asked and frozen
    print("%.1f %.1f" % ((asked - kill) / 1e6, (frozen - kill) / 1e6) if ok else "")
elif what == "disk_latency":    # ms from the start of the write that crossed LIMIT MiB to frozen
    log, limit, watch = sys.argv[2], int(sys.argv[3]) << 20, sys.argv[4]
    rows = [tuple(map(int, line.split())) for line in open(log)]
    frozen = int(open(watch).read().split()[2])
    # The first write that can end past the limit (small files add a little).
    cross = next(t for t, b in rows if b > limit - (256 << 10))
    print("%.1f" % ((frozen - cross) / 1e6) if frozen else "")
elif what == "held":            # MODE N MB PACE LOG HOLD: N files of MB MiB held with no name
    # in the cwd (tests/host/test_disk_held.sh). MODE: "after" written, then unlinked;
    # "before" unlinked, then grown; "mmap" truncated, mapped, its fd closed, unlinked,
    # then written through the mapping (no inotify event at all); "tmpfile" O_TMPFILE,
    # never named; "replace" written, then another file renamed over it. Prefixes:
    # "nodump-" PR_SET_DUMPABLE 0 first; "newdir-" each file in a new directory,
    # unlinked before the monitor can watch it (mmap only). PACE seconds between MiB
    # (the workload's pace). LOG gets "file mib used-bytes" after each MiB (used: statvfs
    # of the cwd's file system), then "done"; everything stays held for HOLD seconds.
    # (A thread with an fd table of its own: held_thread.c.)
    import ctypes
    import mmap
    mode, n, mb, pace, log = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
    if mode.startswith("nodump-"):
        mode = mode[7:]
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    newdir = mode.startswith("newdir-")
    mode = mode[7:] if newdir else mode
    held, mib = [], b"h" * (1 << 20)
    with open(log, "a") as lg:
        for i in range(n):
            name = "held-%d" % i
            if newdir:
                os.mkdir("d%d" % i)
                name = "d%d/held" % i
            if mode == "tmpfile":
                fd = os.open(".", os.O_TMPFILE | os.O_RDWR, 0o600)
            else:
                fd = os.open(name, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
            if mode == "before":
                os.unlink(name)
            if mode == "mmap":
                os.ftruncate(fd, mb << 20)
                m = mmap.mmap(fd, mb << 20)
                os.close(fd)
                os.unlink(name)
                held.append(m)
            else:
                held.append(fd)
            for j in range(mb):
                if mode == "mmap":
                    m[j << 20:(j + 1) << 20] = mib
                else:
                    os.write(fd, mib)
                st = os.statvfs(".")
                lg.write("%d %d %d\n" % (i, j + 1, (st.f_blocks - st.f_bfree) * st.f_frsize))
                lg.flush()
                time.sleep(pace)
            if mode == "after":
                os.unlink(name)
            if mode == "replace":
                open(name + ".new", "w").close()
                os.rename(name + ".new", name)
        lg.write("done\n")
    time.sleep(float(sys.argv[7]))
else:
    sys.exit("limits.py: unknown helper '%s'" % what)
