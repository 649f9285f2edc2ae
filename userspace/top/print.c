// SPDX-License-Identifier: GPL-2.0
/* `bpfbox top --once` and `--json`, and the formats the screen shares. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "internal.h"

#define TOP_SCHEMA_VERSION 1

void top_fmt_bytes(int64_t v, char *buf, size_t size)
{
	static const char units[] = "KMGTP";
	double d = v;
	int u = -1;

	if (v < 0) {
		snprintf(buf, size, "-");
		return;
	}
	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, size, "%lldB", (long long)v);
	else if (d < 10)
		snprintf(buf, size, "%.1f%c", d, units[u]);
	else
		snprintf(buf, size, "%.0f%c", d, units[u]);
}

void top_fmt_duration(double sec, char *buf, size_t size)
{
	long long s = (long long)sec;

	if (sec < 0)
		snprintf(buf, size, "-");
	else if (s >= 86400)
		snprintf(buf, size, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, size, "%lldh%02lldm", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
}

void top_fmt_rate(double r, char *buf, size_t size)
{
	if (r >= 9999.5)
		snprintf(buf, size, "%.0fk", r / 1000);
	else if (r >= 99.95 || r == (double)(long long)r)
		snprintf(buf, size, "%.0f", r);
	else
		snprintf(buf, size, "%.1f", r);
}

static void bpf_layers(const struct top *t, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s%s%s", t->bpf_audit ? " audit" : "",
		 t->bpf_network ? " network" : "", t->bpf_unix ? " unix-connect" : "",
		 !t->bpf_audit && !t->bpf_network && !t->bpf_unix ? " none" : "");
}

/*
 * The column titles (s NULL) or the row of s, each column in its --once
 * width; text is cut to it, numbers are not.
 */
static void print_row(FILE *out, const struct top_session *s)
{
	for (enum top_col i = 0; i < TOP_COL__COUNT; i++) {
		const struct top_column *c = top_column(i);
		char cell[1024];

		if (s) {
			top_cell(s, i, false, cell, sizeof(cell));
			if (!top_col_numeric(i))
				term_clean(cell,
					   c->once_width ? (size_t)-c->once_width + 1
							 : sizeof(cell),
					   cell);
		}
		fprintf(out, "%*s%s", c->once_width, s ? cell : c->title,
			i + 1 < TOP_COL__COUNT ? "  " : "\n");
	}
}

void top_print_text(const struct top *t, FILE *out)
{
	char up[32], layers[64];

	top_fmt_duration(top_daemon_uptime(t), up, sizeof(up));
	bpf_layers(t, layers, sizeof(layers));
	fprintf(out, "host %s  level %s (Landlock ABI %d, seccomp)  BPF%s  daemon pid %d up %s\n",
		t->host, t->host_level, t->landlock_abi, layers, (int)t->daemon_pid, up);
	fprintf(out, "sessions %zu  events/s %.1f  drops %llu  sort %s %s%s%s%s\n", t->nview,
		t->events_rate, (unsigned long long)top_drops(t), top_col_name(t->sort),
		top_sort_descending(t) ? "desc" : "asc", t->filter[0] ? "  filter \"" : "",
		t->filter, t->filter[0] ? "\"" : "");
	print_row(out, NULL);
	for (size_t i = 0; i < t->nview; i++)
		print_row(out, t->view[i]);
}

static struct json_object *jdouble(double v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.1f", v);
	return json_object_new_double_s(strtod(buf, NULL), buf);
}

static struct json_object *jstr(const char *s)
{
	return s && s[0] ? json_object_new_string(s) : NULL;
}

/* How a member of a session's object is read from struct top_session. */
enum jkind {
	J_CHARS,      /* char[]; "" is null */
	J_STRP,	      /* char *; NULL or "" is null */
	J_INT,	      /* int64_t */
	J_INT_KNOWN,  /* int64_t; -1 (unknown) is null */
	J_COUNT,      /* uint64_t */
	J_RATE,	      /* double, one decimal */
	J_RATE_KNOWN, /* double, one decimal; negative (unknown) is null */
};

#define MEMBER(key, kind, field)                               \
	{                                                      \
		key, kind, offsetof(struct top_session, field) \
	}
/* The members of each session of `top --json`, in order (docs/top.md). */
static const struct {
	const char *key;
	enum jkind kind;
	size_t off;
} session_members[] = {
	MEMBER("session", J_CHARS, id),
	MEMBER("state", J_CHARS, state),
	MEMBER("pause_reason", J_CHARS, pause_reason),
	MEMBER("level", J_CHARS, level),
	MEMBER("labels", J_STRP, labels),
	MEMBER("command", J_STRP, command),
	MEMBER("cgroup", J_STRP, cgroup),
	MEMBER("start_time", J_CHARS, start_time),
	MEMBER("uid", J_INT_KNOWN, uid),
	MEMBER("pid", J_INT, client_pid),
	MEMBER("child", J_INT, child),
	MEMBER("pids", J_INT_KNOWN, pids),
	MEMBER("memory_bytes", J_INT_KNOWN, mem),
	MEMBER("cpu_percent", J_RATE_KNOWN, cpu_pct),
	MEMBER("opens_per_s", J_RATE, opens_rate),
	MEMBER("execs_per_s", J_RATE, execs_rate),
	MEMBER("connects_per_s", J_RATE, connects_rate),
	MEMBER("events", J_COUNT, events),
	MEMBER("opens", J_COUNT, opens),
	MEMBER("execs", J_COUNT, execs),
	MEMBER("connects", J_COUNT, connects),
	MEMBER("denials", J_COUNT, denials),
	MEMBER("last_denial", J_STRP, last_denial),
	MEMBER("records", J_COUNT, records),
	MEMBER("lost", J_COUNT, lost),
};
#undef MEMBER

static struct json_object *member_json(const void *p, enum jkind kind)
{
	const int64_t *i = p;
	const double *v = p;

	switch (kind) {
	case J_CHARS:
		return jstr(p);
	case J_STRP:
		return jstr(*(char *const *)p);
	case J_INT_KNOWN:
		return *i >= 0 ? json_object_new_int64(*i) : NULL;
	case J_INT:
		return json_object_new_int64(*i);
	case J_COUNT:
		return json_object_new_uint64(*(const uint64_t *)p);
	case J_RATE_KNOWN:
		return *v >= 0 ? jdouble(*v) : NULL;
	case J_RATE:
		return jdouble(*v);
	}
	return NULL;
}

static struct json_object *session_json(const struct top_session *s)
{
	struct json_object *o = json_object_new_object();

	for (size_t i = 0; i < sizeof(session_members) / sizeof(session_members[0]); i++)
		json_object_object_add(o, session_members[i].key,
				       member_json((const char *)s + session_members[i].off,
						   session_members[i].kind));
	return o;
}

void top_print_json(const struct top *t, FILE *out)
{
	struct json_object *o = json_object_new_object(), *d = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	double up = top_daemon_uptime(t);

	json_object_object_add(o, "schema_version", json_object_new_int(TOP_SCHEMA_VERSION));
	json_object_object_add(o, "host", json_object_new_string(t->host));
	json_object_object_add(o, "level", json_object_new_string(t->host_level));
	json_object_object_add(o, "landlock_abi", json_object_new_int(t->landlock_abi));
	json_object_object_add(d, "socket", json_object_new_string(t->socket));
	json_object_object_add(d, "pid", json_object_new_int64(t->daemon_pid));
	json_object_object_add(d, "uptime_s", up >= 0 ? json_object_new_int64((int64_t)up) : NULL);
	json_object_object_add(d, "cgroup_parent", jstr(t->cgroup_parent));
	json_object_object_add(d, "bpf_audit", json_object_new_boolean(t->bpf_audit));
	json_object_object_add(d, "bpf_network", json_object_new_boolean(t->bpf_network));
	json_object_object_add(d, "bpf_unix_connect", json_object_new_boolean(t->bpf_unix));
	json_object_object_add(o, "daemon", d);
	json_object_object_add(o, "events_per_s", jdouble(t->events_rate));
	json_object_object_add(o, "drops", json_object_new_uint64(top_drops(t)));
	json_object_object_add(o, "subscriber_drops", json_object_new_uint64(t->view_lost));
	json_object_object_add(o, "sort", json_object_new_string(top_col_name(t->sort)));
	json_object_object_add(o, "filter", jstr(t->filter));
	for (size_t i = 0; i < t->nview; i++)
		json_object_array_add(arr, session_json(t->view[i]));
	json_object_object_add(o, "sessions", arr);
	fprintf(out, "%s\n",
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}
