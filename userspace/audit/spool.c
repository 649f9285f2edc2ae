// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "spool.h"
#include "../lib/util.h"

#define SEG_SUFFIX   ".seg"
#define FIRST_ID     (1ULL << 40) /* room below it for prepended segments */
#define POS_FILE     "position"	  /* read position of the first segment */
#define RBUF_DEFAULT (64U << 10)

struct rec_hdr {
	uint32_t len;
	uint32_t crc;
};

static void seg_name(char *buf, size_t size, uint64_t id)
{
	snprintf(buf, size, "%020" PRIu64 SEG_SUFFIX, id);
}

static uint32_t crc_of(const void *data, size_t len)
{
	return crc32(crc32(0L, Z_NULL, 0), data, len);
}

static int mkdir_p(const char *dir)
{
	int r = mkdir_parents(dir, 0755);

	if (r < 0)
		return r;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Walks a segment: counts its records, cuts a torn or corrupt tail. */
static int seg_scan(struct spool *sp, struct spool_seg *s)
{
	char name[40];
	uint64_t off = 0;
	struct stat st;
	char *buf = NULL;
	size_t cap = 0;
	int fd, r = 0;

	seg_name(name, sizeof(name), s->id);
	fd = openat(sp->dir_fd, name, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	while (off + sizeof(struct rec_hdr) <= (uint64_t)st.st_size) {
		struct rec_hdr h;

		if (pread(fd, &h, sizeof(h), off) != sizeof(h))
			break;
		if (!h.len || h.len > SPOOL_RECORD_MAX ||
		    off + sizeof(h) + h.len > (uint64_t)st.st_size)
			break;
		if (h.len > cap) {
			char *nb = realloc(buf, h.len);

			if (!nb) {
				r = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = h.len;
		}
		if (pread(fd, buf, h.len, off + sizeof(h)) != (ssize_t)h.len ||
		    crc_of(buf, h.len) != h.crc)
			break;
		off += sizeof(h) + h.len;
		s->records++;
	}
	if (off < (uint64_t)st.st_size) {
		sp->torn_bytes += st.st_size - off;
		if (ftruncate(fd, off) < 0)
			r = -errno;
	}
	s->bytes = off;
out:
	free(buf);
	close(fd);
	return r;
}

static void seg_insert_sorted(struct spool *sp, struct spool_seg *s)
{
	struct spool_seg **p = &sp->head;

	while (*p && (*p)->id < s->id)
		p = &(*p)->next;
	s->next = *p;
	*p = s;
	if (!s->next)
		sp->tail = s;
}

static void load_position(struct spool *sp)
{
	char buf[96];
	uint64_t id, off, recs;
	int fd = openat(sp->dir_fd, POS_FILE, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	unlinkat(sp->dir_fd, POS_FILE, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64, &id, &off, &recs) != 3 || !sp->head ||
	    sp->head->id != id || off > sp->head->bytes || recs > sp->head->records)
		return;
	sp->head->rd_off = off;
	sp->head->rd_records = recs;
	sp->records -= recs;
}

int spool_open(struct spool *sp, const char *dir, uint64_t max_bytes, char *err, size_t size)
{
	DIR *d;
	struct dirent *de;
	int r, fd;

	memset(sp, 0, sizeof(*sp));
	sp->dir_fd = sp->wfd = sp->rfd = -1;
	sp->max_bytes = max_bytes;
	/* Small enough that dropping one frees little, large enough to be few. */
	sp->seg_max = max_bytes / 16;
	if (sp->seg_max < (64U << 10))
		sp->seg_max = 64U << 10;
	if (sp->seg_max > (16U << 20))
		sp->seg_max = 16U << 20;
	snprintf(sp->dir, sizeof(sp->dir), "%s", dir);
	r = mkdir_p(dir);
	if (r < 0) {
		snprintf(err, size, "cannot create the spool directory %s: %s", dir, strerror(-r));
		return r;
	}
	sp->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sp->dir_fd < 0) {
		r = -errno;
		snprintf(err, size, "cannot open the spool directory %s: %s", dir, strerror(-r));
		return r;
	}
	if (flock(sp->dir_fd, LOCK_EX | LOCK_NB) < 0) {
		r = -errno;
		snprintf(err, size,
			 "the spool %s is used by another process; give each daemon "
			 "its own spool=DIR",
			 dir);
		spool_close(sp);
		return r;
	}
	fd = dup(sp->dir_fd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, size, "cannot read the spool directory %s: %s", dir, strerror(-r));
		spool_close(sp);
		return r;
	}
	while ((de = readdir(d))) {
		struct spool_seg *s;
		uint64_t id;
		char tail[8];

		if (strlen(de->d_name) != 20 + strlen(SEG_SUFFIX) ||
		    sscanf(de->d_name, "%20" SCNu64 "%7s", &id, tail) != 2 ||
		    strcmp(tail, SEG_SUFFIX) != 0)
			continue;
		s = calloc(1, sizeof(*s));
		if (!s) {
			r = -ENOMEM;
			break;
		}
		s->id = id;
		r = seg_scan(sp, s);
		if (r < 0) {
			free(s);
			break;
		}
		if (!s->records) {
			char name[40];

			seg_name(name, sizeof(name), id);
			unlinkat(sp->dir_fd, name, 0);
			free(s);
			continue;
		}
		seg_insert_sorted(sp, s);
		sp->bytes += s->bytes;
		sp->records += s->records;
	}
	closedir(d);
	if (r < 0) {
		snprintf(err, size, "cannot read the spool %s: %s", dir, strerror(-r));
		spool_close(sp);
		return r;
	}
	load_position(sp);
	return 0;
}

static void close_read(struct spool *sp)
{
	if (sp->rfd >= 0)
		close(sp->rfd);
	sp->rfd = -1;
	sp->rbuf_len = sp->rbuf_pos = 0;
	sp->rbuf_at = 0;
}

/* Deletes the first segment; returns how many records of it were unread. */
static uint64_t drop_head(struct spool *sp)
{
	struct spool_seg *s = sp->head;
	uint64_t unread;
	char name[40];

	if (!s)
		return 0;
	unread = s->records - s->rd_records;
	close_read(sp);
	if (s == sp->tail) {
		if (sp->wfd >= 0)
			close(sp->wfd);
		sp->wfd = -1;
		sp->tail = NULL;
	}
	seg_name(name, sizeof(name), s->id);
	unlinkat(sp->dir_fd, name, 0);
	sp->head = s->next;
	sp->bytes -= s->bytes;
	sp->records -= unread;
	free(s);
	return unread;
}

void spool_close(struct spool *sp)
{
	if (sp->head && sp->head->rd_off && sp->dir_fd >= 0) {
		/* Where reading stopped, so that the next daemon does not resend it. */
		char buf[96];
		int fd = openat(sp->dir_fd, POS_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				0600);

		if (fd >= 0) {
			int n = snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
					 sp->head->id, sp->head->rd_off, sp->head->rd_records);

			if (write(fd, buf, n) != n)
				unlinkat(sp->dir_fd, POS_FILE, 0);
			close(fd);
		}
	}
	close_read(sp);
	if (sp->wfd >= 0)
		close(sp->wfd);
	sp->wfd = -1;
	while (sp->head) {
		struct spool_seg *s = sp->head;

		sp->head = s->next;
		free(s);
	}
	sp->tail = NULL;
	free(sp->rbuf);
	sp->rbuf = NULL;
	if (sp->dir_fd >= 0)
		close(sp->dir_fd);
	sp->dir_fd = -1;
}

static int open_seg(struct spool *sp, uint64_t id, int flags)
{
	char name[40];

	seg_name(name, sizeof(name), id);
	return openat(sp->dir_fd, name, flags | O_CLOEXEC, 0600);
}

/* Writes one record at the end of fd; a partial write is cut off again. */
static int write_rec(int fd, uint64_t at, const void *data, size_t len)
{
	struct rec_hdr h = {.len = len, .crc = crc_of(data, len)};
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)data, len}};
	size_t want = sizeof(h) + len, done = 0;

	while (done < want) {
		ssize_t n;
		int i = done < sizeof(h) ? 0 : 1;
		size_t skip = i ? done - sizeof(h) : done;
		struct iovec v[2] = {{(char *)iov[i].iov_base + skip, iov[i].iov_len - skip},
				     iov[1]};

		n = writev(fd, v, i ? 1 : 2);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int r = n < 0 ? -errno : -EIO;

			if (ftruncate(fd, at) < 0) {
				/* the scan at the next start cuts it */
			}
			return r;
		}
		done += n;
	}
	return 0;
}

int spool_append(struct spool *sp, const void *data, size_t len, uint64_t *dropped)
{
	uint64_t need = sizeof(struct rec_hdr) + len;
	struct spool_seg *t;
	int r;

	if (len == 0 || len > SPOOL_RECORD_MAX || need > sp->max_bytes) {
		(*dropped)++;
		return 0;
	}
	while (sp->head && sp->bytes + need > sp->max_bytes)
		*dropped += drop_head(sp);
	t = sp->tail;
	if (t && (t->bytes + need > sp->seg_max || sp->wfd < 0)) {
		/* Full (or left by a previous daemon): the next one starts. */
		if (sp->wfd >= 0)
			close(sp->wfd);
		sp->wfd = -1;
		t = NULL;
	}
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		t->id = sp->tail ? sp->tail->id + 1 : FIRST_ID;
		sp->wfd = open_seg(sp, t->id, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
		if (sp->wfd < 0) {
			r = -errno;
			free(t);
			return r;
		}
		if (sp->tail)
			sp->tail->next = t;
		else
			sp->head = t;
		sp->tail = t;
	}
	r = write_rec(sp->wfd, t->bytes, data, len);
	if (r < 0)
		return r;
	t->bytes += need;
	t->records++;
	sp->bytes += need;
	sp->records++;
	return 0;
}

int spool_prepend(struct spool *sp, const void *const *data, const size_t *len, size_t n)
{
	struct spool_seg *s;
	uint64_t at = 0;
	int fd, r = 0;

	if (!n)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->id = sp->head ? sp->head->id - 1 : FIRST_ID;
	fd = open_seg(sp, s->id, O_WRONLY | O_CREAT | O_EXCL | O_APPEND);
	if (fd < 0) {
		r = -errno;
		free(s);
		return r;
	}
	for (size_t i = 0; i < n && !r; i++) {
		if (!len[i] || len[i] > SPOOL_RECORD_MAX)
			continue;
		r = write_rec(fd, at, data[i], len[i]);
		if (!r) {
			at += sizeof(struct rec_hdr) + len[i];
			s->records++;
		}
	}
	close(fd);
	s->bytes = at;
	if (!s->records) {
		char name[40];

		seg_name(name, sizeof(name), s->id);
		unlinkat(sp->dir_fd, name, 0);
		free(s);
		return r;
	}
	/* The old first segment keeps its read position; reading starts here. */
	close_read(sp);
	s->next = sp->head;
	sp->head = s;
	if (!sp->tail)
		sp->tail = s;
	if (sp->tail == s && sp->wfd >= 0) {
		close(sp->wfd);
		sp->wfd = -1;
	}
	sp->bytes += s->bytes;
	sp->records += s->records;
	return r;
}

/* Makes sure rbuf holds n bytes at file offset off of the head. */
static int fill(struct spool *sp, uint64_t off, size_t n)
{
	ssize_t got;

	if (off >= sp->rbuf_at && off + n <= sp->rbuf_at + sp->rbuf_len) {
		sp->rbuf_pos = off - sp->rbuf_at;
		return 0;
	}
	if (n > sp->rbuf_cap || !sp->rbuf) {
		size_t cap = n > RBUF_DEFAULT ? n : RBUF_DEFAULT;
		char *nb = realloc(sp->rbuf, cap);

		if (!nb)
			return -ENOMEM;
		sp->rbuf = nb;
		sp->rbuf_cap = cap;
	}
	do
		got = pread(sp->rfd, sp->rbuf, sp->rbuf_cap, off);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	sp->rbuf_at = off;
	sp->rbuf_len = got;
	sp->rbuf_pos = 0;
	return (size_t)got >= n ? 0 : -EIO;
}

int spool_read(struct spool *sp, const char **data, size_t *len, uint64_t *dropped)
{
	for (;;) {
		struct spool_seg *s = sp->head;
		struct rec_hdr h;
		int r;

		if (!s)
			return 0;
		if (s->rd_records >= s->records) {
			/* Read through: it goes (appends then start a new one). */
			drop_head(sp);
			continue;
		}
		if (sp->rfd < 0) {
			sp->rfd = open_seg(sp, s->id, O_RDONLY);
			if (sp->rfd < 0)
				goto broken;
			sp->rbuf_len = 0;
		}
		r = fill(sp, s->rd_off, sizeof(h));
		if (r < 0)
			goto broken;
		memcpy(&h, sp->rbuf + sp->rbuf_pos, sizeof(h));
		if (!h.len || h.len > SPOOL_RECORD_MAX)
			goto broken;
		r = fill(sp, s->rd_off + sizeof(h), h.len);
		if (r < 0 || crc_of(sp->rbuf + sp->rbuf_pos, h.len) != h.crc)
			goto broken;
		*data = sp->rbuf + sp->rbuf_pos;
		*len = h.len;
		s->rd_off += sizeof(h) + h.len;
		s->rd_records++;
		sp->records--;
		return 1;
	broken:
		/* A segment we cannot read is given up, counted, and skipped. */
		*dropped += drop_head(sp);
		return -EIO;
	}
}
