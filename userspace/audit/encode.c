// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "encode.h"
#include "redact.h"
#include "bpfbox/events.h"
#include "../lib/names.h"
#include "../lib/util.h"

static void put_header(struct jsonw *w, const struct bpfbox_event_hdr *h)
{
	const char *layer = bpfbox_layer_name(h->layer);

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
	static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};
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
	static const char *const kinds[] = {"tcp", "dns", "proxy", "https"};
	static const char *const hows[] = {"address", "sni", "host", "connect", "query", "request"};
	static const uint8_t zero[16];
	char addr[INET6_ADDRSTRLEN] = "";

	if (memcmp(e->addr, zero, 16)) {
		if (e->addr[10] == 0xff && e->addr[11] == 0xff && !memcmp(e->addr, zero, 10))
			inet_ntop(AF_INET, e->addr + 12, addr, sizeof(addr));
		else
			inet_ntop(AF_INET6, e->addr, addr, sizeof(addr));
	}
	jsonw_str(w, "protocol", e->kind < 4 ? kinds[e->kind] : "?");
	jsonw_str(w, "name_from", e->how < 6 ? hows[e->how] : "?");
	if (e->kind == BPFBOX_NET_REQUEST) {
		jsonw_strn(w, "method", e->method, strnlen(e->method, sizeof(e->method)));
		jsonw_strn(w, "path", e->path, strnlen(e->path, sizeof(e->path)));
		if (e->status)
			jsonw_u64(w, "status", e->status);
		else
			jsonw_null(w, "status");
	}
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

int audit_encode_record(struct jsonw *w, const struct audit_clock *c, const void *data, size_t size,
			const char *session, struct audit_event *ev)
{
	const struct bpfbox_event_hdr *h = data;
	int kind = ev_kind_of_record(data, size);

	if (kind < 0)
		return kind;
	if (ev) {
		ev->kind = kind;
		ev->decision = h->decision == BPFBOX_DENY ? AUDIT_DECISION_DENY
							  : AUDIT_DECISION_ALLOW;
		ev->time_ns = audit_real_ns(c, h->ts_ns);
	}
	audit_begin(w, c, kind, session, h->seq, h->ts_ns);
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

		char path[sizeof(e->path) + 1];

		/* A relative name got its directory in BPF (path.bpf.h); ".." folded here. */
		snprintf(path, sizeof(path), "%.*s", (int)strnlen(e->path, sizeof(e->path)),
			 e->path);
		path_fold(path);
		jsonw_str(w, "path", path);
		jsonw_u64(w, "flags", e->flags);
		jsonw_u64(w, "count", e->count);
		/* Opens carry no op: the stream of older versions stays as it was. */
		if (e->op != BPFBOX_FILE_OPEN && bpfbox_file_op_name(e->op))
			jsonw_str(w, "op", bpfbox_file_op_name(e->op));
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
	return kind;
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

int audit_flood_line(struct audit_flood *f, struct jsonw *w, const struct audit_clock *c,
		     const char *session, uint64_t now, bool force)
{
	if (!f->total || (!force && now < f->said_ns + 1000000000ULL))
		return 0;
	audit_begin(w, c, EV_LOSS, session, AUDIT_NO_SEQ, now);
	jsonw_u64(w, "count", f->total);
	jsonw_str(w, "where", "rate limit");
	jsonw_object_begin(w, "types");
	for (size_t i = 0; i < AUDIT_TYPES; i++)
		if (f->suppressed[i])
			jsonw_u64(w, ev_record_type_name(i), f->suppressed[i]);
	jsonw_end(w);
	jsonw_end(w);
	jsonw_newline(w);
	memset(f->suppressed, 0, sizeof(f->suppressed));
	f->total = 0;
	f->said_ns = now;
	return 1;
}
