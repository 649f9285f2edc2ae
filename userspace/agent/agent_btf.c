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

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "agent_internal.h"
#include "../lib/util.h"
#include "../probe/probe.h"
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
 * Whether the running kernel's enum bpf_attach_type has a value named name
 * (BPF_CGROUP_UNIX_CONNECT): a cheap probe for attach types that libbpf
 * 1.1 does not know by name. It asks the parsed BTF, which the load shares
 * (probe/kbtf.c: no second read of the 5.5 MB file, whose bytes were
 * searched here before, 2.4 ms a start).
 *
 * Known limit, kept on purpose for now: it says "yes" only where
 * /sys/kernel/btf/vmlinux can be mmap()ed, from 6.16 on, so on 6.7..6.15
 * cgroup/connect_unix stays off there. Switching it on there was tried on
 * 6.12: it then refuses relative socket names in the workspace (full.sh's
 * unix_in), a change of policy to decide on its own. A one-page mapping
 * tells which kernels those are.
 */
static bool btf_has(const char *name)
{
	_cleanup_close_ int fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
	const struct btf_type *t;
	struct btf *btf;
	bool found = false;
	void *m;
	int id;

	if (fd < 0)
		return false;
	m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return false;
	munmap(m, 4096);
	btf = kernel_btf();
	if (!btf)
		return false;
	id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	for (int i = 0; t && !found && i < btf_vlen(t); i++)
		found = !strcmp(btf__name_by_offset(btf, btf_enum(t)[i].name_off), name);
	btf__free(btf);
	return found;
}

/*
 * The answer is kept for the boot (probe_cache_get, /run/bpfbox/btf-has-NAME):
 * with the CO-RE subsets kept too (probe/kbtf_core.c), a tracepoint-mode
 * load then parses no kernel BTF at all.
 */
bool agent_btf_has(const char *name)
{
	char cache[128], boot[64], why[8];
	bool found;
	int r;

	snprintf(cache, sizeof(cache), "/run/bpfbox/btf-has-%s", name);
	r = probe_cache_get(cache, boot, why, sizeof(why));
	if (r >= 0)
		return r;
	found = btf_has(name);
	probe_cache_put(cache, boot, found, "absent");
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
