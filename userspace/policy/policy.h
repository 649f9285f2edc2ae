/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The effective policy of one session: what the sandbox layers enforce.
 * Built from layers (defaults -> global config -> agent -> mode -> task ->
 * command-line flags); see docs/config.md for the JSON format.
 */
#ifndef BPFBOX_POLICY_H
#define BPFBOX_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

enum sandbox_mode {
	MODE_WORKSPACE_WRITE,
	MODE_READ_ONLY,
	MODE_FULL_ACCESS,
};

/* Where the session's writes to its workspace go (docs/runtime.md, "Change sets"). */
enum changes_mode {
	CHANGES_DIRECT, /* into the workspace, as they happen */
	CHANGES_REVIEW, /* into a change set kept outside the session, for bpfbox apply */
	CHANGES_APPLY,	/* the same, applied when the command exits 0 */
};

enum net_policy {
	NET_DENY,
	NET_ALLOW,
};

/* A NULL-terminated, owned list of strings. */
struct strv {
	char **v;
	size_t n;
};

int strv_push(struct strv *s, const char *str);
void strv_clear(struct strv *s);
bool strv_contains(const struct strv *s, const char *str);

enum cmd_action {
	CMD_ALLOW = 0, /* the values of enum bpfbox_cmd_action */
	CMD_DENY = 1,
	CMD_ASK = 2,
};

/* One command rule (userspace/policy/rules.h): first match wins. */
struct cmd_rule {
	char *exe;  /* name or absolute path, a trailing '*' a prefix; NULL: any */
	char *argv; /* substring of argv joined with spaces; NULL: any */
	enum cmd_action action;
	char *origin; /* the layer that added it */
};

struct cmd_rules {
	struct cmd_rule *v;
	size_t n;
};

/* The seed's denied command patterns (the defaults of deny_commands; rules.c). */
extern const char *const rules_default_deny[];
extern const size_t rules_n_default_deny;

/* A deep copy of src into dst; 0 or -ENOMEM (dst is then empty). */
int cmd_rules_copy(struct cmd_rules *dst, const struct cmd_rules *src);
void cmd_rules_clear(struct cmd_rules *r);

struct policy_limits {
	uint64_t timeout_ms;   /* 0: none */
	uint64_t output_bytes; /* cap on stdout+stderr, 0: none */
	uint64_t memory_mb;
	uint64_t pids;
	uint64_t cpu_percent; /* of one core */
	uint64_t disk_mb;
	uint64_t file_size_mb;	   /* RLIMIT_FSIZE */
	uint64_t open_files;	   /* RLIMIT_NOFILE */
	uint64_t pause_timeout_ms; /* a paused session is killed after this */
	uint64_t timeout_counts;   /* TIMEOUT_COUNTS_*: wall-clock or running time */
	uint64_t on_oom;	   /* ON_LIMIT_*: what an OOM kill does to the session */
	uint64_t on_disk;	   /* ON_LIMIT_*: what the disk limit does */
};

/*
 * How long a paused session waits (for `bpfbox resume` or a runtime that
 * raises the limit) before it is killed: an unattended caller's tool call
 * still ends within timeout + this (docs/limits.md).
 */
#define POLICY_PAUSE_TIMEOUT_S 60
/*
 * The default pids.max: tasks, threads included (the cgroup counts both).
 * A fork bomb stops at it; a program with a few hundred threads (a thread
 * pool per core, worker threads, a JVM) does not (docs/limits.md).
 */
#define POLICY_PIDS_DEFAULT 1024

enum { TIMEOUT_COUNTS_WALL, TIMEOUT_COUNTS_RUNNING };

/* The most --device nodes a session takes (each a mount in its small /dev). */
#define POLICY_MAX_DEVICES 16
enum { ON_LIMIT_PAUSE, ON_LIMIT_KILL };

struct bpfbox_policy {
	enum sandbox_mode mode;
	char *workspace;	    /* absolute path, symlinks resolved */
	struct strv ro_paths;	    /* read-only (and exec) besides the system dirs */
	struct strv rw_paths;	    /* read-write besides workspace and private tmp */
	struct strv devices;	    /* character device nodes, read-write (--device) */
	struct strv deny_paths;	    /* credential patterns (BPF LSM layer) */
	struct strv net_allow;	    /* "HOST[:PORT[-PORT]]" reachable even when network is deny */
	struct strv net_deny;	    /* exceptions to net_allow, same form */
	struct strv secrets;	    /* "NAME[=file:PATH]@HOST[,HOST...]" (secret_spec_parse) */
	struct strv exec_deny;	    /* names or absolute paths never executed (BPF LSM) */
	struct strv deny_commands;  /* substrings of argv that deny an exec (rules.c) */
	struct cmd_rules cmd_rules; /* after deny_commands, first match wins */
	enum net_policy net;
	struct strv env; /* NAME=value added to the allowlisted environment */
	struct policy_limits limits;
	char *user;	       /* run as this user (root only), NULL: same */
	char *net_resolver;    /* upstream of the egress resolver, NULL: resolv.conf */
	bool allow_unconfined; /* run even when neither Landlock nor seccomp holds */
	bool read_host;	       /* read the whole host but the credential paths (--read-host) */
	bool net_ask;	       /* an unlisted name waits for the runtime's answer (--net-ask) */
	bool private_tmp;      /* a fresh rw /tmp dir inside the session */
	bool namespaces;       /* mount, PID, IPC (and user) namespaces (docs/SECURITY.md) */
	bool ssh_agent;	       /* the caller's SSH agent reachable in the session (--ssh-agent) */
	enum changes_mode changes;     /* --changes: direct, review, apply */
	unsigned int undo_generations; /* "undo": the history of applies kept, at most */
	uint64_t undo_mb;
	struct strv origins; /* where each layer came from, for --verbose */
};

/* Where a config error is: the file and the JSON path, for one-line errors. */
struct policy_error {
	char file[256];
	char path[128]; /* e.g. "agents.claude.limits.pids" */
	char message[256];
};

/* The built-in defaults (docs/config.md). workspace is left NULL (cwd later). */
void policy_init(struct bpfbox_policy *p);

/*
 * Where the name deny patterns apply (docs/config.md "Deny patterns"):
 * not below the system and library trees (absolute paths, NULL-terminated)
 * outside the session's writable set; NAME.* and directory patterns not to
 * a file with one of the source-code extensions (NULL-terminated, without
 * the dot). One list for every layer that applies the patterns.
 */
extern const char *const policy_system_trees[];
extern const char *const policy_source_exts[];
/* name's last extension is a source-code one ("secrets.py": true; ".py": false). */
bool policy_source_name(const char *name);
/*
 * Public files a pattern would name (CA bundles of packages), as DIR/NAME,
 * NULL-terminated: no pattern denies them (docs/config.md).
 */
extern const char *const policy_public_files[];
/* path (len bytes, absolute) ends in one of policy_public_files. */
bool policy_public_file(const char *path, size_t len);
void policy_free(struct bpfbox_policy *p);
/* A deep copy of src into dst (policy_free() it); 0 or -ENOMEM. */
int policy_dup(struct bpfbox_policy *dst, const struct bpfbox_policy *src);

/*
 * Merges one layer (a JSON object in the format of docs/config.md) into p:
 * absent keys inherit, scalars replace, `extra` appends to lists and
 * `restrictions` replaces them. origin names the layer in errors.
 * Returns 0 or -EINVAL with *err filled.
 */
int policy_merge_layer(struct bpfbox_policy *p, struct json_object *layer, const char *origin,
		       struct policy_error *err);

/* The global config read when policy_sources.global_file is NULL. */
#define POLICY_DEFAULT_CONFIG "/etc/bpfbox/config.json"

/* Where to find the layers. NULL members are skipped. */
struct policy_sources {
	const char *global_file;   /* default /etc/bpfbox/config.json if exists */
	const char *agent;	   /* --agent NAME: the global file's agents.NAME */
	const char *task_file;	   /* --task FILE */
	struct json_object *flags; /* the command line as a layer */
	/* NULL-terminated: more layer files applied after task_file, in order,
	 * with the rights of a task file (origin "file:PATH"). */
	const char *const *files;
	bool no_global; /* built-in defaults only: skip the global config */
};

/*
 * Builds the effective policy: defaults, then each layer in order, then
 * path expansion ($VAR, <cwd>) and validation. -errno with *err filled.
 * p need not be initialised; on error it is left empty (policy_free is a
 * no-op on it), on success the caller frees it with policy_free.
 */
int policy_load(struct bpfbox_policy *p, const struct policy_sources *src,
		struct policy_error *err);

/* Checks the invariants run relies on (workspace exists, not /, ...). */
int policy_validate(const struct bpfbox_policy *p, struct policy_error *err);

/* "FILE: at PATH: MESSAGE" (no "at PATH: " when path is empty) in buf. */
const char *policy_error_format(const struct policy_error *err, char *buf, size_t size);

/* The effective policy as JSON (what `policy check` and --verbose print). */
struct json_object *policy_to_json(const struct bpfbox_policy *p);

/*
 * Parses one net_allow rule: "10.0.0.0/8", "127.0.0.1:8080",
 * "::1/128:8000-8100". A bare address is a /32 or /128; no port means all.
 * cidr gets "ADDR/LEN". -EINVAL with nothing written on a bad rule.
 */
int net_rule_parse(const char *rule, char *cidr, size_t size, uint16_t *lo, uint16_t *hi);

/*
 * Parses a name rule: "pypi.org", "*.githubusercontent.com:443",
 * "example.com:8000-8100". host gets the name in lower case (a wildcard
 * keeps its "*." prefix). -EINVAL on anything else (addresses included).
 */
int net_name_rule_parse(const char *rule, char *host, size_t size, uint16_t *lo, uint16_t *hi);

/*
 * An HTTP rule (docs/network.md, "Per-request rules"): a name rule for
 * port 443 (TLS the proxy terminates) or 80 (plain HTTP), followed by " METHODS PATH", e.g. "api.github.com:443
 * GET,POST /repos/acme/ANY" (ANY being two stars). METHODS: upper-case tokens joined by ',', or
 * '*'; PATH: '/' then any bytes but blanks and controls, '*' matching
 * within a segment and "**" across them. net_name_rule_parse() takes the
 * host and port of such a rule. 1 with methods and path filled, 0 for a
 * rule without them, -EINVAL with *why saying what is wrong.
 */
#define NET_HTTP_METHODS_LEN 64
#define NET_HTTP_PATH_LEN    192
int net_http_rule_parse(const char *rule, char methods[NET_HTTP_METHODS_LEN],
			char path[NET_HTTP_PATH_LEN], const char **why);
/* Whether method and path (no query) match an HTTP rule's methods and path. */
bool net_http_match(const char *methods, const char *pattern, const char *method, const char *path);

/*
 * Whether name matches pattern (a name or "*.suffix"), case-insensitively
 * on whole labels: "*.example.com" matches a.example.com and a.b.example.com,
 * not example.com nor badexample.com.
 */
bool net_name_match(const char *pattern, const char *name);

/*
 * A secret held outside the session (docs/network.md): "NAME@HOST[,HOST...]",
 * its value in the caller's variable NAME, or "NAME=file:PATH@HOST[,...]",
 * its value in the file. The spec names no value: it may be shown.
 */
#define SECRET_MAX_HOSTS 8
struct secret_spec {
	char name[65];			   /* a variable name */
	char path[4096];		   /* "" when the value is in the variable NAME */
	char hosts[SECRET_MAX_HOSTS][254]; /* plain names, lower case, no port */
	size_t n_hosts;
	bool query; /* "+query": also replaced in the request's query (URL-encoded) */
};

/* Parses a spec into *out: 0, or -EINVAL with *why saying what is wrong. */
int secret_spec_parse(const char *spec, struct secret_spec *out, const char **why);

const char *sandbox_mode_name(enum sandbox_mode m);
int sandbox_mode_parse(const char *s, enum sandbox_mode *out);
const char *changes_mode_name(enum changes_mode m);
int changes_mode_parse(const char *s, enum changes_mode *out);

#endif
