// SPDX-License-Identifier: GPL-2.0
/*
 * The three formats of a sink: json (the line as it is), ocsf (ocsf.c) and
 * text, one line for a human in which every control byte is escaped, so
 * that a path cannot drive the terminal that shows it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "ocsf.h"
#include "sink_internal.h"
#include "../lib/json.h"
#include "../lib/util.h"

/* s with control bytes, DEL and C1 controls (U+0080..U+009F) as \xNN. */
static void put_safe(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "?");

	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '\\') {
			fprintf(f, *p == '\\' ? "\\\\" : "\\x%02x", *p);
		} else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			fprintf(f, "\\u%04x", p[1]);
			p++;
		} else {
			fputc(*p, f);
		}
	}
}

static void put_int(FILE *f, struct json_object *o, const char *key, const char *label)
{
	int64_t v;

	if (json_member_int(o, key, &v))
		fprintf(f, " %s=%" PRId64, label, v);
}

static void put_strings(FILE *f, struct json_object *o, const char *key)
{
	struct json_object *a;

	if (!json_object_object_get_ex(o, key, &a) || !json_object_is_type(a, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		fputc(' ', f);
		put_safe(f, json_object_get_string(json_object_array_get_idx(a, i)));
	}
}

static void put_decision(FILE *f, struct json_object *o)
{
	const char *d = json_member_str(o, "decision");

	if (!d)
		return;
	fprintf(f, " %s", d);
	if (streq(d, "deny")) {
		fputc('(', f);
		put_safe(f, json_member_str(o, "layer"));
		fputc(',', f);
		put_safe(f, json_member_str(o, "errno"));
		fputc(')', f);
	} else if (json_member_str(o, "errno")) {
		fputs(" (", f);
		put_safe(f, json_member_str(o, "errno"));
		fputc(')', f);
	}
}

/* How one member of an event goes into its text line. */
enum text_put {
	T_END,
	T_DECISION, /* " allow", " deny(LAYER,ERRNO)" */
	T_INT,	    /* " LABEL=N", nothing when absent */
	T_STR,	    /* " VALUE" ("?" when absent) */
	T_FIELD,    /* " LABEL=VALUE" ("?" when absent) */
	T_STRINGS,  /* " VALUE" for each string of the array */
	T_TEXT,	    /* the label as it is */
	T_UNIX,	    /* " unix:PATH" and no more, when present */
};

struct text_field {
	enum text_put put;
	const char *key;
	const char *label; /* NULL: the key */
	bool opt;	   /* T_STR, T_FIELD: nothing when absent */
};

#define FIELDS(...) ((const struct text_field[]){__VA_ARGS__, {T_END}})

/* The text line's details of each kind, in order; a kind not here has none. */
static const struct text_field *const text_fields[EV_KINDS] = {
	[EV_EXEC] = FIELDS({T_DECISION}, {T_INT, "pid"}, {T_INT, "ppid"}, {T_INT, "uid"},
			   {T_STR, "filename"}, {T_TEXT, .label = " argv:"}, {T_STRINGS, "argv"}),
	[EV_EXIT] = FIELDS({T_INT, "pid"}, {T_INT, "exit_code", "code"}, {T_INT, "signal"}),
	[EV_FORK] = FIELDS({T_INT, "pid"}, {T_INT, "child_pid", "child"}),
	[EV_FILE] = FIELDS({T_DECISION}, {T_INT, "pid"}, {T_STR, "path"}, {T_INT, "flags"},
			   {T_INT, "count"}),
	[EV_CONNECT] = FIELDS({T_DECISION}, {T_INT, "pid"}, {T_UNIX, "path"}, {T_STR, "address"},
			      {T_INT, "port"}),
	[EV_NET_ALLOW] = FIELDS({T_INT, "pid"}, {T_FIELD, "protocol", "proto"}, {T_STR, "name"},
				{T_STR, "address", .opt = true}, {T_INT, "port"},
				{T_FIELD, "rule", .opt = true}, {T_FIELD, "reason", .opt = true},
				{T_INT, "bytes_out", "out"}, {T_INT, "bytes_in", "in"}),
	[EV_NET_REQUEST] = FIELDS({T_INT, "pid"}, {T_STR, "name"}, {T_FIELD, "method"},
				  {T_STR, "path"}, {T_INT, "status", .opt = true},
				  {T_FIELD, "rule", .opt = true}, {T_FIELD, "reason", .opt = true}),
	[EV_SESSION_START] = FIELDS({T_INT, "pid"}, {T_INT, "uid"},
				    {T_FIELD, "level_enabled", "level", true},
				    {T_TEXT, .label = " command:"}, {T_STRINGS, "command"}),
	[EV_SESSION_END] = FIELDS({T_INT, "exit_code", "exit"}, {T_INT, "records"}, {T_INT, "lost"},
				  {T_FIELD, "reason", .opt = true}),
	[EV_LOSS] = FIELDS({T_INT, "count"}, {T_FIELD, "where"}, {T_FIELD, "sink", .opt = true}),
	[EV_RENAME] = FIELDS({T_FIELD, "new_comm"}),
	[EV_SINK_ERROR] = FIELDS({T_FIELD, "sink"}, {T_FIELD, "error"}, {T_TEXT, .label = ":"},
				 {T_STR, "message"}),
};

static void text_details(FILE *f, struct json_object *o, int kind)
{
	const struct text_field *t;

	if (kind == EV_NET_DENY)
		kind = EV_NET_ALLOW;
	if (kind < 0 || kind >= EV_KINDS || !text_fields[kind])
		return;
	for (t = text_fields[kind]; t->put != T_END; t++) {
		const char *label = t->label ? t->label : t->key;
		const char *v = t->put == T_STR || t->put == T_FIELD || t->put == T_UNIX
					? json_member_str(o, t->key)
					: NULL;

		if (t->opt && !v)
			continue;
		switch (t->put) {
		case T_DECISION:
			put_decision(f, o);
			break;
		case T_INT:
			put_int(f, o, t->key, label);
			break;
		case T_STR:
			fputc(' ', f);
			put_safe(f, v);
			break;
		case T_FIELD:
			fprintf(f, " %s=", label);
			put_safe(f, v);
			break;
		case T_STRINGS:
			put_strings(f, o, t->key);
			break;
		case T_TEXT:
			fputs(label, f);
			break;
		case T_UNIX:
			if (!v)
				break;
			fputs(" unix:", f);
			put_safe(f, v);
			return;
		default:
			return;
		}
	}
}

/* TIME SESSION8 #SEQ TYPE DETAILS */
static int text_line(struct json_object *o, int kind, char **out, size_t *len)
{
	const char *type = json_member_str(o, "type"), *time = json_member_str(o, "time");
	const char *session = json_member_str(o, "session");
	FILE *f = open_memstream(out, len);
	int64_t seq;

	if (!f)
		return -ENOMEM;
	if (time && strlen(time) >= 23)
		fprintf(f, "%.23sZ", time); /* milliseconds */
	else
		fputs("-", f);
	fprintf(f, " %.8s", session ? session : "-");
	if (json_member_int(o, "seq", &seq))
		fprintf(f, " #%" PRId64, seq);
	else
		fputs(" -", f);
	fputc(' ', f);
	put_safe(f, type);
	text_details(f, o, kind);
	fputc('\n', f);
	if (fclose(f) != 0) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

int sink_format_event(enum sink_format f, int kind, struct json_object *ev, const char *hostname,
		      struct jsonw *w)
{
	char *text = NULL;
	size_t len;
	int r;

	if (!ev || !json_object_is_type(ev, json_type_object) || !json_member_str(ev, "type"))
		return -EINVAL;
	if (kind < 0)
		kind = ev_kind_parse(json_member_str(ev, "type"));
	switch (f) {
	case SINK_FMT_OCSF:
		return ocsf_encode_kind(w, kind, ev, hostname);
	case SINK_FMT_TEXT:
		r = text_line(ev, kind, &text, &len);
		if (r < 0)
			return r;
		/* The text holds no NUL (escaped), so it goes in whole. */
		jsonw_raw(w, NULL, text);
		w->need_comma = false;
		free(text);
		return 0;
	default:
		jsonw_raw(w, NULL,
			  json_object_to_json_string_ext(
				  ev, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		jsonw_newline(w);
		return 0;
	}
}

int sink_render(struct sink *sk, const struct audit_event *ev, struct json_object **parsed,
		const char **out, size_t *out_len)
{
	struct jsonw *w = &sk->set->fw;

	if (sk->cfg.format == SINK_FMT_JSON) {
		*out = ev->line;
		*out_len = ev->len && ev->line[ev->len - 1] == '\n' ? ev->len - 1 : ev->len;
		return 0;
	}
	/* OCSF and text take the event's members: its line parsed once for all sinks. */
	if (!*parsed) {
		struct json_tokener *tok = json_tokener_new();

		if (!tok)
			return -ENOMEM;
		*parsed = json_tokener_parse_ex(tok, ev->line, ev->len);
		json_tokener_free(tok);
		if (!*parsed)
			return -EINVAL;
	}
	jsonw_reset(w);
	if (sink_format_event(sk->cfg.format, ev->kind, *parsed, sk->set->hostname, w) < 0 ||
	    w->oom)
		return -EINVAL;
	*out = w->buf;
	*out_len = w->len && w->buf[w->len - 1] == '\n' ? w->len - 1 : w->len;
	return 0;
}
