# The disk limit counts the files a session holds with no name (docs/limits.md,
# "Disk: the disk monitor"): written and unlinked while held open, unlinked
# and grown, mapped and unlinked then written through the mapping, O_TMPFILE.
# Checked by real bytes: the workspace is a tmpfs of this test's own, and the
# session's program logs statvfs of it after each MiB; after the kill the
# bytes are back. Embedded as root (kill and pause), as uid 65534 (the rlimit
# fallback: killed), through a daemon.
. "$(dirname "$0")/../lib.sh"

case "$BPFBOX" in /*) ;; */*) BPFBOX="$(pwd)/$BPFBOX" ;; esac
need_root_cgroup2 disk_held "making session cgroups and a tmpfs workspace"
daemon_scratch held
export BPFBOX_CGROUP_PARENT="$CG2/bpfbox-held-e$$"
chmod 755 "$TMPD"
LOG="$TMPD/log"
mkdir -p "$LOG"
chmod 777 "$LOG"
cleanup_extra() {
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	cgroups_remove "$BPFBOX_CGROUP_PARENT"
	umount -l "$WS" 2>/dev/null
}
if ! mount -t tmpfs -o size=160m,mode=1777 tmpfs "$WS"; then
	fail "disk_held: cannot mount a tmpfs workspace at $WS"
	finish
	exit 1
fi

H="$PY $ROOT/tests/helpers/limits.py"
RO="--ro $ROOT/tests/helpers"
LIMIT=20
# used: bytes used on the workspace's file system (statvfs).
used() { "$PY" -c 'import os, sys; s = os.statvfs(sys.argv[1]); print((s.f_blocks - s.f_bfree) * s.f_frsize)' "$WS"; }
mib() { echo $((($1 + (1 << 20) - 1) >> 20)); }
# peak NAME: the most the session's program saw used on the workspace's
# file system, in MiB above U0 (what was used before it started).
peak() { mib $(($(awk 'NF == 3 && $3 > m { m = $3 } END { print m + 0 }' "$LOG/$1") - U0)); }
# back_to_u0: the bytes are back once the session is gone (its files closed).
back_to_u0() { [ "$(mib $(($(used) - U0)))" -le 1 ]; }

# start NAME [RUNAS...] -- BPFBOX-RUN-ARGS... -- MODE N MB PACE HOLD: a session
# in the background running the held helper in the workspace (MODE "thread":
# held_thread.c, one file of MB MiB); NAME.err, NAME.rc.
start() {
	name=$1
	shift
	runas=
	while [ "$1" != -- ]; do runas="$runas $1"; shift; done
	shift
	args=
	while [ "$1" != -- ]; do args="$args $1"; shift; done
	shift
	rm -f "$LOG/$name"
	# What a killed session left named (root's: uid 65534 may not reopen it).
	find "$WS" -mindepth 1 -delete
	U0=$(used)
	if [ "$1" = thread ]; then
		cmd="$BPFBOX_BUILD/tests/bin/held_thread $3 $LOG/$name $5"
	else
		cmd="$H held $1 $2 $3 $4 $LOG/$name $5"
	fi
	(cd / && $runas "$BPFBOX" run $RO --ro "$BPFBOX_BUILD/tests/bin" --rw "$LOG" -w "$WS" \
		$args -- $cmd >"$TMPD/$name.out" 2>"$TMPD/$name.err"
	echo $? >"$TMPD/$name.rc") &
}
rc_of() { wait_grep . "$TMPD/$1.rc" "$2" && cat "$TMPD/$1.rc" || echo none; }

# killed NAME WHAT TOTAL: session NAME ended killed for its disk (123),
# before its program wrote its TOTAL MiB, the bytes it held never more than
# 12 MiB past the limit, and all of them back after.
killed() {
	rc=$(rc_of "$1" 60)
	p=$(peak "$1")
	if [ "$rc" = 123 ] && grep -q 'killed: the workspace grew\|cannot be paused here' "$TMPD/$1.err" &&
		! grep -q done "$LOG/$1" && [ "$p" -lt $((LIMIT + 12)) ]; then
		ok "$2: killed (123) at $p MiB used of $3 MiB, over --disk $LIMIT"
	else
		fail "$2: rc $rc, peak $p MiB of $3, log $(tail -n 1 "$LOG/$1" 2>&1); stderr: $(tail -c 400 "$TMPD/$1.err")"
	fi
	# The named rest (a file being written when the kill came) is removed
	# here; what it held unlinked must come back by itself.
	find "$WS" -mindepth 1 -delete
	if poll_until 5 back_to_u0; then
		ok "$2: its $p MiB are back once it is gone (statvfs)"
	else
		fail "$2: $(mib $(($(used) - U0))) MiB still used after it ended"
	fi
}

# --- the issue's attack: six 5 MiB files written, unlinked, held open --------
start held -- -q --disk $LIMIT --on-limit kill -- after 6 5 0.01 30
killed held "six 5 MiB files written and unlinked while held open" 30

# --- the same under a pause: frozen, then resumed with room, it finishes ----
start hpause -- -q --disk $LIMIT --audit "$TMPD/hpause.jsonl" -- after 6 5 0.01 0.2
if wait_grep 'paused: the workspace grew' "$TMPD/hpause.err" 30; then
	ID=$(sed -n 's/.*session \([0-9a-f]*\) paused.*/\1/p' "$TMPD/hpause.err" | head -n 1)
	p=$(peak hpause)
	poll_until 10 grep -q 'frozen 1' "$BPFBOX_CGROUP_PARENT/$ID/cgroup.events" &&
		! grep -q done "$LOG/hpause" && [ "$p" -lt $((LIMIT + 12)) ] &&
		ok "held unlinked files pause the session: frozen at $p MiB used" ||
		fail "pause for held files: $(cat "$BPFBOX_CGROUP_PARENT/$ID/cgroup.events" 2>&1), peak $p"
	check_events "$TMPD/hpause.jsonl" "any(e['type'] == 'session.paused' and e['reason'] == 'disk' and e['disk_used_mb'] > $LIMIT for e in ev)" \
		"session.paused: reason disk, the held bytes in disk_used_mb"
	expect_rc 0 "bpfbox resume --disk 64 of the held files' pause" "$BPFBOX" resume "$ID" --disk 64
	[ "$(rc_of hpause 30)" = 0 ] && grep -q done "$LOG/hpause" &&
		ok "after resume with room the program holds all 30 MiB and ends" ||
		fail "held files after resume: rc $(cat "$TMPD/hpause.rc" 2>&1) $(oneline "$TMPD/hpause.err")"
else
	fail "no pause for held unlinked files: $(oneline "$TMPD/hpause.err")"
fi
poll_until 5 back_to_u0

# --- growth after unlink, through a mapping, O_TMPFILE ----------------------
start before -- -q --disk $LIMIT --on-limit kill -- before 1 30 0.01 30
killed before "a file unlinked, then grown to 30 MiB" 30
start mmap -- -q --disk $LIMIT --on-limit kill -- mmap 8 5 0.02 30
killed mmap "eight 5 MiB files mapped, unlinked, written through the mapping" 40
start tmpfile -- -q --disk $LIMIT --on-limit kill -- tmpfile 1 30 0.01 30
killed tmpfile "an O_TMPFILE grown to 30 MiB" 30

# --- no event says the name went: replaced by a rename, unlinked before a watch
start replace -- -q --disk $LIMIT --on-limit kill -- replace 6 5 0.01 30
killed replace "six 5 MiB files held open, each replaced by a rename" 30
start newdir -- -q --disk $LIMIT --on-limit kill -- newdir-mmap 8 5 0.02 30
killed newdir "eight 5 MiB files mapped and unlinked in new directories before their watch" 40

# --- hidden from the scan: a thread's own fd table, a non-dumpable process --
start thread -- -q --disk $LIMIT --on-limit kill -- thread 1 30 0.01 30
killed thread "a thread with an fd table of its own (clone without CLONE_FILES) grows an unlinked file" 30
start nodump -- -q --disk $LIMIT --on-limit kill -- nodump-after 6 5 0.01 30
killed nodump "a non-dumpable process holds six 5 MiB unlinked files" 30

# --- the control: held files under the limit are counted and allowed -------
start ctl -- -v --disk $LIMIT --on-limit kill -- after 2 5 0.01 0.5
rc=$(rc_of ctl 30)
n=$(sed -n 's/.*disk monitor: \([0-9]*\) held scans.*/\1/p' "$TMPD/ctl.err")
[ "$rc" = 0 ] && grep -q done "$LOG/ctl" && [ "${n:-0}" -gt 0 ] &&
	ok "control: 10 MiB held unlinked under --disk $LIMIT run to the end ($n held scans)" ||
	fail "control: rc $rc, held scans '$n': $(tail -c 400 "$TMPD/ctl.err")"

# --- unprivileged: no cgroup, the processes below the supervisor ------------
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
start uheld $NOBODY -- -q --disk $LIMIT -- after 6 5 0.01 30
killed uheld "uid 65534: six 5 MiB files written and unlinked while held open" 30
# A non-dumpable process is not the unprivileged supervisor's to read: blind,
# the limit fails closed (killed, as no freezer is there).
# Paced so that its writes last past the 0.5 s a process may stay unreadable.
start unodump $NOBODY -- -q --disk $LIMIT -- nodump-after 6 5 0.1 30
rc=$(rc_of unodump 60)
[ "$rc" = 123 ] && grep -q 'cannot read /proc/[0-9]*/fd' "$TMPD/unodump.err" &&
	grep -q 'killed: a process of the session cannot be read' "$TMPD/unodump.err" &&
	! grep -q done "$LOG/unodump" &&
	ok "uid 65534: a non-dumpable process cannot hide what it holds: killed (123), blind" ||
	fail "uid 65534 non-dumpable: rc $rc: $(tail -c 500 "$TMPD/unodump.err")"
# map_files needs CAP_SYS_ADMIN: the mapping's span counts instead.
start ummap $NOBODY -- -q --disk $LIMIT -- mmap 8 5 0.02 30
killed ummap "uid 65534: eight 5 MiB files mapped and unlinked" 40

# --- through a daemon (its cgroup's cgroup.procs) ----------------------------
if start_daemon "$TMPD/d.jsonl"; then
	start dheld -- -q --daemon-socket "$SOCK" --disk $LIMIT --on-limit kill -- after 6 5 0.01 30
	killed dheld "daemon mode: six 5 MiB files written and unlinked while held open" 30
else
	fail "the daemon did not start: $(oneline "$DERR")"
fi
finish
