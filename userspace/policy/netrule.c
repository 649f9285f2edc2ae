// SPDX-License-Identifier: GPL-2.0
/* The network rules of a policy: HOST[:PORT[-PORT]] by address or by name. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "../lib/log.h"
#include "../lib/util.h"

int net_rule_parse(const char *rule, char *cidr, size_t size, uint16_t *lo, uint16_t *hi)
{
	char addr[INET6_ADDRSTRLEN + 8], bin[16];
	const char *ports = NULL, *slash;
	unsigned long plen, a, b;
	size_t alen;
	char *end;
	bool v6;

	/* IPv6 has colons of its own: ports follow the last "]:" or the prefix. */
	slash = strchr(rule, '/');
	if (slash)
		ports = strchr(slash, ':');
	else if (strchr(rule, '.'))
		ports = strchr(rule, ':');
	alen = (slash ? slash : ports ? ports : rule + strlen(rule)) - rule;
	if (alen == 0 || alen >= INET6_ADDRSTRLEN)
		return -EINVAL;
	memcpy(addr, rule, alen);
	addr[alen] = '\0';
	v6 = strchr(addr, ':') != NULL;
	if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) != 1)
		return -EINVAL;
	plen = v6 ? 128 : 32;
	if (slash) {
		errno = 0;
		plen = strtoul(slash + 1, &end, 10);
		if (errno || end == slash + 1 || (*end && *end != ':') ||
		    plen > (v6 ? 128UL : 32UL))
			return -EINVAL;
	}
	a = 0;
	b = 65535;
	if (ports) {
		errno = 0;
		a = b = strtoul(ports + 1, &end, 10);
		if (end == ports + 1)
			return -EINVAL;
		if (*end == '-') {
			const char *p2 = end + 1;

			b = strtoul(p2, &end, 10);
			if (end == p2)
				return -EINVAL;
		}
		if (errno || *end || a > b || b > 65535)
			return -EINVAL;
	}
	snprintf(cidr, size, "%s/%lu", addr, plen);
	*lo = a;
	*hi = b;
	return 0;
}

/* Ports after the host: "" (all), ":N" or ":N-M". */
static int parse_ports(const char *ports, uint16_t *lo, uint16_t *hi)
{
	unsigned long a = 0, b = 65535;
	char *end;

	if (*ports) {
		if (*ports != ':' || !isdigit((unsigned char)ports[1]))
			return -EINVAL;
		errno = 0;
		a = b = strtoul(ports + 1, &end, 10);
		if (*end == '-') {
			const char *p2 = end + 1;

			if (!isdigit((unsigned char)*p2))
				return -EINVAL;
			b = strtoul(p2, &end, 10);
		}
		if (errno || *end || a > b || b > 65535)
			return -EINVAL;
	}
	*lo = a;
	*hi = b;
	return 0;
}

static int name_rule(const char *rule, char *host, size_t size, uint16_t *lo, uint16_t *hi);

int net_name_rule_parse(const char *rule, char *host, size_t size, uint16_t *lo, uint16_t *hi)
{
	const char *space = strchr(rule, ' '), *why;
	char main[300], methods[NET_HTTP_METHODS_LEN], path[NET_HTTP_PATH_LEN];

	/* An HTTP rule: its host and port, once its request part holds. */
	if (!space)
		return name_rule(rule, host, size, lo, hi);
	if ((size_t)(space - rule) >= sizeof(main) ||
	    net_http_rule_parse(rule, methods, path, &why) != 1)
		return -EINVAL;
	snprintf(main, sizeof(main), "%.*s", (int)(space - rule), rule);
	return name_rule(main, host, size, lo, hi);
}

static bool method_token(const char *p, size_t n)
{
	if (n == 0 || n > 16)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isupper((unsigned char)p[i]))
			return false;
	return true;
}

int net_http_rule_parse(const char *rule, char methods[NET_HTTP_METHODS_LEN],
			char path[NET_HTTP_PATH_LEN], const char **why)
{
	const char *sp = strchr(rule, ' '), *m, *p, *q;
	char host[256];
	uint16_t lo, hi;

	if (!sp)
		return 0;
	*why = "write HOST:PORT METHODS PATH, e.g. 'api.github.com:443 GET,POST /repos/acme/**'";
	m = sp + 1;
	p = strchr(m, ' ');
	if (!p || strchr(p + 1, ' ') || (size_t)(p - m) >= NET_HTTP_METHODS_LEN)
		return -EINVAL;
	*why = "METHODS is '*' or upper-case methods joined by ',' (GET,POST)";
	if (p[-1] == ',')
		return -EINVAL;
	if (!(p - m == 1 && *m == '*'))
		for (const char *t = m; t < p; t = q + 1) {
			q = memchr(t, ',', p - t);
			q = q ? q : p;
			if (!method_token(t, q - t))
				return -EINVAL;
		}
	p++;
	*why = "PATH starts with '/' and holds no blank or control byte";
	if (*p != '/' || strlen(p) >= NET_HTTP_PATH_LEN)
		return -EINVAL;
	for (q = p; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return -EINVAL;
	*why = "an HTTP rule names one host or one wildcard (*.example.com) and one port, 443 "
	       "(TLS, which the proxy terminates to read the requests) or 80 (plain HTTP)";
	snprintf(host, sizeof(host), "%.*s", (int)(sp - rule), rule);
	if (name_rule(host, host, sizeof(host), &lo, &hi) < 0 || lo != hi ||
	    (lo != 443 && lo != 80))
		return -EINVAL;
	snprintf(methods, NET_HTTP_METHODS_LEN, "%.*s", (int)(p - 1 - m), m);
	snprintf(path, NET_HTTP_PATH_LEN, "%s", p);
	return 1;
}

/* Whether the segment-glob pattern matches s ('*' within a segment, "**" across). */
static bool glob_path(const char *pat, const char *s)
{
	for (; *pat; pat++, s++) {
		if (pat[0] == '*' && pat[1] == '*') {
			for (const char *t = s;; t++) {
				if (glob_path(pat + 2, t))
					return true;
				if (!*t)
					return false;
			}
		}
		if (*pat == '*') {
			for (const char *t = s;; t++) {
				if (glob_path(pat + 1, t))
					return true;
				if (!*t || *t == '/')
					return false;
			}
		}
		if (*pat != *s)
			return false;
	}
	return !*s;
}

bool net_http_match(const char *methods, const char *pattern, const char *method, const char *path)
{
	size_t n = strlen(method);
	bool ok = streq(methods, "*");

	for (const char *t = methods; !ok && *t;) {
		const char *c = strchr(t, ',');
		size_t len = c ? (size_t)(c - t) : strlen(t);

		ok = len == n && !strncmp(t, method, n);
		t += len + (c ? 1 : 0);
	}
	return ok && glob_path(pattern, path);
}

static int name_rule(const char *rule, char *host, size_t size, uint16_t *lo, uint16_t *hi)
{
	const char *colon = strchr(rule, ':'), *p = rule;
	size_t len = colon ? (size_t)(colon - rule) : strlen(rule), label = 0;
	bool alpha = false;

	if (strncmp(rule, "*.", 2) == 0)
		p += 2;
	if (p == rule + len || len > 253 || len + 1 > size)
		return -EINVAL;
	/* Whole labels of letters, digits, '-' and '_', none empty or > 63. */
	for (; p < rule + len; p++) {
		if (*p == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return -EINVAL;
		if (isalpha((unsigned char)*p) || *p == '-' || *p == '_')
			alpha = true;
		if (++label > 63)
			return -EINVAL;
	}
	/* A trailing dot is allowed; all digits would be an address. */
	if (!alpha)
		return -EINVAL;
	if (parse_ports(colon ? colon : "", lo, hi) < 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		host[i] = tolower((unsigned char)rule[i]);
	if (len > 1 && host[len - 1] == '.')
		len--;
	host[len] = '\0';
	return 0;
}

bool net_name_match(const char *pattern, const char *name)
{
	size_t pl, nl = strlen(name);

	if (nl && name[nl - 1] == '.')
		nl--;
	if (strncmp(pattern, "*.", 2) == 0) {
		pl = strlen(pattern + 1); /* ".example.com" */
		return nl > pl && strncasecmp(name + nl - pl, pattern + 1, pl) == 0;
	}
	pl = strlen(pattern);
	return nl == pl && strncasecmp(name, pattern, pl) == 0;
}

static bool secret_name_ok(const char *s, size_t n)
{
	if (!n || n > 64 || isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

/* "+query" at the end of a spec: cut off (in buf) and said in *query. */
static const char *secret_query_flag(const char *spec, char *buf, size_t size, bool *query)
{
	size_t n = strlen(spec);

	*query = n > 6 && !strcmp(spec + n - 6, "+query") && n - 6 < size;
	if (!*query)
		return spec;
	memcpy(buf, spec, n - 6);
	buf[n - 6] = '\0';
	return buf;
}

int secret_spec_parse(const char *spec, struct secret_spec *out, const char **why)
{
	char cut[4096 + 2 * 254 * SECRET_MAX_HOSTS];
	const char *at, *eq, *h;
	size_t nl;
	bool query;

	memset(out, 0, sizeof(*out));
	spec = secret_query_flag(spec, cut, sizeof(cut), &query);
	out->query = query;
	at = strrchr(spec, '@');
	eq = strchr(spec, '=');
	*why = "not NAME@HOST[,HOST...][+query] or NAME=file:PATH@HOST[,HOST...][+query]";
	if (!at || (eq && eq > at))
		return -EINVAL;
	nl = (eq ? eq : at) - spec;
	if (!secret_name_ok(spec, nl)) {
		*why = "NAME must be a variable name (letters, digits, '_', at most 64)";
		return -EINVAL;
	}
	memcpy(out->name, spec, nl);
	if (eq) {
		size_t pl = at - (eq + 6);

		if (strncmp(eq + 1, "file:", 5) || eq + 6 >= at || pl >= sizeof(out->path)) {
			*why = "the value's source must be file:PATH";
			return -EINVAL;
		}
		memcpy(out->path, eq + 6, pl);
	}
	for (h = at + 1;;) {
		size_t hl = strcspn(h, ",");
		char rule[254], host[254];
		uint16_t lo, hi;

		*why = "each HOST must be a name without port or wildcard (api.example.com)";
		if (!hl || hl >= sizeof(rule) || out->n_hosts == SECRET_MAX_HOSTS)
			return -EINVAL;
		memcpy(rule, h, hl);
		rule[hl] = '\0';
		if (strchr(rule, ':') || rule[0] == '*' ||
		    net_name_rule_parse(rule, host, sizeof(host), &lo, &hi) < 0)
			return -EINVAL;
		snprintf(out->hosts[out->n_hosts++], sizeof(out->hosts[0]), "%s", host);
		if (!h[hl])
			break;
		h += hl + 1;
	}
	return 0;
}

/* An exec deny entry: an absolute path or a bare file name. */
