// SPDX-License-Identifier: GPL-2.0
/*
 * policy_load: reads the global config, picks the agent and mode layers,
 * reads the task file and more layer files, merges everything in order and
 * then expands and resolves the paths (<cwd>, ~, $VAR) before validating.
 * Files are read by load_file.c, paths expanded by load_expand.c.
 */
#include <errno.h>
#include <limits.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "load_internal.h"
#include "../lib/util.h"

struct load_layer *load_layer_at(struct load *l, size_t i)
{
	if (i < ARRAY_SIZE(l->layers))
		return &l->layers[i];
	return &l->more[i - ARRAY_SIZE(l->layers)];
}

static void load_free(struct load *l)
{
	for (size_t i = 0; i < l->n_layers; i++)
		free(load_layer_at(l, i)->origin);
	free(l->more);
	json_object_put(l->global);
	json_object_put(l->task);
	for (size_t i = 0; i < l->n_files; i++)
		json_object_put(l->files[i]);
	free(l->files);
	free(l->cwd);
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

/*
 * The layers of "agents" or "modes" in the global file: an object of
 * "NAME": { LAYER }; an agent's name must not be empty, a mode's must be one.
 */
static int check_named_layers(struct json_object *g, const char *key, const char *file,
			      struct policy_error *err)
{
	bool modes = streq(key, "modes");
	struct json_object *v;
	char path[128];
	int r;

	if (!json_object_object_get_ex(g, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return policy_error_set(err, file, key, -EINVAL,
					"must be an object of \"%s\": { LAYER }",
					modes ? "MODE" : "NAME");
	json_object_object_foreach (v, name, layer) {
		struct layer_ctx lc = {.file = file, .prefix = path};
		enum sandbox_mode m;

		path_join(path, sizeof(path), key, name);
		if (!modes && !*name)
			return policy_error_set(err, file, key, -EINVAL,
						"an agent name is empty; name it");
		if (modes && sandbox_mode_parse(name, &m) < 0)
			return policy_error_set(err, file, path, -EINVAL,
						"unknown mode '%s'; valid modes: "
						"workspace-write, read-only, "
						"full-access",
						name);
		lc.mode_name = modes ? name : NULL;
		lc.may_replace_deny = !modes;
		r = check_layer(layer, &lc, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Every layer of the global file, used or not: typos must not wait. */
static int check_global(struct json_object *g, const char *file, struct policy_error *err)
{
	static const char *const keys[] = {"sandbox", "agents", "modes"};
	struct json_object *v;
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
	r = check_named_layers(g, "agents", file, err);
	if (r < 0)
		return r;
	return check_named_layers(g, "modes", file, err);
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
	ly = load_layer_at(l, l->n_layers);
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
		load_layer_at(l, l->n_layers - 1)->may_replace_deny = true;
	}
	if (agent) {
		char prefix[128];

		path_join(prefix, sizeof(prefix), "agents", src->agent);
		snprintf(buf, sizeof(buf), "%s:%s", l->global_file, prefix);
		r = add_layer(l, agent, l->global_file, prefix, buf, err);
		if (r < 0)
			return r;
		load_layer_at(l, l->n_layers - 1)->may_replace_deny = true;
	}
	if (mode_layer) {
		char prefix[64];

		snprintf(prefix, sizeof(prefix), "modes.%s", mname);
		snprintf(buf, sizeof(buf), "%s:%s", l->global_file, prefix);
		r = add_layer(l, mode_layer, l->global_file, prefix, buf, err);
		if (r < 0)
			return r;
		load_layer_at(l, l->n_layers - 1)->mode_name = mname;
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
		r = load_json_file(l->global_file, !src->global_file, "global config", &l->global,
				   err);
		if (r < 0)
			return r;
	}
	if (l->global) {
		r = check_global(l->global, l->global_file, err);
		if (r < 0)
			return r;
	}
	if (src->task_file) {
		r = load_json_file(src->task_file, false, "task file", &l->task, err);
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
		r = load_json_file(src->files[l->n_files], false, "layer file",
				   &l->files[l->n_files], err);
		if (r < 0)
			return r;
	}
	return collect_layers(l, src, err);
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
		const struct load_layer *ly = load_layer_at(&l, i);
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
	r = load_expand_workspace(p, &l, err);
	if (r < 0)
		goto out;
	r = load_expand_list(&p->ro_paths, "ro", GRANT_RO, &l, err);
	if (r < 0)
		goto out;
	r = load_expand_list(&p->rw_paths, "rw", GRANT_RW, &l, err);
	if (r < 0)
		goto out;
	r = load_expand_list(&p->devices, "devices", GRANT_DEVICE, &l, err);
	if (r < 0)
		goto out;
	r = policy_validate(p, err);
	if (r < 0)
		load_relocate_error(&l, err);
out:
	load_free(&l);
	if (r < 0)
		policy_free(p);
	return r;
}
