#!/bin/sh
# Credential masks (docs/SECURITY.md, "Credential entries without BPF LSM"):
# every deny pattern, two-component ones included (.kube/config,
# .docker/config.json, .config/gcloud), applies under every grant whichever
# component it starts at (--ro and --rw of ~/.kube, ~/.config, ~ ...); and a
# workspace with .env or *.pem at its top (or below) stays usable: ls,
# touch, mkdir, git init, appending to .gitignore, while the credential
# files stay unreadable by every route tried (cat, cp, the directory's fd
# in /proc, a hard link made before the session, one made in it, renaming
# or unlinking the mask, renaming its directory). With namespaces each is
# masked by a mount (ns_mount.c); what the start scan's bounds leave
# unchecked is said on stderr and in session.start's not_enforced. Root,
# then as uid 65534 through setpriv.

. "$(dirname "$0")/../lib.sh"
chmod 755 "$TMPD" # the unprivileged pass goes through it
# Besides /tmp (the session's own tmpfs, where a grant put back gets the
# tmpfs's wider Landlock rule), a host dir the view shows as it is: there
# Landlock's rule is the workspace's own, as for a project in /work or ~.
OUTSIDE=$(mktemp -d /var/lib/bpfbox-masks.XXXXXX 2>/dev/null) || OUTSIDE=""
[ -n "$OUTSIDE" ] && chmod 755 "$OUTSIDE"
trap 'rm -rf "$TMPD" ${OUTSIDE:+"$OUTSIDE"}' EXIT INT TERM

AS=""
PFX=""
# sbx [RUN OPTIONS] -- CMD...: a session; $rc, $TMPD/out, $TMPD/err.
sbx() {
	$AS "$BPFBOX" run -q --timeout 60 "$@" </dev/null >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
}

# no_secret NAME: no SECRET- marker in the session's output.
no_secret() {
	if grep -q SECRET- "$TMPD/out"; then
		fail "$PFX$1: read: $(grep SECRET- "$TMPD/out" | tr '\n' ' ')"
		return 1
	fi
	return 0
}

# has WORD FILE: a line of FILE is WORD (a marker the session printed).
has() { grep -qx -- "$1" "$2"; }

if ! status_json | tr -d " \n" | grep -q '"session_namespaces":{"available":true'; then
	NS_OK=false
else
	NS_OK=true
fi

# --- A. a grant of a credential directory, or of a parent of one ---------------
# make_home DIR: the fixture home: a secret in each credential entry, a
# plain file beside it.
make_home() {
	mkdir -p "$1/.kube" "$1/.config/gcloud" "$1/.docker" "$1/.ssh" "$1/.aws"
	echo SECRET-kube >"$1/.kube/config"
	echo fine-kube >"$1/.kube/cache-note"
	echo SECRET-gcloud >"$1/.config/gcloud/credentials.db"
	echo fine-config >"$1/.config/other.conf"
	echo SECRET-docker >"$1/.docker/config.json"
	echo fine-docker >"$1/.docker/daemon-note"
	echo SECRET-ssh >"$1/.ssh/id_ed25519"
	echo SECRET-known-hosts >"$1/.ssh/known_hosts"
	echo SECRET-aws >"$1/.aws/credentials"
	echo fine-home >"$1/notes"
}

# grants H WS: each grant of a credential dir or a parent, --ro and --rw.
grants() {
	H=$1
	for flag in --ro --rw; do
		for g in .kube .config/gcloud .docker .config . .ssh .aws; do
			G=$H/$g
			[ "$g" = . ] && G=$H g=""
			# The plain file of the grant, if it has one: readable (the control).
			case ${g:-.} in
			.kube) fine=$G/cache-note want=fine-kube ;;
			.docker) fine=$G/daemon-note want=fine-docker ;;
			.config) fine=$G/other.conf want=fine-config ;;
			.) fine=$G/notes want=fine-home ;;
			*) fine="" want="" ;;
			esac
			name="$flag ~/$g: the credential files in it unreadable"
			sbx -w "$2" "$flag" "$G" -- sh -c '
				FINE=$1 G=$2 FLAG=$3
				shift 3
				for f in "$@"; do cat "$f"; done
				echo RAN
				[ -n "$FINE" ] && cat "$FINE" && ls "$G" >/dev/null && echo LISTED
				[ -n "$FINE" ] && [ "$FLAG" = --rw ] && touch "$G/made-here" && echo WROTE
				true' sh "$fine" "$G" "$flag" "$H/.kube/config" "$H/.config/gcloud/credentials.db" \
				"$H/.docker/config.json" "$H/.ssh/id_ed25519" "$H/.ssh/known_hosts" \
				"$H/.aws/credentials"
			no_secret "$name" || continue
			if ! has RAN "$TMPD/out"; then
				fail "$PFX$name: the session did not run: exit $rc: $(oneline "$TMPD/err")"
			elif [ -n "$want" ] && ! { has "$want" "$TMPD/out" && has LISTED "$TMPD/out"; }; then
				fail "$PFX$name: the rest of the grant is not usable: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
			elif [ -n "$want" ] && [ $flag = --rw ] && ! { has WROTE "$TMPD/out" && [ -e "$G/made-here" ]; }; then
				fail "$PFX$name: a new file in the --rw grant was not made: $(oneline "$TMPD/err")"
			else
				ok "$PFX$name${want:+, the rest usable}"
			fi
			rm -f "$G/made-here"
		done
	done
}

# --- B. a workspace with credential files at its top and one level down --------
make_ws() {
	mkdir -p "$1/sub"
	echo SECRET-env-top >"$1/.env"
	echo SECRET-pem-top >"$1/key.pem"
	echo SECRET-env-sub >"$1/sub/.env"
	echo SECRET-pem-sub >"$1/sub/key.pem"
	echo node_modules >"$1/.gitignore"
	# A package's CA bundle: public, a *.pem no pattern masks.
	mkdir -p "$1/sub/certifi"
	echo PUBLIC-CA >"$1/sub/certifi/cacert.pem"
	# Another name of the top .env, made before the session.
	ln "$1/.env" "$1/notes-link"
}

# workspace WS [RUN OPTIONS]: the workspace usable, its credential files
# not readable (with --changes apply: through the set's overlay, applied).
workspace() {
	W=$1
	shift
	sbx -w "$W" "$@" -- sh -c '
		ls -a >/dev/null && ls sub >/dev/null && echo LS-OK
		touch newfile && echo TOUCH-OK
		mkdir d && echo MKDIR-OK
		if command -v git >/dev/null; then git init -q && echo GIT-OK; else echo GIT-OK; fi
		echo added >>.gitignore && echo APPEND-OK
		cat .env; cat key.pem; cat sub/.env; cat sub/key.pem; echo CAT-TRIED
		cat sub/certifi/cacert.pem
		cat notes-link; echo OLDLINK-TRIED
		cp .env copied 2>/dev/null; cat copied 2>/dev/null; echo CP-TRIED
		exec 3<.
		cat /proc/self/fd/3/.env; echo PROCFD-TRIED
		mv .env moved-env 2>>rename.err; mv sub/key.pem sub/moved 2>>rename.err; echo RENAME-TRIED
		rm -f .env 2>>unlink.err; rm -f sub/.env 2>>unlink.err; echo UNLINK-TRIED
		ln .env newlink 2>/dev/null; cat newlink 2>/dev/null; echo LINK-TRIED
		mv sub sub2 && cat sub2/.env; mv sub2 sub; echo PARENT-TRIED
		cat .env rename.err unlink.err 2>/dev/null | tr "\n" " "; echo
		true'
	if ! has PARENT-TRIED "$TMPD/out"; then
		fail "${PFX}the session's attempts did not all run: exit $rc: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
	elif no_secret "a workspace with .env and key.pem: no route reads them"; then
		ok "$PFX.env and *.pem at the top and below: cat, cp, /proc/self/fd of the dir, a hard link made before, one made in the session, the parent renamed: none reads them"
	fi
	if has PUBLIC-CA "$TMPD/out"; then
		ok "${PFX}a package's CA bundle (certifi/cacert.pem) is readable: public, not masked as a *.pem"
	else
		fail "${PFX}certifi/cacert.pem not readable: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
	fi
	for m in LS TOUCH MKDIR GIT APPEND; do
		if has "$m-OK" "$TMPD/out"; then
			ok "$PFX.env at the top: $m works"
		else
			fail "$PFX.env at the top: $m fails: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
		fi
	done
	[ -e "$W/newfile" ] && [ -d "$W/d" ] && grep -qx added "$W/.gitignore" &&
		ok "${PFX}the new file, directory and .gitignore line are in the workspace" ||
		fail "${PFX}the workspace's changes are not there: $(ls -a "$W" | tr '\n' ' ')"
	if has UNLINK-TRIED "$TMPD/out" && grep -qi busy "$W/rename.err" && grep -qi busy "$W/unlink.err" &&
		[ "$(cat "$W/.env")" = SECRET-env-top ] && [ "$(cat "$W/sub/.env")" = SECRET-env-sub ] &&
		[ "$(cat "$W/sub/key.pem")" = SECRET-pem-sub ] && [ ! -e "$W/moved-env" ] &&
		[ ! -e "$W/sub/moved" ] && [ ! -e "$W/newlink" ]; then
		ok "${PFX}rename and unlink of a masked file fail (EBUSY), a link to it fails, the files are intact"
	else
		fail "${PFX}rename/unlink/link of a masked file: $(cat "$W/rename.err" "$W/unlink.err" 2>/dev/null | tr '\n' ' ') $(ls -a "$W" "$W/sub" | tr '\n' ' ')"
	fi
	rm -rf "$W/newfile" "$W/d" "$W/.git" "$W/copied" "$W/rename.err" "$W/unlink.err"
}

# notes WS: a .env past the depth bound is said on stderr and, as root
# with the BPF audit, in session.start's not_enforced.
notes() {
	D=$1/deep
	i=0
	while [ $i -lt 34 ]; do
		D=$D/d
		i=$((i + 1))
	done
	mkdir -p "$D"
	echo SECRET-deep >"$D/.env"
	sbx -w "$1" -- sh -c "cat $D/.env; ls $1/deep >/dev/null && echo LISTED"
	grep -q "not enforced on this host: .*credential scan at start: directories hidden whole past the depth bound, from $1/deep/" "$TMPD/err" &&
		has LISTED "$TMPD/out" && no_secret "past the depth bound" &&
		ok "${PFX}a .env past the scan's depth bound: its directory hidden whole, said on stderr" ||
		fail "${PFX}the depth bound: exit $rc: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
	# Another name of a credential file outside the walked trees: said.
	echo SECRET-linked >"$1/linked.pem"
	ln "$1/linked.pem" "$1/../outside-name"
	sbx -w "$1" -- true
	grep -q "1 other hard link(s) of $1/linked.pem outside the scanned trees not masked" "$TMPD/err" &&
		ok "${PFX}a hard link of a credential file outside the walked trees is said on stderr" ||
		fail "${PFX}the outside hard link not said: exit $rc: $(oneline "$TMPD/err")"
	rm -f "$1/../outside-name"
	if [ -z "$AS" ] && [ "$(id -u)" = 0 ]; then
		sbx --no-daemon --audit "$TMPD/audit.jsonl" -w "$1" -- true
		grep '"session.start"' "$TMPD/audit.jsonl" 2>/dev/null | grep -q '"not_enforced":\[[^]]*hidden whole past the depth bound' &&
			ok "${PFX}the depth bound's hidden directory is said in session.start's not_enforced" ||
			fail "${PFX}session.start's not_enforced: exit $rc: $(grep session.start "$TMPD/audit.jsonl" | head -c 600) $(oneline "$TMPD/err")"
	fi
	rm -rf "$1/deep" "$1/linked.pem"
}

# inside DIR: a workspace that is itself a credential entry is refused.
inside() {
	mkdir -p "$1/secrets"
	[ -n "$AS" ] && chown 65534:65534 "$1/secrets"
	sbx -w "$1/secrets" -- sh -c 'echo RAN'
	if [ "$rc" = 125 ] && ! has RAN "$TMPD/out" && grep -q "inside a credential path" "$TMPD/err"; then
		ok "${PFX}a workspace inside a credential path (.../secrets) is refused, nothing ran"
	else
		fail "${PFX}workspace .../secrets: exit $rc: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
	fi
}

# race DIR: another session on the same workspace renames the directory
# of a masked file, and puts a decoy in its place, between this session's
# start scan and its masks (the child's first mount call held 5 s by
# strace, the swap made once the child exists): the set-up must fail
# rather than mask the decoy and show the moved file.
race() {
	rdir=$1
	shift
	if [ -n "$AS" ] || ! command -v strace >/dev/null 2>&1; then
		skip "${PFX}a swap between the scan and the masks: needs strace as root${AS:+ (the root pass runs it)}"
		return
	fi
	mkdir -p "$rdir/race/sub"
	echo SECRET-race >"$rdir/race/sub/.env"
	rm -f "$TMPD"/st.*
	# (LeakSanitizer's exit check needs ptrace, which strace holds: off here.)
	ASAN_OPTIONS=detect_leaks=0 strace -f -ff -o "$TMPD/st" -e trace=mount_setattr -e inject=mount_setattr:delay_enter=5000000:when=1 \
		"$BPFBOX" run -q --no-daemon -w "$rdir/race" "$@" -- sh -c 'cat sub/.env sub2/.env' \
		</dev/null >"$TMPD/out" 2>"$TMPD/err" &
	spid=$!
	if poll_until 20 sh -c '[ "$(ls "$1"/st.* 2>/dev/null | wc -l)" -ge 2 ]' sh "$TMPD"; then
		mv "$rdir/race/sub" "$rdir/race/sub2" && mkdir "$rdir/race/sub" && echo decoy >"$rdir/race/sub/.env"
	fi
	wait "$spid"
	rc=$?
	if [ "$rc" = 125 ] && grep -q "at $rdir/race/sub/.env: Stale file handle" "$TMPD/err" &&
		! grep -q SECRET- "$TMPD/out"; then
		ok "${PFX}a masked file's directory swapped before the mask: the set-up fails (ESTALE), nothing shown"
	else
		fail "${PFX}swap before the mask: exit $rc: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
	fi
	rm -rf "$rdir/race"
}

# unreadable DIR: a credential file in a directory its owner made
# unreadable (mode 0) before the session: the scan cannot list it as uid
# 65534, and the session could chmod it back; masked whole, it cannot.
unreadable() {
	mkdir -p "$1/ur/hide/sub"
	echo SECRET-unreadable >"$1/ur/hide/sub/.env"
	[ -n "$AS" ] && chown -R 65534:65534 "$1/ur"
	chmod 0 "$1/ur/hide"
	sbx -w "$1/ur" -- sh -c 'chmod 755 hide; cat hide/sub/.env; echo RAN'
	if has RAN "$TMPD/out" && ! grep -q SECRET- "$TMPD/out"; then
		ok "${PFX}a .env in a directory made unreadable before the session: chmod back and read fails"
	else
		fail "${PFX}unreadable directory: exit $rc: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
	fi
	chmod 755 "$1/ur/hide"
	rm -rf "$1/ur"
}

# cap DIR: more credential-named files than masks (decoys a session could
# make to push a real one past the cap): refused, nothing ran.
cap() {
	mkdir -p "$1/cap/many"
	(cd "$1/cap/many" && i=0 && while [ $i -le 4096 ]; do : >"d$i.pem"; i=$((i + 1)); done)
	[ -n "$AS" ] && chown -R 65534:65534 "$1/cap"
	sbx -w "$1/cap" -- sh -c 'echo RAN'
	if [ "$rc" = 125 ] && ! has RAN "$TMPD/out" && grep -q "more than 4096 credential entries" "$TMPD/err"; then
		ok "${PFX}more credential files than masks (4097 *.pem): refused, nothing ran"
	else
		fail "${PFX}4097 *.pem: exit $rc: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
	fi
	rm -rf "$1/cap"
}

# no_ns WS: without namespaces the workspace is granted whole, and said.
no_ns() {
	sbx --no-namespaces -w "$1" -- sh -c 'ls >/dev/null && touch newfile && mkdir d && echo USABLE'
	if has USABLE "$TMPD/out" && grep -q "not enforced on this host: .*credential patterns in the workspace" "$TMPD/err"; then
		ok "$PFX--no-namespaces: the workspace with .env at its top is usable, and the unmasked credentials are said"
	else
		fail "$PFX--no-namespaces: exit $rc: $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
	fi
	rm -rf "$1/newfile" "$1/d"
}

suite() {
	make_home "$1/home"
	make_ws "$1/ws"
	mkdir -p "$1/ws-a"
	[ -n "$AS" ] && chown -R 65534:65534 "$1"
	if $NS_OK; then
		grants "$1/home" "$1/ws-a"
		workspace "$1/ws"
		# The same under a change set: the masks go on the set's overlay,
		# each checked in the workspace beneath it (ns_mask.c).
		make_ws "$1/wsc"
		mkdir -p "$1/sets"
		[ -n "$AS" ] && chown -R 65534:65534 "$1/wsc" "$1/sets"
		PFX0=$PFX PFX="$PFX(--changes apply) "
		export BPFBOX_CHANGES_DIR="$1/sets"
		workspace "$1/wsc" --changes apply
		race "$1" --changes review
		unset BPFBOX_CHANGES_DIR
		PFX=$PFX0
		notes "$1/ws-a"
		race "$1"
		unreadable "$1"
		[ -z "$AS" ] && cap "$1"
	else
		skip "${PFX}masks: no session namespaces here; the VM matrix runs them"
	fi
	no_ns "$1/ws"
	inside "$1"
}

[ -n "$OUTSIDE" ] || skip "the cases outside /tmp: no dir of ours in /var/lib as uid $(id -u); root runs them"
for base in "$TMPD" $OUTSIDE; do
	PFX=""
	[ "$base" = "$OUTSIDE" ] && PFX="(outside /tmp) "
	suite "$base/root"
done

if [ "$(id -u)" != 0 ]; then
	skip "unprivileged repeat: already running as uid $(id -u)"
elif ! command -v setpriv >/dev/null 2>&1; then
	skip "unprivileged repeat: no setpriv on this system"
else
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
	for base in "$TMPD" $OUTSIDE; do
		PFX="unprivileged: "
		[ "$base" = "$OUTSIDE" ] && PFX="unprivileged: (outside /tmp) "
		suite "$base/nb"
	done
fi

exit $((FAILS > 0))
