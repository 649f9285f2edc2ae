// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "agent.h"
#include "../lib/cgroup.h"
#include "audit.skel.h"
#include "net.skel.h"
#include "lsm.skel.h"
#include "cmd.skel.h"
#include "lsm_policy.h"
#include "bpfbox/events.h"
#include "../lib/util.h"
#include "../policy/policy.h"
#include "../probe/probe.h"

struct agent {
	struct audit_bpf *audit;
	struct net_bpf *net;
	struct lsm_bpf *lsm;
	struct cmd_bpf *cmd;	  /* command rules on every exec */
	int cmd_rules_fd;	  /* its table (from the skeleton or the pin) */
	bool cmd_adopted;	  /* pin_dir: its link was found pinned */
	struct lsm_maps lsm_maps; /* fds, also when the programs were adopted */
	struct ring_buffer *rb;
	int parent_fd;
	int sessions_fd, events_fd, lost_fd, net_allow_fd, unix_allow_fd, agg_fd, oom_fd;
	char pin_dir[PATH_MAX]; /* "" when nothing is pinned */
	bool own_fds;		/* the map fds come from pins: ours to close */
	struct agent_status st;
};

/* The maps a daemon shares with its next incarnation (pinned as map_NAME). */
static const char *const pinned_maps[] = {"sessions",	 "events",	 "lost",     "net_allow",
					  "unix_allow",	 "agg",		 "names",    "abs_paths",
					  "oom_victims", "net_resolved", "writable", "cmd_rules"};

static char libbpf_last[256];

/* libbpf's warnings become the reason we give, not noise on stderr. */
static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (getenv("BPFBOX_LIBBPF_DEBUG")) {
		va_list cp;

		va_copy(cp, ap);
		vfprintf(stderr, fmt, cp);
		va_end(cp);
	}
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
 * The audit programs of one attach mode (bpf/audit.bpf.c): the BPF
 * trampolines (fexit/__x64_sys_X, fentry for prctl) or the syscall
 * tracepoints; the sched and oom tracepoints serve both. Programs for
 * syscalls or tracepoints a kernel lacks (openat2 before 5.6) are switched
 * off instead of failing the load; the rest still observe. A syscall has a
 * trampoline target exactly where it has its syscalls/sys_exit_X event.
 */
static void select_audit_programs(struct audit_bpf *skel, bool fexit)
{
	struct bpf_program *prog;
	bool tracefs;

	if (access("/sys/kernel/tracing/events", F_OK) < 0)
		mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL);
	/* Without tracefs a trampoline still loads: then only its load says. */
	tracefs = access("/sys/kernel/tracing/events/syscalls", F_OK) == 0 ||
		  access("/sys/kernel/debug/tracing/events/syscalls", F_OK) == 0;
	bpf_object__for_each_program(prog, skel->obj)
	{
		const char *sec = bpf_program__section_name(prog);
		char cat[64], name[128];
		bool on;

		if (sscanf(sec, "fexit/__x64_sys_%127s", name) == 1 ||
		    sscanf(sec, "fentry/__x64_sys_%127s", name) == 1) {
			char tp[160];

			snprintf(tp, sizeof(tp), "sys_exit_%s", name);
			on = fexit && (!tracefs || have_tracepoint("syscalls", tp));
		} else if (sscanf(sec, "tracepoint/%63[^/]/%127s", cat, name) == 2) {
			on = (!fexit || !streq(cat, "syscalls")) && have_tracepoint(cat, name);
		} else {
			on = true;
		}
		bpf_program__set_autoload(prog, on);
	}
}

static void pin_path(const char *dir, char *buf, size_t size, const char *kind, const char *name)
{
	snprintf(buf, size, "%s/%s_%s", dir, kind, name);
}

/* Whether every program of the skeleton that would load has a pinned link. */
static bool links_pinned(const struct agent *a, const struct bpf_object_skeleton *sk)
{
	char path[PATH_MAX + 64];
	int n = 0;

	for (int i = 0; i < sk->prog_cnt; i++) {
		/* net_emit is run, never attached: it has no link. */
		if (!bpf_program__autoload(*sk->progs[i].prog) ||
		    bpf_program__type(*sk->progs[i].prog) == BPF_PROG_TYPE_SYSCALL)
			continue;
		pin_path(a->pin_dir, path, sizeof(path), "link", sk->progs[i].name);
		if (access(path, F_OK) < 0)
			return false;
		n++;
	}
	return n > 0;
}

/* Partial pins (a crash while pinning) are dropped before attaching anew. */
static void unpin_links(const struct agent *a, const struct bpf_object_skeleton *sk)
{
	char path[PATH_MAX + 64];

	for (int i = 0; i < sk->prog_cnt; i++) {
		pin_path(a->pin_dir, path, sizeof(path), "link", sk->progs[i].name);
		unlink(path);
	}
}

static int pin_links(const struct agent *a, const struct bpf_object_skeleton *sk)
{
	char path[PATH_MAX + 64];

	for (int i = 0; i < sk->prog_cnt; i++) {
		struct bpf_link *link = *sk->progs[i].link;
		int r;

		if (!link)
			continue;
		pin_path(a->pin_dir, path, sizeof(path), "link", sk->progs[i].name);
		r = bpf_link__pin(link, path);
		if (r)
			return r;
	}
	return 0;
}

/* Pinned links stay attached when the skeleton is destroyed. */
static void disconnect_pinned_links(const struct bpf_object_skeleton *sk)
{
	for (int i = 0; i < sk->prog_cnt; i++) {
		struct bpf_link *link = *sk->progs[i].link;

		if (link && bpf_link__pin_path(link))
			bpf_link__disconnect(link);
	}
}

/* libbpf reuses a compatible pinned map at load, or creates and pins it. */
static int set_map_pins(const struct agent *a, struct bpf_object *obj)
{
	char path[PATH_MAX + 64];

	for (size_t i = 0; i < ARRAY_SIZE(pinned_maps); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, pinned_maps[i]);
		int r, fd;

		if (!m)
			continue;
		pin_path(a->pin_dir, path, sizeof(path), "map", pinned_maps[i]);
		r = bpf_map__set_pin_path(m, path);
		if (r)
			return r;
		/* A pinned map keeps its size (the ring of an earlier --audit-ring). */
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			struct bpf_map_info info = {0};
			__u32 len = sizeof(info);

			if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
				bpf_map__set_max_entries(m, info.max_entries);
			close(fd);
		}
	}
	return 0;
}

int agent_pin_dir_prepare(const char *dir)
{
	char parent[PATH_MAX];
	struct statfs sf;
	char *slash;

	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = '\0';
	if (statfs(parent, &sf) < 0)
		return -errno;
	if (sf.f_type != BPF_FS_MAGIC && streq(parent, "/sys/fs/bpf") &&
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") < 0)
		return -errno;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (statfs(dir, &sf) < 0)
		return -errno;
	return sf.f_type == BPF_FS_MAGIC ? 0 : -ENOTSUP;
}

/* Pinned cgroup links must be those of this cgroup parent, not another's. */
static int check_cgroup_link(const struct agent *a, const char *prog)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);
	char path[PATH_MAX + 64];
	struct stat st;
	int fd, r = 0;

	pin_path(a->pin_dir, path, sizeof(path), "link", prog);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0 || fstat(a->parent_fd, &st) < 0)
		r = -errno;
	else if (info.type != BPF_LINK_TYPE_CGROUP || info.cgroup.cgroup_id != st.st_ino)
		r = -EXDEV;
	close(fd);
	return r;
}

/* Audit skeleton in one attach mode: open, size the ring, load, attach; owns the shared maps. */
static int load_audit_as(struct agent *a, const struct agent_opts *o, bool fexit)
{
	int r;

	a->audit = audit_bpf__open();
	if (!a->audit)
		return -errno;
	bpf_map__set_max_entries(a->audit->maps.events, o->ring_bytes);
	a->audit->rodata->audit_opens = o->audit_opens;
	a->audit->rodata->aggregate_window_ns = o->aggregate_ns;
	if (o->argv_max >= 64 && o->argv_max <= BPFBOX_ARGV_LEN)
		a->audit->rodata->argv_max = o->argv_max;
	select_audit_programs(a->audit, fexit);
	if (a->pin_dir[0]) {
		unpin_links(a, a->audit->skeleton);
		r = set_map_pins(a, a->audit->obj);
		if (r)
			goto out;
	}
	r = audit_bpf__load(a->audit);
	if (!r)
		r = audit_bpf__attach(a->audit);
	if (!r && a->pin_dir[0]) {
		r = pin_links(a, a->audit->skeleton);
		if (r)
			unpin_links(a, a->audit->skeleton);
	}
out:
	if (r) {
		audit_bpf__destroy(a->audit);
		a->audit = NULL;
	} else {
		snprintf(a->st.attach, sizeof(a->st.attach), "%s", fexit ? "fexit" : "tracepoint");
	}
	return r;
}

/* Pin mode: whether an earlier agent left every link of one mode pinned. */
static bool audit_adopt(struct agent *a)
{
	struct audit_bpf *skel = audit_bpf__open();
	bool fexit;

	if (!skel)
		return false;
	for (int i = 0; i < 2 && !a->st.audit_adopted; i++) {
		fexit = i == 0;
		select_audit_programs(skel, fexit);
		if (links_pinned(a, skel->skeleton)) {
			a->st.audit_adopted = true;
			snprintf(a->st.attach, sizeof(a->st.attach), "%s",
				 fexit ? "fexit" : "tracepoint");
		}
	}
	audit_bpf__destroy(skel);
	return a->st.audit_adopted;
}

/*
 * The audit programs, by BPF trampolines where this kernel loads them (no
 * syscall slow path for the host), else by syscall tracepoints.
 * BPFBOX_AUDIT_ATTACH=fexit or =tracepoint forces one mode (no fallback):
 * for measuring and testing each.
 */
static int load_audit(struct agent *a, const struct agent_opts *o)
{
	const char *want = getenv("BPFBOX_AUDIT_ATTACH");
	bool fexit = true, tp = true;
	int r = 0;

	if (want && *want && !streq(want, "auto")) {
		fexit = streq(want, "fexit");
		tp = streq(want, "tracepoint");
		if (!fexit && !tp) {
			why_not(a, "BPFBOX_AUDIT_ATTACH (auto, fexit or tracepoint)", EINVAL);
			return -EINVAL;
		}
	}
	if (a->pin_dir[0] && audit_adopt(a))
		return 0; /* already attached by an earlier agent: nothing to load */
	/* Auto: a host that refuses trampolines is known from the probe, kept per boot. */
	if (fexit && tp && !probe_fexit(a->st.attach_why + 7, sizeof(a->st.attach_why) - 7)) {
		memcpy(a->st.attach_why, "fexit: ", 7);
		fexit = false;
	}
	if (fexit) {
		r = load_audit_as(a, o, true);
		if (!r || !tp)
			return r;
		snprintf(a->st.attach_why, sizeof(a->st.attach_why), "fexit: %s", strerror(abs(r)));
	}
	return load_audit_as(a, o, false);
}

static int attach_cgroup(struct bpf_program *prog, int cgroup_fd, struct bpf_link **link)
{
	struct bpf_link *l = bpf_program__attach_cgroup(prog, cgroup_fd);
	int r = libbpf_get_error(l);

	*link = r ? NULL : l;
	return r;
}

/*
 * The running kernel's BTF, parsed by libbpf (which read()s the file):
 * /sys/kernel/btf/vmlinux can be mmap()ed only from 6.16 on, and a probe
 * that mapped it answered "no" on every older kernel, so 6.12 got the
 * pre-6.3 inode_setattr program and the whole LSM object failed to load.
 */
static struct btf *kernel_btf(void)
{
	struct btf *btf = btf__load_vmlinux_btf();

	return libbpf_get_error(btf) ? NULL : btf;
}

/*
 * Whether the running kernel's BTF names a symbol (an enum value such as
 * BPF_CGROUP_UNIX_CONNECT): a cheap probe for attach types that libbpf 1.1
 * does not know by name. The string table is searched as bytes.
 *
 * Known limit, kept on purpose for now: /sys/kernel/btf/vmlinux can be
 * mmap()ed only from 6.16 on, so on 6.7..6.15 this says "no" and
 * cgroup/connect_unix stays off there. Switching it on (reading the BTF
 * with kernel_btf()) was tried on 6.12: it then refuses relative socket
 * names in the workspace (full.sh's unix_in), a change of policy to decide
 * on its own.
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

/* How many arguments the kernel function has (an LSM hook's bpf_lsm_*), or -errno. */
static int kernel_btf_func_args(const char *func)
{
	struct btf *btf = kernel_btf();
	const struct btf_type *t;
	int id, r = -ENOENT;

	if (!btf)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, func, BTF_KIND_FUNC);
	if (id > 0) {
		t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
		if (t && btf_is_func_proto(t))
			r = btf_vlen(t);
	}
	btf__free(btf);
	return r;
}

void agent_lsm_select(struct lsm_bpf *l)
{
	/*
	 * inode_setattr's arguments: (dentry, attr) before 6.3, (idmap,
	 * dentry, attr) since. Taken from the hook's own prototype; a kernel
	 * without it gets the newer layout (and fails to load, not misreads).
	 */
	if (kernel_btf_func_args("bpf_lsm_inode_setattr") == 2)
		bpf_program__set_autoload(l->progs.bpfbox_inode_setattr, false);
	else
		bpf_program__set_autoload(l->progs.bpfbox_inode_setattr_61, false);
}

#define ATTACH_CGROUP_UNIX_CONNECT 49 /* enum bpf_attach_type, kernel 6.7 */

/* Network skeleton: shares the audit maps when they exist; attaches to the parent. */
static int load_net(struct agent *a, const struct agent_opts *o)
{
	char path[PATH_MAX + 64];
	struct net_bpf *n;
	int r;

	n = a->net = net_bpf__open();
	if (!n)
		return -errno;
	if (kernel_btf_has("BPF_CGROUP_UNIX_CONNECT"))
		bpf_program__set_expected_attach_type(n->progs.net_connect_unix,
						      ATTACH_CGROUP_UNIX_CONNECT);
	else
		bpf_program__set_autoload(n->progs.net_connect_unix, false);
	if (a->pin_dir[0]) {
		if (links_pinned(a, n->skeleton)) {
			net_bpf__destroy(n);
			a->net = NULL;
			pin_path(a->pin_dir, path, sizeof(path), "link", "net_connect_unix");
			a->st.unix_connect = access(path, F_OK) == 0;
			/* -EXDEV: pinned for another parent; agent_open fails. */
			r = check_cgroup_link(a, "net_connect4");
			a->st.net_adopted = !r;
			return r;
		}
		unpin_links(a, n->skeleton);
		r = set_map_pins(a, n->obj);
		if (r)
			goto out;
	} else if (a->audit) {
		bpf_map__reuse_fd(n->maps.sessions, bpf_map__fd(a->audit->maps.sessions));
		bpf_map__reuse_fd(n->maps.events, bpf_map__fd(a->audit->maps.events));
		bpf_map__reuse_fd(n->maps.lost, bpf_map__fd(a->audit->maps.lost));
	} else {
		bpf_map__set_max_entries(n->maps.events, o->ring_bytes);
	}
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
	/* Egress by name (userspace/net/): replies, peers, the proxy's keys. */
	if (!r)
		r = attach_cgroup(n->progs.net_recvmsg4, a->parent_fd, &n->links.net_recvmsg4);
	if (!r)
		r = attach_cgroup(n->progs.net_getpeername4, a->parent_fd,
				  &n->links.net_getpeername4);
	if (!r)
		r = attach_cgroup(n->progs.net_getpeername6, a->parent_fd,
				  &n->links.net_getpeername6);
	if (!r)
		r = attach_cgroup(n->progs.net_sockops, a->parent_fd, &n->links.net_sockops);
	if (!r && bpf_program__autoload(n->progs.net_connect_unix)) {
		r = attach_cgroup(n->progs.net_connect_unix, a->parent_fd,
				  &n->links.net_connect_unix);
		a->st.unix_connect = !r;
	}
	if (!r && a->pin_dir[0]) {
		r = pin_links(a, n->skeleton);
		if (r)
			unpin_links(a, n->skeleton);
	}
out:
	if (r) {
		net_bpf__destroy(n);
		a->net = NULL;
		a->st.unix_connect = false;
	}
	return r;
}

/*
 * Command rules skeleton (bpf/cmd.bpf.c): its own exec tracepoint program
 * and rule table, sharing the audit maps; loaded only when asked for (a
 * session with rules, a daemon). With pin_dir, the link and the table are
 * pinned like the others, so the rules outlive a daemon crash.
 */
static int load_cmd(struct agent *a)
{
	int r;

	if (!a->pin_dir[0] && !a->audit)
		return -ENOTSUP;
	a->cmd = cmd_bpf__open();
	if (!a->cmd)
		return -errno;
	if (a->pin_dir[0]) {
		if (links_pinned(a, a->cmd->skeleton)) {
			cmd_bpf__destroy(a->cmd);
			a->cmd = NULL;
			a->cmd_adopted = true;
			return 0;
		}
		unpin_links(a, a->cmd->skeleton);
		r = set_map_pins(a, a->cmd->obj);
		if (r)
			goto out;
	} else {
		bpf_map__reuse_fd(a->cmd->maps.sessions, bpf_map__fd(a->audit->maps.sessions));
		bpf_map__reuse_fd(a->cmd->maps.events, bpf_map__fd(a->audit->maps.events));
		bpf_map__reuse_fd(a->cmd->maps.lost, bpf_map__fd(a->audit->maps.lost));
	}
	r = cmd_bpf__load(a->cmd);
	if (!r)
		r = cmd_bpf__attach(a->cmd);
	if (!r && a->pin_dir[0]) {
		r = pin_links(a, a->cmd->skeleton);
		if (r)
			unpin_links(a, a->cmd->skeleton);
	}
out:
	if (r) {
		cmd_bpf__destroy(a->cmd);
		a->cmd = NULL;
	}
	return r;
}

int agent_session_cmd_rules(struct agent *a, uint32_t id, const struct bpfbox_cmd_table *t)
{
	if (a->cmd_rules_fd < 0)
		return -ENOTSUP;
	if (!t)
		return bpf_map_delete_elem(a->cmd_rules_fd, &id) < 0 && errno != ENOENT ? -errno
											: 0;
	return bpf_map_update_elem(a->cmd_rules_fd, &id, t, BPF_ANY) < 0 ? -errno : 0;
}

int agent_session_cmd_rules_get(struct agent *a, uint32_t id, struct bpfbox_cmd_table *t)
{
	if (a->cmd_rules_fd < 0)
		return -ENOTSUP;
	return bpf_map_lookup_elem(a->cmd_rules_fd, &id, t) < 0 ? -errno : 0;
}

/* Whether bpf is in the active LSM list: else LSM programs attach but never run. */
static bool bpf_lsm_active(void)
{
	char list[256];

	if (read_file_str("/sys/kernel/security/lsm", list, sizeof(list)) < 0 &&
	    (mount("securityfs", "/sys/kernel/security", "securityfs", 0, NULL) < 0 ||
	     read_file_str("/sys/kernel/security/lsm", list, sizeof(list)) < 0))
		return false;
	return word_list_has(list, "bpf", ",");
}

/*
 * BPF LSM skeleton (bpf/lsm.bpf.c): the file, exec and connect policy that
 * Landlock cannot express. Shares the session, ring and loss maps, and
 * the connect allow-list with the network programs.
 */
static int load_lsm(struct agent *a, const struct agent_opts *o)
{
	struct lsm_bpf *l;
	int r;

	if (!bpf_lsm_active())
		return -ENOPKG;
	l = a->lsm = lsm_bpf__open();
	if (!l)
		return -errno;
	snprintf((char *)l->rodata->daemon_socket, sizeof(l->rodata->daemon_socket), "%s",
		 o->daemon_socket ? o->daemon_socket : "/run/bpfbox/bpfbox.sock");
	agent_lsm_select(l);
	if (a->pin_dir[0]) {
		if (links_pinned(a, l->skeleton)) {
			a->st.lsm_adopted = true;
			lsm_bpf__destroy(l);
			a->lsm = NULL;
			return 0;
		}
		unpin_links(a, l->skeleton);
		r = set_map_pins(a, l->obj);
		if (r)
			goto out;
	} else {
		struct bpf_object *shared = a->audit ? a->audit->obj : a->net ? a->net->obj : NULL;

		if (shared) {
			bpf_map__reuse_fd(l->maps.sessions,
					  bpf_object__find_map_fd_by_name(shared, "sessions"));
			bpf_map__reuse_fd(l->maps.events,
					  bpf_object__find_map_fd_by_name(shared, "events"));
			bpf_map__reuse_fd(l->maps.lost,
					  bpf_object__find_map_fd_by_name(shared, "lost"));
		} else {
			bpf_map__set_max_entries(l->maps.events, o->ring_bytes);
		}
		if (a->net) {
			bpf_map__reuse_fd(l->maps.net_allow, bpf_map__fd(a->net->maps.net_allow));
			bpf_map__reuse_fd(l->maps.net_resolved,
					  bpf_map__fd(a->net->maps.net_resolved));
		}
		/* The exec hook judges the command rules that need no argv. */
		if (a->cmd)
			bpf_map__reuse_fd(l->maps.cmd_rules, bpf_map__fd(a->cmd->maps.cmd_rules));
	}
	r = lsm_bpf__load(l);
	if (!r)
		r = lsm_bpf__attach(l);
	if (!r && a->pin_dir[0]) {
		r = pin_links(a, l->skeleton);
		if (r)
			unpin_links(a, l->skeleton);
	}
out:
	if (r) {
		lsm_bpf__destroy(l);
		a->lsm = NULL;
	}
	return r;
}

/* Pin mode: the agent's map fds come from the pins, whatever was loaded. */
static int open_pinned_maps(struct agent *a)
{
	struct {
		const char *name;
		int *fd;
		bool need, optional; /* optional: pins of an older daemon lack it */
	} m[] = {
		{"sessions", &a->sessions_fd, true},
		{"events", &a->events_fd, true},
		{"lost", &a->lost_fd, true},
		{"net_allow", &a->net_allow_fd, a->st.net || a->st.lsm},
		{"unix_allow", &a->unix_allow_fd, a->st.net},
		{"agg", &a->agg_fd, a->st.audit},
		{"oom_victims", &a->oom_fd, a->st.audit, true},
		{"names", &a->lsm_maps.names, a->st.lsm},
		{"abs_paths", &a->lsm_maps.abs_paths, a->st.lsm},
		{"writable", &a->lsm_maps.writable, a->st.lsm, true},
		{"cmd_rules", &a->cmd_rules_fd, a->st.cmd, true},
	};
	char path[PATH_MAX + 64];

	a->own_fds = true;
	for (size_t i = 0; i < ARRAY_SIZE(m); i++) {
		if (!m[i].need)
			continue;
		pin_path(a->pin_dir, path, sizeof(path), "map", m[i].name);
		*m[i].fd = bpf_obj_get(path);
		if (*m[i].fd < 0 && !m[i].optional)
			return -errno;
	}
	return 0;
}

int agent_open(struct agent **out, const struct agent_opts *o)
{
	struct agent *a = calloc(1, sizeof(*a));
	libbpf_print_fn_t old;
	int r, rn;

	if (!a)
		return -ENOMEM;
	a->sessions_fd = a->events_fd = a->lost_fd = a->net_allow_fd = a->agg_fd = a->oom_fd = -1;
	a->lsm_maps.names = a->lsm_maps.abs_paths = a->lsm_maps.net_allow = -1;
	a->lsm_maps.writable = -1;
	a->unix_allow_fd = -1;
	a->cmd_rules_fd = -1;
	a->parent_fd = cgroup_parent_open(o->cgroup_parent);
	if (a->parent_fd < 0) {
		r = a->parent_fd;
		free(a);
		return r;
	}
	if (o->pin_dir) {
		snprintf(a->pin_dir, sizeof(a->pin_dir), "%s", o->pin_dir);
		r = agent_pin_dir_prepare(a->pin_dir);
		if (r < 0) {
			agent_close(a);
			return r;
		}
	}
	old = libbpf_set_print(libbpf_quiet);
	r = load_audit(a, o);
	if (r)
		why_not(a, "audit programs", r);
	rn = load_net(a, o);
	if (rn)
		why_not(a, "cgroup network programs", rn);
	if (o->cmd_rules) {
		r = load_cmd(a);
		if (r)
			why_not(a, "command rules (exec tracepoint)", r);
	}
	r = load_lsm(a, o);
	if (r == -ENOPKG)
		why_not(a, "BPF LSM (bpf is not in the active LSM list)", ENOPKG);
	else if (r)
		why_not(a, "BPF LSM programs", r);
	libbpf_set_print(old);
	a->st.audit = a->audit || a->st.audit_adopted;
	a->st.net = a->net || a->st.net_adopted;
	a->st.lsm = a->lsm || a->st.lsm_adopted;
	a->st.cmd = a->cmd || a->cmd_adopted;
	if (rn == -EXDEV || (!a->st.audit && !a->st.net)) {
		agent_close(a);
		return rn == -EXDEV ? -EXDEV : -ENOTSUP;
	}
	if (a->pin_dir[0]) {
		r = open_pinned_maps(a);
		if (r < 0) {
			agent_close(a);
			return r;
		}
	} else if (a->audit) {
		a->sessions_fd = bpf_map__fd(a->audit->maps.sessions);
		a->events_fd = bpf_map__fd(a->audit->maps.events);
		a->lost_fd = bpf_map__fd(a->audit->maps.lost);
		a->agg_fd = bpf_map__fd(a->audit->maps.agg);
		a->oom_fd = bpf_map__fd(a->audit->maps.oom_victims);
	} else {
		a->sessions_fd = bpf_map__fd(a->net->maps.sessions);
		a->events_fd = bpf_map__fd(a->net->maps.events);
		a->lost_fd = bpf_map__fd(a->net->maps.lost);
	}
	if (!a->pin_dir[0] && a->net) {
		a->net_allow_fd = bpf_map__fd(a->net->maps.net_allow);
		a->unix_allow_fd = bpf_map__fd(a->net->maps.unix_allow);
	}
	if (!a->pin_dir[0] && a->cmd)
		a->cmd_rules_fd = bpf_map__fd(a->cmd->maps.cmd_rules);
	if (!a->pin_dir[0] && a->lsm) {
		a->lsm_maps = lsm_maps_of(a->lsm);
		if (a->net_allow_fd < 0)
			a->net_allow_fd = a->lsm_maps.net_allow;
	}
	a->lsm_maps.net_allow = a->net_allow_fd;
	a->rb = ring_buffer__new(a->events_fd, o->on_record, o->ctx, NULL);
	if (!a->rb) {
		r = -errno;
		agent_close(a);
		return r;
	}
	*out = a;
	return 0;
}

void agent_detach_cgroup_links(struct agent *a)
{
	const struct bpf_object_skeleton *sk = a && a->net && !a->pin_dir[0] ? a->net->skeleton
									     : NULL;

	for (int i = 0; sk && i < sk->prog_cnt; i++)
		if (*sk->progs[i].link)
			bpf_link__detach(*sk->progs[i].link);
}

void agent_close(struct agent *a)
{
	if (!a)
		return;
	ring_buffer__free(a->rb);
	if (a->pin_dir[0]) {
		if (a->net)
			disconnect_pinned_links(a->net->skeleton);
		if (a->audit)
			disconnect_pinned_links(a->audit->skeleton);
		if (a->lsm)
			disconnect_pinned_links(a->lsm->skeleton);
		if (a->cmd)
			disconnect_pinned_links(a->cmd->skeleton);
	}
	cmd_bpf__destroy(a->cmd);
	lsm_bpf__destroy(a->lsm);
	net_bpf__destroy(a->net);
	audit_bpf__destroy(a->audit);
	if (a->own_fds) {
		int fds[] = {a->sessions_fd,	   a->events_fd,	  a->lost_fd,
			     a->net_allow_fd,	   a->unix_allow_fd,	  a->agg_fd,
			     a->lsm_maps.names,	   a->lsm_maps.abs_paths, a->oom_fd,
			     a->lsm_maps.writable, a->cmd_rules_fd};

		for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
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
	return agent_session_add_egress(a, cgroup_id, id, flags, 0, 0);
}

int agent_session_add_egress(struct agent *a, uint64_t cgroup_id, uint32_t id, uint32_t flags,
			     uint16_t proxy_port, uint16_t dns_port)
{
	struct bpfbox_session s = {
		.id = id, .flags = flags, .seq = 1, .proxy_port = proxy_port, .dns_port = dns_port};

	if (proxy_port && dns_port)
		s.flags |= BPFBOX_SF_NET_PROXY;

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
	if (a->unix_allow_fd >= 0)
		bpf_map_delete_elem(a->unix_allow_fd, &s.id);
	return 0;
}

int agent_net_allow(struct agent *a, uint32_t id, const char *cidr, uint16_t lo, uint16_t hi)
{
	struct lsm_maps m = {.names = -1, .abs_paths = -1, .net_allow = a->net_allow_fd};

	if (a->net_allow_fd < 0)
		return -ENOTSUP;
	/* One map for the cgroup and the LSM programs; metadata stays a hole. */
	return lsm_net_add_rule(m, id, cidr, lo, hi);
}

int agent_net_hole(struct agent *a, uint32_t id, const char *cidr)
{
	/* An empty port range never allows, and the longest prefix wins. */
	struct bpfbox_net_rule hole = {.port_lo = 1, .port_hi = 0};
	struct bpfbox_net_key key;

	if (a->net_allow_fd < 0)
		return -ENOTSUP;
	if (lsm_parse_cidr(cidr, &key) < 0)
		return -EINVAL;
	key.session = id;
	if (bpf_map_update_elem(a->net_allow_fd, &key, &hole, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int agent_session_policy(struct agent *a, uint32_t id, const struct bpfbox_policy *p)
{
	if (!a->st.lsm)
		return 0;
	return lsm_policy_add(a->lsm_maps, id, p, (const char *const *)p->exec_deny.v);
}

int agent_session_lsm(struct agent *a, uint32_t id, const char *const *deny, size_t ndeny,
		      const char *const *exec_deny, size_t nexec, const char **bad)
{
	if (bad)
		*bad = NULL;
	if (!a->st.lsm || (!ndeny && !nexec))
		return 0;
	return lsm_policy_add_lists(a->lsm_maps, id, deny, ndeny, exec_deny, nexec, bad);
}

int agent_session_writable(struct agent *a, uint32_t id, const char *const *dirs, size_t n,
			   struct bpfbox_inode_key *added, size_t *nadded)
{
	if (nadded)
		*nadded = 0;
	/* Adopted programs of an older daemon have no writable map, nor check it. */
	if (!a->st.lsm || a->lsm_maps.writable < 0)
		return 0;
	return lsm_writable_add(a->lsm_maps, id, dirs, n, added, nadded);
}

int agent_session_lsm_remove(struct agent *a, uint32_t id, const char *const *deny, size_t ndeny,
			     const char *const *exec_deny, size_t nexec,
			     const struct bpfbox_inode_key *wkeys, size_t nw)
{
	int r, r2;

	if (!a->st.lsm)
		return 0;
	r = lsm_policy_remove_lists(a->lsm_maps, id, deny, ndeny, exec_deny, nexec);
	r2 = lsm_writable_remove(a->lsm_maps, wkeys, nw);
	return r ? r : r2;
}

uint32_t agent_gap_flags(const struct agent *a, int landlock_abi)
{
	if (!a->st.lsm)
		return 0;
	return BPFBOX_SF_GAP_META | (landlock_abi < 6 ? BPFBOX_SF_GAP_SCOPE : 0) |
	       (landlock_abi < 9 ? BPFBOX_SF_GAP_UNIX : 0);
}

void agent_gaps_filled(char *ne, uint32_t flags)
{
	const char *what = AGENT_GAP_SCOPE_TEXT;
	size_t wlen = strlen(what);
	char *p;

	if (!(flags & BPFBOX_SF_GAP_SCOPE) || !(p = strstr(ne, what)))
		return;
	if (p[wlen] == ';')
		memmove(p, p + wlen + 2, strlen(p + wlen + 2) + 1); /* and its "; " */
	else if (p > ne)
		p[-2] = '\0'; /* the last item: drop the "; " before it */
	else
		p[0] = '\0';
}

int agent_session_lsm_clear(struct agent *a, uint32_t id)
{
	if (!a->st.lsm)
		return 0;
	return lsm_policy_remove(a->lsm_maps, id);
}

int agent_policy_sweep(struct agent *a, bool (*keep)(void *ctx, uint32_t id), void *ctx)
{
	uint32_t key, next;
	bool first = true;
	int n = 0, r;

	if (a->st.lsm) {
		r = lsm_policy_sweep(a->lsm_maps, keep, ctx);
		if (r < 0)
			return r;
		n += r;
	}
	if (a->net_allow_fd >= 0) {
		struct bpfbox_net_key k, nk;

		first = true;
		while (bpf_map_get_next_key(a->net_allow_fd, first ? NULL : &k, &nk) == 0) {
			k = nk;
			first = false;
			if (keep(ctx, k.session))
				continue;
			if (bpf_map_delete_elem(a->net_allow_fd, &k) < 0 && errno != ENOENT)
				return -errno;
			n++;
			first = true;
		}
	}
	if (a->unix_allow_fd >= 0) {
		first = true;
		while (bpf_map_get_next_key(a->unix_allow_fd, first ? NULL : &key, &next) == 0) {
			key = next;
			first = false;
			if (keep(ctx, key))
				continue;
			if (bpf_map_delete_elem(a->unix_allow_fd, &key) < 0 && errno != ENOENT)
				return -errno;
			n++;
			first = true;
		}
	}
	return n;
}

int agent_unix_allow(struct agent *a, uint32_t id, const char *const *dirs, size_t n)
{
	struct bpfbox_unix_allow allow = {0};

	if (a->unix_allow_fd < 0)
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
	if (bpf_map_update_elem(a->unix_allow_fd, &id, &allow, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int agent_egress_fds(const struct agent *a, struct agent_egress_fds *f)
{
	if (!a->net)
		return -ENOTSUP;
	f->orig = bpf_map__fd(a->net->maps.net_orig);
	f->resolved = bpf_map__fd(a->net->maps.net_resolved);
	f->dns_client = bpf_map__fd(a->net->maps.net_dns_client);
	f->emit = bpf_program__fd(a->net->progs.net_emit);
	return f->orig >= 0 && f->resolved >= 0 && f->dns_client >= 0 && f->emit >= 0 ? 0
										      : -ENOTSUP;
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

int agent_oom_victim(struct agent *a, uint32_t id, uint64_t max_age_ns, pid_t *pid, char *comm,
		     size_t size)
{
	struct bpfbox_oom_victim v;
	struct timespec ts;
	uint64_t now;

	if (!a || a->oom_fd < 0 || bpf_map_lookup_elem(a->oom_fd, &id, &v) < 0)
		return -ENOENT;
	bpf_map_delete_elem(a->oom_fd, &id);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	if (!v.pid || v.ts_ns > now || now - v.ts_ns > max_age_ns)
		return -ENOENT;
	*pid = v.pid;
	snprintf(comm, size, "%.*s", (int)sizeof(v.comm), v.comm);
	return 0;
}

struct agg_entry {
	struct bpfbox_agg_key key;
	struct bpfbox_agg_val val;
};

/* Appends one entry of session id to the list; -ENOMEM. */
static int agg_take(struct agg_entry **list, size_t *n, size_t *cap, const struct bpfbox_agg_key *k,
		    const struct bpfbox_agg_val *v)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct agg_entry *l = realloc(*list, c * sizeof(*l));

		if (!l)
			return -ENOMEM;
		*list = l;
		*cap = c;
	}
	(*list)[*n].key = *k;
	(*list)[*n].val = *v;
	(*n)++;
	return 0;
}

/*
 * The entries of session id in the aggregation map, read in batches of 256
 * (Linux 5.6+; a few syscalls for the whole map), else key by key. One pass
 * either way: the map holds every session's entries, and a daemon ending
 * 1,000 sessions reads it 1,000 times.
 */
static int agg_collect(int fd, uint32_t id, struct agg_entry **list, size_t *n)
{
	enum { BATCH = 256 };
	struct bpfbox_agg_key *keys = malloc(BATCH * sizeof(*keys)), key, next;
	struct bpfbox_agg_val *vals = malloc(BATCH * sizeof(*vals)), val;
	uint64_t cursor = 0;
	size_t cap = 0;
	bool first = true, batched = true;
	int r = 0;

	if (!keys || !vals) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		__u32 count = BATCH;

		r = bpf_map_lookup_batch(fd, first ? NULL : &cursor, &cursor, keys, vals, &count,
					 NULL);
		if (r < 0 && errno != ENOENT) {
			batched = !first; /* no batch ops here: walk instead */
			r = first ? 0 : -errno;
			break;
		}
		first = false;
		for (__u32 i = 0; i < count; i++)
			if (keys[i].session == id &&
			    agg_take(list, n, &cap, &keys[i], &vals[i]) < 0) {
				r = -ENOMEM;
				goto out;
			}
		if (r < 0) { /* ENOENT: that was the last batch */
			r = 0;
			break;
		}
	}
	if (batched)
		goto out;
	first = true;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		if (key.session == id && bpf_map_lookup_elem(fd, &key, &val) == 0 &&
		    agg_take(list, n, &cap, &key, &val) < 0) {
			r = -ENOMEM;
			break;
		}
	}
out:
	free(keys);
	free(vals);
	return r;
}

int agent_flush_session(struct agent *a, uint32_t id, uint64_t *seq, agent_record_fn fn, void *ctx)
{
	struct agg_entry *list = NULL;
	size_t count = 0;
	int fd, n = 0, r;

	fd = a->agg_fd;
	if (fd < 0)
		return 0;
	r = agg_collect(fd, id, &list, &count);
	for (size_t i = 0; i < count; i++) {
		const struct agg_entry *en = &list[i];

		if (en->val.count) {
			struct bpfbox_file_event e = {0};

			e.hdr.type = BPFBOX_EV_FILE;
			e.hdr.session = id;
			e.hdr.seq = (*seq)++;
			e.hdr.ts_ns = now_ns();
			e.hdr.pid = en->key.pid;
			e.hdr.tid = en->val.tid;
			e.hdr.ppid = en->val.ppid;
			e.hdr.uid = en->val.uid;
			memcpy(e.hdr.comm, en->val.comm, sizeof(e.hdr.comm));
			e.flags = en->key.flags;
			e.count = en->val.count;
			memcpy(e.path, en->key.path, sizeof(e.path));
			fn(ctx, &e, sizeof(e));
			n++;
		}
		bpf_map_delete_elem(fd, &en->key);
	}
	free(list);
	return r < 0 ? r : n;
}

int agent_session_stats(struct agent *a, uint64_t cgroup_id, uint64_t *seq, uint64_t *lost)
{
	struct bpfbox_session s;

	if (bpf_map_lookup_elem(a->sessions_fd, &cgroup_id, &s) < 0)
		return -errno;
	*seq = s.seq;
	*lost = s.lost;
	return 0;
}

static int sessions_foreach_fd(int fd, agent_session_fn fn, void *ctx)
{
	uint64_t *keys, key, next;
	size_t n = 0;
	int r = 0;

	keys = calloc(BPFBOX_MAX_SESSIONS, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (uint64_t *k = NULL; n < BPFBOX_MAX_SESSIONS && bpf_map_get_next_key(fd, k, &next) == 0;
	     k = &key) {
		key = next;
		keys[n++] = key;
	}
	for (size_t i = 0; i < n && !r; i++) {
		struct bpfbox_session s;

		if (bpf_map_lookup_elem(fd, &keys[i], &s) == 0)
			r = fn(ctx, keys[i], s.id, s.flags);
	}
	free(keys);
	return r;
}

int agent_session_foreach(struct agent *a, agent_session_fn fn, void *ctx)
{
	return sessions_foreach_fd(a->sessions_fd, fn, ctx);
}

int agent_pinned_sessions(const char *pin_dir, agent_session_fn fn, void *ctx)
{
	char path[PATH_MAX + 64];
	int fd, r;

	pin_path(pin_dir, path, sizeof(path), "map", "sessions");
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = sessions_foreach_fd(fd, fn, ctx);
	close(fd);
	return r;
}

int agent_unpin(const char *pin_dir)
{
	DIR *d = opendir(pin_dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) < 0 && !r)
			r = -errno;
	}
	closedir(d);
	if (rmdir(pin_dir) < 0 && errno != ENOENT && !r)
		r = -errno;
	return r;
}

int agent_net_clear(struct agent *a, uint32_t id)
{
	struct bpfbox_net_key key, next;
	bool first = true;

	if (a->net_allow_fd < 0)
		return 0;
	/* Deleting while walking restarts the walk; a session has few rules. */
	while (bpf_map_get_next_key(a->net_allow_fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (key.session != id)
			continue;
		if (bpf_map_delete_elem(a->net_allow_fd, &key) < 0)
			return -errno;
		first = true;
	}
	return 0;
}

int agent_prog_stats(const struct agent *a, agent_prog_fn fn, void *ctx)
{
	DIR *dir;
	struct dirent *de;

	if (!a->pin_dir[0])
		return -ENOENT;
	dir = opendir(a->pin_dir);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		struct bpf_link_info li = {0};
		struct bpf_prog_info pi = {0};
		struct agent_prog_stat st = {0};
		uint32_t ll = sizeof(li), pl = sizeof(pi);
		char path[PATH_MAX + 256];
		int lfd, pfd;

		if (strncmp(de->d_name, "link_", 5))
			continue;
		snprintf(path, sizeof(path), "%s/%s", a->pin_dir, de->d_name);
		lfd = bpf_obj_get(path);
		if (lfd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(lfd, &li, &ll) == 0) {
			pfd = bpf_prog_get_fd_by_id(li.prog_id);
			if (pfd >= 0 && bpf_obj_get_info_by_fd(pfd, &pi, &pl) == 0) {
				/* the program's name in the skeleton (the kernel keeps 15 bytes) */
				snprintf(st.name, sizeof(st.name), "%s", de->d_name + 5);
				st.id = pi.id;
				st.run_time_ns = pi.run_time_ns;
				st.run_cnt = pi.run_cnt;
				st.recursion_misses = pi.recursion_misses;
				fn(ctx, &st);
			}
			if (pfd >= 0)
				close(pfd);
		}
		close(lfd);
	}
	closedir(dir);
	return 0;
}
