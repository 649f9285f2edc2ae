// SPDX-License-Identifier: GPL-2.0
/*
 * The file and stdout sinks (docs/sinks.md): whole lines, rotation, the
 * fsync policy, a disk that is full or failing counted as loss and said
 * once, and a stdout reader that does not read never blocking the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <json-c/json.h>

#include "sink_internal.h"
#include "../lib/util.h"

#define FLUSH_AT      (64U << 10) /* a stream sink writes once this much is queued */
#define RETRY_NS      1000000000ULL
#define CLOSE_WAIT_MS 1000
#define IOV_BATCH     64

/* --- file and stdout ---------------------------------------------------- */

static void stream_watch_out(struct sink *sk, bool on)
{
	if (sk->want_out == on || !sk->nonblock)
		return;
	if (sink_watch(sk, sk->fd, on ? EPOLLOUT : 0, on) == 0 || !on)
		sk->want_out = on;
}

static int stream_open_fd(struct sink *sk, int *fd_out, uint64_t *size, bool *regular)
{
	struct stat st;
	int fd;

	fd = open(sk->cfg.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*fd_out = fd;
	*size = S_ISREG(st.st_mode) ? st.st_size : 0;
	*regular = S_ISREG(st.st_mode);
	return 0;
}

int stream_open(struct sink *sk, char *err, size_t size)
{
	struct stat st;
	int r;

	if (sk->cfg.kind == SINK_FILE) {
		r = stream_open_fd(sk, &sk->fd, &sk->size, &sk->regular);
		if (r < 0)
			snprintf(err, size, "cannot open the audit file %s: %s", sk->cfg.path,
				 strerror(-r));
		return r;
	}
	if (fstat(STDOUT_FILENO, &st) < 0) {
		r = -errno;
		snprintf(err, size, "stdout is not open: %s", strerror(-r));
		return r;
	}
	sk->regular = S_ISREG(st.st_mode);
	sk->is_socket = S_ISSOCK(st.st_mode);
	if (!sk->set->o.blocking && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
		/* Our own open file description: O_NONBLOCK does not leak to fd 1. */
		sk->fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (sk->fd >= 0)
			sk->nonblock = true;
	}
	if (sk->fd < 0) {
		sk->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (sk->fd < 0) {
			r = -errno;
			snprintf(err, size, "cannot use stdout: %s", strerror(-r));
			return r;
		}
		sk->nonblock = sk->is_socket && !sk->set->o.blocking;
	}
	return 0;
}

static void stream_sync(struct sink *sk)
{
	if (fdatasync(sk->fd) < 0 && errno != EINVAL && errno != EROFS)
		sink_log(sk, "fsync failed: %s", strerror(errno));
	sk->unsynced = 0;
}

static void sync_dir(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/*
 * PATH -> PATH.1 -> ... -> PATH.keep (the oldest goes). Between two whole
 * lines: everything written so far is in the renamed file.
 */
static void stream_rotate(struct sink *sk)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 16];
	uint64_t size;
	bool regular;
	int fd, r;

	if (sk->cfg.fsync != SINK_FSYNC_NEVER)
		stream_sync(sk);
	for (unsigned int i = sk->cfg.keep; i > 1; i--) {
		snprintf(from, sizeof(from), "%s.%u", sk->cfg.path, i - 1);
		snprintf(to, sizeof(to), "%s.%u", sk->cfg.path, i);
		if (rename(from, to) < 0 && errno != ENOENT && !sk->rotate_warned) {
			sink_log(sk, "cannot rename %s to %s: %s", from, to, strerror(errno));
			sk->rotate_warned = true;
		}
	}
	snprintf(to, sizeof(to), "%s.1", sk->cfg.path);
	if (rename(sk->cfg.path, to) < 0) {
		if (!sk->rotate_warned)
			sink_log(sk, "cannot rotate: %s; the file grows past rotate=%llu",
				 strerror(errno), (unsigned long long)sk->cfg.rotate_bytes);
		sk->rotate_warned = true;
		sk->size = 0; /* try again after another rotate= worth of bytes */
		return;
	}
	r = stream_open_fd(sk, &fd, &size, &regular);
	if (r < 0) {
		/* Writes go on into PATH.1 until the next rotation. */
		sink_log(sk, "cannot open %s after rotating: %s", sk->cfg.path, strerror(-r));
		sk->size = 0;
		return;
	}
	close(sk->fd);
	sk->fd = fd;
	sk->size = size;
	sk->regular = regular;
	sk->rotate_warned = false;
	if (sk->cfg.fsync != SINK_FSYNC_NEVER)
		sync_dir(sk->cfg.path);
}

/* Writes that failed: what is queued is counted as lost, not kept. */
static void stream_fail(struct sink *sk, int err)
{
	uint64_t lost = 0;
	char what[256];
	bool first = !sk->fail_err; /* else a retry of the same episode failed */
	struct rec *r;

	if (sk->head_off && sk->regular) {
		/* A line written in part is cut off again: the file stays whole lines. */
		struct stat st;

		if (fstat(sk->fd, &st) == 0 && (uint64_t)st.st_size >= sk->head_off &&
		    ftruncate(sk->fd, st.st_size - sk->head_off) == 0)
			sk->size = st.st_size - sk->head_off;
	}
	while ((r = recq_pop(&sk->q))) {
		lost += r->loss ? r->loss : 1;
		free(r);
	}
	sk->head_off = 0;
	sink_lost(sk, lost, "sink write failed");
	sk->failing = true;
	sk->fail_err = err;
	sk->retry_ns = now_ns() + RETRY_NS;
	sk->st_retries++;
	stream_watch_out(sk, false);
	if (first) {
		snprintf(what, sizeof(what),
			 "cannot write: %s; events are counted as lost until a "
			 "write succeeds",
			 strerror(err));
		sink_error_event(sk, err, what);
	}
}

static ssize_t stream_writev(struct sink *sk, struct iovec *iov, int n)
{
	if (sk->is_socket) {
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = n};

		return sendmsg(sk->fd, &mh, MSG_NOSIGNAL | (sk->nonblock ? MSG_DONTWAIT : 0));
	}
	return writev(sk->fd, iov, n);
}

/* The loss line, in the sink's format, at the head of its queue. */
static void stream_queue_loss(struct sink *sk)
{
	struct json_object *parsed = NULL;
	struct jsonw *w = &sk->set->iw;
	const char *out;
	size_t len;
	struct rec *r;

	sink_loss_line(sk, w, sk->lost_pending, sk->lost_where);
	struct audit_event ev = {.kind = EV_LOSS, .line = w->buf, .len = w->len};

	if (w->oom || sink_render(sk, &ev, &parsed, &out, &len) < 0) {
		json_object_put(parsed);
		return;
	}
	r = malloc(sizeof(*r) + len + 1);
	if (r) {
		memset(r, 0, sizeof(*r));
		memcpy(r->data, out, len);
		r->data[len] = '\n';
		r->len = len + 1;
		r->loss = sk->lost_pending;
		recq_push_front(&sk->q, r);
		sk->lost_pending = 0;
	}
	json_object_put(parsed);
}

void stream_flush(struct sink *sk)
{
	uint64_t now = now_ns();

	if (sk->fd < 0)
		return;
	if (sk->failing) {
		if (now < sk->retry_ns)
			return;
		/* One try, the loss line first: it goes through, or we wait again. */
		sk->failing = false;
	}
	while (sk->q.head || sk->lost_pending) {
		struct iovec iov[IOV_BATCH];
		struct rec *r;
		uint64_t acc = 0, written = 0;
		bool recovering = sk->fail_err != 0;
		ssize_t n;
		int cnt = 0;

		if (sk->lost_pending && !sk->head_off)
			stream_queue_loss(sk);
		if (!sk->q.head)
			break;
		if (sk->cfg.rotate_bytes && !sk->head_off && sk->size &&
		    sk->size + sk->q.head->len > sk->cfg.rotate_bytes)
			stream_rotate(sk);
		for (r = sk->q.head; r && cnt < IOV_BATCH; r = r->next) {
			size_t off = cnt ? 0 : sk->head_off;

			if (cnt && sk->cfg.rotate_bytes &&
			    sk->size + acc + r->len > sk->cfg.rotate_bytes)
				break;
			iov[cnt].iov_base = r->data + off;
			iov[cnt].iov_len = r->len - off;
			acc += r->len - off;
			cnt++;
		}
		n = stream_writev(sk, iov, cnt);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			stream_watch_out(sk, true);
			return;
		}
		if (n <= 0) {
			stream_fail(sk, n < 0 ? errno : EIO);
			return;
		}
		sk->size += n;
		while (n > 0 && sk->q.head) {
			size_t left = sk->q.head->len - sk->head_off;
			size_t take = (size_t)n < left ? (size_t)n : left;

			sk->head_off += take;
			n -= take;
			if (sk->head_off == sk->q.head->len) {
				free(recq_pop(&sk->q));
				sk->head_off = 0;
				written++;
			}
		}
		if (recovering && written) {
			sink_log(sk, "writes work again");
			sk->fail_err = 0;
		}
		if (sk->cfg.fsync == SINK_FSYNC_EVENTS) {
			sk->unsynced += written;
			if (sk->unsynced >= sk->cfg.fsync_events)
				stream_sync(sk);
		} else if (sk->cfg.fsync == SINK_FSYNC_INTERVAL && written) {
			if (!sk->unsynced)
				sk->first_unsynced_ns = now;
			sk->unsynced += written;
		}
	}
	stream_watch_out(sk, false);
}

void stream_push(struct sink *sk, const char *payload, size_t len)
{
	struct rec *r;

	if (sk->failing) {
		sink_lost(sk, 1, "sink write failed");
		return;
	}
	/* Over the bound (a stdout reader that does not read): the oldest go. */
	while (sk->q.count && sk->q.bytes + len + 1 > sk->cfg.queue_bytes) {
		struct rec *victim = sk->q.head;

		if (sk->head_off) {
			/* The first line is half written: the second goes instead. */
			victim = victim->next;
			if (!victim)
				break;
			sk->q.head->next = victim->next;
			if (sk->q.tail == victim)
				sk->q.tail = sk->q.head;
			sk->q.bytes -= victim->len;
			sk->q.count--;
		} else {
			recq_pop(&sk->q);
		}
		sink_lost(sk, victim->loss ? victim->loss : 1, "sink queue full");
		free(victim);
	}
	r = malloc(sizeof(*r) + len + 1);
	if (!r) {
		sink_lost(sk, 1, "sink out of memory");
		return;
	}
	memset(r, 0, sizeof(*r));
	memcpy(r->data, payload, len);
	r->data[len] = '\n';
	r->len = len + 1;
	recq_push(&sk->q, r);
	if (sk->q.bytes >= FLUSH_AT)
		stream_flush(sk);
}

void stream_tick(struct sink *sk, uint64_t now)
{
	if (sk->failing && now >= sk->retry_ns)
		stream_flush(sk);
	if (sk->cfg.fsync == SINK_FSYNC_INTERVAL && sk->unsynced &&
	    now >= sk->first_unsynced_ns + sk->cfg.fsync_interval_ns)
		stream_sync(sk);
}

uint64_t stream_deadline(const struct sink *sk)
{
	uint64_t d = 0;

	if (sk->failing)
		d = sk->retry_ns;
	if (sk->cfg.fsync == SINK_FSYNC_INTERVAL && sk->unsynced) {
		uint64_t t = sk->first_unsynced_ns + sk->cfg.fsync_interval_ns;

		if (!d || t < d)
			d = t;
	}
	return d;
}

void stream_close(struct sink *sk)
{
	uint64_t deadline = now_ns() + CLOSE_WAIT_MS * 1000000ULL;

	if (sk->fd < 0)
		return;
	if (sk->failing)
		sk->retry_ns = 0; /* one last try */
	stream_flush(sk);
	while (sk->nonblock && sk->q.head && !sk->failing && now_ns() < deadline) {
		struct pollfd p = {.fd = sk->fd, .events = POLLOUT};

		if (poll(&p, 1, 100) > 0)
			stream_flush(sk);
	}
	if (sk->q.count || sk->lost_pending)
		sink_log(sk, "%llu events could not be written before closing",
			 (unsigned long long)(sk->q.count + sk->lost_pending));
	if (sk->cfg.fsync != SINK_FSYNC_NEVER && sk->regular)
		stream_sync(sk);
	stream_watch_out(sk, false);
	recq_free(&sk->q);
	close(sk->fd);
	sk->fd = -1;
}

/* SIGHUP: the file sink opens its path again (after logrotate moved it). */
void stream_reopen(struct sink *sk)
{
	uint64_t size;
	bool regular;
	int fd, r;

	stream_flush(sk);
	r = stream_open_fd(sk, &fd, &size, &regular);
	if (r < 0) {
		sink_log(sk, "cannot reopen %s: %s; still writing the old one", sk->cfg.path,
			 strerror(-r));
		return;
	}
	close(sk->fd);
	sk->fd = fd;
	sk->size = size;
	sk->regular = regular;
	sk->head_off = 0; /* stream_flush wrote whole lines or failed */
	sink_log(sk, "audit file reopened");
}
