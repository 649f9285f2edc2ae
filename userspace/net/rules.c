// SPDX-License-Identifier: GPL-2.0
/*
 * Egress by name (docs/network.md): the rules of a session's proxy, their
 * verdict for a name or an address, and the addresses no name may reach.
 */
#include "egress_internal.h"

bool egress_has_names(const struct strv *rules)
{
	char host[256];
	uint16_t lo, hi;

	for (size_t i = 0; rules && i < rules->n; i++)
		if (net_name_rule_parse(rules->v[i], host, sizeof(host), &lo, &hi) == 0)
			return true;
	return false;
}

void eg_map4(uint8_t out[16], const void *v4)
{
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, v4, 4);
}

bool eg_is_mapped(const uint8_t a[16])
{
	static const uint8_t pfx[12] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(a, pfx, 12);
}

void eg_addr_str(const uint8_t a[16], char *buf, size_t size)
{
	if (eg_is_mapped(a))
		inet_ntop(AF_INET, a + 12, buf, size);
	else
		inet_ntop(AF_INET6, a, buf, size);
}

static int parse_rule(const char *text, struct rule *r)
{
	char cidr[64], *slash;
	uint8_t bin[16];

	memset(r, 0, sizeof(*r));
	snprintf(r->text, sizeof(r->text), "%s", text);
	if (net_name_rule_parse(text, r->host, sizeof(r->host), &r->lo, &r->hi) == 0) {
		const char *why;

		r->name = true;
		r->http = net_http_rule_parse(text, r->methods, r->path, &why) == 1;
		return 0;
	}
	if (net_rule_parse(text, cidr, sizeof(cidr), &r->lo, &r->hi) < 0)
		return -EINVAL;
	slash = strchr(cidr, '/');
	*slash = '\0';
	r->plen = strtoul(slash + 1, NULL, 10);
	if (inet_pton(AF_INET, cidr, bin) == 1) {
		eg_map4(r->addr, bin);
		r->plen += 96;
	} else if (inet_pton(AF_INET6, cidr, r->addr) != 1) {
		return -EINVAL;
	}
	return 0;
}

static bool prefix_match(const uint8_t a[16], const uint8_t b[16], unsigned int plen)
{
	unsigned int bytes = plen / 8, bits = plen % 8;

	if (memcmp(a, b, bytes))
		return false;
	return !bits || ((a[bytes] ^ b[bytes]) & (0xff << (8 - bits))) == 0;
}

/*
 * Never reachable through a name: loopback, unspecified, link-local (the
 * metadata address among them), multicast, broadcast, the metadata IPv6
 * address and the host's own addresses (DNS rebinding).
 */
bool eg_forbidden(const struct egress *e, const uint8_t a[16])
{
	static const uint8_t meta6[16] = {0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02};
	static const uint8_t zero[16];

	if (eg_is_mapped(a)) {
		const uint8_t *v = a + 12;

		if (v[0] == 0 || v[0] == 127 || (v[0] == 169 && v[1] == 254) || v[0] >= 224)
			return true;
	} else {
		if (!memcmp(a, zero, 15) && (a[15] == 0 || a[15] == 1))
			return true;
		if ((a[0] == 0xfe && (a[1] & 0xc0) == 0x80) || a[0] == 0xff ||
		    !memcmp(a, meta6, 16))
			return true;
	}
	for (size_t i = 0; i < e->n_own; i++)
		if (!memcmp(e->own[i], a, 16))
			return true;
	return false;
}

/*
 * The rule that decides name (may be NULL) at addr:port. Deny rules come
 * first. A name is judged by name rules; an address by CIDR rules. Returns
 * true to allow; *rule gets the deciding rule's text or "".
 */
bool eg_judge(struct egress *e, const char *name, const uint8_t *addr, uint16_t port, bool any_port,
	      char rule[BPFBOX_NET_RULE_LEN])
{
	bool ok = false;

	rule[0] = '\0';
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_deny; i++) {
		const struct rule *r = &e->deny[i];
		bool hit = r->name ? name && net_name_match(r->host, name)
				   : addr && prefix_match(r->addr, addr, r->plen);

		/* A query is refused only when every port is denied. */
		if (hit &&
		    (any_port ? r->lo == 0 && r->hi == 65535 : port >= r->lo && port <= r->hi)) {
			snprintf(rule, BPFBOX_NET_RULE_LEN, "%s", r->text);
			goto out;
		}
	}
	for (size_t i = 0; i < e->n_allow; i++) {
		const struct rule *r = &e->allow[i];
		bool hit = r->name ? name && net_name_match(r->host, name)
				   : addr && prefix_match(r->addr, addr, r->plen);

		if (hit && (any_port || (port >= r->lo && port <= r->hi))) {
			snprintf(rule, BPFBOX_NET_RULE_LEN, "%s", r->text);
			ok = true;
			goto out;
		}
	}
out:
	pthread_mutex_unlock(&e->lock);
	return ok;
}

static int add_rule(struct egress *e, const char *text, bool deny)
{
	struct rule *list = deny ? e->deny : e->allow;
	size_t *n = deny ? &e->n_deny : &e->n_allow;
	struct rule r;

	if (parse_rule(text, &r) < 0)
		return -EINVAL;
	for (size_t i = 0; i < *n; i++)
		if (streq(list[i].text, r.text))
			return 0;
	if (*n >= MAX_RULES)
		return -ENOSPC;
	list[(*n)++] = r;
	return 0;
}

int egress_rule_add(struct egress *e, const char *rule, bool deny)
{
	int r;

	/* An HTTP rule's host is terminated from the start, or its requests go unread. */
	if (strchr(rule, ' '))
		return -EOPNOTSUPP;
	pthread_mutex_lock(&e->lock);
	r = add_rule(e, rule, deny);
	pthread_mutex_unlock(&e->lock);
	return r;
}

int egress_rule_remove(struct egress *e, const char *rule, bool deny)
{
	struct rule *list = deny ? e->deny : e->allow;
	size_t *n = deny ? &e->n_deny : &e->n_allow;
	int r = -ENOENT;

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < *n; i++) {
		if (!streq(list[i].text, rule))
			continue;
		memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof(list[0]));
		(*n)--;
		r = 0;
		break;
	}
	pthread_mutex_unlock(&e->lock);
	return r;
}

/* The session's allow and deny rules; -errno and err naming the first bad one. */
int eg_rules_add(struct egress *e, const struct egress_opts *o, char *err, size_t size)
{
	int r;

	for (size_t i = 0; o->allow && i < o->allow->n; i++) {
		r = add_rule(e, o->allow->v[i], false);
		if (r < 0) {
			snprintf(err, size, "invalid net_allow rule '%s'", o->allow->v[i]);
			return r;
		}
	}
	for (size_t i = 0; o->deny && i < o->deny->n; i++) {
		r = add_rule(e, o->deny->v[i], true);
		if (r < 0) {
			snprintf(err, size, "invalid net_deny rule '%s'", o->deny->v[i]);
			return r;
		}
	}
	return 0;
}

/* A literal address as a proxy request names it (10.1.2.3, [2001:db8::1]), mapped. */
bool eg_literal_addr(const char *name, uint8_t out[16])
{
	char buf[INET6_ADDRSTRLEN];
	size_t len = strlen(name);
	struct in_addr a4;

	if (inet_pton(AF_INET, name, &a4) == 1) {
		eg_map4(out, &a4);
		return true;
	}
	if (len < 3 || name[0] != '[' || name[len - 1] != ']' || len - 2 >= sizeof(buf))
		return false;
	memcpy(buf, name + 1, len - 2);
	buf[len - 2] = '\0';
	return inet_pton(AF_INET6, buf, out) == 1;
}

bool eg_request_ok(struct egress *e, const char *host, uint16_t port, const struct http_head *h,
		   char rule[BPFBOX_NET_RULE_LEN], char *why, size_t size)
{
	bool ok = false, http = false;

	rule[0] = '\0';
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_allow && !ok; i++) {
		const struct rule *r = &e->allow[i];

		if (!r->name || !net_name_match(r->host, host) || port < r->lo || port > r->hi)
			continue;
		http |= r->http;
		ok = !r->http ||
		     (!h->path_bad && net_http_match(r->methods, r->path, h->method, h->path));
		if (ok)
			snprintf(rule, BPFBOX_NET_RULE_LEN, "%s", r->text);
	}
	/* No HTTP rule for host:port (an address rule allowed it): its requests are not judged. */
	if (!ok && !http)
		ok = true;
	pthread_mutex_unlock(&e->lock);
	if (!ok && h->path_bad)
		snprintf(why, size,
			 "a request path no HTTP rule can judge (dot segments, encoded "
			 "separators or too long)");
	else if (!ok)
		snprintf(why, size, "no HTTP rule for %.15s %.180s", h->method, h->path);
	return ok;
}

size_t eg_http_hosts(const struct egress *e, char hosts[][254], size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < e->n_allow; i++) {
		bool seen = false;

		/* Port 80's are plain HTTP: read as they are, no leaf. */
		if (!e->allow[i].http || e->allow[i].lo != 443)
			continue;
		for (size_t k = 0; k < n; k++)
			seen |= streq(hosts[k], e->allow[i].host);
		if (!seen && n < max)
			snprintf(hosts[n++], 254, "%s", e->allow[i].host);
	}
	return n;
}

/* Whether the proxy is stopping (the session ends): no new question. */
static bool stopping(const struct egress *e)
{
	struct pollfd p = {.fd = e->stop_pipe[0], .events = POLLIN};

	return poll(&p, 1, 0) > 0;
}

bool eg_judge_ask(struct egress *e, const char *name, uint16_t port, bool any_port,
		  char rule[BPFBOX_NET_RULE_LEN])
{
	char text[BPFBOX_NET_RULE_LEN];
	bool yes = false, refused = false;

	if (eg_judge(e, name, NULL, port, any_port, rule))
		return true;
	/* A net_deny rule decided, or nobody to ask. */
	if (rule[0] || !name || !name[0] || !e->o.ask)
		return false;
	if (any_port)
		snprintf(text, sizeof(text), "%s", name);
	else
		snprintf(text, sizeof(text), "%s:%u", name, port);
	/*
	 * One question at a time: a resolver's A and AAAA queries (or a
	 * connection's retries) ask once; the second finds the first's answer.
	 */
	pthread_mutex_lock(&e->ask_lock);
	if (eg_judge(e, name, NULL, port, any_port, rule)) {
		pthread_mutex_unlock(&e->ask_lock);
		return true;
	}
	for (unsigned int i = 0; i < e->n_asked_no && i < ARRAY_SIZE(e->asked_no); i++)
		refused |= streq(e->asked_no[i], text);
	if (!refused && !stopping(e))
		yes = e->o.ask(e->o.ask_arg, name, any_port ? 0 : port, e->stop_pipe[0]);
	if (yes)
		yes = egress_rule_add(e, text, false) == 0;
	else if (!refused)
		snprintf(e->asked_no[e->n_asked_no++ % ARRAY_SIZE(e->asked_no)],
			 sizeof(e->asked_no[0]), "%s", text);
	pthread_mutex_unlock(&e->ask_lock);
	if (yes)
		snprintf(rule, BPFBOX_NET_RULE_LEN, "%s", text);
	return yes;
}

bool eg_http_judged(struct egress *e, const char *host, uint16_t port)
{
	bool http = false, plain = false;

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_allow; i++) {
		const struct rule *r = &e->allow[i];

		if (!r->name || !net_name_match(r->host, host) || port < r->lo || port > r->hi)
			continue;
		http |= r->http;
		plain |= !r->http;
	}
	pthread_mutex_unlock(&e->lock);
	return http && !plain;
}
