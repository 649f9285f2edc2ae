// SPDX-License-Identifier: GPL-2.0
/*
 * BPF features, probed by loading and attaching the trivial programs of
 * bpf/probe.bpf.c (never by version guesses): BPF LSM, per-cgroup LSM,
 * ring buffers, tracepoints, trampolines, cgroup connect; BTF and the
 * active LSM list. The BPF LSM and fexit answers are kept per boot.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "probe_internal.h"
#include "probe_libbpf.h"
#include "../lib/cgroup.h"
#include "../lib/util.h"
#include "probe.skel.h"

#define SECURITYFS_DIR "/sys/kernel/security"

#define TRACEFS_DIR "/sys/kernel/tracing"

void probe_btf(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_BTF];
	struct btf *btf = btf__load_vmlinux_btf();
	int r = libbpf_get_error(btf);

	if (r) {
		probe_set_feat(f, FEAT_NO, r, "no usable /sys/kernel/btf/vmlinux (%s)",
			       strerror(-r));
		return;
	}
	probe_set_feat(f, FEAT_YES, 0, "/sys/kernel/btf/vmlinux, %u types", btf__type_cnt(btf));
	btf__free(btf);
}

/* Mounts a pseudo file system the probes need when nobody did (root only). */
static int ensure_mounted(const char *dir, const char *probe_file, const char *fstype)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, probe_file);
	if (access(path, F_OK) == 0)
		return 0;
	if (mount(fstype, dir, fstype, 0, NULL) < 0)
		return -errno;
	return access(path, F_OK) == 0 ? 0 : -ENOENT;
}

static void probe_lsm_list(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_BPF_LSM_ACTIVE];
	int r;

	r = read_file_str(SECURITYFS_DIR "/lsm", caps->lsm_list, sizeof(caps->lsm_list));
	if (r < 0 && caps->root) {
		r = ensure_mounted(SECURITYFS_DIR, "lsm", "securityfs");
		if (!r)
			r = read_file_str(SECURITYFS_DIR "/lsm", caps->lsm_list,
					  sizeof(caps->lsm_list));
	}
	if (r < 0) {
		if (caps->root)
			probe_set_feat(f, FEAT_NO, r, "cannot read %s/lsm (%s)", SECURITYFS_DIR,
				       strerror(-r));
		else
			probe_set_feat(f, FEAT_NEEDS_ROOT, r, "securityfs is not mounted");
		return;
	}
	if (word_list_has(caps->lsm_list, "bpf", ","))
		probe_set_feat(f, FEAT_YES, 0, "active LSMs: %s", caps->lsm_list);
	else
		probe_set_feat(f, FEAT_NO, 0,
			       "not in the active LSM list (%s); boot with lsm=...,bpf",
			       caps->lsm_list);
}

int probe_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (getenv("BPFBOX_LIBBPF_DEBUG"))
		vfprintf(stderr, fmt, ap);
	return 0;
}

static const char *bpf_errno_meaning(int err)
{
	switch (err) {
	case EPERM:
		return "the kernel refused the program (EPERM): a security policy or lockdown "
		       "forbids this program type here; bpf in the LSM list is not enough";
	case EACCES:
		return "the verifier rejected the program (EACCES)";
	case EINVAL:
		return "this kernel does not know the program or attach type (EINVAL)";
	case 524: /* ENOTSUPP, kernel-internal */
	case EOPNOTSUPP:
		return "not supported by this kernel";
	case ESRCH:
	case ENOENT:
		return "the hook or its BTF was not found";
	default:
		return strerror(err);
	}
}

typedef int (*attach_fn)(struct bpf_program *prog, int cgroup_fd, struct bpf_link **link);

static int attach_link(struct bpf_link *l, struct bpf_link **link)
{
	int r = libbpf_get_error(l);

	*link = r ? NULL : l;
	return r;
}

static int attach_plain(struct bpf_program *prog, int cgroup_fd, struct bpf_link **link)
{
	(void)cgroup_fd;
	return attach_link(bpf_program__attach(prog), link);
}

int probe_attach_cgroup(struct bpf_program *prog, int cgroup_fd, struct bpf_link **link)
{
	return attach_link(bpf_program__attach_cgroup(prog, cgroup_fd), link);
}

/*
 * The skeleton life cycle, once per probed program: open, switch off every
 * other program, load, attach, destroy. Returns 0 or -errno of the step
 * that failed and names that step in *step.
 */
static int probe_program(const char *name, attach_fn attach, int cgroup_fd, const char **step)
{
	struct probe_bpf *skel;
	struct bpf_program *prog;
	struct bpf_link *link;
	int r;

	*step = "open";
	skel = probe_bpf__open();
	if (!skel)
		return -errno;
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, streq(bpf_program__name(prog), name));
	*step = "load";
	r = probe_bpf__load(skel);
	if (r)
		goto out;
	*step = "attach";
	prog = bpf_object__find_program_by_name(skel->obj, name);
	r = attach(prog, cgroup_fd, &link);
	if (!r)
		bpf_link__destroy(link);
out:
	probe_bpf__destroy(skel);
	return r < 0 ? r : -r;
}

static void probe_one_program(struct host_caps *caps, enum feature_id id, const char *name,
			      attach_fn attach, int cgroup_fd, const char *ok_detail)
{
	struct feature *f = &caps->feat[id];
	const char *step;
	int r;

	if (!caps->root) {
		probe_set_feat(f, FEAT_NEEDS_ROOT, 0, "loading BPF programs needs root");
		return;
	}
	if (attach == probe_attach_cgroup && cgroup_fd < 0) {
		probe_set_feat(f, FEAT_NO, 0, "no scratch cgroup v2 to attach to");
		return;
	}
	r = probe_program(name, attach, cgroup_fd, &step);
	if (r)
		probe_set_feat(f, FEAT_NO, r, "%s failed: %s", step, bpf_errno_meaning(-r));
	else
		probe_set_feat(f, FEAT_YES, 0, "%s", ok_detail);
}

static void probe_ringbuf(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_RINGBUF];
	int fd;

	if (!caps->root) {
		probe_set_feat(f, FEAT_NEEDS_ROOT, 0, "creating BPF maps needs root");
		return;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bpfbox_probe", 0, 0, 4096, NULL);
	if (fd < 0) {
		probe_set_feat(f, FEAT_NO, -errno, "map create failed: %s",
			       bpf_errno_meaning(errno));
		return;
	}
	close(fd);
	probe_set_feat(f, FEAT_YES, 0, "ring buffer map created");
}

/*
 * The answer of probe_bpf_lsm for this boot: "<boot id> yes" or "<boot id>
 * no <why>". What the LSM list and the kernel allow does not change before
 * a reboot, and /run is emptied by one.
 */
#define LSM_PROBE_CACHE "/run/bpfbox.lsm-probe"

#define FEXIT_PROBE_CACHE "/run/bpfbox.fexit-probe"

int probe_boot_id(char boot[64])
{
	if (read_file_str("/proc/sys/kernel/random/boot_id", boot, 64) < 0)
		boot[0] = '\0';
	boot[strcspn(boot, "\n")] = '\0';
	return boot[0] ? 0 : -ENOENT;
}

int probe_cache_get(const char *cache, char boot[64], char *why, size_t size)
{
	_cleanup_close_ int fd = -1;
	char buf[512];
	struct stat st;
	size_t blen;
	ssize_t n;

	if (probe_boot_id(boot) < 0)
		return -ENOENT;
	blen = strlen(boot);
	fd = open(cache, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	/* Only a root-owned file nobody else may write is believed. */
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022) ||
	    !S_ISREG(st.st_mode))
		return -ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -ENOENT;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (strncmp(buf, boot, blen) || buf[blen] != ' ')
		return -ENOENT;
	if (streq(buf + blen + 1, "yes")) {
		why[0] = '\0';
		return 1;
	}
	if (strncmp(buf + blen + 1, "no ", 3))
		return -ENOENT;
	snprintf(why, size, "%s", buf + blen + 4);
	return 0;
}

void probe_cache_put(const char *cache, const char *boot, bool yes, const char *why)
{
	char tmp[PATH_MAX], buf[512];
	int fd, len;

	if (!boot[0] || geteuid() != 0)
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d", cache, getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return;
	len = snprintf(buf, sizeof(buf), "%s %s%s\n", boot, yes ? "yes" : "no ", yes ? "" : why);
	if (len > 0 && (size_t)len < sizeof(buf) && write(fd, buf, len) == len && close(fd) == 0)
		rename(tmp, cache);
	else
		close(fd);
	unlink(tmp);
}

const char *probe_audit_attach(const struct host_caps *caps)
{
	enum feat_state fx = caps->feat[FEAT_FEXIT].state, tp = caps->feat[FEAT_TP_OPENAT].state;

	if (fx == FEAT_YES)
		return "fexit";
	if (tp == FEAT_YES)
		return "tracepoint";
	if (fx == FEAT_NEEDS_ROOT || tp == FEAT_NEEDS_ROOT || !caps->root)
		return "unknown";
	return "none";
}

/* name probed with libbpf quiet: 0, or -errno and why (after prefix). */
static int probe_quietly(const char *name, const char *prefix, char *why, size_t size)
{
	libbpf_print_fn_t old = libbpf_set_print(probe_libbpf_print);
	const char *step;
	int r = probe_program(name, attach_plain, -1, &step);

	libbpf_set_print(old);
	if (r)
		snprintf(why, size, "%s%s failed: %s", prefix, step, bpf_errno_meaning(-r));
	else
		why[0] = '\0';
	return r;
}

bool probe_bpf_lsm(char *why, size_t size)
{
	struct host_caps caps = {.root = geteuid() == 0};
	char boot[64];
	int r;

	snprintf(why, size, "%s", "loading BPF LSM programs needs root");
	if (!caps.root)
		return false;
	r = probe_cache_get(LSM_PROBE_CACHE, boot, why, size);
	if (r >= 0)
		return r;
	probe_lsm_list(&caps);
	if (caps.feat[FEAT_BPF_LSM_ACTIVE].state != FEAT_YES) {
		snprintf(why, size, "BPF LSM: %s", caps.feat[FEAT_BPF_LSM_ACTIVE].detail);
		r = -ENOPKG;
	} else {
		r = probe_quietly("probe_lsm_file_open", "BPF LSM: ", why, size);
	}
	probe_cache_put(LSM_PROBE_CACHE, boot, !r, why);
	return !r;
}

bool probe_fexit(char *why, size_t size)
{
	char boot[64];
	int r;

	snprintf(why, size, "%s", "loading BPF programs needs root");
	if (geteuid() != 0)
		return false;
	r = probe_cache_get(FEXIT_PROBE_CACHE, boot, why, size);
	if (r >= 0)
		return r;
	r = probe_quietly("probe_fexit_openat", "", why, size);
	probe_cache_put(FEXIT_PROBE_CACHE, boot, !r, why);
	return !r;
}

void probe_bpf_features(struct host_caps *caps)
{
	char scratch[512];
	bool have_scratch = false;
	_cleanup_close_ int cgfd = -1;
	libbpf_print_fn_t old;

	probe_lsm_list(caps);
	if (caps->root)
		ensure_mounted(TRACEFS_DIR, "events", "tracefs");

	if (caps->root && cgroup2_mount_point(scratch, sizeof(scratch)) == 0) {
		size_t len = strlen(scratch);

		snprintf(scratch + len, sizeof(scratch) - len, "/bpfbox-probe-%d", getpid());
		if (mkdir(scratch, 0700) == 0) {
			have_scratch = true;
			cgfd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		}
	}
	probe_cgroup_v2(caps, have_scratch ? scratch : NULL);

	old = libbpf_set_print(probe_libbpf_print);
	probe_one_program(caps, FEAT_BPF_LSM, "probe_lsm_file_open", attach_plain, -1,
			  "lsm/file_open loaded and attached");
	probe_one_program(caps, FEAT_LSM_CGROUP, "probe_lsm_cgroup_file_open", probe_attach_cgroup,
			  cgfd, "lsm_cgroup/file_open attached to a scratch cgroup");
	/*
	 * A kernel whose LSM list lacks bpf still loads and attaches LSM
	 * programs (6.1 does), but never runs them: that is not enforcement.
	 */
	if (caps->feat[FEAT_BPF_LSM_ACTIVE].state == FEAT_NO) {
		for (int id = FEAT_BPF_LSM; id <= FEAT_LSM_CGROUP; id++)
			if (caps->feat[id].state == FEAT_YES)
				probe_set_feat(
					&caps->feat[id], FEAT_NO, 0,
					"loads and attaches, but bpf is not in the active LSM "
					"list, "
					"so it would never run; boot with lsm=...,bpf");
	}
	probe_ringbuf(caps);
	probe_one_program(caps, FEAT_TP_EXEC, "probe_tp_exec", attach_plain, -1, "attached");
	probe_one_program(caps, FEAT_TP_OPENAT, "probe_tp_openat", attach_plain, -1, "attached");
	probe_one_program(caps, FEAT_FEXIT, "probe_fexit_openat", attach_plain, -1,
			  "attached to __x64_sys_openat");
	probe_one_program(caps, FEAT_CGROUP_BPF, "probe_cgroup_connect4", probe_attach_cgroup, cgfd,
			  "cgroup/connect4 attached to a scratch cgroup");
	libbpf_set_print(old);

	if (have_scratch) {
		/* Thaw first: a frozen cgroup is still removable, but be tidy. */
		char path[600];

		snprintf(path, sizeof(path), "%s/cgroup.freeze", scratch);
		write_file_str(path, "0");
		if (rmdir(scratch) < 0)
			fprintf(stderr, "bpfbox: warning: could not remove %s: %s\n", scratch,
				strerror(errno));
	}
}
