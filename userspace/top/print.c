// SPDX-License-Identifier: GPL-2.0
/* `bpfbox top --once` and `--json`, and the formats the screen shares. */
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

static struct json_object *session_json(const struct top_session *s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "session", json_object_new_string(s->id));
	json_object_object_add(o, "state", jstr(s->state));
	json_object_object_add(o, "pause_reason", jstr(s->pause_reason));
	json_object_object_add(o, "level", jstr(s->level));
	json_object_object_add(o, "command", jstr(s->command));
	json_object_object_add(o, "cgroup", jstr(s->cgroup));
	json_object_object_add(o, "start_time", jstr(s->start_time));
	json_object_object_add(o, "uid", s->uid >= 0 ? json_object_new_int64(s->uid) : NULL);
	json_object_object_add(o, "pid", json_object_new_int64(s->client_pid));
	json_object_object_add(o, "child", json_object_new_int64(s->child));
	json_object_object_add(o, "pids", s->pids >= 0 ? json_object_new_int64(s->pids) : NULL);
	json_object_object_add(o, "memory_bytes",
			       s->mem >= 0 ? json_object_new_int64(s->mem) : NULL);
	json_object_object_add(o, "cpu_percent", s->cpu_pct >= 0 ? jdouble(s->cpu_pct) : NULL);
	json_object_object_add(o, "opens_per_s", jdouble(s->opens_rate));
	json_object_object_add(o, "execs_per_s", jdouble(s->execs_rate));
	json_object_object_add(o, "connects_per_s", jdouble(s->connects_rate));
	json_object_object_add(o, "events", json_object_new_uint64(s->events));
	json_object_object_add(o, "opens", json_object_new_uint64(s->opens));
	json_object_object_add(o, "execs", json_object_new_uint64(s->execs));
	json_object_object_add(o, "connects", json_object_new_uint64(s->connects));
	json_object_object_add(o, "denials", json_object_new_uint64(s->denials));
	json_object_object_add(o, "last_denial", jstr(s->last_denial));
	json_object_object_add(o, "records", json_object_new_uint64(s->records));
	json_object_object_add(o, "lost", json_object_new_uint64(s->lost));
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
