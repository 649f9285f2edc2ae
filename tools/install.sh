#!/bin/sh
# tools/install.sh: `make install` and `make uninstall`.
#
#   tools/install.sh install|uninstall [VAR=VALUE...]
#
# Variables (arguments win over the environment), as in GNU make:
#   DESTDIR        staging root, prepended to every path (default: none)
#   PREFIX         /usr/local
#   BINDIR         $PREFIX/bin
#   MANDIR         $PREFIX/share/man
#   DATADIR        $PREFIX/share (schemas in $DATADIR/bpfbox/schema)
#   SYSCONFDIR     /etc (the config is $SYSCONFDIR/bpfbox/config.json;
#                  bpfbox reads /etc/bpfbox/config.json by default)
#   UNITDIR        systemd system units: $PREFIX/lib/systemd/system, or for
#                  PREFIX=/usr what pkg-config says (/lib/systemd/system on
#                  Debian 12)
#   SYSUSERSDIR    $PREFIX/lib/sysusers.d (PREFIX=/usr: pkg-config's)
#   COMPLETIONDIR  $DATADIR/bash-completion/completions
#   BIN            the binary to install (build/bin/bpfbox)
#   SCDOC          scdoc, which turns man/*.scd into man pages
#
# Config files (config.json, logrotate) are never overwritten: if an
# installed one differs from the shipped one, the shipped one is written
# next to it as FILE.dist. `uninstall` removes them only when they are
# unchanged. The systemd unit's ExecStart names $BINDIR/bpfbox.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ACTION=${1:-}
case "$ACTION" in
install | uninstall) shift ;;
-h | --help)
	sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "usage: tools/install.sh install|uninstall [VAR=VALUE...]" >&2
	exit 2
	;;
esac
for a in "$@"; do
	case "$a" in
	DESTDIR=* | PREFIX=* | BINDIR=* | MANDIR=* | DATADIR=* | SYSCONFDIR=* | UNITDIR=* | \
		SYSUSERSDIR=* | COMPLETIONDIR=* | BIN=* | SCDOC=*)
		eval "${a%%=*}=\${a#*=}"
		;;
	*)
		echo "install.sh: unknown argument '$a'; give VAR=VALUE" >&2
		exit 2
		;;
	esac
done

DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
BINDIR=${BINDIR:-$PREFIX/bin}
MANDIR=${MANDIR:-$PREFIX/share/man}
DATADIR=${DATADIR:-$PREFIX/share}
SYSCONFDIR=${SYSCONFDIR:-/etc}
COMPLETIONDIR=${COMPLETIONDIR:-$DATADIR/bash-completion/completions}
BIN=${BIN:-$ROOT/build/bin/bpfbox}
SCDOC=${SCDOC:-scdoc}

# systemd's own directories for PREFIX=/usr, else below the prefix (systemd
# also searches /usr/local/lib/systemd/system and /usr/local/lib/sysusers.d).
pkgvar() {
	pkg-config --variable="$1" systemd 2>/dev/null || true
}
if [ -z "${UNITDIR:-}" ]; then
	[ "$PREFIX" = /usr ] && UNITDIR=$(pkgvar systemdsystemunitdir)
	UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
fi
if [ -z "${SYSUSERSDIR:-}" ]; then
	[ "$PREFIX" = /usr ] && SYSUSERSDIR=$(pkgvar sysusersdir)
	SYSUSERSDIR=${SYSUSERSDIR:-$PREFIX/lib/sysusers.d}
fi
for v in PREFIX BINDIR MANDIR DATADIR SYSCONFDIR UNITDIR SYSUSERSDIR COMPLETIONDIR; do
	eval "val=\$$v"
	case "$val" in
	/*) ;;
	*)
		echo "install.sh: $v=$val: give an absolute path" >&2
		exit 2
		;;
	esac
done

say() { echo "install.sh: $*"; }

# put MODE SRC DEST: installs one file (DEST without DESTDIR).
put() {
	install -D -m "$1" "$2" "$DESTDIR$3"
	say "installed $3"
}

# put_config SRC DEST: a config file, never overwriting a changed one.
put_config() {
	if [ ! -e "$DESTDIR$2" ]; then
		put 0644 "$1" "$2"
	elif cmp -s "$1" "$DESTDIR$2"; then
		say "$2 is up to date"
	else
		put 0644 "$1" "$2.dist"
		say "kept your $2; the shipped one is $2.dist (diff them)"
	fi
}

# drop DEST: removes one installed file.
drop() {
	if [ -e "$DESTDIR$1" ] || [ -L "$DESTDIR$1" ]; then
		rm -f "$DESTDIR$1"
		say "removed $1"
	fi
	prune "$(dirname "$1")"
}

# drop_config SRC DEST: removes DEST (and DEST.dist) if unchanged.
drop_config() {
	if [ -e "$DESTDIR$2.dist" ] && cmp -s "$1" "$DESTDIR$2.dist"; then
		drop "$2.dist"
	fi
	if [ ! -e "$DESTDIR$2" ]; then
		return 0
	elif cmp -s "$1" "$DESTDIR$2"; then
		drop "$2"
	else
		say "kept $2: it was changed"
	fi
}

# prune DIR: removes DIR and its parents while empty. Without DESTDIR only
# bpfbox's own directories; with DESTDIR every directory up to DESTDIR.
prune() {
	d=$1
	while [ -n "$d" ] && [ "$d" != / ] && [ "$d" != . ]; do
		if [ -z "$DESTDIR" ]; then
			case "$d" in
			*/bpfbox | */bpfbox/*) ;;
			*) return 0 ;;
			esac
		fi
		rmdir "$DESTDIR$d" 2>/dev/null || return 0
		d=$(dirname "$d")
	done
	[ -z "$DESTDIR" ] || rmdir "$DESTDIR" 2>/dev/null || true
	return 0
}

# The man pages: man/NAME.SECTION.scd -> MANDIR/manSECTION/NAME.SECTION.
man_pages() {
	for src in "$ROOT"/man/*.scd; do
		[ -e "$src" ] || continue
		page=$(basename "$src" .scd)
		echo "$src $MANDIR/man${page##*.}/$page"
	done
}

schemas() {
	for src in "$ROOT"/schema/*.json; do
		[ -e "$src" ] && echo "$src $DATADIR/bpfbox/schema/$(basename "$src")"
	done
	return 0
}

if [ "$ACTION" = install ]; then
	if [ ! -x "$BIN" ]; then
		echo "install.sh: $BIN is missing; run make first" >&2
		exit 1
	fi
	if ! command -v "$SCDOC" >/dev/null 2>&1; then
		echo "install.sh: $SCDOC not found; install the Debian package 'scdoc'" >&2
		exit 1
	fi
	TMP=$(mktemp -d)
	trap 'rm -rf "$TMP"' EXIT INT TERM
	# Man pages carry a date: the last commit's, for reproducible builds.
	if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
		SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)
		export SOURCE_DATE_EPOCH
	fi

	put 0755 "$BIN" "$BINDIR/bpfbox"
	man_pages | while read -r src dest; do
		"$SCDOC" <"$src" >"$TMP/page"
		put 0644 "$TMP/page" "$dest"
	done
	schemas | while read -r src dest; do
		put 0644 "$src" "$dest"
	done
	put 0644 "$ROOT/packaging/completion/bpfbox" "$COMPLETIONDIR/bpfbox"
	put 0644 "$ROOT/packaging/grafana/bpfbox-fleet.json" "$DATADIR/bpfbox/grafana/bpfbox-fleet.json"
	sed "s|/usr/bin/bpfbox|$BINDIR/bpfbox|g" "$ROOT/packaging/systemd/bpfbox.service" \
		>"$TMP/bpfbox.service"
	put 0644 "$TMP/bpfbox.service" "$UNITDIR/bpfbox.service"
	put 0644 "$ROOT/packaging/sysusers.d/bpfbox.conf" "$SYSUSERSDIR/bpfbox.conf"
	put_config "$ROOT/packaging/config.json" "$SYSCONFDIR/bpfbox/config.json"
	put_config "$ROOT/packaging/logrotate/bpfbox" "$SYSCONFDIR/logrotate.d/bpfbox"
	if [ -z "$DESTDIR" ]; then
		say "to run the daemon: systemd-sysusers bpfbox.conf && systemctl daemon-reload" \
			"&& systemctl enable --now bpfbox"
	fi
else
	# The daemon's pins and session cgroups are not files of the install:
	# stop it and run 'bpfbox daemon --cleanup' first (docs/operating.md).
	drop "$BINDIR/bpfbox"
	man_pages | while read -r src dest; do
		drop "$dest"
	done
	schemas | while read -r src dest; do
		drop "$dest"
	done
	drop "$COMPLETIONDIR/bpfbox"
	drop "$DATADIR/bpfbox/grafana/bpfbox-fleet.json"
	drop "$UNITDIR/bpfbox.service"
	drop "$SYSUSERSDIR/bpfbox.conf"
	drop_config "$ROOT/packaging/config.json" "$SYSCONFDIR/bpfbox/config.json"
	drop_config "$ROOT/packaging/logrotate/bpfbox" "$SYSCONFDIR/logrotate.d/bpfbox"
	prune "$SYSCONFDIR/bpfbox"
fi
