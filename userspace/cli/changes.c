// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox changes, apply, discard, undo, prepare: a session's change set
 * (docs/runtime.md, "Change sets"; sandbox/changes.h) listed, its text
 * diffs shown, applied to its workspace, or removed; a workspace's
 * history of applies listed, a generation of it restored; the next
 * review session's set and overlay of a workspace made ahead, or let go.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "../sandbox/changes.h"
#include "../sandbox/grants.h"
#include "../lib/jsonw.h"
#include "../lib/util.h"

extern char **environ;

static void changes_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox changes ID [--json | --diff]\n"
		     "  lists what session ID changed in its workspace (--changes review|apply):\n"
		     "  added, modified, mode (the mode alone), deleted, one path a line\n"
		     "  --json   one JSON object: the manifest's members and \"changes\"\n"
		     "  --diff   a unified diff of each changed file (diff -u)\n"
		     "exit: 0 listed; 1 an error; 2 bad usage; 4 no change set ID\n");
}

static void apply_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox apply ID\n"
		     "  writes change set ID into its workspace, keeping what it replaces\n"
		     "  (a generation of the workspace's history: bpfbox undo); run it again\n"
		     "  to finish an apply that was interrupted\n"
		     "exit: 0 applied; 1 an error; 2 bad usage; 3 refused (a path changed in the\n"
		     "workspace since the session started, or a device node, fifo, socket,\n"
		     "set-uid or set-gid file; each path on stderr, nothing written);\n"
		     "4 no change set ID; 5 in use by a running session\n");
}

static void discard_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox discard ID\n"
		     "  removes change set ID (its workspace stays as it is)\n"
		     "exit: 0 removed; 1 an error; 2 bad usage; 4 no change set ID;\n"
		     "5 in use by a running session\n");
}

static void undo_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox undo WORKSPACE [GEN]\n"
		     "       bpfbox undo WORKSPACE --list [--json]\n"
		     "  puts back what apply GEN (default: the newest) overwrote or deleted in\n"
		     "  WORKSPACE and removes what it added; run it again to finish an undo that\n"
		     "  was interrupted\n"
		     "  --list   the generations kept, oldest first, and their disk use\n"
		     "  --json   --list as one JSON object\n"
		     "exit: 0 restored (or listed); 1 an error; 2 bad usage; 3 refused (a path\n"
		     "changed since that apply; each path on stderr, nothing written);\n"
		     "4 no such generation, or no history\n");
}

/* The set named by the one operand; 0, or the exit code (said). */
static int open_set(const char *cmd, int argc, char **argv, struct changes_set *cs)
{
	char why[PATH_MAX + 128];
	int r;

	if (optind != argc - 1)
		return cli_usage_error(cmd, "%s",
				       optind >= argc ? "give the change set's id"
						      : "give one change set id");
	r = changes_open(cs, argv[optind], why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "bpfbox %s: %s\n", cmd, why);
		return r == -ENOENT ? CHANGES_EXIT_UNKNOWN : r == -EINVAL ? EXIT_USAGE : 1;
	}
	return 0;
}

/* A path for a terminal: control characters as \n, \t, \xNN. */
static void put_path(const char *p)
{
	for (; *p; p++) {
		unsigned char c = *p;

		if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\\')
			fputs("\\\\", stdout);
		else if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static void print_json(const struct changes_set *cs, const struct change_list *l)
{
	struct jsonw w = {0};

	jsonw_begin(&w);
	jsonw_str(&w, "id", cs->id);
	jsonw_str(&w, "workspace", cs->workspace);
	jsonw_str(&w, "dir", cs->dir);
	jsonw_str(&w, "state", cs->state);
	if (cs->parent[0])
		jsonw_str(&w, "parent", cs->parent);
	if (cs->child[0])
		jsonw_str(&w, "child", cs->child);
	if (cs->generation)
		jsonw_u64(&w, "generation", cs->generation);
	jsonw_u64(&w, "added", l->count[CHANGE_ADDED]);
	jsonw_u64(&w, "modified", l->count[CHANGE_MODIFIED] + l->count[CHANGE_MODE]);
	jsonw_u64(&w, "deleted", l->count[CHANGE_DELETED]);
	jsonw_array_begin(&w, "changes");
	for (size_t i = 0; i < l->n; i++) {
		const struct change *c = &l->v[i];
		mode_t m = c->kind == CHANGE_DELETED ? c->old_mode : c->mode;

		jsonw_object_begin(&w, NULL);
		jsonw_str(&w, "path", c->path);
		jsonw_str(&w, "change", change_kind_name(c->kind));
		jsonw_str(&w, "type",
			  S_ISDIR(m)   ? "dir"
			  : S_ISLNK(m) ? "symlink"
			  : S_ISREG(m) ? "file"
				       : "other");
		if (c->kind != CHANGE_DELETED)
			jsonw_printf(&w, ",\"mode\":\"%04o\"", c->mode & 07777);
		if (c->kind != CHANGE_ADDED)
			jsonw_printf(&w, ",\"old_mode\":\"%04o\"", c->old_mode & 07777);
		if (c->kind != CHANGE_DELETED && S_ISREG(c->mode))
			jsonw_u64(&w, "size", c->size);
		jsonw_end(&w);
	}
	jsonw_array_end(&w);
	jsonw_end(&w);
	jsonw_newline(&w);
	fwrite(w.buf, 1, w.len, stdout);
	jsonw_free(&w);
}

/* One file's side for diff: its fd's /proc path, or /dev/null (fd -1). */
static int side(int dir, const char *path, char *out, size_t size)
{
	int fd = dir < 0 ? -1 : openat(dir, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		snprintf(out, size, "/dev/null");
	else
		snprintf(out, size, "/dev/fd/%d", fd);
	if (fd >= 0)
		fcntl(fd, F_SETFD, 0); /* for diff to open it */
	return fd;
}

/* diff -u of one file, run without a shell; 0, or -errno when diff cannot run. */
static int diff_one(int ws, int upper, const struct change *c)
{
	char a[64], b[64], la[PATH_MAX + 4], lb[PATH_MAX + 4];
	mode_t m = c->kind == CHANGE_DELETED ? c->old_mode : c->mode;
	int fa, fb, st, r = 0;
	pid_t pid;

	if (!S_ISREG(m) || c->kind == CHANGE_MODE)
		return 0;
	fa = side(c->kind == CHANGE_ADDED ? -1 : ws, c->path, a, sizeof(a));
	fb = side(c->kind == CHANGE_DELETED ? -1 : upper, c->path, b, sizeof(b));
	snprintf(la, sizeof(la), "a/%s", c->path);
	snprintf(lb, sizeof(lb), "b/%s", c->path);
	{
		char *args[] = {"diff", "-u", "--label", la, "--label", lb, a, b, NULL};

		fflush(stdout);
		if (posix_spawnp(&pid, "diff", NULL, NULL, args, environ) != 0)
			r = -ENOENT;
		else
			waitpid(pid, &st, 0);
	}
	fd_close(&fa);
	fd_close(&fb);
	return r;
}

static int print_diff(const struct changes_set *cs, const struct change_list *l)
{
	char upper[PATH_MAX + 16];
	_cleanup_close_ int ws = path_open_exact(cs->workspace, O_DIRECTORY), up = -1;

	snprintf(upper, sizeof(upper), "%s/upper", cs->dir);
	up = open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ws < 0 || up < 0) {
		fprintf(stderr, "bpfbox changes: cannot open %s\n", ws < 0 ? cs->workspace : upper);
		return 1;
	}
	for (size_t i = 0; i < l->n; i++) {
		if (diff_one(ws, up, &l->v[i]) < 0) {
			fprintf(stderr, "bpfbox changes: --diff needs diff (diffutils) in PATH\n");
			return 1;
		}
	}
	return 0;
}

int cmd_changes(int argc, char **argv)
{
	bool json = false, diff = false;
	const struct cli_opt opts[] = {{"json", 0, false, &json}, {"diff", 0, false, &diff}, {0}};
	struct changes_set cs;
	char why[PATH_MAX + 128];
	int r = cli_parse(argc, argv, opts, true, changes_usage);

	if (r >= 0)
		return r;
	if (json && diff)
		return cli_usage_error("changes", "give --json or --diff, not both");
	if ((r = open_set("changes", argc, argv, &cs)))
		return r;
	if (streq(cs.state, "applied") || streq(cs.state, "chained")) {
		if (json)
			print_json(&cs, &cs.list);
		else if (cs.child[0])
			printf("change set %s was continued by %s (--changes-from): bpfbox changes "
			       "%s\n",
			       cs.id, cs.child, cs.child);
		else
			printf("change set %s was applied to %s (generation %lu: bpfbox undo %s "
			       "--list)\n",
			       cs.id, cs.workspace, cs.generation, cs.workspace);
		return 0;
	}
	if (changes_scan(&cs, &cs.list, why, sizeof(why)) < 0) {
		fprintf(stderr, "bpfbox changes: %s\n", why);
		return 1;
	}
	if (json) {
		print_json(&cs, &cs.list);
	} else if (diff) {
		r = print_diff(&cs, &cs.list);
	} else {
		for (size_t i = 0; i < cs.list.n; i++) {
			printf("%-8s ", change_kind_name(cs.list.v[i].kind));
			put_path(cs.list.v[i].path);
			putchar('\n');
		}
	}
	change_list_free(&cs.list);
	return r;
}

int cmd_apply(int argc, char **argv)
{
	const struct cli_opt opts[] = {{0}};
	struct changes_set cs;
	int r = cli_parse(argc, argv, opts, true, apply_usage);

	if (r >= 0)
		return r;
	if ((r = open_set("apply", argc, argv, &cs)))
		return r;
	r = changes_apply(&cs);
	change_list_free(&cs.list);
	return r;
}

/* A size for people: 4.0K, 12M. */
static void put_size(char *buf, size_t size, uint64_t b)
{
	const char *u = "BKMGT";

	double v = b;
	while (v >= 1024 && u[1]) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, *u == 'B' ? "%.0f%c" : "%.1f%c", v, *u);
}

static int list_history(const char *ws, bool json)
{
	struct changes_gen *v;
	struct jsonw w = {0};
	uint64_t total = 0;
	char when[RFC3339_MAX], sz[32];
	size_t n;
	int r = changes_history_list(ws, &v, &n);

	if (r < 0) {
		fprintf(stderr, "bpfbox undo: cannot read the history of %s: %s\n", ws,
			strerror(-r));
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		total += v[i].bytes;
	if (json) {
		jsonw_begin(&w);
		jsonw_str(&w, "workspace", ws);
		jsonw_u64(&w, "bytes", total);
		jsonw_u64(&w, "keep_generations",
			  n ? v[n - 1].keep_gens : CHANGES_UNDO_GENERATIONS);
		jsonw_u64(&w, "keep_mb", n ? v[n - 1].keep_mb : CHANGES_UNDO_MB);
		jsonw_array_begin(&w, "generations");
		for (size_t i = 0; i < n; i++) {
			rfc3339(when, sizeof(when), v[i].applied_ns, 0);
			jsonw_object_begin(&w, NULL);
			jsonw_u64(&w, "generation", v[i].n);
			jsonw_str(&w, "changes_id", v[i].id);
			jsonw_str(&w, "applied", when);
			jsonw_u64(&w, "paths", v[i].paths);
			jsonw_u64(&w, "bytes", v[i].bytes);
			jsonw_end(&w);
		}
		jsonw_array_end(&w);
		jsonw_end(&w);
		jsonw_newline(&w);
		fwrite(w.buf, 1, w.len, stdout);
		jsonw_free(&w);
	} else {
		printf("%-5s %-20s %-32s %7s %7s\n", "GEN", "APPLIED", "CHANGE SET", "PATHS",
		       "SIZE");
		for (size_t i = 0; i < n; i++) {
			rfc3339(when, sizeof(when), v[i].applied_ns, 0);
			put_size(sz, sizeof(sz), v[i].bytes);
			printf("%-5lu %-20s %-32s %7llu %7s\n", v[i].n, when, v[i].id,
			       (unsigned long long)v[i].paths, sz);
		}
		put_size(sz, sizeof(sz), total);
		printf("%zu generation%s, %s (kept: the newest %u, up to %llu MB)\n", n,
		       n == 1 ? "" : "s", sz, n ? v[n - 1].keep_gens : CHANGES_UNDO_GENERATIONS,
		       (unsigned long long)(n ? v[n - 1].keep_mb : CHANGES_UNDO_MB));
	}
	free(v);
	return 0;
}

int cmd_undo(int argc, char **argv)
{
	bool list = false, json = false;
	const struct cli_opt opts[] = {{"list", 'l', false, &list}, {"json", 0, false, &json}, {0}};
	char ws[PATH_MAX], *end;
	unsigned long gen = 0;
	int r = cli_parse(argc, argv, opts, true, undo_usage);

	if (r >= 0)
		return r;
	if (optind >= argc)
		return cli_usage_error("undo", "give the workspace");
	if (argc - optind > (list ? 1 : 2))
		return cli_usage_error("undo", "unexpected argument '%s'",
				       argv[optind + (list ? 1 : 2)]);
	if (json && !list)
		return cli_usage_error("undo", "--json goes with --list");
	if (argc - optind == 2) {
		errno = 0;
		gen = strtoul(argv[optind + 1], &end, 10);
		if (errno || *end || !gen || argv[optind + 1][0] == '-')
			return cli_usage_error("undo", "'%s' is not a generation (1, 2, ...)",
					       argv[optind + 1]);
	}
	if (!realpath(argv[optind], ws)) {
		fprintf(stderr, "bpfbox undo: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	return list ? list_history(ws, json) : changes_undo(ws, gen);
}

/*
 * A set whose directory is there without a manifest to read: its start's
 * manifest is not flushed (docs/SECURITY.md, "Change sets"), so a crash
 * during its session can leave that. Removed if no session holds it; 0 or
 * the exit code, or -1: not such a set.
 */
static int discard_orphan(const char *id)
{
	char why[PATH_MAX + 128];
	struct changes_set cs;
	struct stat st;
	int r = changes_open(&cs, id, why, sizeof(why));

	if (r >= 0 || cs.dir[0] != '/' || lstat(cs.dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return -1;
	snprintf(cs.id, sizeof(cs.id), "%s", id);
	if ((r = changes_lock(&cs)) < 0) {
		fprintf(stderr, "bpfbox discard: change set %s %s\n", id,
			r == -EWOULDBLOCK ? "is in use by a running session" : strerror(-r));
		return r == -EWOULDBLOCK ? CHANGES_EXIT_BUSY : 1;
	}
	r = changes_remove(&cs);
	changes_unlock(&cs);
	if (r < 0) {
		fprintf(stderr, "bpfbox discard: cannot remove %s: %s\n", cs.dir, strerror(-r));
		return 1;
	}
	fprintf(stderr,
		"bpfbox discard: change set %s had no readable manifest (a crash during "
		"its session); removed\n",
		id);
	return 0;
}

int cmd_discard(int argc, char **argv)
{
	const struct cli_opt opts[] = {{0}};
	struct changes_set cs;
	int r = cli_parse(argc, argv, opts, true, discard_usage);

	if (r >= 0)
		return r;
	if (optind == argc - 1 && (r = discard_orphan(argv[optind])) >= 0)
		return r;
	if ((r = open_set("discard", argc, argv, &cs)))
		return r;
	if (streq(cs.state, "chained")) {
		fprintf(stderr,
			"bpfbox discard: change set %s was continued by %s (--changes-from); "
			"discard that one\n",
			cs.id, cs.child);
		return CHANGES_EXIT_CONFLICT;
	}
	if ((r = changes_lock(&cs)) < 0) {
		fprintf(stderr, "bpfbox discard: change set %s %s\n", cs.id,
			r == -EWOULDBLOCK ? "is in use by a running session" : strerror(-r));
		return r == -EWOULDBLOCK ? CHANGES_EXIT_BUSY : 1;
	}
	if ((r = changes_remove(&cs)) < 0) {
		fprintf(stderr, "bpfbox discard: cannot remove %s: %s\n", cs.dir, strerror(-r));
		return 1;
	}
	changes_remove_parents(&cs);
	return 0;
}

static void prepare_usage(FILE *out)
{
	fprintf(out,
		"usage: bpfbox prepare WORKSPACE\n"
		"       bpfbox prepare --release WORKSPACE\n"
		"  makes the next review session's change set and overlay of WORKSPACE\n"
		"  ahead (--changes review takes them instead of making them at its\n"
		"  start), kept BPFBOX_CHANGES_WARM seconds (30 by default), as a review\n"
		"  session's end keeps the next one's\n"
		"  --release  what is kept for WORKSPACE let go, and its keepers waited for\n"
		"             (so that the workspace's file system can be unmounted)\n"
		"exit: 0 prepared (or released); 1 an error (nothing prepared); 2 bad usage\n");
}

int cmd_prepare(int argc, char **argv)
{
	bool release = false;
	const struct cli_opt opts[] = {{"release", 0, false, &release}, {0}};
	char ws[PATH_MAX], why[PATH_MAX + 256];
	int r = cli_parse(argc, argv, opts, true, prepare_usage);

	if (r >= 0)
		return r;
	if (optind != argc - 1)
		return cli_usage_error("prepare", "%s",
				       optind >= argc ? "give the workspace"
						      : "give one workspace");
	if (!realpath(argv[optind], ws)) {
		fprintf(stderr, "bpfbox prepare: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	r = release ? changes_release(ws, why, sizeof(why)) : changes_prepare(ws, why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "bpfbox prepare: %s\n", why);
		return 1;
	}
	return 0;
}
