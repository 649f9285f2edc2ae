/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Absolute names for relative ones (issue 21): a file record of
 * openat(AT_FDCWD, "rel/x") or of a dirfd carries the directory it was
 * relative to. The directory (the task's cwd, or the file of the dirfd)
 * is walked up its dentries and mounts to the task's root, as d_path()
 * does, into a per-CPU buffer; the relative name follows it. The name is
 * the one the session sees (its root, its mounts). ".." and "." in the
 * relative part are kept as given (userspace folds them: the directory
 * part has none, so folding is exact unless the relative part crosses a
 * symlink).
 */
#ifndef BPFBOX_PATH_BPF_H
#define BPFBOX_PATH_BPF_H

#include "common.bpf.h"

#define PATH_AT_FDCWD -100
#define PATH_HALF     BPFBOX_PATH_LEN /* the directory ends here in the buffer */
#define PATH_DEPTH    64 /* steps (components and mounts) at most; deeper: cut at the top */
#define PATH_NAME_MAX 255

/*
 * [0, PATH_HALF): the directory, written backwards; then "/" and the name.
 * Twice that: every write is at an offset masked to PATH_MASK, which older
 * verifiers (6.1) need to see in the register itself, plus at most
 * PATH_NAME_MAX bytes.
 */
#define PATH_MASK (PATH_HALF * 2 - 1)
struct path_buf {
	/*
	 * The walk's state between bpf_loop's steps lives here, not on the
	 * stack: what is read back from a map is a plain unknown value to the
	 * verifier, so its checks of the steps converge at once (on the stack
	 * it tracked each step's exact range: 40x the instructions to verify).
	 */
	__u64 d;    /* struct dentry * */
	__u64 vmnt; /* struct vfsmount * */
	__u64 root_d, root_mnt;
	__u64 pos; /* where the directory starts in b */
	char b[PATH_HALF * 4];
};

/* Keeps the compiler from dropping a mask it knows to be a no-op. */
#define path_opaque(x) asm volatile("" : "+r"(x))

BPFBOX_MAP(path_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, struct path_buf);

/* The directory a relative name of the current task is relative to. */
static __always_inline bool path_base(int dirfd, struct path *out)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct file **fds, *f = NULL;
	unsigned int max;

	if (dirfd == PATH_AT_FDCWD) {
		struct fs_struct *fs = BPF_CORE_READ(task, fs);

		bpf_probe_read_kernel(out, sizeof(*out), &fs->pwd);
		return true;
	}
	max = BPF_CORE_READ(task, files, fdt, max_fds);
	if (dirfd < 0 || (unsigned int)dirfd >= max)
		return false;
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[dirfd]) || !f)
		return false;
	bpf_probe_read_kernel(out, sizeof(*out), &f->f_path);
	return true;
}

/*
 * One component, from the deepest up: 0 on to the next, 1 done. A
 * bpf_loop callback is verified once; a loop or an unrolled walk is
 * verified along every path through it, which took seconds at each load.
 */
static long path_step(__u64 i, void *arg)
{
	struct dentry *d, *parent;
	struct vfsmount *vmnt;
	struct path_buf *w;
	struct qstr q;
	__u32 zero = 0;
	__u64 len, off;

	w = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!w || (w->d == w->root_d && w->vmnt == w->root_mnt))
		return 1;
	d = (struct dentry *)w->d;
	vmnt = (struct vfsmount *)w->vmnt;
	if (d == BPF_CORE_READ(vmnt, mnt_root)) {
		/* The top of a mount: on to where it is mounted. */
		struct mount *m = container_of(vmnt, struct mount, mnt);
		struct mount *mp = BPF_CORE_READ(m, mnt_parent);

		if (mp == m)
			return 1;
		w->d = (__u64)BPF_CORE_READ(m, mnt_mountpoint);
		w->vmnt = (__u64)&mp->mnt;
		return 0;
	}
	parent = BPF_CORE_READ(d, d_parent);
	if (parent == d)
		return 1;
	bpf_probe_read_kernel(&q, sizeof(q), &d->d_name);
	len = q.len & PATH_NAME_MAX;
	if (len + 1 > w->pos)
		return 1; /* too long: the name keeps its deepest part */
	off = w->pos - len;
	path_opaque(off);
	bpf_probe_read_kernel(w->b + (off & PATH_MASK), len, q.name);
	off -= 1;
	path_opaque(off);
	w->b[off & PATH_MASK] = '/';
	w->pos = off;
	w->d = (__u64)parent;
	return 0;
}

/*
 * The name at user address name (0: the dirfd's own file) made absolute,
 * into path_scratch: returns the offset in its buffer where the
 * NUL-terminated name starts (an absolute name is copied as it is), or -1.
 * A global function: the verifier checks it once per program, apart from
 * the paths of its caller (inlined, every exit program paid for it twice).
 */
__attribute__((noinline)) int path_resolve(__u64 name, int dirfd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fs_struct *fs;
	struct path base, root;
	struct path_buf *pb;
	__u32 zero = 0;
	__u64 pos;
	char first = 0;

	pb = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!pb)
		return -1;
	if (name)
		bpf_probe_read_user(&first, 1, (void *)name);
	if (first == '/') {
		bpf_probe_read_user_str(pb->b + PATH_HALF, BPFBOX_PATH_LEN, (void *)name);
		return PATH_HALF;
	}
	if (!first)
		name = 0; /* "" with AT_EMPTY_PATH, or none: the dirfd's own file */
	if (!name && dirfd < 0)
		return -1;
	if (!path_base(dirfd, &base))
		return -1;
	fs = BPF_CORE_READ(task, fs);
	bpf_probe_read_kernel(&root, sizeof(root), &fs->root);
	pb->d = (__u64)base.dentry;
	pb->vmnt = (__u64)base.mnt;
	pb->root_d = (__u64)root.dentry;
	pb->root_mnt = (__u64)root.mnt;
	pb->pos = PATH_HALF;
	bpf_loop(PATH_DEPTH, path_step, NULL, 0);
	pos = pb->pos;
	/* The root itself: "/" then the name. */
	if (pos == PATH_HALF) {
		pos -= 1;
		pb->b[PATH_HALF - 1] = '/';
	}
	pb->b[PATH_HALF] = '\0';
	if (name) {
		pb->b[PATH_HALF] = '/';
		bpf_probe_read_user_str(pb->b + PATH_HALF + 1, PATH_NAME_MAX, (void *)name);
		if (pos == PATH_HALF - 1)
			pos++; /* "/" + "/name": one slash */
	}
	if (pos > PATH_HALF)
		return -1;
	return (int)pos;
}

/* The name path_resolve() put at off, for bpf_probe_read_kernel_str(). */
static __always_inline const char *path_at(int off)
{
	struct path_buf *pb;
	__u32 zero = 0;

	if (off < 0)
		return NULL;
	pb = bpf_map_lookup_elem(&path_scratch, &zero);
	return pb ? pb->b + (off & PATH_MASK) : NULL;
}

#endif
