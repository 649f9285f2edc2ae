/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Landlock: ABI discovery and the rights each ABI lets bpfbox enforce.
 * The system headers of older distributions lack the newer constants, so
 * the ones bpfbox uses are defined here from the kernel's UAPI.
 */
#ifndef BPFBOX_LANDLOCK_H
#define BPFBOX_LANDLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/landlock.h>

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP	(1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL		    (1ULL << 1)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF
#define LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF  (1U << 0)
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON	  (1U << 1)
#define LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF (1U << 2)
#endif
#ifndef LANDLOCK_ACCESS_FS_RESOLVE_UNIX
#define LANDLOCK_ACCESS_FS_RESOLVE_UNIX (1ULL << 16)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_UDP
#define LANDLOCK_ACCESS_NET_BIND_UDP	     (1ULL << 2)
#define LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP (1ULL << 3)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_TSYNC
#define LANDLOCK_RESTRICT_SELF_TSYNC (1U << 3)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_NO_NEW_PRIVS
#define LANDLOCK_RESTRICT_SELF_NO_NEW_PRIVS (1U << 4)
#endif
#ifndef LANDLOCK_RULE_NET_PORT
#define LANDLOCK_RULE_NET_PORT 2
#endif

/* Newest ABI this code knows; newer kernels are used at this level. */
#define BPFBOX_LANDLOCK_ABI_MAX 11

/* The full ruleset attribute of ABI 6+, zeroed fields for older ABIs. */
struct bpfbox_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct bpfbox_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

/* What one ABI lets bpfbox enforce. */
struct landlock_rights {
	int abi;
	uint64_t fs;
	uint64_t net;
	uint64_t scoped;
	uint32_t restrict_flags; /* logging flags accepted by restrict_self */
};

/* Rights that only make sense on directories. */
#define LANDLOCK_FS_DIR_ONLY                                             \
	(LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |   \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |     \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |   \
	 LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER)

#define LANDLOCK_FS_READ \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/*
 * Returns the kernel's Landlock ABI (>= 1), or -EOPNOTSUPP when Landlock
 * is built in but not enabled at boot, or -ENOSYS when it is not built in.
 */
int landlock_abi(void);

/* Fills *r with what abi supports, downgrading from the newest ABI. */
void landlock_rights_for_abi(int abi, struct landlock_rights *r);

/* Names of the rights in r, comma separated, for status and verbose. */
void landlock_rights_describe(const struct landlock_rights *r, char *buf, size_t size);

int landlock_create_ruleset(const struct bpfbox_ruleset_attr *attr, uint32_t flags);
int landlock_add_rule(int ruleset_fd, int rule_type, const void *attr, uint32_t flags);
int landlock_restrict_self(int ruleset_fd, uint32_t flags);

struct bpfbox_policy;
struct grant_fds;

/*
 * Builds the session's ruleset in the calling (parent) process so that any
 * error surfaces before a child exists: rw on the workspace (ro in
 * read-only mode) and the private tmp dir, ro on the system directories
 * minus the absolute deny paths (masked: a mount namespace covers them, no
 * carve-out), a few device nodes, TCP denied when the network is, scopes on. Returns the ruleset fd or -errno; *bad names the
 * path that failed.
 */
struct strv;

/* What a session adds to its policy's grants (docs/runtime.md). */
struct landlock_extra {
	const char *private_tmp; /* read-write, NULL: none */
	const char *home;	 /* the private home, read-write, NULL: none */
	const struct strv *ro;	 /* read and exec (PATH entries under the caller's home) */
	const char *caller_home; /* the credential names under it are left out of grants */
	bool read_host;		 /* read and exec of the whole host but the credential paths */
	bool masked;		 /* a mount namespace masks the absolute deny paths */
	const struct grant_fds *grants; /* the workspace and grants as checked; NULL: by path */
	bool private_net;		/* a network namespace of its own: no TCP/UDP rule (ns.h) */
};

/* Whether path (resolved) lies in a system tree every session reads (/usr, /etc, ...). */
bool landlock_system_readable(const char *path);

int landlock_build_ruleset(const struct bpfbox_policy *p, const struct landlock_rights *rights,
			   const struct landlock_extra *x, uid_t uid, gid_t gid, const char **bad);

/* The restrict_self flags for this ABI (audit logging of denials on). */
uint32_t landlock_restrict_flags(const struct landlock_rights *rights);

#endif
