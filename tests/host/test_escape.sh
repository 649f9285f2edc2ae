#!/bin/sh
# Escape tests: attacks run inside `bpfbox run` that must be stopped, each by
# the layer that should stop it (tests/escape/escape.c says which errno that
# layer returns; the attack exits 0 only for that errno). Where the kernel
# alone would also refuse, the attack adds a "discriminating" probe whose
# answer differs without the sandbox, and where an effect can be seen from
# outside (a file, a process, a listener) the test looks at it too.
#
# Checks that depend on a Landlock feature ask `bpfbox status --json` for the
# ABI's rights and, when the kernel lacks the feature and the attack works,
# print a skip naming the ABI needed: the documented gap of older kernels.
#
# Runs on the host (root or not) and unmodified in the test VM (root,
# /opt/bpfbox, Landlock ABI 2). As root, the core checks are repeated as an
# unprivileged user (uid 65534) through setpriv.

. "$(dirname "$0")/../lib.sh"
BIN=$BPFBOX_BUILD/tests/bin
PIDS=""

cleanup() {
	# Only if the mount attack worked (a broken sandbox): our own mount.
	grep -qF " $TMPD/ws/mnt " /proc/self/mountinfo 2>/dev/null && umount -l "$TMPD/ws/mnt"
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	kill_marked
	# The --net-allow cases' network namespace and the daemon of the last cases.
	[ -n "$NETNS" ] && ip netns del "$NETNS" 2>/dev/null && ip link del "$HOSTIF" 2>/dev/null
	if [ -n "$DPID" ]; then
		kill -9 "$DPID" 2>/dev/null
		"$BPFBOX" daemon --cleanup --socket "$SOCK" --pin-dir "$PIN" --cgroup-parent "$PARENT" \
			>/dev/null 2>&1
	fi
	rm -rf "$TMPD"
}
NETNS="" HOSTIF="" DPID=""
trap cleanup EXIT
trap 'cleanup; exit 1' INT TERM

# The errnos of the attack's "stopped:" lines, e.g. " (EACCES)", appended to
# a verdict's ok line (lib.sh).
verdict_note() {
	r=$(sed -n 's/^stopped: .*: \(E[A-Z0-9]*\) (.*/\1/p' "$TMPD/out" | sort -u | tr '\n' ' ')
	[ -n "$r" ] && echo " (${r% })"
}

# sb [RUN OPTIONS] -- CMD...: CMD in a session on $WS as the current user.
# $AS prefixes the command (setpriv for the unprivileged runs).
AS=""
NSOPT=""
sb() { $AS "$BPFBOX" run -w "$WS" $NSOPT "$@" </dev/null; }

# attack [RUN OPTIONS --] ATTACK ARGS...: the attack program in a session;
# sets $rc, $TMPD/out, $TMPD/err. RUN OPTIONS are taken up to a "--".
attack() {
	opts=""
	case " $* " in
	*" -- "*)
		while [ "$1" != -- ]; do
			opts="$opts $1"
			shift
		done
		shift
		;;
	esac
	# A hanging attack ends in 30 s (exit 124) rather than the default 120.
	case "$opts" in *--timeout*) ;; *) opts="--timeout 30$opts" ;; esac
	# shellcheck disable=SC2086
	sb $opts -- "$WS/escape" "$@" >"$TMPD/out" 2>"$TMPD/err"
	rc=$?
}

# LAYER: the layer the cases below rely on (landlock or seccomp). The
# level Minimal (no Landlock at boot: ABI 0) does not promise what Landlock
# alone stops: such a case that the attack wins prints a skip saying so,
# with what happened, instead of a FAIL; one that holds anyway stays ok.
LAYER=landlock
not_promised() { [ "$ABI" = 0 ] && [ "$LAYER" = landlock ]; }
promise_why() { echo "at level Minimal (no Landlock on this kernel)"; }

# lines FILE: the number of lines of FILE, 0 if it does not exist.
lines() { if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# alive PID: the process exists and is not a zombie.
alive() {
	[ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# Processes whose command line contains the string $MARK (the daemon test):
# found by scanning /proc so that a PID namespace cannot hide them. Not
# bpfbox's end helper (lib/closer.h): it shares bpfbox's memory, so its
# command line is bpfbox's, which names the mark; it outlives bpfbox by
# design (outside the session, in the idle scheduling class) and is not
# the session's daemon. A session's process that ran bpfbox's binary is
# still found: it is in a session's cgroup.
MARK=""
BPFBOX_EXE=$(readlink -f "$BPFBOX")
marked_pids() {
	[ -n "$MARK" ] || return 0
	for f in $(grep -laF -- "$MARK" /proc/[0-9]*/cmdline 2>/dev/null); do
		p=${f#/proc/}
		p=${p%/cmdline}
		[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$BPFBOX_EXE" ] &&
			! grep -q '/bpfbox/[0-9a-f]\{32\}' "/proc/$p/cgroup" 2>/dev/null && continue
		[ "$p" != "$$" ] && alive "$p" && echo "$p"
	done
}
kill_marked() {
	for p in $(marked_pids); do
		kill -9 "$p" 2>/dev/null
	done
}

# start_target NAME [PREFIX...]: a helper process to attack, its cwd $OUT;
# sets $tpid, $taddr, $tlen, $tsecret from its ready file $OUT/.NAME.ready.
start_target() {
	n=$1
	shift
	(cd "$OUT" && exec "$@" "$BIN/helper" target "$OUT/.$n.ready") </dev/null >/dev/null 2>&1 &
	PIDS="$PIDS $!"
	wait_file "$OUT/.$n.ready" || return 1
	read -r tpid taddr tlen tsecret <"$OUT/.$n.ready"
}

# listener_problem MARKFILE BEFORE CONTROL...: after an attack that must not
# reach a listener, "" when it did not, else what went wrong. BEFORE is the
# mark count before the attack. CONTROL, a connect from outside, must be
# marked first (a bounded wait): the listener accepts in order, so by then an
# attack's connection that got through is marked too. No fixed sleep.
listener_problem() {
	_lp_f=$1 _lp_n=$2
	shift 2
	"$@" >/dev/null 2>&1
	if [ "$_lp_n" -lt 1 ]; then
		echo "control connect outside the sandbox did not reach the listener"
	elif ! wait_count $((_lp_n + 1)) . "$_lp_f" 10; then
		echo "the control connect after the attack did not reach the listener"
	elif [ "$(lines "$_lp_f")" -gt $((_lp_n + 1)) ]; then
		echo "the listener saw the connection"
	fi
}

# signal_problem NAME: after a signal attack on target NAME ($tpid), "" when
# the target lives on, else what happened. The positive control: SIGWINCH
# from outside, handled (a line in its .winch file) only after a pending
# SIGTERM would have ended it (lower signals are delivered first).
signal_problem() {
	kill -WINCH "$tpid" 2>/dev/null
	wait_file "$OUT/.$1.ready.winch" 10
	alive "$tpid" || echo "the target died"
}

# setid_problem DIR: "" when no file in DIR has a set-uid or set-gid bit or
# a file capability (escape setid-scan, run outside the sandbox), else which.
setid_problem() {
	"$BIN/escape" setid-scan "$1" >"$TMPD/scan" 2>&1 || echo "left on the host: $(oneline "$TMPD/scan" 400)"
}

# The tools' ways to a set-id file, run by sh in DIR ($1) with a set-uid
# file SRC ($2) and an archive holding it as suid-member ($3). Each may fail;
# what they leave is looked at from outside. (coreutils' mknod and mkfifo
# refuse set-id bits in -m themselves: the setid attack's raw mknod holds
# that route.)
SETID_TOOLS='cd "$1" || exit 2
cp /bin/sh rootsh && chmod 4755 rootsh
cp /bin/sh rootsh2 && chmod u+s,g+s rootsh2
cp -p "$2" cp-p
cp -a "$2" cp-a
install -m 4755 /bin/true installed
install -m 2755 /bin/true installed-g
tar -xpf "$3"
mkdir -m 2755 sgid-dir
mkdir dir && chmod g+s dir
exit 0'

# setid_cases PFX: no set-uid or set-gid file (nor file capability) in the
# workspace, by every syscall (escape setid) and by the tools (SETID_TOOLS),
# as the current $AS user. The tools run first outside, in a 0700 dir, as
# the control that they do leave set-id files there.
setid_cases() {
	owner=$(stat -c %u:%g "$WS")
	d=$WS/setid src=$WS/setid-src t=$WS/setid-tools ctl=$TMPD/setid-ctl
	rm -rf "$d" "$src" "$t" "$ctl"
	mkdir -p "$d" "$src" "$t" && mkdir -m 700 "$ctl"
	cp /bin/true "$src/suid-member"
	chown -R "$owner" "$d" "$src" "$t" "$ctl"
	chmod 4755 "$src/suid-member"
	tar -cf "$src/suid.tar" -C "$src" suid-member
	attack setid "$d"
	verdict "${1}set-id modes by every call: chmod, fchmod, fchmodat, fchmodat2, open/openat/creat O_CREAT and O_TMPFILE, mknod, mknodat (EPERM); openat2 (ENOSYS); security.capability" 0 \
		"$(setid_problem "$d")"
	$AS sh -c "$SETID_TOOLS" sh "$ctl" "$src/suid-member" "$src/suid.tar" >/dev/null 2>&1
	"$BIN/escape" setid-scan "$ctl" >"$TMPD/ctl.scan"
	nctl=$(wc -l <"$TMPD/ctl.scan")
	rm -rf "$ctl"
	rc=0
	sb -- sh -c "$SETID_TOOLS" sh "$t" "$src/suid-member" "$src/suid.tar" >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	problem=$(setid_problem "$t")
	[ "$nctl" -ge 9 ] || problem="$problem control: outside the sandbox the tools left $nctl set-id files, not 9: $(oneline "$TMPD/ctl.scan");"
	{ [ -e "$t/rootsh" ] && [ -e "$t/suid-member" ] && [ -d "$t/dir" ]; } ||
		problem="$problem control: cp, tar or mkdir made nothing in the session;"
	verdict "${1}set-id files by the tools: cp + chmod 4755, chmod u+s,g+s, cp -p, cp -a, install -m 4755 and 2755, tar -xp, mkdir -m 2755, chmod g+s DIR" 0 "$problem"
	# What a broken sandbox left (set-uid copies of sh) goes at once.
	rm -rf "$d" "$t"
}

# writable PATH: the host lets root write PATH at all (not a read-only
# mount), so that only the sandbox can make the open fail with EACCES.
writable() { [ -e "$1" ] && [ -w "$1" ]; }

# --- preflight -----------------------------------------------------------

if [ ! -x "$BIN/escape" ] || [ ! -x "$BIN/helper" ]; then
	fail "preflight: $BIN/escape or $BIN/helper missing (run make all)"
	exit 1
fi
chmod 755 "$TMPD" # the unprivileged runs go through it
WS=$TMPD/ws
OUT=$TMPD/outside
mkdir -p "$WS/mnt" "$OUT/home/.ssh"
cp "$BIN/escape" "$WS/escape"
cp "$BIN/escape" "$OUT/escape-copy"
if ! sb -- /bin/true >"$TMPD/out" 2>"$TMPD/err"; then
	fail "preflight: '$BPFBOX run -w $WS -- /bin/true' fails: $(oneline "$TMPD/err")"
	exit 1
fi

# The session's namespaces (docs/SECURITY.md): on unless this host refuses them.
NS_ON=1
grep -q "(no namespaces: " "$TMPD/err" && NS_ON=0
echo "# namespaces: $([ $NS_ON = 1 ] && echo on || echo "off: $(oneline "$TMPD/err" 200)")"
NS_ENV="--env BPFBOX_ESCAPE_NS=1"

STATUS=$(status_json 2>/dev/null)
ABI=$(printf '%s' "$STATUS" | python3 -c 'import json, sys; print(json.load(sys.stdin)["landlock"]["abi"])' 2>/dev/null)
RIGHTS=$(printf '%s' "$STATUS" | python3 -c 'import json, sys; print(" ".join(json.load(sys.stdin)["landlock"]["rights"]))' 2>/dev/null)
if [ -z "$ABI" ]; then
	ABI=$(printf '%s' "$STATUS" | tr -d ' \n' | sed -n 's/.*"landlock":{"abi":\([0-9]*\).*/\1/p')
	RIGHTS=$(printf '%s' "$STATUS" | tr -d ' \n' | sed -n 's/.*"landlock":{[^}]*"rights":\[\([^]]*\)\].*/\1/p' | tr -d '"' | tr ',' ' ')
fi
echo "# Landlock ABI ${ABI:-?}: ${RIGHTS:-no rights reported}; uid $(id -u); kernel $(uname -r)"
has_right() {
	case " $RIGHTS " in *" $1 "*) return 0 ;; esac
	return 1
}
# gap NAME RIGHT ABI-NEEDED WHAT: the skip of an attack that works because
# this kernel's Landlock lacks RIGHT.
gap() { skip "$1: needs Landlock ABI $3 ($2), this kernel has ABI ${ABI:-?}: $4"; }

# blocked_or_gap NAME RIGHT ABI WHAT [PROBLEM]: the verdict on an attack that
# Landlock RIGHT (ABI and up) stops: where the kernel has it, or the attack
# did not get through (exit not 1), verdict NAME 0 PROBLEM; else the gap,
# what happened being WHAT.
blocked_or_gap() {
	if has_right "$2" || [ "$rc" != 1 ]; then
		verdict "$1" 0 "${5:-}"
	else
		gap "$1" "$2" "$3" "$4"
	fi
}

# The attacks on the filesystem, exec and terminals, run twice: with the
# session's namespaces (the path outside is hidden, ENOENT, or read-only,
# EROFS) and with --no-namespaces, where Landlock must hold by itself and
# answer with its own errno.
fs_attacks() {
	LAYER=landlock # the terminal section below sets it to seccomp
rm -f "$WS/link" "$WS/hl" "$TMPD/hlctl" "$OUT/new" "$WS/ro-new" "$OUT/mv"
# --- filesystem: writes -------------------------------------------------------

echo original >"$OUT/victim"
attack create "$OUT/new"
verdict "${PFX}create a file outside the workspace" 0 "$([ -e "$OUT/new" ] && echo "$OUT/new was created")"

attack open-w "$OUT/victim"
verdict "${PFX}open an outside file for writing" 0

if writable /etc/passwd; then
	attack open-w /etc/passwd
	verdict "${PFX}open /etc/passwd for writing (root's DAC allows it)" 0
else
	skip "${PFX}open /etc/passwd for writing (root's DAC allows it): not writable here even outside the sandbox"
fi

if writable /proc/sysrq-trigger; then
	attack open-w /proc/sysrq-trigger
	verdict "${PFX}open /proc/sysrq-trigger for writing (/proc is read-only)" 0
else
	skip "${PFX}open /proc/sysrq-trigger for writing (/proc is read-only): not writable here even outside the sandbox"
fi

if writable /proc/sys/kernel/core_pattern; then
	attack open-w /proc/sys/kernel/core_pattern
	verdict "${PFX}open /proc/sys/kernel/core_pattern for writing" 0
else
	skip "${PFX}open /proc/sys/kernel/core_pattern for writing: not writable here even outside the sandbox"
fi

attack symlink-write "$OUT/victim" "$WS/link"
verdict "${PFX}write through a workspace symlink to an outside file" 0 \
	"$([ "$(cat "$OUT/victim")" = original ] || echo "$OUT/victim was changed")"

# Same filesystem for source and destination (a control link outside the
# sandbox must work), so an EXDEV can only be Landlock's refer rule.
echo original >"$OUT/hlsrc"
if ! ln "$OUT/hlsrc" "$TMPD/hlctl" 2>"$TMPD/err"; then
	fail "${PFX}hard link into the workspace: control link outside the sandbox failed: $(oneline "$TMPD/err")"
else
	attack hardlink "$OUT/hlsrc" "$WS/hl"
	verdict "${PFX}hard link an outside file into the workspace (Landlock refer: EXDEV)" 0 \
		"$([ -e "$WS/hl" ] && echo "$WS/hl exists")"
fi

echo data >"$WS/mv"
attack rename "$WS/mv" "$OUT/mv"
verdict "${PFX}rename a workspace file out of the workspace" 0 \
	"$([ -e "$OUT/mv" ] && echo "$OUT/mv exists")$([ -e "$WS/mv" ] || echo "$WS/mv is gone")"

echo 0123456789 >"$OUT/trunc"
attack truncate "$OUT/trunc"
size=$(wc -c <"$OUT/trunc")
blocked_or_gap "${PFX}truncate(2) an outside file" truncate 3 "the file was truncated to $size bytes" \
	"$([ "$size" = 11 ] || echo "$OUT/trunc is now $size bytes")"

# --- filesystem: reads ----------------------------------------------------------

echo "-----BEGIN OPENSSH PRIVATE KEY----- bpfbox-test" >"$OUT/home/.ssh/id_rsa"
chmod 600 "$OUT/home/.ssh/id_rsa"
attack read "$OUT/home/.ssh/id_rsa"
verdict "${PFX}read a private key planted outside the workspace" 0

attack read "$OUT/home/.ssh"
verdict "${PFX}list a directory outside the workspace" 0

if [ -e /etc/shadow ]; then
	attack read /etc/shadow
	verdict "${PFX}read /etc/shadow (root's DAC allows it)" 0
else
	skip "${PFX}read /etc/shadow: this system has none"
fi

home=$(getent passwd "$(id -u)" | cut -d: -f6)
if [ -n "$home" ] && [ "$home" != / ] && [ -d "$home" ]; then
	attack read "$home"
	verdict "${PFX}list the invoking user's home $home" 0
else
	skip "${PFX}list the invoking user's home: uid $(id -u) has no home directory ('$home')"
fi

if [ -e /dev/kmsg ]; then
	attack read /dev/kmsg
	verdict "${PFX}read /dev/kmsg (not an allowed /dev node)" 0
else
	skip "${PFX}read /dev/kmsg: this system has no /dev/kmsg"
fi

if start_target target env BPFBOX_TEST_TOKEN=bpfbox-leak; then
	attack read "/proc/$tpid/environ"
	verdict "${PFX}read the environment of a process outside (/proc/PID/environ)" 0
	attack read "/proc/$tpid/cwd/home/.ssh/id_rsa"
	verdict "${PFX}read through an outside process's /proc/PID/cwd" 0
else
	fail "${PFX}start the target helper: no ready file"
fi

# --- exec --------------------------------------------------------------------

cp /bin/true "$OUT/true"
rc=0
sb -- "$OUT/true" >"$TMPD/out" 2>"$TMPD/err" || rc=$?
verdict "${PFX}run a program copied outside the allowed dirs (exit $X_NOEXEC)" "$X_NOEXEC"

attack exec "$OUT/escape-copy"
verdict "${PFX}execve a program outside the allowed dirs" 0

ldso=/lib64/ld-linux-x86-64.so.2
if [ -x "$ldso" ]; then
	rc=0
	sb -- "$ldso" "$OUT/escape-copy" exec-landed >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	problem=""
	grep -q ESCAPED "$TMPD/out" && problem="the outside program ran"
	grep -qi "$X_LDSO" "$TMPD/err" || problem="${problem:+$problem; }no '$X_LDSO' from ld.so"
	if [ -z "$problem" ] && [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
		ok "${PFX}run an outside program through ld.so (read denied, exit $rc)"
	elif not_promised; then
		skip "${PFX}run an outside program through ld.so: not promised at level Minimal (no Landlock on this kernel): exit $rc; $problem"
	else
		fail "${PFX}run an outside program through ld.so: exit $rc; $problem; stdout: $(oneline "$TMPD/out"); stderr: $(oneline "$TMPD/err" 300)"
	fi
else
	skip "${PFX}run an outside program through ld.so: no $ldso on this system"
fi

# --- read-only mode ---------------------------------------------------------

echo keep >"$WS/ro"
attack --mode read-only -- open-w "$WS/ro"
verdict "${PFX}read-only mode: open a workspace file for writing" 0
attack --mode read-only -- create "$WS/ro-new"
verdict "${PFX}read-only mode: create a workspace file" 0 "$([ -e "$WS/ro-new" ] && echo "$WS/ro-new was created")"
rc=0
sb --mode read-only -- /bin/cat "$WS/ro" >"$TMPD/out" 2>"$TMPD/err" || rc=$?
verdict "${PFX}read-only mode: reading the workspace still works" 0 \
	"$([ "$(cat "$TMPD/out")" = keep ] || echo "read '$(oneline "$TMPD/out")'")"

# --- terminal injection ------------------------------------------------------

LAYER=seccomp

attack tiocsti-notty
verdict "${PFX}ioctl(TIOCSTI) (seccomp, also with bits above 31 set)" 0

"$BIN/helper" pty "$BPFBOX" run -w "$WS" $NSOPT -- "$WS/escape" tiocsti >"$TMPD/out" 2>"$TMPD/err"
rc=$?
verdict "${PFX}TIOCSTI into a real terminal on stdin (pty)" 0 \
	"$(grep -h 'the terminal saw' "$TMPD/err")"

"$BIN/helper" pty "$BPFBOX" run -w "$WS" $NSOPT -- "$WS/escape" tioclinux >"$TMPD/out" 2>"$TMPD/err"
rc=$?
verdict "${PFX}ioctl(TIOCLINUX) (pty on stdin)" 0

# Another terminal of the user, not the session's: /dev/pts is allowed for
# the session's own terminal and the ptys it creates, but a line "typed" on
# a terminal outside must not be readable (nor output injectable).
"$BIN/helper" ptyhold "$TMPD/pty.ready" </dev/null >/dev/null 2>&1 &
PIDS="$PIDS $!"
if wait_file "$TMPD/pty.ready"; then
	LAYER=landlock
	attack pts "$(cat "$TMPD/pty.ready")"
	verdict "${PFX}open another terminal of the user ($(cat "$TMPD/pty.ready")) and read its input" 0
	LAYER=seccomp
else
	fail "${PFX}open another terminal of the user: the pty helper did not start"
fi

}

if [ $NS_ON = 1 ]; then
	NSOPT=$NS_ENV PFX="" X_NOEXEC=127 X_LDSO="no such file"
	fs_attacks
fi
NSOPT=--no-namespaces PFX="Landlock alone: " X_NOEXEC=126 X_LDSO="permission denied"
fs_attacks
NSOPT=$([ $NS_ON = 1 ] && echo "$NS_ENV")
PFX=""

# --- set-uid and set-gid files (seccomp) -------------------------------------

LAYER=seccomp
setid_cases ""

# --- dangerous kernel interfaces (seccomp) ---------------------------------

attack io_uring
verdict "io_uring_setup/enter/register" 0

if start_target target2; then
	attack ptrace "$tpid"
	tracer=$(sed -n 's/^TracerPid:[[:space:]]*//p' "/proc/$tpid/status" 2>/dev/null)
	verdict "ptrace(PTRACE_ATTACH) a process outside" 0 \
		"$(alive "$tpid" || echo "the target died")$([ "${tracer:-0}" = 0 ] || echo "the target is traced by $tracer")"
	attack vmread "$tpid" "$taddr" "$tlen"
	verdict "process_vm_readv a process outside" 0 \
		"$(grep -q "$tsecret" "$TMPD/out" && echo "the secret was read")"
else
	fail "start the ptrace target helper: no ready file"
fi

attack keyctl
verdict "keyctl/add_key/request_key" 0

attack bpf
verdict "bpf()" 0

attack perf
verdict "perf_event_open()" 0

# The syscall is seccomp's; the open of /dev/userfaultfd is Landlock's.
LAYER=landlock
attack userfaultfd
verdict "userfaultfd()" 0
LAYER=seccomp

attack unshare "$WS/mnt"
verdict "unshare(CLONE_NEWUSER) then mount, clone/clone3 namespaces, setns" 0

attack mount "$WS/mnt"
verdict "mount, umount2, fsopen, move_mount, pivot_root" 0

attack privileged
verdict "swapon, reboot, acct, kexec, modules, syslog, open_by_handle_at, settimeofday" 0

attack clock
verdict "clock_settime, adjtimex" 0

attack personality
verdict "personality() other than the default" 0

# --- foreign syscall ABIs: SIGSYS (exit 159) ---------------------------------

# Control: outside the sandbox int $0x80 must work, or this kernel has no
# i386 emulation and the check would prove nothing.
"$BIN/escape" int80 >/dev/null 2>&1
int80_ctl=$?
attack int80
if [ "$int80_ctl" = 1 ] || [ "$rc" = 1 ]; then
	verdict "i386 syscall through int \$0x80 is killed (SIGSYS)" 159
else
	skip "i386 syscall through int \$0x80: this kernel has no i386 emulation (outside the sandbox it exits $int80_ctl)"
fi

attack x32
verdict "x32 syscall (__X32_SYSCALL_BIT) is killed (SIGSYS)" 159

# --- network ---------------------------------------------------------------

attack sockets
verdict "socket() of every family but AF_UNIX (--net deny; with namespaces AF_INET and AF_INET6 too, in a network namespace of its own)" 0

"$BIN/helper" tcp "$TMPD/tcp.ready" "$TMPD/tcp.mark" </dev/null >/dev/null 2>&1 &
PIDS="$PIDS $!"
if wait_file "$TMPD/tcp.ready"; then
	port=$(cat "$TMPD/tcp.ready")
	"$BIN/escape" tcp-connect "$port" >/dev/null 2>&1 # control: reaches it
	wait_file "$TMPD/tcp.mark"
	ctl=$(lines "$TMPD/tcp.mark")
	attack tcp-connect "$port"
	verdict "connect to a TCP listener on 127.0.0.1 outside" 0 \
		"$(listener_problem "$TMPD/tcp.mark" "$ctl" "$BIN/escape" tcp-connect "$port")"
else
	fail "connect to a TCP listener on 127.0.0.1 outside: the listener did not start"
fi

aname=bpfbox-test-$$
"$BIN/helper" abstract "$aname" "$TMPD/abs.ready" "$TMPD/abs.mark" </dev/null >/dev/null 2>&1 &
PIDS="$PIDS $!"
if wait_file "$TMPD/abs.ready"; then
	"$BIN/escape" abstract "$aname" >/dev/null 2>&1 # control
	wait_file "$TMPD/abs.mark"
	# With the namespaces the session's network namespace has abstract
	# names of its own (ECONNREFUSED); without, Landlock's scope holds.
	for o in "$NSOPT" --no-namespaces; do
		ctl=$(lines "$TMPD/abs.mark")
		_o=$NSOPT NSOPT=$o
		attack abstract "$aname"
		NSOPT=$_o
		problem=$(listener_problem "$TMPD/abs.mark" "$ctl" "$BIN/escape" abstract "$aname")
		blocked_or_gap "connect to an abstract unix socket outside ($([ "$o" = --no-namespaces ] && echo "Landlock alone" || echo "the session's namespaces"))" \
			scope_abstract_unix 6 "the connect reached the listener" "$problem"
	done
else
	fail "connect to an abstract unix socket outside: the listener did not start"
fi

"$BIN/helper" unix "$OUT/agent.sock" "$TMPD/unix.ready" "$TMPD/unix.mark" </dev/null >/dev/null 2>&1 &
PIDS="$PIDS $!"
if wait_file "$TMPD/unix.ready"; then
	"$BIN/escape" unix-path "$OUT/agent.sock" >/dev/null 2>&1 # control
	wait_file "$TMPD/unix.mark"
	ctl=$(lines "$TMPD/unix.mark")
	# Landlock (ABI <= 7) does not mediate connect(2) to pathname unix
	# sockets; the BPF agent's cgroup/connect_unix program does (kernel >=
	# 6.7, root). Without the agent this is a documented gap (SECURITY.md).
	attack unix-path "$OUT/agent.sock"
	# What the attack reached is marked before the next control's line.
	"$BIN/escape" unix-path "$OUT/agent.sock" >/dev/null 2>&1
	wait_count $((ctl + 1)) . "$TMPD/unix.mark" 10
	if [ "$rc" = 0 ]; then
		ok "connect to a pathname unix socket outside, without the BPF agent$(verdict_note)"
	elif has_right resolve_unix; then
		verdict "connect to a pathname unix socket outside, without the BPF agent (Landlock resolve_unix)" 0
	else
		skip "connect to a pathname unix socket outside, without the BPF agent: Landlock cannot mediate it (documented gap); checked with --audit below"
	fi
	ctl=$(lines "$TMPD/unix.mark")
	if [ "$(id -u)" = 0 ] && "$BPFBOX" run -q --audit "$TMPD/unix.audit" -w "$WS" -- true 2>/dev/null &&
		grep -q '"bpf_unix_connect":true' "$TMPD/unix.audit"; then
		attack --audit "$TMPD/unix.audit" -- unix-path "$OUT/agent.sock"
		verdict "connect to a pathname unix socket outside the allowed dirs (docker.sock-like), BPF agent" 0 \
			"$(listener_problem "$TMPD/unix.mark" "$ctl" "$BIN/escape" unix-path "$OUT/agent.sock")"
	else
		skip "connect to a pathname unix socket outside with the BPF agent: needs root and cgroup/connect_unix (kernel >= 6.7); on older kernels a documented gap (SECURITY.md)"
	fi
else
	fail "connect to a pathname unix socket outside: the listener did not start"
fi

# --- --net-allow: socket families (seccomp) -----------------------------------

# An allow rule opens inet sockets in seccomp and no other family (vsock,
# netlink, packet, ...). The rule needs the BPF network layer (--audit,
# root). The server of the positive control (curl, getaddrinfo) lives in a
# network namespace of the test's own on a /30 of 198.51.100.0/24 that no
# route of this host touches yet, reached over a veth pair.
q=$(free_net_block 4) || q=
HOSTADDR=198.51.100.$((q + 1)) SRV=198.51.100.$((q + 2))
NA="--audit $TMPD/netallow.jsonl --net-allow $SRV:8080"
if [ "$(id -u)" != 0 ]; then
	skip "--net-allow socket families: needs root (the BPF network layer); the host suite as root covers it"
else
	# shellcheck disable=SC2086
	attack $NA -- families
	if [ "$rc" = 125 ] && grep -q "needs the BPF network layer" "$TMPD/err"; then
		skip "--net-allow socket families: no BPF network layer here: $(oneline "$TMPD/err" 200)"
	else
		verdict "--net-allow: socket() of AF_VSOCK, AF_NETLINK (ROUTE, SOCK_DIAG, AUDIT, ...), AF_PACKET and every family but AF_UNIX/INET/INET6; socketpair(AF_TIPC)" 0
	fi
fi
if [ "$(id -u)" != 0 ]; then
	: # said above
elif ! command -v ip >/dev/null || ! command -v curl >/dev/null || ! command -v getent >/dev/null ||
	! command -v python3 >/dev/null; then
	skip "--net-allow: curl and getaddrinfo still work: needs ip, curl, getent and python3 (make deps installs them on the host)"
elif [ -z "$q" ]; then
	fail "--net-allow: curl and getaddrinfo still work: every /30 of 198.51.100.0/24 is routed on this host already: $(ip -4 route show to match 198.51.100.0 | head -c 200)"
elif ! ip netns add "bbx-esc-$$"; then
	skip "--net-allow: curl and getaddrinfo still work: cannot make a network namespace here"
else
	NETNS=bbx-esc-$$ HOSTIF=bbs$$h
	mkdir -p "$TMPD/www" && echo "hello-escape-$$" >"$TMPD/www/hello"
	if ip link add "$HOSTIF" type veth peer name bbs$$n 2>"$TMPD/err" &&
		ip link set bbs$$n netns "$NETNS" && ip addr add "$HOSTADDR/30" dev "$HOSTIF" &&
		ip link set "$HOSTIF" up && ip -n "$NETNS" addr add "$SRV/30" dev bbs$$n &&
		ip -n "$NETNS" link set bbs$$n up && ip -n "$NETNS" link set lo up; then
		ip netns exec "$NETNS" python3 -m http.server --bind "$SRV" --directory "$TMPD/www" 8080 \
			</dev/null >/dev/null 2>&1 &
		PIDS="$PIDS $!"
		served() { curl -s --max-time 2 --noproxy '*' "http://$SRV:8080/hello" | grep -q hello-escape; }
		if ! poll_until 20 served; then
			fail "--net-allow: the test's HTTP server on $SRV does not answer outside a session"
		else
			rc=0
			# shellcheck disable=SC2086
			sb $NA -- sh -c 'curl -sS --max-time 10 --noproxy "*" "http://$1:8080/hello" && getent ahosts localhost' \
				sh "$SRV" >"$TMPD/out" 2>"$TMPD/err" || rc=$?
			verdict "--net-allow: curl to the allowed address and getaddrinfo (AI_ADDRCONFIG, no netlink) still work" 0 \
				"$(grep -q "hello-escape-$$" "$TMPD/out" || echo "curl got nothing")$(grep -Eq '^(127\.0\.0\.1|::1) ' "$TMPD/out" || echo "; getent ahosts localhost resolved nothing")"
		fi
	else
		skip "--net-allow: curl and getaddrinfo still work: no veth pair here ($(oneline "$TMPD/err" 100)); the host suite and the egress suite cover it"
	fi
fi

# --- signals ------------------------------------------------------------------

if start_target target3; then
	attack kill "$tpid"
	problem=$(signal_problem target3)
	blocked_or_gap "kill(SIGTERM) a process outside" scope_signal 6 \
		"the signal was delivered ($(alive "$tpid" && echo "target alive" || echo "target died"))" "$problem"
else
	fail "start the signal target helper: no ready file"
fi

# The bpfbox process outside the sandbox enforces the timeout and the
# output cap: the session must not be able to kill it.
# The inner sh writes its PID and execs bpfbox (same PID); the subshell
# collects the status, so a killed bpfbox is not reported as a job.
# Where the kill works (no signal scoping), the session must at least die
# with its supervisor: the attack leaves $WS/survived after one more second.
rm -f "$WS/sup.pid" "$TMPD/sup.rc" "$WS/survived"
(
	sh -c 'echo $$ >"$1.tmp" && mv "$1.tmp" "$1" && shift && exec "$@"' sh "$WS/sup.pid" \
		"$BPFBOX" run -w "$WS" $NSOPT --timeout 30 -- "$WS/escape" kill-file "$WS/sup.pid" "$WS/survived"
	echo $? >"$TMPD/sup.rc"
) </dev/null >"$TMPD/out" 2>"$TMPD/err"
rc=$(cat "$TMPD/sup.rc")
if has_right scope_signal || [ "$rc" != 137 ]; then
	verdict "kill(SIGKILL) the bpfbox supervisor from inside" 0
else
	# The attack makes $WS/survived a second after its kill if it lives on:
	# wait for it to be gone (it dies with its supervisor), then look.
	wait_gone 10 pgrep -f "$WS/escape kill-file" >/dev/null
	if [ -e "$WS/survived" ] || pgrep -f "$WS/escape kill-file" >/dev/null; then
		fail "kill(SIGKILL) the bpfbox supervisor from inside: it was killed (no Landlock scope_signal on ABI ${ABI:-?}) and the session outlived it, free of its timeout and output cap"
	else
		gap "kill(SIGKILL) the bpfbox supervisor from inside" scope_signal 6 \
			"the supervisor was killed (exit 137); the session died with it"
	fi
fi

# --- private temp dirs ------------------------------------------------------------

LAYER=landlock

# Session A keeps its $TMPDIR with a file in it until told to end; session B
# must not read that file. With namespaces A's /tmp is a tmpfs of its own:
# the control looks at it through /proc/PID/root of A's first process.
for mode in ns landlock; do
	if [ $mode = ns ]; then
		[ $NS_ON = 1 ] || continue
		opt=$NS_ENV pfx=""
	else
		opt=--no-namespaces pfx="Landlock alone: "
	fi
	rm -f "$WS/tmpA" "$WS/tmpA.done"
	"$BPFBOX" run -w "$WS" $opt --timeout 20 -- sh -c ': "${TMPDIR:?}" && echo secret-of-A >"$TMPDIR/secret" && echo "$TMPDIR" >"$1.tmp" &&
		mv "$1.tmp" "$1" && while [ ! -e "$1.done" ]; do sleep 0.05; done' sh "$WS/tmpA" </dev/null >/dev/null 2>&1 &
	sa=$!
	if wait_file "$WS/tmpA"; then
		tA=$(cat "$WS/tmpA")
		ctl=$tA/secret
		# Through a process of A that the test may look into: the init is
		# not dumpable (not readable by an unprivileged caller), the
		# command below it is.
		if [ $mode = ns ]; then
			kids=$(cat /proc/$sa/task/*/children 2>/dev/null)
			ctl=/proc/$(echo $kids | cut -d' ' -f1)/root$tA/secret
			for k in $kids $(for k in $kids; do cat /proc/$k/task/*/children 2>/dev/null; done); do
				[ -f "/proc/$k/root$tA/secret" ] && ctl=/proc/$k/root$tA/secret && break
			done
		fi
		o=$NSOPT
		NSOPT=$opt
		attack read "$tA/secret"
		NSOPT=$o
		verdict "${pfx}read another session's private \$TMPDIR" 0 \
			"$([ -f "$ctl" ] || echo "control: $ctl does not exist")"
	else
		fail "${pfx}read another session's private \$TMPDIR: session A did not start"
	fi
	touch "$WS/tmpA.done"
	wait "$sa"
done

# --- what the namespaces close (Landlock alone cannot) -------------------------

if [ $NS_ON = 1 ]; then
	# File metadata outside the workspace: Landlock has no right for it.
	# A file of ours in a host dir the session sees (not under /tmp, which
	# it does not), and one in a --ro grant.
	META=$(mktemp -d /var/lib/bpfbox-escape.XXXXXX 2>/dev/null) || META=""
	for target in ${META:+$META/meta} "$OUT/meta"; do
		echo keep >"$target"
		chmod 644 "$target"
		before=$(stat -c '%a %Y' "$target")
		attack --ro "$OUT" -- meta "$target"
		after=$(stat -c '%a %Y' "$target")
		verdict "chmod u+s, chmod 777, utimes, setxattr of $target (EROFS)" 0 \
			"$([ "$before" = "$after" ] || echo "mode/mtime changed from $before to $after")"
		# The forms the C library may not wrap: refused alike, and the
		# listener (no BPF here) names each in the summary.
		before=$(stat -c '%a %u' "$target")
		attack --ro "$OUT" -- meta-at "$target"
		after=$(stat -c '%a %u' "$target")
		miss=""
		for op in chown chmod setxattr removexattr; do
			grep -q "^absent: $op " "$TMPD/out" ||
				grep -q "$op refused: $target is outside the writable paths" "$TMPD/err" ||
				miss="$miss $op"
		done
		verdict "fchownat(AT_EMPTY_PATH), fchmodat2, setxattrat, removexattrat of $target (EROFS; $(grep -c '^absent' "$TMPD/out") absent here)" 0 \
			"$([ "$before" = "$after" ] || echo "mode/owner changed from $before to $after")$([ -z "$miss" ] || echo "the summary does not name:$miss")"
	done
	[ -n "$META" ] && rm -rf "$META"
	[ -n "$META" ] || skip "chmod of a host file outside: cannot make a dir in /var/lib here; the --ro case ran"
	echo keep >"$WS/meta-ws"
	rc=0
	sb -- sh -c 'chmod +x "$1" && touch -d @1 "$1"' sh "$WS/meta-ws" >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	verdict "control: chmod +x and touch inside the workspace work" 0 \
		"$([ -x "$WS/meta-ws" ] || echo "not executable")"

	# Another process's command line (secrets passed as arguments).
	sec=cmdline-secret-$$
	if start_target "$sec"; then
		attack proc-scan cmdline-secret "-$$" "$tpid"
		verdict "read another process's /proc/PID/cmdline, kill(0) it (ESRCH)" 0 \
			"$(grep -qa "$sec" "/proc/$tpid/cmdline" || echo "control: the secret is not in /proc/$tpid/cmdline outside")"
	else
		fail "start the cmdline target helper: no ready file"
	fi

	# SysV shared memory of the host, and a segment left behind.
	key=$(( ($$ % 30000) * 1000 + 4242 ))
	if id=$("$BIN/escape" shm-plant "$key" "shm-secret-$$") && [ -n "$id" ]; then
		attack shm-read "$key" "$id"
		verdict "attach the host's SysV shm segment by key (ENOENT) and by id (EINVAL)" 0
		ipcrm -m "$id" 2>/dev/null
	else
		fail "SysV shm: cannot plant a segment outside: $id"
	fi
	key2=$((key + 1))
	attack shm-leave "$key2"
	left=$(awk -v k="$key2" '$1 == k { print $2 }' /proc/sysvipc/shm)
	[ -n "$left" ] && ipcrm -m "$left" 2>/dev/null
	verdict "a SysV shm segment made in a session is gone after it" 0 \
		"$(grep -q "segment .* made" "$TMPD/out" || echo "control: the session made no segment")$([ -z "$left" ] || echo "segment $left is left on the host")"

	# The private /tmp is a tmpfs bounded by the disk limit, in bytes and in
	# inodes (empty files cost no blocks): both end in ENOSPC. (Without it
	# the disk monitor pauses the session: timeout(1) bounds that case.)
	rc=0
	command -v python3 >/dev/null 2>&1 || skip "fill the private /tmp: no python3 here"
	command -v python3 >/dev/null 2>&1 &&
	timeout 60 $AS "$BPFBOX" run -w "$WS" $NSOPT --disk 2 -- python3 -c '
import errno, os
t = os.environ["TMPDIR"]
n = 0
try:
    for i in range(6000):
        open("%s/e%d" % (t, i), "w").close()
        n += 1
except OSError as e:
    print("inodes", n, errno.errorcode[e.errno])
try:
    with open(t + "/big", "wb") as f:
        for i in range(48):
            f.write(b"x" * 65536)
            f.flush()
except OSError as e:
    print("bytes", errno.errorcode[e.errno])
' </dev/null >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	n=$(sed -n 's/^inodes \([0-9]*\) ENOSPC$/\1/p' "$TMPD/out")
	command -v python3 >/dev/null 2>&1 &&
	verdict "fill the private /tmp under --disk 2: inodes and bytes end in ENOSPC" 0 \
		"$([ -n "$n" ] && [ "$n" -ge 1000 ] || echo "no ENOSPC after thousands of empty files (or too few: '$n')")$(grep -q '^bytes ENOSPC$' "$TMPD/out" || echo "; 3 MB written past a 2 MB limit")"

	# A file in the host's /dev/shm.
	echo "devshm-secret-$$" >"/dev/shm/bpfbox-test-$$"
	attack read "/dev/shm/bpfbox-test-$$"
	verdict "read a file in the host's /dev/shm" 0 \
		"$([ -f "/dev/shm/bpfbox-test-$$" ] || echo "control: the file is missing outside")$(grep -q devshm-secret "$TMPD/out" && echo "the secret was read")"
	rm -f "/dev/shm/bpfbox-test-$$"

	# A daemon (setsid, double fork, ignores SIGTERM) left when the command
	# ends on its own: the PID namespace's init ends and the kernel kills it.
	HB=$WS/heartbeat2.$$
	MARK=$HB
	rm -f "$WS/daemon2.pid"
	rc=0
	sb -- sh -c '"$1" daemon "$2" "$3" >/dev/null 2>&1 & i=0; while [ ! -s "$3" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; exit 0' \
		sh "$WS/escape" "$HB" "$WS/daemon2.pid" >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	# SIGKILLed with the session; its exit may still be under way for a
	# moment on a loaded host. One that survives is still there after 5 s.
	none_marked() { [ -z "$(marked_pids)" ]; }
	poll_until 5 none_marked
	left=$(marked_pids)
	s1=$(wc -c <"$HB" 2>/dev/null || echo 0)
	# Positive control first: the daemon ran (its pid file), then the absence.
	problem=""
	[ -s "$WS/daemon2.pid" ] || problem="control: the daemon never started;"
	[ -z "$left" ] || problem="$problem daemon still alive (pid $left);"
	verdict "a daemonized process (setsid + double fork) does not outlive the command" 0 "$problem"
	kill_marked
	MARK=""
else
	skip "namespace escapes (chmod, cmdline, SysV shm, /dev/shm, daemon): this host refuses the session's namespaces; the VM matrix covers them"
fi

# --- process state ------------------------------------------------------------

LAYER=seccomp

# Only allowlisted names may reach the command; secrets of the caller not.
rc=0
env AWS_SECRET_ACCESS_KEY=bpfbox-leak GITHUB_TOKEN=bpfbox-leak SSH_AUTH_SOCK=/bpfbox-leak \
	"$BPFBOX" run -w "$WS" --env BPFBOX_EXTRA=one -- /usr/bin/env </dev/null >"$TMPD/out" 2>"$TMPD/err" || rc=$?
wsreal=$(cd "$WS" && pwd -P)
problem=""
for name in $(sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' "$TMPD/out"); do
	case $name in
	PATH | HOME | LANG | TERM | TMPDIR | BPFBOX_SESSION_ID | BPFBOX_WORKSPACE | BPFBOX_EXTRA) ;;
	# update checks off (session_env.c quiet_env, docs/runtime.md)
	npm_config_update_notifier | NO_UPDATE_NOTIFIER | PIP_DISABLE_PIP_VERSION_CHECK) ;;
	# the toolchains of the caller's home, when it has them (docs/runtime.md)
	NVM_DIR | PYENV_ROOT | SDKMAN_DIR | GOPATH | RUSTUP_HOME | CARGO_HOME) ;;
	*)
		# The caller's certificate and package-index variables pass as
		# the caller set them (the list: userspace/sandbox/env_pass.h).
		if grep -q "^	FILE(\"$name\")\|^	URL(\"$name\")" "$ROOT/userspace/sandbox/env_pass.h" &&
			grep -qxF "$name=$(printenv "$name")" "$TMPD/out"; then
			:
		else
			problem="$problem $name is set;"
		fi
		;;
	esac
done
grep -q bpfbox-leak "$TMPD/out" && problem="$problem a secret value leaked;"
for want in PATH TMPDIR BPFBOX_SESSION_ID BPFBOX_WORKSPACE "BPFBOX_EXTRA=one" "HOME=/.*/bpfbox-[0-9a-f]{32}\.home\$"; do
	grep -Eq "^$want" "$TMPD/out" || problem="$problem no $want;"
done
verdict "environment: only allowlisted names, secrets of the caller dropped" 0 "$problem"

# Inherited descriptors: 7 and 8 open in the caller, none may remain inside.
rc=0
"$BPFBOX" run -w "$WS" -- "$WS/escape" fds </dev/null >"$TMPD/out" 2>"$TMPD/err" \
	7<"$OUT/home/.ssh/id_rsa" 8>>"$OUT/victim" || rc=$?
verdict "no inherited file descriptor above 2" 0

if [ "$(id -u)" = 0 ]; then
	attack creds
	verdict "no_new_privs, seccomp mode 2, all capability sets empty (root caller)" 0
else
	# See the unprivileged repeat below: the bounding set stays.
	attack creds unprivileged-caller
	verdict "no_new_privs, seccomp mode 2, no capabilities (unprivileged caller)" 0
fi

# A daemon (setsid, double fork, ignores SIGTERM, keeps the output pipes)
# must be gone when --timeout ends the session with 124.
HB=$WS/heartbeat.$$
MARK=$HB
t0=$(date +%s)
attack --timeout 1 -- daemon "$HB" "$WS/daemon.pid"
t1=$(date +%s)
s1=$(wc -c <"$HB" 2>/dev/null || echo 0)
left=$(marked_pids)
# The window to see the heartbeat grow ends on an event, not a time: a
# writer outside at the daemon's pace (100 ms) beats 3 more times.
(while :; do printf . >>"$TMPD/beat.ctl"; sleep 0.1; done) &
beat=$!
poll_until 10 sh -c '[ "$(wc -c <"$1" 2>/dev/null || echo 0)" -ge 3 ]' sh "$TMPD/beat.ctl"
kill "$beat"
s2=$(wc -c <"$HB" 2>/dev/null || echo 0)
problem=""
[ "$s1" -gt 0 ] || problem="$problem the daemon never wrote its heartbeat;"
[ -z "$left" ] || problem="$problem daemon still alive (pid $left: $(cat "/proc/${left%% *}/cmdline" 2>/dev/null | tr '\0' ' '));"
[ "$s1" = "$s2" ] || problem="$problem heartbeat grew from $s1 to $s2 bytes after bpfbox exited;"
[ $((t1 - t0)) -le 15 ] || problem="$problem bpfbox took $((t1 - t0)) s;"
verdict "--timeout 1 kills a daemonized, SIGTERM-ignoring process (exit 124)" 124 "$problem"
kill_marked
MARK=""

# --- bad input ------------------------------------------------------------------

rc=0
"$BPFBOX" run -w / -- "$WS/escape" create "$OUT/ran" </dev/null >"$TMPD/out" 2>"$TMPD/err" || rc=$?
verdict "a workspace of / is refused (125, nothing runs)" 125 "$([ -e "$OUT/ran" ] && echo "the command ran")"

rm -f "$OUT/ran"
rc=0
"$BPFBOX" run -w "$TMPD/no-such-dir" -- "$WS/escape" create "$OUT/ran" </dev/null >"$TMPD/out" 2>"$TMPD/err" || rc=$?
verdict "a missing workspace is refused (125, nothing runs)" 125 "$([ -e "$OUT/ran" ] && echo "the command ran")"

# --- the same as an unprivileged user ------------------------------------------

NOBODY=65534
if [ "$(id -u)" != 0 ]; then
	skip "unprivileged repeat: already running as uid $(id -u)"
elif ! command -v setpriv >/dev/null 2>&1; then
	skip "unprivileged repeat: no setpriv on this system"
else
	AS="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"
	NB=$TMPD/nb
	WS=$NB/ws
	OUT=$NB/outside
	mkdir -p "$WS/mnt" "$OUT"
	cp "$BIN/escape" "$WS/escape"
	# Everything outside belongs to the user too: only the sandbox stands
	# between it and these files, not the file permissions.
	echo original >"$OUT/victim"
	echo original >"$OUT/hlsrc"
	echo "secret-of-uid-$NOBODY" >"$OUT/id_rsa"
	echo 0123456789 >"$OUT/trunc"
	chmod 600 "$OUT/id_rsa"
	chown -R "$NOBODY:$NOBODY" "$NB"
	LAYER=landlock
	if ! sb -- /bin/true >"$TMPD/out" 2>"$TMPD/err"; then
		fail "unprivileged: '$AS $BPFBOX run -- /bin/true' fails: $(oneline "$TMPD/err")"
	else
		attack create "$OUT/new"
		verdict "unprivileged: create a file outside the workspace" 0 "$([ -e "$OUT/new" ] && echo "$OUT/new was created")"
		attack read "$OUT/id_rsa"
		verdict "unprivileged: read the user's own file outside the workspace" 0
		attack symlink-write "$OUT/victim" "$WS/link"
		verdict "unprivileged: write through a workspace symlink" 0 \
			"$([ "$(cat "$OUT/victim")" = original ] || echo "$OUT/victim was changed")"
		attack hardlink "$OUT/hlsrc" "$WS/hl"
		verdict "unprivileged: hard link an own outside file into the workspace (EXDEV)" 0 \
			"$([ -e "$WS/hl" ] && echo "$WS/hl exists")"
		attack truncate "$OUT/trunc"
		size=$(wc -c <"$OUT/trunc")
		blocked_or_gap "unprivileged: truncate(2) an own outside file" truncate 3 "the file was truncated" \
			"$([ "$size" = 11 ] || echo "now $size bytes")"
		LAYER=seccomp
		if start_target nbtarget $AS; then
			attack ptrace "$tpid"
			verdict "unprivileged: ptrace a same-uid process outside" 0 "$(alive "$tpid" || echo "the target died")"
			attack vmread "$tpid" "$taddr" "$tlen"
			verdict "unprivileged: process_vm_readv a same-uid process outside" 0 \
				"$(grep -q "$tsecret" "$TMPD/out" && echo "the secret was read")"
			attack kill "$tpid"
			problem=$(signal_problem nbtarget)
			blocked_or_gap "unprivileged: kill(SIGTERM) a same-uid process outside" scope_signal 6 \
				"the signal was delivered" "$problem"
		else
			fail "unprivileged: start the target helper: no ready file"
		fi
		$AS "$BIN/helper" ptyhold "$NB/pty.ready" </dev/null >/dev/null 2>&1 &
		PIDS="$PIDS $!"
		if wait_file "$NB/pty.ready"; then
			LAYER=landlock
			attack pts "$(cat "$NB/pty.ready")"
			verdict "unprivileged: open another terminal of the user and read its input" 0
			LAYER=seccomp
		else
			fail "unprivileged: the pty helper did not start"
		fi
		setid_cases "unprivileged: "
		for a in io_uring keyctl bpf unshare sockets fds; do
			attack "$a"
			verdict "unprivileged: $a" 0
		done
		# Without CAP_SETPCAP the bounding set cannot be emptied; with
		# no_new_privs and empty permitted/effective sets it grants nothing.
		attack creds unprivileged-caller
		verdict "unprivileged: no_new_privs, seccomp, no capabilities" 0
		attack int80
		# As above: only where int $0x80 works outside (the VM's kernels).
		if [ "$int80_ctl" = 1 ] || [ "$rc" = 1 ]; then
			verdict "unprivileged: i386 syscall through int \$0x80 is killed (SIGSYS)" 159
		else
			skip "unprivileged: i386 syscall through int \$0x80: this kernel has no i386 emulation (outside the sandbox it exits $int80_ctl); the VM's Standard cells run it"
		fi
	fi
	# No user namespaces for this caller: inside a chroot (a private mount
	# namespace of this test, the host's / bound at $NB/root) the kernel
	# refuses CLONE_NEWUSER. The run must say what is missing and still
	# hold at its level (Landlock's own errnos).
	mkdir -p "$NB/root"
	cat >"$TMPD/chroot.sh" <<-'EOF2'
		r=$1
		shift
		mount --make-rprivate / && mount --rbind / "$r" && exec chroot "$r" "$@"
	EOF2
	if ! sb -- /bin/true >/dev/null 2>&1; then
		skip "no user namespaces (chroot): the unprivileged run does not work here (see above)"
	elif command -v unshare >/dev/null 2>&1 && command -v chroot >/dev/null 2>&1; then
		AS="unshare -m sh $TMPD/chroot.sh $NB/root setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"
		NSOPT=""
		rc=0
		sb -- /bin/true >"$TMPD/out" 2>"$TMPD/err" || rc=$?
		verdict "no user namespaces (chroot): runs and names the missing namespaces" 0 \
			"$(grep -q "not enforced on this host: .*read-only host.*(no namespaces: " "$TMPD/err" || echo "no not-enforced line for the namespaces")"
		attack create "$OUT/new-nouserns"
		LAYER=landlock
		verdict "no user namespaces (chroot): create a file outside the workspace (Landlock)" 0 \
			"$([ -e "$OUT/new-nouserns" ] && echo "it was created")"
		attack read "$OUT/id_rsa"
		verdict "no user namespaces (chroot): read the user's own file outside (Landlock)" 0
		LAYER=seccomp
		for a in keyctl unshare sockets; do
			attack "$a"
			verdict "no user namespaces (chroot): $a" 0
		done
	else
		skip "no user namespaces (chroot): needs unshare and chroot"
	fi
	AS=""
	NSOPT=$([ $NS_ON = 1 ] && echo "$NS_ENV")
fi

# --- through a daemon ---------------------------------------------------------

# The same filter holds when the session runs through bpfbox daemon (root):
# the set-id calls and, with an allow rule, the socket families.
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ "$(id -u)" != 0 ] || [ -z "$CG2" ]; then
	skip "set-id modes and --net-allow families through a daemon: needs root and cgroup2; CI runs as root"
else
	WS=$TMPD/ws AS="" SOCKDIR=$TMPD/sock SOCK=$TMPD/sock/bpfbox.sock DERR=$TMPD/daemon.err
	PIN=/sys/fs/bpf/bpfbox-escape-$$ PARENT=$CG2/bpfbox-escape-$$
	: >"$DERR"
	if start_daemon "$TMPD/daemon.jsonl"; then
		LAYER=seccomp
		rm -rf "$WS/setid" && mkdir "$WS/setid"
		attack --daemon-socket "$SOCK" -- setid "$WS/setid"
		verdict "through a daemon: set-id modes by every call" 0 "$(setid_problem "$WS/setid")"
		rm -rf "$WS/setid"
		attack --daemon-socket "$SOCK" --net-allow "$SRV:8080" -- families
		verdict "through a daemon: --net-allow socket families" 0
	else
		fail "through a daemon: the daemon did not start: $(oneline "$DERR")"
	fi
fi

finish
