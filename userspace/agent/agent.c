// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent.h"
#include "cgroup.h"
#include "audit.skel.h"
#include "net.skel.h"
#include "bpfbox/events.h"
#include "../lib/util.h"

struct agent {
	struct audit_bpf *audit;
	struct net_bpf *net;
	struct ring_buffer *rb;
	int parent_fd;
	int sessions_fd, lost_fd, net_allow_fd;
	struct agent_status st;
};

static char libbpf_last[256];

/* libbpf's warnings become the reason we give, not noise on stderr. */
static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level != LIBBPF_DEBUG)
		vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
	return 0;
}

static void why_not(struct agent *a, const char *what, int err)
{
	size_t len = strlen(a->st.why_not);

	snprintf(a->st.why_not + len, sizeof(a->st.why_not) - len, "%s%s: %s", len ? "; " : "",
		 what, strerror(abs(err)));
}

/* Whether this kernel has the tracepoint category/name (tracefs mounted). */
static bool have_tracepoint(const char *category, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/%s", category, name);
	if (access(path, F_OK) == 0)
		return true;
	snprintf(path, sizeof(path), "/sys/kernel/debug/tracing/events/%s/%s", category, name);
	return access(path, F_OK) == 0;
}

/*
 * Programs for tracepoints a kernel lacks (openat2 before 5.6) are switched
 * off before load instead of failing it; the rest still observe.
 */
static void disable_missing_tracepoints(struct audit_bpf *skel)
{
	struct bpf_program *prog;

	if (access("/sys/kernel/tracing/events", F_OK) < 0)
		mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL);
	bpf_object__for_each_program(prog, skel->obj) {
		const char *sec = bpf_program__section_name(prog);
		char cat[64], name[128];

		if (sscanf(sec, "tracepoint/%63[^/]/%127s", cat, name) == 2 &&
		    !have_tracepoint(cat, name))
			bpf_program__set_autoload(prog, false);
	}
}

/* Audit skeleton: open, size the ring, load, attach. It owns the shared maps. */
static int load_audit(struct agent *a, const struct agent_opts *o)
{
	int r;

	a->audit = audit_bpf__open();
	if (!a->audit)
		return -errno;
	bpf_map__set_max_entries(a->audit->maps.events, o->ring_bytes);
	a->audit->rodata->audit_opens = o->audit_opens;
	a->audit->rodata->aggregate_window_ns = o->aggregate_ns;
	disable_missing_tracepoints(a->audit);
	r = audit_bpf__load(a->audit);
	if (!r)
		r = audit_bpf__attach(a->audit);
	if (r) {
		audit_bpf__destroy(a->audit);
		a->audit = NULL;
	}
	return r;
}

static int attach_cgroup(struct bpf_program *prog, int cgroup_fd, struct bpf_link **link)
{
	struct bpf_link *l = bpf_program__attach_cgroup(prog, cgroup_fd);
	int r = libbpf_get_error(l);

	*link = r ? NULL : l;
	return r;
}

/*
 * Whether the running kernel's BTF names a symbol (an enum value such as
 * BPF_CGROUP_UNIX_CONNECT): a cheap probe for attach types that libbpf 1.1
 * does not know by name. The string table is searched as bytes.
 */
static bool kernel_btf_has(const char *name)
{
	_cleanup_close_ int fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
	size_t nlen = strlen(name) + 1; /* with the NUL: a whole name */
	struct stat st;
	void *m;
	bool found;

	if (fd < 0 || fstat(fd, &st) < 0)
		return false;
	m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return false;
	found = memmem(m, st.st_size, name, nlen) != NULL;
	munmap(m, st.st_size);
	return found;
}

#define ATTACH_CGROUP_UNIX_CONNECT 49 /* enum bpf_attach_type, kernel 6.7 */

/* Network skeleton: shares the audit maps when they exist; attaches to the parent. */
static int load_net(struct agent *a, const struct agent_opts *o)
{
	struct net_bpf *n;
	int r;

	n = a->net = net_bpf__open();
	if (!n)
		return -errno;
	if (a->audit) {
		bpf_map__reuse_fd(n->maps.sessions, bpf_map__fd(a->audit->maps.sessions));
		bpf_map__reuse_fd(n->maps.events, bpf_map__fd(a->audit->maps.events));
		bpf_map__reuse_fd(n->maps.lost, bpf_map__fd(a->audit->maps.lost));
	} else {
		bpf_map__set_max_entries(n->maps.events, o->ring_bytes);
	}
	if (kernel_btf_has("BPF_CGROUP_UNIX_CONNECT"))
		bpf_program__set_expected_attach_type(n->progs.net_connect_unix,
						      ATTACH_CGROUP_UNIX_CONNECT);
	else
		bpf_program__set_autoload(n->progs.net_connect_unix, false);
	/* Links stored in the skeleton are detached by net_bpf__destroy. */
	r = net_bpf__load(n);
	if (!r)
		r = attach_cgroup(n->progs.net_connect4, a->parent_fd, &n->links.net_connect4);
	if (!r)
		r = attach_cgroup(n->progs.net_connect6, a->parent_fd, &n->links.net_connect6);
	if (!r)
		r = attach_cgroup(n->progs.net_sendmsg4, a->parent_fd, &n->links.net_sendmsg4);
	if (!r)
		r = attach_cgroup(n->progs.net_sendmsg6, a->parent_fd, &n->links.net_sendmsg6);
	if (!r)
		r = attach_cgroup(n->progs.net_sock_create, a->parent_fd,
				  &n->links.net_sock_create);
	if (!r && bpf_program__autoload(n->progs.net_connect_unix)) {
		r = attach_cgroup(n->progs.net_connect_unix, a->parent_fd,
				  &n->links.net_connect_unix);
		a->st.unix_connect = !r;
	}
	if (r) {
		net_bpf__destroy(n);
		a->net = NULL;
	}
	return r;
}

int agent_open(struct agent **out, const struct agent_opts *o)
{
	struct agent *a = calloc(1, sizeof(*a));
	libbpf_print_fn_t old;
	int r;

	if (!a)
		return -ENOMEM;
	a->parent_fd = cgroup_parent_open(o->cgroup_parent);
	if (a->parent_fd < 0) {
		r = a->parent_fd;
		free(a);
		return r;
	}
	old = libbpf_set_print(libbpf_quiet);
	r = load_audit(a, o);
	if (r)
		why_not(a, "audit tracepoints", r);
	r = load_net(a, o);
	if (r)
		why_not(a, "cgroup network programs", r);
	libbpf_set_print(old);
	a->st.audit = a->audit;
	a->st.net = a->net;
	if (!a->audit && !a->net) {
		agent_close(a);
		return -ENOTSUP;
	}
	if (a->audit) {
		a->sessions_fd = bpf_map__fd(a->audit->maps.sessions);
		a->lost_fd = bpf_map__fd(a->audit->maps.lost);
		a->rb = ring_buffer__new(bpf_map__fd(a->audit->maps.events), o->on_record, o->ctx,
					 NULL);
	} else {
		a->sessions_fd = bpf_map__fd(a->net->maps.sessions);
		a->lost_fd = bpf_map__fd(a->net->maps.lost);
		a->rb = ring_buffer__new(bpf_map__fd(a->net->maps.events), o->on_record, o->ctx,
					 NULL);
	}
	a->net_allow_fd = a->net ? bpf_map__fd(a->net->maps.net_allow) : -1;
	if (!a->rb) {
		r = -errno;
		agent_close(a);
		return r;
	}
	*out = a;
	return 0;
}

void agent_close(struct agent *a)
{
	if (!a)
		return;
	ring_buffer__free(a->rb);
	net_bpf__destroy(a->net);
	audit_bpf__destroy(a->audit);
	if (a->parent_fd >= 0)
		close(a->parent_fd);
	free(a);
}

const struct agent_status *agent_status(const struct agent *a)
{
	return &a->st;
}

int agent_session_add(struct agent *a, uint64_t cgroup_id, uint32_t id, uint32_t flags)
{
	struct bpfbox_session s = { .id = id, .flags = flags, .seq = 1 };

	if (bpf_map_update_elem(a->sessions_fd, &cgroup_id, &s, BPF_NOEXIST) < 0)
		return -errno;
	return 0;
}

int agent_session_remove(struct agent *a, uint64_t cgroup_id, uint64_t *seq, uint64_t *lost)
{
	struct bpfbox_session s;

	if (bpf_map_lookup_elem(a->sessions_fd, &cgroup_id, &s) < 0)
		return -errno;
	if (seq)
		*seq = s.seq;
	if (lost)
		*lost = s.lost;
	if (bpf_map_delete_elem(a->sessions_fd, &cgroup_id) < 0)
		return -errno;
	if (a->net)
		bpf_map_delete_elem(bpf_map__fd(a->net->maps.unix_allow), &s.id);
	return 0;
}

int agent_net_allow(struct agent *a, uint32_t id, const char *cidr, uint16_t lo, uint16_t hi)
{
	struct bpfbox_net_key key = { .session = id };
	struct bpfbox_net_rule rule = { .port_lo = lo, .port_hi = hi };
	char addr[64];
	const char *slash = strchr(cidr, '/');
	unsigned long plen;
	char *end;

	if (a->net_allow_fd < 0)
		return -ENOTSUP;
	if (!slash || (size_t)(slash - cidr) >= sizeof(addr) || lo > hi)
		return -EINVAL;
	snprintf(addr, sizeof(addr), "%.*s", (int)(slash - cidr), cidr);
	plen = strtoul(slash + 1, &end, 10);
	if (*end || end == slash + 1)
		return -EINVAL;
	if (inet_pton(AF_INET, addr, key.addr + 12) == 1) {
		if (plen > 32)
			return -EINVAL;
		key.addr[10] = key.addr[11] = 0xff;
		plen += 96;
	} else if (inet_pton(AF_INET6, addr, key.addr) != 1 || plen > 128) {
		return -EINVAL;
	}
	key.prefixlen = 32 + plen;
	if (bpf_map_update_elem(a->net_allow_fd, &key, &rule, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int agent_unix_allow(struct agent *a, uint32_t id, const char *const *dirs, size_t n)
{
	struct bpfbox_unix_allow allow = { 0 };

	if (!a->net)
		return -ENOTSUP;
	for (size_t i = 0; i < n && allow.n < BPFBOX_UNIX_PREFIXES; i++) {
		size_t len = strlen(dirs[i]);

		/* A longer directory cannot hold a socket path anyway. */
		if (len == 0 || len >= BPFBOX_UNIX_PATH_LEN - 2)
			continue;
		allow.len[allow.n] = len;
		memcpy(allow.prefix[allow.n], dirs[i], len);
		allow.n++;
	}
	if (bpf_map_update_elem(bpf_map__fd(a->net->maps.unix_allow), &id, &allow, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int agent_ring_fd(const struct agent *a)
{
	return ring_buffer__epoll_fd(a->rb);
}

int agent_consume(struct agent *a)
{
	return ring_buffer__consume(a->rb);
}

uint64_t agent_lost_total(const struct agent *a)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v, total = 0;
	uint32_t zero = 0;

	if (ncpu <= 0)
		return 0;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return 0;
	if (bpf_map_lookup_elem(a->lost_fd, &zero, v) == 0)
		for (int i = 0; i < ncpu; i++)
			total += v[i];
	free(v);
	return total;
}

int agent_flush_session(struct agent *a, uint32_t id, uint64_t *seq, agent_record_fn fn,
			void *ctx)
{
	struct bpfbox_agg_key key, next;
	struct bpfbox_agg_val val;
	int fd, n = 0;
	bool first = true;

	if (!a->audit)
		return 0;
	fd = bpf_map__fd(a->audit->maps.agg);
	/* Deleting while iterating restarts the walk; entries are few at the end. */
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		if (key.session != id || bpf_map_lookup_elem(fd, &key, &val) < 0)
			continue;
		if (val.count) {
			struct bpfbox_file_event e = { 0 };

			e.hdr.type = BPFBOX_EV_FILE;
			e.hdr.session = id;
			e.hdr.seq = (*seq)++;
			e.hdr.ts_ns = now_ns();
			e.hdr.pid = key.pid;
			e.hdr.tid = val.tid;
			e.hdr.ppid = val.ppid;
			e.hdr.uid = val.uid;
			memcpy(e.hdr.comm, val.comm, sizeof(e.hdr.comm));
			e.flags = key.flags;
			e.count = val.count;
			memcpy(e.path, key.path, sizeof(e.path));
			fn(ctx, &e, sizeof(e));
			n++;
		}
		bpf_map_delete_elem(fd, &key);
		first = true;
	}
	return n;
}
