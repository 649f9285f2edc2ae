// SPDX-License-Identifier: GPL-2.0
/*
 * A session's change set (changes.h): where the sets live, one made for a
 * session, its manifest written and read, the set removed or kept at the
 * session's end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <json-c/json.h>

#include "changes.h"
#include "changes_internal.h"
#include "grants.h"
#include "../lib/closer.h"
#include "../lib/json.h"
#include "../lib/jsonw.h"
#include "../lib/util.h"

#define MANIFEST		"manifest.json"
#define CHANGES_OVERLAYFS_MAGIC 0x794c7630 /* <linux/magic.h> OVERLAYFS_SUPER_MAGIC */

/*
 * bpfbox makes the sets' directory a directory: a symlink there (made by
 * a session that could write its parent, before the mask of every view
 * covered it) would put the next set in a tree of its choosing.
 */
static int root_is_dir(const char *root)
{
	struct stat st;

	if (lstat(root, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int changes_root(char *buf, size_t size, bool mk)
{
	const char *e = getenv("BPFBOX_CHANGES_DIR"), *home = getenv("HOME");
	int n;

	if (e && e[0] == '/')
		n = snprintf(buf, size, "%s", e);
	else if (geteuid() == 0)
		n = snprintf(buf, size, "/var/lib/bpfbox/changes");
	else if ((e = getenv("XDG_STATE_HOME")) && e[0] == '/')
		n = snprintf(buf, size, "%s/bpfbox/changes", e);
	else if (home && home[0] == '/')
		n = snprintf(buf, size, "%s/.local/state/bpfbox/changes", home);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	/* Made once: later calls (each session's plan and set) pay one mkdir. */
	if (!mk || !mkdir(buf, 0700))
		return 0;
	if (errno == EEXIST)
		return root_is_dir(buf);
	if (errno != ENOENT || mkdir_parents(buf, 0700) < 0)
		return -errno;
	if (mkdir(buf, 0700) < 0)
		return errno == EEXIST ? root_is_dir(buf) : -errno;
	return 0;
}

bool changes_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (!n || n >= sizeof(((struct changes_set *)0)->id))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z') ||
		      id[i] == '-'))
			return false;
	return true;
}

/* Whether a is b or below it. */
static bool path_under(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (streq(b, "/"))
		return true;
	return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/');
}

int changes_manifest_write(const struct changes_set *cs, bool sync)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
	struct jsonw w = {0};
	int fd, r = 0;

	jsonw_begin(&w);
	jsonw_u64(&w, "version", 1);
	jsonw_str(&w, "id", cs->id);
	jsonw_str(&w, "workspace", cs->workspace);
	jsonw_u64(&w, "workspace_dev", cs->ws_dev);
	jsonw_u64(&w, "workspace_ino", cs->ws_ino);
	jsonw_i64(&w, "start_ns", cs->start_ns);
	jsonw_str(&w, "state", cs->state);
	jsonw_u64(&w, "undo_generations", cs->undo_gens);
	jsonw_u64(&w, "undo_mb", cs->undo_mb);
	if (cs->generation)
		jsonw_u64(&w, "generation", cs->generation);
	if (cs->parent[0])
		jsonw_str(&w, "parent", cs->parent);
	if (cs->child[0])
		jsonw_str(&w, "child", cs->child);
	jsonw_end(&w);
	jsonw_newline(&w);
	if (w.oom) {
		jsonw_free(&w);
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/" MANIFEST, cs->dir);
	snprintf(tmp, sizeof(tmp), "%s/." MANIFEST ".tmp", cs->dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, w.buf, w.len) != (ssize_t)w.len || (sync && fsync(fd) < 0))
		r = -errno;
	if (fd >= 0)
		close(fd);
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	jsonw_free(&w);
	return r;
}

static int64_t ctime_ns(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
}

/* The upper's root as it is now, once made or taken empty (changes_create). */
static void upper_mark(struct changes_set *cs, int upper)
{
	struct stat st;

	cs->upper_ctime_ns = fstat(upper, &st) == 0 ? ctime_ns(&st) : 0;
	cs->upper_nlink = cs->upper_ctime_ns ? st.st_nlink : 0;
}

/*
 * Whether the session wrote nothing, from the upper's root alone: every
 * change the overlay records makes an entry in the upper's root (the
 * first level of any path copied up, created or whited out) or changes
 * the root itself, and either sets its ctime, which no system call sets
 * to a chosen value. Any write by the session comes after its start,
 * with a ctime at or after cs->start_ns (the coarse tick the child took,
 * or a finer time within it); the root's ctime at its taking was before
 * that, so an unchanged ctime means no write. Not for a chain's upper
 * (not empty at the start), nor where the file system's timestamps may
 * be coarser than a microsecond (a ctime whole in microseconds), nor
 * when the start is unknown or within a microsecond: then the walk.
 */
static bool upper_untouched(const struct changes_set *cs, int upper)
{
	struct stat st;
	int64_t c;

	if (upper < 0 || cs->upper_ctime_ns <= 0 || cs->parent[0] || fstat(upper, &st) < 0)
		return false;
	c = ctime_ns(&st);
	return c == cs->upper_ctime_ns && st.st_nlink == cs->upper_nlink && c % 1000 != 0 &&
	       c + 1000 < cs->start_ns;
}

int changes_root_usable(char *root, size_t size, const char *workspace, char *why, size_t why_size)
{
	struct statfs sfs;
	int r;

	if (!root[0] && (r = changes_root(root, size, true)) < 0) {
		snprintf(why, why_size,
			 "--changes: cannot make the change sets' directory %s: %s (set "
			 "BPFBOX_CHANGES_DIR to another)",
			 r == -ENOENT ? "(no HOME)" : root, strerror(-r));
		return r;
	}
	if (path_under(root, workspace) || path_under(workspace, root)) {
		snprintf(why, why_size,
			 "--changes: the change sets' directory %s and the workspace %s overlap; "
			 "set BPFBOX_CHANGES_DIR outside the workspace",
			 root, workspace);
		return -EINVAL;
	}
	/*
	 * An overlay's upper layer cannot lie on an overlayfs (the kernel's
	 * EINVAL at the mount, in the session's set-up, would say nothing):
	 * a home in a container, or a VM's root, is one.
	 */
	if (statfs(root, &sfs) == 0 && sfs.f_type == CHANGES_OVERLAYFS_MAGIC) {
		snprintf(why, why_size,
			 "--changes: the change sets' directory %s is on an overlayfs, which "
			 "cannot hold a change set's upper layer; set BPFBOX_CHANGES_DIR to a "
			 "directory on another file system",
			 root);
		return -EXDEV;
	}
	return 0;
}

int changes_create(struct changes_set *cs, const char *root, const char *id, const char *workspace,
		   int ws_fd, bool userns, int *upper, int *work, int *mnt, char *why,
		   size_t why_size)
{
	char made[PATH_MAX], path[PATH_MAX + 16];
	struct stat st;
	int r = 0;

	memset(cs, 0, sizeof(*cs));
	cs->lock_fd = cs->warm_pidfd = cs->start_pipe[0] = cs->start_pipe[1] = -1;
	*upper = *work = -1;
	snprintf(made, sizeof(made), "%s", root ? root : "");
	if ((r = changes_root_usable(made, sizeof(made), workspace, why, why_size)) < 0)
		return r;
	root = made;
	if (fstat(ws_fd, &st) < 0)
		return -errno;
	snprintf(cs->id, sizeof(cs->id), "%s", id);
	snprintf(cs->workspace, sizeof(cs->workspace), "%s", workspace);
	snprintf(cs->state, sizeof(cs->state), "open");
	cs->ws_dev = st.st_dev;
	cs->ws_ino = st.st_ino;
	cs->userns = userns;
	cs->start_ns = ch_start_bound(); /* changes_start_wait's after */
	if ((size_t)snprintf(cs->dir, sizeof(cs->dir), "%.3000s/%s", root, id) >=
	    sizeof(cs->dir) - 16)
		return -ENAMETOOLONG;
	if (!ch_take_ahead(cs, root, &st, upper, work, mnt)) {
		upper_mark(cs, *upper);
		return 0;
	}
	r = mkdir(cs->dir, 0700) < 0 ? -errno : 0;
	/* The upper's root is the session's workspace root: its mode and owner. */
	snprintf(path, sizeof(path), "%s/upper", cs->dir);
	if (!r && (mkdir(path, 0700) < 0 || chmod(path, st.st_mode & 07777) < 0 ||
		   (geteuid() == 0 && chown(path, st.st_uid, st.st_gid) < 0)))
		r = -errno;
	if (!r && (*upper = path_open_exact(path, O_DIRECTORY)) < 0)
		r = *upper;
	snprintf(path, sizeof(path), "%s/work", cs->dir);
	if (!r && mkdir(path, 0700) < 0)
		r = -errno;
	if (!r && (*work = path_open_exact(path, O_DIRECTORY)) < 0)
		r = *work;
	if (r < 0)
		snprintf(why, why_size, "--changes: cannot make the change set %s: %s", cs->dir,
			 strerror(-r));
	else
		upper_mark(cs, *upper);
	return r;
}

int changes_open(struct changes_set *cs, const char *id, char *why, size_t why_size)
{
	char root[PATH_MAX], path[PATH_MAX + 32];
	struct json_object *o;
	const char *s;
	int64_t v;
	int r;

	memset(cs, 0, sizeof(*cs));
	cs->lock_fd = cs->warm_pidfd = cs->start_pipe[0] = cs->start_pipe[1] = -1;
	if (!changes_id_valid(id)) {
		snprintf(why, why_size, "'%s' is not a change set id (the session id)", id);
		return -EINVAL;
	}
	if ((r = changes_root(root, sizeof(root), false)) < 0) {
		snprintf(why, why_size, "no change sets' directory: %s", strerror(-r));
		return r;
	}
	if ((size_t)snprintf(cs->dir, sizeof(cs->dir), "%.3000s/%s", root, id) >= sizeof(cs->dir))
		return -ENAMETOOLONG;
	snprintf(path, sizeof(path), "%s/" MANIFEST, cs->dir);
	o = json_object_from_file(path);
	if (!o) {
		r = access(path, F_OK) < 0 && errno == ENOENT ? -ENOENT : -EINVAL;
		snprintf(why, why_size, "%s %s",
			 r == -ENOENT ? "no change set" : "unreadable manifest",
			 r == -ENOENT ? id : path);
		return r;
	}
	r = -EINVAL;
	snprintf(cs->id, sizeof(cs->id), "%s", id);
	if ((s = json_member_str(o, "workspace")) && s[0] == '/') {
		snprintf(cs->workspace, sizeof(cs->workspace), "%s", s);
		r = 0;
	}
	if (json_member_int(o, "workspace_dev", &v))
		cs->ws_dev = v;
	if (json_member_int(o, "workspace_ino", &v))
		cs->ws_ino = v;
	if (!json_member_int(o, "start_ns", &cs->start_ns))
		r = -EINVAL;
	snprintf(cs->state, sizeof(cs->state), "%s",
		 (s = json_member_str(o, "state")) ? s : "open");
	if (json_member_int(o, "undo_generations", &v) && v >= 0 && v <= UINT32_MAX)
		cs->undo_gens = v;
	if (json_member_int(o, "undo_mb", &v) && v >= 0)
		cs->undo_mb = v;
	if (json_member_int(o, "generation", &v) && v > 0)
		cs->generation = v;
	if ((s = json_member_str(o, "parent")) && changes_id_valid(s))
		snprintf(cs->parent, sizeof(cs->parent), "%s", s);
	if ((s = json_member_str(o, "child")) && changes_id_valid(s))
		snprintf(cs->child, sizeof(cs->child), "%s", s);
	json_object_put(o);
	if (r < 0)
		snprintf(why, why_size, "unreadable manifest %s", path);
	return r;
}

/*
 * The set's directory itself is locked: a lock file was one more file to
 * make at each review session's start and to remove at its end.
 */
int changes_lock(struct changes_set *cs)
{
	int fd, r;

	if (cs->lock_fd >= 0)
		return 0;
	fd = open(cs->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	cs->lock_fd = fd;
	return 0;
}

void changes_unlock(struct changes_set *cs)
{
	fd_close(&cs->lock_fd);
}

/* Whether the set's directory holds name. */
static bool has(const struct changes_set *cs, const char *name)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", cs->dir, name);
	return access(path, F_OK) == 0;
}

/* The parent's upper moved to cs, then both manifests say so. */
static int take_upper(struct changes_set *cs, struct changes_set *p)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 16];
	int r;

	snprintf(from, sizeof(from), "%s/upper", p->dir);
	snprintf(to, sizeof(to), "%s/upper", cs->dir);
	if (rmdir(to) < 0 || rename(from, to) < 0)
		return -errno;
	cs->start_ns = p->start_ns; /* what changed in the workspace since the first one */
	snprintf(cs->parent, sizeof(cs->parent), "%s", p->id);
	if ((r = changes_manifest_write(cs, true)) < 0)
		return r;
	snprintf(p->state, sizeof(p->state), "chained");
	snprintf(p->child, sizeof(p->child), "%s", cs->id);
	r = changes_manifest_write(p, true);
	changes_remove_work(p);
	return r;
}

int changes_chain(struct changes_set *cs, const char *parent_id, char *why, size_t why_size)
{
	struct changes_set *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	r = changes_open(p, parent_id, why, why_size);
	if (r < 0)
		goto out;
	r = -EINVAL;
	if (!streq(p->state, "open"))
		snprintf(why, why_size, "change set %s is %s, not open", p->id, p->state);
	else if (!streq(p->workspace, cs->workspace) || p->ws_dev != cs->ws_dev ||
		 p->ws_ino != cs->ws_ino)
		snprintf(why, why_size, "change set %s is of the workspace %s, not %s", p->id,
			 p->workspace, cs->workspace);
	else if ((r = changes_lock(p)) < 0)
		snprintf(why, why_size, "change set %s %s", p->id,
			 r == -EWOULDBLOCK ? "is in use by a running session" : strerror(-r));
	else if (has(p, "journal") && (r = -EINVAL))
		snprintf(why, why_size,
			 "an apply of change set %s was interrupted; finish it (bpfbox apply %s)",
			 p->id, p->id);
	else if ((r = take_upper(cs, p)) < 0)
		snprintf(why, why_size, "cannot take change set %s over: %s", p->id, strerror(-r));
out:
	changes_unlock(p);
	free(p);
	return r;
}

void changes_remove_parents(const struct changes_set *cs)
{
	struct changes_set *p = calloc(1, sizeof(*p));
	char why[PATH_MAX + 128], child[64];

	snprintf(child, sizeof(child), "%s", cs->id);
	for (const char *id = cs->parent; p && id[0];) {
		if (changes_open(p, id, why, sizeof(why)) < 0 || !streq(p->state, "chained") ||
		    !streq(p->child, child))
			break;
		changes_remove(p);
		snprintf(child, sizeof(child), "%s", p->id);
		id = p->parent;
	}
	free(p);
}

int changes_remove_work(const struct changes_set *cs)
{
	/* overlayfs's own dirs in work are mode 0 (volatile's marker too): searchable first. */
	static const char *const own[] = {"work", "work/work", "work/work/incompat",
					  "work/work/incompat/volatile"};
	char path[PATH_MAX + 64];

	/* A set whose directory was never made has nothing to remove. */
	if (cs->dir[0] != '/')
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(own); i++) {
		snprintf(path, sizeof(path), "%s/%s", cs->dir, own[i]);
		chmod(path, 0700);
	}
	snprintf(path, sizeof(path), "%s/work", cs->dir);
	return rm_tree(path);
}

int changes_remove(const struct changes_set *cs)
{
	/*
	 * Never a path built on an empty dir: "" + "/work" was the host's
	 * /work, removed whole after a set-up refused before the set's
	 * directory existed (docs/SECURITY.md, "Removing what bpfbox made").
	 */
	if (cs->dir[0] != '/')
		return -EINVAL;
	changes_remove_work(cs);
	return rm_tree(cs->dir);
}

void changes_summary_json(const struct changes_set *cs, struct jsonw *w)
{
	const struct change_list *l = &cs->list;

	jsonw_str(w, "changes_id", cs->id);
	jsonw_u64(w, "added", l->count[CHANGE_ADDED]);
	jsonw_u64(w, "modified", l->count[CHANGE_MODIFIED] + l->count[CHANGE_MODE]);
	jsonw_u64(w, "deleted", l->count[CHANGE_DELETED]);
	jsonw_bool(w, "kept", cs->kept);
	jsonw_bool(w, "applied", cs->applied);
	jsonw_array_begin(w, "paths");
	for (size_t i = 0; i < l->n && i < CHANGES_PATHS_MAX; i++)
		jsonw_array_strn(w, l->v[i].path, strlen(l->v[i].path));
	jsonw_array_end(w);
	jsonw_bool(w, "paths_truncated", l->n > CHANGES_PATHS_MAX || cs->paths_more);
}

struct json_object *changes_summary_object(const struct changes_set *cs)
{
	struct jsonw w = {0};
	struct json_object *o = NULL;

	jsonw_begin(&w);
	changes_summary_json(cs, &w);
	jsonw_end(&w);
	if (!w.oom)
		o = json_tokener_parse(w.buf);
	jsonw_free(&w);
	return o;
}

static int take_paths(struct json_object *a, struct changes_set *cs)
{
	size_t n = json_object_array_length(a);

	if (n > CHANGES_PATHS_MAX || !(cs->list.v = calloc(n ? n : 1, sizeof(*cs->list.v))))
		return -EINVAL;
	cs->list.cap = n;
	for (size_t i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(a, i);
		const char *s = json_object_get_string(p);

		if (!json_object_is_type(p, json_type_string) || !s[0] || strlen(s) >= PATH_MAX ||
		    !(cs->list.v[i].path = strdup(s)))
			return -EINVAL;
		cs->list.n++;
	}
	return 0;
}

int changes_summary_parse(struct json_object *o, struct changes_set *cs, const char **bad)
{
	static const char *const counts[] = {"added", "modified", "deleted"};
	static const enum change_kind kinds[] = {CHANGE_ADDED, CHANGE_MODIFIED, CHANGE_DELETED};
	struct json_object *v;
	const char *s;
	int64_t n;

	memset(cs, 0, sizeof(*cs));
	cs->lock_fd = cs->warm_pidfd = cs->start_pipe[0] = cs->start_pipe[1] = -1;
	*bad = "changes_id";
	if (!json_object_is_type(o, json_type_object) || !(s = json_member_str(o, "changes_id")) ||
	    !changes_id_valid(s))
		return -EINVAL;
	snprintf(cs->id, sizeof(cs->id), "%s", s);
	for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
		*bad = counts[i];
		if (!json_member_int(o, counts[i], &n) || n < 0)
			return -EINVAL;
		cs->list.count[kinds[i]] = n;
	}
	*bad = "kept";
	if (!json_object_object_get_ex(o, "kept", &v) || !json_object_is_type(v, json_type_boolean))
		return -EINVAL;
	cs->kept = json_object_get_boolean(v);
	*bad = "applied";
	if (!json_object_object_get_ex(o, "applied", &v) ||
	    !json_object_is_type(v, json_type_boolean))
		return -EINVAL;
	cs->applied = json_object_get_boolean(v);
	*bad = "paths_truncated";
	if (!json_object_object_get_ex(o, "paths_truncated", &v) ||
	    !json_object_is_type(v, json_type_boolean))
		return -EINVAL;
	cs->paths_more = json_object_get_boolean(v);
	*bad = "paths";
	if (!json_object_object_get_ex(o, "paths", &v) || !json_object_is_type(v, json_type_array))
		return -EINVAL;
	return take_paths(v, cs);
}

int changes_session_end(struct changes_set *cs, int upper)
{
	char why[256];
	int r;

	if (upper_untouched(cs, upper)) {
		memset(&cs->list, 0, sizeof(cs->list));
		cs->kept = false;
		return 0;
	}
	r = changes_scan(cs, &cs->list, why, sizeof(why));

	cs->kept = r < 0 || cs->list.n > 0;
	if (r < 0)
		return r;
	/* With the start the child took, flushed: it outlives the session. */
	return cs->kept ? changes_manifest_write(cs, true) : 0;
}
