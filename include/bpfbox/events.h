/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel side and the user side of bpfbox share: the ring buffer
 * records and the keys and values of the policy maps. Plain C types only,
 * so both a BPF program (vmlinux.h) and userspace (linux/types.h) compile
 * it. Every record starts with struct bpfbox_event_hdr.
 */
#ifndef BPFBOX_EVENTS_H
#define BPFBOX_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#endif

#define BPFBOX_COMM_LEN	    16
#define BPFBOX_PATH_LEN	    256
#define BPFBOX_ARGV_LEN	    4096 /* argv bytes kept at most, NUL separated (a power of two) */
#define BPFBOX_NAME_LEN	    64	 /* one path component in a deny rule */
#define BPFBOX_MAX_SESSIONS 4096

enum bpfbox_event_type {
	BPFBOX_EV_EXEC = 1,
	BPFBOX_EV_EXIT = 2,
	BPFBOX_EV_FORK = 3,
	BPFBOX_EV_FILE = 4,
	BPFBOX_EV_CONNECT = 5,
	BPFBOX_EV_COMM = 6, /* prctl(PR_SET_NAME): the header has the old comm */
	BPFBOX_EV_NET = 7,  /* a decision of the egress proxy or resolver */
};

/* Who decided. */
enum bpfbox_layer {
	BPFBOX_LAYER_NONE = 0,
	BPFBOX_LAYER_LANDLOCK = 1,
	BPFBOX_LAYER_SECCOMP = 2,
	BPFBOX_LAYER_CGROUP_BPF = 3,
	BPFBOX_LAYER_BPF_LSM = 4,
	BPFBOX_LAYER_KERNEL = 5, /* denied, but by none of ours (DAC, ...) */
	BPFBOX_LAYER_EGRESS = 6, /* the egress proxy or resolver (userspace/net/) */
	BPFBOX_LAYER_MOUNT = 7,	 /* the session's read-only view of the host (EROFS) */
	BPFBOX_LAYER_EXEC_TP =
		8, /* a command rule: SIGKILL at sched_process_exec (bpf/cmd.bpf.c) */
};

enum bpfbox_decision {
	BPFBOX_ALLOW = 0,
	BPFBOX_DENY = 1,
};

struct bpfbox_event_hdr {
	__u32 type;    /* enum bpfbox_event_type */
	__u32 session; /* session index, the value of the sessions map */
	__u64 seq;     /* per-session sequence number; gaps are losses */
	__u64 ts_ns;   /* bpf_ktime_get_ns() */
	__u32 pid;     /* thread group id */
	__u32 tid;
	__u32 ppid;
	__u32 uid;
	char comm[BPFBOX_COMM_LEN];
	__u8 decision; /* enum bpfbox_decision */
	__u8 layer;    /* enum bpfbox_layer */
	__u16 pad;
	__s32 err; /* the syscall's -errno, 0 if it succeeded */
};

struct bpfbox_exec_event {
	struct bpfbox_event_hdr hdr;
	__u32 argv_len;	      /* bytes used in argv */
	__u32 argv_truncated; /* BPFBOX_EXEC_* bits (historical name) */
	char filename[BPFBOX_PATH_LEN];
	char argv[BPFBOX_ARGV_LEN];
	char via[64];  /* BPFBOX_EXEC_VIA_FD: the name of the file the fd held */
	char rule[48]; /* BPFBOX_EXEC_RULE: the command rule's label */
};

#define BPFBOX_EXEC_TRUNCATED 1	 /* argv was cut at the bound */
#define BPFBOX_EXEC_VIA_FD    2	 /* run through a file descriptor (fexecve, memfd) */
#define BPFBOX_EXEC_RULE      4	 /* a command rule decided (rule, action in err's place) */
#define BPFBOX_EXEC_ASK	      8	 /* the rule's action was ask (no answer: denied) */
#define BPFBOX_EXEC_PENDING   16 /* ask: stopped (SIGSTOP) for the runtime's answer */

/*
 * Command rules (userspace/policy/rules.c compiles them, bpf/cmd.bpf.c
 * checks every exec of a session that has them): the value of cmd_rules,
 * keyed by the session index. First match wins.
 */
#define BPFBOX_CMD_RULES_MAX 64
#define BPFBOX_CMD_EXE_LEN   64
#define BPFBOX_CMD_PAT_LEN   64
#define BPFBOX_CMD_LABEL_LEN 48
#define BPFBOX_CMD_ARGV_SCAN BPFBOX_ARGV_LEN /* argv bytes (joined) a pattern is sought in */

enum bpfbox_cmd_exe {
	BPFBOX_CMD_EXE_ANY = 0,
	BPFBOX_CMD_EXE_NAME = 1,	/* exe_hash: the file's name or its target's */
	BPFBOX_CMD_EXE_PATH = 2,	/* exe_hash: the path the exec named */
	BPFBOX_CMD_EXE_NAME_PREFIX = 3, /* exe[0..exe_len): a prefix of either name */
	BPFBOX_CMD_EXE_PATH_PREFIX = 4, /* ... of the path */
};

enum bpfbox_cmd_action {
	BPFBOX_CMD_ALLOW = 0,
	BPFBOX_CMD_DENY = 1,
	BPFBOX_CMD_ASK = 2,
};

struct bpfbox_cmd_rule {
	__u64 exe_hash; /* FNV-1a 64 */
	__u8 action;	/* enum bpfbox_cmd_action */
	__u8 exe_kind;	/* enum bpfbox_cmd_exe */
	__u8 exe_len;
	__u8 pat_len; /* 0: any argv */
	__u32 pad;
	char exe[BPFBOX_CMD_EXE_LEN];
	char pat[BPFBOX_CMD_PAT_LEN]; /* words of argv joined with spaces */
	char label[BPFBOX_CMD_LABEL_LEN];
};

/*
 * A pattern matches argv (joined with spaces) at whole words: where its
 * first byte is a word byte (letter, digit, '_', '-', '.'), the byte
 * before the match is none, a separator (space, tab, newline, ';', '|',
 * '&', a quote or a backquote), '(' or '/'; unless its last byte opens it
 * ('=', '.', ' '), the byte after is none, a separator or ')'.
 * So "rm -rf /" refuses "rm -rf /" and "/bin/rm -rf / x" but not
 * "rm -rf /tmp/x", and "halt" not "asphalt". One definition for the
 * kernel's test (bpf/cmd.bpf.c) and userspace's (policy/rules.c).
 */
static __always_inline int bpfbox_cmd_word(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

static __always_inline int bpfbox_cmd_sep(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '|' || c == '&' ||
	       c == '\'' || c == '"' || c == '`';
}

/* prev: the byte before the match (0: none); first: the pattern's first. */
static __always_inline int bpfbox_cmd_starts_ok(unsigned char prev, unsigned char first)
{
	return !prev || !bpfbox_cmd_word(first) || bpfbox_cmd_sep(prev) || prev == '(' ||
	       prev == '/';
}

/* next: the byte after the match (0: none); last: the pattern's last. */
static __always_inline int bpfbox_cmd_ends_ok(unsigned char next, unsigned char last)
{
	return !next || last == '=' || last == '.' || last == ' ' || bpfbox_cmd_sep(next) ||
	       next == ')';
}

#define BPFBOX_CMD_PAIR_WORDS 1024 /* 65536 bits: one per pair of bytes */

struct bpfbox_cmd_table {
	__u32 n;
	__u32 pad;
	struct bpfbox_cmd_rule r[BPFBOX_CMD_RULES_MAX];
	/*
	 * Bit (a << 8 | b): some pattern starts with the bytes a, b (a
	 * one-byte pattern a sets every (a, b)). The kernel compares patterns
	 * only where argv has such a pair.
	 */
	__u64 pairs[BPFBOX_CMD_PAIR_WORDS];
};

struct bpfbox_exit_event {
	struct bpfbox_event_hdr hdr;
	__s32 exit_code; /* WEXITSTATUS-style code, or -1 if signalled */
	__u32 signal;
};

struct bpfbox_fork_event {
	struct bpfbox_event_hdr hdr;
	__u32 child_pid;
	__u32 pad;
};

/* What a file record is about: an open, or a refused change (issue 18). */
enum bpfbox_file_op {
	BPFBOX_FILE_OPEN = 0,
	BPFBOX_FILE_UNLINK = 1,
	BPFBOX_FILE_RMDIR = 2,
	BPFBOX_FILE_RENAME = 3,
	BPFBOX_FILE_MKDIR = 4,
	BPFBOX_FILE_LINK = 5,
	BPFBOX_FILE_SYMLINK = 6,
	BPFBOX_FILE_CHMOD = 7,
	BPFBOX_FILE_UTIMES = 8,
	BPFBOX_FILE_CHOWN = 9,
	BPFBOX_FILE_SETXATTR = 10,
	BPFBOX_FILE_REMOVEXATTR = 11,
};

struct bpfbox_comm_event {
	struct bpfbox_event_hdr hdr; /* comm: the name before the change */
	char new_comm[BPFBOX_COMM_LEN];
};

struct bpfbox_file_event {
	struct bpfbox_event_hdr hdr;
	__u32 flags; /* open(2) flags */
	__u32 count; /* identical allowed opens aggregated into this one */
	__u32 op;    /* enum bpfbox_file_op */
	__u32 pad;
	char path[BPFBOX_PATH_LEN];
};

struct bpfbox_connect_event {
	struct bpfbox_event_hdr hdr;
	__u16 family; /* AF_INET, AF_INET6, AF_UNIX */
	__u16 port;   /* host byte order */
	__u32 protocol;
	__u8 addr[16]; /* IPv4 in the first 4 bytes */
	char unix_path[108];
};

/* The aggregation map of allowed opens (audit.bpf.c), read by the agent
 * to flush what is still counted when a session ends. */
struct bpfbox_agg_key {
	__u32 session;
	__u32 pid;
	__u32 flags;
	char path[BPFBOX_PATH_LEN];
};

struct bpfbox_agg_val {
	__u64 first_ns;
	__u64 count; /* opens folded since first_ns, not yet reported */
	__u32 tid;   /* the first opener */
	__u32 ppid;
	__u32 uid;
	__u32 pad;
	char comm[BPFBOX_COMM_LEN];
};

/*
 * Value of the oom_victims map (key: session index): the process the OOM
 * killer last chose while a process of the session invoked it.
 */
struct bpfbox_oom_victim {
	__u64 ts_ns;		    /* CLOCK_MONOTONIC */
	__u32 pid;		    /* the victim */
	__u32 invoker;		    /* the process that invoked the OOM killer */
	char comm[BPFBOX_COMM_LEN]; /* "" when the kernel's tracepoint has none */
};

/* Value of the sessions map (key: the session cgroup's id). */
struct bpfbox_session {
	__u32 id;	  /* session index, 1-based */
	__u32 flags;	  /* BPFBOX_SF_* */
	__u64 seq;	  /* next sequence number (atomically incremented) */
	__u64 lost;	  /* records that found the ring full */
	__u16 proxy_port; /* egress proxy on 127.0.0.1, host order (BPFBOX_SF_NET_PROXY) */
	__u16 dns_port;	  /* egress resolver on 127.0.0.1, host order */
	__u32 started;	  /* set by the session's first exec (BPFBOX_SF_FROM_EXEC) */
	/*
	 * Failed execs with ENOENT or ENOTDIR (a shell or execvp trying each
	 * PATH entry) after the session's first exec: counted here, never a
	 * record (docs/events.md).
	 */
	__u64 exec_not_found;
};

#define BPFBOX_SF_NET_DENY   (1U << 0) /* only the allow-list may connect */
#define BPFBOX_SF_AUDIT_ALL  (1U << 1) /* no aggregation of allowed opens */
#define BPFBOX_SF_AUDIT_OFF  (1U << 2) /* decisions only, no observation */
#define BPFBOX_SF_ALLOW_META (1U << 3) /* cloud metadata address allowed */
#define BPFBOX_SF_LANDLOCK   (1U << 4) /* Landlock holds: EACCES is its denial */
#define BPFBOX_SF_NET_BPF    (1U << 5) /* our cgroup programs report their denials */
#define BPFBOX_SF_NET_PROXY  (1U << 6) /* name rules: TCP and DNS go to the egress proxy */
/* BPF LSM fills what the session's Landlock ABI lacks (docs/lsm.md): */
#define BPFBOX_SF_GAP_SCOPE (1U << 7)  /* ABI < 6: abstract unix and signals stay inside */
#define BPFBOX_SF_GAP_UNIX  (1U << 8)  /* ABI < 9: pathname unix only into the writable set */
#define BPFBOX_SF_GAP_META  (1U << 9)  /* chmod, chown, xattrs only in the writable set */
#define BPFBOX_SF_MOUNT_RO  (1U << 10) /* mount namespace: EROFS is its denial */
#define BPFBOX_SF_CMD_RULES (1U << 11) /* command rules in cmd_rules (bpf/cmd.bpf.c) */
#define BPFBOX_SF_CMD_ASK   (1U << 12) /* someone answers asks: stop, do not kill */
/* Our BPF LSM holds the session's lists (Full): EPERM is its refusal, already reported. */
#define BPFBOX_SF_BPF_LSM (1U << 13)
/*
 * Observed from the session's first exec on: what ran before it in the
 * session's cgroup is bpfbox's own set-up (bpfbox run), not the command.
 */
#define BPFBOX_SF_FROM_EXEC (1U << 14)
/*
 * Network deny in a network namespace of the session's own (docs/network.md):
 * loopback destinations are its own, allowed when the socket is not in the
 * initial network namespace.
 */
#define BPFBOX_SF_NET_LOOPBACK (1U << 15)

/* Key of the BPF LSM's writable set: a directory by device and inode. */
struct bpfbox_inode_key {
	__u32 session;
	__u32 pad;
	__u64 dev; /* the kernel's dev_t: major << 20 | minor */
	__u64 ino;
};

/*
 * The file systems a session's set-up made (the tmpfs of its /tmp and
 * /dev/shm, mounted by its child before exec, in its cgroup), by the
 * kernel's dev_t: the BPF LSM learns them (sb_kern_mount) and counts every
 * file on them in the writable set. Value of own_sbs, keyed by session.
 */
#define BPFBOX_OWN_SBS 4
struct bpfbox_own_sbs {
	__u64 dev[BPFBOX_OWN_SBS]; /* 0: a free slot */
};

/* Key of the network allow-list (LPM trie): session, then address bits. */
struct bpfbox_net_key {
	__u32 prefixlen; /* 32 (session) + address prefix length */
	__u32 session;
	__u8 addr[16]; /* IPv4 mapped as ::ffff:a.b.c.d */
};

struct bpfbox_net_rule {
	__u16 port_lo; /* inclusive, host byte order; 0-65535 means any */
	__u16 port_hi;
};

/*
 * Egress by name (userspace/net/, docs/network.md). connect4/6 keep the
 * original destination of a redirected socket in its storage; sockops
 * copies it to net_orig under the 4-tuple's ports once the local port is
 * known, where the proxy finds it after accept().
 */
#define BPFBOX_ORIG_PROXY    1 /* a TCP connect sent to the proxy */
#define BPFBOX_ORIG_DNS	     2 /* a DNS datagram socket sent to the resolver */
#define BPFBOX_ORIG_EXPLICIT 3 /* a connect to the proxy itself (HTTP_PROXY) */

struct bpfbox_net_orig {
	__u8 addr[16]; /* IPv4 mapped as ::ffff:a.b.c.d */
	__u16 port;    /* host byte order */
	__u16 family;  /* of the tool's socket */
	__u32 kind;    /* BPFBOX_ORIG_* */
	__u32 pid;
	__u32 tid;
	__u32 uid;
	__u32 session;
	char comm[BPFBOX_COMM_LEN];
};

struct bpfbox_orig_key {
	__u16 client_port; /* the tool's local port, host order */
	__u16 proxy_port;  /* the listener it reached, host order */
};

/* Addresses the resolver answered for a session's allowed names. */
struct bpfbox_resolved_key {
	__u32 session;
	__u8 addr[16];
};

#define BPFBOX_NET_NAME_LEN 128
#define BPFBOX_NET_RULE_LEN 96
#define BPFBOX_NET_PATH_LEN 192

enum bpfbox_net_kind {
	BPFBOX_NET_TCP = 0,	/* TLS SNI, HTTP Host or the address alone */
	BPFBOX_NET_DNS = 1,	/* a query to the resolver */
	BPFBOX_NET_CONNECT = 2, /* HTTP CONNECT or an absolute URI (HTTP_PROXY) */
	BPFBOX_NET_REQUEST = 3, /* one request of a terminated connection (net.request) */
};

struct bpfbox_net_event {
	struct bpfbox_event_hdr hdr;
	__u16 family;
	__u16 port;
	__u8 kind; /* enum bpfbox_net_kind */
	__u8 how;  /* 0 address, 1 sni, 2 host, 3 connect, 4 query, 5 request */
	__u16 pad;
	__u8 addr[16];	 /* IPv4 mapped */
	__u64 bytes_out; /* tool -> destination, at close */
	__u64 bytes_in;
	char name[BPFBOX_NET_NAME_LEN];
	char rule[BPFBOX_NET_RULE_LEN];
	char reason[BPFBOX_NET_RULE_LEN];
	/* BPFBOX_NET_REQUEST: the request's method and path (no query), the
	 * server's status (0: none seen). */
	__u16 status;
	char method[16];
	char path[BPFBOX_NET_PATH_LEN];
};

/* What the proxy hands the net_emit syscall program. */
struct bpfbox_net_emit {
	__u64 cgroup_id;
	struct bpfbox_net_event ev;
};

/*
 * Where a session may connect to pathname unix sockets (cgroup/connect_unix,
 * kernel >= 6.7): its workspace, private tmp and rw paths. Landlock (ABI <=
 * 7) does not mediate these connects, and they lead to docker.sock,
 * ssh-agent and D-Bus.
 */
#define BPFBOX_UNIX_PREFIXES 4
#define BPFBOX_UNIX_PATH_LEN 108

struct bpfbox_unix_allow {
	__u32 n;
	__u16 len[BPFBOX_UNIX_PREFIXES];
	char prefix[BPFBOX_UNIX_PREFIXES][BPFBOX_UNIX_PATH_LEN];
};

/* Key of the name sets of the file policy (BPF LSM). */
struct bpfbox_name_key {
	__u32 session;
	__u32 kind; /* enum bpfbox_name_kind */
	char name[BPFBOX_NAME_LEN];
};

enum bpfbox_name_kind {
	BPFBOX_NAME_EXACT = 1,	   /* the file's own name: .env, id_rsa */
	BPFBOX_NAME_COMPONENT = 2, /* any directory on the path: .ssh, .aws */
	BPFBOX_NAME_SUFFIX = 3,	   /* the name's ending after its last dot: pem */
	BPFBOX_NAME_EXEC = 4,	   /* a binary's name that may not be executed */
};

#endif
