/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the session module, private to userspace/sandbox/: the supervision
 * loop (supervise*.c), the status channel and denial summary (status.c) and
 * the private home (home.c) that session.c and session_run.c drive.
 */
#ifndef BPFBOX_SESSION_INTERNAL_H
#define BPFBOX_SESSION_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

#include "session.h"
#include "../lib/fdpass.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct sock_fprog;
struct policy_limits;
struct grant_fds;

/* clone3(2) with CLONE_INTO_CGROUP (Linux 5.7), without <linux/sched.h>'s clashes. */
#define BPFBOX_CLONE_INTO_CGROUP 0x200000000ULL

struct bpfbox_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

/* What the child reports through the error pipe when a step fails. */
struct child_error {
	int step;
	int err;
	char detail[200]; /* the sub-step (namespaces) */
};

enum child_step {
	STEP_CGROUP,
	STEP_SESSION,
	STEP_RLIMIT,
	STEP_NAMESPACES,
	STEP_CHDIR,
	STEP_USER,
	STEP_CAPS,
	STEP_NO_NEW_PRIVS,
	STEP_LANDLOCK,
	STEP_SECCOMP,
	STEP_EXEC,
};

/* Everything the child needs, prepared by the parent before fork. */
struct child_plan {
	char *const *argv;
	char **envp;
	const char *workspace;
	struct grant_fds *grants; /* the workspace and grants as checked (grants.h); NULL: none */
	int ruleset_fd;		  /* -1: no Landlock */
	uint32_t landlock_flags;
	const struct sock_fprog *filter;	  /* NULL: no seccomp */
	const struct sock_fprog *filter_notified; /* with notify_sock: the filter beside it */
	int notify_sock;     /* network deny through a listener sent here; -1: none */
	bool notify_net;     /* the listener takes socket() */
	bool notify_inet;    /* ... but for AF_INET and AF_INET6 (a network namespace of its own) */
	bool notify_connect; /* ... and its connects out of it, without BPF to record them */
	bool notify_files;   /* ... and the file changes, for the summary (fileops.c) */
	bool notify_bind;    /* ... and bind(), which Landlock refuses under --net-allow */
	int in_fd;	     /* the pty for stdin; -1: inherit */
	bool ctty;	     /* out_fd is a pty to make the controlling terminal */
	bool switch_user;
	uid_t uid;
	gid_t gid;
	int out_fd, err_fd;		  /* -1: inherit */
	const struct session_limits *lim; /* v1 cgroups to join, rlimit fallback */
	bool join_v2;			  /* clone3 could not place the child in its v2 cgroup */
	int release_fd, release_wfd;	  /* -1: no hooks.before_release to wait for */
	int report_fd;
	const struct policy_limits *limits;
	const struct bpfbox_policy *policy;
	const struct ns_plan *ns; /* NULL: no namespaces */
	const struct landlock_rights *rights;
	int changes_start_fd;  /* a change set's start, written before the exec; -1: none */
	int64_t changes_after; /* ... the first tick after this one */
	sigset_t saved_mask;
};

/* child.c: the child's side; it execs or exits. */
void child_exec(const struct child_plan *c, pid_t parent);
/* child.c: the step that failed and why, on stderr (nothing for exec: said later). */
void report_setup_failure(const struct child_error *e);
/*
 * child.c: fork(), or clone3(CLONE_INTO_CGROUP) straight into the session
 * cgroup of l->cg_fd; *placed tells whether it is there already.
 */
pid_t spawn(const struct session_limits *l, uint64_t ns_flags, bool *placed);

/* The command's side of the loop. */
struct supervise_io {
	int out_r;     /* stdout (and stderr when merged, or the pty master); -1: none */
	int err_r;     /* stderr; -1: merged into out_r or not relayed */
	int in_w;      /* the pty master for our stdin; -1: stdin is not relayed */
	int notify_fd; /* the seccomp listener (socket(), file changes); -1: none */
	/*
	 * The socket the child sends that listener through, polled until it
	 * comes: a set-up handed over before its restrict step sends it later,
	 * and a call held for a listener nobody reads would wait for --timeout.
	 */
	int notify_sock;
	/*
	 * The child's report pipe when the run handed over a set-up not done
	 * yet (frozen, or slow: session_run.c wait_exec); -1: its exec was
	 * confirmed before. What was read of it: report_n as read(2) gave it,
	 * -1 when the session ended before the command exec'd.
	 */
	int report_fd;
	ssize_t report_n;
	struct child_error report;
	uint64_t forked_ns; /* now_ns() at the child's fork: --timeout counts from it */
};

/*
 * Relays output, watches the child, the deadlines and the monitors,
 * forwards signals; fills s->result. Closes io's fds.
 */
void supervise(struct session *s, pid_t child, struct supervise_io *io, int sig_fd,
	       struct monitor *mon);

/*
 * session_run.c: the command exec'd (not_found: its exec failed, the
 * report said so); its pid found, "started" said.
 */
void session_exec_confirmed(struct session *s, pid_t child, bool not_found);

/* The status channel (--status-fd): one JSON line per lifecycle event. */
void status_started(const struct session *s, pid_t pid);
void status_lifecycle(const struct session *s, const struct session_event *ev);
void status_ended(struct session *s);

/* The denial summary at the end: stderr and the status channel. */
void session_denials_report(struct session *s);
/*
 * One denial of the summary explained (hints.c): its layer and reason
 * told from the policy where the records could not (a file's mode, a
 * credential), and the hint, into hint.
 */
void session_denial_explain(const struct session *s, struct denial *d, char *hint, size_t size);

/* What a metadata op (chmod, chown, utimes, setxattr, removexattr) changes; NULL: another op. */
const char *session_meta_of(const char *op);

struct seccomp_denied;

/*
 * A file change the seccomp listener holds: counted as a denial when it is
 * bound to fail outside the writable paths, then run by the kernel.
 */
void session_file_op_notified(struct session *s, int listener, const struct seccomp_denied *d);

/*
 * A connect the listener holds (the session's own network namespace, no
 * BPF): one to a loopback or unspecified address goes on, any other is
 * refused with EPERM and counted (netops.c).
 */
void session_connect_notified(struct session *s, int listener, const struct seccomp_denied *d);
/*
 * Whether Landlock refuses the session's TCP binds with no record of its
 * own (an allow-list, no network namespace): the listener then holds bind().
 */
bool session_binds_refused(const struct session *s, bool netns);
/* A bind() held by the listener: let run, counted when Landlock refuses it (netops.c). */
void session_bind_notified(struct session *s, int listener, const struct seccomp_denied *d);

/* $HOME of the caller, else its passwd entry; NULL when neither is absolute. */
const char *session_caller_home(void);

/* Makes s->home with the config copies, owned by uid/gid; 0 or -errno (printed). */
int session_home_make(struct session *s, uid_t uid, gid_t gid);
/*
 * The private home's git config, written to out from the caller's (text,
 * len): only the allowed keys (user.name, user.email, init.defaultBranch,
 * core.autocrlf), home_git.c.
 */
void session_home_gitconfig(const char *text, size_t len, FILE *out);
void session_home_remove(struct session *s);
/*
 * The home out of sight for the end's helper to remove (run_cleanup,
 * monitor_close), instead of on the end's path: renamed in its directory
 * to "." and its name, which name gets (size bytes), its lock dropped,
 * s->home emptied. 0, or -errno with nothing changed (then removed as
 * before). A helper killed before it ended leaves the hidden name to a
 * later sweep, as a killed run leaves its home.
 */
int session_home_hide(struct session *s, char *name, size_t size);
/*
 * The private homes are HOME_PREFIX<session id>HOME_SUFFIX in $TMPDIR (or
 * /tmp), each flock'ed while its session lives. session_home_sweep_dir:
 * that directory opened (-1: not), for the end's helper to remove what
 * killed runs left there (monitor_close, lib/closer.h closer_sweep).
 */
/* Where the private tmp and homes are made: $TMPDIR when absolute, else /tmp. */
const char *session_tmp_base(void);
#define HOME_PREFIX "bpfbox-"
#define HOME_SUFFIX ".home"
int session_home_sweep_dir(void);

/*
 * The caller's PATH for the session into path_env: the entries that resolve
 * under the caller's home go to ro (read and exec), those a credential
 * rule covers are dropped, with one warning. 0 or -ENOMEM.
 */
int session_home_path(const struct session *s, struct strv *ro, char *path_env, size_t size);
/*
 * The variables of the toolchains session_home_path found (NVM_DIR,
 * PYENV_ROOT, SDKMAN_DIR, GOPATH: the private home's path of the tree;
 * RUSTUP_HOME, CARGO_HOME: the caller's value, when set), into env.
 */
int session_home_env(const struct session *s, struct strv *env);

/*
 * The policy the mount namespace builds its view from: s's, plus the
 * private home (read-write), the PATH trees of path_ro and, with
 * --read-host, the caller's home (read-only); the credential entries at the
 * top of every granted tree masked; at Full, not the plan's masks (the BPF
 * LSM holds them); the change sets' directory masked in every mode. Says
 * its own error, one line. policy_free() it.
 */
int session_view_policy(struct session *s, const struct strv *path_ro, struct bpfbox_policy *view);

/* Whether path is dir or below it (home.c). */
bool session_path_below(const char *path, const char *dir);
/* Whether p lets the session write at path: its workspace, a --rw grant (home.c). */
bool session_policy_writes(const struct bpfbox_policy *p, const char *path);

/*
 * Whether a credential rule or an absolute deny path covers real (it or a
 * directory above it matches, or it holds one), or it lies in or holds an
 * entry of cred (home.c).
 */
bool session_cred_denied(const struct bpfbox_policy *p, const struct strv *cred, const char *real);

/*
 * session_env.c: the caller's variables of env_pass.h kept for the
 * command, NAME=VALUE into env (before session_build_env adds the rest),
 * the files they name into ro (read-only grants); each one left out said
 * once on stderr. 0 or -ENOMEM.
 */
int session_env_pass(struct session *s, struct strv *env, struct strv *ro);
/* session_env.c: the allowlisted environment (path_env: PATH when set), appended to env. */
int session_build_env(const struct session *s, const char *path_env, struct strv *env);
/*
 * --secret: the bundle the session's TLS clients read (the caller's
 * SSL_CERT_FILE or the system bundle, then the session CA) written into
 * its private home as s->ca_bundle. 0 (nothing to do without s->ca_pem).
 */
int session_write_ca_bundle(struct session *s, uid_t uid, gid_t gid);
/* session_env.c: the private tmp named by the plan, made and removed. */
int session_make_private_tmp(struct session *s);
void session_remove_private_tmp(struct session *s);
/* session_env.c: the user the command runs as. */
int session_lookup_user(const char *name, uid_t *uid, gid_t *gid);

#endif
