/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Overlayfs's own work on its layers (docs/lsm.md "Overlayfs"). A call on
 * an overlay file reaches the LSM hooks twice: once for the overlay's file
 * (the path the session sees), then, inside overlayfs, for the file of a
 * layer: the backing file it opens (file_open; since 6.8 its f_path is the
 * layer's), the upper file whose mode, owner, times or xattrs it changes
 * (inode_setattr, inode_setxattr), the temporary file of a copy-up in its
 * work directory. Those layer files lie outside the writable set (another
 * super block, another inode), so the metadata checks refused chmod,
 * touch -d, a rewrite with O_TRUNC and every copy-up on an overlay root.
 *
 * Overlayfs does that work with its mounter's credentials
 * (ovl_override_creds: current->cred is the overlay's creator_cred while
 * current->real_cred stays the task's). The overlay's own call has been
 * judged already, so a hook skips a call made with an overlay's creator
 * credentials. No task can make its own credentials that object: io_uring's
 * personalities and the other overrides use the task's own credentials.
 * The credentials are learnt from the overlay's files the session's hooks
 * see first (ovl_note), kept with the overlay's super block, and checked
 * again against it at each use: a freed and reused cred address does not
 * match an overlay that no longer holds it.
 */
#ifndef BPFBOX_LSM_OVL_BPF_H
#define BPFBOX_LSM_OVL_BPF_H

#include "common.bpf.h"

#define OVERLAYFS_SUPER_MAGIC 0x794c7630

/* An overlay's creator_cred (struct cred *) -> its struct super_block *. */
BPFBOX_MAP(ovl_creds, BPF_MAP_TYPE_LRU_HASH, 1024, 0, __u64, __u64);

/*
 * The mounter's credentials of the overlay sb, or 0: not an overlay, or
 * overlayfs's BTF (a module's, /sys/kernel/btf/overlay) was not there when
 * the programs loaded (then this check is dead code and the layer's calls
 * are judged as before).
 */
static __always_inline __u64 ovl_creator(struct super_block *sb)
{
	struct ovl_fs *ofs;

	if (!bpf_core_field_exists(struct ovl_fs, creator_cred))
		return 0;
	if (!sb || BPF_CORE_READ(sb, s_magic) != OVERLAYFS_SUPER_MAGIC)
		return 0;
	ofs = BPF_CORE_READ(sb, s_fs_info);
	return ofs ? (__u64)BPF_CORE_READ(ofs, creator_cred) : 0;
}

/*
 * The root of the upper layer of the overlay sb, or NULL: not an overlay,
 * one without an upper layer, or no overlayfs BTF at load. A change set's
 * overlay is the session's workspace: its files lie in the writable set
 * when its upper does (under_writable, lsm_file.bpf.h).
 */
static __always_inline struct dentry *ovl_upper_root(struct super_block *sb)
{
	struct ovl_layer *layers;
	struct ovl_fs *ofs;

	if (!bpf_core_field_exists(struct ovl_fs, layers))
		return NULL;
	if (!sb || BPF_CORE_READ(sb, s_magic) != OVERLAYFS_SUPER_MAGIC)
		return NULL;
	ofs = BPF_CORE_READ(sb, s_fs_info);
	if (!ofs)
		return NULL;
	layers = (struct ovl_layer *)BPF_CORE_READ(ofs, layers);
	/* layers[0] is the upper layer (its mnt NULL when there is none). */
	return layers ? BPF_CORE_READ(layers, mnt, mnt_root) : NULL;
}

/* d (a dentry the session's call names) is an overlay's: learn its mounter. */
static __always_inline void ovl_note(struct dentry *d)
{
	struct super_block *sb = BPF_CORE_READ(d, d_sb);
	__u64 cred = ovl_creator(sb), v = (__u64)sb;

	if (cred && !bpf_map_lookup_elem(&ovl_creds, &cred))
		bpf_map_update_elem(&ovl_creds, &cred, &v, BPF_ANY);
}

/* The current task runs overlayfs's work on a layer (see above). */
static __always_inline bool ovl_internal(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u64 cred = (__u64)BPF_CORE_READ(t, cred);
	__u64 *sb;

	if (cred == (__u64)BPF_CORE_READ(t, real_cred))
		return false;
	sb = bpf_map_lookup_elem(&ovl_creds, &cred);
	return sb && ovl_creator((struct super_block *)*sb) == cred;
}

#endif
