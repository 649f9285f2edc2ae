# Secrets on command lines never reach the audit stream nor the daemon's
# list reply: each form of docs/events.md ("Redaction") run for real in an
# audited session (fake programs of the same names, so only their argv
# matters), its exec recorded with [REDACTED] where the secret was, and the
# marker value found nowhere; ordinary flags (ls -p, grep -a, zip -r) kept.
. "$(dirname "$0")/../lib.sh"

need_root_cgroup2 redact "an audited session (--audit loads BPF programs)"
daemon_scratch redact
M=Xq9MarkSecret
FAKES="docker sshpass az openssl redis-cli smbclient htpasswd gpg 7z zip ssh-keygen tool"
mkdir -p "$WS/bin"
printf '#!/bin/sh\nexit 0\n' >"$WS/bin/fake"
chmod 755 "$WS/bin/fake"
for p in $FAKES; do
	ln -s fake "$WS/bin/$p"
done
# One line a form; the last three are the ordinary flags that must stay.
# The session's command (sh forms.sh sshpass -p SECRET) holds one too.
cat >"$WS/forms.sh" <<FORMS
B=./bin
\$B/docker login -u me -p $M reg.io
\$B/sshpass -p $M ssh host
\$B/az login -u me -p $M
\$B/openssl pkcs12 -pass pass:$M -passout pass:$M -passin pass:$M
\$B/redis-cli -h db -a $M ping
\$B/smbclient //h/s -U me%$M
\$B/htpasswd -b -c pwfile me $M
\$B/gpg --batch --passphrase $M -c f
\$B/7z a -p$M out.7z d
\$B/zip -P $M out.zip d
\$B/ssh-keygen -N $M -f k
\$B/tool --pass=$M --passphrase=$M
env DB_PASS=$M SMTP_PASS=$M STRIPE_KEY=rk_live_$M \$B/tool
\$B/tool 'machine h login me password $M'
ls -p . >/dev/null
grep -a x /dev/null
\$B/zip -r out.zip d
FORMS
A="$TMPD/audit.jsonl"
cd "$WS" || exit 1
expect_rc 0 "an audited session runs every form" \
	"$BPFBOX" run -q --no-daemon --audit "$A" -w "$WS" --env DB_PASS=$M -- sh forms.sh sshpass -p $M
# The positive control: each fake program's exec is there, the marker's
# place redacted (a script's exec: argv is /bin/sh ./bin/NAME ARGS...).
for p in $FAKES; do
	check_events "$A" "any(e['type'] == 'exec' and e['argv'][1:2] == ['./bin/$p'] and any('[REDACTED]' in a for a in e['argv']) for e in ev)" \
		"exec of $p recorded, its secret [REDACTED]"
done
check_events "$A" "any(e['type'] == 'exec' and e['argv'][:4] == ['env', 'DB_PASS=[REDACTED]', 'SMTP_PASS=[REDACTED]', 'STRIPE_KEY=[REDACTED]'] for e in ev)" \
	"env NAME=VALUE: the values of names holding PASS, KEY redacted"
check_events "$A" "any(e['type'] == 'exec' and e['argv'] == ['ls', '-p', '.'] for e in ev) and any(e['type'] == 'exec' and e['argv'] == ['grep', '-a', 'x', '/dev/null'] for e in ev) and any(e['type'] == 'exec' and e['argv'][1:] == ['./bin/zip', '-r', 'out.zip', 'd'] for e in ev)" \
	"ls -p, grep -a, zip -r: kept as they were"
check_events "$A" "ev[0]['command'] == ['sh', 'forms.sh', 'sshpass', '-p', '[REDACTED]'] and ev[0]['policy']['env']['DB_PASS'] == '[REDACTED]'" \
	"session.start: the command and policy.env redacted"
if grep -q "$M" "$A"; then
	fail "the marker is in the audit file: $(grep -o ".\{60\}$M.\{20\}" "$A" | head -3 | tr '\n' '|')"
else
	ok "the marker is nowhere in the audit file"
fi

# Through a daemon: its list reply and its audit file.
DA="$TMPD/daemon.jsonl"
if ! start_daemon "$DA"; then
	fail "the daemon did not get ready: $(head -c 300 "$DERR")"
	finish
	exit 1
fi
rm -f "$WS/held" "$WS/go"
"$BPFBOX" run -q --daemon-socket "$SOCK" -w "$WS" --env DB_PASS=$M -- sh -c \
	'echo $BPFBOX_SESSION_ID >held; while [ ! -e go ]; do sleep 0.05; done' ./bin/sshpass -p $M \
	>/dev/null 2>&1 &
RUNPID=$!
if wait_file "$WS/held"; then
	"$BPFBOX" sessions --json --socket "$SOCK" >"$TMPD/list.json" 2>&1
	expect_grep '"-p", *"\[REDACTED\]"' "$TMPD/list.json" "the daemon's list shows the command redacted"
	if grep -q "$M" "$TMPD/list.json"; then
		fail "the marker is in the daemon's list reply: $(head -c 400 "$TMPD/list.json")"
	else
		ok "the marker is not in the daemon's list reply"
	fi
else
	fail "the session through the daemon did not start: $(head -c 300 "$DERR")"
fi
touch "$WS/go"
expect_wait "$RUNPID" 0 "the session through the daemon ends"
SID=$(cat "$WS/held" 2>/dev/null)
wait_events "$DA" "mine and mine[-1]['type'] == 'session.end'"
check_events "$DA" "mine[0]['command'][-3:] == ['./bin/sshpass', '-p', '[REDACTED]'] and mine[0]['policy']['env']['DB_PASS'] == '[REDACTED]'" \
	"the daemon's session.start: the command and policy.env redacted"
if grep -q "$M" "$DA"; then
	fail "the marker is in the daemon's audit file: $(grep -o ".\{60\}$M.\{20\}" "$DA" | head -3 | tr '\n' '|')"
else
	ok "the marker is nowhere in the daemon's audit file"
fi
finish
