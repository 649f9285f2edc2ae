# The command line of the commands that parse through cli_parse
# (cli/usage.c): each bad usage is one line on stderr naming the problem
# and exit 2, --help is the usage on stdout and exit 0, a good option list
# gets as far as the daemon (none answers on the private socket: exit 1).
# No daemon, no kernel state: seconds.
. "$(dirname "$0")/../lib.sh"

LONG=$(printf '%0300d' 0 | tr 0 a)

# WANT-RC STREAM PATTERN ARGS...: one case a line; STREAM out or err.
while read -r want stream pattern args; do
	[ -n "$want" ] || continue
	name="bpfbox $(printf '%.50s' "$args")"
	# shellcheck disable=SC2086 # the args are words
	expect_rc "$want" "$name: exit $want" "$BPFBOX" $args
	expect_grep "$pattern" "$TMPD/$stream" "$name: $stream says so"
	[ "$(wc -l <"$TMPD/err")" -le 1 ] || [ "$want" != 2 ] ||
		fail "$name: more than one line on stderr: $(oneline "$TMPD/err")"
done <<EOF
2 err ^bpfbox.status:.unknown.or.incomplete.option.'--bogus';.see.'bpfbox.status.--help'$ status --bogus
2 err ^bpfbox.status:.unknown.level.'nope' status -r nope
2 err ^bpfbox.status:.unexpected.argument.'extra' status extra
0 out ^usage:.bpfbox.status status -h
2 err ^bpfbox.sessions:.unexpected.argument.'extra' sessions extra
2 err ^bpfbox.sessions:.unknown.or.incomplete.option.'--socket' sessions --socket
1 err ^bpfbox.sessions:.no.daemon.answers sessions --json
0 out ^usage:.bpfbox.sessions sessions --help
2 err ^bpfbox.net:.unknown.or.incomplete.option.'--nope' net --nope
0 out ^usage:.bpfbox.net net --help
2 err ^bpfbox.answer:.unknown.or.incomplete.option.'-x' answer -x
2 err ^bpfbox.events:.--idle.0:.give.whole.seconds events --idle 0
2 err ^bpfbox.events:.--format.y:.use.json events --format y
2 err ^bpfbox.events:.--type.nope:.unknown.event.type events --type nope
2 err ^bpfbox.events:.--type.is.limited.to.255.bytes events --type $LONG
2 err ^bpfbox.events:.--session.abc:.give.a.session.id events --session abc
2 err ^bpfbox.events:.unexpected.argument.'extra' events -f extra
1 err ^bpfbox.events:.no.daemon.answers events -f --type exec,file --format text
2 err ^bpfbox.top:.--delay.wants.seconds.from.0.2.to.60,.not.'0' top -d 0
2 err ^bpfbox.top:.unknown.or.incomplete.option.'-d' top -d
2 err ^bpfbox.top:.unknown.sort.column.'nope' top --sort nope
2 err ^bpfbox.top:.unexpected.argument.'extra' top extra
1 err ^bpfbox.top:.no.daemon.answers top --once --sort memory --reverse
0 out ^usage:.bpfbox.top top --help
2 err ^bpfbox.daemon:.unknown.or.incomplete.option.'--bogus' daemon --bogus
2 err ^bpfbox.daemon:.unexpected.argument.'extra' daemon extra
2 err ^bpfbox.daemon:.--audit-ring.5:.give.a.power.of.two daemon --audit-ring 5
2 err ^bpfbox.daemon:.--max-sessions-per-uid.0:.give.a.number.from.1.to.4096 daemon --max-sessions-per-uid 0
2 err ^bpfbox.daemon:.--max-conns-per-uid.5000:.give.a.number daemon --max-conns-per-uid 5000
2 err ^bpfbox.daemon:.--audit-argv.10:.give.bytes.from.64 daemon --audit-argv 10
2 err ^bpfbox.daemon:.--audit-rate.x:.give.records.a.second daemon --audit-rate x
2 err ^bpfbox.daemon:.--sink.'nope': daemon --sink nope
2 err ^bpfbox.daemon:.--bpf-stats.counts daemon --bpf-stats
2 err ^bpfbox.daemon:.--socket,.--pin-dir.and.--cgroup-parent.take.absolute daemon --socket relative
0 out ^usage:.bpfbox.daemon daemon --help
EOF
finish
