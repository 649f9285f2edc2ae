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

static void put_field(FILE *f, const char *key, const char *value)
{
	fprintf(f, " %s=", key);
	put_safe(f, value);
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
	switch (kind) {
	case EV_EXEC:
		put_decision(f, o);
		put_int(f, o, "pid", "pid");
		put_int(f, o, "ppid", "ppid");
		put_int(f, o, "uid", "uid");
		fputc(' ', f);
		put_safe(f, json_member_str(o, "filename"));
		fputs(" argv:", f);
		put_strings(f, o, "argv");
		break;
	case EV_EXIT:
		put_int(f, o, "pid", "pid");
		put_int(f, o, "exit_code", "code");
		put_int(f, o, "signal", "signal");
		break;
	case EV_FORK:
		put_int(f, o, "pid", "pid");
		put_int(f, o, "child_pid", "child");
		break;
	case EV_FILE:
		put_decision(f, o);
		put_int(f, o, "pid", "pid");
		fputc(' ', f);
		put_safe(f, json_member_str(o, "path"));
		put_int(f, o, "flags", "flags");
		put_int(f, o, "count", "count");
		break;
	case EV_CONNECT:
		put_decision(f, o);
		put_int(f, o, "pid", "pid");
		if (json_member_str(o, "path")) {
			fputs(" unix:", f);
			put_safe(f, json_member_str(o, "path"));
		} else {
			fputc(' ', f);
			put_safe(f, json_member_str(o, "address"));
			put_int(f, o, "port", "port");
		}
		break;
	case EV_NET_ALLOW:
	case EV_NET_DENY:
		put_int(f, o, "pid", "pid");
		put_field(f, "proto", json_member_str(o, "protocol"));
		fputc(' ', f);
		put_safe(f, json_member_str(o, "name"));
		if (json_member_str(o, "address")) {
			fputc(' ', f);
			put_safe(f, json_member_str(o, "address"));
		}
		put_int(f, o, "port", "port");
		if (json_member_str(o, "rule"))
			put_field(f, "rule", json_member_str(o, "rule"));
		if (json_member_str(o, "reason"))
			put_field(f, "reason", json_member_str(o, "reason"));
		put_int(f, o, "bytes_out", "out");
		put_int(f, o, "bytes_in", "in");
		break;
	case EV_SESSION_START:
		put_int(f, o, "pid", "pid");
		put_int(f, o, "uid", "uid");
		if (json_member_str(o, "level_enabled"))
			put_field(f, "level", json_member_str(o, "level_enabled"));
		fputs(" command:", f);
		put_strings(f, o, "command");
		break;
	case EV_SESSION_END:
		put_int(f, o, "exit_code", "exit");
		put_int(f, o, "records", "records");
		put_int(f, o, "lost", "lost");
		if (json_member_str(o, "reason"))
			put_field(f, "reason", json_member_str(o, "reason"));
		break;
	case EV_LOSS:
		put_int(f, o, "count", "count");
		put_field(f, "where", json_member_str(o, "where"));
		if (json_member_str(o, "sink"))
			put_field(f, "sink", json_member_str(o, "sink"));
		break;
	case EV_RENAME:
		put_field(f, "new_comm", json_member_str(o, "new_comm"));
		break;
	case EV_SINK_ERROR:
		put_field(f, "sink", json_member_str(o, "sink"));
		put_field(f, "error", json_member_str(o, "error"));
		fputs(": ", f);
		put_safe(f, json_member_str(o, "message"));
		break;
	default:
		break; /* nothing more to say */
	}
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
