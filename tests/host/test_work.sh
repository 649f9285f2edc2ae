#!/bin/sh
# Normal work inside `bpfbox run` (mode workspace-write) must keep working:
# compilers, make, python, git, tar, pipelines, threads, temp files, exit
# codes, the output cap, the session options. Each check looks at what the
# command really produced (files in the workspace, its output, its status).
#
# Runs on the host and unmodified in the test VM (root, /opt/bpfbox).

. "$(dirname "$0")/../lib.sh"
BIN=$BPFBOX_BUILD/tests/bin
PIDS=""

cleanup() {
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$TMPD"
}
trap cleanup EXIT
trap 'cleanup; exit 1' INT TERM

# sbw [RUN OPTIONS] -- CMD...: CMD in a session on $WS; sets $rc and
# $TMPD/out, $TMPD/err.
sbw() {
	"$BPFBOX" run -w "$WS" "$@" </dev/null >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
}

# out_is TEXT: "" if the command's stdout is exactly TEXT, else why not.
out_is() {
	got=$(cat "$TMPD/out")
	[ "$got" = "$1" ] || echo "stdout is '$(oneline "$TMPD/out" 200)', want '$1'"
}

WS=$TMPD/ws
mkdir -p "$WS"
WS=$(cd "$WS" && pwd -P)
if ! "$BPFBOX" run -w "$WS" -- /bin/true </dev/null >"$TMPD/out" 2>"$TMPD/err"; then
	fail "preflight: '$BPFBOX run -w $WS -- /bin/true' fails: $(oneline "$TMPD/err")"
	exit 1
fi

# --- building software ------------------------------------------------------------

cat >"$WS/hello.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("hello from bpfbox"); return 0; }
EOF
sbw -- sh -c 'cd "$1" && cc -O2 -o hello hello.c && ./hello' sh "$WS"
verdict "cc: compile and run a C program" 0 \
	"$(out_is "hello from bpfbox")$(head -c 4 "$WS/hello" 2>/dev/null | grep -q ELF || echo "no ELF binary $WS/hello")"

mkdir -p "$WS/proj"
printf 'int main(void) { return 0; }\n' >"$WS/proj/main.c"
printf 'bpfbox make\n' >"$WS/proj/in.txt"
printf 'all: out.txt prog\nprog: main.c\n\t$(CC) -o $@ main.c\nout.txt: in.txt\n\ttr a-z A-Z < in.txt > $@\n' >"$WS/proj/Makefile"
sbw -- sh -c 'make -C "$1" -s && make -C "$1" -q' sh "$WS/proj"
verdict "make: build a small project (then up to date)" 0 \
	"$([ "$(cat "$WS/proj/out.txt" 2>/dev/null)" = "BPFBOX MAKE" ] || echo "out.txt is wrong")$([ -x "$WS/proj/prog" ] || echo "no prog")"

cat >"$WS/threads.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
static long total;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *work(void *arg)
{
	for (int i = 0; i < 100000; i++) {
		pthread_mutex_lock(&lock);
		total++;
		pthread_mutex_unlock(&lock);
	}
	return arg;
}
int main(void)
{
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		if (pthread_create(&t[i], NULL, work, NULL))
			return 1;
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	printf("%ld\n", total);
	return 0;
}
EOF
sbw -- sh -c 'cd "$1" && cc -O2 -pthread -o threads threads.c && ./threads' sh "$WS"
verdict "pthread: 8 threads in a program built inside" 0 "$(out_is 800000)"

# --- scripting and tools ----------------------------------------------------------

cat >"$WS/gen.py" <<'EOF'
import json, os, sys, tempfile
out = os.path.join(sys.argv[1], "pyout")
os.makedirs(out, exist_ok=True)
for i in range(10):
    with open(os.path.join(out, "f%d.json" % i), "w") as f:
        json.dump({"i": i, "sq": i * i}, f)
with tempfile.NamedTemporaryFile("w", delete=False) as t:
    t.write("tmp")
print(sum(json.load(open(os.path.join(out, n)))["sq"] for n in os.listdir(out)), t.name.startswith(os.environ["TMPDIR"]))
EOF
sbw -- python3 "$WS/gen.py" "$WS"
n=$(ls "$WS/pyout" 2>/dev/null | wc -l)
verdict "python3: a script writing files (and a tempfile in \$TMPDIR)" 0 \
	"$(out_is "285 True")$([ "$n" = 10 ] || echo "$n files in $WS/pyout, want 10")"

sbw --env GIT_AUTHOR_NAME=Agent --env GIT_AUTHOR_EMAIL=agent@example.com \
	--env GIT_COMMITTER_NAME=Agent --env GIT_COMMITTER_EMAIL=agent@example.com \
	-- sh -c 'cd "$1" && git init -q repo && cd repo && echo one >f && git add f && git commit -qm first' sh "$WS"
if [ "$rc" = 0 ]; then
	# A second session, identity from -c this time, same repository.
	sbw -- sh -c 'cd "$1/repo" && echo two >>f &&
		git -c user.name=Other -c user.email=o@example.com commit -qam second &&
		git log --format=%s | tr "\n" " "' sh "$WS"
fi
log=$(git -C "$WS/repo" log --format='%an:%s' 2>&1 | tr '\n' ' ')
verdict "git: init, add, commit (identity from --env, then from -c)" 0 \
	"$(out_is "second first ")$([ "$log" = "Other:second Agent:first " ] || echo "; git log outside: '$log'")"

mkdir -p "$WS/src/sub"
echo a >"$WS/src/a"
echo b >"$WS/src/sub/b"
sbw -- sh -c 'cd "$1" && tar cf src.tar src && tar czf src.tgz src && mkdir -p x y && tar xf src.tar -C x && tar xzf src.tgz -C y' sh "$WS"
verdict "tar: create and extract (plain and gzip)" 0 \
	"$(diff -r "$WS/src" "$WS/x/src" >/dev/null 2>&1 || echo "x/src differs")$(diff -r "$WS/src" "$WS/y/src" >/dev/null 2>&1 || echo "y/src differs")"

sbw -- sh -c 'printf "b\na\nc\n" | sort | tr a-z A-Z | head -n 2 | paste -sd, -'
verdict "shell pipeline (sort | tr | head | paste)" 0 "$(out_is "A,B")"

sbw -- sh -c 'f=$(mktemp) && echo hi >"$f" && d=$(mktemp -d) && echo x >"$d/x" && cat "$f" "$d/x" >/dev/null &&
	echo "$TMPDIR"; echo "$f"; echo "$d"'
tmpdir=$(sed -n 1p "$TMPD/out")
problem=""
[ -n "$tmpdir" ] || problem="TMPDIR is empty"
for f in $(sed -n '2,3p' "$TMPD/out"); do
	case $f in "$tmpdir"/?*) ;; *) problem="$problem; $f is not under \$TMPDIR" ;; esac
	# With namespaces TMPDIR is /tmp, the session's own tmpfs: not the host's.
	[ "$tmpdir" = /tmp ] && [ -e "$f" ] && problem="$problem; $f is on the host's /tmp"
done
verdict "mktemp and mktemp -d in the private \$TMPDIR" 0 "$problem"

sbw -- sh -c 'head -c 16 /dev/urandom | wc -c; echo x >/dev/null; head -c 4 /dev/zero | wc -c'
verdict "/dev/urandom, /dev/null and /dev/zero" 0 "$(out_is "16
4")"

# A workspace given implicitly: the caller's cwd, and the cwd inside.
rc=0
(cd "$WS" && exec "$BPFBOX" run -- sh -c 'echo ok >cwdfile; pwd -P') \
	</dev/null >"$TMPD/out" 2>"$TMPD/err" || rc=$?
verdict "default workspace is the cwd (writable, cwd inside)" 0 \
	"$(out_is "$WS")$([ -f "$WS/cwdfile" ] || echo "no $WS/cwdfile")"

# --- exit codes ------------------------------------------------------------------

sbw -- sh -c 'exit 42'
verdict "exit status passes through (42)" 42

sbw -- bpfbox-no-such-command-xyz
verdict "a missing command exits 127" 127

printf '#!/bin/sh\necho ran\n' >"$WS/noexec.sh"
chmod 644 "$WS/noexec.sh"
sbw -- "$WS/noexec.sh"
verdict "a non-executable file exits 126" 126 "$(grep -q ran "$TMPD/out" && echo "it ran")"

sbw -- sh -c 'kill -9 $$'
verdict "killed by SIGKILL exits 137" 137

sbw -- sh -c 'kill -SEGV $$'
verdict "killed by SIGSEGV exits 139" 139

# --- session options ---------------------------------------------------------------

sbw --output-limit 1000 -- sh -c 'head -c 3000 /dev/zero | tr "\0" a; echo; echo LAST'
n=$(wc -c <"$TMPD/out")
# Warnings about layers this kernel cannot enforce aside.
nl=$(grep -v "^bpfbox: warning:" "$TMPD/err" | grep -c .)
problem=""
[ "$n" -le 1100 ] && [ "$n" -ge 500 ] || problem="stdout has $n bytes, want 500..1100"
grep -q '^\[bpfbox: [0-9]* bytes cut here by the output limit of 1000 bytes\]$' "$TMPD/out" ||
	problem="$problem; no marker line in stdout"
[ "$(tail -n 1 "$TMPD/out")" = LAST ] || problem="$problem; the tail is not kept"
[ "$nl" = 1 ] || problem="$problem; stderr has $nl non-empty lines, want one notice"
verdict "--output-limit 1000: head and tail kept, a marker line in the stream" 0 "$problem"

t0=$(date +%s)
sbw --timeout 1 -- sleep 30
t1=$(date +%s)
verdict "--timeout 1 stops 'sleep 30' with 124 (said, as a command that started)" 124 \
	"$([ $((t1 - t0)) -le 10 ] || echo "took $((t1 - t0)) s")$(grep -q 'stopped: timeout of 1 s$' "$TMPD/err" || echo "no 'stopped: timeout of 1 s' line ending there on stderr")"

EXTRA=$TMPD/extra
mkdir -p "$EXTRA/ro" "$EXTRA/rw"
echo data >"$EXTRA/ro/file"
sbw --ro "$EXTRA/ro" -- sh -c 'cat "$1/file"; { echo new >"$1/new"; } 2>/dev/null && echo wrote; true' sh "$EXTRA/ro"
problem="$(out_is data)$([ -e "$EXTRA/ro/new" ] && echo "; $EXTRA/ro/new was created")"
if [ -n "$problem" ] && [ "$("$BPFBOX" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["landlock"]["abi"])')" = 0 ]; then
	# Level Minimal: no Landlock, so "not writable" is not promised.
	skip "--ro PATH: readable, not writable: not promised at level Minimal (no Landlock on this kernel): $problem"
else
	verdict "--ro PATH: readable, not writable" 0 "$problem"
fi

sbw --rw "$EXTRA/rw" -- sh -c 'echo new >"$1/new" && cat "$1/new"' sh "$EXTRA/rw"
verdict "--rw PATH: writable" 0 "$(out_is new)$([ -f "$EXTRA/rw/new" ] || echo "; no $EXTRA/rw/new")"

# With --net allow, the same connect that test_escape.sh sees denied works.
if [ -x "$BIN/escape" ] && [ -x "$BIN/helper" ]; then
	cp "$BIN/escape" "$WS/escape"
	"$BIN/helper" tcp "$TMPD/tcp.ready" "$TMPD/tcp.mark" </dev/null >/dev/null 2>&1 &
	PIDS="$PIDS $!"
	if wait_file "$TMPD/tcp.ready"; then
		# The attack program exits 1 when its connect succeeds.
		sbw --net allow -- "$WS/escape" tcp-connect "$(cat "$TMPD/tcp.ready")"
		wait_file "$TMPD/tcp.mark"
		verdict "--net allow: TCP connect to a 127.0.0.1 listener works" 1 \
			"$([ -s "$TMPD/tcp.mark" ] || echo "the listener saw no connection")"
	else
		fail "--net allow: the TCP listener did not start"
	fi
else
	fail "--net allow: $BIN/escape or $BIN/helper missing (run make all)"
fi

# --- what the session's namespaces must not break ------------------------------

# Python's multiprocessing needs a /dev/shm of the session's own (semaphores).
if command -v python3 >/dev/null 2>&1; then
	sbw -- python3 -c '
import multiprocessing as mp
from multiprocessing import shared_memory
def sq(x): return x * x
if __name__ == "__main__":
    with mp.Pool(2) as p:
        print(sum(p.map(sq, range(10))))
    m = shared_memory.SharedMemory(create=True, size=16)
    m.buf[0] = 42
    n = shared_memory.SharedMemory(name=m.name)
    print(n.buf[0])
    n.close(); m.close(); m.unlink()
'
	verdict "python multiprocessing.Pool and shared_memory" 0 "$(out_is "285
42")"
else
	skip "python multiprocessing: no python3 here; the VM image has none either (covered where python3 exists)"
fi

echo 'echo made' >"$WS/tool.sh"
sbw -- sh -c 'chmod +x tool.sh && touch -d "2001-01-01 00:00:00" tool.sh && ./tool.sh'
verdict "chmod +x and touch -d inside the workspace" 0 \
	"$(out_is made)$([ "$(stat -c %Y "$WS/tool.sh")" = "$(date -d "2001-01-01 00:00:00" +%s)" ] || echo "; mtime not set")"

# ps shows the session's own processes (and only those: pid 1 is its init).
sbw -- sh -c 'ps -e -o pid=,comm='
n=$(grep -c . "$TMPD/out")
verdict "ps lists the session's own processes" 0 \
	"$(grep -Eq '^ *1 ' "$TMPD/out" || echo "no pid 1")$(grep -q 'ps$' "$TMPD/out" || echo "; ps does not list itself")$([ "$n" -le 6 ] || echo "; $n processes listed")"

sbw -- sh -c 'mkfifo f && (echo through-fifo >f &) && cat f && rm f'
verdict "a fifo in the workspace" 0 "$(out_is through-fifo)"

if command -v git >/dev/null 2>&1; then
	rm -rf "$WS/src.git" "$WS/clone"
	git init -q --bare "$WS/src.git" && git -C "$WS/src.git" symbolic-ref HEAD refs/heads/main
	sbw -- sh -c 'git init -q seed && cd seed && echo hi >f && git add f &&
		git -c user.name=t -c user.email=t@t commit -qm one && git push -q ../src.git HEAD:main &&
		cd .. && git clone -q src.git clone && cat clone/f'
	verdict "git clone of a local repository" 0 "$(out_is hi)"
else
	skip "git clone: no git here"
fi

sbw -- sh -c 'echo x >"$TMPDIR/t" && cat "$TMPDIR/t" && df -P "$TMPDIR" | tail -1 | cut -d" " -f1'
verdict "\$TMPDIR is writable" 0

# The same as an unprivileged user (a user namespace makes the others).
NB_NS=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$BPFBOX" status --json 2>/dev/null |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["features"]["session_namespaces"]["available"])' 2>/dev/null)
if [ "$(id -u)" = 0 ] && [ "$NB_NS" != True ]; then
	# Without a user namespace there is no /dev/shm of its own: the documented degrade.
	skip "unprivileged work: no session namespaces for uid 65534 here (a chroot refuses user namespaces); the host run covers it"
elif [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then
	NWS=$TMPD/nws
	mkdir -p "$NWS"
	chmod 755 "$TMPD"
	chown 65534:65534 "$NWS"
	rc=0
	setpriv --reuid=65534 --regid=65534 --clear-groups "$BPFBOX" run -q -w "$NWS" -- python3 -c '
import multiprocessing as mp, os, subprocess
def sq(x): return x * x
if __name__ == "__main__":
    with mp.Pool(2) as p:
        print(sum(p.map(sq, range(10))))
    open(os.environ["TMPDIR"] + "/t", "w").write("x")
    os.chmod("f", 0o755) if os.path.exists("f") else open("f", "w").close()
    print(len(subprocess.run(["ps", "-e", "-o", "pid="], capture_output=True, text=True).stdout.split()) <= 6)
' </dev/null >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	verdict "unprivileged: multiprocessing.Pool, \$TMPDIR, a workspace file, ps of its own" 0 "$(out_is "285
True")"
else
	skip "unprivileged work: needs root (to drop to uid 65534), setpriv and python3"
fi

if [ "$(id -u)" = 0 ] && getent passwd nobody >/dev/null 2>&1; then
	UWS=$TMPD/uws
	mkdir -p "$UWS"
	chmod 755 "$TMPD"
	chown nobody "$UWS"
	rc=0
	"$BPFBOX" run -w "$UWS" --user nobody -- sh -c 'id -u; echo x >"$1/by-user"' sh "$UWS" \
		</dev/null >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	owner=$(stat -c %U "$UWS/by-user" 2>/dev/null)
	verdict "--user nobody: runs as that user" 0 \
		"$(out_is "$(id -u nobody)")$([ "$owner" = nobody ] || echo "; by-user is owned by '$owner'")"
else
	skip "--user nobody: needs root and a 'nobody' user"
fi

finish
