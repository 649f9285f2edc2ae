/* SPDX-License-Identifier: GPL-2.0 */
/* What sessions.c, conn.c and print.c of `bpfbox top` share. */
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

/* One event line of the subscription (a JSON object). */
void top_handle_line(struct top *t, char *line, size_t len);
/* A `list` reply's sessions: the sample (cgroups, rates, view). */
void top_apply_list(struct top *t, struct json_object *list);

#endif
