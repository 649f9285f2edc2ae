/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JSON checks for the unit tests: a member by dotted path ("limits.pids";
 * a number indexes an array: "answers.0.rdata") and its JSON text, so that
 * one line checks a value and its type. Include after cmocka.h.
 */
#ifndef BPFBOX_TEST_JSON_AT_H
#define BPFBOX_TEST_JSON_AT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

/* A JSON string's text, for assert_json: Q("Denied") is "\"Denied\"". */
#define Q(s) "\"" s "\""

/* The member at path into *v (NULL for a JSON null); false when there is none. */
static inline bool json_get(struct json_object *o, const char *path, struct json_object **v)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array)) {
			if ((size_t)atoi(k) >= json_object_array_length(o))
				return false;
			o = json_object_array_get_idx(o, (size_t)atoi(k));
		} else if (!o || !json_object_object_get_ex(o, k, &o)) {
			return false;
		}
	}
	*v = o;
	return true;
}

/* The member at path, NULL when there is none (or it is null). */
static inline struct json_object *json_at(struct json_object *o, const char *path)
{
	struct json_object *v = NULL;

	return json_get(o, path, &v) ? v : NULL;
}

/* o as plain JSON text, slashes as they are ("null" for NULL). */
static inline const char *json_text(struct json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE);
}

/*
 * The member at path has the JSON text want ("7", Q("x"), "[\"/r\"]",
 * "null"); want NULL: there is no such member.
 */
static inline void assert_json(struct json_object *o, const char *path, const char *want)
{
	struct json_object *v = NULL;
	bool have = json_get(o, path, &v);

	if (!want && have)
		fail_msg("%s: want none, got %s", path, json_text(v));
	if (want && !have)
		fail_msg("no %s in %s", path, json_text(o));
	if (want && strcmp(json_text(v), want))
		fail_msg("%s: got %s, want %s", path, json_text(v), want);
}

#endif
