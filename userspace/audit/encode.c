// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "encode.h"
#include "redact.h"
#include "bpfbox/events.h"

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
		[BPFBOX_LAYER_KERNEL] = "kernel",
	};

	return layer < sizeof(names) / sizeof(names[0]) ? names[layer] : NULL;
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
			    e->argv_truncated ? REDACT_TAIL_CUT : 0);

	jsonw_strn(w, "filename", e->filename, strnlen(e->filename, sizeof(e->filename)));
	jsonw_array_begin(w, "argv");
	for (size_t i = 0; i < len;) {
		size_t n = strnlen(argv + i, len - i);

		jsonw_array_strn(w, argv + i, n);
		i += n + 1;
	}
	jsonw_array_end(w);
	jsonw_bool(w, "argv_truncated", e->argv_truncated);
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
	};
	const struct bpfbox_event_hdr *h = data;

	if (size < sizeof(*h) || h->type == 0 || h->type >= sizeof(types) / sizeof(types[0]) ||
	    size < types[h->type].size)
		return -EINVAL;
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

		jsonw_strn(w, "path", e->path, strnlen(e->path, sizeof(e->path)));
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
	}
	jsonw_end(w);
	jsonw_newline(w);
	return 0;
}
