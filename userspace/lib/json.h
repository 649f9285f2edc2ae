/* SPDX-License-Identifier: GPL-2.0 */
/* Typed members of a parsed JSON object (json-c), for the readers of the
 * daemon's replies and of event lines. */
#ifndef BPFBOX_LIB_JSON_H
#define BPFBOX_LIB_JSON_H

#include <stdbool.h>
#include <stdint.h>

struct json_object;

/* The string member KEY of o; NULL when absent, null or not a string. */
const char *json_member_str(struct json_object *o, const char *key);

/* The integer member KEY of o in *out; false (and *out untouched) when it
 * is absent or not an integer. */
bool json_member_int(struct json_object *o, const char *key, int64_t *out);

/* Whether the member KEY of o is the boolean true. */
bool json_member_true(struct json_object *o, const char *key);

#endif
