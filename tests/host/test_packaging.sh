#!/bin/sh
# Packaging: the Debian package built from a copy of the tree (the repo gets
# no build droppings) and installed into a scratch root, its systemd unit
# (systemd-analyze verify, and the daemon run with exactly the unit's
# capabilities), the man pages (lint, and one per command and option), the
# bash completion, and tools/install.sh install + uninstall.
. "$(dirname "$0")/../lib.sh"

D=$(cd "$TMPD" && pwd -P)
chmod 755 "$D" # an unprivileged client below must reach the daemon's socket

DPID= NPID= PIN= PARENT= SOCK= R=
cleanup() {
	# --cleanup refuses while a daemon still answers: reap ours first.
	[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -n "$NPID" ] && kill "$NPID" 2>/dev/null
	[ -n "$PIN" ] && "$R/usr/bin/bpfbox" daemon --cleanup --socket "$SOCK" --pin-dir "$PIN" \
		--cgroup-parent "$PARENT" >/dev/null 2>&1
	rm -rf "$TMPD"
}
trap cleanup EXIT INT TERM

missing=
for t in dpkg-buildpackage dh scdoc mandoc systemd-analyze lintian bash python3; do
	command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
done
if [ -n "$missing" ]; then
	fail "packaging: missing tools:$missing; run 'make deps'"
	finish
	exit $?
fi

# --- the package, built in a copy of the tree -------------------------------
# The files git knows (tracked or not ignored) that exist, but build trees:
# the tree as it would be committed. Without git, all but build trees.
SRC="$D/pkg/bpfbox"
mkdir -p "$SRC"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$ROOT" && git ls-files -co --exclude-standard | while IFS= read -r f; do
		case "$f" in build*/*) continue ;; esac
		[ -f "$f" ] && printf '%s\n' "$f"
	done | tar -cf - -T -) | tar -C "$SRC" -xf -
	REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
else
	(cd "$ROOT" && tar -cf - --exclude='./build*' .) | tar -C "$SRC" -xf -
	REV=unknown
fi
droppings() {
	for f in debian/.debhelper debian/bpfbox debian/files debian/debhelper-build-stamp \
		debian/bpfbox.substvars debian/bpfbox.debhelper.log build-stamp; do
		[ -e "$ROOT/$f" ] && echo "$f"
	done
	ls "$ROOT/.." 2>/dev/null | grep -E '^bpfbox(-dbgsym)?_.*\.(deb|changes|buildinfo)$'
}
before=$(droppings)
start=$(date +%s)
# Nothing of the caller's make (make test BUILD=..., -j) reaches that build.
if (cd "$SRC" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD BPFBOX_GIT_REV=$REV \
	DEB_BUILD_OPTIONS="parallel=$(nproc) nocheck" dpkg-buildpackage -us -uc -b) \
	>"$D/build.log" 2>&1; then
	ok "dpkg-buildpackage -us -uc -b ($(($(date +%s) - start)) s)"
else
	fail "dpkg-buildpackage: $(grep -E 'error|Unmet|dpkg-' "$D/build.log" | tail -5)"
	finish
	exit $?
fi
[ "$(droppings)" = "$before" ] && ok "the repo got no build droppings" ||
	fail "build droppings in the repo: $(droppings)"
DEB=$(ls "$D"/pkg/bpfbox_*.deb 2>/dev/null | head -1)
[ -f "$DEB" ] && ok "the .deb is there: $(basename "$DEB")" || fail "no .deb in $D/pkg"
# The libraries the Makefile links statically must be build dependencies
# (debian/rules names them in Built-Using by itself).
static=$(sed -n 's/^LDLIBS *:= *-Wl,-Bstatic \(.*\) -Wl,-Bdynamic.*/\1/p' "$SRC/Makefile")
missing=
for l in $static; do
	a=$(realpath "$(${CC:-cc} -print-file-name="lib${l#-l}.a")")
	p=$(dpkg -S "$a" 2>/dev/null | cut -d: -f1 | head -1)
	if [ -z "$p" ]; then
		missing="$missing (no package has $a)"
	elif ! grep -q "^ *$p,\?\$" "$SRC/debian/control"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && ok "debian/control builds on every static library: $static" ||
	fail "add to Build-Depends in debian/control:$missing"
bu=$(dpkg-deb -f "$DEB" Built-Using)
case "$bu" in
*libbpf*zlib*) [ "$(echo "$bu" | tr ',' '\n' | wc -l)" -le $(($(echo $static | wc -w) + 1)) ] ;;
*) false ;;
esac && ok "Built-Using names the static libraries: $bu" ||
	fail "Built-Using: $(echo "$bu" | head -c 300)"

# lintian: errors fail, warnings are listed.
lintian --tag-display-limit 0 "$D"/pkg/bpfbox_*.changes >"$D/lintian" 2>&1
grep -E '^[EW]: ' "$D/lintian" | sed 's/^/  lintian: /'
if grep -q '^E: ' "$D/lintian"; then
	fail "lintian errors: $(grep '^E: ' "$D/lintian" | head -3)"
else
	ok "lintian: no errors ($(grep -c '^W: ' "$D/lintian") warnings)"
fi

# --- installed into a scratch root -------------------------------------------
# dpkg runs the maintainer scripts without chroot (DPKG_ROOT): the group is
# made by systemd-sysusers --root, the unit enabled by deb-systemd-helper.
R="$D/root"
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/etc"
: >"$R/var/lib/dpkg/status"
echo 'root:x:0:' >"$R/etc/group"
echo 'root:x:0:0:root:/root:/bin/sh' >"$R/etc/passwd"
DPKG="dpkg --root=$R --force-script-chrootless --force-depends --force-not-root"
expect_rc 0 "dpkg -i into a scratch root" $DPKG -i "$DEB"
missing=
for f in usr/bin/bpfbox etc/bpfbox/config.json etc/logrotate.d/bpfbox \
	lib/systemd/system/bpfbox.service usr/lib/sysusers.d/bpfbox.conf \
	usr/share/bash-completion/completions/bpfbox usr/share/man/man1/bpfbox.1.gz \
	usr/share/man/man5/bpfbox.json.5.gz usr/share/doc/bpfbox/copyright; do
	[ -f "$R/$f" ] || missing="$missing /$f"
done
[ -z "$missing" ] && ok "package: binary, config, unit, sysusers, completion, man pages, copyright" ||
	fail "package: missing$missing"
for s in "$ROOT"/schema/*.json; do
	[ -e "$s" ] || continue
	cmp -s "$s" "$R/usr/share/bpfbox/schema/$(basename "$s")" &&
		ok "package: schema $(basename "$s")" || fail "package: schema $(basename "$s") missing"
done
grep -qx /etc/bpfbox/config.json "$R/var/lib/dpkg/info/bpfbox.conffiles" 2>/dev/null &&
	ok "the config is a conffile" || fail "/etc/bpfbox/config.json is not a conffile"
grep -q '^bpfbox:' "$R/etc/group" && ok "postinst made the bpfbox group" ||
	fail "no bpfbox group in the scratch root's /etc/group"
[ "$(systemctl --root="$R" is-enabled bpfbox.service 2>&1)" = enabled ] &&
	ok "bpfbox.service is enabled" ||
	fail "bpfbox.service: $(systemctl --root="$R" is-enabled bpfbox.service 2>&1)"

B="$R/usr/bin/bpfbox"
VERSION=$(sed -n '1s/^bpfbox (\([^)]*\)).*/\1/p' "$ROOT/debian/changelog")
expect_rc 0 "packaged bpfbox --version" "$B" --version
expect_grep "^bpfbox ${VERSION%%-*} \\(git $REV\\)" "$D/out" "--version names the version and git rev"
expect_grep "libbpf .*libseccomp .*json-c " "$D/out" "--version names the libraries"
expect_rc 0 "packaged bpfbox status" "$B" status
expect_grep "Full|Standard|Minimal|None" "$D/out" "status prints a level"
mkdir -p "$D/ws"
expect_rc 0 "the shipped config is valid" "$B" policy check --config "$R/etc/bpfbox/config.json" \
	-w "$D/ws"
command -v logrotate >/dev/null 2>&1 && expect_rc 0 "logrotate accepts the config" \
	logrotate -d "$R/etc/logrotate.d/bpfbox"

# --- the unit -------------------------------------------------------------------
UNIT="$R/lib/systemd/system/bpfbox.service"
sed "s|/usr/bin/bpfbox|$B|g" "$UNIT" >"$D/bpfbox.service"
MANPATH="$R/usr/share/man" systemd-analyze verify "$D/bpfbox.service" >"$D/verify" 2>&1
rc=$?
if [ $rc = 0 ] && [ ! -s "$D/verify" ]; then
	ok "systemd-analyze verify bpfbox.service: clean"
else
	fail "systemd-analyze verify: exit $rc: $(head -c 400 "$D/verify")"
fi
expect_grep '^Type=notify$' "$UNIT" "unit: Type=notify"
expect_grep '^KillMode=process$' "$UNIT" "unit: KillMode=process (sessions outlive the daemon)"
expect_grep '^RuntimeDirectory=bpfbox$' "$UNIT" "unit: RuntimeDirectory=bpfbox"
# verify cannot see this one: ProtectKernelTunables=yes makes /sys/fs/bpf
# read-only whatever ReadWritePaths says, and the daemon cannot pin
# (found under systemd 252 by packaging/vm-systemd-test.sh).
grep -Eq '^ProtectKernelTunables=(yes|true|on|1)' "$UNIT" &&
	fail "unit: ProtectKernelTunables=yes makes /sys/fs/bpf read-only; see the unit's comment" ||
	ok "unit: /sys/fs/bpf stays writable (no ProtectKernelTunables)"

# --- man pages ------------------------------------------------------------------
for p in "$R"/usr/share/man/man*/*.gz; do
	n=$(basename "$p" .gz)
	# scdoc puts a paragraph macro after every heading: mandoc's warning about
	# it is noise, anything else is a finding.
	mandoc -T lint -W warning "$p" 2>&1 |
		grep -v -e 'skipping paragraph macro' -e 'lower case character in document title' \
			>"$D/lint"
	LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p" 2>>"$D/lint" >"$D/page"
	if [ -s "$D/lint" ]; then
		fail "man $n: $(head -c 300 "$D/lint")"
	elif [ "$(wc -l <"$D/page")" -lt 15 ]; then
		fail "man $n renders to $(wc -l <"$D/page") lines"
	else
		ok "man $n: lint clean"
	fi
done
# One page per command, naming every option its --help prints.
CMDS=$("$B" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$CMDS" ] || fail "no commands in 'bpfbox --help'"
for c in $CMDS; do
	[ "$c" = version ] && continue
	page="$R/usr/share/man/man1/bpfbox-$c.1.gz"
	if [ ! -f "$page" ]; then
		fail "man: no page for 'bpfbox $c': write man/bpfbox-$c.1.scd (start from" \
			"man/bpfbox-sessions.1.scd) and list it in man/bpfbox.1.scd"
		continue
	fi
	zcat "$R/usr/share/man/man1/bpfbox.1.gz" | grep -q "bpfbox-$c" ||
		fail "man bpfbox(1) does not list bpfbox-$c(1)"
	sub=
	[ "$c" = policy ] && sub=check
	# The option column of --help, and the options its usage lines show.
	"$B" $c $sub --help >"$D/help" 2>/dev/null
	opts=$({
		grep -E '^ +-' "$D/help" | sed 's/^ *//; s/  .*//'
		grep -E '^usage:|^ +\[' "$D/help" | tr '[]|' '   '
	} | grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z0-9-]*' | tr -d ' ,' | sort -u)
	missing=
	for o in $opts; do
		zcat "$page" | grep -qE -- "(^|[^a-z-])$o([^a-z0-9-]|\$)" || missing="$missing $o"
	done
	[ -z "$missing" ] && ok "man bpfbox-$c: all $(echo $opts | wc -w) options of --help" ||
		fail "man bpfbox-$c lacks$missing: document them in man/bpfbox-$c.1.scd"
done

# --- bash completion ------------------------------------------------------------
# comp WORDS...: the completions bash offers for the last word.
comp() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _bpfbox
		[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' comp \
		"$R/usr/share/bash-completion/completions/bpfbox" "$@" 2>&1 | sort -u | tr '\n' ' '
}
# expect_comp WANT NAME WORDS...: every word of WANT is offered.
expect_comp() {
	want=$1 name=$2
	shift 2
	got=$(comp "$@")
	for w in $want; do
		case " $got" in
		*" $w "*) ;;
		*)
			fail "completion: $name: '$w' not in: $got"
			return
			;;
		esac
	done
	ok "completion: $name"
}
expect_comp "$CMDS" "every command" "$B" ""
expect_comp "status sessions" "s -> status sessions" "$B" s
expect_comp "--json --require" "status options" "$B" status --
expect_comp "Standard" "status --require S" "$B" status --require S
expect_comp "--mode --memory" "run --m" "$B" run --m
expect_comp "workspace-write read-only full-access" "run --mode values" "$B" run --mode ""
expect_comp "aggregate all off" "run --audit-mode values" "$B" run --audit-mode ""
expect_comp "deny allow" "run --net values" "$B" run --net ""
expect_comp "pause kill memory=kill disk=kill" "run --on-limit values" "$B" run --on-limit ""
expect_comp "wall running" "run --timeout-counts values" "$B" run --timeout-counts ""
expect_comp "--status-fd --label --pause-timeout --read-host" "run's runtime options" "$B" run --
expect_comp "check" "policy -> check" "$B" policy ""
expect_comp "--agent" "policy check --a" "$B" policy check --a
expect_comp "--cleanup --cgroup-parent" "daemon --c" "$B" daemon --c
expect_comp "root" "daemon --group r" "$B" daemon --group r
expect_comp "echo" "the command after run --" "$B" run -q -- ech
mkdir -p "$D/cdir/sub"
expect_comp "$D/cdir/sub" "-w completes directories" "$B" run -w "$D/cdir/s"
[ -z "$(comp "$B" run --timeout "")" ] && ok "completion: no files for --timeout" ||
	fail "completion: --timeout offers: $(comp "$B" run --timeout "")"

# --- the daemon with exactly the unit's capabilities ----------------------------
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr 'A-Z ' 'a-z\n' | sed 's/^cap_/+/' |
	paste -sd, -)
if [ "$(id -u)" != 0 ]; then
	skip "unit capabilities: the daemon needs root; CI runs as root"
elif [ -z "$CG2" ] || ! command -v setpriv >/dev/null 2>&1; then
	skip "unit capabilities: no cgroup2 mount or no setpriv here; the VM matrix has both"
elif ! getent group nogroup >/dev/null; then
	skip "unit capabilities: no group 'nogroup' for the unprivileged client"
else
	SOCK="$D/sock/bpfbox.sock" PIN=/sys/fs/bpf/bpfbox-pkgtest-$$ PARENT="$CG2/bpfbox-pkgtest-$$"
	NOTIFY="$D/notify.sock"
	# A systemd stand-in: receives the notify datagrams on $NOTIFY.
	cat >"$D/notify.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
while True:
    with open(sys.argv[2], "a") as f:
        f.write(s.recv(4096).decode() + "\n")
PY
	python3 "$D/notify.py" "$NOTIFY" "$D/notified" &
	NPID=$!
	poll_until 5 test -S "$NOTIFY"
	# start_daemon LOG [setpriv ARGS]: starts it, waits for READY=1.
	start_daemon() {
		log=$1
		shift
		: >"$D/notified"
		NOTIFY_SOCKET=$NOTIFY "$@" "$B" daemon --group nogroup --socket "$SOCK" \
			--pin-dir "$PIN" --cgroup-parent "$PARENT" --audit "$D/audit.jsonl" 2>>"$log" &
		DPID=$!
		poll_until 15 ready_or_dead
		grep -q READY=1 "$D/notified"
	}
	ready_or_dead() { grep -q READY=1 "$D/notified" 2>/dev/null || ! kill -0 "$DPID" 2>/dev/null; }
	stop_daemon() {
		kill -TERM "$DPID"
		wait "$DPID"
		rc=$?
		DPID=
		return $rc
	}
	loaded() { grep -o 'audit programs: .*; network programs: [^;]*' "$1" | head -1; }

	# With every capability: what this kernel loads.
	if start_daemon "$D/full.log"; then
		stop_daemon
		"$B" daemon --cleanup --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" \
			>/dev/null 2>&1
		BASE=$(loaded "$D/full.log")
		AS="setpriv --bounding-set=-all,$CAPS --inh-caps=-all"
		if start_daemon "$D/caps.log" $AS; then
			ok "daemon starts with the unit's capabilities ($CAPS) and sends READY=1"
		else
			fail "daemon with $CAPS: $(tail -c 300 "$D/caps.log")"
		fi
		[ "$(loaded "$D/caps.log")" = "$BASE" ] &&
			ok "the same programs load as with every capability: $BASE" ||
			fail "with $CAPS: '$(loaded "$D/caps.log")', with all: '$BASE'"
		expect_rc 3 "a root session through the restricted daemon" "$B" run -q \
			--daemon-socket "$SOCK" -w "$D/ws" -- sh -c 'exit 3'
		mkdir -p "$D/wsn"
		chown 65534:65534 "$D/wsn"
		expect_rc 5 "an unprivileged session (uid 65534, group nogroup)" setpriv --reuid 65534 \
			--regid 65534 --clear-groups "$B" run -q --daemon-socket "$SOCK" -w "$D/wsn" -- \
			sh -c 'exit 5'
		expect_rc 0 "bpfbox sessions" "$B" sessions --socket "$SOCK"
		kill -HUP "$DPID"
		poll_until 10 grep -q "audit file reopened" "$D/caps.log"
		expect_grep "audit file reopened" "$D/caps.log" "SIGHUP reopens the audit file"
		# A session alive across a crash and a restart: re-adopted.
		# It lives until the test says so (stop), not for a fixed time.
		rm -f "$D/ws/stop"
		"$B" run -q --daemon-socket "$SOCK" -w "$D/ws" -- \
			sh -c 'while [ ! -e stop ]; do sleep 0.05; done' >/dev/null 2>&1 &
		RPID=$!
		listed_running() { "$B" sessions --socket "$SOCK" 2>/dev/null | grep -q running; }
		poll_until 5 listed_running
		kill -9 "$DPID"
		wait "$DPID" 2>/dev/null
		if start_daemon "$D/caps.log" $AS && grep -q "re-adopted session" "$D/caps.log"; then
			ok "restarted with the unit's capabilities, the session is re-adopted"
		else
			fail "restart with $CAPS: $(tail -c 300 "$D/caps.log")"
		fi
		touch "$D/ws/stop"
		expect_wait "$RPID" 0 "the session outlived the crash (exit 0)"
		stop_daemon && ok "SIGTERM: exit 0" || fail "SIGTERM: exit $?"
		poll_until 5 grep -q STOPPING=1 "$D/notified" && ok "STOPPING=1 sent" || fail "no STOPPING=1"
		# What it complains about that it does not with every capability.
		bad='error|cannot|not loaded|refused|Operation not permitted|Permission denied'
		grep -E "$bad" "$D/full.log" | sort -u >"$D/full.bad"
		if grep -E "$bad" "$D/caps.log" | sort -u | grep -vxF -f "$D/full.bad" >"$D/bad"; then
			fail "the restricted daemon complained: $(head -c 300 "$D/bad")"
		else
			ok "the restricted daemon logged no error the unrestricted one did not"
		fi
		grep -c '"type":"session.end"' "$D/audit.jsonl" | grep -qx 3 &&
			ok "three session.end events in the audit file" ||
			fail "session.end events: $(grep -c '"type":"session.end"' "$D/audit.jsonl")"
		expect_rc 0 "--cleanup with the unit's capabilities" $AS "$B" daemon --cleanup \
			--socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT"
		[ ! -e "$PIN" ] && [ ! -e "$PARENT" ] && PIN= &&
			ok "--cleanup removed the pins and the cgroup parent" ||
			fail "left after --cleanup: $(ls -d "$PIN" "$PARENT" 2>/dev/null)"
	else
		skip "unit capabilities: the daemon does not start on this host even with every" \
			"capability: $(tail -c 200 "$D/full.log")"
	fi
	[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	DPID=
	kill "$NPID" 2>/dev/null
	NPID=
fi

# --- remove and purge -----------------------------------------------------------
expect_rc 0 "dpkg --purge from the scratch root" $DPKG --purge bpfbox
left=$(cd "$R" && find . ! -type d ! -path './var/lib/dpkg/*' ! -path './etc/group*' \
	! -path './etc/gshadow*' ! -path './etc/passwd*' ! -path './etc/shadow*' \
	! -path ./etc/.pwd.lock | head -5)
[ -z "$left" ] && ok "purge leaves no file behind" || fail "left after purge: $left"

# --- tools/install.sh (make install / uninstall) -------------------------------
S="$D/stage"
BIN="$SRC/build/bin/bpfbox"
expect_rc 0 "install.sh install DESTDIR=..." "$ROOT/tools/install.sh" install DESTDIR="$S" BIN="$BIN"
n=$(cd "$S" && find . -type f | wc -l)
[ "$n" -ge 12 ] && ok "install.sh installed $n files" || fail "install.sh installed $n files"
expect_grep '^ExecStart=/usr/local/bin/bpfbox daemon' "$S/usr/local/lib/systemd/system/bpfbox.service" \
	"the installed unit runs /usr/local/bin/bpfbox"
[ -f "$S/usr/local/share/man/man1/bpfbox-daemon.1" ] && [ -f "$S/etc/bpfbox/config.json" ] &&
	ok "install.sh: man pages and /etc/bpfbox/config.json" || fail "install.sh: files missing"
echo '{ "sandbox": { "network": "allow" } }' >"$S/etc/bpfbox/config.json"
expect_rc 0 "install.sh again over an edited config" "$ROOT/tools/install.sh" install \
	DESTDIR="$S" BIN="$BIN"
expect_grep '"allow"' "$S/etc/bpfbox/config.json" "the edited config is kept"
cmp -s "$ROOT/packaging/config.json" "$S/etc/bpfbox/config.json.dist" &&
	ok "the shipped config is written next to it as config.json.dist" ||
	fail "no config.json.dist"
expect_rc 0 "install.sh uninstall" "$ROOT/tools/install.sh" uninstall DESTDIR="$S"
left=$(cd "$S" 2>/dev/null && find . -type f)
[ "$left" = ./etc/bpfbox/config.json ] && ok "uninstall keeps only the edited config" ||
	fail "after uninstall: $left"
cp "$ROOT/packaging/config.json" "$S/etc/bpfbox/config.json"
"$ROOT/tools/install.sh" uninstall DESTDIR="$S" >/dev/null
[ ! -e "$S" ] && ok "uninstall of an unedited install leaves nothing" ||
	fail "left after uninstall: $(cd "$S" && find . | head -5)"

finish
