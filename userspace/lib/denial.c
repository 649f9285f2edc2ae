// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "denial.h"
#include "util.h"
#include "bpfbox/events.h"

void denials_add(struct denials *d, const char *layer, const char *op, const char *what, int err,
		 unsigned int count)
{
	struct denial *x;

	for (size_t i = 0; i < d->n; i++) {
		x = &d->v[i];
		if (streq(x->layer, layer) && streq(x->op, op) && streq(x->what, what)) {
			x->count += count;
			return;
		}
	}
	if (d->n == DENIALS_MAX) {
		d->other += count;
		return;
	}
	x = &d->v[d->n++];
	snprintf(x->layer, sizeof(x->layer), "%s", layer);
	snprintf(x->op, sizeof(x->op), "%s", op);
	snprintf(x->what, sizeof(x->what), "%s", what);
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

static const char *const layers[] = {
	[BPFBOX_LAYER_LANDLOCK] = "landlock", [BPFBOX_LAYER_SECCOMP] = "seccomp",
	[BPFBOX_LAYER_CGROUP_BPF] = "cgroup_bpf", [BPFBOX_LAYER_BPF_LSM] = "bpf_lsm",
	[BPFBOX_LAYER_MOUNT] = "mount", [BPFBOX_LAYER_EXEC_TP] = "command_rule",
};

static const char *const file_ops[] = {
	[BPFBOX_FILE_OPEN] = "open",	 [BPFBOX_FILE_UNLINK] = "unlink",
	[BPFBOX_FILE_RMDIR] = "rmdir",	 [BPFBOX_FILE_RENAME] = "rename",
	[BPFBOX_FILE_MKDIR] = "mkdir",	 [BPFBOX_FILE_LINK] = "link",
	[BPFBOX_FILE_SYMLINK] = "symlink", [BPFBOX_FILE_CHMOD] = "chmod",
	[BPFBOX_FILE_UTIMES] = "utimes",
};

static void file_denial(struct denials *d, const char *layer, const void *data, int err)
{
	const struct bpfbox_file_event *f = data;
	char path[sizeof(f->path) + 1];
	const char *op = f->op < ARRAY_SIZE(file_ops) && file_ops[f->op] ? file_ops[f->op] : "file";

	snprintf(path, sizeof(path), "%.*s", (int)strnlen(f->path, sizeof(f->path)), f->path);
	path_fold(path);
	/* An open for writing is a write. */
	if (f->op == BPFBOX_FILE_OPEN &&
	    ((f->flags & O_ACCMODE) != O_RDONLY || (f->flags & (O_CREAT | O_TRUNC))))
		op = "write";
	denials_add(d, layer, op, path, err, 1);
}

static void connect_denial(struct denials *d, const char *layer, const void *data, int err)
{
	const struct bpfbox_connect_event *c = data;
	char addr[INET6_ADDRSTRLEN] = "?", what[INET6_ADDRSTRLEN + 112];

	if (c->family == AF_UNIX) {
		snprintf(what, sizeof(what), "unix:%.*s",
			 (int)strnlen(c->unix_path, sizeof(c->unix_path)), c->unix_path);
	} else {
		inet_ntop(c->family == AF_INET6 ? AF_INET6 : AF_INET, c->addr, addr, sizeof(addr));
		snprintf(what, sizeof(what), c->family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr,
			 c->port);
	}
	denials_add(d, layer, "connect", what, err, 1);
}

bool denials_add_record(struct denials *d, const void *data, size_t size)
{
	const struct bpfbox_event_hdr *h = data;
	const char *layer;

	if (size < sizeof(*h) || h->decision != BPFBOX_DENY || h->layer >= ARRAY_SIZE(layers) ||
	    !layers[h->layer])
		return false;
	layer = layers[h->layer];
	if (h->type == BPFBOX_EV_FILE && size >= sizeof(struct bpfbox_file_event)) {
		file_denial(d, layer, data, -h->err);
	} else if (h->type == BPFBOX_EV_CONNECT && size >= sizeof(struct bpfbox_connect_event)) {
		connect_denial(d, layer, data, -h->err);
	} else if (h->type == BPFBOX_EV_EXEC && size >= sizeof(struct bpfbox_exec_event)) {
		const struct bpfbox_exec_event *x = data;
		char path[sizeof(x->filename) + 1];

		snprintf(path, sizeof(path), "%.*s",
			 (int)strnlen(x->filename, sizeof(x->filename)), x->filename);
		denials_add(d, layer, "exec", path, -h->err, 1);
	} else {
		return false;
	}
	return true;
}
