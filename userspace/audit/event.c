// SPDX-License-Identifier: GPL-2.0
/*
 * The event model: kinds and their names, the fields every event starts
 * with (time, host). The lifecycle events are built in lifecycle.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "event.h"
#include "bpfbox/events.h"
#include "../lib/json.h"
#include "../lib/sha256.h"
#include "../lib/util.h"

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
	[0] = {-EINVAL, 0, "other"},
	[BPFBOX_EV_EXEC] = {EV_EXEC, sizeof(struct bpfbox_exec_event), "exec"},
	[BPFBOX_EV_EXIT] = {EV_EXIT, sizeof(struct bpfbox_exit_event), "exit"},
	[BPFBOX_EV_FORK] = {EV_FORK, sizeof(struct bpfbox_fork_event), "fork"},
	[BPFBOX_EV_FILE] = {EV_FILE, sizeof(struct bpfbox_file_event), "file"},
	[BPFBOX_EV_CONNECT] = {EV_CONNECT, sizeof(struct bpfbox_connect_event), "connect"},
	[BPFBOX_EV_COMM] = {EV_RENAME, sizeof(struct bpfbox_comm_event), "rename"},
	[BPFBOX_EV_NET] = {EV_NET_ALLOW, sizeof(struct bpfbox_net_event), "net"},
};

int ev_kind_of_record(const void *data, size_t size)
{
	const struct bpfbox_event_hdr *h = data;

	if (size < sizeof(*h) || h->type == 0 || h->type >= ARRAY_SIZE(records) ||
	    size < records[h->type].size)
		return -EINVAL;
	if (h->type == BPFBOX_EV_NET &&
	    ((const struct bpfbox_net_event *)data)->kind == BPFBOX_NET_REQUEST)
		return EV_NET_REQUEST;
	if (h->type == BPFBOX_EV_NET && h->decision == BPFBOX_DENY)
		return EV_NET_DENY;
	return records[h->type].kind;
}

const char *ev_record_type_name(unsigned int type)
{
	return type < ARRAY_SIZE(records) ? records[type].name : records[0].name;
}

int audit_event_parse(struct audit_event *ev, const char *line, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
	const char *t = json_member_str(o, "type"), *d = json_member_str(o, "decision");
	int r = -EINVAL;

	*ev = (struct audit_event){.line = line, .len = len};
	if (t && ev_kind_parse(t) >= 0) {
		ev->kind = ev_kind_parse(t);
		ev->decision = !d		   ? AUDIT_DECISION_NONE
			       : streq(d, "deny")  ? AUDIT_DECISION_DENY
			       : streq(d, "allow") ? AUDIT_DECISION_ALLOW
						   : AUDIT_DECISION_NONE;
		t = json_member_str(o, "time");
		if (!t || rfc3339_parse(t, strlen(t), &ev->time_ns) < 0)
			ev->time_ns = 0;
		r = 0;
	}
	json_object_put(o);
	if (tok)
		json_tokener_free(tok);
	return r;
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
	    id128_parse(AUDIT_HOST_APP_ID, app) < 0)
		return;
	hmac_sha256(key, sizeof(key), app, sizeof(app), mac);
	mac[6] = (mac[6] & 0x0f) | 0x40;
	mac[8] = (mac[8] & 0x3f) | 0x80;
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

void audit_host_refresh(void)
{
	struct audit_host h = {0};

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
