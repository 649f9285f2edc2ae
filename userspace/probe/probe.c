// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/btf.h>

#include "probe.h"
#include "../lib/cgroup.h"
#include "probe.skel.h"
#include "../lib/util.h"
#include "../sandbox/seccomp.h"
#include "../monitor/limits.h"

#define SECURITYFS_DIR "/sys/kernel/security"
#define TRACEFS_DIR    "/sys/kernel/tracing"

static const struct {
	const char *key;
	const char *label;
} feature_names[FEAT__COUNT] = {
	[FEAT_LANDLOCK] = {"landlock", "Landlock"},
	[FEAT_SECCOMP] = {"seccomp", "seccomp filter"},
	[FEAT_BPF_LSM_ACTIVE] = {"bpf_lsm_active", "BPF LSM in LSM list"},
	[FEAT_BPF_LSM] = {"bpf_lsm", "BPF LSM program"},
	[FEAT_LSM_CGROUP] = {"lsm_cgroup", "BPF LSM per cgroup"},
	[FEAT_RINGBUF] = {"ringbuf", "BPF ring buffer"},
	[FEAT_TP_EXEC] = {"tracepoint_exec", "tracepoint sched_process_exec"},
	[FEAT_TP_OPENAT] = {"tracepoint_openat", "tracepoint sys_exit_openat"},
	[FEAT_FEXIT] = {"fexit", "BPF trampoline (fexit)"},
	[FEAT_CGROUP_BPF] = {"cgroup_bpf", "cgroup BPF connect4"},
	[FEAT_CGROUP_V2] = {"cgroup_v2", "cgroup v2"},
	[FEAT_CGROUP_FREEZE] = {"cgroup_freeze", "cgroup.freeze"},
	[FEAT_CGROUP_KILL] = {"cgroup_kill", "cgroup.kill"},
	[FEAT_BTF] = {"btf", "kernel BTF"},
	[FEAT_USERNS] = {"unprivileged_userns", "unprivileged user namespaces"},
	[FEAT_CGROUP_LIMITS] = {"cgroup_limits", "session limits by cgroup"},
	[FEAT_NAMESPACES] = {"session_namespaces", "session namespaces"},
};

const char *feature_key(enum feature_id id)
{
	return feature_names[id].key;
}

const char *feature_label(enum feature_id id)
{
	return feature_names[id].label;
}

const char *feat_state_name(enum feat_state s)
{
	static const char *const names[] = {
		[FEAT_YES] = "available", [FEAT_NEEDS_ROOT] = "needs root"};

	return name_of(names, ARRAY_SIZE(names), s, "unavailable");
}

static const char *const level_names[] = {
	[LEVEL_NONE] = "None",
	[LEVEL_MINIMAL] = "Minimal",
	[LEVEL_STANDARD] = "Standard",
	[LEVEL_FULL] = "Full",
};

const char *level_name(enum bpfbox_level level)
{
	return level_names[level];
}

int level_parse(const char *name, enum bpfbox_level *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(level_names); i++) {
		if (strcasecmp(name, level_names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

enum bpfbox_level level_from(bool bpf_lsm, bool landlock, bool seccomp, bool cgroup_v2)
{
	if (bpf_lsm && landlock && seccomp && cgroup_v2)
		return LEVEL_FULL;
	if (landlock && seccomp)
		return LEVEL_STANDARD;
	if (seccomp)
		return LEVEL_MINIMAL;
	return LEVEL_NONE;
}

static void set_feat(struct feature *f, enum feat_state state, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_feat(struct feature *f, enum feat_state state, int err, const char *fmt, ...)
{
	va_list ap;

	f->state = state;
	f->err = abs(err);
	va_start(ap, fmt);
	vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
	va_end(ap);
}

/* Runs fn in a forked child so that what it restricts dies with it. */
static int run_in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status))
		return -ECHILD;
	return -WEXITSTATUS(status);
}

/*
 * Child: a ruleset that handles file reads with no rule must make reading
 * "/" fail with EACCES once the process restricts itself.
 */
static int landlock_child(void *arg)
{
	struct bpfbox_ruleset_attr attr = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_READ_DIR,
	};
	int fd, dir;

	(void)arg;
	fd = landlock_create_ruleset(&attr, 0);
	if (fd < 0)
		return errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || landlock_restrict_self(fd, 0))
		return errno;
	dir = open("/", O_RDONLY | O_DIRECTORY);
	if (dir >= 0)
		return EPROTO;
	return errno == EACCES ? 0 : errno;
}

static void probe_landlock(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_LANDLOCK];
	char rights[256];
	int abi, r;

	abi = landlock_abi();
	if (abi == -EOPNOTSUPP) {
		set_feat(f, FEAT_NO, -abi,
			 "built in but not enabled at boot (add landlock to lsm=)");
		return;
	}
	if (abi < 0) {
		set_feat(f, FEAT_NO, -abi, "not supported by this kernel (%s)", strerror(-abi));
		return;
	}
	caps->landlock_kernel_abi = abi;
	landlock_rights_for_abi(abi, &caps->landlock);
	r = run_in_child(landlock_child, NULL);
	if (r) {
		set_feat(f, FEAT_NO, r, "ABI %d but a test ruleset did not enforce (%s)", abi,
			 strerror(-r));
		return;
	}
	landlock_rights_describe(&caps->landlock, rights, sizeof(rights));
	if (abi > BPFBOX_LANDLOCK_ABI_MAX)
		set_feat(f, FEAT_YES, 0, "ABI %d (used as %d): %s", abi, BPFBOX_LANDLOCK_ABI_MAX,
			 rights);
	else
		set_feat(f, FEAT_YES, 0, "ABI %d: %s", abi, rights);
}

/* Child: the sessions' own filter must turn personality(PER_LINUX32) away. */
static int seccomp_child(void *arg)
{
	int r;

	(void)arg;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return errno;
	r = seccomp_install(seccomp_program(true));
	if (r)
		return -r;
	if (syscall(SYS_personality, 0x0008) != -1 || errno != EPERM)
		return EPROTO;
	return 0;
}

static void probe_seccomp(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_SECCOMP];
	int r = run_in_child(seccomp_child, NULL);

	if (r)
		set_feat(f, FEAT_NO, r, "a test filter could not be installed (%s)", strerror(-r));
	else
		set_feat(f, FEAT_YES, 0, "the session filter installed and enforced in a child");
}

static int userns_child(void *arg)
{
	(void)arg;
	/* Root can always create one; the question is about other users. */
	if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
		return errno;
	return unshare(CLONE_NEWUSER) ? errno : 0;
}

static void probe_userns(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_USERNS];
	int r = run_in_child(userns_child, NULL);

	if (r)
		set_feat(f, FEAT_NO, r, "unshare(CLONE_NEWUSER) as an unprivileged user: %s",
			 strerror(-r));
	else
		set_feat(f, FEAT_YES, 0, "unprivileged users can create user namespaces");
}

bool probe_has_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {{0}};

	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return data[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32));
}

bool probe_root_is_mount(void)
{
	struct statx stx;

	if (statx(AT_FDCWD, "/", 0, 0, &stx) < 0 ||
	    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return true; /* cannot tell (before 5.8): let the clone say */
	return stx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
}

/*
 * Child of probe_namespaces: makes the namespaces a session of this caller
 * gets (sandbox/ns.c: mount, PID, IPC, and user when not root), the user
 * namespace's id maps, a private mount tree with a tmpfs, and a /proc of
 * the PID namespace from its pid 1. Exits with the failed step (1-6).
 */
static int namespaces_child(void *arg)
{
	bool user = geteuid() != 0 || !probe_has_sys_admin();
	int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | (user ? CLONE_NEWUSER : 0);
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char line[64];
	int status;
	pid_t pid;

	(void)arg;
	if (unshare(flags) < 0)
		return 1;
	if (user) {
		snprintf(line, sizeof(line), "%u %u 1\n", uid, uid);
		if (write_file_str("/proc/self/uid_map", line) ||
		    write_file_str("/proc/self/setgroups", "deny"))
			return 2;
		snprintf(line, sizeof(line), "%u %u 1\n", gid, gid);
		if (write_file_str("/proc/self/gid_map", line))
			return 2;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=4k") < 0)
		return 3;
	pid = fork();
	if (pid < 0)
		return 4;
	if (pid == 0)
		_exit(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? 5
		      : getpid() == 1								 ? 0
				      : 6);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return 4;
	return WEXITSTATUS(status);
}

static void probe_namespaces(struct host_caps *caps)
{
	static const char *const steps[] = {
		"",
		"unshare",
		"the user namespace's id maps",
		"a private mount tree and a tmpfs",
		"a fork into the PID namespace",
		"a /proc of the PID namespace",
		"pid 1 in the PID namespace",
	};
	struct feature *f = &caps->feat[FEAT_NAMESPACES];
	bool user = geteuid() != 0 || !probe_has_sys_admin();
	int r;

	if (!probe_root_is_mount()) {
		set_feat(f, FEAT_NO, EPERM, "the root directory is not a mount point (a chroot)");
		return;
	}
	r = -run_in_child(namespaces_child, NULL);
	if (r > 0 && r < (int)ARRAY_SIZE(steps))
		set_feat(f, FEAT_NO, EPERM, "%s namespaces: %s failed",
			 user ? "user, mount, PID and IPC" : "mount, PID and IPC", steps[r]);
	else if (r)
		set_feat(f, FEAT_NO, -r, "the probe failed (%s)", strerror(-r));
	else
		set_feat(
			f, FEAT_YES, 0,
			"%s namespaces, a read-only host view, /proc, /tmp and /dev/shm of its own",
			user ? "user, mount, PID and IPC" : "mount, PID and IPC");
}

static void probe_btf(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_BTF];
	struct btf *btf = btf__load_vmlinux_btf();
	int r = libbpf_get_error(btf);

	if (r) {
		set_feat(f, FEAT_NO, r, "no usable /sys/kernel/btf/vmlinux (%s)", strerror(-r));
		return;
	}
	set_feat(f, FEAT_YES, 0, "/sys/kernel/btf/vmlinux, %u types", btf__type_cnt(btf));
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
			set_feat(f, FEAT_NO, r, "cannot read %s/lsm (%s)", SECURITYFS_DIR,
				 strerror(-r));
		else
			set_feat(f, FEAT_NEEDS_ROOT, r, "securityfs is not mounted");
		return;
	}
	if (word_list_has(caps->lsm_list, "bpf", ","))
		set_feat(f, FEAT_YES, 0, "active LSMs: %s", caps->lsm_list);
	else
		set_feat(f, FEAT_NO, 0, "not in the active LSM list (%s); boot with lsm=...,bpf",
			 caps->lsm_list);
}

/* libbpf's own messages would clutter status output; keep the last one. */
static char libbpf_last[256];

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level != LIBBPF_DEBUG)
		vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
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

typedef struct bpf_link *(*attach_fn)(struct bpf_program *prog, int cgroup_fd);

static struct bpf_link *attach_plain(struct bpf_program *prog, int cgroup_fd)
{
	(void)cgroup_fd;
	return bpf_program__attach(prog);
}

static struct bpf_link *attach_cgroup(struct bpf_program *prog, int cgroup_fd)
{
	return bpf_program__attach_cgroup(prog, cgroup_fd);
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
	link = attach(prog, cgroup_fd);
	r = libbpf_get_error(link);
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
		set_feat(f, FEAT_NEEDS_ROOT, 0, "loading BPF programs needs root");
		return;
	}
	if (attach == attach_cgroup && cgroup_fd < 0) {
		set_feat(f, FEAT_NO, 0, "no scratch cgroup v2 to attach to");
		return;
	}
	r = probe_program(name, attach, cgroup_fd, &step);
	if (r)
		set_feat(f, FEAT_NO, r, "%s failed: %s", step, bpf_errno_meaning(-r));
	else
		set_feat(f, FEAT_YES, 0, "%s", ok_detail);
}

static void probe_ringbuf(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_RINGBUF];
	int fd;

	if (!caps->root) {
		set_feat(f, FEAT_NEEDS_ROOT, 0, "creating BPF maps needs root");
		return;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bpfbox_probe", 0, 0, 4096, NULL);
	if (fd < 0) {
		set_feat(f, FEAT_NO, -errno, "map create failed: %s", bpf_errno_meaning(errno));
		return;
	}
	close(fd);
	set_feat(f, FEAT_YES, 0, "ring buffer map created");
}

/* Lists controllers bound to cgroup v1 hierarchies (a hybrid host). */
static void find_v1_controllers(struct host_caps *caps)
{
	static const char *const wanted[] = {"memory", "pids", "cpu", "freezer"};
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];
	size_t len = 0;

	caps->cgroup1_controllers[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char fstype[64], src[64], opts[512];
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep, " - %63s %63s %511s", fstype, src, opts) != 3 ||
		    !streq(fstype, "cgroup"))
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(wanted); i++) {
			if (!word_list_has(opts, wanted[i], ","))
				continue;
			if (word_list_has(caps->cgroup1_controllers, wanted[i], ","))
				continue;
			len += snprintf(caps->cgroup1_controllers + len,
					sizeof(caps->cgroup1_controllers) - len, "%s%s",
					len ? "," : "", wanted[i]);
		}
	}
}

/* Freezes an empty scratch cgroup and waits for the kernel to say so. */
static int try_freeze(const char *cg)
{
	char path[512], events[256];

	snprintf(path, sizeof(path), "%s/cgroup.freeze", cg);
	if (write_file_str(path, "1") < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/cgroup.events", cg);
	for (int i = 0; i < 100; i++) {
		if (read_file_str(path, events, sizeof(events)) > 0 && strstr(events, "frozen 1"))
			return 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

static void probe_cgroup_v2(struct host_caps *caps, const char *scratch)
{
	struct feature *fv2 = &caps->feat[FEAT_CGROUP_V2];
	struct feature *ffr = &caps->feat[FEAT_CGROUP_FREEZE];
	struct feature *fkill = &caps->feat[FEAT_CGROUP_KILL];
	char path[512];
	int r;

	find_v1_controllers(caps);
	r = cgroup2_mount_point(caps->cgroup2_mount, sizeof(caps->cgroup2_mount));
	if (r < 0) {
		set_feat(fv2, FEAT_NO, r, "no cgroup2 file system mounted");
		set_feat(ffr, FEAT_NO, 0, "no cgroup v2");
		set_feat(fkill, FEAT_NO, 0, "no cgroup v2");
		return;
	}
	snprintf(path, sizeof(path), "%s/cgroup.controllers", caps->cgroup2_mount);
	read_file_str(path, caps->cgroup2_controllers, sizeof(caps->cgroup2_controllers));
	set_feat(fv2, FEAT_YES, 0, "mounted at %s; v2 controllers: %s%s%s", caps->cgroup2_mount,
		 caps->cgroup2_controllers[0] ? caps->cgroup2_controllers : "none",
		 caps->cgroup1_controllers[0] ? "; hybrid, on v1: " : "",
		 caps->cgroup1_controllers);
	if (!scratch) {
		enum feat_state s = caps->root ? FEAT_NO : FEAT_NEEDS_ROOT;

		set_feat(ffr, s, 0, "needs a scratch cgroup (root)");
		set_feat(fkill, s, 0, "needs a scratch cgroup (root)");
		return;
	}
	r = try_freeze(scratch);
	if (r)
		set_feat(ffr, FEAT_NO, r, "freezing a scratch cgroup failed (%s)", strerror(-r));
	else
		set_feat(ffr, FEAT_YES, 0, "a scratch cgroup froze");
	snprintf(path, sizeof(path), "%s/cgroup.kill", scratch);
	if (access(path, W_OK) == 0)
		set_feat(fkill, FEAT_YES, 0, "present in a scratch cgroup");
	else
		set_feat(fkill, FEAT_NO, -errno, "absent (kernel < 5.14)");
}

/*
 * The answer of probe_bpf_lsm for this boot: "<boot id> yes" or "<boot id>
 * no <why>". What the LSM list and the kernel allow does not change before
 * a reboot, and /run is emptied by one.
 */
#define LSM_PROBE_CACHE	  "/run/bpfbox.lsm-probe"
#define FEXIT_PROBE_CACHE "/run/bpfbox.fexit-probe"

static int probe_cached(const char *cache, const char *boot, char *why, size_t size)
{
	_cleanup_close_ int fd = open(cache, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char buf[512];
	struct stat st;
	size_t blen = strlen(boot);
	ssize_t n;

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

static void probe_save(const char *cache, const char *boot, bool yes, const char *why)
{
	char tmp[64], buf[512];
	int fd, len;

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

bool probe_bpf_lsm(char *why, size_t size)
{
	struct host_caps caps = {.root = geteuid() == 0};
	libbpf_print_fn_t old;
	char boot[64] = "";
	const char *step;
	int r;

	snprintf(why, size, "%s", "loading BPF LSM programs needs root");
	if (!caps.root)
		return false;
	if (read_file_str("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) >= 0) {
		boot[strcspn(boot, "\n")] = '\0';
		r = boot[0] ? probe_cached(LSM_PROBE_CACHE, boot, why, size) : -ENOENT;
		if (r >= 0)
			return r;
	}
	probe_lsm_list(&caps);
	if (caps.feat[FEAT_BPF_LSM_ACTIVE].state != FEAT_YES) {
		snprintf(why, size, "BPF LSM: %s", caps.feat[FEAT_BPF_LSM_ACTIVE].detail);
		r = -ENOPKG;
	} else {
		old = libbpf_set_print(libbpf_quiet);
		r = probe_program("probe_lsm_file_open", attach_plain, -1, &step);
		libbpf_set_print(old);
		if (r)
			snprintf(why, size, "BPF LSM: %s failed: %s", step, bpf_errno_meaning(-r));
		else
			why[0] = '\0';
	}
	if (boot[0])
		probe_save(LSM_PROBE_CACHE, boot, !r, why);
	return !r;
}

bool probe_fexit(char *why, size_t size)
{
	libbpf_print_fn_t old;
	char boot[64] = "";
	const char *step;
	int r;

	snprintf(why, size, "%s", "loading BPF programs needs root");
	if (geteuid() != 0)
		return false;
	if (read_file_str("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) >= 0) {
		boot[strcspn(boot, "\n")] = '\0';
		r = boot[0] ? probe_cached(FEXIT_PROBE_CACHE, boot, why, size) : -ENOENT;
		if (r >= 0)
			return r;
	}
	old = libbpf_set_print(libbpf_quiet);
	r = probe_program("probe_fexit_openat", attach_plain, -1, &step);
	libbpf_set_print(old);
	if (r)
		snprintf(why, size, "%s failed: %s", step, bpf_errno_meaning(-r));
	else
		why[0] = '\0';
	if (boot[0])
		probe_save(FEXIT_PROBE_CACHE, boot, !r, why);
	return !r;
}

static void probe_bpf_features(struct host_caps *caps)
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

	old = libbpf_set_print(libbpf_quiet);
	probe_one_program(caps, FEAT_BPF_LSM, "probe_lsm_file_open", attach_plain, -1,
			  "lsm/file_open loaded and attached");
	probe_one_program(caps, FEAT_LSM_CGROUP, "probe_lsm_cgroup_file_open", attach_cgroup, cgfd,
			  "lsm_cgroup/file_open attached to a scratch cgroup");
	/*
	 * A kernel whose LSM list lacks bpf still loads and attaches LSM
	 * programs (6.1 does), but never runs them: that is not enforcement.
	 */
	if (caps->feat[FEAT_BPF_LSM_ACTIVE].state == FEAT_NO) {
		for (int id = FEAT_BPF_LSM; id <= FEAT_LSM_CGROUP; id++)
			if (caps->feat[id].state == FEAT_YES)
				set_feat(&caps->feat[id], FEAT_NO, 0,
					 "loads and attaches, but bpf is not in the active LSM "
					 "list, "
					 "so it would never run; boot with lsm=...,bpf");
	}
	probe_ringbuf(caps);
	probe_one_program(caps, FEAT_TP_EXEC, "probe_tp_exec", attach_plain, -1, "attached");
	probe_one_program(caps, FEAT_TP_OPENAT, "probe_tp_openat", attach_plain, -1, "attached");
	probe_one_program(caps, FEAT_FEXIT, "probe_fexit_openat", attach_plain, -1,
			  "attached to __x64_sys_openat");
	probe_one_program(caps, FEAT_CGROUP_BPF, "probe_cgroup_connect4", attach_cgroup, cgfd,
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

/* What a session of this user gets for memory, pids and cpu (limits_plan, nothing made). */
static void probe_limits(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_CGROUP_LIMITS];
	struct session_limits l;
	char detail[320];
	bool cgroup;

	limits_describe_host(detail, sizeof(detail), &cgroup, &l);
	for (int r = 0; r < RES__COUNT; r++)
		caps->limits_how[r] = l.how[r];
	caps->limits_pause = l.pause;
	caps->limits_probed = true;
	cgroup = cgroup && (l.how[RES_PIDS] == LIMIT_CGROUP2 || l.how[RES_PIDS] == LIMIT_CGROUP1);
	if (cgroup)
		set_feat(f, FEAT_YES, 0, "%s", detail);
	else
		set_feat(f, caps->root ? FEAT_NO : FEAT_NEEDS_ROOT, 0, "%s", detail);
}

static void mark_not_probed(struct host_caps *caps)
{
	for (int id = FEAT_BPF_LSM_ACTIVE; id < FEAT__COUNT; id++)
		set_feat(&caps->feat[id], FEAT_NO, 0, "not probed");
}

int probe_host(struct host_caps *caps, unsigned int flags)
{
	struct utsname uts;
	bool cg;

	memset(caps, 0, sizeof(*caps));
	caps->root = geteuid() == 0;
	if (uname(&uts) == 0)
		snprintf(caps->kernel_release, sizeof(caps->kernel_release), "%s", uts.release);

	probe_landlock(caps);
	probe_seccomp(caps);
	if (flags & PROBE_ALL) {
		probe_bpf_features(caps);
		probe_btf(caps);
		probe_userns(caps);
		probe_limits(caps);
	} else {
		mark_not_probed(caps);
	}
	probe_namespaces(caps);

	cg = caps->feat[FEAT_CGROUP_V2].state == FEAT_YES &&
	     caps->feat[FEAT_CGROUP_KILL].state == FEAT_YES;
	caps->level = level_from(caps->feat[FEAT_BPF_LSM].state == FEAT_YES,
				 caps->feat[FEAT_LANDLOCK].state == FEAT_YES,
				 caps->feat[FEAT_SECCOMP].state == FEAT_YES, cg);
	return 0;
}
