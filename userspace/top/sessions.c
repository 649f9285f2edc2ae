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
#include "../lib/cgroup.h"
#include "../lib/util.h"

#define COMMAND_MAX 1024

#define TOP_COL_INFO(id, title, sort, kind, width, prio, once, ...) \
	[TOP_COL_##id] = {title, sort, kind, width, prio, once},
static const struct top_column columns[TOP_COL__COUNT] = {TOP_COLUMNS(TOP_COL_INFO)};
#undef TOP_COL_INFO

const struct top_column *top_column(enum top_col c)
{
	return c < TOP_COL__COUNT ? &columns[c] : NULL;
}

const char *top_col_name(enum top_col c)
{
	return c < TOP_COL__COUNT ? columns[c].title : "?";
}

bool top_col_numeric(enum top_col c)
{
	return c < TOP_COL__COUNT && columns[c].kind >= TOP_COUNT;
}

int top_col_parse(const char *name, enum top_col *c)
{
	if (streq(name, "memory")) /* what --sort took before it was named as MEM's "mem" */
		name = "mem";
	for (size_t i = 0; i < TOP_COL__COUNT; i++)
		if (streq(columns[i].sort_name, name)) {
			*c = (enum top_col)i;
			return 0;
		}
	return -EINVAL;
}

/* Column c of session s: its text (NULL: none) or its number. */
static const char *col_value(const struct top_session *s, enum top_col c, double *num)
{
#define TOP_COL_VALUE(id, title, sort, kind, width, prio, once, text, number) \
	case TOP_COL_##id:                                                    \
		*num = (double)(number);                                      \
		return (text);
	switch (c) {
		TOP_COLUMNS(TOP_COL_VALUE)
	default:
		*num = 0;
		return NULL;
	}
#undef TOP_COL_VALUE
}

void top_cell(const struct top_session *s, enum top_col c, bool screen, char *buf, size_t size)
{
	double v;
	const char *text = col_value(s, c, &v);

	switch (c < TOP_COL__COUNT ? columns[c].kind : TOP_TEXT) {
	case TOP_ID:
		snprintf(buf, size, "%.*s", screen ? columns[c].width : (int)size, text);
		break;
	case TOP_TEXT:
	case TOP_LEVEL:
		snprintf(buf, size, "%s",
			 text && text[0]		      ? text
			 : screen && c == TOP_COL_LAST_DENIAL ? ""
							      : "-");
		break;
	case TOP_BYTES:
		top_fmt_bytes((int64_t)v, buf, size);
		break;
	case TOP_RATE:
		top_fmt_rate(v, buf, size);
		break;
	default: /* TOP_COUNT, TOP_PERCENT */
		if (v < 0)
			snprintf(buf, size, "-");
		else
			snprintf(buf, size, columns[c].kind == TOP_PERCENT ? "%.1f" : "%.0f", v);
	}
}

bool top_sort_descending(const struct top *t)
{
	/* Numbers and levels largest first, text A to Z; reverse flips it. */
	return (t->sort < TOP_COL__COUNT && columns[t->sort].kind >= TOP_LEVEL) != t->reverse;
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
	free(s->labels);
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

struct top_session *top_session_add(struct top *t, const char *id)
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
	s->known_ns = now_ns();
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
char *top_join_argv(struct json_object *arr)
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

char *top_join_labels(struct json_object *o)
{
	char buf[256];
	size_t len = 0;

	if (!o || !json_object_is_type(o, json_type_object))
		return NULL;
	buf[0] = '\0';
	json_object_object_foreach (o, k, v) {
		char kv[256];

		if (len + 2 >= sizeof(buf))
			break;
		snprintf(kv, sizeof(kv), "%s=%s", k, json_object_get_string(v));
		if (len)
			buf[len++] = ',';
		len += term_clean(buf + len, sizeof(buf) - len, kv);
	}
	buf[len] = '\0';
	return strdup(buf);
}

void top_set_str(char **dst, const char *src)
{
	char *p = src ? strdup(src) : NULL;

	if (src && !p)
		return; /* keep the old text rather than nothing */
	free(*dst);
	*dst = p;
}

void top_tail_add(struct top_session *s, const char *text, bool deny)
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

static void on_list_entry(struct top *t, struct json_object *e)
{
	const char *id = json_member_str(e, "session"), *str;
	struct json_object *cmd;
	struct top_session *s;
	int64_t i;

	if (!id || !proto_session_id_valid(id))
		return;
	s = top_find(t, id);
	if (!s && !(s = top_session_add(t, id)))
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
		top_set_str(&s->cgroup, str);
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
		s->command = top_join_argv(cmd);
	if (!s->labels && json_object_object_get_ex(e, "labels", &cmd))
		s->labels = top_join_labels(cmd);
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
	char buf[1024];
	unsigned long long m;
	uint64_t v;

	s->pids = count_procs(s->cgroup);
	s->mem = cgroup_read(s->cgroup, "memory.current", buf, sizeof(buf)) >= 0 &&
				 parse_u64(buf, &m) == 0
			 ? (int64_t)m
			 : -1;
	if (cgroup_read(s->cgroup, "cpu.stat", buf, sizeof(buf)) < 0 ||
	    !cgroup_key(buf, "usage_usec", &v)) {
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

void top_apply_list(struct top *t, struct json_object *list, uint64_t asked_ns)
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

		/*
		 * Not in the list: gone, if top knew of it when it asked. One
		 * it heard of since (its session.start read before this
		 * reply) may have registered after the daemon built the list.
		 */
		if (!s->listed && !s->gone_ns && s->known_ns < asked_ns) {
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
	double na, nb;
	const char *ta = col_value(a, t->sort, &na), *tb = col_value(b, t->sort, &nb);
	int c = 0;

	switch (t->sort < TOP_COL__COUNT ? columns[t->sort].kind : TOP_ID) {
	case TOP_ID:
		break;
	case TOP_TEXT:
		c = cmp_str(ta, tb);
		break;
	case TOP_LEVEL:
		c = level_rank(ta) - level_rank(tb);
		break;
	default:
		c = cmp_num(na, nb);
	}
	if (top_sort_descending(t))
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
