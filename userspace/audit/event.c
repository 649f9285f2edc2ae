// SPDX-License-Identifier: GPL-2.0
/*
 * The event model: kinds and their names, the fields every event starts
 * with (time, host), and the lifecycle events of a session, built here
 * for the daemon and the embedded mode alike.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gnutls/crypto.h>

#include "event.h"
#include "redact.h"
#include "bpfbox/events.h"
#include "../monitor/monitor.h"
#include "../lib/util.h"

#ifndef BPFBOX_VERSION
#define BPFBOX_VERSION "0.0.0"
#endif

/* --- kinds ---------------------------------------------------------------- */

static const char *const kind_names[EV_KINDS] = {
#define EV_KIND_NAME(id, name) [id] = name,
	AUDIT_KINDS(EV_KIND_NAME)
#undef EV_KIND_NAME
};

const char *ev_kind_name(int kind)
{
	return kind >= 0 && kind < EV_KINDS ? kind_names[kind] : NULL;
}

int ev_kind_parse(const char *name)
{
	for (int i = 0; name && i < EV_KINDS; i++)
		if (streq(kind_names[i], name))
			return i;
	return -EINVAL;
}

const char *ev_kind_list(void)
{
	static char list[EV_KINDS * 20];

	if (!list[0])
		for (int i = 0; i < EV_KINDS; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", kind_names[i]);
	return list;
}

/* The ring's record types: their kind, size and name in a loss line. */
static const struct {
	int kind; /* EV_NET_ALLOW: allow or deny by the decision */
	size_t size;
	const char *name;
} records[] = {
	[0] = { -EINVAL, 0, "other" },
	[BPFBOX_EV_EXEC] = { EV_EXEC, sizeof(struct bpfbox_exec_event), "exec" },
	[BPFBOX_EV_EXIT] = { EV_EXIT, sizeof(struct bpfbox_exit_event), "exit" },
	[BPFBOX_EV_FORK] = { EV_FORK, sizeof(struct bpfbox_fork_event), "fork" },
	[BPFBOX_EV_FILE] = { EV_FILE, sizeof(struct bpfbox_file_event), "file" },
	[BPFBOX_EV_CONNECT] = { EV_CONNECT, sizeof(struct bpfbox_connect_event), "connect" },
	[BPFBOX_EV_COMM] = { EV_RENAME, sizeof(struct bpfbox_comm_event), "rename" },
	[BPFBOX_EV_NET] = { EV_NET_ALLOW, sizeof(struct bpfbox_net_event), "net" },
};

bool ev_kind_is_record(int kind)
{
	for (size_t i = 1; i < ARRAY_SIZE(records); i++)
		if (records[i].kind == kind || (kind == EV_NET_DENY && records[i].kind == EV_NET_ALLOW))
			return true;
	return false;
}

int ev_kind_of_record(const void *data, size_t size)
{
	const struct bpfbox_event_hdr *h = data;

	if (size < sizeof(*h) || h->type == 0 || h->type >= ARRAY_SIZE(records) ||
	    size < records[h->type].size)
		return -EINVAL;
	if (h->type == BPFBOX_EV_NET && h->decision == BPFBOX_DENY)
		return EV_NET_DENY;
	return records[h->type].kind;
}

const char *ev_record_type_name(unsigned int type)
{
	return type < ARRAY_SIZE(records) ? records[type].name : records[0].name;
}

/* --- time and host ------------------------------------------------------------ */

void audit_clock_init(struct audit_clock *c)
{
	c->mono_to_real_ns = real_now_ns() - (int64_t)now_ns();
}

int64_t audit_real_ns(const struct audit_clock *c, uint64_t ts_ns)
{
	return c ? (int64_t)ts_ns + c->mono_to_real_ns : real_now_ns();
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
	if (v && v[0])
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

void audit_begin(struct jsonw *w, const struct audit_clock *c, enum ev_kind kind,
		 const char *session, uint64_t seq, uint64_t ts_ns)
{
	char time[RFC3339_MAX];

	/* RFC 3339 UTC with nanoseconds: sortable and unambiguous for a SIEM. */
	rfc3339(time, sizeof(time), audit_real_ns(c, ts_ns), 9);
	jsonw_begin(w);
	jsonw_u64(w, "schema_version", AUDIT_SCHEMA_VERSION);
	jsonw_str(w, "type", ev_kind_name(kind));
	jsonw_str(w, "time", time);
	audit_put_host(w);
	put_or_null(w, "session", session);
	if (seq != AUDIT_NO_SEQ)
		jsonw_u64(w, "seq", seq);
}

/* --- session.start ------------------------------------------------------------ */

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

/*
 * The end of session.start that names what ran it: "labels" (the runtime's
 * labels), "bpfbox_version", "policy_hash" (sha256 of exactly the bytes of
 * "policy") and "policy".
 */
static void put_policy(struct jsonw *w, const char *labels_json, const char *policy_json)
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

static void put_arg(void *ctx, const char *arg, size_t len)
{
	jsonw_array_strn(ctx, arg, len);
}

void audit_session_start(struct jsonw *w, const struct audit_clock *c,
			 const struct audit_start_info *in)
{
	audit_begin(w, c, EV_SESSION_START, in->session, 0, in->ts_ns);
	jsonw_u64(w, "pid", in->pid);
	if (in->has_uid)
		jsonw_u64(w, "uid", in->uid);
	if (in->mode)
		jsonw_str(w, "mode", in->mode);
	if (in->cgroup)
		jsonw_str(w, "cgroup", in->cgroup);
	if (in->level_requested)
		jsonw_str(w, "level_requested", in->level_requested);
	if (in->level_enabled)
		jsonw_str(w, "level_enabled", in->level_enabled);
	jsonw_object_begin(w, "layers");
	jsonw_u64(w, "landlock_abi", in->layers.landlock_abi);
	jsonw_bool(w, "seccomp", in->layers.seccomp);
	jsonw_bool(w, "bpf_audit", in->layers.bpf_audit);
	jsonw_bool(w, "bpf_network", in->layers.bpf_network);
	jsonw_bool(w, "bpf_unix_connect", in->layers.bpf_unix_connect);
	jsonw_bool(w, "bpf_lsm", in->layers.bpf_lsm);
	jsonw_end(w);
	if (in->limits)
		limits_json(in->limits, w, "limits");
	jsonw_array_begin(w, "not_enforced");
	for (size_t i = 0; i < in->n_not_enforced && i < ARRAY_SIZE(in->not_enforced); i++)
		if (in->not_enforced[i] && in->not_enforced[i][0])
			jsonw_array_strn(w, in->not_enforced[i], strlen(in->not_enforced[i]));
	jsonw_array_end(w);
	jsonw_array_begin(w, "command");
	if (in->redact_command) {
		if (redact_argv(in->command, put_arg, w, 0) < 0)
			jsonw_array_strn(w, REDACT_MARKER, REDACT_MARKER_LEN);
	} else {
		for (size_t i = 0; in->command && in->command[i]; i++)
			jsonw_array_strn(w, in->command[i], strlen(in->command[i]));
	}
	jsonw_array_end(w);
	if (in->command_truncated)
		jsonw_bool(w, "command_truncated", true);
	if (in->policy_json)
		put_policy(w, in->labels_json, in->policy_json);
	jsonw_end(w);
	jsonw_newline(w);
}

/* --- session.end -------------------------------------------------------------- */

/* Ends the object in w, hands it to emit as an event of kind, and resets w. */
static void hand_over(struct jsonw *w, enum ev_kind kind, int64_t time_ns, audit_emit_fn emit,
		      void *ctx)
{
	struct audit_event ev = { .kind = kind, .time_ns = time_ns };

	jsonw_end(w);
	jsonw_newline(w);
	ev.line = w->buf;
	ev.len = w->len;
	if (!w->oom)
		emit(ctx, &ev);
	jsonw_reset(w);
}

void audit_session_end(struct jsonw *w, const struct audit_clock *c,
		       const struct audit_end_info *e, audit_emit_fn emit, void *ctx)
{
	uint64_t seq = e->seq, records = seq > e->lost ? seq - 1 - e->lost : 0;
	int64_t time_ns = audit_real_ns(c, e->ts_ns);

	records = records > e->suppressed ? records - e->suppressed : 0;
	jsonw_reset(w);
	if (e->lost) {
		audit_begin(w, c, EV_LOSS, e->session, seq++, e->ts_ns);
		jsonw_u64(w, "count", e->lost);
		jsonw_str(w, "where", "ring buffer full");
		hand_over(w, EV_LOSS, time_ns, emit, ctx);
	}
	audit_begin(w, c, EV_SESSION_END, e->session, seq, e->ts_ns);
	if (e->has_exit)
		jsonw_i64(w, "exit_code", e->exit_code);
	else
		jsonw_null(w, "exit_code");
	jsonw_bool(w, "timed_out", e->timed_out);
	jsonw_u64(w, "records", records);
	jsonw_u64(w, "lost", e->lost);
	jsonw_u64(w, "suppressed", e->suppressed);
	jsonw_u64(w, "output_bytes", e->output_bytes);
	jsonw_u64(w, "output_dropped", e->output_dropped);
	if (e->reason)
		jsonw_str(w, "reason", e->reason);
	hand_over(w, EV_SESSION_END, time_ns, emit, ctx);
}

/* --- session.paused, .resumed, .killed ------------------------------------------ */

enum ev_kind audit_lifecycle_kind(const struct session_event *ev)
{
	switch (ev->type) {
	case SEV_PAUSED:
		return EV_SESSION_PAUSED;
	case SEV_RESUMED:
		return EV_SESSION_RESUMED;
	default:
		return EV_SESSION_KILLED;
	}
}

void audit_session_lifecycle(struct jsonw *w, const struct audit_clock *c, const char *id,
			     const struct session_event *ev)
{
	audit_begin(w, c, audit_lifecycle_kind(ev), id, AUDIT_NO_SEQ, now_ns());
	switch (ev->type) {
	case SEV_PAUSED:
		jsonw_str(w, "reason", ev->reason);
		if (ev->pid)
			jsonw_u64(w, "pid", ev->pid);
		else
			jsonw_null(w, "pid");
		if (ev->comm[0])
			jsonw_strn(w, "comm", ev->comm, strnlen(ev->comm, sizeof(ev->comm)));
		else
			jsonw_null(w, "comm");
		jsonw_u64(w, "oom_kills", ev->oom_kills);
		jsonw_u64(w, "memory_mb", ev->memory_mb);
		jsonw_u64(w, "disk_mb", ev->disk_mb);
		if (ev->disk_used_mb >= 0)
			jsonw_i64(w, "disk_used_mb", ev->disk_used_mb);
		else
			jsonw_null(w, "disk_used_mb");
		break;
	case SEV_RESUMED:
		jsonw_u64(w, "paused_ms", ev->paused_ms);
		jsonw_u64(w, "memory_mb", ev->memory_mb);
		jsonw_u64(w, "disk_mb", ev->disk_mb);
		break;
	case SEV_KILLED:
		jsonw_str(w, "reason", ev->reason);
		jsonw_bool(w, "paused", ev->was_paused);
		break;
	}
	jsonw_end(w);
	jsonw_newline(w);
}
