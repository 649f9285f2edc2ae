// SPDX-License-Identifier: GPL-2.0
/*
 * A policy file: read whole (1 MiB at most), parsed as strict JSON with
 * the line and column of the first error, and an object at the top.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "load_internal.h"
#include "../lib/util.h"

#define POLICY_FILE_MAX (1024 * 1024)

/* ---- reading ---- */

static int read_all(const char *path, char **out, size_t *len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t n = 0, cap = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t k;

		if (n == cap) {
			char *nb;

			if (cap > POLICY_FILE_MAX)
				return -EFBIG;
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += k;
	}
	if (n > POLICY_FILE_MAX)
		return -EFBIG;
	buf[n] = '\0';
	*out = buf;
	buf = NULL;
	*len = n;
	return 0;
}

static void line_col(const char *text, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static int parse_json(const char *file, const char *text, size_t len, struct json_object **out,
		      struct policy_error *err)
{
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error jerr;
	size_t end;
	int line, col;

	tok = json_tokener_new();
	if (!tok)
		return policy_error_set(err, file, "", -ENOMEM, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (jerr == json_tokener_success) {
		/* Nothing but white space may follow the value. */
		while (end < len && strchr(" \t\r\n", text[end]))
			end++;
		if (end == len) {
			if (!json_object_is_type(o, json_type_object)) {
				json_object_put(o);
				return policy_error_set(err, file, "", -EINVAL,
							"the top level must be a JSON object "
							"{ ... }");
			}
			*out = o;
			return 0;
		}
		json_object_put(o);
		line_col(text, end, &line, &col);
		return policy_error_set(err, file, "", -EINVAL,
					"invalid JSON at line %d, column %d: "
					"text after the end of the object; "
					"remove it",
					line, col);
	}
	json_object_put(o);
	line_col(text, end, &line, &col);
	if (jerr == json_tokener_continue)
		return policy_error_set(err, file, "", -EINVAL,
					"invalid JSON at line %d, column %d: "
					"unexpected end of file; complete the "
					"object",
					line, col);
	return policy_error_set(err, file, "", -EINVAL,
				"invalid JSON at line %d, column %d: %s; fix "
				"the syntax",
				line, col, json_tokener_error_desc(jerr));
}

/*
 * Reads a JSON object from path into *out. With optional, a missing file
 * is no layer (*out stays NULL).
 */
int load_json_file(const char *path, bool optional, const char *what, struct json_object **out,
		   struct policy_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	*out = NULL;
	r = read_all(path, &text, &len);
	if (r == -ENOENT && optional)
		return 0;
	if (r == -EFBIG)
		return policy_error_set(err, path, "", r,
					"larger than %d bytes; is this the "
					"right file?",
					POLICY_FILE_MAX);
	if (r < 0)
		return policy_error_set(err, path, "", r,
					"cannot read the %s: %s; check the path "
					"and its permissions",
					what, strerror(-r));
	return parse_json(path, text, len, out, err);
}
