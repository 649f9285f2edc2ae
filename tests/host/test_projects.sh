#!/bin/sh
# Real project shapes (issue 31): each runs its own build or test command
# bare, then from a fresh copy under `bpfbox run`, and must pass there as it
# passes bare. A project whose toolchain this host lacks says so in a skip.
# The times of both runs are printed (never judged: make bench measures);
# the credential files the projects carry stay unreadable in the session.
#
#   node    .env and key.pem at its top; `npm test` starts an HTTP server on
#           127.0.0.1 and requests it
#   python  a venv made in the project, unittest with a local TCP server
#   rust    a crate built and tested offline through rustup (~/.rustup, ~/.cargo)
#   java    javac, jar, java
#   c       eight files, make -j4
#   git     a repository with a pre-commit hook and a submodule
#   tree    20,000 files under git (BPFBOX_TREE_FILES; make bench's
#           bench/projects.sh takes 100,000): git status
#   tmp     a test writing to /tmp and /dev/shm
#   nested  .env and *.pem one level down: the tree listable and writable
#
# BPFBOX_PROJECTS (names, space-separated) runs only those;
# BPFBOX_PROJECTS_EMBEDDED_ONLY=1 skips the passes with a change set and
# through a daemon (the Full VM cell: each project costs minutes under TCG).
. "$(dirname "$0")/../lib.sh"

PROJ=$TMPD/projects
mkdir -p "$PROJ"
# Each file is made three times (the template and two copies) and removed:
# 100,000 of them took CI's disk ten minutes.
TREE_FILES=${BPFBOX_TREE_FILES:-20000}

# ms: milliseconds of the monotonic clock.
ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }

# project NAME CMD: $PROJ/NAME.tpl is the project; CMD runs in a fresh copy
# of it bare, then in another under bpfbox run. Both must exit 0.
# BPFBOX_PROJECTS_BARE_ON_FAIL=1 (the Full VM cell, where python's bare run
# alone took 90 s under TCG): the bare run only when the boxed one failed,
# to say whose failure it is; nothing else needs it there.
project() {
	name=$1 cmd=$2
	# BPFBOX_PROJECTS="python c": only those (a VM's run of one).
	case " ${BPFBOX_PROJECTS:-$name} " in
	*" $name "*) ;;
	*) return 0 ;;
	esac
	rm -rf "$PROJ/$name.bare" "$PROJ/$name.box"
	cp -a "$PROJ/$name.tpl" "$PROJ/$name.bare"
	cp -a "$PROJ/$name.tpl" "$PROJ/$name.box"
	if [ -n "${BPFBOX_PROJECTS_BARE_ON_FAIL:-}" ]; then
		t1=$(ms)
		BARE_SAID=""
		boxed "$name" "$cmd" box
		echo "# $name: bpfbox run $((t2 - t1)) ms (the bare run only on a failure: BPFBOX_PROJECTS_BARE_ON_FAIL)"
		if [ "$boxed_rc" != 0 ]; then
			(cd "$PROJ/$name.bare" && sh -c "$cmd") >"$TMPD/$name.bare.out" 2>&1
			echo "# $name: its control run outside bpfbox exited $?: $(oneline "$TMPD/$name.bare.out" 300)"
		fi
		return 0
	fi
	t0=$(ms)
	(cd "$PROJ/$name.bare" && sh -c "$cmd") >"$TMPD/$name.bare.out" 2>&1
	brc=$? t1=$(ms)
	if [ "$brc" != 0 ]; then
		fail "$name: the control run outside bpfbox failed ($brc): $(oneline "$TMPD/$name.bare.out" 400)"
	else
		boxed "$name" "$cmd" box
		# Run again through a daemon at the end (the same checks).
		printf '%s\t%s\n' "$name" "$cmd" >>"$TMPD/passed-bare"
	fi
	echo "# $name: bare $((t1 - t0)) ms, bpfbox run $((t2 - t1)) ms"
}

# boxed NAME CMD COPY [RUN OPTIONS]: CMD under bpfbox run in $PROJ/NAME.COPY
# (the box copy; another is made fresh from the template) must pass, end
# with 0 on the status channel and carry no denied line. Sets t2.
boxed() {
	name=$1 cmd=$2 copy=$3
	shift 3
	[ "$copy" = box ] || { rm -rf "$PROJ/$name.$copy" && cp -a "$PROJ/$name.tpl" "$PROJ/$name.$copy"; }
	case "${1:-}" in
	--daemon-socket) what="$name (through a daemon)" ;;
	--changes) what="$name (--changes $2)" ;;
	*) what=$name ;;
	esac
	"$BPFBOX" run -q -w "$PROJ/$name.$copy" --timeout 600 --status-fd 3 "$@" -- sh -c "$cmd" \
		</dev/null >"$TMPD/$name.$copy.out" 2>&1 3>"$TMPD/$name.$copy.st"
	rc=$? t2=$(ms) boxed_rc=$rc
	if [ "$rc" != 0 ]; then
		fail "$what: ${BARE_SAID-passes bare, }fails under bpfbox run ($rc): $(oneline "$TMPD/$name.$copy.out" 600)"
		return
	fi
	ok "$what: passes under bpfbox run${BARE_SAID- as it passes bare}"
	# The runtime's view: the call ends on the status channel with 0,
	# and a call that passed carries no denied line (docs/runtime.md).
	if grep -q '"type":"ended".*"exit_code":0' "$TMPD/$name.$copy.st"; then
		ok "$what: ended with 0 on the status channel"
	else
		fail "$what: no ended line with exit 0 on the status channel: $(tail -c 300 "$TMPD/$name.$copy.st")"
	fi
	if ! grep -q '"type":"denied"' "$TMPD/$name.$copy.st"; then
		ok "$what: no denied line on the status channel"
	else
		fail "$what: spurious denied lines on a call that passed: $(grep '"type":"denied"' "$TMPD/$name.$copy.st" | sed -n 's/.*"layer":"\([^"]*\)","op":"\([^"]*\)","what":"\([^"]*\)".*/\1 \2 \3;/p' | tr '\n' ' ' | cut -c 1-400)"
	fi
}

# secret_hidden NAME FILE...: each FILE of the project is unreadable in a session.
secret_hidden() {
	name=$1
	shift
	[ -d "$PROJ/$name.box" ] || return 0 # not run (BPFBOX_PROJECTS)
	for f in "$@"; do
		if "$BPFBOX" run -q -w "$PROJ/$name.box" -- cat "$f" >"$TMPD/sec.out" 2>&1 ||
			grep -q bpfbox-secret "$TMPD/sec.out"; then
			fail "$name: $f is readable in the session: $(oneline "$TMPD/sec.out" 200)"
		else
			ok "$name: $f stays unreadable in the session"
		fi
	done
}

# --- node -------------------------------------------------------------------
N=$PROJ/node.tpl
mkdir -p "$N/test"
echo 'API_KEY=bpfbox-secret-node' >"$N/.env"
echo 'bpfbox-secret-pem' >"$N/key.pem"
cat >"$N/package.json" <<'EOF'
{ "name": "shop", "version": "1.0.0", "private": true,
  "scripts": { "test": "node test/server.test.js" } }
EOF
cat >"$N/server.js" <<'EOF'
const http = require("http");
module.exports = () => http.createServer((req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ path: req.url, ok: true }));
});
EOF
cat >"$N/test/server.test.js" <<'EOF'
const assert = require("assert");
const http = require("http");
const server = require("../server")();
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  http.get({ host: "127.0.0.1", port, path: "/items" }, (res) => {
    let body = "";
    res.on("data", (d) => (body += d));
    res.on("end", () => {
      assert.deepStrictEqual(JSON.parse(body), { path: "/items", ok: true });
      console.log("1 test passed");
      server.close();
    });
  });
});
EOF
if command -v node >/dev/null && command -v npm >/dev/null; then
	project node 'ls -a >/dev/null && touch newfile && mkdir -p lib && echo node_modules >>.gitignore && npm test'
	secret_hidden node .env key.pem
else
	skip "node: no node or npm on this host"
fi

# --- python -----------------------------------------------------------------
P=$PROJ/python.tpl
mkdir -p "$P/pkg" "$P/tests"
echo 'DB_PASSWORD=bpfbox-secret-py' >"$P/.env"
cat >"$P/pkg/__init__.py" <<'EOF'
def add(a, b):
    return a + b
EOF
: >"$P/tests/__init__.py"
cat >"$P/tests/test_pkg.py" <<'EOF'
import socket, threading, unittest
from pkg import add

class T(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_local_server(self):
        srv = socket.create_server(("127.0.0.1", 0))
        port = srv.getsockname()[1]
        def serve():
            c, _ = srv.accept()
            c.sendall(c.recv(64).upper())
            c.close()
        threading.Thread(target=serve, daemon=True).start()
        with socket.create_connection(("127.0.0.1", port), 5) as c:
            c.sendall(b"ping")
            self.assertEqual(c.recv(64), b"PING")

if __name__ == "__main__":
    unittest.main()
EOF
PY3=/usr/bin/python3
if [ -x "$PY3" ] && "$PY3" -c 'import venv, ensurepip' 2>/dev/null; then
	project python "$PY3 -m venv .venv && .venv/bin/python -m unittest discover -s tests -t . -v"
	secret_hidden python .env
else
	skip "python: no /usr/bin/python3 with venv and ensurepip here"
fi

# --- rust (offline, through rustup under the caller's home) -------------------
R=$PROJ/rust.tpl
mkdir -p "$R/src"
cat >"$R/Cargo.toml" <<'EOF'
[package]
name = "calc"
version = "0.1.0"
edition = "2021"
EOF
cat >"$R/src/main.rs" <<'EOF'
fn add(a: i32, b: i32) -> i32 { a + b }
fn main() { println!("{}", add(2, 3)); }
#[cfg(test)]
mod tests { #[test] fn adds() { assert_eq!(super::add(2, 3), 5); } }
EOF
if command -v cargo >/dev/null && [ -d "${RUSTUP_HOME:-$HOME/.rustup}" ]; then
	project rust 'cargo build --offline -q && cargo test --offline -q && ./target/debug/calc'
else
	skip "rust: no cargo through rustup under $HOME on this host"
fi

# --- java -------------------------------------------------------------------
J=$PROJ/java.tpl
mkdir -p "$J/src/app"
cat >"$J/src/app/Main.java" <<'EOF'
package app;
public class Main {
    public static void main(String[] a) {
        if (Integer.parseInt("41") + 1 != 42) throw new AssertionError();
        System.out.println("ok");
    }
}
EOF
if command -v javac >/dev/null && command -v jar >/dev/null; then
	project java 'mkdir -p out && javac -d out src/app/Main.java && jar cf app.jar -C out . && java -cp app.jar app.Main'
else
	skip "java: no javac and jar on this host"
fi

# --- c ----------------------------------------------------------------------
C=$PROJ/c.tpl
mkdir -p "$C"
for i in 1 2 3 4 5 6 7; do
	printf 'int f%s(int x) { return x + %s; }\n' "$i" "$i" >"$C/f$i.c"
done
{
	for i in 1 2 3 4 5 6 7; do printf 'int f%s(int);\n' "$i"; done
	echo 'int main(void) { return f1(0) + f2(0) + f3(0) + f4(0) + f5(0) + f6(0) + f7(0) == 28 ? 0 : 1; }'
} >"$C/main.c"
printf 'OBJS := $(patsubst %%.c,%%.o,$(wildcard *.c))\nprog: $(OBJS)\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) -O2 -c $< -o $@\n' >"$C/Makefile"
if command -v make >/dev/null && command -v cc >/dev/null; then
	project c 'make -j4 -s && ./prog'
else
	skip "c: no make and cc on this host"
fi

# --- git: a pre-commit hook and a submodule ------------------------------------
G=$PROJ/git.tpl
# gc.auto=0: a background gc of the 100,000 loose objects would delete
# them under the copies the projects run in.
GIT="git -c user.name=t -c user.email=t@example.org -c protocol.file.allow=always -c init.defaultBranch=main -c gc.auto=0"
mkdir -p "$G/lib" "$G/app"
(cd "$G/lib" && $GIT init -q && echo lib >README && $GIT add README && $GIT commit -qm lib) >/dev/null
(cd "$G/app" && $GIT init -q && echo app >README && $GIT add README && $GIT commit -qm app &&
	$GIT submodule add -q ../lib lib && $GIT commit -qm "lib as a submodule") >/dev/null 2>&1
printf '#!/bin/sh\necho hook ran >"$(git rev-parse --show-toplevel)/hook.log"\n' >"$G/app/.git/hooks/pre-commit"
chmod 755 "$G/app/.git/hooks/pre-commit"
if [ -f "$G/app/.gitmodules" ]; then
	project git "cd app && $GIT submodule status && echo change >>README && $GIT commit -qam change && grep -q 'hook ran' hook.log && $GIT log --oneline | wc -l | grep -q 3"
else
	fail "git: the fixture's submodule could not be made outside bpfbox"
fi

# --- tree: a big tree under git ---------------------------------------------
T=$PROJ/tree.tpl
mkdir -p "$T"
case " ${BPFBOX_PROJECTS:-tree} " in *" tree "*) ;; *) TREE_FILES=0 ;; esac
python3 - "$T" "$TREE_FILES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // 1000), "e%02d" % (i % 1000 // 100))
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
        f.write("%d\n" % i)
PY
# Packed: one pack, not a loose object per file to copy and remove.
(cd "$T" && $GIT init -q && $GIT add -A && $GIT commit -qm tree && $GIT repack -adq &&
	$GIT prune-packed) >/dev/null
if [ -d "$T/.git" ]; then
	echo "# tree: $(find "$T" -type f -not -path '*/.git/*' | wc -l) files"
	project tree "echo x >>d000/e00/f00000.txt && test \"\$(git -c gc.auto=0 status --porcelain | wc -l)\" = 1"
else
	fail "tree: the fixture's repository could not be made outside bpfbox"
fi

# --- tmp: /tmp and /dev/shm -----------------------------------------------------
mkdir -p "$PROJ/tmp.tpl"
project tmp 'echo a >/tmp/bpfbox-proj.$$ && test "$(cat /tmp/bpfbox-proj.$$)" = a && echo b >/dev/shm/bpfbox-proj.$$ && test "$(cat /dev/shm/bpfbox-proj.$$)" = b && rm /tmp/bpfbox-proj.$$ /dev/shm/bpfbox-proj.$$'

# --- nested: credentials one level down -----------------------------------------
D=$PROJ/nested.tpl
mkdir -p "$D/config"
echo 'SECRET=bpfbox-secret-nested' >"$D/config/.env"
echo 'bpfbox-secret-pem2' >"$D/config/server.pem"
echo 'port: 8080' >"$D/config/app.yml"
project nested 'ls -a config >/dev/null && cat config/app.yml >/dev/null && touch config/new.yml && mkdir config/d && echo x >>config/app.yml'
secret_hidden nested config/.env config/server.pem

# --- the same projects with a change set, applied on exit 0 (issue 33) ----------
# The workspace after the apply holds what the bare run left (the same
# paths; not the same bytes: builds stamp times and paths), and no set
# stays behind.
if [ -n "${BPFBOX_PROJECTS_EMBEDDED_ONLY:-}" ]; then
	skip "projects with --changes apply and through a daemon: BPFBOX_PROJECTS_EMBEDDED_ONLY (make test runs them on the host)"
elif [ -s "$TMPD/passed-bare" ]; then
	export BPFBOX_CHANGES_DIR=$TMPD/sets
	tab=$(printf '\t')
	while IFS=$tab read -r name cmd; do
		boxed "$name" "$cmd" apl --changes apply </dev/null
		# Applied; or nothing changed in the workspace (the tmp project), no set made.
		grep -q '"type":"ended".*"applied":true' "$TMPD/$name.apl.st" ||
			grep -q '"type":"ended".*"added":0,"modified":0,"deleted":0,"kept":false' "$TMPD/$name.apl.st" ||
			{ fail "$name (--changes apply): not applied: $(grep -o '"changes":{[^}]*}' "$TMPD/$name.apl.st")"; continue; }
		# Paths: git's objects are named by their commit's time, cargo's
		# artifacts by the crate's path; both left out, and Python's
		# bytecode (PYTHONDONTWRITEBYTECODE in the caller's environment is
		# not the session's).
		for c in bare apl; do
			(cd "$PROJ/$name.$c" && find . -name .git -prune -o -name target -prune -o \
				-name __pycache__ -prune -o -print | sort) >"$TMPD/$name.$c.ls"
		done
		# An applied set leaves its manifest (state applied), not its upper.
		id=$(sed -n 's/.*"type":"ended".*"changes_id":"\([0-9a-f]*\)".*/\1/p' "$TMPD/$name.apl.st")
		held=$(ls -d "$BPFBOX_CHANGES_DIR/${id:-none}/upper" 2>/dev/null)
		if cmp -s "$TMPD/$name.bare.ls" "$TMPD/$name.apl.ls" && [ -z "$held" ]; then
			ok "$name (--changes apply): applied, the workspace holds the paths the bare run left, no set kept"
		else
			fail "$name (--changes apply): $(diff "$TMPD/$name.bare.ls" "$TMPD/$name.apl.ls" | head -8 | tr '\n' ' ')$held"
		fi
	done <"$TMPD/passed-bare"
	unset BPFBOX_CHANGES_DIR
fi

# --- the same projects through a daemon (the runtime's other mode) -------------
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -n "${BPFBOX_PROJECTS_EMBEDDED_ONLY:-}" ]; then
	: # said above
elif [ "$(id -u)" != 0 ] || [ -z "$CG2" ]; then
	skip "projects through a daemon: a daemon needs root and cgroup v2 (CI runs as root; the embedded runs above passed)"
elif [ ! -s "$TMPD/passed-bare" ]; then
	skip "projects through a daemon: no project passed bare on this host"
else
	daemon_scratch projects
	if start_daemon "$TMPD/projects-daemon.jsonl"; then
		tab=$(printf '\t')
		while IFS=$tab read -r name cmd; do
			boxed "$name" "$cmd" dmn --daemon-socket "$SOCK" </dev/null
		done <"$TMPD/passed-bare"
	else
		fail "projects through a daemon: the daemon did not get ready: $(oneline "$DERR")"
	fi
fi

finish
