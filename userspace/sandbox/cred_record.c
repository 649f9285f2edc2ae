// SPDX-License-Identifier: GPL-2.0
/*
 * The credential scan's record of a large tree (cred_record.h). The file:
 * "BPFBOXS1", the key, the number of directories, each directory (eight
 * 64-bit fields, the lengths of its path and names, both NUL-ended, then
 * them), and a hash of all before it (sum_of). Host byte order: it never
 * leaves the machine.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cred_record.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define MAGIC	   "BPFBOXS1"
#define HDR_U64	   9
#define MAX_RECORD (64u << 20)

struct dir_hdr {
	uint64_t f[HDR_U64]; /* dev ino nlink entries ctime_s ctime_ns mtime_s mtime_ns settled */
	uint32_t rel_len, names_len;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ULL

/* The file's check: FNV-1a's step on 64-bit words (a megabyte in a fraction of a millisecond). */
static uint64_t sum_of(const char *p, size_t n)
{
	uint64_t h = FNV_INIT, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return fnv(h, p + i, n - i);
}

/* File systems whose directories' ctimes move with every name they gain or lose. */
static bool fs_known(int fd)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return false;
	switch ((unsigned long)sfs.f_type) {
	case 0xEF53:	 /* ext2/3/4 */
	case 0x58465342: /* xfs */
	case 0x9123683E: /* btrfs */
	case 0x01021994: /* tmpfs */
		return true;
	}
	return false;
}

static uint32_t rel_hash(const char *rel)
{
	uint64_t h = fnv(FNV_INIT, rel, strlen(rel));

	return (uint32_t)(h ^ (h >> 32));
}

/*
 * Names as cred_record_name() writes them: each a class and a name that is
 * one component, an empty string at the end and nothing after it.
 */
static bool names_ok(const char *p, size_t len)
{
	const char *end = p + len;

	while (p < end && *p) {
		size_t n = strnlen(p, end - p);

		if (n == (size_t)(end - p) || n < 2 || (p[0] != 'd' && p[0] != 'm') ||
		    memchr(p + 1, '/', n - 1) || streq(p + 1, ".") || streq(p + 1, ".."))
			return false;
		p += n + 1;
	}
	return p == end - 1;
}

/* The directories of raw[0, size), checked whole; false when anything is off. */
static bool parse(struct cred_record *cr, size_t size)
{
	const char *p = cr->raw, *end = cr->raw + size - sizeof(uint64_t);
	uint64_t key, n, sum;

	if (size < 24 + sizeof(uint64_t) || memcmp(p, MAGIC, 8))
		return false;
	memcpy(&sum, end, sizeof(sum));
	if (sum_of(p, end - p) != sum)
		return false;
	memcpy(&key, p + 8, 8);
	memcpy(&n, p + 16, 8);
	if (key != cr->key || n > size / sizeof(struct dir_hdr))
		return false;
	p += 24;
	cr->old = calloc(n ? n : 1, sizeof(*cr->old));
	cr->nslot = 1;
	while (cr->nslot < 2 * n)
		cr->nslot <<= 1;
	cr->slot = calloc(cr->nslot, sizeof(*cr->slot));
	if (!cr->old || !cr->slot)
		return false;
	for (uint64_t i = 0; i < n; i++) {
		struct cred_dir *d = &cr->old[i];
		struct dir_hdr h;
		uint32_t s;

		if ((size_t)(end - p) < sizeof(h))
			return false;
		memcpy(&h, p, sizeof(h));
		p += sizeof(h);
		if (!h.rel_len || !h.names_len ||
		    (size_t)(end - p) < (size_t)h.rel_len + h.names_len || p[h.rel_len - 1] ||
		    p[h.rel_len + h.names_len - 1])
			return false;
		*d = (struct cred_dir){
			.rel = p,
			.dev = h.f[0],
			.ino = h.f[1],
			.nlink = h.f[2],
			.entries = h.f[3],
			.ctime_s = (int64_t)h.f[4],
			.ctime_ns = (int64_t)h.f[5],
			.mtime_s = (int64_t)h.f[6],
			.mtime_ns = (int64_t)h.f[7],
			.names = p + h.rel_len,
			.names_len = h.names_len,
			.settled = h.f[8] == 1,
		};
		p += h.rel_len + h.names_len;
		if (strlen(d->rel) != h.rel_len - 1 || !names_ok(d->names, d->names_len))
			return false;
		for (s = rel_hash(d->rel) & (cr->nslot - 1); cr->slot[s];
		     s = (s + 1) & (cr->nslot - 1))
			;
		cr->slot[s] = i + 1;
	}
	cr->nold = n;
	return p == end;
}

static void helper_start(struct cred_record *cr);
static void helper_stop(struct cred_record *cr);

static void forget_old(struct cred_record *cr)
{
	helper_stop(cr);
	free(cr->seen);
	free(cr->seen_state);
	cr->seen = NULL;
	cr->seen_state = NULL;
	free(cr->raw);
	free(cr->old);
	free(cr->slot);
	cr->raw = NULL;
	cr->old = NULL;
	cr->slot = NULL;
	cr->nold = cr->nslot = 0;
}

int cred_record_open(struct cred_record *cr, const char *dir, const char *root, int rootfd,
		     const char *key_extra, size_t key_extra_len)
{
	const char *e = getenv("BPFBOX_SCAN_RECORD");
	struct stat st, fst;
	uint64_t key = FNV_INIT, v[3];
	ssize_t got = 0;
	int fd;

	*cr = (struct cred_record){.start_ns = real_now_ns(), .rootfd = rootfd};
	if (!dir || (e && streq(e, "0")) || rootfd < 0 || fstat(rootfd, &st) < 0 ||
	    !fs_known(rootfd))
		return 0;
	v[0] = 1; /* the format */
	v[1] = geteuid();
	v[2] = st.st_ino;
	key = fnv(key, v, sizeof(v));
	key = fnv(key, &st.st_dev, sizeof(st.st_dev));
	key = fnv(key, root, strlen(root) + 1);
	cr->key = fnv(key, key_extra, key_extra_len);
	cr->root_dev = st.st_dev;
	if (snprintf(cr->path, sizeof(cr->path), "%s/.scan.%016llx", dir,
		     (unsigned long long)cr->key) >= (int)sizeof(cr->path)) {
		cr->path[0] = '\0';
		return 0;
	}
	cr->dirlen = strlen(dir);
	fd = open(cr->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* Only this user's own file, which nobody else could have written. */
	if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_uid == geteuid() &&
	    !(fst.st_mode & 022) && fst.st_size > 0 && fst.st_size <= MAX_RECORD &&
	    (cr->raw = malloc(fst.st_size))) {
		while (got < fst.st_size) {
			ssize_t n = read(fd, cr->raw + got, fst.st_size - got);

			if (n <= 0)
				break;
			got += n;
		}
	}
	close(fd);
	if (!cr->raw || got != fst.st_size || !parse(cr, got))
		forget_old(cr);
	else
		helper_start(cr);
	return 0;
}

/*
 * The second thread. Checking a record is one lstat a directory (about
 * 2 µs here), so that of a tree of 10,000 directories is shared: a helper
 * takes the record's directories from its last (the deepest) while the
 * walk takes them in its order from the first; each directory's lstat is
 * made once, by whichever claims it first (seen_state), and the walk
 * waits only for one the helper is making. An lstat made ahead is no
 * older than the start of this scan: a change after it is missed exactly
 * as one after the walk's own.
 */
enum { SEEN_NONE, SEEN_BUSY, SEEN_DONE, SEEN_MINE };

static void see(struct cred_record *cr, size_t i)
{
	const char *rel = cr->old[i].rel;
	struct cred_seen *v = &cr->seen[i];
	struct stat st;

	if (fstatat(cr->rootfd, rel[0] ? rel : "", &st,
		    AT_SYMLINK_NOFOLLOW | (rel[0] ? 0 : AT_EMPTY_PATH)) < 0 ||
	    !S_ISDIR(st.st_mode)) {
		v->dir = false;
		return;
	}
	*v = (struct cred_seen){
		.dev = st.st_dev,
		.ino = st.st_ino,
		.nlink = st.st_nlink,
		.ctime_s = st.st_ctim.tv_sec,
		.ctime_ns = st.st_ctim.tv_nsec,
		.mtime_s = st.st_mtim.tv_sec,
		.mtime_ns = st.st_mtim.tv_nsec,
		.dir = true,
	};
}

static void *helper(void *arg)
{
	struct cred_record *cr = arg;

	for (size_t i = cr->nold;
	     i-- > 0 && !__atomic_load_n(&cr->helper_stop, __ATOMIC_RELAXED);) {
		unsigned char want = SEEN_NONE;

		if (!__atomic_compare_exchange_n(&cr->seen_state[i], &want, SEEN_BUSY, false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		see(cr, i);
		__atomic_store_n(&cr->seen_state[i], SEEN_DONE, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void helper_start(struct cred_record *cr)
{
	pthread_attr_t attr;
	cpu_set_t cpus;

	cr->seen = calloc(cr->nold, sizeof(*cr->seen));
	cr->seen_state = calloc(cr->nold, 1);
	if (!cr->seen || !cr->seen_state || cr->nold < CRED_RECORD_MIN_SHARED ||
	    sched_getaffinity(0, sizeof(cpus), &cpus) < 0 || CPU_COUNT(&cpus) < 2 ||
	    pthread_attr_init(&attr))
		return;
	pthread_attr_setstacksize(&attr, 64 << 10);
	cr->helper_on = cr->shared = !pthread_create(&cr->helper, &attr, helper, cr);
	pthread_attr_destroy(&attr);
}

static void helper_stop(struct cred_record *cr)
{
	if (!cr->helper_on)
		return;
	__atomic_store_n(&cr->helper_stop, true, __ATOMIC_RELAXED);
	pthread_join(cr->helper, NULL);
	cr->helper_on = false;
}

/* Directory i's lstat now: made here, or the helper's (waited for while it makes it). */
static const struct cred_seen *seen_of(struct cred_record *cr, size_t i)
{
	unsigned char s = SEEN_NONE;

	if (__atomic_compare_exchange_n(&cr->seen_state[i], &s, SEEN_MINE, false, __ATOMIC_ACQUIRE,
					__ATOMIC_ACQUIRE)) {
		see(cr, i);
		return &cr->seen[i];
	}
	while (s == SEEN_BUSY)
		s = __atomic_load_n(&cr->seen_state[i], __ATOMIC_ACQUIRE);
	return s == SEEN_DONE ? &cr->seen[i] : NULL;
}

const struct cred_dir *cred_record_take(struct cred_record *cr, const char *rel)
{
	if (!cr->nold || !cr->seen)
		return NULL;
	for (uint32_t s = rel_hash(rel) & (cr->nslot - 1); cr->slot[s];
	     s = (s + 1) & (cr->nslot - 1)) {
		size_t i = cr->slot[s] - 1;
		const struct cred_dir *d = &cr->old[i];
		const struct cred_seen *v;

		if (!streq(d->rel, rel))
			continue;
		/*
		 * Unchanged: the same directory, no name gained or lost since
		 * (its ctime), and that ctime older than the scan that read it
		 * by more than a clock tick, so that a name added in the same
		 * tick, after that read, could not have left it as it was.
		 */
		v = seen_of(cr, i);
		if (!v || !v->dir || !d->settled || v->dev != cr->root_dev || d->dev != v->dev ||
		    d->ino != v->ino || d->nlink != v->nlink || d->ctime_s != v->ctime_s ||
		    d->ctime_ns != v->ctime_ns || d->mtime_s != v->mtime_s ||
		    d->mtime_ns != v->mtime_ns)
			return NULL;
		return d;
	}
	return NULL;
}

static void put_dir(struct cred_record *cr, const struct cred_dir *d)
{
	struct dir_hdr h = {
		.f = {d->dev, d->ino, d->nlink, d->entries, (uint64_t)d->ctime_s,
		      (uint64_t)d->ctime_ns, (uint64_t)d->mtime_s, (uint64_t)d->mtime_ns,
		      d->settled},
		.rel_len = strlen(d->rel) + 1,
		.names_len = d->names_len,
	};

	if (buf_append(&cr->out, &h, sizeof(h)) || buf_append(&cr->out, d->rel, h.rel_len) ||
	    (d->names_len && buf_append(&cr->out, d->names, d->names_len)))
		cr->spoilt = true;
	cr->ndirs++;
}

void cred_record_keep(struct cred_record *cr, const struct cred_dir *d)
{
	cr->reused++;
	if (cr->path[0] && !cr->spoilt)
		put_dir(cr, d);
}

void cred_record_begin(struct cred_record *cr, const char *rel, const struct stat *st)
{
	struct cred_dir d = {
		.rel = rel,
		.dev = st->st_dev,
		.ino = st->st_ino,
		.nlink = st->st_nlink,
		.ctime_s = st->st_ctim.tv_sec,
		.ctime_ns = st->st_ctim.tv_nsec,
		.mtime_s = st->st_mtim.tv_sec,
		.mtime_ns = st->st_mtim.tv_nsec,
		.settled = st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec <
			   cr->start_ns - CRED_RECORD_SETTLE_NS,
	};

	cr->read++;
	cr->changed = true;
	if (!cr->path[0] || cr->spoilt)
		return;
	cr->cur = cr->out.len;
	put_dir(cr, &d);
}

void cred_record_name(struct cred_record *cr, char cls, const char *name, size_t len)
{
	if (!cr->path[0] || cr->spoilt)
		return;
	if (buf_append(&cr->out, &cls, 1) || buf_append(&cr->out, name, len + 1))
		cr->spoilt = true;
}

void cred_record_end(struct cred_record *cr, uint64_t entries)
{
	struct dir_hdr h;
	char nul = '\0';

	if (!cr->path[0] || cr->spoilt || buf_append(&cr->out, &nul, 1)) {
		cr->spoilt = true;
		return;
	}
	memcpy(&h, cr->out.p + cr->cur, sizeof(h));
	h.f[3] = entries;
	h.names_len = cr->out.len - cr->cur - sizeof(h) - h.rel_len;
	memcpy(cr->out.p + cr->cur, &h, sizeof(h));
}

/* Beyond CRED_RECORD_MAX_FILES records in dir, the least recently written go. */
static void prune(const char *dir)
{
	struct {
		char name[32];
		int64_t mtime;
	} v[CRED_RECORD_MAX_FILES + 8];
	size_t n = 0;
	struct dirent *e;
	DIR *d = opendir(dir);
	int dfd;

	if (!d)
		return;
	dfd = dirfd(d);
	while ((e = readdir(d))) {
		struct stat st;
		size_t oldest = 0;

		if (strncmp(e->d_name, ".scan.", 6) || strlen(e->d_name) >= sizeof(v[0].name) ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (n < sizeof(v) / sizeof(v[0])) {
			snprintf(v[n].name, sizeof(v[n].name), "%s", e->d_name);
			v[n++].mtime = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
			continue;
		}
		/* Full: the oldest known goes now, this one takes its place. */
		for (size_t i = 1; i < n; i++)
			if (v[i].mtime < v[oldest].mtime)
				oldest = i;
		unlinkat(dfd, v[oldest].name, 0);
		snprintf(v[oldest].name, sizeof(v[oldest].name), "%s", e->d_name);
		v[oldest].mtime = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	}
	while (n > CRED_RECORD_MAX_FILES) {
		size_t oldest = 0;

		for (size_t i = 1; i < n; i++)
			if (v[i].mtime < v[oldest].mtime)
				oldest = i;
		unlinkat(dfd, v[oldest].name, 0);
		v[oldest] = v[--n];
	}
	closedir(d);
}

static int write_record(struct cred_record *cr)
{
	char tmp[sizeof(cr->path) + 32], dir[sizeof(cr->path)];
	uint64_t n = cr->ndirs, sum;
	struct buf b = {0};
	size_t off = 0;
	int fd, r = 0;

	if (buf_append(&b, MAGIC, 8) || buf_append(&b, &cr->key, 8) || buf_append(&b, &n, 8) ||
	    buf_append(&b, cr->out.p, cr->out.len))
		goto out;
	sum = sum_of(b.p, b.len);
	if (buf_append(&b, &sum, sizeof(sum)))
		goto out;
	if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", cr->path, (int)getpid()) >= (int)sizeof(tmp))
		goto out;
	snprintf(dir, sizeof(dir), "%.*s", (int)cr->dirlen, cr->path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	/* The change sets' directory, made as changes_root makes it. */
	if (fd < 0 && errno == ENOENT && mkdir_parents(dir, 0700) == 0 &&
	    (mkdir(dir, 0700) == 0 || errno == EEXIST))
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out;
	while (off < b.len) {
		ssize_t w = write(fd, b.p + off, b.len - off);

		if (w <= 0) {
			r = -1;
			break;
		}
		off += w;
	}
	if (close(fd) < 0 || r || rename(tmp, cr->path) < 0) {
		unlink(tmp);
		goto out;
	}
	prune(dir);
out:
	buf_free(&b);
	return 0;
}

void cred_record_close(struct cred_record *cr, uint64_t entries)
{
	/* Directories the record had and this walk did not see: gone, written again. */
	if (cr->ndirs != cr->nold)
		cr->changed = true;
	if (cr->path[0] && !cr->spoilt && cr->changed && entries >= CRED_RECORD_MIN_ENTRIES)
		write_record(cr);
	if (cr->path[0])
		log_info(
			"credential scan of %llu entries: %u directories from its record, %u read, "
			"in %.1f ms%s",
			(unsigned long long)entries, cr->reused, cr->read,
			(real_now_ns() - cr->start_ns) / 1e6,
			cr->shared ? ", checked by 2 threads" : "");
	forget_old(cr);
	buf_free(&cr->out);
}
