#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""An agent-style driver (issue 18): typical tool calls through
`bpfbox run --status-fd 3`, each asserted to end, with the documented exit
code, a status channel that starts and ends, and a denial summary when
something was denied. Prints tests/lib.sh lines; exits 1 on a failure.

usage: agent_driver.py BPFBOX SCRATCH_DIR
"""
import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time
import zipfile

BPFBOX, SCRATCH = sys.argv[1], sys.argv[2]
PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else shutil.which("python3")
# No call may hang: far above any call's own bound, it only catches a hang.
HANG_S = 120
FAILS = 0
ROOT = os.getuid() == 0


def ok(name):
    print(f"ok - {name}", flush=True)


def fail(name, why):
    global FAILS
    FAILS += 1
    print(f"FAIL - {name}: {why}", flush=True)


def skip(name, why):
    print(f"skip - {name}: {why}", flush=True)


def run(args, ws, use_pty=False, env=None):
    """One tool call: (exit code, status lines, stdout, stderr)."""
    st_r, st_w = os.pipe()
    cmd = [BPFBOX, "run", "-w", ws, "--status-fd", str(st_w), "--label", "driver=agent"] + args
    os.set_inheritable(st_w, True)
    t0 = time.monotonic()
    if use_pty:
        pid, fd = pty.fork()
        if pid == 0:
            os.dup2(st_w, 3)
            cmd[cmd.index(str(st_w))] = "3"
            os.chdir(ws)
            os.execvpe(cmd[0], cmd, env or os.environ)
        os.close(st_w)
        out = b""
        while time.monotonic() - t0 < HANG_S:
            r, _, _ = select.select([fd], [], [], 1)
            if r:
                try:
                    d = os.read(fd, 65536)
                except OSError:
                    break
                if not d:
                    break
                out += d
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        stdout, stderr = out.decode(errors="replace"), out.decode(errors="replace")
    else:
        p = subprocess.Popen(cmd, cwd=ws, pass_fds=(st_w,), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        os.close(st_w)
        try:
            o, e = p.communicate(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
            rc = None
        else:
            rc = p.returncode
        stdout, stderr = o.decode(errors="replace"), e.decode(errors="replace")
    with os.fdopen(st_r) as f:
        status = [json.loads(line) for line in f if line.strip()]
    return rc, status, stdout, stderr


def check(name, res, want_rc, want_cause=None, denied=None, extra=None):
    rc, status, out, err = res
    why = []
    if rc is None:
        why.append(f"did not end within {HANG_S} s")
    elif rc != want_rc:
        why.append(f"exit {rc}, want {want_rc}")
    types = [s["type"] for s in status]
    if not types or types[0] != "started" or types[-1] != "ended":
        why.append(f"status lines {types}, want started ... ended")
    else:
        end = status[-1]
        if end["exit_code"] != rc:
            why.append(f"ended.exit_code {end['exit_code']} != exit {rc}")
        if want_cause and end["cause"] != want_cause:
            why.append(f"cause {end['cause']}, want {want_cause}")
        if status[0].get("labels", {}).get("driver") != "agent":
            why.append("no label in started")
    if denied:
        ops = denied if isinstance(denied, tuple) else (denied,)
        d = [s for s in status if s["type"] == "denied" and s["op"] in ops]
        if not d or not d[0].get("hint"):
            why.append(f"no denied line for {denied} with a hint in {types}")
        if "denied" not in err:
            why.append("no denial summary on stderr")
    if extra:
        e = extra(out, err)
        if e:
            why.append(e)
    if why:
        fail(name, "; ".join(why) + f"; stderr: {err[-300:]!r}")
    else:
        ok(name)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def workspace(name):
    ws = os.path.join(SCRATCH, name)
    os.makedirs(ws, exist_ok=True)
    return ws


def main():
    home = os.path.join(SCRATCH, "home")
    os.makedirs(os.path.join(home, ".local", "bin"), exist_ok=True)
    with open(os.path.join(home, ".gitconfig"), "w") as f:
        f.write("[user]\n\tname = Agent Driver\n\temail = agent@example.invalid\n"
                "[init]\n\tdefaultBranch = main\n")
    tool = os.path.join(home, ".local", "bin", "mytool")
    with open(tool, "w") as f:
        f.write("#!/bin/sh\necho mytool-ran\n")
    os.chmod(tool, 0o755)
    env = dict(os.environ, HOME=home,
               PATH=os.path.join(home, ".local", "bin") + ":/usr/local/bin:/usr/bin:/bin")

    # 1. a build
    ws = workspace("build")
    with open(os.path.join(ws, "hello.c"), "w") as f:
        f.write('#include <stdio.h>\nint main(void){puts("hello");return 0;}\n')
    with open(os.path.join(ws, "Makefile"), "w") as f:
        f.write("hello: hello.c\n\tcc -o hello hello.c\n")
    if shutil.which("cc") and shutil.which("make"):
        check("build: make && ./hello", run(["--", "sh", "-c", "make -s && ./hello"], ws, env=env),
              0, "exit", extra=lambda o, e: None if "hello" in o else f"stdout {o!r}")
    else:
        skip("build: make && ./hello", "no cc or make here; the other calls cover a session")

    # 2. pip from a local wheel
    ws = workspace("pip")
    whl = os.path.join(ws, "drvpkg-1.0-py3-none-any.whl")
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("drvpkg/__init__.py", "VALUE = 'from-wheel'\n")
        z.writestr("drvpkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: drvpkg\nVersion: 1.0\n")
        z.writestr("drvpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: driver\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("drvpkg-1.0.dist-info/RECORD", "")
    if subprocess.run([PY, "-m", "pip", "--version"], capture_output=True).returncode == 0:
        check("pip install a local wheel, then import it",
              run(["--", "sh", "-c", f"{PY} -m pip install -q --no-index --no-cache-dir "
                   f"--target lib {os.path.basename(whl)} && PYTHONPATH=lib {PY} -c "
                   "'import drvpkg; print(drvpkg.VALUE)'"], ws, env=env),
              0, "exit", extra=lambda o, e: None if "from-wheel" in o else f"stdout {o!r}")
    else:
        skip("pip install a local wheel", "no pip for python3 here")

    # 3. npm / node
    ws = workspace("npm")
    if shutil.which("node") and shutil.which("npm"):
        res = run(["--", "sh", "-c", "npm init -y >/dev/null && node -e "
                   "'console.log(require(\"./package.json\").name)' && npm config get cache"],
                  ws, env=env)
        check("npm init and node", res, 0, "exit",
              extra=lambda o, e: None if "npm" in o else f"stdout {o!r}")
        cache = res[2].strip().splitlines()[-1] if res[2].strip() else ""
        home = res[1][0].get("home", "") if res[1] else ""
        if home and cache.startswith(home + "/") and not cache.startswith(ws):
            ok("npm's cache is in the private home, not the workspace")
        else:
            fail("npm's cache is in the private home", f"cache {cache!r}, home {home!r}")
    else:
        skip("npm init and node", "no node/npm here")

    # 4. git commit with the caller's gitconfig, 5. clone of a sibling
    ws = workspace("git")
    if shutil.which("git"):
        check("git commit (user from ~/.gitconfig)",
              run(["--", "sh", "-c", "git init -q . && echo x > f && git add f && "
                   "git commit -qm first && git log --format=%an"], ws, env=env),
              0, "exit", extra=lambda o, e: None if "Agent Driver" in o else f"stdout {o!r}")
        sib = workspace("clone")
        check("git clone of a sibling repository granted read-only",
              run(["--ro", ws, "--", "git", "clone", "-q", ws, "copy"], sib, env=env),
              0, "exit", extra=lambda o, e: None if os.path.exists(os.path.join(sib, "copy", "f"))
              else "no copy/f")
    else:
        skip("git commit and clone", "no git here")

    # 6. a tool in ~/.local/bin on PATH
    ws = workspace("localbin")
    check("a tool in ~/.local/bin runs", run(["--", "mytool"], ws, env=env), 0, "exit",
          extra=lambda o, e: None if "mytool-ran" in o else f"stdout {o!r}")

    # 7. an editor under a pty
    ws = workspace("editor")
    if shutil.which("vi"):
        res = run(["--", "sh", "-c", "test -t 0 && test -t 1 && "
                   "vi -c 'normal iedited-by-vi' -c wq note.txt"], ws, use_pty=True, env=env)
        check("an editor under a pty (stdin and stdout stay a terminal)", res, 0, "exit",
              extra=lambda o, e: None if read(os.path.join(ws, "note.txt")).startswith("edited-by-vi")
              else "note.txt not written")
    else:
        skip("an editor under a pty", "no vi here")

    # 8. a network call, denied by the default policy: its connect in the
    # session's own network namespace, its socket() without namespaces
    ws = workspace("net")
    check("a network call is denied and explained",
          run(["--", PY, "-c", "import socket\ntry:\n socket.create_connection(('203.0.113.1', 80), 1)\n"
               "except OSError as e:\n print(e)\n raise SystemExit(3)"], ws, env=env),
          3, "exit", denied=("connect", "socket"),
          extra=lambda o, e: None if "--net-allow" in e else "no --net-allow hint on stderr")

    # 9. an OOM, 10. a disk overflow: paused, then killed after the pause timeout
    if ROOT:
        ws = workspace("oom")
        check("an OOM ends (paused, killed after --pause-timeout, exit 123)",
              run(["--memory", "64M", "--pause-timeout", "2s", "--", "sh", "-c",
                   # the shell lives on: the pause comes while the session runs
                   f"{PY} -c 'b = bytearray(400 << 20)'; sleep 10; echo after"], ws, env=env),
              123, "pause_timeout")
        ws = workspace("disk")
        check("a disk overflow ends (paused, killed after --pause-timeout, exit 123)",
              run(["--disk", "4M", "--pause-timeout", "2s", "--", "sh", "-c",
                   # Growth from the start: the watch is there before the command runs.
                   "i=0; while [ $i -lt 60 ]; do head -c 1000000 /dev/zero >> big; "
                   "i=$((i + 1)); sleep 0.1; done; sleep 30"], ws, env=env),
              123, "pause_timeout")
    else:
        skip("an OOM and a disk overflow end", "the memory and disk monitors need root; CI runs as root")

    # 13. file changes outside the workspace: refused by the kernel, summarised
    # without BPF (the seccomp listener, docs/SECURITY.md)
    ws = workspace("changes")
    out = workspace("outside")
    for name in ("f", "g"):
        with open(os.path.join(out, name), "w") as f:
            f.write("keep\n")
    ops = {"unlink": "f", "rename": "moved", "mkdir": "d", "symlink": "l", "chmod": "g",
           "utimes": "g", "chown": "g", "setxattr": "g", "removexattr": "g"}
    # chown to the owner it has and xattrs: refused by the read-only mount alone
    xattrs = """python3 -c 'import os; os.setxattr("g", "user.bpfbox", b"1")' 2>/dev/null; """ \
        """python3 -c 'import os; os.removexattr("g", "user.bpfbox")' 2>/dev/null"""
    rel = os.path.relpath(out, ws)
    g_ctime = os.stat(os.path.join(out, "g")).st_ctime_ns

    def changes(o, e):
        why = []
        # every metadata change of g was refused: its ctime is the one it was made with
        if os.stat(os.path.join(out, "g")).st_ctime_ns != g_ctime:
            why.append("g's metadata changed")
        for op, name in ops.items():
            if f"denied 1 time: {op} {os.path.join(out, name)} " not in e:
                why.append(f"no {op} {name} in the summary")
        if not os.path.exists(os.path.join(out, "f")) or os.path.exists(os.path.join(out, "d")):
            why.append("a change went through")
        if "denied" in e.split("utimes", 1)[-1] and f"mkdir {os.path.join(out, 'f')}" in e:
            why.append("an existing name counted for mkdir")
        return "; ".join(why) or None
    check("file changes outside the workspace are summarised (no BPF), relative names resolved",
          run(["--ro", out, "--", "sh", "-c",
               f"rm {out}/f; cd {rel} && mv f moved; mkdir d; mkdir -p ../outside; "
               f"mkdir f; ln -s x l; chmod 600 g; touch g; chown $(id -u) g; {xattrs}; exit 0"], ws, env=env),
          0, "exit", denied="unlink", extra=changes)

    # 11. a timeout, 12. a command that does not exist
    ws = workspace("misc")
    check("a hanging call ends at --timeout (124)", run(["--timeout", "1s", "--", "sleep", "30"], ws, env=env),
          124, "timeout")
    check("a missing command (127)", run(["--", "no-such-tool-bpfbox"], ws, env=env), 127)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
