// SPDX-License-Identifier: GPL-2.0
/*
 * BPF LSM enforcement for the tasks of a session. Tasks outside every
 * session return at once (one hash lookup). Inside one:
 *
 *   file_open             credential files by name and by absolute path
 *   path_rename/path_link moving or linking them out from under their names
 *   bprm_check_security   exec of listed binaries, by name or path; command
 *                         rules that need no argv (bpf/cmd.bpf.h)
 *   mmap_file             the same binaries mapped executable by hand
 *   socket_connect        connect allow-list, cloud metadata, daemon socket
 *   socket_sendmsg        the same for datagrams and TCP fast open
 *   unix_stream_connect   the daemon socket under any other path to it;
 *   unix_may_send         with what the session's Landlock ABI lacks: abstract
 *                         sockets of other cgroups (ABI < 6), pathname sockets
 *                         outside the writable set, by inode (ABI < 9)
 *   task_kill             signals to tasks outside the session (ABI < 6)
 *   path_chmod/path_chown metadata changes outside the writable set
 *   inode_setattr         utimes (and mode, owner) outside it
 *   inode_setxattr/inode_removexattr  the same for extended attributes
 *
 * A denial returns -EPERM and leaves one record (layer BPF_LSM). On an
 * overlay, overlayfs's own calls on its layers' files are not judged again
 * (bpf/lsm_ovl.bpf.h). The file rules are judged in bpf/lsm_file.bpf.h; the maps and the pattern
 * compilation are in docs/lsm.md and userspace/agent/lsm_policy.c.
 */
#include "cmd.bpf.h"
#include "net.bpf.h"
#include "lsm_file.bpf.h"
#include "lsm_ovl.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define AF_UNIX	 1
#define AF_INET	 2
#define AF_INET6 10

#define UNIX_PATH_LEN 108
#define SUN_PATH_OFF  2 /* offsetof(struct sockaddr_un, sun_path) */

/* The daemon's socket, set before load; empty: no AF_UNIX checks. */
const volatile char daemon_socket[UNIX_PATH_LEN] = {};

/*
 * The session of a hook's task, or NULL: when an earlier LSM refused
 * already (ret, which the hook then returns as it is: 0 outside every
 * session) or the task is in no session.
 */
static __always_inline struct bpfbox_session *hook_session(int ret)
{
	return ret ? NULL : current_session();
}

/*
 * A file record of op (enum bpfbox_file_op): the path from d_path when
 * file is given (file_open), else from the chain (w may be NULL when no
 * scratch slot was free). The audit exit program leaves these EPERMs to it.
 */
static __always_inline void report_file(struct bpfbox_session *s, struct scratch *w,
					struct file *file, __u32 flags, __u32 op)
{
	struct bpfbox_file_event *e;

	e = deny_reserve(s, sizeof(*e), BPFBOX_EV_FILE, BPFBOX_LAYER_BPF_LSM);
	if (!e)
		return;
	e->flags = flags;
	e->count = 1;
	e->op = op;
	e->pad = 0;
	e->path[0] = 0;
	if (file && bpf_d_path((struct path *)&file->f_path, e->path, sizeof(e->path)) > 0) {
		bpf_ringbuf_submit(e, 0);
		return;
	}
	if (w) {
		chain_path(w);
		bpf_probe_read_kernel(e->path, sizeof(e->path), w->path);
	}
	bpf_ringbuf_submit(e, 0);
}

/*
 * The verdict of a file hook on op (enum bpfbox_file_op): on the file
 * opened (file_open: file, its dentry and mount read once the task is
 * known to be in a session), or on d (on vm) and d2 (on vm2, may be NULL),
 * the names a rename or a link moves. 0, or -EPERM recorded.
 */
static __always_inline int check_file(int ret, struct file *file, struct dentry *d,
				      struct vfsmount *vm, struct dentry *d2, struct vfsmount *vm2,
				      __u32 op)
{
	struct bpfbox_session *s = hook_session(ret);
	struct scratch *w;
	bool deny = true; /* every slot busy: cannot check, so fail closed */

	if (!s)
		return ret;
	if (file) {
		/* Overlayfs opening a layer's file: its overlay file was judged. */
		if (ovl_internal())
			return 0;
		d = BPF_CORE_READ(file, f_path.dentry);
		vm = BPF_CORE_READ(file, f_path.mnt);
		ovl_note(d);
	}
	w = scratch_get();
	if (w)
		deny = dentry_denied(w, s->id, d, vm, op != BPFBOX_FILE_OPEN) ||
		       (d2 && dentry_denied(w, s->id, d2, vm2, true));
	if (deny)
		report_file(s, w, file, file ? BPF_CORE_READ(file, f_flags) : 0, op);
	if (w)
		scratch_put(w);
	return lsm_verdict(deny);
}

SEC("lsm/file_open")
int BPF_PROG(bpfbox_file_open, struct file *file, int ret)
{
	return check_file(ret, file, NULL, NULL, NULL, NULL, BPFBOX_FILE_OPEN);
}

/*
 * Renaming .env to notes.txt, or .ssh to x, would take a file out of its
 * rule; renaming something to a denied name would write a denied file.
 * Only the first four arguments: 6.1 has no flags (an exchange calls the
 * hook twice).
 */
SEC("lsm/path_rename")
int BPF_PROG(bpfbox_path_rename, const struct path *old_dir, struct dentry *old_dentry,
	     const struct path *new_dir, struct dentry *new_dentry)
{
	struct vfsmount *old_mnt = BPF_CORE_READ(old_dir, mnt);
	struct vfsmount *new_mnt = BPF_CORE_READ(new_dir, mnt);

	return check_file(0, NULL, old_dentry, old_mnt, new_dentry, new_mnt, BPFBOX_FILE_RENAME);
}

/* A hard link is a second name for a denied file. */
SEC("lsm/path_link")
int BPF_PROG(bpfbox_path_link, struct dentry *old_dentry, const struct path *new_dir,
	     struct dentry *new_dentry, int ret)
{
	struct vfsmount *vm = BPF_CORE_READ(new_dir, mnt);

	return check_file(ret, NULL, old_dentry, vm, new_dentry, vm, BPFBOX_FILE_LINK);
}

/* An exec_deny refusal: the record names the file (name, kernel memory). */
static __always_inline void report_exec(struct bpfbox_session *s, const void *name)
{
	struct bpfbox_exec_event *e;

	e = deny_reserve(s, sizeof(*e), BPFBOX_EV_EXEC, BPFBOX_LAYER_BPF_LSM);
	if (!e)
		return;
	e->argv_len = 0;
	e->argv_truncated = 0;
	e->argv[0] = 0;
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), name);
	bpf_ringbuf_submit(e, 0);
}

/*
 * Command rules at the exec (docs/config.md "Command rules"): argv is not
 * readable yet (it is in the new mm from sched_process_exec on), so only
 * rules without an argv pattern are judged here, in their order. The first
 * whose executable matches decides when it has no pattern: a deny refuses
 * the exec. One with a pattern cannot be judged: a deny one is passed over
 * (the outcome is a deny whether it matches or not), an allow or ask one
 * leaves the exec to bpf/cmd.bpf.c. Returns 1 when refused (and recorded).
 */
static __noinline int cmd_refused(struct bpfbox_session *s, struct cmd_exe *x, __u64 binprm)
{
	struct linux_binprm *bprm = (struct linux_binprm *)binprm;
	struct cmd_walk c = {.x = x, .noargv = 1};
	struct bpfbox_exec_event *e;
	struct bpfbox_cmd_rule *r;
	__u32 id;

	if (!s || !x)
		return 0;
	id = s->id;
	c.t = bpf_map_lookup_elem(&cmd_rules, &id);
	if (!c.t)
		return 0;
	bpf_probe_read_kernel_str(x->path, sizeof(x->path), BPF_CORE_READ(bprm, filename));
	x->target[0] = '\0';
	bpf_probe_read_kernel_str(x->target, sizeof(x->target),
				  BPF_CORE_READ(bprm, file, f_path.dentry, d_name.name));
	cmd_exe_hash(x);
	cmd_walk_rules(&c);
	if (c.hit < 0)
		return 0;
	r = &c.t->r[c.hit & (BPFBOX_CMD_RULES_MAX - 1)];
	if (r->action != BPFBOX_CMD_DENY)
		return 0;
	e = cmd_report(s, x, r, BPFBOX_LAYER_BPF_LSM, 0);
	if (e)
		bpf_ringbuf_submit(e, 0);
	return 1;
}

/*
 * An exec of file by name: the binary's own name (a symlink resolved) and,
 * for an exec (bprm), the name it was called by (a symlink's name, e.g. a
 * busybox applet); by path; then the command rules. bprm NULL: file is
 * mapped executable. 0, or -EPERM recorded.
 */
static __always_inline int check_exec(int ret, struct file *file, struct linux_binprm *bprm)
{
	struct bpfbox_session *s = hook_session(ret);
	struct scratch *w;
	struct dentry *d;
	bool deny = true, refused = false;

	if (!s)
		return ret;
	if (bprm)
		file = BPF_CORE_READ(bprm, file);
	d = BPF_CORE_READ(file, f_path.dentry);
	w = scratch_get();
	if (w) {
		deny = (read_name(w->key.name, d) && name_denied(w, s->id, BPFBOX_NAME_EXEC)) ||
		       (bprm && interp_name(w, (__u64)BPF_CORE_READ(bprm, interp)) &&
			name_denied(w, s->id, BPFBOX_NAME_EXEC)) ||
		       exec_path_denied(w, s->id, d, BPF_CORE_READ(file, f_path.mnt));
		/* cmd_refused() records its own refusal. */
		refused = !deny && bprm && (s->flags & BPFBOX_SF_CMD_RULES) &&
			  cmd_refused(s, &w->cmd, (__u64)bprm);
		scratch_put(w);
	}
	if (deny)
		report_exec(s, bprm ? (const void *)BPF_CORE_READ(bprm, interp)
				    : (const void *)BPF_CORE_READ(d, d_name.name));
	return lsm_verdict(deny || refused);
}

/* Called again for a script's interpreter, and so are the command rules. */
SEC("lsm/bprm_check_security")
int BPF_PROG(bpfbox_bprm_check, struct linux_binprm *bprm, int ret)
{
	return check_exec(ret, NULL, bprm);
}

#define PROT_EXEC 0x4

/*
 * A listed binary mapped executable without an exec of it, as
 * "ld.so /usr/bin/curl" does: the same names and paths as
 * bprm_check_security.
 */
SEC("lsm/mmap_file")
int BPF_PROG(bpfbox_mmap_file, struct file *file, unsigned long reqprot, unsigned long prot,
	     unsigned long flags, int ret)
{
	if (!file || !(prot & PROT_EXEC))
		return ret;
	return check_exec(ret, file, NULL);
}

/*
 * An allow rule first (a metadata address is only covered by a rule for
 * exactly that address: userspace puts a hole there under wider rules),
 * then the metadata deny, then the session's network flag.
 */
static __always_inline bool inet_denied(struct bpfbox_session *s, const __u8 *addr, __u16 port)
{
	if (net_allowed_by_rule(s->id, addr, port))
		return false;
	if (net_is_metadata(addr))
		return !(s->flags & BPFBOX_SF_ALLOW_META);
	return s->flags & BPFBOX_SF_NET_DENY;
}

static __always_inline void report_connect(struct bpfbox_session *s, __u16 family, const __u8 *addr,
					   __u16 port, __u32 protocol, const char *unix_path)
{
	struct bpfbox_connect_event *e =
		net_deny_record(s, BPFBOX_LAYER_BPF_LSM, family, addr, port, protocol);

	if (!e)
		return;
	if (unix_path)
		bpf_probe_read_kernel_str(e->unix_path, sizeof(e->unix_path), unix_path);
	bpf_ringbuf_submit(e, 0);
}

/*
 * Name rules (docs/network.md): what the cgroup programs send to the
 * session's resolver or proxy, which decide. The LSM hook sees the address
 * before the redirect: DNS, the proxy itself, addresses the resolver gave.
 */
static __always_inline bool proxied(struct bpfbox_session *s, const __u8 *addr, __u16 port,
				    __u16 protocol)
{
	if (!(s->flags & BPFBOX_SF_NET_PROXY))
		return false;
	if (protocol == IPPROTO_UDP && port == 53)
		return true;
	if (protocol != IPPROTO_TCP || net_is_metadata(addr))
		return false;
	if (addr[10] == 0xff && addr[11] == 0xff && addr[12] == 127 && addr[13] == 0 &&
	    addr[14] == 0 && addr[15] == 1 && port == s->proxy_port)
		return true;
	return net_was_resolved(s->id, addr);
}

/* An AF_INET or AF_INET6 destination; 0 or -EPERM. */
static __always_inline int check_inet(struct bpfbox_session *s, struct socket *sock, void *sa,
				      int addrlen)
{
	__u16 family = BPF_CORE_READ((struct sockaddr *)sa, sa_family);
	__u8 addr[16] = {};
	__u16 port;

	if (family == AF_INET) {
		struct sockaddr_in sin;

		/* Shorter addresses fail with EINVAL in the kernel. */
		if (addrlen < (int)sizeof(sin))
			return 0;
		bpf_probe_read_kernel(&sin, sizeof(sin), sa);
		addr[10] = 0xff;
		addr[11] = 0xff;
		__builtin_memcpy(&addr[12], &sin.sin_addr.s_addr, 4);
		port = bpf_ntohs(sin.sin_port);
	} else if (family == AF_INET6) {
		struct sockaddr_in6 sin6;

		if (addrlen < 24) /* SIN6_LEN_RFC2133 */
			return 0;
		bpf_probe_read_kernel(&sin6, sizeof(sin6), sa);
		__builtin_memcpy(addr, &sin6.sin6_addr, 16);
		port = bpf_ntohs(sin6.sin6_port);
	} else {
		return 0; /* AF_UNSPEC disconnects; others are EAFNOSUPPORT */
	}
	if (!inet_denied(s, addr, port) || own_loopback(s, sock, addr) ||
	    proxied(s, addr, port, BPF_CORE_READ(sock, sk, sk_protocol)))
		return 0;
	report_connect(s, family, addr, port, BPF_CORE_READ(sock, sk, sk_protocol), NULL);
	return -EPERM;
}

/* path (len bytes, maybe without a NUL) is the daemon's socket. */
static __always_inline bool is_daemon_socket(const char *path, __u32 len)
{
	for (__u32 i = 0; i < UNIX_PATH_LEN; i++) {
		char c = i < len ? path[i] : 0;

		if (c != daemon_socket[i])
			return false;
		if (!c)
			return true;
	}
	return true;
}

static __always_inline __u16 sock_family(struct socket *sock)
{
	return BPF_CORE_READ(sock, sk, __sk_common.skc_family);
}

SEC("lsm/socket_connect")
int BPF_PROG(bpfbox_socket_connect, struct socket *sock, struct sockaddr *address, int addrlen,
	     int ret)
{
	struct bpfbox_session *s = hook_session(ret);
	__u16 family;

	if (!s)
		return ret;
	family = sock_family(sock);
	if (family == AF_INET || family == AF_INET6)
		return check_inet(s, sock, address, addrlen);
	if (family == AF_UNIX && daemon_socket[0] && addrlen > SUN_PATH_OFF) {
		char path[UNIX_PATH_LEN];

		bpf_probe_read_kernel(path, sizeof(path), (void *)address + SUN_PATH_OFF);
		if (is_daemon_socket(path, addrlen - SUN_PATH_OFF)) {
			report_connect(s, AF_UNIX, NULL, 0, 0, path);
			return -EPERM;
		}
	}
	return 0;
}

/* sendto/sendmsg with a destination: UDP, and TCP fast open. */
SEC("lsm/socket_sendmsg")
int BPF_PROG(bpfbox_socket_sendmsg, struct socket *sock, struct msghdr *msg, int size, int ret)
{
	struct bpfbox_session *s = hook_session(ret);
	void *name;
	__u16 family;

	if (!s)
		return ret;
	name = BPF_CORE_READ(msg, msg_name);
	family = sock_family(sock);
	if (!name || (family != AF_INET && family != AF_INET6))
		return 0;
	return check_inet(s, sock, name, BPF_CORE_READ(msg, msg_namelen));
}

/* The cgroup (v2) id of the task that created sk. */
static __always_inline __u64 sock_cgroup_id(struct sock *sk)
{
	return BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
}

/*
 * A connect or send from the session to the unix socket other: the
 * daemon's socket under any name (the listener's own bound name decides),
 * and what the session's Landlock ABI cannot mediate: an abstract socket
 * of another cgroup (ABI < 6), a pathname socket outside the writable set
 * (ABI < 9). 0 or -EPERM.
 */
static __always_inline int check_unix_peer(struct bpfbox_session *s, struct sock *other)
{
	struct unix_address *a = BPF_CORE_READ((struct unix_sock *)other, addr);
	struct dentry *d = BPF_CORE_READ((struct unix_sock *)other, path.dentry);
	char path[128] = {}; /* UNIX_PATH_LEN, rounded to a mask for the verifier */
	__u32 n;
	int len;

	if (!a)
		return 0; /* unnamed: reached only through a passed fd */
	len = BPF_CORE_READ(a, len);
	if (len <= SUN_PATH_OFF)
		return 0;
	/* The name has len - 2 bytes; an abstract one holds no NUL of its own. */
	n = len - SUN_PATH_OFF;
	if (n > UNIX_PATH_LEN - 1)
		n = UNIX_PATH_LEN - 1;
	/* A bound the compiler cannot drop (it knows n < 108; 6.1 must see it). */
	asm volatile("%[n] &= 127" : [n] "+r"(n));
	bpf_probe_read_kernel(path, n,
			      (void *)a + bpf_core_field_offset(struct unix_address, name) +
				      SUN_PATH_OFF);
	if (daemon_socket[0] && is_daemon_socket(path, len - SUN_PATH_OFF))
		goto deny;
	if (!path[0]) {
		if ((s->flags & BPFBOX_SF_GAP_SCOPE) &&
		    sock_cgroup_id(other) != bpf_get_current_cgroup_id()) {
			path[0] = '@'; /* abstract: shown as @name */
			goto deny;
		}
		return 0;
	}
	/* No free scratch slot: not known to be writable, so denied. */
	if ((s->flags & BPFBOX_SF_GAP_UNIX) && d && !writable_now(s->id, d))
		goto deny;
	return 0;
deny:
	report_connect(s, AF_UNIX, NULL, 0, 0, path);
	return -EPERM;
}

SEC("lsm/unix_stream_connect")
int BPF_PROG(bpfbox_unix_stream_connect, struct sock *sock, struct sock *other, struct sock *newsk,
	     int ret)
{
	struct bpfbox_session *s = hook_session(ret);

	return s ? check_unix_peer(s, other) : ret;
}

/* Datagrams: sendto/sendmsg, and connect of a datagram socket. */
SEC("lsm/unix_may_send")
int BPF_PROG(bpfbox_unix_may_send, struct socket *sock, struct socket *other, int ret)
{
	struct bpfbox_session *s = hook_session(ret);

	return s ? check_unix_peer(s, BPF_CORE_READ(other, sk)) : ret;
}

/*
 * Signals to tasks of other cgroups where Landlock has no signal scope.
 * No record: the audit stream has no signal event yet (docs/lsm.md).
 */
SEC("lsm/task_kill")
int BPF_PROG(bpfbox_task_kill, struct task_struct *p, struct kernel_siginfo *info, int sig,
	     const struct cred *cred, int ret)
{
	struct bpfbox_session *s = hook_session(ret);

	if (!s || !(s->flags & BPFBOX_SF_GAP_SCOPE))
		return ret;
	if (BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id) == bpf_get_current_cgroup_id())
		return 0;
	return -EPERM;
}

/*
 * Metadata (mode, owner, extended attributes) of a file outside the
 * writable set: Landlock has no right for it, so this is the second wall
 * behind the read-only mounts. The file: path, or d when the hook has no
 * mount (the record's path is then relative to the file system's root).
 */
static __always_inline int check_meta(int ret, const struct path *path, struct dentry *d, __u32 op)
{
	struct bpfbox_session *s = hook_session(ret);
	struct vfsmount *mnt = NULL;
	struct scratch *w;

	if (!s || !(s->flags & BPFBOX_SF_GAP_META))
		return ret;
	if (path) {
		d = BPF_CORE_READ(path, dentry);
		mnt = BPF_CORE_READ(path, mnt);
	}
	/* Overlayfs changing a layer's file (lsm_ovl.bpf.h): judged on the overlay's. */
	if (ovl_internal())
		return 0;
	ovl_note(d);
	w = scratch_get();
	/* No free scratch slot: cannot check, so fail closed. */
	if (w && under_writable(w, s->id, (__u64)d)) {
		scratch_put(w);
		return 0;
	}
	if (w) {
		if (!mnt)
			mnt = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), fs,
					    root.mnt);
		chain_collect(w, (__u64)d, (__u64)mnt);
	}
	report_file(s, w, NULL, 0, op);
	if (w)
		scratch_put(w);
	return -EPERM;
}

SEC("lsm/path_chmod")
int BPF_PROG(bpfbox_path_chmod, const struct path *path, umode_t mode, int ret)
{
	return check_meta(ret, path, NULL, BPFBOX_FILE_CHMOD);
}

SEC("lsm/path_chown")
int BPF_PROG(bpfbox_path_chown, const struct path *path, unsigned long long uid,
	     unsigned long long gid, int ret)
{
	return check_meta(ret, path, NULL, BPFBOX_FILE_CHOWN);
}

/* utimes (and chmod/chown once more): what changes a file's metadata. */
#define META_ATTRS                                                                               \
	(1U << 0 /* ATTR_MODE */ | 1U << 1 /* UID */ | 1U << 2 /* GID */ | 1U << 4 /* ATIME */ | \
	 1U << 5 /* MTIME */ | 1U << 7 /* ATIME_SET */ | 1U << 8 /* MTIME_SET */ |               \
	 1U << 16 /* TIMES_SET */)

static __always_inline int check_setattr(int ret, struct dentry *d, struct iattr *attr)
{
	__u32 valid, op;

	if (ret)
		return ret;
	valid = BPF_CORE_READ(attr, ia_valid);
	if (!(valid & META_ATTRS))
		return 0; /* a truncate: Landlock's right */
	/* UID or GID: a chown (it may drop set-id bits too); MODE: a chmod; else a utimes. */
	op = valid & 1 ? BPFBOX_FILE_CHMOD : BPFBOX_FILE_UTIMES;
	return check_meta(0, NULL, d, valid & 6 ? BPFBOX_FILE_CHOWN : op);
}

/*
 * inode_setattr took (dentry, attr) before 6.3 and (idmap, dentry, attr)
 * since: one program per layout, the agent loads the one the kernel's BTF
 * has (mnt_idmap exists from 6.3 on).
 */
SEC("lsm/inode_setattr")
int BPF_PROG(bpfbox_inode_setattr, void *idmap, struct dentry *dentry, struct iattr *attr, int ret)
{
	return check_setattr(ret, dentry, attr);
}

SEC("lsm/inode_setattr")
int BPF_PROG(bpfbox_inode_setattr_61, struct dentry *dentry, struct iattr *attr, int ret)
{
	return check_setattr(ret, dentry, attr);
}

/* The dentry is the second argument before and after 6.3 (mnt_idmap). */
SEC("lsm/inode_setxattr")
int BPF_PROG(bpfbox_inode_setxattr, void *idmap, struct dentry *dentry)
{
	return check_meta(0, NULL, dentry, BPFBOX_FILE_SETXATTR);
}

SEC("lsm/inode_removexattr")
int BPF_PROG(bpfbox_inode_removexattr, void *idmap, struct dentry *dentry)
{
	return check_meta(0, NULL, dentry, BPFBOX_FILE_REMOVEXATTR);
}
