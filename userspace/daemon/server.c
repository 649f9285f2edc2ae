// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's process: setup (group, cgroup parent, pins, sink, socket),
 * the epoll loop, connections and their peer checks, shutdown and cleanup.
 */
#include <dirent.h>
#include <errno.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "metrics.h"
#include "client.h"
#include "../agent/agent.h"
#include "../lib/cgroup.h"
#include "../audit/sink.h"
#include "../probe/probe.h"
#include "../lib/log.h"
#include "../lib/ratelimit.h"
#include "../lib/util.h"
#include "../net/egress.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#define REFUSED_LINGER_NS (5ULL * 1000000000ULL)

#define DLOG_RATE  20 /* lines a second, after a burst of DLOG_BURST */
#define DLOG_BURST 200

/*
 * The daemon's own log is rate limited like the audit stream: a connect
 * loop from a session once wrote 412,000 lines. What is dropped is
 * counted, and the next line that passes says how many.
 */
void dlog(const char *fmt, ...)
{
	static struct ratelimit rl = {
		.rate = DLOG_RATE, .burst = DLOG_BURST, .level = DLOG_BURST * 1000000000ULL};
	static unsigned long long dropped;
	char buf[1024];
	va_list ap;

	if (!ratelimit_take(&rl, now_ns())) {
		dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* One write per line: lines of concurrent writers never mix. */
	if (dropped)
		dprintf(STDERR_FILENO,
			"%sbpfbox daemon: (%llu lines not logged: more than %d a "
			"second) %s\n",
			log_prefix(LOG_LVL_INFO), dropped, DLOG_RATE, buf);
	else
		dprintf(STDERR_FILENO, "%sbpfbox daemon: %s\n", log_prefix(LOG_LVL_INFO), buf);
	dropped = 0;
}

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
	char path[64], line[PATH_MAX + 64];
	size_t rel = strlen(d->parent_rel);
	FILE *f;
	int r = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		if (!startswith(line, "0::"))
			continue;
		p += 3;
		p[strcspn(p, "\n")] = '\0';
		r = strncmp(p, d->parent_rel, rel) == 0 && (p[rel] == '/' || p[rel] == '\0');
		break;
	}
	fclose(f);
	return r;
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

/* Field 22 of /proc/PID/stat (the start time in ticks), or 0. */
static unsigned long long start_time_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file_str(path, buf, sizeof(buf)) < 0)
		return 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1,
			 " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			 "%*d %*d %*d %*d %llu",
			 &t) != 1)
		return 0;
	return t;
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
	t = start_time_of(p->pid);
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
		c->peer.start = uc.pid > 0 ? start_time_of(uc.pid) : 0;
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

static void conn_accept(struct daemon *d)
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

static void conn_free(struct daemon *d, struct conn *c)
{
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->peer.pidfd >= 0)
		close(c->peer.pidfd);
	buf_free(&c->out);
	free(c->in);
	if (c->lingering)
		d->nlingering--;
	free(c);
	d->nconns--;
}

/* Closes dead connections; a client gone ends the sessions it registered. */
static void reap_conns(struct daemon *d)
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

static void conn_read(struct daemon *d, struct conn *c)
{
	for (;;) {
		ssize_t n;
		char *nl;

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
		n = recv(c->fd, c->in + c->in_len, DAEMON_MAX_REQUEST - c->in_len, MSG_DONTWAIT);
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

/* systemd Type=notify: READY=1 or STOPPING=1 to $NOTIFY_SOCKET. */
static bool sd_notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len;
	bool ok;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return false;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path))
		return false;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	ok = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		    offsetof(struct sockaddr_un, sun_path) + len) >= 0;
	close(fd);
	return ok;
}

/* Whether some daemon answers on path (a ping gets a reply). */
static bool daemon_answers(const char *path)
{
	struct daemon_client c;
	bool ok;

	if (daemon_client_connect(&c, path, 1000) < 0)
		return false;
	ok = send(c.fd, "{\"op\":\"ping\"}\n", 14, MSG_NOSIGNAL) == 14;
	if (ok) {
		char *line;
		size_t len;

		ok = daemon_client_read_line(&c, &line, &len, 1000) > 0;
	}
	daemon_client_close(&c);
	return ok;
}

static int make_socket_dir(const char *socket_path, gid_t gid)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", socket_path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	/*
	 * The group may traverse it to reach the socket. A directory that
	 * exists is the admin's, except the default one, which is ours.
	 */
	if (mkdir(dir, 0750) < 0 && (errno != EEXIST || !streq(dir, DAEMON_SOCKET_DIR)))
		return errno == EEXIST ? 0 : -errno;
	if (chown(dir, 0, gid) < 0 || chmod(dir, 0750) < 0)
		return -errno;
	return 0;
}

static int listen_socket(struct daemon *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = d->o->socket_path;
	struct stat st;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return log_error_errno(ENAMETOOLONG,
				       "--socket %s: use a path shorter than %zu bytes", path,
				       sizeof(sa.sun_path));
	r = make_socket_dir(path, d->gid);
	if (r < 0)
		return log_error_errno(r, "cannot create the directory of %s", path);
	/* A socket no daemon answers on is stale; anything else stays. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return log_error_errno(EEXIST,
					       "%s exists and is not a socket; remove it or "
					       "pass another --socket",
					       path);
		unlink(path);
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return log_error_errno(errno, "cannot create a unix socket");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chown(path, 0, d->gid) < 0 ||
	    chmod(path, 0660) < 0 || listen(fd, 128) < 0) {
		r = log_error_errno(errno, "cannot listen on %s", path);
		close(fd);
		return r;
	}
	d->listen_fd = fd;
	return 0;
}

static int resolve_parent(struct daemon *d)
{
	char mnt[PATH_MAX];
	size_t n;
	int r;

	if (d->o->cgroup_parent)
		snprintf(d->parent, sizeof(d->parent), "%s", d->o->cgroup_parent);
	else if ((r = cgroup_parent(d->parent, sizeof(d->parent))) < 0)
		return log_error_errno(r,
				       "no cgroup v2 hierarchy for session cgroups; mount cgroup2 "
				       "or pass --cgroup-parent");
	r = cgroup2_mount_point(mnt, sizeof(mnt));
	if (r < 0)
		return log_error_errno(r,
				       "no cgroup v2 file system is mounted; mount cgroup2 first");
	n = strlen(mnt);
	if (d->parent[0] != '/' || strncmp(d->parent, mnt, n) != 0 || d->parent[n] != '/' ||
	    strstr(d->parent, "/../") || strstr(d->parent, "/./"))
		return log_error_errno(EINVAL,
				       "--cgroup-parent %s: give a directory below the "
				       "cgroup2 mount %s",
				       d->parent, mnt);
	snprintf(d->parent_rel, sizeof(d->parent_rel), "%s", d->parent + n);
	n = strlen(d->parent_rel);
	while (n > 1 && d->parent_rel[n - 1] == '/')
		d->parent_rel[--n] = '\0';
	return 0;
}

static int resolve_group(struct daemon *d)
{
	struct group *g;

	d->gid = 0;
	if (!d->o->group)
		return 0;
	g = getgrnam(d->o->group);
	if (!g)
		return log_error_errno(ENOENT,
				       "--group %s: no such group; create it or name another",
				       d->o->group);
	d->gid = g->gr_gid;
	return 0;
}

/* Takes the pin dir for this process: two daemons on one set of pins would fight. */
static int lock_pins(struct daemon *d)
{
	int r = agent_pin_dir_prepare(d->o->pin_dir);

	if (r < 0)
		return log_error_errno(r,
				       "cannot use %s for pins; give a --pin-dir on a bpf file "
				       "system (/sys/fs/bpf)",
				       d->o->pin_dir);
	d->lock_fd = open(d->o->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->lock_fd < 0)
		return log_error_errno(errno, "cannot open %s", d->o->pin_dir);
	if (flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0)
		return log_error_errno(errno, "another daemon uses the pins in %s; stop it first",
				       d->o->pin_dir);
	return 0;
}

static int open_agent(struct daemon *d)
{
	struct agent_opts ao = {.ring_bytes = d->o->ring_bytes ? d->o->ring_bytes : 4U << 20,
				.audit_opens = true,
				.aggregate_ns = 1000000000ULL,
				.argv_max = d->o->argv_max,
				.cgroup_parent = d->parent,
				.pin_dir = d->o->pin_dir,
				.daemon_socket = d->o->socket_path,
				.cmd_rules =
					true, /* every session's command rules (bpf/cmd.bpf.c) */
				.on_record = ev_on_record,
				.ctx = d};
	const struct agent_status *st;
	int r;

	r = agent_open(&d->agent, &ao);
	if (r == -EXDEV) {
		log_error("the pins in %s belong to another cgroup parent than %s; stop their "
			  "sessions and run 'bpfbox daemon --cleanup' with that parent",
			  d->o->pin_dir, d->parent);
		return r;
	}
	if (r < 0)
		return log_error_errno(r, "cannot load the BPF programs (%s); run 'bpfbox status'",
				       d->o->pin_dir);
	st = agent_status(d->agent);
	dlog("audit programs: %s%s%s%s; network programs: %s%s; BPF LSM: %s; pins in %s",
	     st->audit ? (st->audit_adopted ? "re-adopted" : "loaded") : "off",
	     st->audit ? " (attach " : "", st->audit ? st->attach : "", st->audit ? ")" : "",
	     st->net ? (st->net_adopted ? "re-adopted" : "loaded") : "off",
	     st->unix_connect ? " (with unix connect)" : "",
	     st->lsm ? (st->lsm_adopted ? "re-adopted" : "loaded") : "off", d->o->pin_dir);
	if (st->why_not[0])
		dlog("not loaded: %s", st->why_not);
	return 0;
}

static int setup_loop(struct daemon *d)
{
	struct itimerspec it = {.it_interval = {1, 0}, .it_value = {1, 0}};
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct epoll_event ev = {.events = EPOLLIN};

	signal(SIGPIPE, SIG_IGN);
	d->sig_fd = signalfd_block(sigs, ARRAY_SIZE(sigs), NULL);
	d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sig_fd < 0 || d->timer_fd < 0 || d->epfd < 0 ||
	    timerfd_settime(d->timer_fd, 0, &it, NULL) < 0)
		return log_error_errno(errno, "cannot set up the event loop");
	ev.data.ptr = &d->listen_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->listen_fd, &ev) < 0)
		return -errno;
	ev.data.ptr = &d->sig_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sig_fd, &ev) < 0)
		return -errno;
	ev.data.ptr = &d->timer_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->timer_fd, &ev) < 0)
		return -errno;
	ev.data.ptr = d->agent;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, agent_ring_fd(d->agent), &ev) < 0)
		return -errno;
	ev.data.ptr = d->sinks;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, sinks_fd(d->sinks), &ev) < 0)
		return -errno;
	return 0;
}

static void on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			char why[PATH_MAX + 1024];

			/* The config again; the same sinks (logrotate): files reopened. */
			daemon_reload(d, why, sizeof(why));
			continue;
		}
		dlog("%s: stopping; pins stay in %s, sessions stay enforced",
		     strsignal(si.ssi_signo), d->o->pin_dir);
		d->stop = true;
	}
}

static void on_tick(struct daemon *d)
{
	uint64_t n, now = now_ns();

	if (read(d->timer_fd, &n, sizeof(n)) < 0) {
		/* nothing: a tick is a tick */
	}
	ops_tick(d);
	for (struct conn *c = d->conns; c; c = c->next)
		if (c->refused && now - c->created_ns > REFUSED_LINGER_NS)
			c->dead = true;
}

static void loop(struct daemon *d)
{
	struct epoll_event evs[64];

	while (!d->stop) {
		int n = epoll_wait(d->epfd, evs, ARRAY_SIZE(evs), -1);

		if (n < 0 && errno != EINTR) {
			dlog("epoll_wait failed: %s; stopping", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &d->listen_fd) {
				conn_accept(d);
			} else if (p == &d->sig_fd) {
				on_signal(d);
			} else if (p == &d->timer_fd) {
				on_tick(d);
			} else if (p == d->agent) {
				agent_consume(d->agent);
			} else if (p == d->sinks) {
				sinks_dispatch(d->sinks);
			} else if (metrics_owns(d->metrics, p)) {
				metrics_on_event(d, p, evs[i].events);
			} else {
				struct conn *c = p;

				if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
					conn_read(d, c);
				if (evs[i].events & EPOLLOUT)
					conn_flush(d, c);
				/* Only one event per connection per batch: reaped below. */
			}
		}
		/* A dead conn may appear in a later batch only; none is freed mid-batch. */
		reap_conns(d);
		for (struct conn *c = d->conns; c; c = c->next)
			if (buf_used(&c->out) && !c->epollout)
				conn_flush(d, c);
		reap_conns(d);
		ev_flush(d);
	}
}

static void daemon_free(struct daemon *d)
{
	int fds[] = {d->epfd, d->listen_fd, d->sig_fd, d->timer_fd, d->lock_fd};

	while (d->conns) {
		struct conn *c = d->conns;

		d->conns = c->next;
		conn_flush(d, c);
		conn_free(d, c);
	}
	cgroup_pool_drain(&d->pool, d->parent); /* empty, made ahead: no session's */
	/* Sessions stay: their map entries and cgroups outlive us on purpose. */
	while (d->table.head) {
		struct dsession *s = d->table.head;

		d->table.head = s->next;
		/* Its connections end with us; new ones find no proxy (refused). */
		egress_stop(s->egress);
		free(s->start_line);
		free(s->command);
		free(s);
	}
	ev_flush(d);
	metrics_close(d->metrics);
	d->metrics = NULL;
	free(d->sink_cfg);
	ceilings_free(&d->ceilings);
	/* Network sinks keep what they could not deliver in their spools. */
	sinks_close(d->sinks);
	d->sinks = NULL;
	agent_close(d->agent);
	jsonw_free(&d->w);
	jsonw_free(&d->rw);
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(d);
}

/*
 * Each session costs the daemon a few descriptors (its cgroup, a client
 * connection, monitor fds): the usual soft limit of 1024 stalls it near
 * 900 sessions with misleading errors, so take the hard limit.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warn_errno(errno, "cannot raise the open files limit");
	}
}

int daemon_serve(const struct daemon_opts *o)
{
	struct daemon *d = calloc(1, sizeof(*d));
	bool listening = false;
	int r;

	if (!d)
		return log_error_errno(ENOMEM, "out of memory");
	d->o = o;
	d->epfd = d->listen_fd = d->sig_fd = d->timer_fd = d->lock_fd = -1;
	if (geteuid() != 0) {
		r = log_error_errno(EPERM, "the daemon loads BPF programs; run it as root");
		goto out;
	}
	raise_fd_limit();
	if ((r = resolve_group(d)) < 0 || (r = resolve_parent(d)) < 0)
		goto out;
	if (daemon_answers(o->socket_path)) {
		r = log_error_errno(EADDRINUSE, "a daemon already answers on %s; stop it first",
				    o->socket_path);
		goto out;
	}
	if ((r = lock_pins(d)) < 0)
		goto out;
	if ((r = ev_sinks_open(d)) < 0)
		goto out;
	audit_clock_init(&d->clock);
	if ((r = open_agent(d)) < 0)
		goto out;
	/* The table first: records that waited in the ring need their ids. */
	r = ops_readopt(d);
	if (r < 0) {
		log_error_errno(r, "cannot read the pinned sessions map");
		goto out;
	}
	if ((r = listen_socket(d)) < 0)
		goto out;
	listening = true;
	if ((r = setup_loop(d)) < 0)
		goto out;
	if (o->metrics_addr && (r = metrics_open(d, o->metrics_addr)) < 0)
		goto out;
	agent_consume(d->agent);
	ev_flush(d);
	if (!sd_notify("READY=1"))
		dlog("ready: socket %s, cgroup parent %s, %zu session%s re-adopted", o->socket_path,
		     d->parent, d->table.count, d->table.count == 1 ? "" : "s");
	loop(d);
	sd_notify("STOPPING=1");
	r = 0;
out:
	if (listening)
		unlink(o->socket_path);
	if (d->agent) {
		agent_consume(d->agent);
		ev_flush(d);
	}
	daemon_free(d);
	return r;
}

struct cleanup_ctx {
	const char *parent;
	unsigned int killed, failed;
};

static int cleanup_one(void *ctx, uint64_t cgroup_id, uint32_t index, uint32_t flags)
{
	struct cleanup_ctx *x = ctx;
	DIR *dir = opendir(x->parent);
	struct dirent *de;

	(void)index;
	(void)flags;
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		char path[PATH_MAX];
		struct stat st;

		if (!proto_session_id_valid(de->d_name) ||
		    fstatat(dirfd(dir), de->d_name, &st, 0) < 0 || st.st_ino != cgroup_id)
			continue;
		snprintf(path, sizeof(path), "%s/%s", x->parent, de->d_name);
		if (cgroup_remove(path, 2000) < 0) {
			log_error("cannot remove the session cgroup %s; kill its processes and "
				  "run --cleanup again",
				  path);
			x->failed++;
		} else {
			x->killed++;
		}
	}
	closedir(dir);
	return 0;
}

int daemon_cleanup(const struct daemon_opts *o)
{
	struct daemon d = {.o = o};
	struct cleanup_ctx x = {.parent = d.parent};
	struct stat st;
	int r;

	if (geteuid() != 0)
		return log_error_errno(EPERM, "--cleanup removes pins and cgroups; run it as root");
	if (daemon_answers(o->socket_path))
		return log_error_errno(EBUSY, "a daemon answers on %s; stop it before --cleanup",
				       o->socket_path);
	if ((r = resolve_parent(&d)) < 0)
		return r;
	r = agent_pinned_sessions(o->pin_dir, cleanup_one, &x);
	if (r < 0)
		log_warn_errno(r, "cannot read the pinned sessions in %s; their cgroups stay",
			       o->pin_dir);
	r = agent_unpin(o->pin_dir);
	if (r < 0)
		return log_error_errno(r, "cannot remove the pins in %s", o->pin_dir);
	if (lstat(o->socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(o->socket_path);
	cgroup_pool_sweep(d.parent); /* what a killed daemon made ahead */
	if (rmdir(d.parent) < 0 && errno != ENOENT)
		log_warn("the cgroup parent %s stays: %s (embedded sessions may use it)", d.parent,
			 strerror(errno));
	dlog("cleaned up: %u session%s killed, pins removed from %s", x.killed,
	     x.killed == 1 ? "" : "s", o->pin_dir);
	return x.failed ? -EBUSY : 0;
}
