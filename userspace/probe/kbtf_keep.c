// SPDX-License-Identifier: GPL-2.0
/*
 * The BTF an object's CO-RE relocations are made against (kbtf.h, struct
 * kbtf_core), and the stand-in of the kernel's BTF for its kfuncs: made
 * from the kernel's (kbtf_core.c), or taken from those kept for the boot.
 *
 * A subset is made once per boot and object: root keeps it in
 * /run/bpfbox/core (a reboot empties /run), named by the boot's id and the
 * hash of the object's BTF, and later loads hand that file to libbpf.
 * With every subset kept, a load that attaches nothing by BTF (tracepoint
 * mode) parses none of the kernel's 5.5 MB: most of an embedded load's
 * time on a cold heap (docs/benchmarks.md). Only a directory and files
 * owned by root that nobody else may write are believed
 * (docs/SECURITY.md); anything else is made afresh in memory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "kbtf.h"
#include "kbtf_internal.h"
#include "probe.h"
#include "../lib/sha256.h"
#include "../lib/util.h"

/* The kept subsets, in bpfbox's own tree: at most this many files, all of this boot. */
#define CORE_CACHE_PARENT "/run/bpfbox"
#define CORE_CACHE_DIR	  CORE_CACHE_PARENT "/core"
#define CORE_CACHE_MAX	  32

/* A directory or file only root may have written: owned by root, no group or other write. */
static bool root_only(int fd, mode_t type)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == type && st.st_uid == 0 &&
	       !(st.st_mode & 022);
}

/* The cache's directory (made when missing), or -errno: root only; BPFBOX_CORE_CACHE=off: none. */
static int cache_dir(void)
{
	const char *dir = getenv("BPFBOX_CORE_CACHE");
	int fd;

	if (dir && !strcmp(dir, "off"))
		return -ENOENT;
	if (geteuid() != 0)
		return -EPERM;
	if (!dir || !*dir) {
		dir = CORE_CACHE_DIR;
		/* The daemon's mode (daemon/server.c sets it again when it starts). */
		if (mkdir(CORE_CACHE_PARENT, 0750) < 0 && errno != EEXIST)
			return -errno;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!root_only(fd, S_IFDIR)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* "<boot id>-<hash of the object's BTF>.btf": what a subset depends on. */
static int cache_name(const struct btf *local, char *name, size_t size)
{
	uint8_t h[SHA256_LEN];
	char boot[64], hex[33];
	const void *raw;
	__u32 len;

	raw = btf__raw_data(local, &len);
	if (!raw || probe_boot_id(boot) < 0)
		return -ENOENT;
	sha256(raw, len, h);
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
	return snprintf(name, size, "%s-%s.btf", boot, hex) < (int)size ? 0 : -ENAMETOOLONG;
}

/* Whether fd holds a whole raw BTF (its header's sections end at its end). */
static bool whole_btf(int fd)
{
	struct btf_header hdr;
	struct stat st;
	__u64 end;

	if (fstat(fd, &st) < 0 || pread(fd, &hdr, sizeof(hdr), 0) != sizeof(hdr) ||
	    hdr.magic != BTF_MAGIC || hdr.hdr_len < sizeof(hdr))
		return false;
	end = (__u64)hdr.hdr_len + hdr.type_off + hdr.type_len;
	if ((__u64)hdr.hdr_len + hdr.str_off + hdr.str_len > end)
		end = (__u64)hdr.hdr_len + hdr.str_off + hdr.str_len;
	return end == (__u64)st.st_size;
}

/* A kept file, if believed (owned by root, whole): its fd, or -errno. */
static int cache_open(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (!root_only(fd, S_IFREG) || !whole_btf(fd)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Removes other boots' files, and all of them when too many are kept. */
static void cache_prune(int dfd, const char *name)
{
	size_t blen = strrchr(name, '-') - name + 1; /* "<boot id>-" */
	struct dirent *e;
	int n = 0, dup;
	DIR *d;

	for (int pass = 0; pass < 2; pass++) {
		dup = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
		d = dup >= 0 ? fdopendir(dup) : NULL;
		if (!d) {
			if (dup >= 0)
				close(dup);
			return;
		}
		rewinddir(d); /* a dup shares dfd's offset: the pass before read to the end */
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (pass || strncmp(e->d_name, name, blen))
				unlinkat(dfd, e->d_name, 0);
			else
				n++;
		}
		closedir(d);
		if (n < CORE_CACHE_MAX)
			return;
	}
}

/* Keeps the BTF in fd for this boot: a new name, then a rename. */
static void cache_keep(int src, int dfd, const char *name)
{
	char tmp[160];
	struct stat st;
	off_t off = 0;
	int fd;

	if (fstat(src, &st) < 0 || st.st_size <= 0)
		return;
	cache_prune(dfd, name);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", name, getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	while (off < st.st_size)
		if (sendfile(fd, src, &off, st.st_size - off) <= 0)
			break;
	if (close(fd) == 0 && off == st.st_size && renameat(dfd, tmp, dfd, name) == 0)
		return;
	unlinkat(dfd, tmp, 0);
}

const struct bpf_object_open_opts *kbtf_core_open(struct kbtf_core *c)
{
	const char *env = getenv("BPFBOX_CORE_SUBSET");

	memset(c, 0, sizeof(*c));
	c->opts.sz = sizeof(c->opts);
	c->fd = -1;
	c->standin = -1;
	/* BPFBOX_CORE_SUBSET=0: libbpf's own search (test_audit compares the two). */
	if (env && !strcmp(env, "0"))
		return &c->opts;
	c->fd = memfd_create("bpfbox-core-btf", MFD_CLOEXEC);
	if (c->fd < 0)
		return &c->opts;
	snprintf(c->path, sizeof(c->path), "/proc/self/fd/%d", c->fd);
	if (access(c->path, R_OK) < 0) { /* no /proc: libbpf's own search */
		close(c->fd);
		c->fd = -1;
		return &c->opts;
	}
	c->opts.btf_custom_path = c->path;
	return &c->opts;
}

/* The stand-in of an object whose subset is in name: kept beside it. */
static void standin_name(char *kname, size_t size, const char *name)
{
	snprintf(kname, size, "%.*s.ksym.btf", (int)(strlen(name) - 4), name);
}

/* Makes the stand-in and keeps it for the next loads (this one has the kernel's BTF). */
static void standin_keep(const struct btf *k, struct bpf_object *obj, const struct btf *local,
			 int dfd, const char *kname)
{
	_cleanup_close_ int fd = memfd_create("bpfbox-ksym-btf", MFD_CLOEXEC);

	if (fd >= 0 && kbtf_standin_make(k, obj, local, fd) == 0)
		cache_keep(fd, dfd, kname);
}

int kbtf_core_fill(struct kbtf_core *c, struct bpf_object *obj)
{
	const struct btf *local = bpf_object__btf(obj);
	bool kept = false, need_standin = false;
	_cleanup_close_ int dfd = -1;
	char name[128], kname[136];
	struct btf *k;
	int r, fd;

	if (c->fd < 0)
		return 0;
	if (local && cache_name(local, name, sizeof(name)) == 0) {
		dfd = cache_dir();
		standin_name(kname, sizeof(kname), name);
		need_standin = kbtf_kfuncs_only(obj, local) > 0;
	}
	if (dfd >= 0 && (fd = cache_open(dfd, name)) >= 0) {
		kept = dup3(fd, c->fd, O_CLOEXEC) >= 0;
		close(fd);
	}
	if (kept && need_standin)
		c->standin = cache_open(dfd, kname);
	if (kept && (!need_standin || c->standin >= 0)) {
		if (c->standin >= 0)
			kbtf_standin(c->standin);
		return 0;
	}
	k = btf__load_vmlinux_btf();
	if (libbpf_get_error(k))
		return -ENOENT;
	r = 0;
	if (!kept) {
		r = local ? kbtf_subset(k, local, c->fd) : -ENOENT;
		if (r < 0)
			r = kbtf_whole(k, c->fd);
		else if (dfd >= 0)
			cache_keep(c->fd, dfd, name);
	}
	if (!r && need_standin && dfd >= 0)
		standin_keep(k, obj, local, dfd, kname);
	btf__free(k);
	return r;
}

void kbtf_core_close(struct kbtf_core *c)
{
	if (c->standin >= 0) {
		kbtf_standin(-1);
		close(c->standin);
	}
	c->standin = -1;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}
