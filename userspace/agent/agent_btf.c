// SPDX-License-Identifier: GPL-2.0
/*
 * What the running kernel's BTF says, for choosing programs before a load:
 * whether it names a symbol (an attach type libbpf 1.1 does not know) and
 * how many arguments an LSM hook takes.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "agent_internal.h"
#include "../lib/util.h"
#include "lsm.skel.h"

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
bool agent_btf_has(const char *name)
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
