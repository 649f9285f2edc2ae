# The private home (userspace/sandbox/home.c): what of the caller's home a
# session sees. Its git config is written anew from an allowlist (identity
# only): no secret of the caller's gitconfig reaches it, git still finds
# the user. Per-user toolchains (rustup/cargo, nvm, pyenv, sdkman, Go, uv,
# pipx) are found read-only at their usual paths, nothing else of the home.
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
touch "$HOME/.cargo/bin/new" "$GOPATH/pkg/mod/new" 2>/dev/null
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
		uv-tool pipx-venv rustup_home=unset done; do
		grep -qx -- "$want" "$TMPD/tc.out" || problem="$problem; no '$want'"
	done
	grep -qx 'ls=.cargo .local .nvm .pyenv .rustup .sdkman go ' "$TMPD/tc.out" ||
		problem="$problem; the home holds $(grep '^ls=' "$TMPD/tc.out")"
	[ "$rc" = 0 ] && [ -z "$problem" ] &&
		ok "$what: cargo (rustup), nvm, pyenv, sdkman, Go, uv, pipx found at their usual paths, their variables set" ||
		fail "$what: rc $rc$problem: $(oneline "$TMPD/tc.out") $(oneline "$TMPD/tc.err" 300)"
	grep -q 'PRIVATE-KEY\|OTHER-FILE' "$TMPD/tc.out" &&
		fail "$what: the rest of the home was readable: $(oneline "$TMPD/tc.out")" ||
		ok "$what: ~/.ssh and ~/other are not readable, nor in the private home"
	[ ! -e "$FT/.cargo/bin/new" ] && [ ! -e "$FT/go/pkg/mod/new" ] &&
		ok "$what: the trees are read-only (a write to ~/.cargo or the Go module cache fails)" ||
		fail "$what: a toolchain tree was written"
	rm -f "$FT/.cargo/bin/new" "$FT/go/pkg/mod/new"
done
# RUSTUP_HOME set by the caller: passed on, its tree granted.
mv "$FT/.rustup" "$TMPD/rustup-elsewhere"
env -u CARGO_HOME -u NVM_DIR -u PYENV_ROOT -u SDKMAN_DIR -u GOPATH RUSTUP_HOME="$TMPD/rustup-elsewhere" \
	HOME="$FT" PATH="$FT/.cargo/bin:/usr/bin:/bin" "$BPFBOX" run -q -w "$WS" -- \
	sh -c 'cargo build; echo "rustup_home=$RUSTUP_HOME"' >"$TMPD/tc2.out" 2>"$TMPD/tc2.err"
grep -qx 'cargo-fake build' "$TMPD/tc2.out" && grep -qx "rustup_home=$TMPD/rustup-elsewhere" "$TMPD/tc2.out" &&
	ok "toolchains: the caller's RUSTUP_HOME is passed on and its tree granted read-only" ||
	fail "toolchains: RUSTUP_HOME: $(oneline "$TMPD/tc2.out") $(oneline "$TMPD/tc2.err" 300)"
finish
