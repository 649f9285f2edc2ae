// SPDX-License-Identifier: GPL-2.0
/*
 * policy_load: reads the global config, picks the agent and mode layers,
 * reads the task file and more layer files, merges everything in order and
 * then expands and resolves the paths (<cwd>, ~, $VAR) before validating.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "../lib/util.h"

#define POLICY_FILE_MAX (1024 * 1024)

/* One layer to merge, in order. */
struct load_layer {
	struct json_object *obj; /* borrowed from struct load */
	const char *file;
	char prefix[128];
	char *origin;
	const char *mode_name;
	bool may_replace_deny;
};

struct load {
	struct json_object *global;
	const char *global_file;
	struct json_object *task;
	struct json_object **files;
	size_t n_files;
	struct load_layer layers[8];
	struct load_layer *more; /* the layers past the fixed ones */
	size_t n_layers;
	char *cwd;
};

static struct load_layer *layer_at(struct load *l, size_t i)
{
	if (i < ARRAY_SIZE(l->layers))
		return &l->layers[i];
	return &l->more[i - ARRAY_SIZE(l->layers)];
}

static void load_free(struct load *l)
{
	for (size_t i = 0; i < l->n_layers; i++)
		free(layer_at(l, i)->origin);
	free(l->more);
	json_object_put(l->global);
	json_object_put(l->task);
	for (size_t i = 0; i < l->n_files; i++)
		json_object_put(l->files[i]);
	free(l->files);
	free(l->cwd);
}

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
static int load_file(const char *path, bool optional, const char *what, struct json_object **out,
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

/* ---- the global file ---- */

/* Merges layer into a scratch policy: the same checks as the real merge. */
static int check_layer(struct json_object *layer, const struct layer_ctx *lc,
		       struct policy_error *err)
{
	struct bpfbox_policy scratch;
	int r;

	policy_init(&scratch);
	r = layer_merge(&scratch, layer, "check", lc, err);
	policy_free(&scratch);
	return r;
}

/* Every layer of the global file, used or not: typos must not wait. */
static int check_global(struct json_object *g, const char *file, struct policy_error *err)
{
	static const char *const keys[] = {"sandbox", "agents", "modes"};
	struct json_object *v;
	char path[128];
	int r;

	json_object_object_foreach (g, key, val) {
		bool known = false;

		(void)val;
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			known = known || streq(key, keys[i]);
		if (!known)
			return policy_error_set(err, file, key, -EINVAL,
						"unknown key '%s'; valid keys: "
						"sandbox, agents, modes",
						key);
	}
	if (json_object_object_get_ex(g, "sandbox", &v)) {
		struct layer_ctx lc = {.file = file, .prefix = "sandbox", .may_replace_deny = true};

		r = check_layer(v, &lc, err);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(g, "agents", &v)) {
		if (!json_object_is_type(v, json_type_object))
			return policy_error_set(err, file, "agents", -EINVAL,
						"must be an object of "
						"\"NAME\": { LAYER }");
		json_object_object_foreach (v, name, layer) {
			struct layer_ctx lc = {
				.file = file, .prefix = path, .may_replace_deny = true};

			if (!*name)
				return policy_error_set(err, file, "agents", -EINVAL,
							"an agent name is empty; name it");
			path_join(path, sizeof(path), "agents", name);
			r = check_layer(layer, &lc, err);
			if (r < 0)
				return r;
		}
	}
	if (json_object_object_get_ex(g, "modes", &v)) {
		if (!json_object_is_type(v, json_type_object))
			return policy_error_set(err, file, "modes", -EINVAL,
						"must be an object of "
						"\"MODE\": { LAYER }");
		json_object_object_foreach (v, name, layer) {
			struct layer_ctx lc = {.file = file, .prefix = path, .mode_name = name};
			enum sandbox_mode m;

			path_join(path, sizeof(path), "modes", name);
			if (sandbox_mode_parse(name, &m) < 0)
				return policy_error_set(err, file, path, -EINVAL,
							"unknown mode '%s'; valid modes: "
							"workspace-write, read-only, "
							"full-access",
							name);
			r = check_layer(layer, &lc, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int agent_unknown(const char *file, struct json_object *agents, const char *agent,
			 struct policy_error *err)
{
	char known[160] = "";
	size_t n = 0;

	if (agents) {
		json_object_object_foreach (agents, name, val) {
			size_t used = strlen(known);

			(void)val;
			snprintf(known + used, sizeof(known) - used, "%s%s", n++ ? ", " : "", name);
		}
	}
	if (n == 0)
		return policy_error_set(err, file, "agents", -EINVAL,
					"unknown agent '%s': no agents are "
					"defined; add agents.%s or drop --agent",
					agent, agent);
	return policy_error_set(err, file, "agents", -EINVAL,
				"unknown agent '%s'; known agents: %s", agent, known);
}

/* ---- the layers in order ---- */

static int add_layer(struct load *l, struct json_object *obj, const char *file, const char *prefix,
		     const char *origin, struct policy_error *err)
{
	struct load_layer *ly;
	size_t fixed = ARRAY_SIZE(l->layers);

	if (l->n_layers >= fixed) {
		struct load_layer *m;

		m = realloc(l->more, (l->n_layers - fixed + 1) * sizeof(*m));
		if (!m)
			return policy_error_set(err, file, "", -ENOMEM, "out of memory");
		l->more = m;
	}
	ly = layer_at(l, l->n_layers);
	memset(ly, 0, sizeof(*ly));
	ly->obj = obj;
	ly->file = file;
	snprintf(ly->prefix, sizeof(ly->prefix), "%s", prefix);
	ly->origin = strdup(origin);
	if (!ly->origin)
		return policy_error_set(err, file, "", -ENOMEM, "out of memory");
	l->n_layers++;
	return 0;
}

static bool layer_mode(struct json_object *layer, enum sandbox_mode *m)
{
	struct json_object *v;

	if (!layer || !json_object_object_get_ex(layer, "mode", &v) ||
	    !json_object_is_type(v, json_type_string))
		return false;
	return sandbox_mode_parse(json_object_get_string(v), m) == 0;
}

/*
 * The mode the layers above the mode layer settle on: flags, then the
 * layer files from the last, the task, the agent, the global sandbox.
 */
static enum sandbox_mode final_mode(const struct load *l, const struct policy_sources *src,
				    struct json_object *sandbox, struct json_object *agent)
{
	enum sandbox_mode m = MODE_WORKSPACE_WRITE;

	if (layer_mode(src->flags, &m))
		return m;
	for (size_t i = l->n_files; i > 0; i--)
		if (layer_mode(l->files[i - 1], &m))
			return m;
	if (layer_mode(l->task, &m) || layer_mode(agent, &m) || layer_mode(sandbox, &m))
		return m;
	return MODE_WORKSPACE_WRITE;
}

static int collect_layers(struct load *l, const struct policy_sources *src,
			  struct policy_error *err)
{
	struct json_object *sandbox = NULL, *agents = NULL, *agent = NULL;
	struct json_object *modes = NULL, *mode_layer = NULL;
	const char *mname;
	char buf[PATH_MAX + 160];
	int r;

	if (l->global) {
		json_object_object_get_ex(l->global, "sandbox", &sandbox);
		json_object_object_get_ex(l->global, "agents", &agents);
		json_object_object_get_ex(l->global, "modes", &modes);
	}
	if (src->agent && (!agents || !json_object_object_get_ex(agents, src->agent, &agent)))
		return agent_unknown(l->global_file, agents, src->agent, err);

	mname = sandbox_mode_name(final_mode(l, src, sandbox, agent));
	if (modes)
		json_object_object_get_ex(modes, mname, &mode_layer);

	if (sandbox) {
		snprintf(buf, sizeof(buf), "%s:sandbox", l->global_file);
		r = add_layer(l, sandbox, l->global_file, "sandbox", buf, err);
		if (r < 0)
			return r;
		layer_at(l, l->n_layers - 1)->may_replace_deny = true;
	}
	if (agent) {
		char prefix[128];

		path_join(prefix, sizeof(prefix), "agents", src->agent);
		snprintf(buf, sizeof(buf), "%s:%s", l->global_file, prefix);
		r = add_layer(l, agent, l->global_file, prefix, buf, err);
		if (r < 0)
			return r;
		layer_at(l, l->n_layers - 1)->may_replace_deny = true;
	}
	if (mode_layer) {
		char prefix[64];

		snprintf(prefix, sizeof(prefix), "modes.%s", mname);
		snprintf(buf, sizeof(buf), "%s:%s", l->global_file, prefix);
		r = add_layer(l, mode_layer, l->global_file, prefix, buf, err);
		if (r < 0)
			return r;
		layer_at(l, l->n_layers - 1)->mode_name = mname;
	}
	if (l->task) {
		snprintf(buf, sizeof(buf), "task:%s", src->task_file);
		r = add_layer(l, l->task, src->task_file, "", buf, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < l->n_files; i++) {
		snprintf(buf, sizeof(buf), "file:%s", src->files[i]);
		r = add_layer(l, l->files[i], src->files[i], "", buf, err);
		if (r < 0)
			return r;
	}
	if (src->flags)
		return add_layer(l, src->flags, "command line", "", "flags", err);
	return 0;
}

static int read_layers(struct load *l, const struct policy_sources *src, struct policy_error *err)
{
	size_t n = 0;
	int r;

	l->global_file = src->global_file ? src->global_file : POLICY_DEFAULT_CONFIG;
	if (!src->no_global) {
		r = load_file(l->global_file, !src->global_file, "global config", &l->global, err);
		if (r < 0)
			return r;
	}
	if (l->global) {
		r = check_global(l->global, l->global_file, err);
		if (r < 0)
			return r;
	}
	if (src->task_file) {
		r = load_file(src->task_file, false, "task file", &l->task, err);
		if (r < 0)
			return r;
	}
	while (src->files && src->files[n])
		n++;
	if (n) {
		l->files = calloc(n, sizeof(*l->files));
		if (!l->files)
			return policy_error_set(err, src->files[0], "", -ENOMEM, "out of memory");
	}
	for (; l->n_files < n; l->n_files++) {
		r = load_file(src->files[l->n_files], false, "layer file", &l->files[l->n_files],
			      err);
		if (r < 0)
			return r;
	}
	return collect_layers(l, src, err);
}

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
static int expand_path(const char *in, const char *cwd, char **out, char *why, size_t whysize)
{
	_cleanup_free_ char *buf = NULL;
	const char *s = in;
	size_t len = 0;
	FILE *f;
	int r = 0;

	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	if (startswith(s, "<cwd>")) {
		s += 5;
		if (*s && *s != '/') {
			snprintf(why, whysize,
				 "'<cwd>' must be followed by '/' "
				 "or end the path");
			r = -EINVAL;
			goto out;
		}
		fputs(cwd, f);
	} else if (s[0] == '~') {
		const char *home = getenv("HOME");

		if (s[1] && s[1] != '/') {
			snprintf(why, whysize,
				 "'~user' is not supported; write "
				 "the full path");
			r = -EINVAL;
			goto out;
		}
		if (!home || !*home) {
			snprintf(why, whysize,
				 "'~' needs $HOME, which is not "
				 "set; set it or write the full path");
			r = -EINVAL;
			goto out;
		}
		fputs(home, f);
		s++;
	}
	while (*s) {
		_cleanup_free_ char *name = NULL;
		const char *start, *val;
		bool braced;

		if (*s != '$') {
			fputc(*s++, f);
			continue;
		}
		s++;
		if (*s == '$') {
			fputc('$', f);
			s++;
			continue;
		}
		braced = *s == '{';
		if (braced)
			s++;
		start = s;
		if (var_start(*s))
			while (var_char(*s))
				s++;
		if (s == start || (braced && *s != '}')) {
			snprintf(why, whysize,
				 "'$' must start $NAME or ${NAME} "
				 "(write $$ for a literal '$')");
			r = -EINVAL;
			goto out;
		}
		name = strndup(start, s - start);
		if (!name) {
			r = -ENOMEM;
			goto out;
		}
		if (braced)
			s++;
		val = getenv(name);
		if (!val || !*val) {
			snprintf(why, whysize,
				 "$%s is %s; set it or change the "
				 "path",
				 name, val ? "empty" : "not set");
			r = -EINVAL;
			goto out;
		}
		fputs(val, f);
	}
out:
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
		const struct load_layer *ly = layer_at((struct load *)l, i - 1);

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
		const struct load_layer *ly = layer_at((struct load *)l, i - 1);

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

static int expand_workspace(struct bpfbox_policy *p, const struct load *l, struct policy_error *err)
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

static int expand_list(struct strv *list, const char *key, bool writable, const struct load *l,
		       struct policy_error *err)
{
	struct strv out = {0};
	char path[128], why[200];
	const char *file;
	int r = 0;

	for (size_t i = 0; i < list->n; i++) {
		_cleanup_free_ char *abs = NULL, *real = NULL;
		const char *raw = list->v[i];
		const char *rule;

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
		rule = writable ? policy_writable_rule(real) : NULL;
		if (rule) {
			r = policy_error_set(err, file, path, -EINVAL,
					     "write access to '%s' would undo the "
					     "sandbox: it is %s; grant a narrower "
					     "directory",
					     real, rule);
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
static void relocate_error(const struct load *l, struct policy_error *err)
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

int policy_load(struct bpfbox_policy *p, const struct policy_sources *src, struct policy_error *err)
{
	static const struct policy_sources none = {0};
	struct load l = {0};
	int r;

	if (err)
		memset(err, 0, sizeof(*err));
	if (!src)
		src = &none;
	policy_init(p);

	r = read_layers(&l, src, err);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < l.n_layers; i++) {
		const struct load_layer *ly = layer_at(&l, i);
		struct layer_ctx lc = {
			.file = ly->file,
			.prefix = ly->prefix,
			.mode_name = ly->mode_name,
			.may_replace_deny = ly->may_replace_deny,
		};

		r = layer_merge(p, ly->obj, ly->origin, &lc, err);
		if (r < 0)
			goto out;
	}

	l.cwd = getcwd(NULL, 0);
	if (!l.cwd) {
		int e = errno;

		r = policy_error_set(err, "current directory", "", -e,
				     "cannot get the current directory: %s", strerror(e));
		goto out;
	}
	r = expand_workspace(p, &l, err);
	if (r < 0)
		goto out;
	r = expand_list(&p->ro_paths, "ro", false, &l, err);
	if (r < 0)
		goto out;
	r = expand_list(&p->rw_paths, "rw", true, &l, err);
	if (r < 0)
		goto out;
	r = policy_validate(p, err);
	if (r < 0)
		relocate_error(&l, err);
out:
	load_free(&l);
	if (r < 0)
		policy_free(p);
	return r;
}
