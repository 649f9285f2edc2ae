/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The credential entries of the granted trees (docs/SECURITY.md,
 * "Credential entries without BPF LSM"): the policy's "**" "/" patterns
 * (one component, "*.pem" and ".env.*" forms, or two: ".kube/config")
 * matched against the absolute path of each entry, so a grant that starts
 * inside a pattern (--ro ~/.kube, ~/.config) still finds it. A match is
 * not walked into: it is masked whole.
 */
#ifndef BPFBOX_CRED_SCAN_H
#define BPFBOX_CRED_SCAN_H

#include <stdbool.h>
#include <stdint.h>

struct bpfbox_policy;
struct strv;

/* The bounds of the start scan of the workspace and the --ro/--rw grants. */
#define CRED_SCAN_MAX_ENTRIES 200000
#define CRED_SCAN_MAX_DEPTH   32
#define CRED_SCAN_MAX_MS      1000
/* Masks at most (each is a mount of the session's namespace). */
#define CRED_SCAN_MAX_MASKS 4096
/* sc->said: the mask cap was reached (the plan then refuses the session). */
#define CRED_SCAN_SAID_MASKS 16
/* Matches with other hard links whose other names are looked for. */
#define CRED_SCAN_MAX_LINKED 32

/* A match with other names (hard links), and how many of them were found. */
struct cred_linked {
	uint64_t dev, ino, nlink, seen;
	size_t at; /* its path: out->v[at] */
};

struct cred_scan {
	uint64_t entries;     /* looked at, over every tree of the scan */
	uint64_t max_entries; /* the bounds (CRED_SCAN_MAX_* unless a test sets them) */
	unsigned int max_depth;
	uint64_t max_ms, deadline_ns;
	unsigned int said;   /* the bounds already named in unchecked */
	char unchecked[320]; /* what a bound left unchecked, "" when nothing */
	uint64_t (*ids)[2];  /* st_dev and st_ino of each match, as out->v (free() it) */
	size_t ids_cap;	     /* the entries ids has room for */
	struct cred_linked linked[CRED_SCAN_MAX_LINKED];
	size_t nlinked;
	bool linking; /* the second walk: every file's inode against linked */
	/*
	 * Where each large tree's record is kept (cred_record.h), so that the
	 * next scan reads only the directories changed since; NULL: none.
	 */
	const char *record_dir;
};

void cred_scan_init(struct cred_scan *sc);

/*
 * Whether a match has other names: then the caller walks the same trees
 * again (sc->linking, a budget of its own) to mask them too, at a stat per
 * file; cred_scan_links() then says in sc->unchecked which were not found.
 */
bool cred_scan_relink(struct cred_scan *sc);
void cred_scan_links(struct cred_scan *sc, const struct strv *out);
/* Sorts out (and sc->ids with it) and drops the paths found twice; 0 or -ENOMEM. */
int cred_scan_dedupe(struct cred_scan *sc, struct strv *out);

/*
 * Every entry of the tree at root (absolute) whose path matches a pattern,
 * root itself when it or an ancestor does; within sc's bounds, what they
 * left out said in sc->unchecked. Pushed to out; 0 or -ENOMEM.
 */
int cred_scan_tree(const struct bpfbox_policy *p, const char *root, struct cred_scan *sc,
		   struct strv *out);

/*
 * The same without the walk: root itself, its entries, and only the
 * directories on the way to a two-component match (root ~ or ~/.kube for
 * ".kube/config"): a readdir per such directory, whatever the tree's size.
 * NULL root: nothing. 0 or -ENOMEM.
 */
int cred_top_paths(const struct bpfbox_policy *p, const char *root, struct strv *out);

#endif
