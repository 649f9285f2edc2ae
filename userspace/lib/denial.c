// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "denial.h"
#include "names.h"
#include "util.h"
#include "bpfbox/events.h"

static bool same_type(const struct denial *x, const char *layer, const char *op)
{
	return streq(x->layer, layer) && streq(x->op, op);
}

/*
 * The table is full and a denial of a new kind comes: the slot it may take,
 * or -1. One example of every type (layer and op) is worth more to whoever
 * reads the summary (a model deciding what to do next) than a seventeenth
 * path of a type already shown: a kind of a type shown more than once, the
 * least counted (the latest of equals), gives way to a new type; a new
 * kind of a type already shown goes to "other kinds".
 */
static int slot_for_new_type(const struct denials *d, const char *layer, const char *op)
{
	int victim = -1;

	for (size_t i = 0; i < d->n; i++)
		if (same_type(&d->v[i], layer, op))
			return -1;
	for (size_t i = 0; i < d->n; i++) {
		const struct denial *x = &d->v[i];
		size_t shown = 0;

		for (size_t k = 0; k < d->n; k++)
			shown += same_type(&d->v[k], x->layer, x->op);
		if (shown > 1 && (victim < 0 || x->count <= d->v[victim].count))
			victim = (int)i;
	}
	return victim;
}

void denials_add(struct denials *d, const char *layer, const char *op, const char *what, int err,
		 unsigned int count)
{
	denials_add_why(d, layer, op, what, err, count, NULL, NULL);
}

void denials_add_why(struct denials *d, const char *layer, const char *op, const char *what,
		     int err, unsigned int count, const char *rule, const char *reason)
{
	char clean[sizeof(d->v[0].what)], why[sizeof(d->v[0].reason)];
	struct denial *x;
	bool request;
	int slot;

	/*
	 * What the session chose (a path, a socket's name) goes to stderr and
	 * the status channel: one line, no control bytes (a newline would let
	 * it write a "bpfbox: " line of its own, an escape the terminal's).
	 */
	term_clean(clean, sizeof(clean), what);
	what = clean;
	/* Each refused request its own line: its hint names its own rule. */
	term_clean(why, sizeof(why), reason ? reason : "");
	request = startswith(why, "no HTTP rule for ");
	for (size_t i = 0; i < d->n; i++) {
		x = &d->v[i];
		if (same_type(x, layer, op) && streq(x->what, what) &&
		    (!request || streq(x->reason, why))) {
			x->count += count;
			return;
		}
	}
	if (d->n == DENIALS_MAX) {
		slot = slot_for_new_type(d, layer, op);
		if (slot < 0) {
			d->other += count;
			return;
		}
		/* The kind it replaces is still counted, among the other kinds. */
		d->other += d->v[slot].count;
		memmove(&d->v[slot], &d->v[slot + 1], (d->n - slot - 1) * sizeof(d->v[0]));
		d->n--;
	}
	x = &d->v[d->n++];
	snprintf(x->layer, sizeof(x->layer), "%s", layer);
	snprintf(x->op, sizeof(x->op), "%s", op);
	snprintf(x->what, sizeof(x->what), "%s", what);
	term_clean(x->rule, sizeof(x->rule), rule ? rule : "");
	term_clean(x->reason, sizeof(x->reason), reason ? reason : "");
	x->err = err;
	x->count = count;
}

uint64_t denials_total(const struct denials *d)
{
	uint64_t n = d->other;

	for (size_t i = 0; i < d->n; i++)
		n += d->v[i].count;
	return n;
}

static void file_denial(struct denials *d, const char *layer, const void *data, int err)
{
	const struct bpfbox_file_event *f = data;
	char path[sizeof(f->path) + 1];
	const char *op = bpfbox_file_op_name(f->op) ? bpfbox_file_op_name(f->op) : "file";

	snprintf(path, sizeof(path), "%.*s", (int)strnlen(f->path, sizeof(f->path)), f->path);
	path_fold(path);
	if (denial_file_is_fallback(path)) {
		d->fallbacks++;
		return;
	}
	/* An open for writing is a write. */
	if (f->op == BPFBOX_FILE_OPEN &&
	    ((f->flags & O_ACCMODE) != O_RDONLY || (f->flags & (O_CREAT | O_TRUNC))))
		op = "write";
	denials_add(d, layer, op, path, err, 1);
}

/*
 * The name services glibc asks before its own files and DNS, each through
 * a unix socket under /run (or /var/lib/sss): refused, the lookup goes on
 * (getent, getaddrinfo, getpwnam all answer). A name ending in '/' is a
 * directory of such sockets.
 */
static const char *const fallback_sockets[] = {
	"/run/nscd/socket",
	"/run/systemd/resolve/io.systemd.Resolve",
	"/run/systemd/userdb/",
	"/var/lib/sss/pipes/",
};

bool denial_is_fallback(const char *path)
{
	/* /var/run is /run on every distribution that has both. */
	if (startswith(path, "/var/run/"))
		path += strlen("/var");
	for (size_t i = 0; i < ARRAY_SIZE(fallback_sockets); i++) {
		const char *f = fallback_sockets[i];
		size_t len = strlen(f);

		if (f[len - 1] == '/'
			    ? strncmp(path, f, len) == 0 && path[len] && !strstr(path, "/..")
			    : streq(path, f))
			return true;
	}
	return false;
}

/*
 * Files of a process's own in /proc a runtime writes and goes on without:
 * the JVM sets its coredump_filter at start. Landlock cannot grant a write
 * there to every process of the session alone (each pid is its own
 * directory), so the refusal is counted among the fallbacks.
 */
static const char *const fallback_proc_files[] = {
	"coredump_filter",
};

bool denial_file_is_fallback(const char *path)
{
	const char *p;

	if (!startswith(path, "/proc/"))
		return false;
	p = path + strlen("/proc/");
	if (startswith(p, "self/"))
		p += strlen("self/");
	else if (startswith(p, "thread-self/"))
		p += strlen("thread-self/");
	else if (*p >= '0' && *p <= '9' && (p += strspn(p, "0123456789"), *p == '/'))
		p++;
	else
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(fallback_proc_files); i++)
		if (streq(p, fallback_proc_files[i]))
			return true;
	return false;
}

static void connect_denial(struct denials *d, const char *layer, const void *data, int err)
{
	const struct bpfbox_connect_event *c = data;
	char addr[INET6_ADDRSTRLEN] = "?", what[INET6_ADDRSTRLEN + 112];

	if (c->family == AF_UNIX) {
		char path[sizeof(c->unix_path) + 1];

		snprintf(path, sizeof(path), "%.*s",
			 (int)strnlen(c->unix_path, sizeof(c->unix_path)), c->unix_path);
		if (denial_is_fallback(path)) {
			d->fallbacks++;
			return;
		}
		snprintf(what, sizeof(what), "unix:%.*s",
			 (int)strnlen(c->unix_path, sizeof(c->unix_path)), c->unix_path);
	} else {
		inet_ntop(c->family == AF_INET6 ? AF_INET6 : AF_INET, c->addr, addr, sizeof(addr));
		snprintf(what, sizeof(what), c->family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr,
			 c->port);
	}
	denials_add(d, layer, "connect", what, err, 1);
}

/*
 * A refusal of the egress proxy or its resolver (userspace/net/): named by
 * the host (and port) the tool asked for. An allowed host whose upstream
 * failed or whose name does not resolve was not refused by anyone.
 */
static void net_denial(struct denials *d, const void *data, int err)
{
	const struct bpfbox_net_event *n = data;
	char name[sizeof(n->name) + 1], rule[sizeof(n->rule) + 1], reason[sizeof(n->reason) + 1];
	char addr[INET6_ADDRSTRLEN] = "", what[sizeof(name) + INET6_ADDRSTRLEN + 16];
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};

	snprintf(name, sizeof(name), "%.*s", (int)strnlen(n->name, sizeof(n->name)), n->name);
	snprintf(rule, sizeof(rule), "%.*s", (int)strnlen(n->rule, sizeof(n->rule)), n->rule);
	snprintf(reason, sizeof(reason), "%.*s", (int)strnlen(n->reason, sizeof(n->reason)),
		 n->reason);
	if (startswith(reason, "upstream") || strstr(reason, " does not resolve"))
		return;
	if (!memcmp(n->addr, mapped, sizeof(mapped)))
		inet_ntop(AF_INET, n->addr + 12, addr, sizeof(addr));
	else if (memcmp(n->addr, (uint8_t[16]){0}, 16))
		inet_ntop(AF_INET6, n->addr, addr, sizeof(addr));
	if (n->kind == BPFBOX_NET_DNS)
		snprintf(what, sizeof(what), "%s", name[0] ? name : "(a query)");
	else if (name[0])
		snprintf(what, sizeof(what), "%s:%u", name, n->port);
	else if (addr[0])
		snprintf(what, sizeof(what), strchr(addr, ':') ? "[%s]:%u" : "%s:%u", addr,
			 n->port);
	else
		snprintf(what, sizeof(what), "(a request)");
	denials_add_why(d, bpfbox_layer_name(BPFBOX_LAYER_EGRESS),
			n->kind == BPFBOX_NET_DNS ? "resolve" : "connect", what, err, 1, rule,
			reason);
}

bool denials_add_record(struct denials *d, const void *data, size_t size)
{
	const struct bpfbox_event_hdr *h = data;
	const char *layer;

	if (size < sizeof(*h) || h->decision != BPFBOX_DENY)
		return false;
	if (h->type == BPFBOX_EV_NET && size >= sizeof(struct bpfbox_net_event)) {
		net_denial(d, data, -h->err);
		return true;
	}
	/* The kernel's own refusals (DAC) are not ours to explain. */
	layer = h->layer == BPFBOX_LAYER_KERNEL || h->layer == BPFBOX_LAYER_EGRESS
			? NULL
			: bpfbox_layer_name(h->layer);
	if (!layer)
		return false;
	if (h->type == BPFBOX_EV_FILE && size >= sizeof(struct bpfbox_file_event)) {
		file_denial(d, layer, data, -h->err);
	} else if (h->type == BPFBOX_EV_CONNECT && size >= sizeof(struct bpfbox_connect_event)) {
		connect_denial(d, layer, data, -h->err);
	} else if (h->type == BPFBOX_EV_EXEC && size >= sizeof(struct bpfbox_exec_event)) {
		const struct bpfbox_exec_event *x = data;
		char path[sizeof(x->filename) + 1], rule[sizeof(x->rule) + 1] = "";

		snprintf(path, sizeof(path), "%.*s", (int)strnlen(x->filename, sizeof(x->filename)),
			 x->filename);
		if (x->argv_truncated & BPFBOX_EXEC_RULE)
			snprintf(rule, sizeof(rule), "%.*s", (int)strnlen(x->rule, sizeof(x->rule)),
				 x->rule);
		denials_add_why(d, layer, "exec", path, -h->err, 1, rule, NULL);
	} else {
		return false;
	}
	return true;
}

void denials_shared_add(struct denials_shared *s, const void *data, size_t size)
{
	pthread_mutex_lock(&s->lock);
	denials_add_record(&s->d, data, size);
	pthread_mutex_unlock(&s->lock);
}

void denials_shared_take(struct denials_shared *s, struct denials *d)
{
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->d.n; i++) {
		const struct denial *x = &s->d.v[i];

		denials_add_why(d, x->layer, x->op, x->what, x->err, x->count, x->rule, x->reason);
	}
	d->other += s->d.other;
	d->fallbacks += s->d.fallbacks;
	memset(&s->d, 0, sizeof(s->d));
	pthread_mutex_unlock(&s->lock);
}
