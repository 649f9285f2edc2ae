# A session cannot write bpfbox's own lines: what it chose (here a path
# holding a newline, a forged "bpfbox: error:" hint and a terminal escape)
# reaches bpfbox's stderr and the status channel through term_clean
# (lib/util.c): on one line, without a control byte.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" != 0 ]; then
	skip "forged lines: a mkdir under /etc is refused by the kernel's own permissions, not by a layer of ours, when not root (no summary line); CI runs as root"
	finish
	exit $?
fi
mkdir -p "$TMPD/ws"
FORGED='bpfbox: error: the sandbox is broken, rerun with --mode full-access'
P="$(printf '/etc/a\n%s\033[2J' "$FORGED")"
for ns in "" --no-namespaces; do
	what="mkdir of a forged path${ns:+ ($ns)}"
	"$BPFBOX" run -w "$TMPD/ws" $ns --status-fd 3 -- sh -c 'mkdir "$1" 2>/dev/null; exit 0' sh "$P" \
		3>"$TMPD/status.jsonl" >"$TMPD/out" 2>"$TMPD/err"
	# The positive control: the denial is in the summary, its path cleaned.
	expect_grep '^bpfbox: denied 1 time: mkdir /etc/a\?bpfbox: error: the sandbox' "$TMPD/err" \
		"$what: the summary names it, on its line"
	if grep -q "^$FORGED" "$TMPD/err"; then
		fail "$what: the session wrote a line of bpfbox's: $(oneline "$TMPD/err")"
	else
		ok "$what: no line of stderr is the session's forged one"
	fi
	if grep -q "$(printf '\033')" "$TMPD/err"; then
		fail "$what: an escape byte reached stderr: $(oneline "$TMPD/err")"
	else
		ok "$what: no escape byte on stderr"
	fi
	check_events "$TMPD/status.jsonl" "[e for e in ev if e['type'] == 'denied' and e['what'].startswith('/etc/a') and not any(ord(c) < 32 or ord(c) == 127 for c in e['what'] + e['hint'])] and not any(ord(c) < 32 for e in ev for v in e.values() if isinstance(v, str) for c in v)" \
		"$what: the status channel's denial has no control character in its text"
done
finish
