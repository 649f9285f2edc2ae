// SPDX-License-Identifier: GPL-2.0
/*
 * adopt: a cgroup someone else made and runs (a container, a systemd unit)
 * becomes a session of the daemon under one of the policies of its config
 * (docs/daemon.md, "Adopted cgroups"). What the daemon gives it is what
 * its BPF programs give any session keyed by cgroup: the audit stream, the
 * BPF LSM's deny lists, command rules and asks, the network rules by
 * address, pause, resume and kill. The cgroup stays its owner's: no limits
 * written, never removed; the session ends when the cgroup empties or goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <ftw.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <json-c/json.h>

#include "internal.h"
#include "ops_internal.h"
#include "client.h"
#include "../agent/agent.h"
#include "../lib/cgroup.h"
#include "../monitor/control.h"
#include "../monitor/monitor.h"
#include "../lib/util.h"
#include "../net/egress.h"
#include "../policy/policy.h"

/* A child cgroup of dir: its processes would not be the session's (exact cgroup id). */
static bool has_child_cgroup(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;

	if (!d)
		return false;
	while (!found && (de = readdir(d)))
		found = de->d_type == DT_DIR && !streq(de->d_name, ".") && !streq(de->d_name, "..");
	closedir(d);
	return found;
}

/*
 * The cgroup to adopt, resolved: a directory of the cgroup2 tree, not its
 * root, not one of the daemon's own sessions', no child cgroups, not
 * adopted already. 0, or -1 when replied.
 */
static int adopt_cgroup(struct daemon *d, struct conn *c, const char *path,
			struct session_cgroup *cg)
{
	char mnt[PATH_MAX], real[PATH_MAX], parent[PATH_MAX];
	size_t ml, pl;
	struct statfs fs;
	struct stat st;

	if (path[0] != '/' || !realpath(path, real) || statfs(real, &fs) < 0 ||
	    fs.f_type != CGROUP2_SUPER_MAGIC || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		ops_reply_error(d, c, ENOENT,
				"adopt: '%.256s' is not a cgroup v2 directory; give the absolute "
				"path of the container's cgroup (its /proc/PID/cgroup '0::' line "
				"under the cgroup2 mount)",
				path);
		return -1;
	}
	ml = cgroup2_mount_point(mnt, sizeof(mnt)) == 0 ? strlen(mnt) : 0;
	/* The parent as the kernel names it (--cgroup-parent may end in '/'). */
	if (!realpath(d->parent, parent))
		snprintf(parent, sizeof(parent), "%s", d->parent);
	pl = strlen(parent);
	if (!ml || strncmp(real, mnt, ml) || real[ml] != '/' ||
	    (!strncmp(real, parent, pl) && (real[pl] == '/' || !real[pl]))) {
		ops_reply_error(d, c, EINVAL,
				"adopt: %s is the cgroup2 root or the daemon's own (%s); adopt a "
				"container's or a unit's cgroup",
				real, d->parent);
		return -1;
	}
	if (has_child_cgroup(real)) {
		ops_reply_error(d, c, EINVAL,
				"adopt: %s has child cgroups, whose processes the session would "
				"not cover; adopt the leaf cgroup the processes run in",
				real);
		return -1;
	}
	for (struct dsession *s = d->table.head; s; s = s->next)
		if (s->cgroup_id == (uint64_t)st.st_ino) {
			ops_reply_error(d, c, EEXIST, "adopt: %s is session %s already", real,
					s->id);
			return -1;
		}
	memset(cg, 0, sizeof(*cg));
	snprintf(cg->path, sizeof(cg->path), "%s", real);
	cg->id = st.st_ino;
	cg->dir_fd = cg->procs_fd = -1;
	return 0;
}

/*
 * The register request an adopted cgroup stands for: the named policy's
 * effective policy and network rules (as a client sends them), the labels,
 * and what bpfbox itself does not enforce there. NULL when replied.
 */
static struct json_object *adopt_request(struct daemon *d, struct conn *c, const char *name,
					 struct json_object *layer, struct json_object *labels,
					 bool *names, uint64_t *pause_ms)
{
	struct json_object *req = json_object_new_object(), *ne = json_object_new_array();
	struct bpfbox_policy p;
	struct policy_error pe = {0};
	char buf[512];

	policy_init(&p);
	if (policy_merge_layer(&p, layer, name, &pe) < 0) {
		/* The config was checked at load: only memory fails here. */
		ops_reply_error(d, c, EINVAL, "adopt: %s",
				policy_error_format(&pe, buf, sizeof(buf)));
		goto fail;
	}
	*names = p.net == NET_DENY && egress_has_names(&p.net_allow);
	*pause_ms = p.limits.pause_timeout_ms;
	daemon_request_net(req, &p);
	json_object_object_add(req, "policy", policy_to_json(&p));
	json_object_object_add(req, "labels",
			       labels ? json_object_get(labels) : json_object_new_object());
	json_object_object_get_ex(req, "labels", &labels);
	json_object_object_add(labels, "bpfbox.policy", json_object_new_string(name));
	json_object_array_add(ne, json_object_new_string("landlock, seccomp, namespaces and limits "
							 "(the cgroup's runtime's, not bpfbox's)"));
	json_object_object_add(req, "not_enforced", ne);
	json_object_object_add(req, "command", json_object_new_array());
	policy_free(&p);
	return req;
fail:
	policy_free(&p);
	json_object_put(ne);
	json_object_put(req);
	return NULL;
}

/* Root's "cgroup", "policy_name" and optional "labels", checked. 0, or -1 when replied. */
static int adopt_check(struct daemon *d, struct conn *c, struct json_object *req, const char **path,
		       const char **name, struct json_object **layer, struct json_object **labels)
{
	if (c->peer.uid != 0) {
		ops_reply_error(d, c, EPERM, "adopt: only root may adopt a cgroup (uid %u)",
				c->peer.uid);
		return -1;
	}
	if (proto_get_str(req, "cgroup", path) != 0)
		return ops_bad_member(d, c, "adopt", "cgroup", "an absolute cgroup path");
	if (proto_get_str(req, "policy_name", name) != 0 || !daemon_policy_name_valid(*name))
		return ops_bad_member(d, c, "adopt", "policy_name",
				      "a name of the config's \"policies\"");
	if (!d->policies || !json_object_object_get_ex(d->policies, *name, layer)) {
		ops_reply_error(d, c, ENOENT,
				"adopt: no policy '%s' in the daemon's config; add it under "
				"\"policies\" (docs/operating.md) and run bpfbox daemon reload",
				*name);
		return -1;
	}
	*labels = NULL;
	if (json_object_object_get_ex(req, "labels", labels) && *labels &&
	    (!json_object_is_type(*labels, json_type_object) || !ops_labels_valid(*labels)))
		return ops_bad_member(d, c, "adopt", "labels",
				      "an object of at most 32 strings, keys up to 64 bytes, "
				      "values up to 256");
	return 0;
}

/*
 * The watch an adopted cgroup gets instead of bpfbox run's monitor: its
 * memory.events where the memory controller is on for it (none: the OOM
 * pause is not enforced, said in its start event and at adoption).
 */
static void adopt_watch(struct dsession *s, uint64_t pause_timeout_ms)
{
	struct session_limits l = {.how[RES_MEMORY] = LIMIT_CGROUP2};

	s->pause_timeout_ms = pause_timeout_ms;
	s->oom_on = snprintf(l.cg, sizeof(l.cg), "%s", s->cgroup) < (int)sizeof(l.cg) &&
		    oom_watch_open(&s->oom, &l) == 0;
}

/*
 * The network namespace the egress proxy must listen in (the BPF redirect
 * lands on 127.0.0.1 of the connecting process's namespace): the one the
 * caller sent with the request (bpfbox adopt and the OCI hook send the
 * namespace of a process of the cgroup, which they may open and the
 * daemon may not). Taken from the connection: an fd, or -1 when replied.
 */
static int adopt_netns(struct daemon *d, struct conn *c, const struct session_cgroup *cg,
		       const char *name)
{
	int fd = c->passed_fd;
	bool sent = fd >= 0;

	c->passed_fd = -1;
	if (sent && ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET)
		return fd;
	if (sent)
		close(fd);
	ops_reply_error(d, c, ESRCH,
			"adopt: policy '%s' allows names, whose proxy must listen in the network "
			"namespace of %s's processes, and %s; adopt it once its first process "
			"runs (the OCI hook's createRuntime does), sending that namespace",
			name, cg->path,
			sent ? "the fd sent with the request is no network namespace"
			     : "the request brought none (the cgroup has no process yet)");
	return -1;
}

/*
 * A registered adopted session made what it is: running at once (its
 * processes run already), owned by its cgroup's life and not by a
 * connection, watched, at the level bpfbox itself enforces, and so said
 * in its request (sreq, its start event's source) and its cgroup's record.
 */
static void adopt_running(struct dsession *s, struct json_object *sreq, uint64_t pause_ms)
{
	struct json_object *ne;

	s->owner = 0;
	s->client_pid = 0;
	ops_note_running(s);
	adopt_watch(s, pause_ms);
	if (!s->oom_on && json_object_object_get_ex(sreq, "not_enforced", &ne))
		json_object_array_add(ne,
				      json_object_new_string(
					      "the pause on an OOM kill (the cgroup has no memory "
					      "controller: no memory.events to watch)"));
	json_object_object_add(sreq, "level_enabled",
			       json_object_new_string(s->lsm ? "Full" : "None"));
	snprintf(s->level, sizeof(s->level), "%s", s->lsm ? "Full" : "None");
	ops_write_meta(s, s->lsm ? s->lsm_lists : NULL); /* again: with its level, no pid */
	if (!s->lsm)
		ops_register_lsm_only(sreq);
}

void op_adopt(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct json_object *layer, *labels, *sreq;
	struct session_cgroup cg;
	struct dsession *s = NULL;
	const char *path, *name, *net;
	char id[SESSION_NAME_LEN + 1];
	uint32_t flags, index;
	uint16_t proxy = 0;
	int links[DAEMON_ADOPT_LINKS], nlinks;
	struct adopt_opts ao = {.netns_fd = -1};
	bool names;
	uint64_t pause_ms;
	int r;

	if (adopt_check(d, c, req, &path, &name, &layer, &labels) < 0 ||
	    adopt_cgroup(d, c, path, &cg) < 0)
		return;
	index = ops_free_index(d, c, "adopt");
	if (!index)
		return;
	sreq = adopt_request(d, c, name, layer, labels, &names, &pause_ms);
	if (!sreq)
		return;
	if (names) {
		ao.netns_fd = adopt_netns(d, c, &cg, name);
		if (ao.netns_fd < 0) {
			json_object_put(sreq);
			return;
		}
	}
	/* The network programs first: they judge nothing of it before its entry. */
	nlinks = agent_cgroup_attach(d->agent, cg.path, cg.id, links, DAEMON_ADOPT_LINKS);
	if (nlinks < 0) {
		ops_reply_error(d, c, -nlinks,
				"adopt: cannot attach the network programs to %s: %s", cg.path,
				strerror(-nlinks));
		fd_close(&ao.netns_fd);
		json_object_put(sreq);
		return;
	}
	session_name_new(id);
	flags = agent_status(d->agent)->net ? BPFBOX_SF_NET_BPF : 0;
	if (proto_get_str(sreq, "net", &net) == 0 && streq(net, "deny"))
		flags |= BPFBOX_SF_NET_DENY;
	/*
	 * Its loopback is allowed where it is its own: bpf/net.bpf.c checks,
	 * at each connect, that the caller's network namespace is not the
	 * host's (a container on the host's network reaches no 127.0.0.1).
	 */
	flags |= BPFBOX_SF_NET_LOOPBACK;
	r = ops_register_session(d, c, sreq, id, index, &cg, flags, &ao, &s, &proxy);
	fd_close(&ao.netns_fd); /* the proxy's sockets are made: no longer needed */
	if (r < 0) {
		agent_cgroup_detach(d->agent, cg.id, links, nlinks);
		json_object_put(sreq);
		return;
	}
	memcpy(s->links, links, nlinks * sizeof(*links));
	s->nlinks = nlinks;
	adopt_running(s, sreq, pause_ms);
	ops_register_reply(d, c, s, sreq, 0, 0);
	ev_session_start(d, s, sreq);
	dlog("session %s adopted cgroup %s (policy %s) for uid %u: index %u", s->id, s->cgroup,
	     name, c->peer.uid, s->index);
	json_object_put(sreq);
}

/* The cgroup2 directory whose inode is want_ino (nftw's walk). */
static uint64_t want_ino;
static char found_path[PATH_MAX];

static int find_ino(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)f;
	if (type != FTW_D || st->st_ino != want_ino)
		return 0;
	snprintf(found_path, sizeof(found_path), "%s", path);
	return 1;
}

/* The adopted session's id from its cgroup's meta; 0 or -ENOENT. */
static int adopted_id(const char *cgroup, char *id, size_t size)
{
	_cleanup_free_ char *buf = malloc(META_MAX);
	ssize_t n = buf ? getxattr(cgroup, META_XATTR, buf, META_MAX - 1) : -1;
	struct json_object *o;
	const char *v;
	int r = -ENOENT;

	if (n <= 0)
		return -ENOENT;
	buf[n] = '\0';
	o = json_tokener_parse(buf);
	if (o && proto_get_str(o, "adopted", &v) == 0 && proto_session_id_valid(v) &&
	    strlen(v) < size) {
		snprintf(id, size, "%s", v);
		r = 0;
	}
	json_object_put(o);
	return r;
}

int ops_readopt_adopted(struct daemon *d, uint64_t cgroup_id, uint32_t index, uint32_t flags)
{
	char mnt[PATH_MAX], id[DAEMON_SESSION_ID_LEN + 1];
	struct dsession *s;

	want_ino = cgroup_id;
	found_path[0] = '\0';
	if (cgroup2_mount_point(mnt, sizeof(mnt)) < 0 ||
	    nftw(mnt, find_ino, 16, FTW_PHYS | FTW_MOUNT) != 1)
		return -ENOENT;
	/* Its cgroup lives: taken back (fail closed), under a new id if its record is lost. */
	if (adopted_id(found_path, id, sizeof(id)) < 0) {
		session_name_new(id);
		dlog("adopted cgroup %s has no readable record; taken back as session %s",
		     found_path, id);
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	ev_flood_init(d, s);
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->cgroup, sizeof(s->cgroup), "%s", found_path);
	s->index = index;
	s->cgroup_id = cgroup_id;
	s->flags = flags;
	s->adopted = true;
	s->state = DS_ADOPTED;
	s->nlinks = agent_cgroup_links(d->agent, cgroup_id, s->links, DAEMON_ADOPT_LINKS);
	if (!s->nlinks && agent_status(d->agent)->net)
		dlog("adopted cgroup %s: its network programs' pins are gone; its connects are "
		     "not judged",
		     found_path);
	ops_read_meta(d, s); /* its pause_timeout_ms, else the default's */
	adopt_watch(s,
		    s->pause_timeout_ms ? s->pause_timeout_ms : POLICY_PAUSE_TIMEOUT_S * 1000ULL);
	/* Its open asks are denied (no one holds them now), as readopt_one does. */
	if (!ops_ask_readopt(d, s) && ctl_paused(s->cgroup)) {
		s->resume_state = DS_ADOPTED;
		s->state = DS_PAUSED;
		s->paused_at_ns = now_ns();
		snprintf(s->pause_reason, sizeof(s->pause_reason), "manual");
	}
	if (table_add(&d->table, s) < 0) {
		agent_cgroup_detach(d->agent, cgroup_id, s->links, s->nlinks);
		free(s->command);
		json_object_put(s->lsm_lists);
		free(s);
		return -ENOMEM;
	}
	dlog("re-adopted adopted cgroup %s as session %s (index %u, %d links)", s->cgroup, s->id,
	     s->index, s->nlinks);
	return 0;
}

void ops_adopt_detach(struct daemon *d, struct dsession *s)
{
	if (s->adopted)
		agent_cgroup_detach(d->agent, s->cgroup_id, s->links, s->nlinks);
	s->nlinks = 0;
	if (s->oom_on)
		oom_watch_close(&s->oom);
	s->oom_on = false;
}

/*
 * Each tick, what --on-limit pause and --pause-timeout are for a run: a new
 * OOM kill in the cgroup pauses the session (session.paused, reason oom),
 * and a pause of any reason older than its policy's pause_timeout kills it
 * (session.killed, reason pause_timeout): every pause ends.
 */
static void adopt_limits(struct daemon *d, struct dsession *s)
{
	bool invoked;
	uint64_t kills;

	if (s->state == DS_PAUSED && s->pause_timeout_ms && !s->killed &&
	    now_ns() - s->paused_at_ns >= s->pause_timeout_ms * 1000000ULL) {
		struct session_event ev = {.type = SEV_KILLED, .reason = "pause_timeout"};

		if (ops_kill_session(d, s, &ev) < 0)
			dlog("session %s: cannot kill %s after its pause timeout", s->id,
			     s->cgroup);
		return;
	}
	kills = s->oom_on ? oom_watch_check(&s->oom, true, &invoked) : 0;
	if (kills && (s->state == DS_RUNNING || s->state == DS_ADOPTED) && !s->killed) {
		struct session_event ev = {.type = SEV_PAUSED, .reason = "oom", .oom_kills = kills};

		if (ops_pause_session(d, s, &ev) < 0)
			dlog("session %s: cannot pause %s after an OOM kill", s->id, s->cgroup);
	}
}

/*
 * Each second, for an adopted session: a cgroup removed or made again
 * under its path (another id: nothing of it is this session's) ends it
 * without touching what now runs there; a child cgroup, whose processes
 * the programs would not see (they key sessions by the exact cgroup), has
 * the whole tree killed and the session ended (fail closed).
 */
bool ops_adopt_tick(struct daemon *d, struct dsession *s)
{
	struct stat st;

	if (!s->adopted || s->state == DS_ENDING)
		return false;
	adopt_limits(d, s);
	if (stat(s->cgroup, &st) < 0 || (uint64_t)st.st_ino != s->cgroup_id) {
		s->cgroup_gone = true;
		s->end.reason = "cgroup removed";
	} else if (has_child_cgroup(s->cgroup)) {
		dlog("session %s: a child cgroup appeared in its adopted cgroup %s; killed", s->id,
		     s->cgroup);
		cgroup_kill(s->cgroup); /* cgroup.kill: the whole subtree */
		s->killed = true;
		s->end.reason = "killed: a child cgroup appeared (outside the session)";
	} else {
		return false;
	}
	s->state = DS_ENDING;
	return ops_end_session(d, s, s->end.reason, NULL) == 0;
}
