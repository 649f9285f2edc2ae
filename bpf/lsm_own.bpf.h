/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The file systems a session's set-up made (docs/lsm.md "The writable
 * set"): each tmpfs its child mounts before exec (the session's /tmp,
 * /dev/shm, /dev) is learnt here, by device, and every file on it counts
 * as writable (under_writable, lsm_file.bpf.h). A header of the one BPF
 * object that includes it (lsm.bpf.c, through lsm_file.bpf.h).
 */
#ifndef BPFBOX_LSM_OWN_BPF_H
#define BPFBOX_LSM_OWN_BPF_H

#include "common.bpf.h"

/* The tmpfs a session's set-up mounted, whole (include/bpfbox/events.h). */
BPFBOX_MAP(own_sbs, BPF_MAP_TYPE_HASH, BPFBOX_MAX_SESSIONS, BPF_F_NO_PREALLOC, __u32,
	   struct bpfbox_own_sbs);

/* Whether dev is one of the file systems the session's set-up made. */
static __always_inline bool own_sb(const struct bpfbox_own_sbs *o, __u64 dev)
{
	if (!o || !dev)
		return false;
	for (int i = 0; i < BPFBOX_OWN_SBS; i++)
		if (o->dev[i] == dev)
			return true;
	return false;
}

#define TMPFS_MAGIC 0x01021994

/*
 * A file system mounted by a task of a session: its child's set-up before
 * exec (the session's own code cannot mount: seccomp), so a tmpfs is the
 * session's /tmp or /dev/shm, new and empty. Every file on it is in the
 * session's writable set (own_sbs); at most BPFBOX_OWN_SBS are learnt.
 */
SEC("lsm/sb_kern_mount")
int BPF_PROG(bpfbox_sb_kern_mount, struct super_block *sb, int ret)
{
	struct bpfbox_session *s = ret ? NULL : current_session();
	struct bpfbox_own_sbs *o, fresh = {};
	__u64 dev;
	__u32 id;

	if (!s || !sb || BPF_CORE_READ(sb, s_magic) != TMPFS_MAGIC)
		return ret;
	dev = BPF_CORE_READ(sb, s_dev);
	id = s->id;
	o = bpf_map_lookup_elem(&own_sbs, &id);
	if (!o) {
		fresh.dev[0] = dev;
		bpf_map_update_elem(&own_sbs, &id, &fresh, BPF_NOEXIST);
		return 0;
	}
	for (int i = 0; i < BPFBOX_OWN_SBS; i++) {
		if (o->dev[i] == dev)
			return 0;
		if (!o->dev[i]) {
			o->dev[i] = dev;
			return 0;
		}
	}
	return 0;
}

#endif
