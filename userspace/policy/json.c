// SPDX-License-Identifier: GPL-2.0
/* The effective policy as JSON (`bpfbox policy check`, --verbose). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "rules.h"
#include "../lib/log.h"
#include "../lib/util.h"

/* ---- output ---- */

static struct json_object *strv_json(const struct strv *s)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < s->n; i++)
		json_object_array_add(a, json_object_new_string(s->v[i]));
	return a;
}

static struct json_object *str_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

/* Each secret's NAME and hosts: never its value, nor where the value is read. */
static struct json_object *secrets_json(const struct strv *s)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < s->n; i++) {
		struct json_object *o = json_object_new_object(), *h = json_object_new_array();
		struct secret_spec spec;
		const char *why;

		if (!o || !h || secret_spec_parse(s->v[i], &spec, &why) < 0) {
			json_object_put(o);
			json_object_put(h);
			continue;
		}
		for (size_t j = 0; j < spec.n_hosts; j++)
			json_object_array_add(h, json_object_new_string(spec.hosts[j]));
		json_object_object_add(o, "name", json_object_new_string(spec.name));
		json_object_object_add(o, "from",
				       json_object_new_string(spec.path[0] ? "file" : "variable"));
		json_object_object_add(o, "hosts", h);
		if (spec.query)
			json_object_object_add(o, "query", json_object_new_boolean(1));
		json_object_array_add(a, o);
	}
	return a;
}

struct json_object *policy_to_json(const struct bpfbox_policy *p)
{
	struct json_object *o, *env, *lim;

	o = json_object_new_object();
	env = json_object_new_object();
	lim = json_object_new_object();
	if (!o || !env || !lim) {
		json_object_put(o);
		json_object_put(env);
		json_object_put(lim);
		return NULL;
	}
	json_object_object_add(o, "mode", json_object_new_string(sandbox_mode_name(p->mode)));
	json_object_object_add(o, "workspace", str_or_null(p->workspace));
	json_object_object_add(o, "network",
			       json_object_new_string(p->net == NET_ALLOW ? "allow" : "deny"));
	json_object_object_add(o, "user", str_or_null(p->user));
	json_object_object_add(o, "allow_unconfined", json_object_new_boolean(p->allow_unconfined));
	json_object_object_add(o, "private_tmp", json_object_new_boolean(p->private_tmp));
	json_object_object_add(o, "read_host", json_object_new_boolean(p->read_host));
	json_object_object_add(o, "net_ask", json_object_new_boolean(p->net_ask));
	json_object_object_add(o, "namespaces", json_object_new_boolean(p->namespaces));
	json_object_object_add(o, "changes", json_object_new_string(changes_mode_name(p->changes)));
	{
		struct json_object *u = json_object_new_object();

		if (u) {
			json_object_object_add(u, "generations",
					       json_object_new_int64(p->undo_generations));
			json_object_object_add(u, "mb", json_object_new_int64(p->undo_mb));
			json_object_object_add(o, "undo", u);
		}
	}
	json_object_object_add(o, "ro", strv_json(&p->ro_paths));
	json_object_object_add(o, "rw", strv_json(&p->rw_paths));
	json_object_object_add(o, "devices", strv_json(&p->devices));
	json_object_object_add(o, "ssh_agent", json_object_new_boolean(p->ssh_agent));
	json_object_object_add(o, "deny", strv_json(&p->deny_paths));
	json_object_object_add(o, "net_allow", strv_json(&p->net_allow));
	json_object_object_add(o, "net_deny", strv_json(&p->net_deny));
	json_object_object_add(o, "secrets", secrets_json(&p->secrets));
	if (p->net_resolver)
		json_object_object_add(o, "net_resolver", json_object_new_string(p->net_resolver));
	json_object_object_add(o, "exec_deny", strv_json(&p->exec_deny));
	json_object_object_add(o, "deny_commands", strv_json(&p->deny_commands));
	json_object_object_add(o, "commands", rules_to_json(&p->cmd_rules));
	for (size_t i = 0; i < p->env.n; i++) {
		const char *e = p->env.v[i], *eq = strchr(e, '=');
		_cleanup_free_ char *name = NULL;

		if (!eq)
			continue;
		name = strndup(e, eq - e);
		if (name)
			json_object_object_add(env, name, json_object_new_string(eq + 1));
	}
	json_object_object_add(o, "env", env);
	for (size_t i = 0; i < policy_n_limit_defs; i++) {
		const struct limit_def *d = &policy_limit_defs[i];
		uint64_t v = *(const uint64_t *)((const char *)&p->limits + d->offset);

		if (d->kind == LK_CHOICE)
			json_object_object_add(lim, d->key, json_object_new_string(d->names[v]));
		else
			json_object_object_add(lim, d->key, json_object_new_uint64(v / d->scale));
	}
	json_object_object_add(o, "limits", lim);
	json_object_object_add(o, "layers", strv_json(&p->origins));
	return o;
}
