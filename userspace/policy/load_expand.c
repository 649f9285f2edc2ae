// SPDX-License-Identifier: GPL-2.0
/*
 * The merged policy's paths: <cwd>, ~ and $VAR expanded, made absolute,
 * and an error named after the layer and key that set the path.
 */
#include <errno.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "load_internal.h"
#include "../lib/util.h"

/* ---- expansion ---- */

static bool var_start(char c)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool var_char(char c)
{
	return var_start(c) || (c >= '0' && c <= '9');
}

/*
 * <cwd> and ~ at the start, then $VAR, ${VAR} and $$ anywhere; then made
 * absolute against cwd. -EINVAL with why filled, or -ENOMEM.
 */
/* <cwd> or ~ at the start of *s, written to f; *s moves past it. */
static int expand_start(const char **s, const char *cwd, FILE *f, char *why, size_t whysize)
{
	if (startswith(*s, "<cwd>")) {
		*s += 5;
		if (**s && **s != '/') {
			snprintf(why, whysize,
				 "'<cwd>' must be followed by '/' "
				 "or end the path");
			return -EINVAL;
		}
		fputs(cwd, f);
	} else if ((*s)[0] == '~') {
		const char *home = getenv("HOME");

		if ((*s)[1] && (*s)[1] != '/') {
			snprintf(why, whysize,
				 "'~user' is not supported; write "
				 "the full path");
			return -EINVAL;
		}
		if (!home || !*home) {
			snprintf(why, whysize,
				 "'~' needs $HOME, which is not "
				 "set; set it or write the full path");
			return -EINVAL;
		}
		fputs(home, f);
		(*s)++;
	}
	return 0;
}

/* $$, $NAME or ${NAME} after the '$' at *s, written to f; *s moves past it. */
static int expand_var(const char **s, FILE *f, char *why, size_t whysize)
{
	_cleanup_free_ char *name = NULL;
	const char *start, *val;
	bool braced;

	(*s)++;
	if (**s == '$') {
		fputc('$', f);
		(*s)++;
		return 0;
	}
	braced = **s == '{';
	if (braced)
		(*s)++;
	start = *s;
	if (var_start(**s))
		while (var_char(**s))
			(*s)++;
	if (*s == start || (braced && **s != '}')) {
		snprintf(why, whysize,
			 "'$' must start $NAME or ${NAME} "
			 "(write $$ for a literal '$')");
		return -EINVAL;
	}
	name = strndup(start, *s - start);
	if (!name)
		return -ENOMEM;
	if (braced)
		(*s)++;
	val = getenv(name);
	if (!val || !*val) {
		snprintf(why, whysize,
			 "$%s is %s; set it or change the "
			 "path",
			 name, val ? "empty" : "not set");
		return -EINVAL;
	}
	fputs(val, f);
	return 0;
}

static int expand_path(const char *in, const char *cwd, char **out, char *why, size_t whysize)
{
	_cleanup_free_ char *buf = NULL;
	const char *s = in;
	size_t len = 0;
	FILE *f;
	int r;

	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	r = expand_start(&s, cwd, f, why, whysize);
	while (!r && *s) {
		if (*s != '$')
			fputc(*s++, f);
		else
			r = expand_var(&s, f, why, whysize);
	}
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0)
		return r;
	if (buf[0] == '/') {
		*out = buf;
		buf = NULL;
		return 0;
	}
	if (asprintf(out, "%s/%s", cwd, buf) < 0)
		return -ENOMEM;
	return 0;
}

/* Where the raw list entry came from: the last layer that names it. */
static void list_origin(const struct load *l, const char *key, const char *raw, const char **file,
			char *path, size_t size)
{
	static const char *const sects[] = {"extra", "restrictions"};

	for (size_t i = l->n_layers; i > 0; i--) {
		const struct load_layer *ly = load_layer_at((struct load *)l, i - 1);

		for (size_t k = 0; k < ARRAY_SIZE(sects); k++) {
			struct json_object *sect, *arr;
			size_t n;

			if (!json_object_object_get_ex(ly->obj, sects[k], &sect) ||
			    !json_object_object_get_ex(sect, key, &arr))
				continue;
			n = json_object_array_length(arr);
			for (size_t j = 0; j < n; j++) {
				struct json_object *e;
				char sect_key[32], sub[64];

				e = json_object_array_get_idx(arr, j);
				if (!streq(json_object_get_string(e), raw))
					continue;
				path_join(sect_key, sizeof(sect_key), sects[k], key);
				path_index(sub, sizeof(sub), sect_key, j);
				*file = ly->file;
				path_join(path, size, ly->prefix, sub);
				return;
			}
		}
	}
	*file = "effective policy";
	snprintf(path, size, "%s", key);
}

/* The last layer that sets key, for errors about the merged value. */
static bool key_origin(const struct load *l, const char *key, const char **file, char *path,
		       size_t size)
{
	for (size_t i = l->n_layers; i > 0; i--) {
		const struct load_layer *ly = load_layer_at((struct load *)l, i - 1);

		if (json_object_object_get_ex(ly->obj, key, NULL)) {
			*file = ly->file;
			path_join(path, size, ly->prefix, key);
			return true;
		}
	}
	return false;
}

static int workspace_origin_err(const struct load *l, struct policy_error *err, int r,
				const char *msg)
{
	const char *file = "current directory";
	char path[128] = "workspace";

	key_origin(l, "workspace", &file, path, sizeof(path));
	return policy_error_set(err, file, path, r, "%s", msg);
}

int load_expand_workspace(struct bpfbox_policy *p, const struct load *l, struct policy_error *err)
{
	_cleanup_free_ char *abs = NULL, *real = NULL;
	char why[200], msg[sizeof(err->message)];
	struct stat st;
	int r;

	if (!p->workspace) {
		abs = strdup(l->cwd);
		if (!abs)
			return workspace_origin_err(l, err, -ENOMEM, "out of memory");
	} else {
		r = expand_path(p->workspace, l->cwd, &abs, why, sizeof(why));
		if (r < 0)
			return workspace_origin_err(l, err, r,
						    r == -ENOMEM ? "out of memory" : why);
	}
	real = realpath(abs, NULL);
	if (!real) {
		r = -errno;
		if (r == -ENOENT)
			snprintf(msg, sizeof(msg),
				 "'%s' does not exist; create it or choose a "
				 "project directory with -w DIR",
				 abs);
		else
			snprintf(msg, sizeof(msg),
				 "'%s': %s; choose a project directory with -w "
				 "DIR",
				 abs, strerror(-r));
		return workspace_origin_err(l, err, r, msg);
	}
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(msg, sizeof(msg),
			 "'%s' is not a directory; choose a project directory "
			 "with -w DIR",
			 real);
		return workspace_origin_err(l, err, -ENOTDIR, msg);
	}
	free(p->workspace);
	p->workspace = real;
	real = NULL;
	return 0;
}

int load_expand_list(struct strv *list, const char *key, enum policy_grant kind,
		     const struct load *l, struct policy_error *err)
{
	struct strv out = {0};
	char path[128], why[200], msg[sizeof(err->message)];
	const char *file;
	int r = 0;

	for (size_t i = 0; i < list->n; i++) {
		_cleanup_free_ char *abs = NULL, *real = NULL;
		const char *raw = list->v[i];

		r = expand_path(raw, l->cwd, &abs, why, sizeof(why));
		if (r == -ENOMEM)
			goto oom;
		list_origin(l, key, raw, &file, path, sizeof(path));
		if (r < 0) {
			policy_error_set(err, file, path, r, "%s", why);
			goto fail;
		}
		real = realpath(abs, NULL);
		if (!real) {
			r = -errno;
			if (r == -ENOENT)
				policy_error_set(err, file, path, r,
						 "'%s' does not exist; create it "
						 "or remove it from the list",
						 abs);
			else
				policy_error_set(err, file, path, r,
						 "'%s': %s; fix it or remove it "
						 "from the list",
						 abs, strerror(-r));
			goto fail;
		}
		r = policy_grant_problem(kind, real, msg, sizeof(msg));
		if (r < 0) {
			policy_error_set(err, file, path, r, "%s", msg);
			goto fail;
		}
		r = strv_push_unique(&out, real);
		if (r < 0)
			goto oom;
	}
	strv_clear(list);
	*list = out;
	return 0;
oom:
	r = policy_error_set(err, "effective policy", key, -ENOMEM, "out of memory");
fail:
	strv_clear(&out);
	return r;
}

/* Validation names the merged value; point at the layer that set it. */
void load_relocate_error(const struct load *l, struct policy_error *err)
{
	char msg[sizeof(err->message)], path[128];
	const char *file;

	if (!err || !(streq(err->path, "workspace") || streq(err->path, "user")))
		return;
	snprintf(msg, sizeof(msg), "%s", err->message);
	if (key_origin(l, err->path, &file, path, sizeof(path)))
		policy_error_set(err, file, path, 0, "%s", msg);
	else if (streq(err->path, "workspace"))
		policy_error_set(err, "current directory", "workspace", 0, "%s", msg);
}
