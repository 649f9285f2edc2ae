/* SPDX-License-Identifier: GPL-2.0 */
/* What sessions.c, conn.c and print.c of `bpfbox top` share. */
#ifndef BPFBOX_TOP_INTERNAL_H
#define BPFBOX_TOP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "top.h"

struct json_object;

/* A string or integer member; NULL / false when absent or of another type. */
const char *top_json_str(struct json_object *o, const char *key);
bool top_json_int(struct json_object *o, const char *key, int64_t *out);

/* Copies src, control bytes as '?', cut at size - 1 bytes on a character boundary. */
size_t top_put_clean(char *dst, size_t size, const char *src);

/* One event line of the subscription (a JSON object). */
void top_handle_line(struct top *t, char *line, size_t len);
/* A `list` reply's sessions: the sample (cgroups, rates, view). */
void top_apply_list(struct top *t, struct json_object *list);

#endif
