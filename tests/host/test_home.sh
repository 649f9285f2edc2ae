# The private home (userspace/sandbox/home.c): what of the caller's home a
# session sees. Its git config is written anew from an allowlist (identity
# only): no secret of the caller's gitconfig reaches it, git still finds
# the user. Per-user toolchains (rustup/cargo, nvm, pyenv, sdkman, Go, uv,
# pipx) are found read-only at their usual paths, nothing else of the home.
# What else of the caller's a session may be given: its SSH agent
# (--ssh-agent: the socket alone), device nodes (--device), its certificate
# and package-index variables (env_pass.h: a URL with credentials dropped).
. "$(dirname "$0")/../lib.sh"

WS="$TMPD/ws"
FH="$TMPD/home"
mkdir -p "$WS" "$FH"

# --- the gitconfig: each way a secret sits in one --------------------------------
cat >"$FH/.gitconfig" <<'GIT'
# the caller's own
[user]
	name = Test User
	email = test@example.com ; a comment
[sendemail]
	smtpserver = smtp.example.com
	smtpPass = MARK-smtp
[alias]
	api = !curl -H 'Authorization: Bearer MARK-bearer' https://api.example.com
[url "https://deploy:MARK-url@git.example.com/"]
	insteadOf = https://git.example.com/
[core]
	pager = less \
MARK-continued
	autocrlf = input
[credential]
	helper = store --file /tmp/MARK-helper
[credential "https://example.com"]
	username = MARK-creduser
[http]
	extraHeader = Authorization: Basic MARK-header
[init]
	defaultBranch = trunk
GIT
mkdir -p "$FH/.config/git"
printf '[user]\n\tname = Xdg User\n[http "https://h/"]\n\textraheader = X-Token: MARK-xdg\n' \
	>"$FH/.config/git/config"
HOME=$FH "$BPFBOX" run -q -w "$WS" -- sh -c \
	'cat "$HOME/.gitconfig" "$HOME/.config/git/config"; echo "name=$(git config user.name)"; echo "email=$(git config user.email)"; echo "branch=$(git config init.defaultBranch)"' \
	>"$TMPD/git.out" 2>"$TMPD/git.err"
rc=$?
# The positive control: the identity is there, git reads it.
grep -qx 'name=Test User' "$TMPD/git.out" && grep -qx 'email=test@example.com' "$TMPD/git.out" &&
	grep -qx 'branch=trunk' "$TMPD/git.out" && [ "$rc" = 0 ] &&
	ok "gitconfig: git config user.name, user.email, init.defaultBranch work inside" ||
	fail "gitconfig: rc $rc, identity not found: $(oneline "$TMPD/git.out") $(oneline "$TMPD/git.err" 200)"
if grep -q MARK "$TMPD/git.out"; then
	fail "gitconfig: a secret reached the session's copy: $(grep MARK "$TMPD/git.out" | tr '\n' '|')"
else
	ok "gitconfig: none of smtpPass, an alias's Bearer, url.<user:pw>.insteadOf, a continued value, credential helpers, http.extraHeader reached the session"
fi
grep -q 'sendemail\|alias\|pager\|credential\|http' "$TMPD/git.out" &&
	fail "gitconfig: a key outside the allowlist was written: $(oneline "$TMPD/git.out")" ||
	ok "gitconfig: only the allowlist's keys are written"
# --- per-user toolchains: fake trees of each, found read-only inside -------------
FT="$TMPD/tchome"
mkdir -p "$FT/.cargo/bin" "$FT/.rustup/toolchains/stable/bin" "$FT/.nvm" "$FT/.pyenv/bin" \
	"$FT/.sdkman/bin" "$FT/go/bin" "$FT/go/pkg/mod" "$FT/.local/share/uv/tools" "$FT/.local/bin" \
	"$FT/.local/pipx/venvs" "$FT/.ssh" "$FT/other"
# cargo as rustup installs it: a proxy that needs rustup's settings under RUSTUP_HOME or ~/.rustup
cat >"$FT/.cargo/bin/cargo" <<'SH'
#!/bin/sh
r=${RUSTUP_HOME:-$HOME/.rustup}
[ -f "$r/settings.toml" ] || { echo "rustup could not choose a version of cargo to run" >&2; exit 1; }
exec "$r/toolchains/stable/bin/cargo" "$@"
SH
printf '#!/bin/sh\necho "cargo-fake $*"\n' >"$FT/.rustup/toolchains/stable/bin/cargo"
echo 'default_toolchain = "stable"' >"$FT/.rustup/settings.toml"
echo 'nvm() { echo nvm-fake; }' >"$FT/.nvm/nvm.sh"
printf '#!/bin/sh\necho pyenv-fake\n' >"$FT/.pyenv/bin/pyenv"
echo 'echo sdkman-fake' >"$FT/.sdkman/bin/sdkman-init.sh"
printf '#!/bin/sh\necho go-fake\n' >"$FT/go/bin/gotool"
printf '#!/bin/sh\necho uv-fake\n' >"$FT/.local/bin/uv"
echo uv-tool >"$FT/.local/share/uv/tools/t"
echo pipx-venv >"$FT/.local/pipx/venvs/v"
echo PRIVATE-KEY >"$FT/.ssh/id_ed25519"
# cargo's state at the top of ~/.cargo: its last-use cache (written on every
# build), a registry token, the registry.
mkdir -p "$FT/.cargo/registry"
echo REAL-CACHE >"$FT/.cargo/.global-cache"
echo 'token = "CARGO-TOKEN"' >"$FT/.cargo/credentials.toml"
echo crate >"$FT/.cargo/registry/crate"
echo OTHER-FILE >"$FT/other/file"
chmod 755 "$FT/.cargo/bin/cargo" "$FT/.rustup/toolchains/stable/bin/cargo" "$FT/.pyenv/bin/pyenv" \
	"$FT/go/bin/gotool" "$FT/.local/bin/uv"
cat >"$WS/tc.sh" <<'SH'
echo "ls=$(ls -A "$HOME" | tr '\n' ' ')"
cargo build
"$HOME/.cargo/bin/cargo" -V
. "$NVM_DIR/nvm.sh" && nvm
"$PYENV_ROOT/bin/pyenv"
. "$SDKMAN_DIR/bin/sdkman-init.sh"
"$GOPATH/bin/gotool"
uv
cat "$HOME/.local/share/uv/tools/t" "$HOME/.local/pipx/venvs/v"
echo "rustup_home=${RUSTUP_HOME:-unset}"
cat "$REAL/.ssh/id_ed25519" "$REAL/other/file" "$HOME/.ssh/id_ed25519" 2>/dev/null
touch "$HOME/.cargo/bin/new" "$GOPATH/pkg/mod/new" "$HOME/.cargo/registry/new" 2>/dev/null
echo session-cache >"$HOME/.cargo/.global-cache" && echo session-cache >"$HOME/.cargo/.global-cache-journal" &&
	[ "$(cat "$HOME/.cargo/.global-cache")" = session-cache ] && echo cache-written
cat "$HOME/.cargo/registry/crate" "$HOME/.cargo/credentials.toml" "$REAL/.cargo/credentials.toml" 2>/dev/null
echo done
SH
for ns in "" --no-namespaces; do
	what="toolchains${ns:+ ($ns)}"
	env -u RUSTUP_HOME -u CARGO_HOME -u NVM_DIR -u PYENV_ROOT -u SDKMAN_DIR -u GOPATH \
		HOME="$FT" REAL="$FT" PATH="$FT/.cargo/bin:$FT/.local/bin:/usr/bin:/bin" \
		"$BPFBOX" run -q $ns -w "$WS" --env REAL -- sh "$WS/tc.sh" >"$TMPD/tc.out" 2>"$TMPD/tc.err"
	rc=$?
	problem=
	for want in 'cargo-fake build' 'cargo-fake -V' nvm-fake pyenv-fake sdkman-fake go-fake uv-fake \
		uv-tool pipx-venv rustup_home=unset cache-written crate done; do
		grep -qx -- "$want" "$TMPD/tc.out" || problem="$problem; no '$want'"
	done
	grep -qx 'ls=.cargo .local .nvm .pyenv .rustup .sdkman go ' "$TMPD/tc.out" ||
		problem="$problem; the home holds $(grep '^ls=' "$TMPD/tc.out")"
	[ "$rc" = 0 ] && [ -z "$problem" ] &&
		ok "$what: cargo (rustup), nvm, pyenv, sdkman, Go, uv, pipx found at their usual paths, their variables set" ||
		fail "$what: rc $rc$problem: $(oneline "$TMPD/tc.out") $(oneline "$TMPD/tc.err" 300)"
	grep -q 'PRIVATE-KEY\|OTHER-FILE\|CARGO-TOKEN' "$TMPD/tc.out" &&
		fail "$what: the rest of the home was readable: $(oneline "$TMPD/tc.out")" ||
		ok "$what: ~/.ssh, ~/other and ~/.cargo/credentials.toml are not readable, nor in the private home"
	[ ! -e "$FT/.cargo/bin/new" ] && [ ! -e "$FT/go/pkg/mod/new" ] && [ ! -e "$FT/.cargo/registry/new" ] &&
		ok "$what: the trees are read-only (a write to ~/.cargo or the Go module cache fails)" ||
		fail "$what: a toolchain tree was written"
	# cargo's last-use cache: written in the session's own ~/.cargo, the caller's untouched.
	[ "$(cat "$FT/.cargo/.global-cache")" = REAL-CACHE ] && [ ! -e "$FT/.cargo/.global-cache-journal" ] &&
		ok "$what: ~/.cargo/.global-cache is the session's own (written there, the caller's untouched)" ||
		fail "$what: the caller's ~/.cargo/.global-cache: $(cat "$FT/.cargo/.global-cache" "$FT/.cargo/.global-cache-journal" 2>&1 | tr '\n' ' ')"
	rm -f "$FT/.cargo/bin/new" "$FT/go/pkg/mod/new" "$FT/.cargo/registry/new"
done
# RUSTUP_HOME set by the caller: passed on, its tree granted.
mv "$FT/.rustup" "$TMPD/rustup-elsewhere"
env -u CARGO_HOME -u NVM_DIR -u PYENV_ROOT -u SDKMAN_DIR -u GOPATH RUSTUP_HOME="$TMPD/rustup-elsewhere" \
	HOME="$FT" PATH="$FT/.cargo/bin:/usr/bin:/bin" "$BPFBOX" run -q -w "$WS" -- \
	sh -c 'cargo build; echo "rustup_home=$RUSTUP_HOME"' >"$TMPD/tc2.out" 2>"$TMPD/tc2.err"
grep -qx 'cargo-fake build' "$TMPD/tc2.out" && grep -qx "rustup_home=$TMPD/rustup-elsewhere" "$TMPD/tc2.out" &&
	ok "toolchains: the caller's RUSTUP_HOME is passed on and its tree granted read-only" ||
	fail "toolchains: RUSTUP_HOME: $(oneline "$TMPD/tc2.out") $(oneline "$TMPD/tc2.err" 300)"
# --- certificates and package indexes (env_pass.h) -------------------------------
# Every name of the one list is documented.
for v in $(sed -n 's/.*\(FILE\|URL\)("\([A-Za-z_*]*\)").*/\2/p' "$ROOT/userspace/sandbox/env_pass.h"); do
	grep -qF "\`$v\`" "$ROOT/docs/runtime.md" || missing="$missing $v"
done
[ -z "$missing" ] && ok "env_pass.h: docs/runtime.md names each of its variables" ||
	fail "env_pass.h: not in docs/runtime.md:$missing"
mkdir -p "$TMPD/ca" "$FH/.ssh"
echo CA-BUNDLE >"$TMPD/ca/corp.crt"
echo SSH-DIR-CA >"$FH/.ssh/ca.crt"
for ns in "" --no-namespaces; do
	what="CA variables${ns:+ ($ns)}"
	env -u PIP_CERT -u REQUESTS_CA_BUNDLE -u SSL_CERT_DIR NODE_EXTRA_CA_CERTS="$TMPD/ca/corp.crt" \
		GIT_SSL_CAINFO="$FH/.ssh/ca.crt" PIP_INDEX_URL="https://user:MARK-pw@pypi.example/simple" \
		NPM_CONFIG_REGISTRY="https://r.example/npm/?token=MARK-tok" UV_INDEX_URL=https://mirror.example/simple \
		GOPROXY="https://proxy.example,direct" "$BPFBOX" run $ns -w "$WS" -- sh -c \
		'cat "$NODE_EXTRA_CA_CERTS"; tr "\0" "\n" </proc/self/environ' >"$TMPD/ca.out" 2>"$TMPD/ca.err"
	rc=$?
	problem=
	for want in CA-BUNDLE "NODE_EXTRA_CA_CERTS=$TMPD/ca/corp.crt" UV_INDEX_URL=https://mirror.example/simple \
		GOPROXY=https://proxy.example,direct; do
		grep -qx -- "$want" "$TMPD/ca.out" || problem="$problem; no '$want'"
	done
	[ "$rc" = 0 ] && [ -z "$problem" ] &&
		ok "$what: the CA file's variable is set and the file readable, plain index URLs passed" ||
		fail "$what: rc $rc$problem: $(oneline "$TMPD/ca.out") $(oneline "$TMPD/ca.err" 300)"
	grep -q 'MARK\|GIT_SSL_CAINFO\|PIP_INDEX_URL\|NPM_CONFIG_REGISTRY\|SSH-DIR-CA' "$TMPD/ca.out" &&
		fail "$what: a dropped variable or its value reached the session: $(oneline "$TMPD/ca.out")" ||
		ok "$what: URLs with credentials and a CA file under ~/.ssh are not in the session's environment"
	problem=
	for v in GIT_SSL_CAINFO PIP_INDEX_URL NPM_CONFIG_REGISTRY; do
		[ "$(grep -c "warning: $v not passed" "$TMPD/ca.err")" = 1 ] || problem="$problem $v"
	done
	[ -z "$problem" ] && ! grep -q MARK "$TMPD/ca.err" &&
		ok "$what: each dropped variable is said once on stderr, by name, never its value" ||
		fail "$what: not said once:$problem: $(oneline "$TMPD/ca.err" 600)"
done
# --- --ssh-agent: the caller's agent, reached through its socket alone ------------
if ! command -v ssh-agent >/dev/null || ! command -v ssh-keygen >/dev/null; then
	skip "--ssh-agent: no ssh-agent or ssh-keygen here (openssh-client)"
else
	chmod 755 "$TMPD"
	# agent_case NAME AS...: an agent of the user AS runs (as root when empty), its
	# socket's dir also holds a key and a file; the session lists and signs with it.
	agent_case() {
		what=$1
		shift
		AG="$TMPD/agent$#"
		mkdir -p "$AG/ws" && chown -R "${1:-0}" "$AG" 2>/dev/null
		[ $# -gt 0 ] && set -- setpriv --reuid "$1" --regid "$1" --clear-groups
		"$@" ssh-keygen -q -t ed25519 -N '' -C bpfbox-agent-key -f "$AG/key" &&
			"$@" sh -c "echo AGENT-DIR-FILE >'$AG/other'; cp '$AG/key.pub' '$AG/ws/'; echo msg >'$AG/ws/msg'" &&
			"$@" ssh-agent -a "$AG/sock" >"$AG/env" && SSH_AUTH_SOCK="$AG/sock" "$@" ssh-add -q "$AG/key" 2>/dev/null
		apid=$(sed -n 's/^SSH_AGENT_PID=\([0-9]*\);.*/\1/p' "$AG/env")
		for ns in "" --no-namespaces; do
			SSH_AUTH_SOCK="$AG/sock" "$@" "$BPFBOX" run -q $ns --ssh-agent -w "$AG/ws" -- sh -c \
				'echo "sock=$SSH_AUTH_SOCK"; ssh-add -l; rm -f msg.sig; ssh-keygen -Y sign -q -n bpfbox -f key.pub msg && echo signed; cat "$1" "$2" 2>&1' \
				sh "$AG/other" "$AG/key" >"$TMPD/ag.out" 2>"$TMPD/ag.err"
			sock=/run/ssh-agent.sock
			[ -n "$ns" ] && sock=$AG/sock
			grep -qx "sock=$sock" "$TMPD/ag.out" && grep -q bpfbox-agent-key "$TMPD/ag.out" &&
				grep -qx signed "$TMPD/ag.out" &&
				ok "--ssh-agent ($what${ns:+, $ns}): SSH_AUTH_SOCK=$sock, ssh-add -l lists the caller's key, ssh-keygen -Y sign signs with it" ||
				fail "--ssh-agent ($what${ns:+, $ns}): $(oneline "$TMPD/ag.out") $(oneline "$TMPD/ag.err" 300)"
			grep -q 'AGENT-DIR-FILE\|PRIVATE KEY' "$TMPD/ag.out" &&
				fail "--ssh-agent ($what${ns:+, $ns}): the socket's directory was readable: $(oneline "$TMPD/ag.out")" ||
				ok "--ssh-agent ($what${ns:+, $ns}): the other files of the socket's directory stay unreadable"
		done
		[ -n "$apid" ] && kill "$apid" 2>/dev/null
	}
	agent_case root
	agent_case "uid 65534" 65534
	expect_err 125 "--ssh-agent: SSH_AUTH_SOCK unset is refused (125), one line" \
		'^bpfbox: error: --ssh-agent: SSH_AUTH_SOCK is not set' \
		env -u SSH_AUTH_SOCK "$BPFBOX" run -q --ssh-agent -w "$WS" -- true
	expect_err 125 "--ssh-agent: SSH_AUTH_SOCK naming a file is refused (125), one line" \
		"is not a socket" env SSH_AUTH_SOCK="$TMPD/ca/corp.crt" "$BPFBOX" run -q --ssh-agent -w "$WS" -- true
fi
# --- --device: a character device node, writable in the session ------------------
if [ -c /dev/net/tun ]; then
	for ns in "" --no-namespaces; do
		"$BPFBOX" run -q $ns --device /dev/net/tun -w "$WS" -- sh -c 'exec 3<>/dev/net/tun && echo opened' \
			>"$TMPD/dev.out" 2>"$TMPD/dev.err"
		"$BPFBOX" run -q $ns -w "$WS" -- sh -c 'exec 3<>/dev/net/tun && echo opened' >"$TMPD/nodev.out" 2>&1
		grep -qx opened "$TMPD/dev.out" && ! grep -q opened "$TMPD/nodev.out" &&
			ok "--device /dev/net/tun${ns:+ ($ns)}: opened read-write inside, not without the flag" ||
			fail "--device /dev/net/tun${ns:+ ($ns)}: with: $(oneline "$TMPD/dev.out") $(oneline "$TMPD/dev.err" 200); without: $(oneline "$TMPD/nodev.out" 200)"
	done
else
	skip "--device: no /dev/net/tun here (the VM matrix has it)"
fi
# uid 65534: a null device of the test's own, mode 0666, written through the grant.
DEVN=/dev/bpfbox-test-null-$$
if mknod -m 666 "$DEVN" c 1 3 2>/dev/null; then
	mkdir -p "$TMPD/ws65534" && chown 65534 "$TMPD/ws65534"
	for ns in "" --no-namespaces; do
		setpriv --reuid 65534 --regid 65534 --clear-groups "$BPFBOX" run -q $ns --device "$DEVN" \
			-w "$TMPD/ws65534" -- sh -c "echo x >$DEVN && echo wrote" >"$TMPD/dev.out" 2>"$TMPD/dev.err"
		setpriv --reuid 65534 --regid 65534 --clear-groups "$BPFBOX" run -q $ns -w "$TMPD/ws65534" -- \
			sh -c "echo x >$DEVN && echo wrote" >"$TMPD/nodev.out" 2>&1
		grep -qx wrote "$TMPD/dev.out" && ! grep -q wrote "$TMPD/nodev.out" &&
			ok "--device (uid 65534${ns:+, $ns}): a device node of mode 0666 is written inside, not without the flag" ||
			fail "--device (uid 65534${ns:+, $ns}): with: $(oneline "$TMPD/dev.out") $(oneline "$TMPD/dev.err" 200); without: $(oneline "$TMPD/nodev.out" 200)"
	done
	rm -f "$DEVN"
else
	skip "--device (uid 65534): cannot mknod in /dev here (root in a VM has it)"
fi
mknod "$TMPD/fakedev" c 10 200 2>/dev/null || touch "$TMPD/fakedev"
expect_err 125 "--device: a node outside /dev is refused (125), one line" "it is not under /dev" \
	"$BPFBOX" run -q --device "$TMPD/fakedev" -w "$WS" -- true
for b in /dev/loop0 /dev/sda /dev/vda; do
	[ -b "$b" ] || continue
	expect_err 125 "--device: a block device ($b) is refused (125)" "it is a block device" \
		"$BPFBOX" run -q --device "$b" -w "$WS" -- true
	break
done
expect_err 125 "--ro /dev: refused with a pointer to --device, not a failure at a mask" \
	"give single device nodes with --device" "$BPFBOX" run -q --ro /dev -w "$WS" -- true
if [ -c /dev/net/tun ]; then
	expect_err 125 "--ro /dev/net/tun: refused with a pointer to --device /dev/net/tun" \
		"grant it with --device /dev/net/tun" "$BPFBOX" run -q --ro /dev/net/tun -w "$WS" -- true
fi

# --- what a killed run leaves: its private home, swept by a later session's end --------
# A run killed by SIGKILL (a runtime's hard timeout, the OOM killer) cannot
# remove its home. Each home is flock'ed while its session lives; the
# helper that closes the next session's disk monitor removes, in the same
# $TMPDIR, every bpfbox-<32 hex>.home that is this user's (root's: anyone's,
# a --user session's home is that user's), unlocked and not modified for a
# minute (lib/closer.h closer_sweep). Nothing else: not a fresh one (made,
# not locked yet), not a locked one, not another user's (but root's), not
# another name, never through a symlink.
SW=$TMPD/sweep
mkdir -p "$SW/ws" "$SW/outside"
echo keep >"$SW/outside/file"
hid() { printf 'bpfbox-%s.home' "$1"; }
old() { touch -h -d '2 minutes ago' "$@"; }
# A run killed for real: its home is there after it.
TMPDIR=$SW "$BPFBOX" run -q --no-daemon -w "$SW/ws" -- sh -c 'touch started; exec sleep 30' \
	</dev/null >/dev/null 2>&1 &
KPID=$!
poll_until 10 test -e "$SW/ws/started"
KILLED=$(ls -d "$SW"/bpfbox-*.home 2>/dev/null | head -1)
kill -9 "$KPID"
wait "$KPID" 2>/dev/null
# Root: a --user session killed the same way leaves a home its user owns.
UKILLED=""
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	mkdir -p "$SW/uws" && chown nobody "$SW/uws"
	TMPDIR=$SW "$BPFBOX" run -q --no-daemon --user nobody -w "$SW/uws" -- sh -c 'touch started; exec sleep 30' \
		</dev/null >/dev/null 2>&1 &
	KPID=$!
	poll_until 10 test -e "$SW/uws/started"
	UKILLED=$(ls -d "$SW"/bpfbox-*.home 2>/dev/null | grep -v "^$KILLED\$" | head -1)
	kill -9 "$KPID"
	wait "$KPID" 2>/dev/null
	[ -n "$UKILLED" ] && poll_until 10 flock -n "$UKILLED" true
	[ -n "$UKILLED" ] && [ "$(stat -c %U "$UKILLED")" = nobody ] &&
		ok "a --user session's run killed by SIGKILL leaves a home its user owns" ||
		fail "a killed --user run's home: ${UKILLED:-none} ($(ls -l "$SW" | tr '\n' ' '))"
fi
# Its session dies with it (PDEATHSIG): then the home is unlocked.
[ -n "$KILLED" ] && poll_until 10 flock -n "$KILLED" true
if [ -n "$KILLED" ] && [ -d "$KILLED" ]; then
	ok "a run killed by SIGKILL leaves its private home ($(basename "$KILLED"))"
else
	fail "a killed run's home: none found under $SW ($(ls "$SW"))"
fi
STALE=$SW/$(hid 0123456789abcdef0123456789abcdef)
mkdir -p "$STALE/sub/deep"
echo x >"$STALE/sub/deep/f"
ln -s "$SW/outside" "$STALE/out"
ln -s "$SW/outside/file" "$STALE/sub/file"
FRESH=$SW/$(hid 1123456789abcdef0123456789abcdef)
LOCKED=$SW/$(hid 2123456789abcdef0123456789abcdef)
OTHER=$SW/$(hid 3123456789abcdef0123456789abcdef)
UPPER=$SW/$(hid 4123456789ABCDEF0123456789abcdef)
SHORT=$SW/$(hid 523456789abcdef0123456789abcdef)
LINK=$SW/$(hid 6123456789abcdef0123456789abcdef)
# Hidden for its removal (home.c session_home_hide) by a helper killed before it ended.
HIDDEN=$SW/.$(hid 7123456789abcdef0123456789abcdef)
mkdir -p "$FRESH" "$LOCKED" "$OTHER" "$UPPER" "$SHORT" "$HIDDEN/sub"
ln -s "$SW/outside" "$LINK"
[ "$(id -u)" = 0 ] && chown 65534 "$OTHER"
# Held as a session holds its home: flock on an fd of the directory.
(exec 9<"$LOCKED" && flock -x 9 && exec sleep 20) </dev/null >/dev/null 2>&1 &
LPID=$!
poll_until 10 sh -c '! flock -n "$1" true' sh "$LOCKED"
old "$STALE" "$LOCKED" "$OTHER" "$UPPER" "$SHORT" "$LINK" "$HIDDEN" ${KILLED:+"$KILLED"} ${UKILLED:+"$UKILLED"}
homes_before=$(ls "$SW" | grep -c '^bpfbox-.*\.home$')
TMPDIR=$SW "$BPFBOX" run -q --no-daemon -w "$SW/ws" -- true </dev/null >"$TMPD/sw.out" 2>"$TMPD/sw.err"
rc=$?
# Its own home is out of sight when it returns (renamed, removed by the helper after).
homes_after=$(ls "$SW" | grep -c '^bpfbox-.*\.home$')
# The helper goes on after bpfbox has returned: it holds an fd of $SW
# until its sweep has ended, so what it leaves is judged after that.
wait_gone 10 fd_on "$SW"
[ $rc = 0 ] && [ ! -e "$STALE" ] && [ -n "$KILLED" ] && [ ! -e "$KILLED" ] &&
	ok "a later session's end removes the killed run's home and an old unlocked one" ||
	fail "the sweep: exit $rc, left: $(ls "$SW" | tr '\n' ' ') $(oneline "$TMPD/sw.err" 200)"
# Each earlier home either swept or kept: none of this session's, under either name.
[ "$homes_after" -le "$homes_before" ] && [ ! -e "$HIDDEN" ] &&
	[ -z "$(ls -A "$SW" | grep '^\.bpfbox-')" ] &&
	ok "the session's own home is gone from its name when bpfbox returns and gone once its helper ends; a hidden old one is swept" ||
	fail "the session's own home: $homes_before homes before, $homes_after after its return; left: $(ls -A "$SW" | tr '\n' ' ')"
[ "$(cat "$SW/outside/file" 2>/dev/null)" = keep ] && [ -d "$SW/outside" ] &&
	ok "the sweep follows no symlink: what the stale home's links pointed to is intact" ||
	fail "the sweep went through a symlink: $(ls -la "$SW/outside" 2>&1 | tr '\n' ' ')"
[ -d "$FRESH" ] && ok "the sweep leaves a home modified within the minute (made, not locked yet)" ||
	fail "the sweep removed a fresh home"
[ -d "$LOCKED" ] && ok "the sweep leaves a locked home (its session still runs)" ||
	fail "the sweep removed a locked home"
[ -d "$UPPER" ] && [ -d "$SHORT" ] && ok "the sweep leaves other names (uppercase hex, 31 digits)" ||
	fail "the sweep removed a name that is not a session's home: $(ls "$SW" | tr '\n' ' ')"
[ -L "$LINK" ] && [ -d "$SW/outside" ] && ok "the sweep leaves a symlink named like a home, and its target" ||
	fail "the sweep removed a symlink named like a home or its target"
if [ "$(id -u)" = 0 ]; then
	[ ! -e "$OTHER" ] && { [ -z "$UKILLED" ] || [ ! -e "$UKILLED" ]; } &&
		ok "root's sweep removes another user's old unlocked home, and the killed --user run's" ||
		fail "root's sweep left another user's home: $(ls -l "$SW" | tr '\n' ' ')"
fi
kill "$LPID" 2>/dev/null
wait "$LPID" 2>/dev/null
# A session whose disk monitor cannot get an inotify instance (the uid's
# fs.inotify.max_user_instances reached) refuses before anything is made:
# 125 in one line, nothing ran, no home left (test_inotify.sh exhausts them
# for real).
if command -v strace >/dev/null 2>&1; then
	before=$(ls "$SW" | grep -c '^bpfbox-')
	TMPDIR=$SW strace -f -qq -o /dev/null -e trace=inotify_init1 -e inject=inotify_init1:error=EMFILE \
		env ASAN_OPTIONS=detect_leaks=0 "$BPFBOX" run -q --no-daemon --status-fd 3 -w "$SW/ws" -- touch "$SW/ws/ran" \
		</dev/null >"$TMPD/sw.out" 2>"$TMPD/sw.err" 3>"$TMPD/sw.st"
	rc=$?
	[ $rc = 125 ] && [ ! -e "$SW/ws/ran" ] && [ "$(ls "$SW" | grep -c '^bpfbox-')" = "$before" ] &&
		grep -q "cannot watch the session.s disk use (Too many open files).*fs.inotify.max_user_instances.*nothing ran" "$TMPD/sw.err" &&
		[ "$(grep -c . "$TMPD/sw.err")" = 1 ] &&
		ok "no inotify instance for the disk monitor: 125 in one line naming the sysctl, nothing ran, no home made" ||
		fail "no inotify instance: exit $rc, left: $(ls "$SW" | tr '\n' ' ') $(oneline "$TMPD/sw.err" 300)"
else
	skip "no inotify instance for the disk monitor: strace is needed to refuse inotify here (test_inotify.sh exhausts them for real)"
fi
# A home that could not be locked could be swept under its session: the
# run stops there, nothing ran, no home left (flock refused by strace).
if command -v strace >/dev/null 2>&1; then
	mkdir -p "$SW/nolock"
	TMPDIR=$SW/nolock strace -f -qq -e trace=flock -e inject=flock:error=ENOLCK -o "$TMPD/fl" \
		env ASAN_OPTIONS=detect_leaks=0 "$BPFBOX" run -q --no-daemon -w "$SW/ws" -- touch ran \
		</dev/null >"$TMPD/fl.out" 2>"$TMPD/fl.err"
	rc=$?
	[ $rc = 125 ] && [ ! -e "$SW/ws/ran" ] && [ -z "$(ls -A "$SW/nolock")" ] &&
		grep -q "cannot lock the session's private home.*nothing ran" "$TMPD/fl.err" &&
		ok "a private home that cannot be locked: 125, nothing ran, none left" ||
		fail "a home's lock refused: exit $rc, left: $(ls -A "$SW/nolock"), $(oneline "$TMPD/fl.err" 200)"
else
	skip "a private home that cannot be locked: needs strace (make deps installs it)"
fi
finish
