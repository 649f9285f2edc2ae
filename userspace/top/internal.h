/* SPDX-License-Identifier: GPL-2.0 */
/* What sessions.c, events.c, conn.c and print.c of `bpfbox top` share. */
#ifndef BPFBOX_TOP_INTERNAL_H
#define BPFBOX_TOP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "top.h"

struct json_object;

/* JSON members: lib/json.h; text for the terminal: term_clean() in lib/util.h. */
#include "../lib/json.h"
#include "../lib/util.h"

/* sessions.c: the table of sessions, for events.c. */
struct top_session *top_session_add(struct top *t, const char *id); /* found or added */
char *top_join_argv(struct json_object *arr);  /* an array of strings as one line */
char *top_join_labels(struct json_object *o);  /* {"k":"v",...} as k=v,... */
void top_set_str(char **dst, const char *src); /* replaces *dst with a copy */
void top_tail_add(struct top_session *s, const char *text, bool deny); /* a line of its tail */

/* events.c: one event line of the subscription (a JSON object). */
void top_handle_line(struct top *t, char *line, size_t len);
/*
 * A `list` reply's sessions: the sample (cgroups, rates, view). asked_ns
 * (now_ns) is when the request was sent: only a session known before it
 * and not in the list is marked gone.
 */
void top_apply_list(struct top *t, struct json_object *list, uint64_t asked_ns);

#endif
