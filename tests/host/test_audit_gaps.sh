#!/bin/sh
# Audit gaps found by an attacker's review (issue 17), embedded mode on the
# real kernel: the legacy open(2) and creat(2) leave records, an exec
# through a memfd or /dev/fd says what it ran, a thread that renames itself
# leaves a "rename" record with both names, and argv keeps 4 KiB (a
# configurable bound) with the cut flagged.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 audit-gaps "loading the BPF agent (--audit)"
WS="$TMPD/ws"
mkdir -p "$WS"
A="$TMPD/a.jsonl"
B="$TMPD/b.jsonl"
case "$(uname -m)" in
x86_64) OPEN=2 CREAT=85 ;;
*) OPEN= CREAT= ;;
esac

expect_rc 0 "a session that opens with open(2) and creat(2), execs a memfd and a long argv" \
	"$BPFBOX" run -q --audit "$A" -w "$WS" -- "$PY" -c "
import ctypes, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
if '$OPEN':
    libc.syscall($OPEN or 0, b'$WS/legacy-open-missing', 0)
    libc.syscall($CREAT or 0, b'$WS/made-by-creat', 0o644)
libc.prctl(15, b'kworker/0:1', 0, 0, 0)
open('$WS/after-rename', 'w').close()
fd = os.memfd_create('payload', 0)
os.write(fd, open('/bin/true', 'rb').read())
pid = os.fork()
if pid == 0:
    os.execve('/proc/self/fd/%d' % fd, ['innocent'], {})
os.waitpid(pid, 0)
subprocess.run(['/bin/echo'] + [str(i) for i in range(1200)], stdout=subprocess.DEVNULL)"
if [ -n "$OPEN" ]; then
	check_events "$A" "any(e['type'] == 'file' and e['path'].endswith('/legacy-open-missing') and e['errno'] == 'ENOENT' for e in ev)" \
		"open(2) leaves a file record"
	check_events "$A" "any(e['type'] == 'file' and e['path'].endswith('/made-by-creat') and e['flags'] == 577 for e in ev)" \
		"creat(2) leaves a file record with O_CREAT|O_WRONLY|O_TRUNC"
else
	skip "open(2) and creat(2): this architecture has no such syscalls; x86_64 CI covers them"
fi
check_events "$A" "any(e['type'] == 'rename' and e['comm'] == 'python3' and e['new_comm'] == 'kworker/0:1' for e in ev)" \
	"prctl(PR_SET_NAME) leaves a rename record with the old and the new name"
check_events "$A" "any(e['type'] == 'file' and e['path'].endswith('/after-rename') and e['comm'] == 'kworker/0:1' for e in ev)" \
	"later records carry the new name (the rename record says where it came from)"
check_events "$A" "any(e['type'] == 'exec' and e['filename'].startswith('/proc/self/fd/') and e.get('via_fd') == 'memfd:payload' for e in ev)" \
	"an exec of a memfd through /proc/self/fd is marked with the memfd's name"
check_events "$A" "all('via_fd' not in e for e in ev if e['type'] == 'exec' and e['filename'] == '/bin/echo')" \
	"an ordinary exec is not marked"
check_events "$A" "any(e['type'] == 'exec' and e['filename'] == '/bin/echo' and e['argv_truncated'] and len('\0'.join(e['argv'])) in (4094, 4095) for e in ev)" \
	"argv keeps 4095 bytes by default, the cut flagged"
expect_rc 0 "--audit-argv 1024" \
	"$BPFBOX" run -q --audit "$B" --audit-argv 1024 -w "$WS" -- /bin/echo $(seq 1 1200)
check_events "$B" "any(e['type'] == 'exec' and e['filename'] == '/bin/echo' and e['argv_truncated'] and len('\0'.join(e['argv'])) in (1022, 1023) for e in ev)" \
	"--audit-argv 1024 keeps 1023 bytes, the cut flagged"
expect_rc 2 "--audit-argv 10 is refused as bad usage (2)" "$BPFBOX" run -q --audit-argv 10 -w "$WS" -- true
expect_grep "give bytes from 64 to 4096" "$TMPD/err" "and says the range"
finish
