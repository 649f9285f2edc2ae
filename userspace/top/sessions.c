// SPDX-License-Identifier: GPL-2.0
/*
 * The sessions of `bpfbox top`: found by id through a hash, counted from
 * the subscription's events, refreshed from `list` replies and sampled from
 * their cgroups (cgroup.procs, memory.current, cpu.stat), then filtered and
 * sorted into the view.
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

#define COMMAND_MAX 1024

static const char *const col_names[TOP_COL__COUNT] = {
	[TOP_COL_SESSION] = "SESSION",	 [TOP_COL_STATE] = "STATE",
	[TOP_COL_LEVEL] = "LEVEL",	 [TOP_COL_PIDS] = "PIDS",
	[TOP_COL_MEM] = "MEM",		 [TOP_COL_CPU] = "CPU%",
	[TOP_COL_OPENS] = "OPEN/s",	 [TOP_COL_EXECS] = "EXEC/s",
	[TOP_COL_CONNECTS] = "CONN/s",	 [TOP_COL_DENIALS] = "DENIED",
	[TOP_COL_COMMAND] = "COMMAND",	 [TOP_COL_LAST_DENIAL] = "LAST DENIAL",
};

const char *top_col_name(enum top_col c)
{
	return c < TOP_COL__COUNT ? col_names[c] : "?";
}

bool top_col_numeric(enum top_col c)
{
	return c >= TOP_COL_PIDS && c <= TOP_COL_DENIALS;
}

bool top_sort_descending(const struct top *t)
{
	/* Numbers and levels largest first, text A to Z; reverse flips it. */
	return (top_col_numeric(t->sort) || t->sort == TOP_COL_LEVEL) != t->reverse;
}

void top_init(struct top *t, const char *socket)
{
	struct host_caps caps;

	memset(t, 0, sizeof(*t));
	t->ctl.fd = t->sub.fd = -1;
	t->daemon_start = -1;
	t->sort = TOP_COL_CPU;
	snprintf(t->socket, sizeof(t->socket), "%s", daemon_socket_path(socket));
	if (gethostname(t->host, sizeof(t->host) - 1) < 0)
		snprintf(t->host, sizeof(t->host), "?");
	/* Landlock and seccomp only: cheap, and what every session gets. */
	probe_host(&caps, 0);
	snprintf(t->host_level, sizeof(t->host_level), "%s", level_name(caps.level));
	t->landlock_abi = caps.feat[FEAT_LANDLOCK].state == FEAT_YES ? caps.landlock.abi : 0;
}

static void session_free(struct top_session *s)
{
	if (s->tail)
		for (size_t i = 0; i < TOP_TAIL_MAX; i++)
			free(s->tail[i].text);
	free(s->tail);
	free(s->command);
	free(s->cgroup);
	free(s->last_denial);
	free(s);
}

void top_free(struct top *t)
{
	top_disconnect(t);
	for (size_t i = 0; i < t->n; i++)
		session_free(t->all[i]);
	free(t->all);
	free(t->view);
	t->all = t->view = NULL;
	t->n = t->cap = t->nview = 0;
	memset(t->hash, 0, sizeof(t->hash));
}

/* The id is 32 lowercase hex digits: its first three are the bucket. */
static size_t bucket(const char *id)
{
	size_t h = 0;

	for (int i = 0; i < 3; i++)
		h = h << 4 |
		    (size_t)(isdigit((unsigned char)id[i]) ? id[i] - '0' : id[i] - 'a' + 10);
	return h & (TOP_HASH_SIZE - 1);
}

struct top_session *top_find(const struct top *t, const char *id)
{
	if (!proto_session_id_valid(id))
		return NULL;
	for (struct top_session *s = t->hash[bucket(id)]; s; s = s->hnext)
		if (streq(s->id, id))
			return s;
	return NULL;
}

static struct top_session *session_add(struct top *t, const char *id)
{
	struct top_session *s;
	size_t b;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct top_session **all = realloc(t->all, cap * sizeof(*all));
		struct top_session **view;

		if (!all)
			return NULL;
		t->all = all;
		view = realloc(t->view, cap * sizeof(*view));
		if (!view)
			return NULL;
		t->view = view;
		t->cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->uid = s->pids = s->mem = -1;
	s->cpu_pct = -1;
	b = bucket(id);
	s->hnext = t->hash[b];
	t->hash[b] = s;
	s->slot = t->n;
	t->all[t->n++] = s;
	return s;
}

/* O(1) but for the hash chain. */
static void session_remove(struct top *t, struct top_session *s)
{
	struct top_session **pp = &t->hash[bucket(s->id)];

	while (*pp && *pp != s)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = s->hnext;
	t->all[s->slot] = t->all[t->n - 1];
	t->all[s->slot]->slot = s->slot;
	t->n--;
	t->nview = 0; /* it may be there: top_sample rebuilds the view */
	t->removed_lost += s->lost;
	session_free(s);
}

/* A JSON array of strings as one line. */
static char *join_argv(struct json_object *arr)
{
	char buf[COMMAND_MAX];
	size_t len = 0, n;

	if (!arr || !json_object_is_type(arr, json_type_array))
		return NULL;
	n = json_object_array_length(arr);
	buf[0] = '\0';
	for (size_t i = 0; i < n && len + 2 < sizeof(buf); i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(arr, i));

		if (i)
			buf[len++] = ' ';
		len += term_clean(buf + len, sizeof(buf) - len, a ? a : "");
	}
	buf[len] = '\0';
	return strdup(buf);
}

static void set_str(char **dst, const char *src)
{
	char *p = src ? strdup(src) : NULL;

	if (src && !p)
		return; /* keep the old text rather than nothing */
	free(*dst);
	*dst = p;
}

static void tail_add(struct top_session *s, const char *text, bool deny)
{
	struct top_line *l;
	char *p;

	if (!s->tail) {
		s->tail = calloc(TOP_TAIL_MAX, sizeof(*s->tail));
		if (!s->tail)
			return;
	}
	p = strdup(text);
	if (!p)
		return;
	l = &s->tail[(s->tail_head + s->tail_len) % TOP_TAIL_MAX];
	if (s->tail_len == TOP_TAIL_MAX) {
		s->tail_head = (s->tail_head + 1) % TOP_TAIL_MAX;
	} else {
		s->tail_len++;
	}
	free(l->text);
	l->text = p;
	l->deny = deny;
	s->tail_total++;
}

const struct top_line *top_tail_line(const struct top_session *s, size_t i)
{
	if (!s->tail || i >= s->tail_len)
		return NULL;
	return &s->tail[(s->tail_head + i) % TOP_TAIL_MAX];
}

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
			joined = join_argv(a);
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
			 (j & 3) == 0 ? "" : (j & 3) == 1 ? " (write)" : " (read-write)");
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
			snprintf(buf, size, str && strchr(str, ':') ? "connect [%s]:%lld"
								    : "connect %s:%lld",
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
			 json_member_str(o, "protocol") ? json_member_str(o, "protocol") : "?", name, path,
			 (long long)i, rule);
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
		set_str(&s->cgroup, str);
	if (!s->command && json_object_object_get_ex(o, "command", &cmd))
		s->command = join_argv(cmd);
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
	tail_add(s, line, false);
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
	if (!s && !(s = session_add(t, id)))
		return;
	s->events++;
	event_clock(o, when, sizeof(when));
	if (streq(type, "session.start")) {
		on_session_start(s, o);
		snprintf(line, sizeof(line), "%s  start    level %s  %s", when,
			 s->level[0] ? s->level : "?", s->command ? s->command : "");
		tail_add(s, line, false);
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
		tail_add(s, line, false);
		return;
	}
	if (streq(type, "loss")) {
		snprintf(line, sizeof(line), "%s  loss     %lld events (%s)", when, (long long)i,
			 json_member_str(o, "where") ? json_member_str(o, "where") : "?");
		tail_add(s, line, false);
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
		set_str(&s->last_denial, last);
	}
	snprintf(line, sizeof(line), "%s  %-7lld  %s%s%s%s%s%s", when, (long long)pid,
		 deny ? "DENY " : "", what, err || deny ? "  " : "", deny && layer ? layer : "",
		 deny && layer && err ? " " : "", err ? err : "");
	tail_add(s, line, deny);
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

static void on_list_entry(struct top *t, struct json_object *e)
{
	const char *id = json_member_str(e, "session"), *str;
	struct json_object *cmd;
	struct top_session *s;
	int64_t i;

	if (!id || !proto_session_id_valid(id))
		return;
	s = top_find(t, id);
	if (!s && !(s = session_add(t, id)))
		return;
	s->listed = true;
	if (!s->ended) {
		s->gone_ns = 0;
		/* A killed session runs until its client unregisters it: say killed. */
		if ((str = json_member_str(e, "state")) && !s->killed)
			snprintf(s->state, sizeof(s->state), "%s", str);
		if ((str = json_member_str(e, "pause_reason")))
			snprintf(s->pause_reason, sizeof(s->pause_reason), "%s", str);
		else
			s->pause_reason[0] = '\0';
	}
	if ((str = json_member_str(e, "cgroup")) && (!s->cgroup || !streq(s->cgroup, str)))
		set_str(&s->cgroup, str);
	if ((str = json_member_str(e, "level_enabled")) || (str = json_member_str(e, "level")))
		snprintf(s->level, sizeof(s->level), "%s", str);
	if ((str = json_member_str(e, "start_time")))
		snprintf(s->start_time, sizeof(s->start_time), "%s", str);
	if (json_member_int(e, "uid", &i))
		s->uid = i;
	if (json_member_int(e, "pid", &i))
		s->client_pid = i;
	if (json_member_int(e, "child", &i))
		s->child = i;
	if (json_member_int(e, "records", &i) && i >= 0)
		s->records = i;
	if (json_member_int(e, "lost", &i) && i >= 0)
		s->lost = i;
	if (!s->command && json_object_object_get_ex(e, "command", &cmd))
		s->command = join_argv(cmd);
}

/* Lines of cgroup.procs: the processes of the session. */
static int64_t count_procs(const char *cgroup)
{
	char path[PATH_MAX + 32], buf[8192];
	int64_t n = 0;
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got; i++)
			n += buf[i] == '\n';
	close(fd);
	return got < 0 ? -1 : n;
}

static void sample_cgroup(struct top_session *s, double dt)
{
	char path[PATH_MAX + 32], buf[1024], *p;
	unsigned long long v;

	s->pids = count_procs(s->cgroup);
	snprintf(path, sizeof(path), "%s/memory.current", s->cgroup);
	s->mem = read_file_str(path, buf, sizeof(buf)) >= 0 && parse_u64(buf, &v) == 0 ? (int64_t)v
										       : -1;
	snprintf(path, sizeof(path), "%s/cpu.stat", s->cgroup);
	if (read_file_str(path, buf, sizeof(buf)) < 0 || !(p = strstr(buf, "usage_usec ")) ||
	    sscanf(p + strlen("usage_usec "), "%llu", &v) != 1) {
		s->cpu_known = false;
		s->cpu_pct = -1;
		return;
	}
	if (s->cpu_known && dt > 0 && v >= s->cpu_usec)
		s->cpu_pct = (double)(v - s->cpu_usec) / (dt * 1e6) * 100.0;
	else
		s->cpu_pct = -1;
	s->cpu_usec = v;
	s->cpu_known = true;
}

static double rate(uint64_t now, uint64_t *prev, double dt)
{
	double r = dt > 0 && now >= *prev ? (now - *prev) / dt : 0;

	*prev = now;
	return r;
}

void top_apply_list(struct top *t, struct json_object *list)
{
	uint64_t now = now_ns();
	double dt = t->sampled ? (now - t->sample_ns) / 1e9 : 0;

	for (size_t i = 0; i < t->n; i++)
		t->all[i]->listed = false;
	for (size_t i = 0; i < json_object_array_length(list); i++)
		on_list_entry(t, json_object_array_get_idx(list, i));

	/* Backwards: session_remove moves the last session into the hole. */
	for (size_t i = t->n; i-- > 0;) {
		struct top_session *s = t->all[i];

		if (!s->listed && !s->gone_ns) {
			s->gone_ns = now;
			snprintf(s->state, sizeof(s->state), "ended");
			s->pids = 0;
			s->cpu_pct = -1;
			s->mem = -1;
		}
		if (s->gone_ns && !s->pinned && now - s->gone_ns > TOP_GONE_KEEP_NS) {
			session_remove(t, s);
			continue;
		}
		if (s->listed && s->cgroup)
			sample_cgroup(s, dt);
		s->opens_rate = rate(s->opens, &s->opens_prev, dt);
		s->execs_rate = rate(s->execs, &s->execs_prev, dt);
		s->connects_rate = rate(s->connects, &s->connects_prev, dt);
	}
	t->events_rate = rate(t->events, &t->events_prev, dt);
	t->sample_ns = now;
	t->sampled = true;
	t->samples++;
	top_build_view(t);
}

static int level_rank(const char *name)
{
	enum bpfbox_level l;

	return name[0] && level_parse(name, &l) == 0 ? (int)l : -1;
}

static int cmp_num(double a, double b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_sessions(const void *pa, const void *pb, void *ctx)
{
	const struct top_session *a = *(struct top_session *const *)pa;
	const struct top_session *b = *(struct top_session *const *)pb;
	const struct top *t = ctx;
	int c = 0;

	switch (t->sort) {
	case TOP_COL_SESSION:
		break;
	case TOP_COL_STATE:
		c = cmp_str(a->state, b->state);
		break;
	case TOP_COL_LEVEL:
		c = level_rank(a->level) - level_rank(b->level);
		break;
	case TOP_COL_PIDS:
		c = cmp_num(a->pids, b->pids);
		break;
	case TOP_COL_MEM:
		c = cmp_num(a->mem, b->mem);
		break;
	case TOP_COL_CPU:
		c = cmp_num(a->cpu_pct, b->cpu_pct);
		break;
	case TOP_COL_OPENS:
		c = cmp_num(a->opens_rate, b->opens_rate);
		break;
	case TOP_COL_EXECS:
		c = cmp_num(a->execs_rate, b->execs_rate);
		break;
	case TOP_COL_CONNECTS:
		c = cmp_num(a->connects_rate, b->connects_rate);
		break;
	case TOP_COL_DENIALS:
		c = cmp_num(a->denials, b->denials);
		break;
	case TOP_COL_COMMAND:
		c = cmp_str(a->command, b->command);
		break;
	case TOP_COL_LAST_DENIAL:
		c = cmp_str(a->last_denial, b->last_denial);
		break;
	default:
		break;
	}
	if (top_col_numeric(t->sort) || t->sort == TOP_COL_LEVEL)
		c = -c;
	if (t->reverse)
		c = -c;
	/* The id keeps the order stable whatever the direction. */
	return c ? c : strcmp(a->id, b->id);
}

static bool has(const char *hay, const char *needle)
{
	return hay && strcasestr(hay, needle);
}

static bool matches(const struct top_session *s, const char *filter)
{
	return !filter[0] || has(s->id, filter) || has(s->command, filter) ||
	       has(s->state, filter) || has(s->level, filter) || has(s->last_denial, filter);
}

void top_build_view(struct top *t)
{
	t->nview = 0;
	for (size_t i = 0; i < t->n; i++)
		if (matches(t->all[i], t->filter))
			t->view[t->nview++] = t->all[i];
	if (t->nview > 1)
		qsort_r(t->view, t->nview, sizeof(*t->view), cmp_sessions, t);
}

