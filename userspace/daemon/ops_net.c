// SPDX-License-Identifier: GPL-2.0
/*
 * A session's network in the daemon: the connect allow-list, its holes and
 * the egress proxy at register, and the net request that changes them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "internal.h"
#include "ops_internal.h"
#include "metrics.h"
#include "../agent/agent.h"
#include "../lib/cgroup.h"
#include "../audit/sink.h"
#include "../monitor/control.h"
#include "../monitor/monitor.h"
#include "../monitor/oom.h"
#include "../policy/policy.h"
#include "../lib/util.h"
#include "../net/egress.h"

/* The optional connect allow-list: [{"cidr":"10.0.0.0/8","ports":[lo,hi]}]. */
int ops_add_net_rules(struct daemon *d, struct conn *c, struct dsession *s,
		      struct json_object *rules)
{
	size_t n = json_object_array_length(rules);

	if (n > MAX_NET_RULES)
		return ops_bad_member(d, c, "register", "net_allow", "at most 256 rules");
	for (size_t i = 0; i < n; i++) {
		struct json_object *rule = json_object_array_get_idx(rules, i), *ports;
		int64_t lo = 0, hi = 65535;
		const char *cidr;
		int r;

		if (!json_object_is_type(rule, json_type_object) ||
		    proto_get_str(rule, "cidr", &cidr))
			return ops_bad_member(
				d, c, "register", "net_allow",
				"an array of {\"cidr\": \"ADDR/LEN\", \"ports\": [LO, HI]}");
		if (proto_get_array(rule, "ports", &ports) == 0) {
			struct json_object *a = json_object_array_get_idx(ports, 0);
			struct json_object *b = json_object_array_get_idx(ports, 1);

			if (json_object_array_length(ports) != 2 ||
			    !json_object_is_type(a, json_type_int) ||
			    !json_object_is_type(b, json_type_int))
				return ops_bad_member(d, c, "register", "net_allow[].ports",
						      "[LO, HI]");
			lo = json_object_get_int64(a);
			hi = json_object_get_int64(b);
			if (lo < 0 || hi > 65535 || lo > hi)
				return ops_bad_member(d, c, "register", "net_allow[].ports",
						      "a range within 0-65535");
		}
		r = agent_net_allow(d->agent, s->index, cidr, lo, hi);
		if (r == -EINVAL)
			return ops_bad_member(d, c, "register", "net_allow[].cidr",
					      "ADDR/LEN, v4 or v6");
		if (r < 0) {
			ops_reply_error(d, c, -r, "register: cannot add the connect allow-list: %s",
					strerror(-r));
			return r;
		}
	}
	return 0;
}

/* A JSON array of strings into a strv (rules checked by their users). */
static int strv_of(struct json_object *a, struct strv *out)
{
	size_t n = json_object_array_length(a);

	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(a, i);

		if (!json_object_is_type(v, json_type_string) ||
		    strv_push(out, json_object_get_string(v)) < 0)
			return -EINVAL;
	}
	return 0;
}

/* One "secrets" entry: {name, token, hosts, value}; -EINVAL when malformed. */
static int secret_of(struct json_object *o, struct egress_secret *e)
{
	struct json_object *h, *v;
	struct secret_spec spec;
	const char *name, *token, *why;
	char text[SECRET_MAX_HOSTS * 254 + 80];
	size_t len = 0, vl;

	if (!json_object_is_type(o, json_type_object) || proto_get_str(o, "name", &name) ||
	    proto_get_str(o, "token", &token) || proto_get_array(o, "hosts", &h) ||
	    !json_object_object_get_ex(o, "value", &v) || !json_object_is_type(v, json_type_string))
		return -EINVAL;
	len = snprintf(text, sizeof(text), "%s@", name);
	for (size_t i = 0; i < json_object_array_length(h) && len < sizeof(text); i++)
		len += snprintf(text + len, sizeof(text) - len, "%s%s", i ? "," : "",
				json_object_get_string(json_object_array_get_idx(h, i)));
	vl = json_object_get_string_len(v);
	if (len >= sizeof(text) || secret_spec_parse(text, &spec, &why) < 0 ||
	    strlen(token) != 32 || strspn(token, "0123456789abcdef") != 32 || !vl || vl > 65536 ||
	    strcspn(json_object_get_string(v), "\r\n") != vl ||
	    strlen(json_object_get_string(v)) != vl)
		return -EINVAL;
	snprintf(e->name, sizeof(e->name), "%s", spec.name);
	snprintf(e->token, sizeof(e->token), "%s", token);
	snprintf(e->placeholder, sizeof(e->placeholder), "bpfbox-secret-%s-%s", e->name, token);
	memcpy(e->hosts, spec.hosts, sizeof(e->hosts));
	e->n_hosts = spec.n_hosts;
	proto_get_bool(o, "query", &e->query);
	e->value = strndup(json_object_get_string(v), vl);
	e->len = vl;
	return e->value ? 0 : -ENOMEM;
}

/* "secrets" (--secret, docs/network.md): the proxy copies them; *out freed by the caller. */
static int secrets_of(struct json_object *a, struct egress_secrets *out)
{
	size_t n = json_object_array_length(a);

	if (n > 64)
		return -EINVAL;
	out->v = calloc(n ? n : 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int r = secret_of(json_object_array_get_idx(a, i), &out->v[out->n]);

		if (r < 0)
			return r;
		out->n++;
	}
	return 0;
}

/*
 * Egress by name (docs/network.md): "net_hosts" (allow rules with names),
 * "net_deny" (exceptions: names, addresses, CIDRs) and "net_resolver" start
 * the session's proxy and resolver; *proxy and *dns get their ports.
 */
int ops_start_egress(struct daemon *d, struct conn *c, struct dsession *s, struct json_object *req,
		     int netns_fd, uint16_t *proxy, uint16_t *dns)
{
	struct strv allow = {0}, deny = {0};
	struct egress_secrets secrets = {0};
	struct egress_opts o = {.cgroup_id = s->cgroup_id,
				.session = s->index,
				.allow = &allow,
				.deny = &deny,
				.in_netns = netns_fd >= 0,
				.netns_fd = netns_fd};
	struct agent_egress_fds f;
	struct json_object *v;
	char err[256];
	int r = 0;

	*proxy = *dns = 0;
	r = proto_get_array(req, "net_hosts", &v);
	if (r == -EINVAL || (r == 0 && strv_of(v, &allow) < 0)) {
		r = ops_bad_member(d, c, "register", "net_hosts", "an array of HOST[:PORT[-PORT]]");
		goto out;
	}
	r = proto_get_array(req, "net_deny", &v);
	if (r == -EINVAL || (r == 0 && strv_of(v, &deny) < 0)) {
		r = ops_bad_member(d, c, "register", "net_deny", "an array of HOST[:PORT[-PORT]]");
		goto out;
	}
	r = proto_get_array(req, "secrets", &v);
	if (r == -EINVAL || (r == 0 && secrets_of(v, &secrets) < 0)) {
		r = ops_bad_member(d, c, "register", "secrets",
				   "an array of {name, token, hosts, value}");
		goto out;
	}
	o.secrets = &secrets;
	r = 0;
	if (proto_get_str(req, "net_resolver", &o.resolver) == -EINVAL) {
		r = ops_bad_member(d, c, "register", "net_resolver", "ADDR[:PORT]");
		goto out;
	}
	if (!egress_has_names(&allow))
		goto out;
	if (agent_egress_fds(d->agent, &f) < 0) {
		ops_reply_error(d, c, ENOTSUP,
				"register: name rules need the daemon's own network "
				"programs (adopted ones have no proxy maps); restart it "
				"with --cleanup first");
		r = -ENOTSUP;
		goto out;
	}
	o.orig_fd = f.orig;
	o.resolved_fd = f.resolved;
	o.dns_client_fd = f.dns_client;
	o.emit_fd = f.emit;
	/* --net-ask: the proxy's questions go to the loop (ops_ask_net.c). */
	if (s->ask && s->net_ask.d) {
		o.ask = ops_net_ask;
		o.ask_arg = &s->net_ask;
	}
	r = egress_start(&s->egress, &o, err, sizeof(err));
	if (r < 0) {
		ops_reply_error(d, c, r == -EINVAL ? EINVAL : -r, "register: %s", err);
		goto out;
	}
	*proxy = egress_proxy_port(s->egress);
	*dns = egress_dns_port(s->egress);
out:
	strv_clear(&allow);
	strv_clear(&deny);
	egress_secrets_free(&secrets);
	return r;
}

/* The net_deny addresses and CIDRs: holes in the BPF allow-list. */
int ops_add_net_holes(struct daemon *d, struct conn *c, struct dsession *s, struct json_object *req)
{
	struct json_object *v;
	size_t n;

	if (proto_get_array(req, "net_deny", &v) < 0)
		return 0;
	n = json_object_array_length(v);
	for (size_t i = 0; i < n; i++) {
		const char *rule = json_object_get_string(json_object_array_get_idx(v, i));
		char cidr[64];
		uint16_t lo, hi;
		int r;

		if (!rule || net_rule_parse(rule, cidr, sizeof(cidr), &lo, &hi) < 0)
			continue;
		r = agent_net_hole(d->agent, s->index, cidr);
		if (r < 0) {
			ops_reply_error(d, c, -r, "register: cannot add the net_deny rule '%s': %s",
					rule, strerror(-r));
			return r;
		}
	}
	return 0;
}

/*
 * A rule added to or removed from a running session (an operator approving
 * a domain): {"op":"net","session":ID,"action":"allow"|"deny"|"remove",
 * "rule":"HOST[:PORT[-PORT]]"}. Names go to the session's proxy, which
 * judges every new connection and query by the rules of the moment;
 * addresses and CIDRs to the BPF allow-list (added, not removed).
 */
void op_net(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = ops_request_session(d, c, req, "net");
	const char *action, *rule;
	char cidr[64], host[256];
	uint16_t lo, hi;
	bool name, deny;
	int r = 0;

	if (!s)
		return;
	if (proto_get_str(req, "action", &action) ||
	    (!streq(action, "allow") && !streq(action, "deny") && !streq(action, "remove"))) {
		ops_bad_member(d, c, "net", "action", "\"allow\", \"deny\" or \"remove\"");
		return;
	}
	deny = streq(action, "deny");
	/* Widening is the operator's: the owner is held to its ceiling (register). */
	if (!deny && c->peer.uid != 0) {
		ops_reply_error(d, c, EPERM,
				"net: only root may %s a rule of a running session; "
				"deny is open to its owner",
				action);
		return;
	}
	if (proto_get_str(req, "rule", &rule)) {
		ops_bad_member(d, c, "net", "rule", "HOST[:PORT[-PORT]]");
		return;
	}
	name = net_name_rule_parse(rule, host, sizeof(host), &lo, &hi) == 0;
	if (!name && net_rule_parse(rule, cidr, sizeof(cidr), &lo, &hi) < 0) {
		ops_bad_member(d, c, "net", "rule",
			       "HOST[:PORT[-PORT]] with HOST a name, *.wildcard, ADDR or ADDR/LEN");
		return;
	}
	if (strchr(rule, ' ') && !streq(action, "remove")) {
		ops_reply_error(d, c, EOPNOTSUPP,
				"net: an HTTP rule ('%s') is set when a session starts: its "
				"proxy terminates TLS for the rule's host from the start",
				rule);
		return;
	}
	if (streq(action, "remove")) {
		if (!s->egress || (egress_rule_remove(s->egress, rule, false) < 0 &&
				   egress_rule_remove(s->egress, rule, true) < 0)) {
			ops_reply_error(d, c, ENOENT,
					"net: session %s has no name rule '%s' to remove "
					"(address rules stay while it runs)",
					s->id, rule);
			return;
		}
	} else if (name && !s->egress) {
		ops_reply_error(d, c, EOPNOTSUPP,
				"net: session %s started without name rules and has "
				"no egress proxy; start it with one",
				s->id);
		return;
	} else if (name) {
		r = egress_rule_add(s->egress, rule, deny);
	} else {
		r = deny ? agent_net_hole(d->agent, s->index, cidr)
			 : agent_net_allow(d->agent, s->index, cidr, lo, hi);
		if (!r && deny && s->egress)
			r = egress_rule_add(s->egress, rule, true);
	}
	if (r < 0) {
		ops_reply_error(d, c, -r, "net: cannot %s '%s' for session %s: %s", action, rule,
				s->id, strerror(-r));
		return;
	}
	dlog("session %s: net %s %s (by pid %d uid %u)", s->id, action, rule, c->peer.pid,
	     c->peer.uid);
	ops_reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_str(&d->rw, "action", action);
	jsonw_str(&d->rw, "rule", rule);
	ops_reply_send(d, c);
}
