// SPDX-License-Identifier: GPL-2.0
/*
 * The sink set (docs/sinks.md): fan-out of event lines to file, stdout and
 * network sinks, the file and stdout writers (rotation, fsync policy, disk
 * full), the events the sinks make themselves (loss, sink.error) and the
 * one pollable fd through which the caller's event loop drives them all.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "encode.h"
#include "sink_internal.h"
#include "../lib/util.h"

#define FLUSH_AT     (64U << 10) /* a stream sink writes once this much is queued */
#define RETRY_NS     1000000000ULL
#define CLOSE_WAIT_MS 1000
#define IOV_BATCH    64

/* --- records ----------------------------------------------------------- */

struct rec *rec_new(const char *data, size_t len)
{
	struct rec *r = malloc(sizeof(*r) + len);

	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->len = len;
	memcpy(r->data, data, len);
	return r;
}

void recq_push(struct recq *q, struct rec *r)
{
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->bytes += r->len;
	q->count++;
}

void recq_push_front(struct recq *q, struct rec *r)
{
	r->next = q->head;
	q->head = r;
	if (!q->tail)
		q->tail = r;
	q->bytes += r->len;
	q->count++;
}

struct rec *recq_pop(struct recq *q)
{
	struct rec *r = q->head;

	if (!r)
		return NULL;
	q->head = r->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= r->len;
	q->count--;
	r->next = NULL;
	return r;
}

void recq_free(struct recq *q)
{
	struct rec *r;

	while ((r = recq_pop(q)))
		free(r);
}

/* --- messages and the events the sinks make ----------------------------- */

void sink_log(struct sink *sk, const char *fmt, ...)
{
	char msg[768], line[SINK_NAME_MAX + 800];
	va_list ap;

	if (!sk->set->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "sink %s: %s", sk->cfg.name, msg);
	sk->set->o.log(sk->set->o.ctx, line);
}

void sink_time_now(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, size - n, ".%09ldZ", ts.tv_nsec);
}

static void begin_own_event(struct jsonw *w, const char *type)
{
	char time[48];

	sink_time_now(time, sizeof(time));
	jsonw_reset(w);
	jsonw_begin(w);
	jsonw_u64(w, "schema_version", 1);
	jsonw_str(w, "type", type);
	jsonw_str(w, "time", time);
	audit_put_host(w);
	jsonw_null(w, "session");
}

void sink_loss_line(struct sink *sk, struct jsonw *w, uint64_t count, const char *where)
{
	begin_own_event(w, "loss");
	jsonw_u64(w, "count", count);
	jsonw_str(w, "where", where ? where : "sink");
	jsonw_str(w, "sink", sk->cfg.name);
	if (sk->fail_err)
		jsonw_str(w, "error", strerrorname_np(sk->fail_err) ? strerrorname_np(sk->fail_err)
								    : "EIO");
	jsonw_end(w);
	jsonw_newline(w);
}

static void pending_add(struct sinks *set, int origin, const char *type, const char *line,
			size_t len)
{
	struct pending_event *pe = malloc(sizeof(*pe) + len);

	if (!pe)
		return;
	pe->next = NULL;
	pe->origin = origin;
	snprintf(pe->type, sizeof(pe->type), "%s", type);
	pe->len = len;
	memcpy(pe->line, line, len);
	*set->pending_tail = pe;
	set->pending_tail = &pe->next;
}

void sink_error_event(struct sink *sk, int err, const char *what)
{
	struct jsonw *w = &sk->set->iw;
	const char *name = strerrorname_np(err);

	sink_log(sk, "%s", what);
	begin_own_event(w, "sink.error");
	jsonw_str(w, "sink", sk->cfg.name);
	jsonw_str(w, "error", name ? name : "EIO");
	jsonw_str(w, "message", what);
	jsonw_end(w);
	jsonw_newline(w);
	if (!w->oom)
		pending_add(sk->set, sk->index, "sink.error", w->buf, w->len);
}

void sink_lost(struct sink *sk, uint64_t n, const char *where)
{
	if (!n)
		return;
	sk->lost_pending += n;
	sk->st_dropped += n;
	sk->lost_where = where;
}

int sink_watch(struct sink *sk, int fd, uint32_t events, bool add)
{
	struct epoll_event ev = { .events = events, .data.ptr = sk };

	if (!events)
		return epoll_ctl(sk->set->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 ? -errno : 0;
	if (epoll_ctl(sk->set->epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	return 0;
}

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

static int stream_open(struct sink *sk, char *err, size_t size)
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
		snprintf(what, sizeof(what), "cannot write: %s; events are counted as lost until a "
					     "write succeeds", strerror(err));
		sink_error_event(sk, err, what);
	}
}

static ssize_t stream_writev(struct sink *sk, struct iovec *iov, int n)
{
	if (sk->is_socket) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };

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
	if (w->oom || sink_render(sk, w->buf, w->len, &parsed, &out, &len) < 0) {
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

static void stream_flush(struct sink *sk)
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

static void stream_push(struct sink *sk, const char *payload, size_t len)
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

static void stream_tick(struct sink *sk, uint64_t now)
{
	if (sk->failing && now >= sk->retry_ns)
		stream_flush(sk);
	if (sk->cfg.fsync == SINK_FSYNC_INTERVAL && sk->unsynced &&
	    now >= sk->first_unsynced_ns + sk->cfg.fsync_interval_ns)
		stream_sync(sk);
}

static uint64_t stream_deadline(const struct sink *sk)
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

static void stream_close(struct sink *sk)
{
	uint64_t deadline = now_ns() + CLOSE_WAIT_MS * 1000000ULL;

	if (sk->fd < 0)
		return;
	if (sk->failing)
		sk->retry_ns = 0; /* one last try */
	stream_flush(sk);
	while (sk->nonblock && sk->q.head && !sk->failing && now_ns() < deadline) {
		struct pollfd p = { .fd = sk->fd, .events = POLLOUT };

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

/* --- the set ------------------------------------------------------------ */

static bool is_net(const struct sink *sk)
{
	return sk->cfg.kind == SINK_SYSLOG_TCP || sk->cfg.kind == SINK_SYSLOG_UDP ||
	       sk->cfg.kind == SINK_SYSLOG_TLS;
}

static void push_event(struct sink *sk, const char *type, const char *line, size_t len,
		       struct json_object **parsed)
{
	const char *out;
	size_t olen;

	if (sink_render(sk, line, len, parsed, &out, &olen) < 0) {
		sink_lost(sk, 1, "event not formattable");
		return;
	}
	if (is_net(sk))
		netsink_push(sk, type, line, len, out, olen);
	else
		stream_push(sk, out, olen);
}

static bool wants(const struct sink *sk, const char *type)
{
	int idx = sink_type_index(type);

	return !sk->cfg.types || (idx >= 0 && (sk->cfg.types & (1U << idx)));
}

/* Events the sinks made, and the loss lines of network sinks. */
static void deliver(struct sinks *set)
{
	if (set->delivering)
		return;
	set->delivering = true;
	for (int round = 0; round < 8; round++) {
		struct pending_event *pe;
		bool more = false;

		while ((pe = set->pending)) {
			set->pending = pe->next;
			if (!set->pending)
				set->pending_tail = &set->pending;
			for (size_t i = 0; i < set->n; i++) {
				struct json_object *parsed = NULL;

				if ((int)i != pe->origin && wants(&set->v[i], pe->type))
					push_event(&set->v[i], pe->type, pe->line, pe->len, &parsed);
				json_object_put(parsed);
			}
			if (set->o.on_event)
				set->o.on_event(set->o.ctx, pe->type, pe->line, pe->len);
			free(pe);
		}
		for (size_t i = 0; i < set->n; i++) {
			struct sink *sk = &set->v[i];
			struct json_object *parsed = NULL;
			uint64_t n = sk->lost_pending;

			if (!is_net(sk) || !n)
				continue;
			sink_log(sk, "%llu events dropped (%s)", (unsigned long long)n,
				 sk->lost_where ? sk->lost_where : "?");
			sink_loss_line(sk, &set->iw, n, sk->lost_where);
			sk->lost_pending = 0;
			if (!set->iw.oom) {
				/* set->iw is reused by what push_event may report: copy. */
				char *line = strndup(set->iw.buf, set->iw.len);
				size_t len = set->iw.len;

				if (line)
					push_event(sk, "loss", line, len, &parsed);
				else
					sk->lost_pending = n;
				free(line);
			}
			json_object_put(parsed);
			more = true;
		}
		if (!more && !set->pending)
			break;
	}
	set->delivering = false;
}

static void arm_timer(struct sinks *set)
{
	struct itimerspec it = { 0 };
	uint64_t d = 0;

	for (size_t i = 0; i < set->n; i++) {
		struct sink *sk = &set->v[i];
		uint64_t t = is_net(sk) ? netsink_deadline(sk) : stream_deadline(sk);

		if (t && (!d || t < d))
			d = t;
	}
	if (d == set->timer_at)
		return;
	set->timer_at = d;
	if (d) {
		it.it_value.tv_sec = d / 1000000000ULL;
		it.it_value.tv_nsec = d % 1000000000ULL;
		if (!it.it_value.tv_sec && !it.it_value.tv_nsec)
			it.it_value.tv_nsec = 1;
	}
	timerfd_settime(set->timerfd, TFD_TIMER_ABSTIME, &it, NULL);
}

static void tick(struct sinks *set)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < set->n; i++) {
		struct sink *sk = &set->v[i];

		if (is_net(sk))
			netsink_tick(sk, now);
		else
			stream_tick(sk, now);
	}
}

int sinks_open(struct sinks **out, const struct sink_config *cfg, size_t n,
	       const struct sinks_opts *o, char *err, size_t size)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sinks *set = calloc(1, sizeof(*set));
	int r = -ENOMEM;

	*out = NULL;
	if (!set) {
		snprintf(err, size, "out of memory");
		return -ENOMEM;
	}
	set->o = *o;
	set->pending_tail = &set->pending;
	set->timerfd = -1;
	set->epfd = epoll_create1(EPOLL_CLOEXEC);
	set->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	ev.data.ptr = set;
	if (set->epfd < 0 || set->timerfd < 0 ||
	    epoll_ctl(set->epfd, EPOLL_CTL_ADD, set->timerfd, &ev) < 0) {
		r = -errno;
		snprintf(err, size, "cannot set up the sinks' event loop: %s", strerror(-r));
		goto fail;
	}
	if (gethostname(set->hostname, sizeof(set->hostname) - 1) < 0 || !set->hostname[0])
		snprintf(set->hostname, sizeof(set->hostname), "localhost");
	set->v = calloc(n ? n : 1, sizeof(*set->v));
	if (!set->v) {
		snprintf(err, size, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		struct sink *sk = &set->v[i];

		sk->cfg = cfg[i];
		sk->set = set;
		sk->index = i;
		sk->fd = -1;
		set->n = i + 1;
		if (is_net(sk))
			r = netsink_open(sk, err, size);
		else
			r = stream_open(sk, err, size);
		if (r < 0)
			goto fail;
	}
	deliver(set);
	arm_timer(set);
	*out = set;
	return 0;
fail:
	sinks_close(set);
	return r;
}

void sinks_emit(struct sinks *set, const char *type, const char *line, size_t len)
{
	struct json_object *parsed = NULL;
	char tbuf[16];

	if (!set || !len)
		return;
	if (!type) {
		const char *p = memmem(line, len, "\"type\":\"", 8);
		size_t n = 0;

		if (p) {
			p += 8;
			while (p + n < line + len && p[n] != '"' && n < sizeof(tbuf) - 1)
				n++;
		}
		memcpy(tbuf, p ? p : "", n);
		tbuf[n] = '\0';
		type = tbuf;
	}
	for (size_t i = 0; i < set->n; i++) {
		struct sink *sk = &set->v[i];

		if (wants(sk, type))
			push_event(sk, type, line, len, &parsed);
	}
	json_object_put(parsed);
	deliver(set);
}

void sinks_flush(struct sinks *set)
{
	if (!set)
		return;
	tick(set);
	for (size_t i = 0; i < set->n; i++) {
		struct sink *sk = &set->v[i];

		if (is_net(sk))
			netsink_flush(sk);
		else
			stream_flush(sk);
	}
	deliver(set);
	arm_timer(set);
}

int sinks_fd(const struct sinks *set)
{
	return set ? set->epfd : -1;
}

void sinks_dispatch(struct sinks *set)
{
	struct epoll_event evs[16];
	uint64_t ticks;
	int n;

	if (!set)
		return;
	n = epoll_wait(set->epfd, evs, ARRAY_SIZE(evs), 0);
	for (int i = 0; i < n; i++) {
		struct sink *sk = evs[i].data.ptr;

		if (evs[i].data.ptr == set) {
			if (read(set->timerfd, &ticks, sizeof(ticks)) < 0) {
				/* not due yet, or already read */
			}
			set->timer_at = 0;
			continue;
		}
		if (is_net(sk))
			netsink_event(sk, evs[i].events);
		else
			stream_flush(sk);
	}
	sinks_flush(set);
}

void sinks_reopen(struct sinks *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++) {
		struct sink *sk = &set->v[i];
		uint64_t size;
		bool regular;
		int fd, r;

		if (sk->cfg.kind != SINK_FILE)
			continue;
		stream_flush(sk);
		r = stream_open_fd(sk, &fd, &size, &regular);
		if (r < 0) {
			sink_log(sk, "cannot reopen %s: %s; still writing the old one", sk->cfg.path,
				 strerror(-r));
			continue;
		}
		close(sk->fd);
		sk->fd = fd;
		sk->size = size;
		sk->regular = regular;
		sk->head_off = 0; /* stream_flush wrote whole lines or failed */
		sink_log(sk, "audit file reopened");
	}
	deliver(set);
	arm_timer(set);
}

void sinks_close(struct sinks *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++) {
		struct sink *sk = &set->v[i];

		if (is_net(sk))
			netsink_close(sk);
		else
			stream_close(sk);
	}
	/* What the closing sinks had to say reaches the hook, not the sinks. */
	while (set->pending) {
		struct pending_event *pe = set->pending;

		set->pending = pe->next;
		if (set->o.on_event)
			set->o.on_event(set->o.ctx, pe->type, pe->line, pe->len);
		free(pe);
	}
	if (set->epfd >= 0)
		close(set->epfd);
	if (set->timerfd >= 0)
		close(set->timerfd);
	jsonw_free(&set->fw);
	jsonw_free(&set->iw);
	free(set->v);
	free(set);
}

const char *sink_kind_name(enum sink_kind k)
{
	switch (k) {
	case SINK_STDOUT:
		return "stdout";
	case SINK_FILE:
		return "file";
	case SINK_SYSLOG_TCP:
		return "syslog+tcp";
	case SINK_SYSLOG_UDP:
		return "syslog+udp";
	case SINK_SYSLOG_TLS:
		return "syslog+tls";
	}
	return "?";
}

size_t sinks_stats(const struct sinks *s, struct sink_stats *v, size_t n)
{
	if (!s)
		return 0;
	for (size_t i = 0; i < s->n && i < n; i++) {
		const struct sink *sk = &s->v[i];
		struct sink_stats *st = &v[i];

		memset(st, 0, sizeof(*st));
		st->name = sk->cfg.name;
		st->kind = sink_kind_name(sk->cfg.kind);
		st->dropped = sk->st_dropped;
		st->retries = sk->st_retries;
		if (sk->net) {
			netsink_stats(sk, st);
		} else {
			st->queued = sk->q.count;
			st->queued_bytes = sk->q.bytes;
			st->up = !sk->failing;
		}
	}
	return s->n;
}
