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
#define PATH_DEPTH    32	      /* components walked at most; deeper: cut at the top */
#define PATH_NAME_MAX 255

/* [0, PATH_HALF): the directory, written backwards; then "/" and the name. */
struct path_buf {
	char b[PATH_HALF * 2];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct path_buf);
} path_scratch SEC(".maps");

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
 * The absolute name of the relative name at user address name (0: the
 * dirfd's own file), in a per-CPU buffer that holds it until the next
 * call on this CPU; NULL when it cannot be made.
 */
static __always_inline const char *path_absolute(__u64 name, int dirfd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fs_struct *fs;
	struct path base, root;
	struct dentry *d, *parent, *mnt_root;
	struct vfsmount *vmnt;
	struct mount *m, *mp;
	struct path_buf *pb;
	__u32 zero = 0, pos = PATH_HALF;

	pb = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!pb || !path_base(dirfd, &base))
		return NULL;
	fs = BPF_CORE_READ(task, fs);
	bpf_probe_read_kernel(&root, sizeof(root), &fs->root);
	d = base.dentry;
	vmnt = base.mnt;
	for (int i = 0; i < PATH_DEPTH; i++) {
		struct qstr q;
		__u32 len;

		if (d == root.dentry && vmnt == root.mnt)
			break;
		mnt_root = BPF_CORE_READ(vmnt, mnt_root);
		if (d == mnt_root) {
			/* The top of a mount: on to where it is mounted. */
			m = container_of(vmnt, struct mount, mnt);
			mp = BPF_CORE_READ(m, mnt_parent);
			if (mp == m)
				break;
			d = BPF_CORE_READ(m, mnt_mountpoint);
			vmnt = &mp->mnt;
			continue;
		}
		parent = BPF_CORE_READ(d, d_parent);
		if (parent == d)
			break;
		bpf_probe_read_kernel(&q, sizeof(q), &d->d_name);
		len = q.len & PATH_NAME_MAX;
		if (len + 1 > pos)
			break; /* too long: the name keeps its deepest part */
		pos -= len;
		if (pos > PATH_HALF)
			break;
		bpf_probe_read_kernel(pb->b + pos, len, q.name);
		pos -= 1;
		if (pos >= PATH_HALF)
			break;
		pb->b[pos] = '/';
		d = parent;
	}
	/* The root itself: "/" then the name. */
	if (pos == PATH_HALF) {
		pos -= 1;
		pb->b[pos] = '/';
	}
	pb->b[PATH_HALF] = '\0';
	if (name) {
		pb->b[PATH_HALF] = '/';
		bpf_probe_read_user_str(pb->b + PATH_HALF + 1, PATH_NAME_MAX, (void *)name);
		if (pos == PATH_HALF - 1)
			pos++; /* "/" + "/name": one slash */
	}
	if (pos > PATH_HALF)
		return NULL;
	return pb->b + pos;
}

#endif
