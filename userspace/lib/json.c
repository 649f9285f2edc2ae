// SPDX-License-Identifier: GPL-2.0
/* Typed members of a parsed JSON object (see json.h). */
#include <json-c/json.h>

#include "json.h"

const char *json_member_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

bool json_member_int(struct json_object *o, const char *key, int64_t *out)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	*out = json_object_get_int64(v);
	return true;
}

bool json_member_true(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) &&
	       json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}
