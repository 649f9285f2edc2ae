// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <gnutls/crypto.h>

#include "encode.h"
#include "redact.h"
#include "bpfbox/events.h"
#include "../lib/util.h"

void audit_clock_init(struct audit_clock *c)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	c->mono_to_real_ns = (real.tv_sec - mono.tv_sec) * 1000000000LL +
			     (real.tv_nsec - mono.tv_nsec);
}

const char *audit_layer_name(unsigned int layer)
{
	static const char *const names[] = {
		[BPFBOX_LAYER_LANDLOCK] = "landlock", [BPFBOX_LAYER_SECCOMP] = "seccomp",
		[BPFBOX_LAYER_CGROUP_BPF] = "cgroup-bpf", [BPFBOX_LAYER_BPF_LSM] = "bpf-lsm",
		[BPFBOX_LAYER_KERNEL] = "kernel", [BPFBOX_LAYER_EGRESS] = "egress-proxy",
		[BPFBOX_LAYER_MOUNT] = "mount", [BPFBOX_LAYER_EXEC_TP] = "exec-tracepoint",
	};

	return layer < sizeof(names) / sizeof(names[0]) ? names[layer] : NULL;
}

static struct audit_host host;
static bool host_read;

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 32 hex digits (a machine id, an app id) -> 16 bytes. */
static int id128_parse(const char *s, uint8_t out[16])
{
	for (int i = 0; i < 16; i++) {
		int hi = hex_value(s[2 * i]), lo = hi < 0 ? -1 : hex_value(s[2 * i + 1]);

		if (lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	int r = -ENOENT;

	if (!f)
		return -errno;
	if (fgets(buf, (int)size, f)) {
		buf[strcspn(buf, "\n")] = 0;
		r = 0;
	}
	fclose(f);
	return r;
}

/* sd_id128_get_machine_app_specific(): HMAC-SHA256(machine id, app id), as a v4 UUID. */
static void read_host_id(char out[33])
{
	uint8_t key[16], app[16], mac[32];
	char line[64];

	out[0] = 0;
	if ((read_line("/etc/machine-id", line, sizeof(line)) < 0 &&
	     read_line("/var/lib/dbus/machine-id", line, sizeof(line)) < 0) ||
	    strlen(line) != 32 || id128_parse(line, key) < 0 ||
	    id128_parse(AUDIT_HOST_APP_ID, app) < 0 ||
	    gnutls_hmac_fast(GNUTLS_MAC_SHA256, key, sizeof(key), app, sizeof(app), mac) < 0)
		return;
	mac[6] = (mac[6] & 0x0f) | 0x40;
	mac[8] = (mac[8] & 0x3f) | 0x80;
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

void audit_host_refresh(void)
{
	struct audit_host h = { 0 };

	if (gethostname(h.name, sizeof(h.name) - 1) < 0)
		h.name[0] = 0;
	read_host_id(h.id);
	if (read_line("/proc/sys/kernel/random/boot_id", h.boot_id, sizeof(h.boot_id)) < 0)
		h.boot_id[0] = 0;
	host = h;
	host_read = true;
}

const struct audit_host *audit_host(void)
{
	if (!host_read)
		audit_host_refresh();
	return &host;
}

static void put_or_null(struct jsonw *w, const char *key, const char *v)
{
	if (v[0])
		jsonw_str(w, key, v);
	else
		jsonw_null(w, key);
}

void audit_put_host(struct jsonw *w)
{
	const struct audit_host *h = audit_host();

	put_or_null(w, "host", h->name);
	put_or_null(w, "host_id", h->id);
	put_or_null(w, "boot_id", h->boot_id);
}

int audit_sha256(const void *data, size_t len, char *out, size_t size)
{
	uint8_t d[32];
	size_t n;

	if (size < sizeof("sha256:") + 64 ||
	    gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, d) < 0)
		return -EINVAL;
	n = (size_t)snprintf(out, size, "sha256:");
	for (int i = 0; i < 32; i++)
		n += (size_t)snprintf(out + n, size - n, "%02x", d[i]);
	return 0;
}

#ifndef BPFBOX_VERSION
#define BPFBOX_VERSION "0.0.0"
#endif

void audit_put_policy(struct jsonw *w, const char *labels_json, const char *policy_json)
{
	char hash[80];

	jsonw_raw(w, "labels", labels_json ? labels_json : "{}");
	jsonw_str(w, "bpfbox_version", BPFBOX_VERSION);
	if (audit_sha256(policy_json, strlen(policy_json), hash, sizeof(hash)) == 0)
		jsonw_str(w, "policy_hash", hash);
	else
		jsonw_null(w, "policy_hash");
	jsonw_raw(w, "policy", policy_json);
}

/* RFC 3339 UTC with nanoseconds: sortable and unambiguous for a SIEM. */
static void put_time(struct jsonw *w, int64_t real_ns)
{
	time_t sec = real_ns / 1000000000LL;
	struct tm tm;
	char buf[48];
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%09lldZ", (long long)(real_ns % 1000000000LL));
	jsonw_str(w, "time", buf);
}

void audit_begin(struct jsonw *w, const struct audit_clock *c, const char *type,
		 const char *session, uint64_t seq, uint64_t ts_ns)
{
	jsonw_begin(w);
	jsonw_u64(w, "schema_version", AUDIT_SCHEMA_VERSION);
	jsonw_str(w, "type", type);
	put_time(w, (int64_t)ts_ns + c->mono_to_real_ns);
	audit_put_host(w);
	jsonw_str(w, "session", session);
	jsonw_u64(w, "seq", seq);
}

static void put_header(struct jsonw *w, const struct bpfbox_event_hdr *h)
{
	const char *layer = audit_layer_name(h->layer);

	jsonw_u64(w, "pid", h->pid);
	jsonw_u64(w, "tid", h->tid);
	jsonw_u64(w, "ppid", h->ppid);
	jsonw_u64(w, "uid", h->uid);
	jsonw_strn(w, "comm", h->comm, strnlen(h->comm, sizeof(h->comm)));
	jsonw_str(w, "decision", h->decision == BPFBOX_DENY ? "deny" : "allow");
	jsonw_str(w, "layer", layer);
	if (h->err > -4096 && h->err < 0)
		jsonw_str(w, "errno", strerrorname_np(-h->err) ? strerrorname_np(-h->err) : "?");
	else if (h->err)
		jsonw_str(w, "errno", "?");
	else
		jsonw_null(w, "errno");
}

static void put_exec(struct jsonw *w, const struct bpfbox_exec_event *e)
{
	uint32_t raw = e->argv_len < sizeof(e->argv) ? e->argv_len : sizeof(e->argv);
	char argv[REDACT_MAX(sizeof(e->argv))];
	size_t len = redact(e->argv, raw, argv, sizeof(argv),
			    (e->argv_truncated & BPFBOX_EXEC_TRUNCATED) ? REDACT_TAIL_CUT : 0);

	jsonw_strn(w, "filename", e->filename, strnlen(e->filename, sizeof(e->filename)));
	jsonw_array_begin(w, "argv");
	for (size_t i = 0; i < len;) {
		size_t n = strnlen(argv + i, len - i);

		jsonw_array_strn(w, argv + i, n);
		i += n + 1;
	}
	jsonw_array_end(w);
	jsonw_bool(w, "argv_truncated", e->argv_truncated & BPFBOX_EXEC_TRUNCATED);
	if (e->argv_truncated & BPFBOX_EXEC_VIA_FD)
		jsonw_strn(w, "via_fd", e->via, strnlen(e->via, sizeof(e->via)));
	/* A command rule stopped it (bpf/cmd.bpf.c): which, and what it said. */
	if (e->argv_truncated & BPFBOX_EXEC_RULE) {
		jsonw_strn(w, "rule", e->rule, strnlen(e->rule, sizeof(e->rule)));
		jsonw_str(w, "action", e->argv_truncated & BPFBOX_EXEC_ASK ? "ask" : "deny");
	}
}

static void put_connect(struct jsonw *w, const struct bpfbox_connect_event *e)
{
	char addr[INET6_ADDRSTRLEN] = "";
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	bool v4 = e->family == AF_INET || !memcmp(e->addr, v4mapped, sizeof(v4mapped));

	if (e->family == AF_UNIX) {
		jsonw_str(w, "family", "unix");
		jsonw_strn(w, "path", e->unix_path, strnlen(e->unix_path, sizeof(e->unix_path)));
		return;
	}
	if (e->family == AF_INET)
		inet_ntop(AF_INET, e->addr, addr, sizeof(addr));
	else if (v4)
		inet_ntop(AF_INET, e->addr + 12, addr, sizeof(addr));
	else
		inet_ntop(AF_INET6, e->addr, addr, sizeof(addr));
	jsonw_str(w, "family", e->family == AF_INET6 ? "inet6" : "inet");
	jsonw_str(w, "address", addr);
	jsonw_u64(w, "port", e->port);
}

static void put_net(struct jsonw *w, const struct bpfbox_net_event *e)
{
	static const char *const kinds[] = { "tcp", "dns", "proxy" };
	static const char *const hows[] = { "address", "sni", "host", "connect", "query" };
	static const uint8_t zero[16];
	char addr[INET6_ADDRSTRLEN] = "";

	if (memcmp(e->addr, zero, 16)) {
		if (e->addr[10] == 0xff && e->addr[11] == 0xff && !memcmp(e->addr, zero, 10))
			inet_ntop(AF_INET, e->addr + 12, addr, sizeof(addr));
		else
			inet_ntop(AF_INET6, e->addr, addr, sizeof(addr));
	}
	jsonw_str(w, "protocol", e->kind < 3 ? kinds[e->kind] : "?");
	jsonw_str(w, "name_from", e->how < 5 ? hows[e->how] : "?");
	jsonw_strn(w, "name", e->name, strnlen(e->name, sizeof(e->name)));
	if (addr[0])
		jsonw_str(w, "address", addr);
	else
		jsonw_null(w, "address");
	jsonw_u64(w, "port", e->port);
	if (e->rule[0])
		jsonw_strn(w, "rule", e->rule, strnlen(e->rule, sizeof(e->rule)));
	else
		jsonw_null(w, "rule");
	if (e->reason[0])
		jsonw_strn(w, "reason", e->reason, strnlen(e->reason, sizeof(e->reason)));
	jsonw_u64(w, "bytes_out", e->bytes_out);
	jsonw_u64(w, "bytes_in", e->bytes_in);
}

int audit_encode_record(struct jsonw *w, const struct audit_clock *c, const void *data,
			size_t size, const char *session)
{
	static const struct {
		const char *name;
		size_t size;
	} types[] = {
		[BPFBOX_EV_EXEC] = { "exec", sizeof(struct bpfbox_exec_event) },
		[BPFBOX_EV_EXIT] = { "exit", sizeof(struct bpfbox_exit_event) },
		[BPFBOX_EV_FORK] = { "fork", sizeof(struct bpfbox_fork_event) },
		[BPFBOX_EV_FILE] = { "file", sizeof(struct bpfbox_file_event) },
		[BPFBOX_EV_CONNECT] = { "connect", sizeof(struct bpfbox_connect_event) },
		[BPFBOX_EV_COMM] = { "rename", sizeof(struct bpfbox_comm_event) },
		[BPFBOX_EV_NET] = { "net", sizeof(struct bpfbox_net_event) },
	};
	const struct bpfbox_event_hdr *h = data;

	if (size < sizeof(*h) || h->type == 0 || h->type >= sizeof(types) / sizeof(types[0]) ||
	    size < types[h->type].size)
		return -EINVAL;
	if (h->type == BPFBOX_EV_NET)
		audit_begin(w, c, h->decision == BPFBOX_DENY ? "net.deny" : "net.allow", session,
			    h->seq, h->ts_ns);
	else
		audit_begin(w, c, types[h->type].name, session, h->seq, h->ts_ns);
	put_header(w, h);
	switch (h->type) {
	case BPFBOX_EV_EXEC:
		put_exec(w, data);
		break;
	case BPFBOX_EV_EXIT: {
		const struct bpfbox_exit_event *e = data;

		if (e->signal)
			jsonw_null(w, "exit_code");
		else
			jsonw_i64(w, "exit_code", e->exit_code);
		jsonw_u64(w, "signal", e->signal);
		break;
	}
	case BPFBOX_EV_FORK:
		jsonw_u64(w, "child_pid", ((const struct bpfbox_fork_event *)data)->child_pid);
		break;
	case BPFBOX_EV_FILE: {
		const struct bpfbox_file_event *e = data;

		static const char *const ops[] = {
			[BPFBOX_FILE_UNLINK] = "unlink", [BPFBOX_FILE_RMDIR] = "rmdir",
			[BPFBOX_FILE_RENAME] = "rename", [BPFBOX_FILE_MKDIR] = "mkdir",
			[BPFBOX_FILE_LINK] = "link",	 [BPFBOX_FILE_SYMLINK] = "symlink",
			[BPFBOX_FILE_CHMOD] = "chmod",	 [BPFBOX_FILE_UTIMES] = "utimes",
		};

		char path[sizeof(e->path) + 1];

		/* A relative name got its directory in BPF (path.bpf.h); ".." folded here. */
		snprintf(path, sizeof(path), "%.*s", (int)strnlen(e->path, sizeof(e->path)), e->path);
		path_fold(path);
		jsonw_str(w, "path", path);
		jsonw_u64(w, "flags", e->flags);
		jsonw_u64(w, "count", e->count);
		/* Opens carry no op: the stream of older versions stays as it was. */
		if (e->op && e->op < sizeof(ops) / sizeof(ops[0]) && ops[e->op])
			jsonw_str(w, "op", ops[e->op]);
		break;
	}
	case BPFBOX_EV_CONNECT:
		put_connect(w, data);
		break;
	case BPFBOX_EV_COMM: {
		const struct bpfbox_comm_event *e = data;

		jsonw_strn(w, "new_comm", e->new_comm, strnlen(e->new_comm, sizeof(e->new_comm)));
		break;
	}
	case BPFBOX_EV_NET:
		put_net(w, data);
		break;
	}
	jsonw_end(w);
	jsonw_newline(w);
	return 0;
}

void audit_flood_init(struct audit_flood *f, uint64_t rate, uint64_t burst)
{
	memset(f, 0, sizeof(*f));
	ratelimit_init(&f->rl, rate, burst);
}

bool audit_flood_pass(struct audit_flood *f, const void *data, size_t size, uint64_t now)
{
	const struct bpfbox_event_hdr *h = data;

	if (ratelimit_take(&f->rl, now))
		return true;
	if (size >= sizeof(*h) && h->type < AUDIT_TYPES)
		f->suppressed[h->type]++;
	else
		f->suppressed[0]++;
	f->total++;
	f->all++;
	return false;
}

static const char *const flood_type_names[AUDIT_TYPES] = {
	[0] = "other",
	[BPFBOX_EV_EXEC] = "exec",
	[BPFBOX_EV_EXIT] = "exit",
	[BPFBOX_EV_FORK] = "fork",
	[BPFBOX_EV_FILE] = "file",
	[BPFBOX_EV_CONNECT] = "connect",
	[BPFBOX_EV_COMM] = "rename",
	[BPFBOX_EV_NET] = "net",
};

int audit_flood_line(struct audit_flood *f, struct jsonw *w, const struct audit_clock *c,
		     const char *session, uint64_t now, bool force)
{
	if (!f->total || (!force && now < f->said_ns + 1000000000ULL))
		return 0;
	jsonw_begin(w);
	jsonw_u64(w, "schema_version", AUDIT_SCHEMA_VERSION);
	jsonw_str(w, "type", "loss");
	put_time(w, (int64_t)now + c->mono_to_real_ns);
	jsonw_str(w, "session", session);
	jsonw_u64(w, "count", f->total);
	jsonw_str(w, "where", "rate limit");
	jsonw_object_begin(w, "types");
	for (size_t i = 0; i < AUDIT_TYPES; i++)
		if (f->suppressed[i])
			jsonw_u64(w, flood_type_names[i], f->suppressed[i]);
	jsonw_end(w);
	jsonw_end(w);
	jsonw_newline(w);
	memset(f->suppressed, 0, sizeof(f->suppressed));
	f->total = 0;
	f->said_ns = now;
	return 1;
}
