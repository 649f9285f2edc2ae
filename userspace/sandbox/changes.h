/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Change sets (docs/runtime.md, "Change sets"): with --changes review or
 * apply the session's workspace is an overlayfs whose upper directory
 * bpfbox keeps outside the session, one directory per session:
 *
 *   ROOT/ID/manifest.json  id, workspace path, its st_dev/st_ino, start time
 *   ROOT/ID/upper, work    overlayfs's layers (the session's writes)
 *   ROOT/ID/journal        while an apply runs (changes_apply.c)
 *   ROOT/ID/prev           what an apply overwrote or deleted, until the
 *                          apply's end moves it into a generation:
 *   ROOT/history/KEY/N/    generation N of a workspace (KEY: its path's
 *                          SHA-256, changes_history.c): gen.json, paths
 *                          (what the apply left, changes_undo.c), prev
 *   ROOT/ID/lock           flock()ed while a session runs on the set
 *
 * ROOT: $BPFBOX_CHANGES_DIR, else /var/lib/bpfbox/changes for root, else
 * $XDG_STATE_HOME/bpfbox/changes ($HOME/.local/state/bpfbox/changes);
 * every directory mode 0700. changes.c the set and its manifest,
 * changes_scan.c what changed, changes_apply.c apply and discard.
 */
#ifndef BPFBOX_CHANGES_H
#define BPFBOX_CHANGES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "../lib/sha256.h"

struct jsonw;

/* Exit codes of changes, apply and discard (docs/runtime.md). */
#define CHANGES_EXIT_CONFLICT 3 /* apply refused: the workspace changed, or a refused file */
#define CHANGES_EXIT_UNKNOWN  4 /* no change set of that id, no such generation */
#define CHANGES_EXIT_BUSY     5 /* the set is in use by a running session */

/* The history's bound by default (the policy's "undo" key, docs/config.md). */
#define CHANGES_UNDO_GENERATIONS 20
#define CHANGES_UNDO_MB		 1024

/*
 * How long the overlay made ahead for a workspace's next review session
 * waits for it (changes_warm.c; BPFBOX_CHANGES_WARM, seconds, 0: none).
 */
#define CHANGES_WARM_SECS 30
#define CHANGES_WARM_MAX  3600

/* How many paths the status line and session.changes carry at most. */
#define CHANGES_PATHS_MAX 20

enum change_kind {
	CHANGE_ADDED,
	CHANGE_MODIFIED, /* content (or type: a file replaced by a directory) */
	CHANGE_MODE,	 /* the mode alone */
	CHANGE_DELETED,
};

struct change {
	char *path; /* relative to the workspace */
	enum change_kind kind;
	mode_t mode;	 /* the session's (type and bits); 0 for deleted */
	mode_t old_mode; /* the workspace's; 0 for added */
	uint64_t size;	 /* the session's file */
	/* What apply left there: a file's bytes' or a symlink target's SHA-256. */
	bool summed;
	uint8_t sum[SHA256_LEN];
};

struct change_list {
	struct change *v;
	size_t n, cap;
	size_t count[CHANGE_DELETED + 1];
};

/* A change set on disk, as the manifest says and its directory holds. */
struct changes_set {
	char id[64];
	char dir[PATH_MAX]; /* ROOT/ID */
	char workspace[PATH_MAX];
	uint64_t ws_dev, ws_ino; /* the workspace's identity at the start */
	int64_t start_ns;	 /* the CLOCK_REALTIME_COARSE tick its first command started in */
	/*
	 * While the session is made: the pipe its child writes the start
	 * into (changes_start_wait), [0] read at the end, [1] the child's;
	 * -1 when the start is known: a chained set's (its parent's), or
	 * once read (changes_start_take closes it).
	 */
	int start_pipe[2];
	char state[16];		/* "open", "applied", "chained" */
	unsigned int undo_gens; /* the history's bound (generations, MB) at its apply */
	uint64_t undo_mb;
	unsigned long generation; /* applied: its generation in the workspace's history */
	char parent[64];	  /* --changes-from: the set this one continues, "" none */
	char child[64];		  /* chained: the set that took this one's changes over */
	int lock_fd;		  /* held by this process (changes_lock), -1: not */
	bool userns;		  /* its overlay is a user namespace's (the session's) */
	int warm_pidfd;		  /* its keeper, until told (changes_warm_release); -1 */
	bool warm_denied;	  /* a keeper's fds refused to this process (Yama) */
	unsigned int warm_secs;	  /* the next session's, made ahead at the end: 0 none */
	/*
	 * The upper's root as the set was made or taken, empty: its ctime (ns)
	 * and links; 0: not known, or not empty (a chain's). The end's proof
	 * that nothing was written (changes_session_end).
	 */
	int64_t upper_ctime_ns;
	uint64_t upper_nlink;
	bool paths_more; /* a summary from elsewhere (the daemon's): list holds the first paths */
	/* The session's end (changes_session_end). */
	struct change_list list;
	bool kept;	/* something changed: the set stays */
	bool applied;	/* --changes apply applied it */
	int apply_code; /* its exit code: 0, or CHANGES_EXIT_CONFLICT, ... */
};

/* The root of the change sets into buf (made with parents, 0700 when mk). 0 or -errno. */
int changes_root(char *buf, size_t size, bool mk);

/*
 * Whether the sets' directory root can hold sets of workspace: not inside
 * it nor holding it, not on an overlayfs; root "" is found and made first
 * (changes_root, into root's size bytes). 0, or -errno with why.
 */
int changes_root_usable(char *root, size_t size, const char *workspace, char *why, size_t why_size);

/* Whether id may name a change set (the characters of a session id). */
bool changes_id_valid(const char *id);

/*
 * Makes ROOT/ID with its upper and work dirs for the workspace ws_fd
 * (opened at path, grants.h), or takes a set made ahead: with mnt, one
 * a keeper holds with its overlay (changes_warm.c, the overlay into *mnt,
 * its keeper in cs->warm_pidfd), else a spare (changes_spare.c); upper and work are opened
 * O_PATH into *upper, *work; the caller completes cs (its undo bounds)
 * and writes the manifest. root: the sets' directory as changes_root
 * made it (NULL or "": found and made here). userns: the overlay is the
 * session's user namespace's. why: a one-line reason on failure. 0 or
 * -errno.
 */
int changes_create(struct changes_set *cs, const char *root, const char *id, const char *workspace,
		   int ws_fd, bool userns, int *upper, int *work, int *mnt, char *why,
		   size_t why_size);

/*
 * BPFBOX_CHANGES_WARM, else CHANGES_WARM_SECS: how long a kept overlay
 * waits; -EINVAL: not a number of seconds up to CHANGES_WARM_MAX.
 */
int changes_warm_secs(void);
/* A set's keeper told that the set is taken (at the set's free, unless the next keeper tells it). */
void changes_warm_release(struct changes_set *cs);
/*
 * `bpfbox prepare WORKSPACE` (changes_prepare.c): a keeper of the next
 * review session's set and overlay of workspace started now, for
 * changes_warm_secs(); 0 once it has recorded them (CHANGES_PREPARE_MS at
 * most), or -errno with why (nothing left made).
 */
#define CHANGES_PREPARE_MS 5000
int changes_prepare(const char *workspace, char *why, size_t why_size);
/*
 * `bpfbox prepare --release WORKSPACE`: every keeper of this user holding
 * workspace told to go, and waited for, with every other bpfbox process
 * of this user that holds it (a session's end making a keeper; a
 * running session), CHANGES_RELEASE_WAIT_MS at most: 0, or -errno with
 * why (-EBUSY: one still holds it).
 */
#define CHANGES_RELEASE_WAIT_MS 10000
int changes_release(const char *workspace, char *why, size_t why_size);
/* `bpfbox __changes-keep u|r SECONDS ROOTFD WSFD [PIDFD]`: the keeper (changes_warm.c). */
int changes_keep_main(int argc, char **argv);

/* The set ID as its manifest says; -ENOENT: none. why as above. */
int changes_open(struct changes_set *cs, const char *id, char *why, size_t why_size);

/*
 * Writes cs's manifest (atomically: a temporary file renamed), flushed to
 * the disk with sync. 0 or -errno.
 */
int changes_manifest_write(const struct changes_set *cs, bool sync);

/*
 * The session's child, just before its command runs: waits until the
 * coarse clock has passed the tick bpfbox was started in (after: cs->start_ns
 * then, usually passed already by the set-up in between; at most a tick,
 * bounded) and writes that tick into fd, the set's start (changes_clock.c
 * says why a later tick). Inline and by raw system calls: each code page the
 * child touches for the first time after the fork is a page fault, which
 * costs tens of µs on a virtual machine (docs/benchmarks.md section 10).
 */
static inline void changes_start_wait(int64_t after, int fd)
{
	struct timespec now, nap = {0, 250000};
	int64_t t = 0;

	for (int i = 0; i < 400; i++) {
		if (syscall(SYS_clock_gettime, CLOCK_REALTIME_COARSE, &now) < 0)
			break; /* 0: bpfbox keeps the bound as the start (fail closed) */
		t = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
		if (t > after)
			break;
		syscall(SYS_nanosleep, &nap, NULL);
	}
	if (syscall(SYS_write, fd, &t, sizeof(t)) < 0) {
		/* bpfbox's end gone: so is the session */
	}
}

/*
 * The start the child wrote into cs->start_pipe, waited for up to wait_ms:
 * 0 if none (yet); once read, cs->start_ns and the pipe's end closed.
 */
int64_t changes_start_take(struct changes_set *cs, int wait_ms);

/*
 * Test hook BPFBOX_FAULT_TOUCH_AT_START=PATH: an editor's write to a
 * workspace file as soon as the child has taken the start (bounded by 2 s),
 * mostly in that very tick. By the parent, on the workspace itself.
 */
void changes_fault_at_start(struct changes_set *cs);

/*
 * --changes-from: cs (just made, its upper empty) takes over the upper of
 * set parent_id, which must be open, of the same workspace and not in use;
 * cs starts when it did and names it (parent), it says "chained" (child).
 * 0 or -errno, why said.
 */
int changes_chain(struct changes_set *cs, const char *parent_id, char *why, size_t why_size);
/* The chained sets cs continues, removed (once cs is applied or discarded). */
void changes_remove_parents(const struct changes_set *cs);

/* Removes the set's work directory (overlayfs's), or its directory whole. 0 or -errno. */
int changes_remove_work(const struct changes_set *cs);
int changes_remove(const struct changes_set *cs);

/*
 * changes_scan.c: what the upper holds against the workspace, at a cost
 * in proportion to the upper (and the trees it deletes): sorted by path,
 * a parent before what is below it. 0 or -errno.
 */
int changes_scan(const struct changes_set *cs, struct change_list *l, char *why, size_t why_size);
void change_list_free(struct change_list *l);
struct stat;
/* Whether st is an overlayfs whiteout (a character device 0:0). */
bool change_is_whiteout(const struct stat *st);
const char *change_kind_name(enum change_kind k);

/* The counts and the first CHANGES_PATHS_MAX paths as members of w (status line, event). */
void changes_summary_json(const struct changes_set *cs, struct jsonw *w);
struct json_object;
/* The same members as a JSON object (the unregister request). NULL: out of memory. */
struct json_object *changes_summary_object(const struct changes_set *cs);
/*
 * A summary read back (the daemon's session.changes) into cs: its id,
 * counts, kept, applied and paths. 0, or -EINVAL naming the bad member in *bad.
 */
int changes_summary_parse(struct json_object *o, struct changes_set *cs, const char **bad);

/*
 * The session's command runs (its set-up ended or was handed over): a set
 * not chained is locked and its manifest written (not flushed), beside
 * the command instead of before it (changes_spare.c). 0, or -errno of the
 * lock or the manifest: only what a crash of bpfbox would leave readable
 * is lost, the set is scanned and recorded at the end all the same.
 */
int changes_session_running(struct changes_set *cs);

/*
 * The session's end: the upper scanned; cs->kept when something changed
 * (its manifest flushed then). upper: the set's upper (any fd, -1: none),
 * whose root unchanged since it was taken empty, before the command's
 * start, proves nothing was written without the walk. 0 or -errno (the
 * set is then kept).
 */
int changes_session_end(struct changes_set *cs, int upper);
/*
 * After the end (and --changes apply): the set unlocked; an empty one
 * renamed away at once, its removal given to the session end's helper
 * (end, lib/closer.h: started by the caller once every layer has given
 * it its jobs), with copies of hold[0..n) (the caller's fds of the set's
 * directories), and the next session's spare made by it too
 * (changes_spare.c), and with cs->warm_secs it becomes the keeper of the
 * next one's overlay of ws (changes_warm.c).
 */
struct closer;
void changes_session_done(struct changes_set *cs, const int *hold, size_t n, int ws,
			  struct closer *end);

/*
 * changes_apply.c: the set into its workspace. Refuses (CHANGES_EXIT_CONFLICT,
 * each path on stderr, nothing written) when a path it would write
 * changed in the workspace since the session started, or the set holds a
 * device node, a fifo, a socket or a set-uid/set-gid file. Returns the
 * exit code: 0 applied, CHANGES_EXIT_CONFLICT, 1 an error (said).
 */
int changes_apply(struct changes_set *cs);

/*
 * The set's lock (flock of ROOT/ID itself): taken by a session for its whole
 * run, by apply and discard for theirs. 0, -EWOULDBLOCK (in use: said by
 * the caller), or -errno. changes_unlock drops it.
 */
int changes_lock(struct changes_set *cs);
void changes_unlock(struct changes_set *cs);

/* One generation of a workspace's history (changes_history.c). */
struct changes_gen {
	unsigned long n;
	char id[64]; /* the change set it applied */
	char workspace[PATH_MAX];
	uint64_t ws_dev, ws_ino;
	int64_t applied_ns;	/* CLOCK_REALTIME at the apply's end */
	uint64_t paths, bytes;	/* the paths it applied; its disk use */
	unsigned int keep_gens; /* the bound its apply pruned the history to */
	uint64_t keep_mb;
};

/* ROOT/history/KEY of workspace into buf. 0 or -errno. */
int changes_history_dir(const char *workspace, char *buf, size_t size);
/* The history's generations, oldest first (*v freed by the caller). 0 or -errno. */
int changes_history_list(const char *workspace, struct changes_gen **v, size_t *n);
/*
 * An apply's end (changes_apply.c): the set's prev and the list of what
 * it left (ROOT/ID/paths) made generation N of the workspace's history, the oldest
 * beyond the set's bound dropped. Can be run again after a crash. 0 or -errno.
 */
int changes_history_commit(struct changes_set *cs);

/*
 * changes_undo.c: generation gen (0: the newest) of workspace restored:
 * what its apply overwrote or deleted put back, what it added removed.
 * Refused (each path on stderr, nothing written) when a path changed since
 * that apply. Returns the exit code: 0, CHANGES_EXIT_CONFLICT,
 * CHANGES_EXIT_UNKNOWN, 1 an error (said).
 */
int changes_undo(const char *workspace, unsigned long gen);

#endif
