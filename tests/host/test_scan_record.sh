#!/bin/sh
# The credential scan's record of a large tree (userspace/sandbox/
# cred_record.c; docs/SECURITY.md, "Credential entries without BPF LSM"):
# the next session reads only the directories changed since, and every
# change that could bring a credential name into the tree is seen: a
# .env added (also with the directory's mtime set back), a directory
# holding a *.pem moved in, a hard link of a .env made under another name,
# a directory changed in the second before a scan (read again at the next,
# not taken from the record). A record that is not exactly bpfbox's (a
# byte changed, writable by others) is not used; BPFBOX_SCAN_RECORD=0
# turns it off. Each check reads the secret from the session: the kernel's
# refusal (the mask) is the effect asserted. Root, then uid 65534.

. "$(dirname "$0")/../lib.sh"
chmod 755 "$TMPD"
trap 'rm -rf "$TMPD"' EXIT INT TERM

if ! status_json | tr -d " \n" | grep -q '"session_namespaces":{"available":true'; then
	skip "the scan's record: no session namespaces here (masks need them); the VM matrix runs them"
	exit 0
fi

AS=""
PFX=""
# sbx [RUN OPTIONS] -- CMD...: a session with -v (the scan's line); $rc,
# $TMPD/out, $TMPD/err, $TMPD/scan (that line).
sbx() {
	$AS env BPFBOX_CHANGES_DIR="$SETS" "$BPFBOX" run -v --no-daemon --timeout 60 -w "$W" "$@" \
		</dev/null >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
	grep "credential scan of" "$TMPD/err" >"$TMPD/scan"
}
# scan_is KEPT READ: the last session's scan took KEPT directories from the
# record and read READ ("-" for any number).
scan_is() {
	grep -q "credential scan of [0-9]* entries: ${1#-}[0-9]* directories from its record, ${2#-}[0-9]* read" "$TMPD/scan"
}
no_secret() { ! grep -q SECRET- "$TMPD/out"; }

suite() {
	W=$1/ws
	SETS=$1/sets
	mkdir -p "$SETS"
	# 12 directories of 100 files: past the 1,024 entries a record needs;
	# and 520 of one file each: past the 512 directories whose checks a
	# second thread shares (cred_record.c), taking them from the last.
	python3 -c 'import os, sys
for a in range(12):
    d = "%s/d%d" % (sys.argv[1], a); os.makedirs(d)
    for c in range(100): open(d + "/f%d.txt" % c, "w").close()
for a in range(520):
    d = "%s/many/k%d" % (sys.argv[1], a); os.makedirs(d)
    open(d + "/f.txt", "w").close()' "$W"
	N=$(find "$W" -type d | wc -l)
	echo fine >"$W/d3/plain.txt"
	echo SECRET-a >"$W/d1/.env"
	[ -n "$AS" ] && chown -R 65534:65534 "$1"
	# The record trusts a directory whose ctime is a second older than the scan.
	sleep 1.2

	sbx -- cat d1/.env d3/plain.txt
	rec=$(ls -A "$SETS" | grep '^\.scan\.')
	mode=$(stat -c %a "$SETS/$rec" 2>/dev/null)
	if scan_is 0 "$N" && [ -n "$rec" ] && [ "$mode" = 600 ] && no_secret && grep -qx fine "$TMPD/out"; then
		ok "${PFX}the first scan reads the $N directories and writes the record (mode 600); .env masked, the plain file read"
	else
		fail "${PFX}first scan: exit $rc, record '$rec' mode $mode: $(oneline "$TMPD/scan") $(oneline "$TMPD/out")"
	fi
	sbx -- cat d1/.env d3/plain.txt
	THREADS=""
	[ "$(nproc)" -ge 2 ] && THREADS=", checked by 2 threads"
	if scan_is "$N" 0 && grep -q "in [0-9.]* ms$THREADS$" "$TMPD/scan" && no_secret && grep -qx fine "$TMPD/out"; then
		ok "${PFX}the next scan takes every directory from the record and reads none${THREADS:+ (2 threads)}; the .env it lists still masked"
	else
		fail "${PFX}second scan: exit $rc: $(oneline "$TMPD/scan") $(oneline "$TMPD/out") $(oneline "$TMPD/err")"
	fi

	# A .env added where the record says there was none: in one of the
	# first directories the walk checks, and one of the first the second
	# thread does.
	$AS sh -c "echo SECRET-new >'$W/d5/.env' && echo SECRET-last >'$W/many/k519/.env'"
	sbx -- cat d5/.env many/k519/.env
	if scan_is $((N - 2)) 2 && [ "$rc" != 0 ] && no_secret; then
		ok "${PFX}a .env added after the record in d5 and in many/k519: each directory read again, both masked"
	else
		fail "${PFX}added .env: exit $rc: $(oneline "$TMPD/scan") $(oneline "$TMPD/out")"
	fi
	# Changed less than a second before the last scan: read again, not trusted.
	sbx -- true
	if scan_is $((N - 2)) 2; then
		ok "${PFX}a directory changed in the second before a scan is read again at the next one"
	else
		fail "${PFX}unsettled directory taken from the record: $(oneline "$TMPD/scan")"
	fi

	# The directory's mtime set back after the .env: its ctime moved anyway.
	sleep 1.2
	sbx -- true
	$AS sh -c "echo SECRET-back >'$W/d7/.env.local' && touch -d @1000000000 '$W/d7'"
	sbx -- cat d7/.env.local
	if scan_is - - && [ "$rc" != 0 ] && no_secret; then
		ok "${PFX}a .env.local added and its directory's mtime set back: masked"
	else
		fail "${PFX}mtime set back: exit $rc: $(oneline "$TMPD/scan") $(oneline "$TMPD/out")"
	fi

	# A directory holding a key moved in from outside the tree.
	mkdir -p "$1/outside/keys"
	echo SECRET-pem >"$1/outside/keys/id.pem"
	[ -n "$AS" ] && chown -R 65534:65534 "$1/outside"
	$AS mv "$1/outside/keys" "$W/d9/keys"
	sbx -- cat d9/keys/id.pem
	if [ "$rc" != 0 ] && no_secret; then
		ok "${PFX}a directory holding id.pem moved into a recorded directory: masked"
	else
		fail "${PFX}moved-in directory: exit $rc: $(oneline "$TMPD/scan") $(oneline "$TMPD/out")"
	fi

	# Another name of a recorded .env (a hard link): the second walk finds it.
	sleep 1.2
	sbx -- true
	$AS ln "$W/d1/.env" "$W/d2/notes.txt"
	sbx -- cat d2/notes.txt
	if [ "$rc" != 0 ] && no_secret; then
		ok "${PFX}a hard link of the recorded .env under another name: masked too"
	else
		fail "${PFX}hard link: exit $rc: $(oneline "$TMPD/scan") $(oneline "$TMPD/out")"
	fi
	$AS rm -f "$W/d2/notes.txt"

	# A record changed by a byte, or writable by others: not used.
	sleep 1.2
	sbx -- true
	sbx -- true
	scan_is - 0 || fail "${PFX}record not in use before the tampering: $(oneline "$TMPD/scan")"
	python3 -c 'import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[40] ^= 1; open(p, "wb").write(b)' "$SETS/$rec"
	sbx -- cat d1/.env
	if scan_is 0 - && no_secret; then
		ok "${PFX}a record with a byte changed is not used: every directory read"
	else
		fail "${PFX}changed record: $(oneline "$TMPD/scan") $(oneline "$TMPD/out")"
	fi
	chmod 666 "$SETS/$rec"
	sbx -- true
	if scan_is 0 -; then
		ok "${PFX}a record writable by others is not used"
	else
		fail "${PFX}record mode 666: $(oneline "$TMPD/scan")"
	fi
	$AS env BPFBOX_SCAN_RECORD=0 BPFBOX_CHANGES_DIR="$SETS" "$BPFBOX" run -v --no-daemon -w "$W" -- true \
		</dev/null >/dev/null 2>"$TMPD/err"
	if ! grep -q "credential scan of" "$TMPD/err" && grep -q "^bpfbox: session" "$TMPD/err"; then
		ok "${PFX}BPFBOX_SCAN_RECORD=0: no record read or written"
	else
		fail "${PFX}BPFBOX_SCAN_RECORD=0: $(oneline "$TMPD/err")"
	fi
}

suite "$TMPD/root"

if [ "$(id -u)" != 0 ]; then
	skip "unprivileged repeat: already running as uid $(id -u)"
elif ! command -v setpriv >/dev/null 2>&1; then
	skip "unprivileged repeat: no setpriv on this system"
else
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
	PFX="unprivileged: "
	mkdir -p "$TMPD/nb"
	chown 65534:65534 "$TMPD/nb"
	suite "$TMPD/nb"
fi

exit $((FAILS > 0))
