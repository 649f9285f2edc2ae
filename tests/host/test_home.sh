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
finish
