// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox top: one event line of the subscription into its session's
 * counters, rates and tail (the lines of the events view).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "internal.h"
#include "../probe/probe.h"
#include "../lib/util.h"

/* "02:39:45.962" out of "2026-11-22T02:39:45.962973449Z". */
static void event_clock(struct json_object *o, char *buf, size_t size)
{
	const char *time = json_member_str(o, "time");

	if (time && strlen(time) >= 23)
		snprintf(buf, size, "%.12s", time + 11);
	else
		snprintf(buf, size, "%12s", "");
}

/* What an event did, in one line: "open /etc/x", "connect 1.2.3.4:80". */
static void event_what(const char *type, struct json_object *o, char *buf, size_t size)
{
	char argv[512] = "", path[300];
	const char *str;
	int64_t i = 0, j = 0;

	if (streq(type, "exec")) {
		struct json_object *a;
		char *joined = NULL;

		if (json_object_object_get_ex(o, "argv", &a))
			joined = top_join_argv(a);
		term_clean(path, sizeof(path), (str = json_member_str(o, "filename")) ? str : "?");
		snprintf(argv, sizeof(argv), "%s", joined ? joined : "");
		free(joined);
		snprintf(buf, size, "exec %s%s%s", path, argv[0] ? "  " : "", argv);
	} else if (streq(type, "file")) {
		str = json_member_str(o, "path");
		term_clean(path, sizeof(path), str ? str : "?");
		json_member_int(o, "count", &i);
		json_member_int(o, "flags", &j);
		snprintf(buf, size, "open %s%s", path,
			 (j & 3) == 0	? ""
			 : (j & 3) == 1 ? " (write)"
					: " (read-write)");
		if (i > 1)
			snprintf(buf + strlen(buf), size - strlen(buf), " x%lld", (long long)i);
	} else if (streq(type, "connect")) {
		str = json_member_str(o, "family");
		if (str && streq(str, "unix")) {
			str = json_member_str(o, "path");
			term_clean(path, sizeof(path), str ? str : "?");
			snprintf(buf, size, "connect unix:%s", path);
		} else {
			json_member_int(o, "port", &i);
			str = json_member_str(o, "address");
			term_clean(path, sizeof(path), str ? str : "?");
			snprintf(buf, size,
				 str && strchr(str, ':') ? "connect [%s]:%lld" : "connect %s:%lld",
				 path, (long long)i);
		}
	} else if (startswith(type, "net.")) {
		char name[140], rule[100];

		json_member_int(o, "port", &i);
		str = json_member_str(o, "name");
		term_clean(name, sizeof(name), str && *str ? str : "?");
		str = json_member_str(o, "address");
		term_clean(path, sizeof(path), str ? str : "-");
		str = json_member_str(o, streq(type, "net.deny") ? "reason" : "rule");
		term_clean(rule, sizeof(rule), str ? str : "");
		snprintf(buf, size, "%s %s %s (%s):%lld  %s", type,
			 json_member_str(o, "protocol") ? json_member_str(o, "protocol") : "?",
			 name, path, (long long)i, rule);
	} else if (streq(type, "fork")) {
		json_member_int(o, "child_pid", &i);
		snprintf(buf, size, "fork -> pid %lld", (long long)i);
	} else if (streq(type, "exit")) {
		if (json_member_int(o, "exit_code", &i))
			snprintf(buf, size, "exit %lld", (long long)i);
		else
			snprintf(buf, size, "exit, signal %lld",
				 json_member_int(o, "signal", &j) ? (long long)j : 0LL);
	} else {
		snprintf(buf, size, "%s", type);
	}
}

/* "name:port" first in s->dests (once), the oldest dropped when full. */
static void add_dest(struct top_session *s, struct json_object *o)
{
	const char *name = json_member_str(o, "name"), *proto = json_member_str(o, "protocol");
	char one[140], clean[128], rest[sizeof(s->dests)], all[320], *p;
	int64_t port = 0;

	if (!name || !*name || (proto && streq(proto, "dns")))
		return;
	json_member_int(o, "port", &port);
	term_clean(clean, sizeof(clean), name);
	snprintf(one, sizeof(one), "%s:%lld", clean, (long long)port);
	/* Drop an earlier mention, then put it first. */
	snprintf(rest, sizeof(rest), "%s", s->dests);
	for (p = rest; (p = strstr(p, one));) {
		size_t l = strlen(one);

		if ((p == rest || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0')) {
			memmove(p, p + l + (p[l] == ' '), strlen(p + l + (p[l] == ' ')) + 1);
			continue;
		}
		p += l;
	}
	while (rest[0] && rest[strlen(rest) - 1] == ' ')
		rest[strlen(rest) - 1] = '\0';
	snprintf(all, sizeof(all), "%s%s%s", one, rest[0] ? " " : "", rest);
	/* Whole entries only. */
	while (strlen(all) >= sizeof(s->dests) && (p = strrchr(all, ' ')))
		*p = '\0';
	if (strlen(all) < sizeof(s->dests))
		memcpy(s->dests, all, strlen(all) + 1);
}

static void on_session_start(struct top_session *s, struct json_object *o)
{
	struct json_object *cmd;
	const char *str;
	int64_t i;

	if ((str = json_member_str(o, "level_enabled")))
		snprintf(s->level, sizeof(s->level), "%s", str);
	if (!s->cgroup && (str = json_member_str(o, "cgroup")))
		top_set_str(&s->cgroup, str);
	if (!s->command && json_object_object_get_ex(o, "command", &cmd))
		s->command = top_join_argv(cmd);
	if (!s->labels && json_object_object_get_ex(o, "labels", &cmd))
		s->labels = top_join_labels(cmd);
	if (s->uid < 0 && json_member_int(o, "uid", &i))
		s->uid = i;
	if (!s->state[0])
		snprintf(s->state, sizeof(s->state), "registered");
}

/* session.paused, session.resumed, session.killed (bpfbox pause/resume/kill, limits). */
static void on_lifecycle(struct top_session *s, const char *type, struct json_object *o,
			 const char *when)
{
	const char *reason = json_member_str(o, "reason"), *comm = json_member_str(o, "comm");
	char line[512];
	int64_t i = 0;

	if (streq(type, "session.paused")) {
		snprintf(s->state, sizeof(s->state), "paused");
		snprintf(s->pause_reason, sizeof(s->pause_reason), "%s", reason ? reason : "");
		snprintf(line, sizeof(line), "%s  paused   %s%s%s", when, reason ? reason : "?",
			 comm ? ", by " : "", comm ? comm : "");
	} else if (streq(type, "session.resumed")) {
		snprintf(s->state, sizeof(s->state), "running");
		s->pause_reason[0] = '\0';
		json_member_int(o, "paused_ms", &i);
		snprintf(line, sizeof(line), "%s  resumed  after %lld ms paused", when,
			 (long long)i);
	} else {
		s->killed = true;
		snprintf(s->state, sizeof(s->state), "killed");
		snprintf(line, sizeof(line), "%s  killed   %s", when, reason ? reason : "?");
	}
	top_tail_add(s, line, false);
}

/*
 * One event line into its session's counters and tail: a case per event
 * type, each a few lines; long (90 lines) because the types are many, and
 * kept whole so that one place says what top makes of each type.
 */
static void handle_event(struct top *t, struct json_object *o)
{
	const char *type = json_member_str(o, "type"), *id = json_member_str(o, "session");
	const char *decision = json_member_str(o, "decision"), *layer = json_member_str(o, "layer");
	const char *err = json_member_str(o, "errno");
	char when[16], what[640], line[768];
	struct top_session *s;
	bool deny = decision && streq(decision, "deny");
	int64_t i = 0, pid = 0;

	if (!type)
		return;
	t->events++;
	if (streq(type, "loss")) {
		const char *where = json_member_str(o, "where");

		json_member_int(o, "count", &i);
		if (!id || (where && streq(where, "subscriber queue full")))
			t->view_lost += i > 0 ? i : 0;
		if (!id)
			return;
	}
	if (!id || !proto_session_id_valid(id))
		return;
	s = top_find(t, id);
	if (!s && streq(type, "session.end"))
		return; /* it ended before we knew it */
	if (!s && !(s = top_session_add(t, id)))
		return;
	s->events++;
	event_clock(o, when, sizeof(when));
	if (streq(type, "session.start")) {
		on_session_start(s, o);
		snprintf(line, sizeof(line), "%s  start    level %s  %s", when,
			 s->level[0] ? s->level : "?", s->command ? s->command : "");
		top_tail_add(s, line, false);
		return;
	}
	if (streq(type, "session.paused") || streq(type, "session.resumed") ||
	    streq(type, "session.killed")) {
		on_lifecycle(s, type, o, when);
		return;
	}
	if (streq(type, "session.end")) {
		const char *reason = json_member_str(o, "reason");
		int64_t records = 0, lost = 0;

		json_member_int(o, "records", &records);
		json_member_int(o, "lost", &lost);
		s->ended = true;
		s->lost = lost > 0 ? lost : 0;
		snprintf(s->state, sizeof(s->state), "ended");
		if (!s->gone_ns)
			s->gone_ns = now_ns();
		if (json_member_int(o, "exit_code", &i))
			snprintf(what, sizeof(what), "exit code %lld", (long long)i);
		else
			snprintf(what, sizeof(what), "no exit code");
		snprintf(line, sizeof(line), "%s  end      %s, %s; %lld records, %lld lost", when,
			 what, reason ? reason : "?", (long long)records, (long long)lost);
		top_tail_add(s, line, false);
		return;
	}
	if (streq(type, "loss")) {
		snprintf(line, sizeof(line), "%s  loss     %lld events (%s)", when, (long long)i,
			 json_member_str(o, "where") ? json_member_str(o, "where") : "?");
		top_tail_add(s, line, false);
		return;
	}
	if (streq(type, "exec") && !err)
		s->execs++;
	else if (streq(type, "file"))
		s->opens += json_member_int(o, "count", &i) && i > 1 ? (uint64_t)i : 1;
	else if (streq(type, "connect"))
		s->connects++;
	else if (streq(type, "net.allow"))
		add_dest(s, o);
	event_what(type, o, what, sizeof(what));
	json_member_int(o, "pid", &pid);
	if (deny) {
		char last[768];

		s->denials++;
		snprintf(last, sizeof(last), "%s (%s%s%s)", what, layer ? layer : "?",
			 err ? " " : "", err ? err : "");
		top_set_str(&s->last_denial, last);
	}
	snprintf(line, sizeof(line), "%s  %-7lld  %s%s%s%s%s%s", when, (long long)pid,
		 deny ? "DENY " : "", what, err || deny ? "  " : "", deny && layer ? layer : "",
		 deny && layer && err ? " " : "", err ? err : "");
	top_tail_add(s, line, deny);
}

void top_handle_line(struct top *t, char *line, size_t len)
{
	struct json_tokener *tok;
	struct json_object *o;

	if (!len)
		return;
	tok = json_tokener_new();
	if (!tok)
		return;
	o = json_tokener_parse_ex(tok, line, len);
	if (o && json_object_is_type(o, json_type_object))
		handle_event(t, o);
	else
		t->bad_lines++;
	json_object_put(o);
	json_tokener_free(tok);
}
