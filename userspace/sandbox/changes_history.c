// SPDX-License-Identifier: GPL-2.0
/*
 * A workspace's history (changes.h, docs/runtime.md "Undo"): each apply
 * leaves a generation, ROOT/history/KEY/N, holding what it overwrote or
 * deleted (prev) and what it left at each path (paths, with the SHA-256
 * of each file and symlink it wrote), so that `bpfbox undo` can put the
 * workspace back and see what changed since. KEY is the SHA-256 of the
 * workspace's path; a generation also names the directory's st_dev and
 * st_ino. The history is bounded: the oldest generations beyond the
 * set's bound (generations, MB) are dropped at each apply, the newest
 * always kept. One flock (KEY/lock) orders the applies' ends and undos.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "changes_internal.h"
#include "../lib/json.h"
#include "../lib/jsonw.h"
#include "../lib/util.h"

#define GEN_JSON "gen.json"

static const char kind_letters[] = {
	[CHANGE_ADDED] = 'a', [CHANGE_MODIFIED] = 'm', [CHANGE_MODE] = 'c', [CHANGE_DELETED] = 'd'};

int ch_paths_write(const char *file, const struct change_list *l)
{
	char tmp[PATH_MAX + 16];
	FILE *f;
	int r = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	for (size_t i = 0; i < l->n; i++) {
		const struct change *c = &l->v[i];
		char sum[2 * SHA256_LEN + 1] = "-";

		if (c->summed)
			for (size_t k = 0; k < SHA256_LEN; k++)
				snprintf(sum + 2 * k, 3, "%02x", c->sum[k]);
		fprintf(f, "%c %o %o %s %s", kind_letters[c->kind], (unsigned int)c->mode,
			(unsigned int)c->old_mode, sum, c->path);
		fputc('\0', f);
	}
	if (fflush(f) != 0 || fsync(fileno(f)) < 0)
		r = -errno;
	if (fclose(f) != 0 && !r)
		r = -errno;
	if (!r && rename(tmp, file) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	return r;
}

static int one_record(struct change_list *l, const char *rec)
{
	unsigned int mode, old;
	char k, sum[2 * SHA256_LEN + 2];
	const char *kp;
	struct change *c;
	int at = 0;

	if (sscanf(rec, "%c %o %o %65s %n", &k, &mode, &old, sum, &at) != 4 || !at || !rec[at] ||
	    !(kp = memchr(kind_letters, k, sizeof(kind_letters))))
		return -EINVAL;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct change *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	c = &l->v[l->n];
	*c = (struct change){
		.kind = (enum change_kind)(kp - kind_letters), .mode = mode, .old_mode = old};
	if (strlen(sum) == 2 * SHA256_LEN) {
		for (size_t i = 0; i < SHA256_LEN; i++)
			if (sscanf(sum + 2 * i, "%2hhx", &c->sum[i]) != 1)
				return -EINVAL;
		c->summed = true;
	}
	if (!(c->path = strdup(rec + at)))
		return -ENOMEM;
	l->count[c->kind]++;
	l->n++;
	return 0;
}

int ch_paths_read(const char *file, struct change_list *l)
{
	_cleanup_close_ int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t got = 0;
	int r = 0;

	memset(l, 0, sizeof(*l));
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (!(buf = malloc(st.st_size + 1)))
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, st.st_size - got);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += n;
	}
	buf[got] = '\0';
	for (size_t i = 0; i < got && !r; i += strlen(buf + i) + 1)
		r = one_record(l, buf + i);
	if (r < 0)
		change_list_free(l);
	return r;
}

int changes_history_dir(const char *workspace, char *buf, size_t size)
{
	char root[PATH_MAX];
	uint8_t h[SHA256_LEN];
	int r = changes_root(root, sizeof(root), false), n;

	if (r < 0)
		return r;
	sha256(workspace, strlen(workspace), h);
	n = snprintf(buf, size, "%s/history/", root);
	for (size_t i = 0; i < 16 && n > 0 && (size_t)n + 3 < size; i++)
		n += snprintf(buf + n, size - n, "%02x", h[i]);
	return n > 0 && (size_t)n + 3 < size ? 0 : -ENAMETOOLONG;
}

int ch_gen_read(const char *hist, unsigned long n, struct changes_gen *g)
{
	char path[PATH_MAX + 64];
	struct json_object *o;
	const char *s;
	int64_t v;

	memset(g, 0, sizeof(*g));
	snprintf(path, sizeof(path), "%s/%lu/" GEN_JSON, hist, n);
	if (!(o = json_object_from_file(path)))
		return -ENOENT;
	g->n = n;
	snprintf(g->id, sizeof(g->id), "%s", (s = json_member_str(o, "changes_id")) ? s : "");
	snprintf(g->workspace, sizeof(g->workspace), "%s",
		 (s = json_member_str(o, "workspace")) ? s : "");
	if (json_member_int(o, "workspace_dev", &v))
		g->ws_dev = v;
	if (json_member_int(o, "workspace_ino", &v))
		g->ws_ino = v;
	json_member_int(o, "applied_ns", &g->applied_ns);
	if (json_member_int(o, "paths", &v))
		g->paths = v;
	if (json_member_int(o, "bytes", &v))
		g->bytes = v;
	if (json_member_int(o, "keep_generations", &v))
		g->keep_gens = v;
	if (json_member_int(o, "keep_mb", &v))
		g->keep_mb = v;
	json_object_put(o);
	return 0;
}

static int by_n(const void *a, const void *b)
{
	unsigned long x = ((const struct changes_gen *)a)->n,
		      y = ((const struct changes_gen *)b)->n;

	return x < y ? -1 : x > y;
}

static int list_in(const char *hist, struct changes_gen **v, size_t *n)
{
	DIR *d = opendir(hist);
	struct dirent *de;
	size_t cap = 0;

	*v = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char *end;
		unsigned long g = strtoul(de->d_name, &end, 10);

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end)
			continue;
		if (*n == cap) {
			struct changes_gen *nv =
				realloc(*v, (cap = cap ? 2 * cap : 16) * sizeof(**v));

			if (!nv) {
				closedir(d);
				return -ENOMEM;
			}
			*v = nv;
		}
		if (ch_gen_read(hist, g, &(*v)[*n]) == 0)
			(*n)++;
	}
	closedir(d);
	if (*n) /* qsort of NULL, even for none, is undefined */
		qsort(*v, *n, sizeof(**v), by_n);
	return 0;
}

int changes_history_list(const char *workspace, struct changes_gen **v, size_t *n)
{
	char hist[PATH_MAX];
	int r = changes_history_dir(workspace, hist, sizeof(hist));

	*v = NULL;
	*n = 0;
	return r < 0 ? r : list_in(hist, v, n);
}

/* A generation's directory removed: renamed away first, so none is left half. */
void ch_gen_drop(const char *hist, unsigned long n)
{
	char from[PATH_MAX + 32], to[PATH_MAX + 32];

	snprintf(from, sizeof(from), "%s/%lu", hist, n);
	snprintf(to, sizeof(to), "%s/.drop-%lu", hist, n);
	if (rename(from, to) == 0)
		rm_tree(to);
}

/*
 * The set a dropped generation applied: its directory (its manifest, by
 * then) goes with it, unless it is something else by now or in use.
 */
static void drop_applied_set(const char *id)
{
	struct changes_set cs;
	char why[256];

	if (!id[0] || changes_open(&cs, id, why, sizeof(why)) < 0 || !streq(cs.state, "applied"))
		return;
	if (changes_lock(&cs) == 0) {
		changes_remove(&cs);
		changes_unlock(&cs);
	}
}

/*
 * The oldest beyond keep generations or keep_mb MB dropped, with the sets
 * they applied; the newest always stays.
 */
static void prune(const char *hist, unsigned int keep, uint64_t keep_mb)
{
	struct changes_gen *v;
	uint64_t bytes = 0;
	size_t n, kept = 0;

	if (list_in(hist, &v, &n) < 0)
		return;
	for (size_t i = n; i-- > 0;) {
		bytes += v[i].bytes;
		if (kept && (kept >= keep || bytes > keep_mb * 1024 * 1024)) {
			ch_gen_drop(hist, v[i].n);
			drop_applied_set(v[i].id);
		} else
			kept++;
	}
	free(v);
}

static int gen_json_write(const char *dir, const struct changes_set *cs, unsigned long n,
			  uint64_t paths, uint64_t bytes)
{
	char path[PATH_MAX + 200];
	struct timespec ts;
	struct jsonw w = {0};
	int fd, r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	jsonw_begin(&w);
	jsonw_u64(&w, "version", 1);
	jsonw_u64(&w, "generation", n);
	jsonw_str(&w, "changes_id", cs->id);
	jsonw_str(&w, "workspace", cs->workspace);
	jsonw_u64(&w, "workspace_dev", cs->ws_dev);
	jsonw_u64(&w, "workspace_ino", cs->ws_ino);
	jsonw_i64(&w, "applied_ns", (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	jsonw_u64(&w, "paths", paths);
	jsonw_u64(&w, "bytes", bytes);
	jsonw_u64(&w, "keep_generations", cs->undo_gens);
	jsonw_u64(&w, "keep_mb", cs->undo_mb);
	jsonw_end(&w);
	jsonw_newline(&w);
	snprintf(path, sizeof(path), "%s/" GEN_JSON, dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w.oom || fd < 0 || write(fd, w.buf, w.len) != (ssize_t)w.len || fsync(fd) < 0)
		r = w.oom ? -ENOMEM : -errno;
	fd_close(&fd);
	jsonw_free(&w);
	return r;
}

/* The records of a paths file: its NULs. */
static uint64_t count_records(const char *file)
{
	_cleanup_close_ int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[65536];
	uint64_t n = 0;
	ssize_t got;

	while (fd >= 0 && (got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got; i++)
			n += buf[i] == '\0';
	return n;
}

/* The next generation's number: past every one there and the last one made. */
static unsigned long next_n(const char *hist)
{
	char path[PATH_MAX + 16], buf[32] = "";
	struct changes_gen *v;
	unsigned long n = 1, last = 0;
	size_t cnt;
	FILE *f;

	snprintf(path, sizeof(path), "%s/next", hist);
	if ((f = fopen(path, "re"))) {
		if (fgets(buf, sizeof(buf), f))
			last = strtoul(buf, NULL, 10);
		fclose(f);
	}
	if (list_in(hist, &v, &cnt) == 0 && cnt)
		n = v[cnt - 1].n + 1;
	free(v);
	return last > n ? last : n;
}

static int next_write(const char *hist, unsigned long n)
{
	char path[PATH_MAX + 16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/next", hist);
	if (!(f = fopen(path, "we")))
		return -errno;
	fprintf(f, "%lu\n", n);
	return fclose(f) == 0 ? 0 : -errno;
}

/* A generation that names the set already (its end was interrupted after the rename). */
static unsigned long gen_of_set(const char *hist, const char *id)
{
	struct changes_gen *v;
	unsigned long n = 0;
	size_t cnt;

	if (list_in(hist, &v, &cnt) < 0)
		return 0;
	for (size_t i = 0; i < cnt; i++)
		if (streq(v[i].id, id))
			n = v[i].n;
	free(v);
	return n;
}

int ch_history_lock(const char *hist)
{
	char path[PATH_MAX + 16];
	int fd, r;

	if ((r = mkdir_parents(hist, 0700)) < 0 || (mkdir(hist, 0700) < 0 && errno != EEXIST))
		return r < 0 ? r : -errno;
	snprintf(path, sizeof(path), "%s/lock", hist);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* Into the staging directory: prev (may be none) and paths, each once. */
static int stage(const struct changes_set *cs, const char *staging)
{
	const char *const names[] = {"prev", "paths"};
	char from[PATH_MAX + 16], to[PATH_MAX + 160];

	if (mkdir(staging, 0700) < 0 && errno != EEXIST)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(from, sizeof(from), "%s/%s", cs->dir, names[i]);
		snprintf(to, sizeof(to), "%s/%s", staging, names[i]);
		if (rename(from, to) < 0 && errno != ENOENT)
			return -errno;
	}
	return 0;
}

int changes_history_commit(struct changes_set *cs)
{
	char hist[PATH_MAX], staging[PATH_MAX + 80], path[PATH_MAX + 160];
	unsigned long n;
	int lock, r;

	if (!cs->undo_gens)
		cs->undo_gens = CHANGES_UNDO_GENERATIONS;
	if (!cs->undo_mb)
		cs->undo_mb = CHANGES_UNDO_MB;
	if ((r = changes_history_dir(cs->workspace, hist, sizeof(hist))) < 0)
		return r;
	if ((lock = ch_history_lock(hist)) < 0)
		return lock;
	snprintf(staging, sizeof(staging), "%s/.new-%s", hist, cs->id);
	snprintf(path, sizeof(path), "%s/" GEN_JSON, staging);
	if (access(staging, F_OK) < 0 && (n = gen_of_set(hist, cs->id))) {
		cs->generation = n; /* renamed already: only the set's end is left */
		goto out;
	}
	if ((r = stage(cs, staging)) < 0)
		goto out;
	n = 0; /* the number an interrupted end gave it already, else the next */
	{
		struct json_object *o = json_object_from_file(path);
		int64_t v;

		if (o && json_member_int(o, "generation", &v) && v > 0)
			n = v;
		json_object_put(o);
	}
	if (!n) {
		int sfd = open(staging, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		snprintf(path, sizeof(path), "%s/paths", staging);
		n = next_n(hist);
		r = sfd < 0 ? -errno
			    : gen_json_write(staging, cs, n, count_records(path),
					     ch_tree_bytes(sfd, "."));
		fd_close(&sfd);
		if (r < 0)
			goto out;
	}
	if ((r = next_write(hist, n + 1)) < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/%lu", hist, n);
	if (rename(staging, path) < 0) {
		r = -errno;
		goto out;
	}
	cs->generation = n;
	prune(hist, cs->undo_gens, cs->undo_mb);
out:
	close(lock);
	return r;
}
