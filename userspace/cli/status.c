// SPDX-License-Identifier: GPL-2.0
/* bpfbox status: print the probes, as text or as the JSON in docs/status.md. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "../agent/agent.h"
#include "../probe/probe.h"
#include "../monitor/limits.h"
#include "../lib/util.h"

#define STATUS_SCHEMA_VERSION 1

static void status_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox status [--json] [--require LEVEL]\n"
		     "  --json           print the probes as one JSON object\n"
		     "  --require LEVEL  exit 1 unless the host reaches LEVEL "
		     "(None, Minimal, Standard, Full)\n");
}

/* Splits "a,b c" into a JSON array of words. */
static struct json_object *word_array(const char *list)
{
	struct json_object *arr = json_object_new_array();
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok_r(buf, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
		json_object_array_add(arr, json_object_new_string(w));
	return arr;
}

/* Pinned program sets of bpfbox daemons: where, whether a daemon holds them. */
#define PIN_ROOT "/sys/fs/bpf"
#define PINS_MAX 16

struct pin_set {
	char dir[PATH_MAX];
	bool daemon;	       /* a daemon holds the pin dir's lock (it runs) */
	unsigned int links;    /* link_* pins: programs that stay attached */
	unsigned int sessions; /* entries of the pinned sessions map */
};

struct pins {
	bool readable; /* PIN_ROOT could be listed (root) */
	size_t n;
	struct pin_set v[PINS_MAX];
};

/*
 * Whether a flock is held on path: the lock a running daemon holds on its
 * pin dir (lock_pins). Read from /proc/locks, never tried: a lock taken
 * here, however briefly, could make a daemon starting at that moment fail.
 */
static bool flock_held(const char *path)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256], kind[16];
	struct stat st;
	bool held = false;
	FILE *f;

	if (stat(path, &st) < 0 || !(f = fopen("/proc/locks", "re")))
		return false;
	while (!held && fgets(line, sizeof(line), f))
		held = sscanf(line, "%*s %15s %*s %*s %*d %x:%x:%lu", kind, &maj, &min, &ino) ==
			       4 &&
		       streq(kind, "FLOCK") && ino == st.st_ino && maj == major(st.st_dev) &&
		       min == minor(st.st_dev);
	fclose(f);
	return held;
}

/* One pin dir: its links counted, whether a daemon holds it. */
static void pin_set_read(struct pin_set *p)
{
	DIR *d = opendir(p->dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (startswith(de->d_name, "link_"))
			p->links++;
	closedir(d);
	p->daemon = flock_held(p->dir);
	agent_pinned_session_count(p->dir, &p->sessions);
}

/*
 * Every directory under PIN_ROOT that holds a bpfbox sessions map. Pins a
 * stopped or killed daemon left keep its programs attached: the tracepoint
 * ones tax every syscall of the host until a daemon re-adopts them or
 * 'bpfbox daemon --cleanup' removes them.
 */
static void pins_find(struct pins *ps)
{
	DIR *d = opendir(PIN_ROOT);
	struct dirent *de;

	memset(ps, 0, sizeof(*ps));
	if (!d)
		return;
	ps->readable = true;
	while ((de = readdir(d)) && ps->n < PINS_MAX) {
		struct pin_set *p = &ps->v[ps->n];
		char map[PATH_MAX + 16];

		if (de->d_name[0] == '.')
			continue;
		snprintf(p->dir, sizeof(p->dir), "%s/%s", PIN_ROOT, de->d_name);
		snprintf(map, sizeof(map), "%s/map_sessions", p->dir);
		if (access(map, F_OK) < 0)
			continue;
		pin_set_read(p);
		ps->n++;
	}
	closedir(d);
}

static struct json_object *pins_json(const struct pins *ps)
{
	struct json_object *arr;

	if (!ps->readable)
		return NULL;
	arr = json_object_new_array();
	for (size_t i = 0; i < ps->n; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "dir", json_object_new_string(ps->v[i].dir));
		json_object_object_add(o, "daemon", json_object_new_boolean(ps->v[i].daemon));
		json_object_object_add(o, "links", json_object_new_int(ps->v[i].links));
		json_object_object_add(o, "sessions", json_object_new_int(ps->v[i].sessions));
		json_object_array_add(arr, o);
	}
	return arr;
}

static void pins_text(const struct pins *ps)
{
	if (!ps->readable) {
		printf("pins: unknown (%s is not readable: run as root)\n", PIN_ROOT);
		return;
	}
	if (!ps->n)
		printf("pins: none (no daemon's programs are pinned in %s)\n", PIN_ROOT);
	for (size_t i = 0; i < ps->n; i++) {
		const struct pin_set *p = &ps->v[i];

		if (p->daemon) {
			printf("pins: %s: held by a running daemon (%u links, %u session%s)\n",
			       p->dir, p->links, p->sessions, p->sessions == 1 ? "" : "s");
			continue;
		}
		printf("pins: %s: no daemon holds them: %u links stay attached (syscall "
		       "tracepoints among them tax every syscall of the host), %u session%s "
		       "enforced; start the daemon to re-adopt them, or remove them with "
		       "'bpfbox daemon --cleanup --pin-dir %s'\n",
		       p->dir, p->links, p->sessions, p->sessions == 1 ? "" : "s", p->dir);
	}
}

static struct json_object *status_json(const struct host_caps *caps, const struct pins *ps)
{
	struct json_object *o = json_object_new_object();
	struct json_object *feats = json_object_new_object();
	struct json_object *ll = json_object_new_object();
	struct json_object *cg = json_object_new_object();
	char rights[256];

	json_object_object_add(o, "schema_version", json_object_new_int(STATUS_SCHEMA_VERSION));
	json_object_object_add(o, "level", json_object_new_string(level_name(caps->level)));
	json_object_object_add(o, "kernel_release", json_object_new_string(caps->kernel_release));
	json_object_object_add(o, "root", json_object_new_boolean(caps->root));
	for (int id = 0; id < FEAT__COUNT; id++) {
		const struct feature *f = &caps->feat[id];
		struct json_object *fo = json_object_new_object();

		json_object_object_add(fo, "available",
				       json_object_new_boolean(f->state == FEAT_YES));
		json_object_object_add(fo, "state",
				       json_object_new_string(feat_state_name(f->state)));
		json_object_object_add(fo, "errno",
				       f->err ? json_object_new_string(strerrorname_np(f->err))
					      : NULL);
		json_object_object_add(fo, "detail", json_object_new_string(f->detail));
		json_object_object_add(feats, feature_key(id), fo);
	}
	json_object_object_add(o, "features", feats);

	landlock_rights_describe(&caps->landlock, rights, sizeof(rights));
	json_object_object_add(ll, "abi", json_object_new_int(caps->landlock.abi));
	json_object_object_add(ll, "kernel_abi", json_object_new_int(caps->landlock_kernel_abi));
	json_object_object_add(ll, "rights", word_array(rights));
	json_object_object_add(o, "landlock", ll);

	json_object_object_add(o, "audit_attach", json_object_new_string(probe_audit_attach(caps)));
	json_object_object_add(o, "lsm_list", word_array(caps->lsm_list));
	json_object_object_add(cg, "v2_mount",
			       caps->cgroup2_mount[0] ? json_object_new_string(caps->cgroup2_mount)
						      : NULL);
	json_object_object_add(cg, "v2_controllers", word_array(caps->cgroup2_controllers));
	json_object_object_add(cg, "v1_controllers", word_array(caps->cgroup1_controllers));
	json_object_object_add(cg, "hybrid", json_object_new_boolean(caps->cgroup1_controllers[0]));
	json_object_object_add(o, "cgroup", cg);
	if (caps->limits_probed) {
		struct json_object *lim = json_object_new_object();

		for (int r = 0; r < RES__COUNT; r++)
			json_object_object_add(
				lim, limit_res_name(r),
				json_object_new_string(limit_how_name(caps->limits_how[r])));
		json_object_object_add(lim, "pause",
				       json_object_new_string(caps->limits_pause ? "cgroup2"
										 : "none"));
		json_object_object_add(lim, "disk", json_object_new_string("inotify"));
		json_object_object_add(o, "limits", lim);
	}
	json_object_object_add(o, "pins", pins_json(ps));
	return o;
}

static void status_text(const struct host_caps *caps, const struct pins *ps)
{
	const struct feature *lsm = &caps->feat[FEAT_BPF_LSM];

	printf("kernel %s, probed as %s\n", caps->kernel_release,
	       caps->root ? "root" : "an unprivileged user");
	for (int id = 0; id < FEAT__COUNT; id++) {
		const struct feature *f = &caps->feat[id];

		printf("  %-30s %-12s %s\n", feature_label(id), feat_state_name(f->state),
		       f->detail);
	}
	printf("audit attach: %s", probe_audit_attach(caps));
	if (streq(probe_audit_attach(caps), "tracepoint"))
		printf(" (fexit: %s; syscall tracepoints put every task on the syscall slow path)",
		       caps->feat[FEAT_FEXIT].detail);
	printf("\n");
	printf("level: %s", level_name(caps->level));
	if (caps->level < LEVEL_FULL && lsm->state != FEAT_YES)
		printf(" (no BPF LSM: %s)", lsm->detail);
	printf("\n");
	pins_text(ps);
}

static int check_level(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	if (level_parse(arg, opt->dst) == 0)
		return 0;
	fprintf(stderr,
		"bpfbox %s: unknown level '%s'; valid levels: None, Minimal, Standard, Full\n", cmd,
		arg);
	return EXIT_USAGE;
}

int cmd_status(int argc, char **argv)
{
	enum bpfbox_level required = LEVEL_NONE;
	struct host_caps caps;
	struct pins pins;
	bool json = false;
	const struct cli_opt opts[] = {
		{"json", 'j', false, &json},
		{"require", 'r', true, &required, check_level},
		{0},
	};
	int r = cli_parse(argc, argv, opts, false, status_usage);

	if (r >= 0)
		return r;
	probe_host(&caps, PROBE_ALL);
	pins_find(&pins);
	if (json) {
		struct json_object *o = status_json(&caps, &pins);

		printf("%s\n",
		       json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								 JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		status_text(&caps, &pins);
	}
	if (caps.level < required) {
		fprintf(stderr, "bpfbox status: host is at level %s, below the required %s\n",
			level_name(caps.level), level_name(required));
		return 1;
	}
	return 0;
}
