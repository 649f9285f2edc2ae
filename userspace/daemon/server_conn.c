// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's connections: accepted under the per-uid and total limits,
 * the peer checked (root, the group, or a process of a session), requests
 * read line by line for ops.c, replies and events queued and flushed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "../lib/cgroup.h"
#include "../lib/fdpass.h"
#include "../lib/util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

static void epoll_set(struct daemon *d, struct conn *c, bool out)
{
	struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};

	if (c->epollout == out)
		return;
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->epollout = out;
}

void conn_flush(struct daemon *d, struct conn *c)
{
	ev_sub_drained(d, c);
	while (!c->dead && buf_used(&c->out)) {
		ssize_t n = send(c->fd, c->out.p + c->out.off, buf_used(&c->out),
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			epoll_set(d, c, true);
			return;
		}
		if (n <= 0) {
			c->dead = true;
			return;
		}
		buf_consume(&c->out, n);
	}
	epoll_set(d, c, false);
	if (c->closing && c->refused == 0)
		c->dead = true;
}

void conn_queue(struct daemon *d, struct conn *c, const char *data, size_t len)
{
	if (c->dead)
		return;
	if (buf_used(&c->out) + len > DAEMON_REPLY_BUF_MAX || buf_append(&c->out, data, len) < 0) {
		/* A peer that never reads its replies is not worth memory. */
		c->dead = true;
		return;
	}
	conn_flush(d, c);
}

/* 1 when pid runs in the cgroup parent or below, 0 when not, -errno if unknown. */
static int inside_parent(const struct daemon *d, pid_t pid)
{
	char p[PATH_MAX];
	size_t rel = strlen(d->parent_rel);
	int r = cgroup_of_pid(pid, p, sizeof(p));

	if (r < 0)
		return r;
	return strncmp(p, d->parent_rel, rel) == 0 && (p[rel] == '/' || p[rel] == '\0');
}

static bool in_group(int fd, gid_t primary, gid_t want)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (primary == want)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == want)
			return true;
	return false;
}

int peer_alive(const struct peer *p)
{
	unsigned long long t;

	if (p->pidfd >= 0)
		/* A zombie still answers: its pid cannot be reused before it is reaped. */
		return syscall(SYS_pidfd_send_signal, p->pidfd, 0, NULL, 0) < 0 && errno == ESRCH
			       ? -ESRCH
			       : 0;
	/* No pidfd at all (kernel < 5.3): the same pid with the same start time. */
	t = proc_start_time(p->pid);
	return t && t == p->start ? 0 : -ESRCH;
}

/*
 * Who may talk to us: never a process inside a session (whatever its uid),
 * then root or a member of --group. The peer is held by a pidfd
 * (SO_PEERPIDFD, else pidfd_open right after accept) and every request
 * checks that it still runs (peer_alive): a socket handed to a child that
 * outlives its parent speaks for nobody, so a reused pid cannot lie.
 */
static int peer_check(struct daemon *d, struct conn *c, char *why, size_t size)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	int pidfd = -1, r;

	c->peer.pidfd = -1;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0) {
		snprintf(why, size, "cannot read the peer's credentials");
		return -EACCES;
	}
	c->peer.pid = uc.pid;
	c->peer.uid = uc.uid;
	c->peer.gid = uc.gid;
	len = sizeof(pidfd);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		pidfd = uc.pid > 0 ? (int)syscall(SYS_pidfd_open, uc.pid, 0) : -1;
	if (pidfd >= 0 && fcntl(pidfd, F_SETFD, FD_CLOEXEC) < 0) {
		close(pidfd);
		pidfd = -1;
	}
	c->peer.pidfd = pidfd;
	if (pidfd < 0)
		c->peer.start = uc.pid > 0 ? proc_start_time(uc.pid) : 0;
	r = uc.pid > 0 ? inside_parent(d, uc.pid) : -ESRCH;
	if (peer_alive(&c->peer) < 0)
		r = -ESRCH;
	if (r != 0) {
		snprintf(why, size, "%s",
			 r > 0 ? DAEMON_INSIDE_SESSION
			       : "cannot tell where the requesting process runs");
		return -EPERM;
	}
	if (uc.uid == 0 || (d->o->group && in_group(c->fd, uc.gid, d->gid)))
		return 0;
	snprintf(why, size, "uid %u is not root%s%s", uc.uid,
		 d->o->group ? " and not in group " : "", d->o->group ? d->o->group : "");
	return -EACCES;
}

/* Says "busy" (EBUSY) and why on a connection that is not kept. */
static void say_busy(struct daemon *d, int fd, uid_t uid, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void say_busy(struct daemon *d, int fd, uid_t uid, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	jsonw_reset(&d->rw);
	proto_error(&d->rw, EBUSY, "busy: %s", why);
	/* A few dozen bytes fit in any socket buffer: sent before the close. */
	if (send(fd, d->rw.buf, d->rw.len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the peer is gone or never reads; nothing more to do */
	}
	close(fd);
	d->busy_refused++;
	/* One line per second at most: a connect loop must not flood our log. */
	if (d->busy_logged_ns + 1000000000ULL <= now_ns()) {
		dlog("busy: refused uid %u: %s (%llu refused so far)", uid, why,
		     (unsigned long long)d->busy_refused);
		d->busy_logged_ns = now_ns();
	}
}

/*
 * Connection limits: --max-conns-per-uid for every uid but root, and the
 * last DAEMON_ROOT_CONNS of DAEMON_MAX_CONNS kept for root. 0, or the
 * connection was answered "busy" and closed.
 */
static int conn_limits(struct daemon *d, int fd)
{
	unsigned int per_uid = d->o->max_conns_per_uid ? d->o->max_conns_per_uid
						       : DAEMON_CONNS_PER_UID;
	struct ucred uc = {.uid = (uid_t)-1};
	socklen_t len = sizeof(uc);
	size_t mine = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		uc.uid = (uid_t)-1;
	if (d->nconns >= DAEMON_MAX_CONNS) {
		say_busy(d, fd, uc.uid, "%d connections are open, the daemon's limit; retry later",
			 DAEMON_MAX_CONNS);
		return -EBUSY;
	}
	if (uc.uid == 0)
		return 0;
	if (d->nconns >= DAEMON_MAX_CONNS - DAEMON_ROOT_CONNS) {
		say_busy(d, fd, uc.uid,
			 "%zu connections are open; the last %d are kept for root; "
			 "retry later",
			 d->nconns, DAEMON_ROOT_CONNS);
		return -EBUSY;
	}
	for (struct conn *c = d->conns; c; c = c->next)
		mine += c->peer.uid == uc.uid;
	if (mine >= per_uid) {
		say_busy(d, fd, uc.uid,
			 "uid %u has %zu connections open, the daemon's "
			 "--max-conns-per-uid; close some or raise it",
			 uc.uid, mine);
		return -EBUSY;
	}
	return 0;
}

void conn_accept(struct daemon *d)
{
	struct epoll_event ev = {.events = EPOLLIN};
	char why[256];
	struct conn *c;
	int fd;

	fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (conn_limits(d, fd) < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (c)
		c->in = malloc(DAEMON_MAX_REQUEST);
	if (!c || !c->in) {
		if (c)
			free(c);
		close(fd);
		return;
	}
	c->fd = fd;
	c->passed_fd = -1;
	c->peer.pidfd = -1;
	c->serial = ++d->next_serial;
	c->created_ns = now_ns();
	ev.data.ptr = c;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		free(c->in);
		free(c);
		close(fd);
		return;
	}
	c->next = d->conns;
	d->conns = c;
	d->nconns++;
	c->refused = peer_check(d, c, why, sizeof(why));
	if (c->refused) {
		/* Said at once and kept briefly, so the peer reads it, not EPIPE. */
		dlog("refused pid %d uid %u: %s", c->peer.pid, c->peer.uid, why);
		jsonw_reset(&d->rw);
		proto_error(&d->rw, c->refused, "%s", why);
		conn_queue(d, c, d->rw.buf, d->rw.len);
		c->closing = true;
		/* Many at once (a session hammering us) cannot hold every slot. */
		if (d->nlingering >= DAEMON_MAX_LINGERING) {
			c->dead = true;
			return;
		}
		c->lingering = true;
		d->nlingering++;
	}
}

void conn_free(struct daemon *d, struct conn *c)
{
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->peer.pidfd >= 0)
		close(c->peer.pidfd);
	fd_close(&c->passed_fd);
	buf_free(&c->out);
	free(c->in);
	if (c->lingering)
		d->nlingering--;
	free(c);
	d->nconns--;
}

/* Closes dead connections; a client gone ends the sessions it registered. */
void reap_conns(struct daemon *d)
{
	bool again = true;

	while (again) {
		again = false;
		for (struct conn **p = &d->conns; *p;) {
			struct conn *c = *p;

			if (!c->dead) {
				p = &c->next;
				continue;
			}
			*p = c->next;
			ops_conn_gone(d, c);
			conn_free(d, c);
			again = true; /* ending sessions may have killed other conns */
			break;
		}
	}
}

void conn_read(struct daemon *d, struct conn *c)
{
	for (;;) {
		size_t nfd;
		ssize_t n;
		char *nl;
		int fd;

		if (c->in_len == DAEMON_MAX_REQUEST) {
			if (c->subscribed || c->closing) {
				c->in_len = 0;
			} else {
				jsonw_reset(&d->rw);
				proto_error(
					&d->rw, E2BIG,
					"request longer than %d bytes; the connection is closed",
					DAEMON_MAX_REQUEST);
				conn_queue(d, c, d->rw.buf, d->rw.len);
				c->closing = true;
				c->in_len = 0;
				conn_flush(d, c);
				return;
			}
		}
		/* An fd sent with a request (adopt's network namespace) replaces any before. */
		n = recv_with_fds(c->fd, c->in + c->in_len, DAEMON_MAX_REQUEST - c->in_len,
				  MSG_DONTWAIT, &fd, 1, &nfd);
		if (nfd) {
			fd_close(&c->passed_fd);
			c->passed_fd = fd;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			c->dead = true;
			return;
		}
		if (c->refused) {
			/* A refused peer got its answer; its request ends the connection. */
			c->refused = 0;
			conn_flush(d, c);
			return;
		}
		if (c->subscribed || c->closing)
			continue; /* a subscriber only listens */
		c->in_len += n;
		while (!c->dead && !c->closing && !c->subscribed &&
		       (nl = memchr(c->in, '\n', c->in_len))) {
			size_t len = nl - c->in;

			if (len && c->in[len - 1] == '\r')
				len--;
			if (len && peer_alive(&c->peer) < 0) {
				/* Whoever holds the socket now is not who connected. */
				jsonw_reset(&d->rw);
				proto_error(&d->rw, EPERM,
					    "the process that opened this connection (pid %d) has "
					    "exited; connect again from the process that sends the "
					    "requests",
					    c->peer.pid);
				conn_queue(d, c, d->rw.buf, d->rw.len);
				c->closing = true;
				conn_flush(d, c);
				return;
			}
			if (len)
				ops_handle(d, c, c->in, len);
			c->in_len -= nl + 1 - c->in;
			memmove(c->in, nl + 1, c->in_len);
		}
	}
}
