// SPDX-License-Identifier: GPL-2.0
/*
 * Sink specs (docs/sinks.md): KIND[:TARGET][?KEY=VALUE&...], and the
 * "sinks" section of the daemon's config file. Every error names the key
 * and what it takes, so that the daemon refuses to start with one line.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <json-c/json.h>

#include "sink_internal.h"
#include "../lib/util.h"

#define CONFIG_FILE_MAX (1U << 20)

/* %XX escapes of a URL component; -EINVAL on a bad escape, a NUL or no room. */
static int unescape(const char *in, size_t len, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		char c = in[i];

		if (c == '%') {
			char hex[3] = {0};
			char *end;

			if (i + 2 >= len || !isxdigit((unsigned char)in[i + 1]) ||
			    !isxdigit((unsigned char)in[i + 2]))
				return -EINVAL;
			hex[0] = in[i + 1];
			hex[1] = in[i + 2];
			c = (char)strtoul(hex, &end, 16);
			if (!c)
				return -EINVAL;
			i += 2;
		}
		if (o + 1 >= size)
			return -EINVAL;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int parse_facility(const char *s)
{
	static const char *const names[] = {
		"kern",	  "user",   "mail",	"daemon", "auth",   "syslog", "lpr",	"news",
		"uucp",	  "cron",   "authpriv", "ftp",	  "ntp",    "audit",  "alert",	"clock",
		"local0", "local1", "local2",	"local3", "local4", "local5", "local6", "local7",
	};
	unsigned long long v;
	int i = name_index(names, ARRAY_SIZE(names), s);

	if (i >= 0)
		return i;
	if (parse_u64(s, &v) == 0 && v < ARRAY_SIZE(names))
		return v;
	return -EINVAL;
}

int sink_format_parse(const char *name, enum sink_format *f)
{
	static const char *const names[] = {
		[SINK_FMT_JSON] = "json", [SINK_FMT_OCSF] = "ocsf", [SINK_FMT_TEXT] = "text"};
	int i = name_index(names, ARRAY_SIZE(names), name);

	if (i < 0)
		return i;
	*f = i;
	return 0;
}

static bool printable(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 33 || s[i] > 126)
			return false;
	return true;
}

static int parse_types(const char *v, uint32_t *mask, char *err, size_t size)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(v) >= sizeof(buf))
		return err_invalid(err, size, "types: the list is too long; give some of: %s",
				   ev_kind_list());
	snprintf(buf, sizeof(buf), "%s", v);
	*mask = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i = ev_kind_parse(tok);

		if (i < 0)
			return err_invalid(err, size,
					   "types: unknown event type '%s'; use some of: %s", tok,
					   ev_kind_list());
		*mask |= 1U << i;
	}
	if (!*mask)
		return err_invalid(err, size, "types: give a comma-separated list of: %s",
				   ev_kind_list());
	return 0;
}

static int parse_fsync(struct sink_config *c, const char *v, char *err, size_t size)
{
	unsigned long long n;

	if (streq(v, "never")) {
		c->fsync = SINK_FSYNC_NEVER;
	} else if (streq(v, "rotate")) {
		c->fsync = SINK_FSYNC_ROTATE;
	} else if (streq(v, "always")) {
		c->fsync = SINK_FSYNC_EVENTS;
		c->fsync_events = 1;
	} else if (startswith(v, "events:")) {
		if (parse_u64(v + 7, &n) < 0 || n < 1 || n > 1000000000ULL)
			return err_invalid(err, size, "fsync: '%s': give events:N with N from 1",
					   v);
		c->fsync = SINK_FSYNC_EVENTS;
		c->fsync_events = n;
	} else if (startswith(v, "interval:")) {
		if (parse_duration_ns(v + 9, &c->fsync_interval_ns) < 0 ||
		    c->fsync_interval_ns < 1000000ULL)
			return err_invalid(err, size,
					   "fsync: '%s': give interval:DURATION of at least "
					   "1ms (500ms, 2s)",
					   v);
		c->fsync = SINK_FSYNC_INTERVAL;
	} else {
		return err_invalid(err, size,
				   "fsync: '%s': use never, rotate, always, events:N or "
				   "interval:DURATION",
				   v);
	}
	return 0;
}

#define SYSLOG_KEYS "format, types, name, queue, facility, hostname, app, spool, spool_max, confirm"

static const char *kind_keys(enum sink_kind k)
{
	static const char *const keys[] = {
		[SINK_FILE] = "format, types, name, queue, rotate, keep, fsync",
		[SINK_STDOUT] = "format, types, name, queue",
		[SINK_SYSLOG_TLS] = SYSLOG_KEYS ", ca, cert, key, peer",
	};

	return name_of(keys, ARRAY_SIZE(keys), k, SYSLOG_KEYS);
}

static const char *kind_name(enum sink_kind k)
{
	static const char *const names[] = {
		[SINK_FILE] = "a file sink",
		[SINK_STDOUT] = "the stdout sink",
		[SINK_SYSLOG_TCP] = "a syslog+tcp sink",
		[SINK_SYSLOG_TLS] = "a syslog+tls sink",
	};

	return name_of(names, ARRAY_SIZE(names), k, "a syslog+udp sink");
}

/* long: one case per key of a sink spec, each checked where it is read (a table in code) */
static int parse_key(struct sink_config *c, const char *key, const char *v, char *err, size_t size)
{
	bool file = c->kind == SINK_FILE;
	bool tls = c->kind == SINK_SYSLOG_TLS;
	bool net = c->kind == SINK_SYSLOG_TCP || c->kind == SINK_SYSLOG_UDP || tls;
	unsigned long long n;

	if (streq(key, "format")) {
		if (sink_format_parse(v, &c->format) < 0)
			return err_invalid(err, size, "format: '%s': use json, ocsf or text", v);
	} else if (streq(key, "types")) {
		return parse_types(v, &c->types, err, size);
	} else if (streq(key, "name")) {
		if (!printable(v, SINK_NAME_MAX - 1))
			return err_invalid(err, size,
					   "name: '%s': give printable ASCII without spaces", v);
		snprintf(c->name, sizeof(c->name), "%s", v);
	} else if (streq(key, "queue")) {
		if (parse_size(v, &c->queue_bytes) < 0 || c->queue_bytes < (64U << 10) ||
		    c->queue_bytes > (1ULL << 30))
			return err_invalid(err, size, "queue: '%s': give a size from 64K to 1G", v);
	} else if (file && streq(key, "rotate")) {
		if (parse_size(v, &c->rotate_bytes) < 0 ||
		    (c->rotate_bytes && c->rotate_bytes < 4096))
			return err_invalid(err, size,
					   "rotate: '%s': give a size of at least 4K (100M, 1G) "
					   "or 0 for none",
					   v);
	} else if (file && streq(key, "keep")) {
		if (parse_u64(v, &n) < 0 || n < 1 || n > 999)
			return err_invalid(err, size,
					   "keep: '%s': give a number of files from 1 to 999", v);
		c->keep = n;
	} else if (file && streq(key, "fsync")) {
		return parse_fsync(c, v, err, size);
	} else if (net && streq(key, "facility")) {
		c->facility = parse_facility(v);
		if (c->facility < 0)
			return err_invalid(err, size,
					   "facility: '%s': use a name (daemon, auth, authpriv, "
					   "local0..local7, ...) or 0-23",
					   v);
	} else if (net && streq(key, "hostname")) {
		if (!printable(v, 255))
			return err_invalid(err, size,
					   "hostname: '%s': give 1-255 printable ASCII bytes", v);
		snprintf(c->hostname, sizeof(c->hostname), "%s", v);
	} else if (net && streq(key, "app")) {
		if (!printable(v, 48))
			return err_invalid(err, size, "app: '%s': give 1-48 printable ASCII bytes",
					   v);
		snprintf(c->app, sizeof(c->app), "%s", v);
	} else if (net && streq(key, "spool")) {
		if (v[0] != '/' || strlen(v) >= sizeof(c->spool_dir) - 32)
			return err_invalid(err, size, "spool: '%s': give an absolute directory", v);
		snprintf(c->spool_dir, sizeof(c->spool_dir), "%s", v);
	} else if (net && streq(key, "spool_max")) {
		if (parse_size(v, &c->spool_bytes) < 0 || c->spool_bytes < (1U << 20))
			return err_invalid(err, size, "spool_max: '%s': give a size of at least 1M",
					   v);
	} else if (tls && (streq(key, "ca") || streq(key, "cert") || streq(key, "key"))) {
		char *dst = streq(key, "ca")	 ? c->tls_ca
			    : streq(key, "cert") ? c->tls_cert
						 : c->tls_key;

		if (v[0] != '/' || strlen(v) >= PATH_MAX)
			return err_invalid(err, size,
					   "%s: '%s': give an absolute path to a PEM file", key, v);
		snprintf(dst, PATH_MAX, "%s", v);
	} else if (tls && streq(key, "peer")) {
		if (!printable(v, SINK_HOST_MAX - 1))
			return err_invalid(err, size,
					   "peer: '%s': give the name the collector's certificate "
					   "carries",
					   v);
		snprintf(c->tls_name, sizeof(c->tls_name), "%s", v);
	} else if (net && streq(key, "confirm")) {
		if (parse_duration_ns(v, &c->confirm_ns) < 0 || c->confirm_ns > 60000000000ULL)
			return err_invalid(err, size,
					   "confirm: '%s': give a duration up to 60s (0, 500ms, "
					   "2s)",
					   v);
	} else {
		return err_invalid(err, size, "unknown key '%s'; valid keys for %s: %s", key,
				   kind_name(c->kind), kind_keys(c->kind));
	}
	return 0;
}

static int parse_query(struct sink_config *c, const char *q, char *err, size_t size)
{
	char seen[16][32];
	size_t nseen = 0;

	while (*q) {
		const char *amp = strchrnul(q, '&');
		const char *eq = memchr(q, '=', amp - q);
		char key[32], val[PATH_MAX];
		int r;

		if (!eq || eq == q || (size_t)(eq - q) >= sizeof(key))
			return err_invalid(err, size,
					   "'%.*s' is not KEY=VALUE; separate keys with '&'",
					   (int)(amp - q), q);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - q), q);
		/* A key given twice is a mistake, not an override. */
		for (size_t i = 0; i < nseen; i++)
			if (streq(seen[i], key))
				return err_invalid(err, size, "%s: given twice; keep one", key);
		if (nseen < ARRAY_SIZE(seen))
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", key);
		if (unescape(eq + 1, amp - eq - 1, val, sizeof(val)) < 0 || !val[0])
			return err_invalid(err, size,
					   "%s: give a value (%%XX escapes allowed, not %%00)",
					   key);
		r = parse_key(c, key, val, err, size);
		if (r < 0)
			return r;
		q = *amp ? amp + 1 : amp;
	}
	return 0;
}

static void sanitize(char *out, size_t size, const char *in)
{
	size_t o = 0;

	for (; *in && o + 1 < size; in++)
		out[o++] = isalnum((unsigned char)*in) || *in == '.' || *in == '-' ? *in : '_';
	out[o] = '\0';
}

/* HOST:PORT, [V6]:PORT or HOST (port 514). */
static int parse_hostport(struct sink_config *c, const char *s, size_t len, char *err, size_t size)
{
	const char *port = NULL, *host = s;
	size_t hlen;
	unsigned long long p = c->relp ? 2514
				       : 514; /* RELP has no registered port: rsyslog's usual */
	char buf[16];

	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return err_invalid(err, size,
					   "'%.*s': an IPv6 address needs its closing ']'",
					   (int)len, s);
		host = s + 1;
		hlen = close - host;
		if (close + 1 < s + len) {
			if (close[1] != ':')
				return err_invalid(err, size, "'%.*s': put ':PORT' after ']'",
						   (int)len, s);
			port = close + 2;
		}
	} else {
		const char *colon = memchr(s, ':', len);

		hlen = colon ? (size_t)(colon - s) : len;
		if (colon)
			port = colon + 1;
	}
	if (!hlen || hlen >= sizeof(c->host))
		return err_invalid(err, size,
				   "give the collector as HOST:PORT (127.0.0.1:514, "
				   "[::1]:514, logs.example.com:6514)");
	memcpy(c->host, host, hlen);
	c->host[hlen] = '\0';
	for (size_t i = 0; i < hlen; i++)
		if (!isalnum((unsigned char)host[i]) && !strchr(".-:_", host[i]))
			return err_invalid(err, size, "host '%s': not an address or a host name",
					   c->host);
	if (port) {
		size_t plen = s + len - port;

		if (!plen || plen >= sizeof(buf))
			return err_invalid(err, size, "port: give a number from 1 to 65535");
		memcpy(buf, port, plen);
		buf[plen] = '\0';
		if (parse_u64(buf, &p) < 0 || p < 1 || p > 65535)
			return err_invalid(err, size, "port '%s': give a number from 1 to 65535",
					   buf);
	}
	snprintf(c->port, sizeof(c->port), "%llu", p);
	return 0;
}

int sink_config_parse(const char *spec, struct sink_config *c, char *err, size_t size)
{
	const char *q = strchr(spec, '?');
	size_t head = q ? (size_t)(q - spec) : strlen(spec);
	int r;

	memset(c, 0, sizeof(*c));
	c->queue_bytes = SINK_QUEUE_DEFAULT;
	c->keep = SINK_KEEP_DEFAULT;
	c->spool_bytes = SINK_SPOOL_DEFAULT;
	c->confirm_ns = SINK_CONFIRM_DEFAULT;
	c->facility = 16; /* local0 */
	snprintf(c->app, sizeof(c->app), "bpfbox");
	if (strlen(spec) >= sizeof(c->spec))
		return err_invalid(err, size, "the spec is too long");
	snprintf(c->spec, sizeof(c->spec), "%s", spec);
	if (head == 6 && !strncmp(spec, "stdout", 6)) {
		c->kind = SINK_STDOUT;
	} else if (!strncmp(spec, "file:", 5)) {
		c->kind = SINK_FILE;
		if (unescape(spec + 5, head - 5, c->path, sizeof(c->path)) < 0 || c->path[0] != '/')
			return err_invalid(err, size,
					   "file: give an absolute path (file:/var/log/bpfbox/"
					   "audit.jsonl)");
	} else if (!strncmp(spec, "syslog+tcp://", 13) || !strncmp(spec, "syslog+udp://", 13) ||
		   !strncmp(spec, "syslog+tls://", 13)) {
		c->kind = !strncmp(spec + 7, "tcp", 3)	 ? SINK_SYSLOG_TCP
			  : !strncmp(spec + 7, "udp", 3) ? SINK_SYSLOG_UDP
							 : SINK_SYSLOG_TLS;
		r = parse_hostport(c, spec + 13, head - 13, err, size);
		if (r < 0)
			return r;
	} else if (!strncmp(spec, "relp://", 7) || !strncmp(spec, "relp+tls://", 11)) {
		size_t skip = spec[4] == ':' ? 7 : 11;

		c->relp = true;
		c->kind = skip == 7 ? SINK_SYSLOG_TCP : SINK_SYSLOG_TLS;
		r = parse_hostport(c, spec + skip, head - skip, err, size);
		if (r < 0)
			return r;
	} else {
		return err_invalid(
			err, size,
			"unknown sink '%.*s'; use stdout, file:PATH, "
			"syslog+tcp://HOST:PORT, syslog+tls://HOST:PORT, "
			"syslog+udp://HOST:PORT, relp://HOST:PORT or relp+tls://HOST:PORT",
			(int)(head > 40 ? 40 : head), spec);
	}
	snprintf(c->name, sizeof(c->name), "%.*s",
		 (int)(head < SINK_NAME_MAX - 1 ? head : SINK_NAME_MAX - 1), spec);
	if (q && (r = parse_query(c, q + 1, err, size)) < 0)
		return r;
	if (c->kind == SINK_SYSLOG_TLS && !c->tls_cert[0] != !c->tls_key[0])
		return err_invalid(err, size,
				   "cert and key go together: give both for a client "
				   "certificate, or neither");
	if (c->kind == SINK_SYSLOG_TCP || c->kind == SINK_SYSLOG_UDP ||
	    c->kind == SINK_SYSLOG_TLS) {
		if (!c->spool_dir[0]) {
			char host[SINK_HOST_MAX];

			sanitize(host, sizeof(host), c->host);
			snprintf(c->spool_dir, sizeof(c->spool_dir), "%s/%s%s-%s-%s",
				 SINK_SPOOL_ROOT, c->relp ? "relp-" : "",
				 c->kind == SINK_SYSLOG_TCP   ? "tcp"
				 : c->kind == SINK_SYSLOG_TLS ? "tls"
							      : "udp",
				 host, c->port);
		}
	}
	return 0;
}

static int read_all(const char *file, char **out, size_t *len)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	size_t cap = 4096, n = 0;
	char *buf;

	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	for (;;) {
		ssize_t r;

		if (!buf) {
			close(fd);
			return -ENOMEM;
		}
		if (n + 1 >= cap) {
			char *nb;

			if (cap >= CONFIG_FILE_MAX) {
				free(buf);
				close(fd);
				return -EFBIG;
			}
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb)
				free(buf);
			buf = nb;
			continue;
		}
		r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(buf);
			close(fd);
			return r;
		}
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* The spec strings of a "sinks" array, parsed and appended to *v. */
static int add_specs(const char *file, struct json_object *sinks, struct sink_config **v, size_t *n,
		     char *err, size_t size)
{
	size_t count = json_object_array_length(sinks);
	char why[512];
	int r;

	for (size_t i = 0; i < count; i++) {
		struct json_object *s = json_object_array_get_idx(sinks, i);
		struct sink_config *nv;

		if (!json_object_is_type(s, json_type_string)) {
			snprintf(err, size,
				 "%s: sinks[%zu]: give a spec string (file:PATH?..., "
				 "syslog+tcp://HOST:PORT)",
				 file, i);
			return -EINVAL;
		}
		nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv) {
			snprintf(err, size, "%s: out of memory", file);
			return -ENOMEM;
		}
		*v = nv;
		r = sink_config_parse(json_object_get_string(s), &nv[*n], why, sizeof(why));
		if (r < 0) {
			snprintf(err, size, "%s: sinks[%zu] '%s': %s", file, i,
				 json_object_get_string(s), why);
			return r;
		}
		(*n)++;
	}
	return 0;
}

int sink_config_load(const char *file, struct sink_config **v, size_t *n, char *err, size_t size)
{
	struct json_tokener *tok = NULL;
	struct json_object *root = NULL, *sinks;
	char *text = NULL;
	size_t len = 0;
	int r;

	r = read_all(file, &text, &len);
	if (r < 0) {
		snprintf(err, size, "%s: cannot read it: %s", file, strerror(-r));
		return r;
	}
	tok = json_tokener_new();
	if (!tok) {
		r = -ENOMEM;
		snprintf(err, size, "%s: out of memory", file);
		goto out;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, text, len);
	if (!root || !json_object_is_type(root, json_type_object)) {
		r = -EINVAL;
		snprintf(err, size, "%s: not a JSON object (%s)", file,
			 root ? "another JSON value"
			      : json_tokener_error_desc(json_tokener_get_error(tok)));
		goto out;
	}
	json_object_object_foreach (root, key, val) {
		(void)val;
		/* "ceilings", "policies": the daemon's (policy/ceiling.c, daemon/config.c). */
		if (!streq(key, "sinks") && !streq(key, "ceilings") && !streq(key, "policies")) {
			r = -EINVAL;
			snprintf(err, size,
				 "%s: unknown key '%s'; valid keys: sinks, ceilings, policies",
				 file, key);
			goto out;
		}
	}
	if (!json_object_object_get_ex(root, "sinks", &sinks)) {
		r = 0;
		goto out;
	}
	if (!json_object_is_type(sinks, json_type_array)) {
		r = -EINVAL;
		snprintf(err, size, "%s: sinks: give an array of sink specs", file);
		goto out;
	}
	r = add_specs(file, sinks, v, n, err, size);
out:
	json_object_put(root);
	if (tok)
		json_tokener_free(tok);
	free(text);
	return r;
}
