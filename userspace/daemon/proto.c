// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "proto.h"
#include "../lib/jsonw.h"
#include "../lib/util.h"

bool proto_session_id_valid(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == DAEMON_SESSION_ID_LEN;
}

const char *proto_errno_name(int err)
{
	const char *name = strerrorname_np(abs(err));

	return name ? name : "EIO";
}

int proto_errno_from_name(const char *name)
{
	for (int e = 1; e < 200; e++) {
		const char *n = strerrorname_np(e);

		if (n && streq(n, name))
			return e;
	}
	return EIO;
}

void proto_error(struct jsonw *w, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	proto_verror(w, err, fmt, ap);
	va_end(ap);
}

void proto_verror(struct jsonw *w, int err, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	jsonw_begin(w);
	jsonw_bool(w, "ok", false);
	jsonw_str(w, "error", msg);
	jsonw_str(w, "code", proto_errno_name(err));
	jsonw_end(w);
	jsonw_newline(w);
}

static int get_typed(struct json_object *o, const char *key, json_type type,
		     struct json_object **out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return -ENOENT;
	if (!json_object_is_type(v, type))
		return -EINVAL;
	*out = v;
	return 0;
}

int proto_get_str(struct json_object *o, const char *key, const char **out)
{
	struct json_object *v;
	int r = get_typed(o, key, json_type_string, &v);

	if (!r)
		*out = json_object_get_string(v);
	return r;
}

int proto_get_int(struct json_object *o, const char *key, int64_t *out)
{
	struct json_object *v;
	int r = get_typed(o, key, json_type_int, &v);

	if (!r)
		*out = json_object_get_int64(v);
	return r;
}

int proto_get_bool(struct json_object *o, const char *key, bool *out)
{
	struct json_object *v;
	int r = get_typed(o, key, json_type_boolean, &v);

	if (!r)
		*out = json_object_get_boolean(v);
	return r;
}

int proto_get_array(struct json_object *o, const char *key, struct json_object **out)
{
	return get_typed(o, key, json_type_array, out);
}

int proto_get_object(struct json_object *o, const char *key, struct json_object **out)
{
	return get_typed(o, key, json_type_object, out);
}
