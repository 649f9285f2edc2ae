// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's process: setup (group, cgroup parent, pins, sink, socket),
 * shutdown and cleanup. The epoll loop is server_loop.c, connections and
 * their peer checks server_conn.c.
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <json-c/json.h>

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
	/* One line, no control byte: what a session chose may be in it (log.c). */
	term_clean(buf, sizeof(buf), buf);
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

static void daemon_free(struct daemon *d)
{
	int fds[] = {d->epfd,	 d->listen_fd,	   d->sig_fd,	    d->timer_fd,
		     d->lock_fd, d->net_ask_fd[0], d->net_ask_fd[1]};

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
		free(s->labels);
		free(s);
	}
	ev_flush(d);
	metrics_close(d->metrics);
	d->metrics = NULL;
	free(d->sink_cfg);
	ceilings_free(&d->ceilings);
	json_object_put(d->policies);
	/* Network sinks keep what they could not deliver in their spools. */
	sinks_close(d->sinks);
	d->sinks = NULL;
	agent_close(d->agent);
	jsonw_free(&d->w);
	jsonw_free(&d->rw);
	if (d->tok)
		json_tokener_free(d->tok);
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

/*
 * Stopped by a signal: sessions keep their pins (their enforcement and
 * re-adoption by the next daemon). With none left, nothing needs them, and
 * the attached syscall tracepoints would put every syscall of the host on
 * the slow path until a daemon runs again: they go, while the pin lock is
 * still held (a daemon started next makes a pin dir of its own).
 */
static void stop_pins(struct daemon *d)
{
	unsigned int pinned = 0;
	int r;

	if (!d->stop)
		return;
	if (d->table.count || agent_pinned_session_count(d->o->pin_dir, &pinned) < 0 || pinned) {
		dlog("pins stay in %s: %zu session%s stay enforced", d->o->pin_dir,
		     d->table.count ? d->table.count : pinned,
		     (d->table.count ? d->table.count : pinned) == 1 ? "" : "s");
		return;
	}
	r = agent_unpin(d->o->pin_dir);
	if (r < 0)
		log_warn_errno(r,
			       "no sessions, but the pins in %s stay; 'bpfbox daemon --cleanup' "
			       "removes them",
			       d->o->pin_dir);
	else
		dlog("no sessions: pins removed from %s, programs detached", d->o->pin_dir);
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
	d->net_ask_fd[0] = d->net_ask_fd[1] = -1;
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
	if ((r = server_loop_setup(d)) < 0)
		goto out;
	if (o->metrics_addr && (r = metrics_open(d, o->metrics_addr)) < 0)
		goto out;
	agent_consume(d->agent);
	ev_flush(d);
	if (!sd_notify("READY=1"))
		dlog("ready: socket %s, cgroup parent %s, %zu session%s re-adopted", o->socket_path,
		     d->parent, d->table.count, d->table.count == 1 ? "" : "s");
	server_loop(d);
	sd_notify("STOPPING=1");
	stop_pins(d);
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
	/* Before anything: --cleanup removes every entry of the pin directory. */
	if ((r = agent_pin_dir_check(o->pin_dir)) == -ENOTSUP)
		return log_error_errno(-r,
				       "--pin-dir %s is not on the BPF file system (bpffs): its "
				       "files are not pins; nothing was removed",
				       o->pin_dir);
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
