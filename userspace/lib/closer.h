/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Closing some fds costs a grace period in the kernel: an inotify instance
 * with watches (fsnotify_destroy_group, an SRCU grace period) or a BPF
 * tracepoint link (the tracepoint's unregistration), tens of ms each, also
 * when the process exits. A closer is a helper that shares our memory
 * (clone(CLONE_VM) without SIGCHLD, so that waitpid(-1) never sees it) and
 * keeps copies of just those fds: after closer_begin() our own closes are
 * not the last references and return at once; after closer_end() the
 * helper exits and pays for the last ones, after bpfbox is gone. Every
 * other fd (a pipe, bpfbox's stdout) is closed in the helper first, so
 * nobody waits on it for an EOF. The same helper can remove a directory
 * tree that nobody should wait for (closer_remove).
 */
#ifndef BPFBOX_CLOSER_H
#define BPFBOX_CLOSER_H

#include <stdbool.h>
#include <stddef.h>

#define CLOSER_MAX_FDS	 256
#define CLOSER_RM_DEPTH	 16 /* levels of a tree to remove (closer_remove) */
#define CLOSER_PREP_SUBS 4  /* directories in one closer_prepare makes */
#define CLOSER_JOBS	 2  /* removals, and sweeps, one helper takes */
#define CLOSER_HOLD	 8  /* fds closer_hold() keeps for it */
#define CLOSER_EXEC_ARGS 8  /* closer_exec's arguments */
#define CLOSER_EXEC_FDS	 3  /* and the fds it passes */

struct closer {
	char stack[32768] __attribute__((aligned(16))); /* the helper's; one per user */
	/* sorted: the fds it holds, the jobs' and closer_hold()'s copies, its two pipe ends */
	int keep[CLOSER_MAX_FDS + CLOSER_HOLD + 2 * CLOSER_JOBS + 3 + CLOSER_EXEC_FDS];
	int nkeep;
	int go[2], ready[2];
	int go_read, ready_write; /* the ends the helper uses */
	int started;
	/*
	 * 1 from closer_begin() until the helper has left our memory: the
	 * kernel writes 0 here when it exits (CLONE_CHILD_CLEARTID), after
	 * its last use of the stack above. While it is 1, every call below
	 * returns -EBUSY and changes nothing: a second helper on the same
	 * stack, or fields rewritten under the one that reads them, would
	 * corrupt both (a process that ends two sessions, bpfbox test).
	 */
	int busy;
	/*
	 * Set before closer_begin(): no wait for the helper and no holding
	 * until closer_end(), which does nothing then. It has its copies of
	 * every fd from the clone on and goes on at once: it drops the others
	 * (a pipe's write end, whose reader waits for EOF) a moment later,
	 * when it runs, instead of before closer_begin() returns (the wait
	 * cost 0.15 to 0.35 ms a use on this 2-vCPU host).
	 */
	bool nowait;
	/*
	 * The jobs, each with our copy of its directory (F_DUPFD_CLOEXEC,
	 * closed once the helper has its own): the caller may close its fd
	 * at once. Jobs and fds gather over several calls, by several
	 * callers, until closer_begin() starts one helper for them all.
	 */
	int rm_dirfd[CLOSER_JOBS];	/* closer_remove's directories */
	char rm_name[CLOSER_JOBS][256]; /* what to remove in each */
	int nrm;
	int sweep_dirfd[CLOSER_JOBS]; /* closer_sweep's directories */
	char sweep_prefix[CLOSER_JOBS][32], sweep_suffix[CLOSER_JOBS][16];
	int nsweep;
	int held[CLOSER_HOLD]; /* closer_hold()'s copies */
	int nheld;
	int prep_dirfd;			  /* closer_prepare's directory (a copy) */
	char prep_tmp[80], prep_name[32]; /* "": nothing to prepare */
	char prep_subs[CLOSER_PREP_SUBS][16];
	int prep_nsubs, prep_slots;
	int prep_mode, prep_uid, prep_gid; /* the first sub's; -1: as made */
	/* closer_exec's program: its arguments in exec_buf, "" none; its fds (copies) */
	char exec_buf[256];
	char *exec_argv[CLOSER_EXEC_ARGS + 2];
	int exec_fds[CLOSER_EXEC_FDS], nexec_fds;
};

/*
 * Starts the helper holding copies of fds[0..n) (at most CLOSER_MAX_FDS)
 * and of what closer_hold() and the jobs gave it. 0 once it holds them;
 * -errno when it could not start (then the caller's closes pay the wait
 * themselves, closer_remove()'s trees are removed here, the rest of the
 * jobs dropped): -EBUSY while this closer's previous helper has not
 * exited (the jobs gathered stay for the next call).
 */
int closer_begin(struct closer *c, const int *fds, size_t n);
/*
 * Before closer_begin(): the helper also holds copies of fds[0..n), as
 * closer_begin()'s own (a caller that ends before the one that starts
 * the helper: its fds may be closed after this call, the helper's copies
 * are the last). 0, or -E2BIG past CLOSER_HOLD, -EBUSY (busy above),
 * -errno of the copy (then nothing is held).
 */
int closer_hold(struct closer *c, const int *fds, size_t n);
/* Whether jobs or held fds wait for a closer_begin(). */
bool closer_pending(const struct closer *c);
/*
 * The helper for what is pending, if anything (nowait, closer_begin()
 * without fds of its own): what several callers gave one closer, started
 * once by the last. 0, or closer_begin()'s -errno.
 */
int closer_flush(struct closer *c);
/*
 * Before closer_begin(): the helper also removes name (one entry of
 * dirfd, with all below it) once let go, before it exits: a removal that
 * is not worth waiting for (an empty change set). It holds a copy of
 * dirfd for it. Up to CLOSER_JOBS per helper. If no helper can start
 * (closer_begin() fails), closer_begin() removes it itself. 0, or
 * -EINVAL for a name with a slash or too long, -E2BIG past CLOSER_JOBS,
 * -EBUSY (busy above), -errno of the copy.
 */
int closer_remove(struct closer *c, int dirfd, const char *name);
/*
 * Before closer_begin(): the helper also removes, after that, what killed
 * runs left in dirfd: each directory named prefix, 32 lowercase hex
 * digits (a session id), suffix, or the same after a dot when prefix has
 * none (one hidden for a helper's closer_remove, which was killed before
 * it ended), that is this user's (root's: anyone's,
 * as a --user session's home is that user's), on dirfd's file system,
 * not modified for CLOSER_SWEEP_AGE seconds (one just made, not locked
 * yet, is left) and not locked (a running session holds
 * flock(LOCK_EX) on its own: the helper's LOCK_NB attempt fails there).
 * Never a symlink followed (rm_at). It holds a copy of dirfd for it; up
 * to CLOSER_JOBS per helper. 0, or -EINVAL, -E2BIG, -EBUSY (busy above),
 * -errno of the copy.
 */
#define CLOSER_SWEEP_AGE 60
int closer_sweep(struct closer *c, int dirfd, const char *prefix, const char *suffix);
/*
 * Before closer_begin(): the helper also makes, last, a directory for a
 * later user to take (by a rename): tmp in dirfd, mode 0700, holding the
 * directories subs[0..nsubs), renamed to name followed by the first digit
 * below slots that no entry of dirfd has (never over one). Nothing is
 * made when every slot is taken; what a failed step made is removed. tmp
 * may be the name closer_remove removes: it is made after that. It holds
 * a copy of dirfd for it; one per helper (a second replaces the first).
 * 0, or -EINVAL (a slash, too long, too many), -EBUSY, -errno of the copy.
 */
int closer_prepare(struct closer *c, int dirfd, const char *tmp, const char *name, int slots,
		   const char *const *subs, size_t nsubs);
/* After closer_prepare(): the first sub's mode (chmod) and owner (chown, as root), -1 as made. */
void closer_prepare_owner(struct closer *c, int mode, int uid, int gid);
/*
 * Before closer_begin(): once its jobs are done the helper becomes this
 * program (/proc/self/exe, an empty environment) instead of exiting:
 * argv[0..argc) (argv[0] its name), then the numbers of the helper's
 * copies of fds[0..nfds), the only fds it has open. The closer is free
 * again at the exec (the kernel clears busy then). One per helper; a
 * second replaces the first. 0, or -EINVAL (too many, too long), -EBUSY,
 * -errno of a copy.
 */
int closer_exec(struct closer *c, const char *const *argv, int argc, const int *fds, size_t nfds);
/* Lets the helper go (it removes what it was given, exits and drops the last references). */
void closer_end(struct closer *c);
/*
 * The fds of this process that refer to BPF objects or perf events (the
 * links of tracepoint programs), up to max; their number.
 */
size_t closer_bpf_fds(int *fds, size_t max);

#endif
