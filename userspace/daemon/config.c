// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's config file (--config, docs/operating.md): "sinks" (more
 * sink specs) and "ceilings" (policy ceilings). Read at start and again on
 * SIGHUP or `bpfbox daemon reload`: a config that does not parse or whose
 * sinks do not open is refused, and the running one stays.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <json-c/json.h>

#include "config.h"
#include "internal.h"
#include "metrics.h"
#include "../audit/sink.h"
#include "../lib/log.h"
#include "../lib/util.h"
#include "../policy/policy.h"

/* A name of "policies": what an annotation or `bpfbox adopt --policy` may carry. */
bool daemon_policy_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return false;
	return true;
}

/*
 * "policies": {"NAME": LAYER}, each a policy layer (docs/config.md) that
 * must merge onto the built-in defaults; kept as given.
 */
static int load_policies(struct json_object *o, struct json_object **out, char *err, size_t size)
{
	struct json_object *all = json_object_new_object();

	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(all);
		return snprintf(err, size, "\"policies\" must be an object of NAME: policy"),
		       -EINVAL;
	}
	json_object_object_foreach (o, name, layer) {
		struct bpfbox_policy p;
		struct policy_error pe = {0};
		char origin[96], buf[512];

		if (!daemon_policy_name_valid(name)) {
			snprintf(err, size,
				 "policies: '%.64s' is not a policy name (1-64 of A-Z a-z 0-9 . _ "
				 "-)",
				 name);
			json_object_put(all);
			return -EINVAL;
		}
		snprintf(origin, sizeof(origin), "policies.%s", name);
		policy_init(&p);
		if (!json_object_is_type(layer, json_type_object))
			snprintf(err, size,
				 "%s: must be an object (a policy layer, docs/config.md)", origin);
		else if (policy_merge_layer(&p, layer, origin, &pe) < 0)
			snprintf(err, size, "%s", policy_error_format(&pe, buf, sizeof(buf)));
		else
			err[0] = '\0';
		if (err[0]) {
			policy_free(&p);
			json_object_put(all);
			return -EINVAL;
		}
		json_object_object_add(all, name,
				       json_object_get(layer)); /* merged again at adopt */
		policy_free(&p);
	}
	*out = all;
	return 0;
}

int daemon_config_load(const char *path, struct sink_config **sinks, size_t *nsinks,
		       struct ceilings *ceil, struct json_object **policies, char *err, size_t size)
{
	struct json_object *root, *c;
	char why[1024];
	int r;

	memset(ceil, 0, sizeof(*ceil));
	*policies = NULL;
	r = sink_config_load(path, sinks, nsinks, err, size);
	if (r < 0)
		return r;
	/* sink_config_load read it as JSON: here only the ceilings. */
	root = json_object_from_file(path);
	if (!root)
		return snprintf(err, size, "%s: cannot read it", path), -EINVAL;
	if (json_object_object_get_ex(root, "ceilings", &c) &&
	    (r = ceilings_parse(c, ceil, why, sizeof(why))) < 0)
		snprintf(err, size, "%s: %s", path, why);
	if (r >= 0 && json_object_object_get_ex(root, "policies", &c) &&
	    (r = load_policies(c, policies, why, sizeof(why))) < 0) {
		snprintf(err, size, "%s: %s", path, why);
		ceilings_free(ceil);
	}
	json_object_put(root);
	return r < 0 ? r : 0;
}

/* The sinks of the command line (--audit, --sink), then those of the file. */
int daemon_sink_list(const struct daemon_opts *o, const struct sink_config *file_sinks,
		     size_t nfile, struct sink_config **out, size_t *n)
{
	struct sink_config *v = calloc(o->nsinks + nfile + 1, sizeof(*v));
	char err[256];
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	/* --audit FILE|-, or stdout when no sink is named at all. */
	if (o->audit_path || (!o->nsinks && !nfile)) {
		sink_config_parse("stdout", &v[0], err, sizeof(err));
		if (o->audit_path && !streq(o->audit_path, "-")) {
			v[0].kind = SINK_FILE;
			snprintf(v[0].path, sizeof(v[0].path), "%s", o->audit_path);
			snprintf(v[0].name, sizeof(v[0].name), "file:%s", o->audit_path);
		}
		k = 1;
	}
	if (o->nsinks)
		memcpy(v + k, o->sinks, o->nsinks * sizeof(*v));
	k += o->nsinks;
	if (nfile)
		memcpy(v + k, file_sinks, nfile * sizeof(*v));
	*out = v;
	*n = k + nfile;
	return 0;
}

static bool same_sinks(const struct sink_config *a, size_t na, const struct sink_config *b,
		       size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (!streq(a[i].spec, b[i].spec) || !streq(a[i].name, b[i].name) ||
		    a[i].kind != b[i].kind || !streq(a[i].path, b[i].path))
			return false;
	return true;
}

/* The reload's log line: what is loaded now. */
static void say_reloaded(const struct daemon *d)
{
	int np = d->policies ? json_object_object_length(d->policies) : 0;

	dlog("reloaded %s: %zu sink%s, %zu ceiling rule%s, %d polic%s; running sessions keep "
	     "theirs",
	     d->o->config_path ? d->o->config_path : "(no --config)", d->nsink_cfg,
	     d->nsink_cfg == 1 ? "" : "s", d->ceilings.n, d->ceilings.n == 1 ? "" : "s", np,
	     np == 1 ? "y" : "ies");
}

int daemon_reload(struct daemon *d, char *why, size_t size)
{
	struct sink_config *file_sinks = NULL, *list = NULL;
	size_t nfile = 0, n = 0;
	struct ceilings ceil = {0};
	struct json_object *policies = NULL;
	struct sinks *fresh = NULL;
	struct epoll_event ev = {.events = EPOLLIN};
	char err[PATH_MAX + 1024];
	int r = 0;

	if (d->o->config_path) {
		r = daemon_config_load(d->o->config_path, &file_sinks, &nfile, &ceil, &policies,
				       err, sizeof(err));
		if (r < 0)
			goto refused;
	}
	r = daemon_sink_list(d->o, file_sinks, nfile, &list, &n);
	if (r < 0) {
		snprintf(err, sizeof(err), "out of memory");
		goto refused;
	}
	ev_flush(d);
	if (same_sinks(list, n, d->sink_cfg, d->nsink_cfg)) {
		/* The same sinks (logrotate's SIGHUP): files are opened again, connections stay. */
		sinks_reopen(d->sinks);
		free(list);
	} else {
		/*
		 * Other sinks: the running set is flushed and closed (network sinks
		 * keep what was not confirmed in their spools), the new one opened
		 * (its network sinks send their spools first). The loop reads no
		 * ring record meanwhile: nothing is lost, the ring holds them.
		 */
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, sinks_fd(d->sinks), NULL);
		sinks_close(d->sinks);
		d->sinks = NULL;
		r = ev_sinks_open_list(d, list, n, err, sizeof(err), &fresh);
		if (r < 0) {
			char again[PATH_MAX + 512];

			/* The previous sinks opened before: open them again. */
			if (ev_sinks_open_list(d, d->sink_cfg, d->nsink_cfg, again, sizeof(again),
					       &fresh) < 0)
				dlog("reload: the previous sinks do not open again either: %s",
				     again);
			d->sinks = fresh;
			free(list);
			if (d->sinks) {
				ev.data.ptr = d->sinks;
				epoll_ctl(d->epfd, EPOLL_CTL_ADD, sinks_fd(d->sinks), &ev);
			}
			goto refused;
		}
		d->sinks = fresh;
		ev.data.ptr = d->sinks;
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, sinks_fd(d->sinks), &ev);
		free(d->sink_cfg);
		d->sink_cfg = list;
		d->nsink_cfg = n;
	}
	ceilings_free(&d->ceilings);
	d->ceilings = ceil;
	json_object_put(d->policies); /* adopted sessions keep the copy they registered */
	d->policies = policies;
	free(file_sinks);
	audit_host_refresh();
	metrics_count_reload(d->metrics, true);
	say_reloaded(d);
	snprintf(why, size, "reloaded");
	return 0;
refused:
	ceilings_free(&ceil);
	json_object_put(policies);
	free(file_sinks);
	metrics_count_reload(d->metrics, false);
	log_error("reload refused: %s; the running configuration stays", err);
	snprintf(why, size, "%s; the running configuration stays", err);
	return r < 0 ? r : -EINVAL;
}
