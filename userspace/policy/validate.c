// SPDX-License-Identifier: GPL-2.0
/* policy_validate: the invariants `run` relies on, checked once more. */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "policy.h"
#include "policy-internal.h"
#include "../lib/util.h"

#define WHERE "effective policy"

static const char *const system_dirs[] = {
	"/usr",	 "/lib",  "/lib64", "/bin", "/sbin", "/etc",
	"/boot", "/proc", "/sys",   "/dev", "/var",  "/run",
};

bool policy_is_system_dir(const char *path)
{
	char real[PATH_MAX];

	if (streq(path, "/"))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++) {
		if (streq(path, system_dirs[i]))
			return true;
		/* /lib is /usr/lib on merged-/usr systems */
		if (realpath(system_dirs[i], real) && streq(path, real))
			return true;
	}
	return false;
}

/* child is strictly below parent. */
static bool path_below(const char *child, const char *parent)
{
	size_t n = strlen(parent);

	if (streq(parent, "/"))
		return child[0] == '/' && child[1];
	return strncmp(child, parent, n) == 0 && child[n] == '/';
}

/*
 * Where a writable grant (or the workspace) would hand the session a kernel
 * interface, bpfbox's own state or a directory every user shares. A tree
 * rule covers the root and everything below it; an exact rule only the
 * root (a subdirectory of /tmp is a fine grant, /tmp itself is not).
 */
static const struct {
	const char *root;
	bool tree;
	const char *rule;
} writable_rules[] = {
	{"/proc", true, "a kernel interface (/proc: sysctls, other processes)"},
	{"/sys", true, "a kernel interface (/sys: cgroups, BPF pins, kernel settings)"},
	{"/dev/shm", false, "a directory every user shares (/dev/shm itself)"},
	{"/dev", true, "a device node (/dev: only the nodes bpfbox grants itself are writable)"},
	{"/boot", true, "the boot loader and kernels (/boot)"},
	{"/run/bpfbox", true, "bpfbox's own state (/run/bpfbox: the daemon socket)"},
	{"/var/lib/bpfbox", true, "bpfbox's own state (/var/lib/bpfbox)"},
	{"/var/log/bpfbox", true, "bpfbox's audit log (/var/log/bpfbox)"},
	{"/tmp", false, "a directory every user shares (/tmp itself)"},
	{"/var/tmp", false, "a directory every user shares (/var/tmp itself)"},
	{"/home", false, "the root of every user's home (/home itself)"},
	{"/root", false, "root's home directory"},
	{"/run/user", false, "the root of every user's runtime directory"},
	{"/mnt", false, "a shared mount root (/mnt itself)"},
	{"/media", false, "a shared mount root (/media itself)"},
	{"/srv", false, "a shared data root (/srv itself)"},
	{"/opt", false, "a shared software root (/opt itself)"},
	{"/usr/local", false, "a shared software root (/usr/local itself)"},
	{"/var/lib", false, "the state of every service (/var/lib itself)"},
	{"/var/log", false, "the log of every service (/var/log itself)"},
};

/* Device nodes that stay grantable by name (the sandbox grants them anyway). */
static const char *const writable_devs[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
};

static bool rule_matches(const char *path, const char *root, bool tree)
{
	char real[PATH_MAX];

	if (streq(path, root) || (tree && path_below(path, root)))
		return true;
	/* /var/run is /run, /lib is /usr/lib: match what the root resolves to. */
	if (!realpath(root, real) || streq(real, root))
		return false;
	return streq(path, real) || (tree && path_below(path, real));
}

const char *policy_writable_rule(const char *path)
{
	char real[PATH_MAX];

	/* A link in the grant (/tmp/x -> /sys) is judged by its target. */
	if (realpath(path, real))
		path = real;
	if (streq(path, "/"))
		return "the whole file system";
	for (size_t i = 0; i < ARRAY_SIZE(writable_devs); i++)
		if (streq(path, writable_devs[i]))
			return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(writable_rules); i++)
		if (rule_matches(path, writable_rules[i].root, writable_rules[i].tree))
			return writable_rules[i].rule;
	if (policy_is_system_dir(path))
		return "a system directory";
	return NULL;
}

/*
 * Character devices --device never grants (docs/SECURITY.md, "Devices"):
 * by major and minor (-1: every minor), checked after writable_devs.
 */
static const struct {
	unsigned int major;
	int minor;
	const char *why;
} refused_devs[] = {
	{1, -1, "a memory device (/dev/mem, /dev/kmem, /dev/port, /dev/kmsg: the kernel's own)"},
	{4, -1, "a virtual console or serial line of the host"},
	{5, -1, "a terminal device of the host (/dev/console, /dev/ptmx; the session has its own)"},
	{7, -1, "a virtual console's screen memory (/dev/vcs*)"},
	{10, 130, "the watchdog (closing it can reboot the host)"},
	{10, 223, "uinput (it types into the host's desktop)"},
	{10, 234, "btrfs-control (it changes file systems)"},
	{10, 236, "the device mapper's control (it makes block devices)"},
	{10, 237, "loop-control (it makes block devices)"},
	{13, -1, "an input device (every keystroke and pointer move of the host)"},
	{21, -1, "a SCSI generic device (raw commands to the disks)"},
	{29, -1, "a frame buffer (the screen's pixels)"},
	{202, -1, "a CPU's model-specific registers (/dev/cpu/N/msr)"},
};

/* Why real (a resolved path) may not be a --device, as a phrase for "it is ..."; NULL: it may. */
static const char *device_rule(const char *real, const struct stat *st)
{
	unsigned int maj = major(st->st_rdev), min = minor(st->st_rdev);

	if (!path_below(real, "/dev"))
		return "not under /dev";
	if (S_ISBLK(st->st_mode))
		return "a block device (a disk's raw bytes pass every file permission and mask)";
	if (!S_ISCHR(st->st_mode))
		return "not a character device node";
	/* null, zero, full, random, urandom, tty: what every session has. */
	if ((maj == 1 && (min == 3 || min == 5 || min == 7 || min == 8 || min == 9)) ||
	    (maj == 5 && min == 0))
		return NULL;
	if (maj >= 136 && maj <= 143)
		return "a terminal of another session (/dev/pts)";
	if (startswith(real, "/dev/watchdog"))
		return "a watchdog (closing it can reboot the host)";
	for (size_t i = 0; i < ARRAY_SIZE(refused_devs); i++)
		if (refused_devs[i].major == maj &&
		    (refused_devs[i].minor < 0 || (unsigned int)refused_devs[i].minor == min))
			return refused_devs[i].why;
	return NULL;
}

int policy_grant_problem(enum policy_grant kind, const char *path, char *msg, size_t size)
{
	const char *rule;
	struct stat st;

	if (kind == GRANT_RW) {
		rule = policy_writable_rule(path);
		if (rule && stat(path, &st) == 0 && S_ISCHR(st.st_mode) && path_below(path, "/dev"))
			snprintf(msg, size,
				 "'%s' is a device node, never a --rw grant; grant it with "
				 "--device %s",
				 path, path);
		else if (rule)
			snprintf(msg, size,
				 "write access to '%s' would undo the sandbox: it is %s; grant a "
				 "narrower directory",
				 path, rule);
		return rule ? -EINVAL : 0;
	}
	if (kind == GRANT_DEVICE) {
		if (stat(path, &st) < 0)
			rule = "not a device node";
		else
			rule = device_rule(path, &st);
		if (rule)
			snprintf(msg, size,
				 "'%s' cannot be a --device: it is %s; give a character device "
				 "node under /dev (/dev/kvm, /dev/dri/renderD128, /dev/fuse)",
				 path, rule);
		return rule ? -EINVAL : 0;
	}
	/* Read-only: never the host's /dev, whose disks a read-only grant still reads. */
	if (!rule_matches(path, "/dev", true))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(writable_devs); i++)
		if (streq(path, writable_devs[i]))
			return 0;
	if (stat(path, &st) == 0 && S_ISCHR(st.st_mode) && (rule = device_rule(path, &st)))
		snprintf(msg, size, "'%s' is a device node and %s: never granted", path, rule);
	else if (stat(path, &st) == 0 && S_ISCHR(st.st_mode))
		snprintf(msg, size,
			 "'%s' is a device node: a read-only grant does not open it (the "
			 "session's /dev is its own); grant it with --device %s",
			 path, path);
	else
		snprintf(msg, size,
			 "'%s' is the host's device tree (raw disks, every terminal), never "
			 "granted; give single device nodes with --device PATH",
			 path);
	return -EINVAL;
}

static const char *home_of_uid(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);

	return pw ? pw->pw_dir : NULL;
}

/* The workspace must not be, nor contain, the invoking user's home. */
static int check_home(const char *ws, struct policy_error *err)
{
	const char *homes[3] = {getenv("HOME"), NULL, NULL};
	const char *sudo_uid = getenv("SUDO_UID");
	unsigned long long uid;
	char *h[3] = {NULL, NULL, NULL};
	int r = 0;

	/* getpwuid reuses its buffer: copy each answer at once. */
	homes[1] = home_of_uid(getuid());
	if (homes[1])
		h[1] = strdup(homes[1]);
	if (sudo_uid && parse_u64(sudo_uid, &uid) == 0 && uid < (uid_t)-1) {
		homes[2] = home_of_uid((uid_t)uid);
		if (homes[2])
			h[2] = strdup(homes[2]);
	}
	if (homes[0])
		h[0] = strdup(homes[0]);
	for (size_t i = 0; i < ARRAY_SIZE(h); i++)
		if (homes[i] && !h[i])
			r = policy_error_set(err, WHERE, "workspace", -ENOMEM, "out of memory");
	for (size_t i = 0; i < ARRAY_SIZE(h) && r == 0; i++) {
		char real[PATH_MAX];
		const char *home = h[i];

		if (!home || home[0] != '/')
			continue;
		if (realpath(home, real))
			home = real;
		if (streq(ws, home))
			r = policy_error_set(err, WHERE, "workspace", -EINVAL,
					     "'%s' is your home directory; choose "
					     "a project directory with -w DIR (a "
					     "subdirectory of your home is fine)",
					     ws);
		else if (path_below(home, ws))
			r = policy_error_set(err, WHERE, "workspace", -EINVAL,
					     "'%s' contains your home directory "
					     "%s; choose a project directory "
					     "with -w DIR",
					     ws, home);
	}
	for (size_t i = 0; i < ARRAY_SIZE(h); i++)
		free(h[i]);
	return r;
}

static int check_workspace(const struct bpfbox_policy *p, struct policy_error *err)
{
	char ws[PATH_MAX];
	const char *rule;
	struct stat st;

	if (!p->workspace)
		return policy_error_set(err, WHERE, "workspace", -EINVAL,
					"is not set; choose a project "
					"directory with -w DIR");
	if (p->workspace[0] != '/')
		return policy_error_set(err, WHERE, "workspace", -EINVAL,
					"'%s' is not an absolute path; choose "
					"a project directory with -w DIR",
					p->workspace);
	if (!realpath(p->workspace, ws)) {
		int e = errno;

		return policy_error_set(err, WHERE, "workspace", -e,
					"'%s': %s; choose a project directory "
					"with -w DIR",
					p->workspace, strerror(e));
	}
	if (stat(ws, &st) < 0 || !S_ISDIR(st.st_mode))
		return policy_error_set(err, WHERE, "workspace", -ENOTDIR,
					"'%s' is not a directory; choose a "
					"project directory with -w DIR",
					ws);
	if (streq(ws, "/"))
		return policy_error_set(err, WHERE, "workspace", -EINVAL,
					"'/' is the whole file system; choose "
					"a project directory with -w DIR");
	if (policy_is_system_dir(ws))
		return policy_error_set(err, WHERE, "workspace", -EINVAL,
					"'%s' is a system directory; choose a "
					"project directory with -w DIR",
					ws);
	rule = policy_writable_rule(ws);
	if (rule)
		return policy_error_set(err, WHERE, "workspace", -EINVAL,
					"'%s' is %s, the session may not write "
					"there; choose a project directory "
					"with -w DIR",
					ws, rule);
	return check_home(ws, err);
}

static int check_paths(const struct strv *list, const char *key, enum policy_grant kind,
		       struct policy_error *err)
{
	for (size_t i = 0; i < list->n; i++) {
		const char *s = list->v[i];
		char sub[64], msg[sizeof(err->message)];

		path_index(sub, sizeof(sub), key, i);
		if (s[0] != '/')
			return policy_error_set(err, WHERE, sub, -EINVAL,
						"'%s' is not an absolute path", s);
		if (policy_grant_problem(kind, s, msg, sizeof(msg)) < 0)
			return policy_error_set(err, WHERE, sub, -EINVAL, "%s", msg);
	}
	return 0;
}

static int check_limits(const struct policy_limits *lim, struct policy_error *err)
{
	for (size_t i = 0; i < policy_n_limit_defs; i++) {
		const struct limit_def *d = &policy_limit_defs[i];
		uint64_t v = *(const uint64_t *)((const char *)lim + d->offset);
		char sub[64];

		path_join(sub, sizeof(sub), "limits", d->key);
		if (d->kind == LK_CHOICE && v > 1)
			return policy_error_set(err, WHERE, sub, -EINVAL,
						"must be \"%s\" or \"%s\"", d->names[0],
						d->names[1]);
		if (v < d->min * d->scale)
			return policy_error_set(err, WHERE, sub, -EINVAL, "must be at least %llu",
						(unsigned long long)d->min);
	}
	return 0;
}

/* Whether a name rule of list covers host on port. */
static bool name_rule_covers(const struct strv *list, const char *host, uint16_t port)
{
	for (size_t i = 0; i < list->n; i++) {
		char pat[256];
		uint16_t lo, hi;

		if (net_name_rule_parse(list->v[i], pat, sizeof(pat), &lo, &hi) == 0 &&
		    net_name_match(pat, host) && port >= lo && port <= hi)
			return true;
	}
	return false;
}

/*
 * Each secret's hosts reachable on 443 by a name rule (the proxy injects
 * there only), its NAME given once and not also set by env.
 */
static int check_secrets(const struct bpfbox_policy *p, struct policy_error *err)
{
	for (size_t i = 0; i < p->secrets.n; i++) {
		struct secret_spec s, o;
		const char *why;
		size_t nl;

		if (secret_spec_parse(p->secrets.v[i], &s, &why) < 0)
			return policy_error_set(err, WHERE, "secrets", -EINVAL, "%s", why);
		nl = strlen(s.name);
		if (p->net != NET_DENY)
			return policy_error_set(err, WHERE, "secrets", -EINVAL,
						"secret %s: --net allow leaves every host open; "
						"secrets need --net deny with --net-allow",
						s.name);
		for (size_t j = 0; j < s.n_hosts; j++)
			if (!name_rule_covers(&p->net_allow, s.hosts[j], 443) ||
			    name_rule_covers(&p->net_deny, s.hosts[j], 443))
				return policy_error_set(
					err, WHERE, "secrets", -EINVAL,
					"secret %s: %s is not allowed on port 443; add "
					"--net-allow %s:443",
					s.name, s.hosts[j], s.hosts[j]);
		for (size_t j = 0; j < p->env.n; j++)
			if (!strncmp(p->env.v[j], s.name, nl) && p->env.v[j][nl] == '=')
				return policy_error_set(err, WHERE, "secrets", -EINVAL,
							"secret %s is also set by env: remove one",
							s.name);
		for (size_t j = 0; j < i; j++)
			if (secret_spec_parse(p->secrets.v[j], &o, &why) == 0 &&
			    streq(o.name, s.name))
				return policy_error_set(err, WHERE, "secrets", -EINVAL,
							"secret %s is given twice", s.name);
	}
	return 0;
}

/*
 * net_ask extends an allow-list of names: the proxy and resolver that ask
 * run for a session with one (docs/network.md, "Asking for a destination").
 */
static int check_net_ask(const struct bpfbox_policy *p, struct policy_error *err)
{
	char host[256];
	uint16_t lo, hi;

	if (!p->net_ask)
		return 0;
	for (size_t i = 0; p->net == NET_DENY && i < p->net_allow.n; i++)
		if (net_name_rule_parse(p->net_allow.v[i], host, sizeof(host), &lo, &hi) == 0)
			return 0;
	return policy_error_set(err, WHERE, "net_ask", -EINVAL,
				"--net-ask extends an allow-list of names under --net deny: "
				"give at least one --net-allow NAME[:PORT] rule (the host the "
				"task is known to need)");
}

int policy_validate(const struct bpfbox_policy *p, struct policy_error *err)
{
	int r;

	if ((unsigned int)p->mode > MODE_FULL_ACCESS)
		return policy_error_set(err, WHERE, "mode", -EINVAL, "unknown mode %d",
					(int)p->mode);
	if ((unsigned int)p->net > NET_ALLOW)
		return policy_error_set(err, WHERE, "network", -EINVAL, "unknown network policy %d",
					(int)p->net);
	r = check_workspace(p, err);
	if (r < 0)
		return r;
	r = check_paths(&p->ro_paths, "ro", GRANT_RO, err);
	if (r < 0)
		return r;
	r = check_paths(&p->rw_paths, "rw", GRANT_RW, err);
	if (r < 0)
		return r;
	r = check_paths(&p->devices, "devices", GRANT_DEVICE, err);
	if (r < 0)
		return r;
	if (p->devices.n > POLICY_MAX_DEVICES)
		return policy_error_set(err, WHERE, "devices", -E2BIG,
					"%zu device nodes: a session takes at most %d",
					p->devices.n, POLICY_MAX_DEVICES);
	for (size_t i = 0; i < p->env.n; i++)
		if (!strchr(p->env.v[i], '=') || p->env.v[i][0] == '=')
			return policy_error_set(err, WHERE, "env", -EINVAL,
						"'%s' is not NAME=VALUE", p->env.v[i]);
	r = check_limits(&p->limits, err);
	if (r < 0)
		return r;
	r = check_secrets(p, err);
	if (r < 0)
		return r;
	r = check_net_ask(p, err);
	if (r < 0)
		return r;
	if (p->user && !getpwnam(p->user))
		return policy_error_set(err, WHERE, "user", -EINVAL,
					"unknown user '%s'; create the account "
					"or remove 'user'",
					p->user);
	return 0;
}
