// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox pause|resume|kill ID: through the daemon's socket (ops pause,
 * resume, kill); for a session no daemon knows (embedded mode), as root on
 * its cgroup directly, where its `bpfbox run` sees the change. bpfbox
 * answer ID ASK-ID WORD: the daemon's answer op (docs/runtime.md).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"
#include "../daemon/client.h"
#include "../monitor/control.h"
#include "../lib/cgroup.h"
#include "../lib/util.h"

#define CALL_TIMEOUT_MS 5000

static void usage(FILE *out, const char *cmd)
{
	if (streq(cmd, "resume"))
		fprintf(out,
			"usage: bpfbox resume ID [--memory MB] [--disk MB] [--socket PATH]\n"
			"  thaws a paused session, after raising its memory or disk limit; an ask\n"
			"  whose answerer is gone is denied first (its process killed)\n");
	else
		fprintf(out, "usage: bpfbox %s ID [--socket PATH]\n  %s\n", cmd,
			streq(cmd, "pause") ? "freezes every process of a running session"
					    : "kills every process of a session, paused or not");
	fprintf(out, "  --socket PATH  the daemon's socket (default $BPFBOX_SOCKET "
		     "or " DAEMON_SOCKET_DEFAULT ")\n"
		     "Without a daemon that knows ID, root acts on the session's cgroup.\n"
		     "exit: 0 done; 1 unknown, ended, not in the right state, or (resume) held by\n"
		     "an ask whose answerer is gone and whose process is unknown; 2 bad usage\n");
}

static int say_done(const char *cmd, const char *id, uint64_t mem, uint64_t disk)
{
	if (streq(cmd, "resume"))
		printf("session %s resumed (memory %llu MB, disk %llu MB)\n", id,
		       (unsigned long long)mem, (unsigned long long)disk);
	else
		printf("session %s %s\n", id, streq(cmd, "pause") ? "paused" : "killed");
	return 0;
}

/* A session of embedded mode: its cgroup, written directly (root). */
static int act_locally(const char *cmd, const char *id, uint64_t mem, uint64_t disk,
		       const char *why_not_daemon)
{
	char cg[PATH_MAX];
	uint64_t m = 0, dk = 0;
	struct ctl_asked asked[CTL_ASK_MAX];
	long holder = 0;
	int r = ctl_session_cgroup(id, cg, sizeof(cg));

	if (r < 0) {
		fprintf(stderr,
			"bpfbox %s: unknown session %s: %s, and no session cgroup of that "
			"name exists (it has ended or never ran)\n",
			cmd, id, why_not_daemon);
		return 1;
	}
	if (streq(cmd, "pause"))
		r = ctl_pause(cg, "manual");
	else if (streq(cmd, "resume"))
		r = ctl_resume(cg, mem, disk, &m, &dk, asked, CTL_ASK_MAX, &holder);
	else
		r = ctl_kill(cg);
	if (r == -EALREADY) {
		fprintf(stderr, "bpfbox pause: session %s is already paused\n", id);
		return 1;
	}
	if (r == -EINVAL && streq(cmd, "resume")) {
		fprintf(stderr, "bpfbox resume: session %s is running, not paused\n", id);
		return 1;
	}
	/* As the daemon says it (ops_session.c): the thaw would release the stopped exec. */
	if (r == -EBUSY && streq(cmd, "resume")) {
		fprintf(stderr,
			"bpfbox resume: session %s waits for the answer to a command rule's ask; "
			"answer it (its --ask-fd) or let it time out, then resume\n",
			id);
		return 1;
	}
	/* Fail closed (docs/SECURITY.md): nobody will answer it, nor can it be denied alone. */
	if (r == -EOWNERDEAD && streq(cmd, "resume")) {
		fprintf(stderr,
			"bpfbox resume: session %s waits for a command rule's ask whose answerer "
			"(pid %ld) is gone and whose process is unknown; kill the session "
			"(bpfbox kill %s)\n",
			id, holder, id);
		return 1;
	}
	for (int i = 0; streq(cmd, "resume") && i < r && i < CTL_ASK_MAX; i++)
		fprintf(stderr,
			"bpfbox resume: session %s: the exec of %s (pid %d) waited for an ask "
			"whose answerer (pid %ld) is gone: denied, killed\n",
			id, asked[i].file[0] ? asked[i].file : "(unknown)", (int)asked[i].pid,
			holder);
	if (r == -EACCES || r == -EPERM) {
		fprintf(stderr,
			"bpfbox %s: no permission on %s: %s; run it as root or through "
			"the daemon\n",
			cmd, cg, strerror(-r));
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "bpfbox %s: cannot %s session %s (%s): %s\n", cmd, cmd, id, cg,
			strerror(-r));
		return 1;
	}
	return say_done(cmd, id, m, dk);
}

/* Adds id to the candidates when it starts with prefix and is new. */
static void candidate(const char *id, const char *prefix, char found[][33], int *n)
{
	if (!proto_session_id_valid(id) || strncmp(id, prefix, strlen(prefix)))
		return;
	for (int i = 0; i < *n && i < 2; i++)
		if (streq(found[i], id))
			return;
	if (*n < 2)
		snprintf(found[*n], 33, "%s", id);
	(*n)++;
}

/*
 * A unique prefix (4 to 32 hex digits, as 'bpfbox sessions', stderr and the
 * status channel show them) into the whole id: the daemon's sessions and
 * the session cgroups of embedded mode. 0, or an exit code (printed).
 */
int cli_resolve_id(const char *cmd, const char *sock, const char *prefix, char *id)
{
	struct json_object *req, *reply = NULL, *list, *v;
	struct daemon_client c;
	char found[2][33], parent[PATH_MAX], msg[256];
	int n = 0;
	size_t len = strlen(prefix);
	DIR *d;

	for (size_t i = 0; i < len; i++)
		if (!((prefix[i] >= '0' && prefix[i] <= '9') ||
		      (prefix[i] >= 'a' && prefix[i] <= 'f')))
			len = 0;
	if (len < 4 || len > 32) {
		fprintf(stderr,
			"bpfbox %s: '%s' is not a session id (4 to 32 lowercase hex digits "
			"of one, as 'bpfbox sessions' lists them)\n",
			cmd, prefix);
		return EXIT_USAGE;
	}
	if (len == 32) {
		snprintf(id, 33, "%s", prefix);
		return 0;
	}
	if (daemon_client_connect(&c, daemon_socket_path(sock), CALL_TIMEOUT_MS) == 0) {
		req = json_object_new_object();
		json_object_object_add(req, "op", json_object_new_string("list"));
		if (daemon_client_call(&c, req, &reply, msg, sizeof(msg)) == 0 &&
		    json_object_object_get_ex(reply, "sessions", &list) &&
		    json_object_is_type(list, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(list); i++)
				if (json_object_object_get_ex(json_object_array_get_idx(list, i),
							      "session", &v))
					candidate(json_object_get_string(v), prefix, found, &n);
		}
		json_object_put(req);
		json_object_put(reply);
		daemon_client_close(&c);
	}
	if (cgroup_parent(parent, sizeof(parent)) == 0 && (d = opendir(parent))) {
		struct dirent *e;

		while ((e = readdir(d)))
			candidate(e->d_name, prefix, found, &n);
		closedir(d);
	}
	if (n == 1) {
		snprintf(id, 33, "%s", found[0]);
		return 0;
	}
	if (n == 0)
		fprintf(stderr, "bpfbox %s: no running session's id starts with %s\n", cmd, prefix);
	else
		fprintf(stderr,
			"bpfbox %s: %d sessions' ids start with %s (%s, %s%s); give more "
			"digits\n",
			cmd, n, prefix, found[0], found[1], n > 2 ? ", ..." : "");
	return 1;
}

/* What pause, resume and kill were given besides the session id. */
struct lc_args {
	uint64_t mem, disk; /* resume's new limits, in MB; 0: unchanged */
	const char *sock;
};

/* The options; -1 to go on (the id at argv[optind]), else the exit code. */
static int lc_parse(const char *cmd, int argc, char **argv, struct lc_args *a)
{
	static const struct option opts[] = {
		{"memory", required_argument, NULL, 'm'},
		{"disk", required_argument, NULL, 'd'},
		{"socket", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int o;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		uint64_t *mb = o == 'm' ? &a->mem : &a->disk;

		switch (o) {
		case 'm':
		case 'd':
			if (!streq(cmd, "resume")) {
				fprintf(stderr, "bpfbox %s: --%s is for resume only\n", cmd,
					o == 'm' ? "memory" : "disk");
				return EXIT_USAGE;
			}
			if (parse_size_mb(optarg, mb) < 0 ||
			    *mb < (o == 'm' ? CTL_MIN_MEMORY_MB : CTL_MIN_DISK_MB) ||
			    *mb > (1ULL << 40)) {
				fprintf(stderr,
					"bpfbox resume: --%s %s: give a size in MB (512) "
					"or with a unit (512M, 2G), at least %d MB\n",
					o == 'm' ? "memory" : "disk", optarg,
					o == 'm' ? CTL_MIN_MEMORY_MB : CTL_MIN_DISK_MB);
				return EXIT_USAGE;
			}
			break;
		case 's':
			a->sock = optarg;
			break;
		case 'h':
			usage(stdout, cmd);
			return 0;
		default:
			return cli_bad_option(cmd, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "bpfbox %s: give exactly one session id\n", cmd);
		usage(stderr, cmd);
		return EXIT_USAGE;
	}
	return -1;
}

/* The op through the daemon; on the cgroup when no daemon knows the session. */
static int lc_act(const char *cmd, const char *id, struct lc_args *a)
{
	struct daemon_client c;
	char msg[512], why[PATH_MAX + 64];
	int r = daemon_client_connect(&c, daemon_socket_path(a->sock), CALL_TIMEOUT_MS);

	if (r < 0) {
		if (a->sock) {
			fprintf(stderr, "bpfbox %s: no daemon answers on %s: %s\n", cmd, a->sock,
				strerror(-r));
			return 1;
		}
		snprintf(why, sizeof(why), "no daemon answers on %s", daemon_socket_path(NULL));
		return act_locally(cmd, id, a->mem, a->disk, why);
	}
	if (streq(cmd, "pause")) {
		r = daemon_pause(&c, id, "manual", 0, -1, NULL, NULL, 0, msg, sizeof(msg));
	} else if (streq(cmd, "resume")) {
		int64_t m = a->mem, dk = a->disk;

		r = daemon_resume(&c, id, m, dk, &m, &dk, msg, sizeof(msg));
		a->mem = m;
		a->disk = dk;
	} else {
		r = daemon_kill(&c, id, msg, sizeof(msg));
	}
	daemon_client_close(&c);
	if (r == 0)
		return say_done(cmd, id, a->mem, a->disk);
	/* Unknown to the daemon (not ended there): maybe a session of embedded mode. */
	if ((r == -ENOENT && c.replied) || !c.replied) {
		snprintf(why, sizeof(why), "%s",
			 c.replied ? "the daemon does not know it" : "the daemon did not answer");
		return act_locally(cmd, id, a->mem, a->disk, why);
	}
	/* The daemon's message starts with the op's name already. */
	if (!strncmp(msg, cmd, strlen(cmd)) && msg[strlen(cmd)] == ':')
		fprintf(stderr, "bpfbox %s\n", msg);
	else
		fprintf(stderr, "bpfbox %s: %s\n", cmd, msg);
	return 1;
}

static int lifecycle(const char *cmd, int argc, char **argv)
{
	struct lc_args a = {0};
	char id[33];
	int r = lc_parse(cmd, argc, argv, &a);

	if (r >= 0)
		return r;
	r = cli_resolve_id(cmd, a.sock, argv[optind], id);
	return r ? r : lc_act(cmd, id, &a);
}

int cmd_pause(int argc, char **argv)
{
	return lifecycle("pause", argc, argv);
}

int cmd_resume(int argc, char **argv)
{
	return lifecycle("resume", argc, argv);
}

int cmd_kill(int argc, char **argv)
{
	return lifecycle("kill", argc, argv);
}

static void answer_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox answer ID ASK-ID approve|always|deny [--socket PATH]\n"
		     "  answers a command rule's ask of a daemon's session (session.ask \"id\"):\n"
		     "  approve runs the exec once, always allows its rule for the rest of the\n"
		     "  session, deny kills it\n"
		     "  --socket PATH  the daemon's socket (default $BPFBOX_SOCKET "
		     "or " DAEMON_SOCKET_DEFAULT ")\n"
		     "Root may answer any session, a member of the daemon's group its own uid's.\n"
		     "exit: 0 answered; 1 no daemon, unknown session, or no open ask of that id\n"
		     "(answered already, timed out); 2 bad usage\n");
}

int cmd_answer(int argc, char **argv)
{
	struct daemon_client c;
	const char *sock = NULL, *word;
	const struct cli_opt opts[] = {{"socket", 0, true, &sock}, {0}};
	char msg[512], id[33];
	unsigned long long ask_id;
	int r = cli_parse(argc, argv, opts, true, answer_usage);

	if (r >= 0)
		return r;
	if (optind != argc - 3)
		return cli_usage_error("answer", "give a session id, an ask id and an answer");
	word = argv[optind + 2];
	if (parse_u64(argv[optind + 1], &ask_id) < 0 || !ask_id)
		return cli_usage_error("answer",
				       "'%s' is not an ask id (the \"id\" of the session.ask line, "
				       "a positive number)",
				       argv[optind + 1]);
	if (!streq(word, "approve") && !streq(word, "always") && !streq(word, "deny"))
		return cli_usage_error("answer", "'%s': answer approve, always or deny", word);
	r = cli_resolve_id("answer", sock, argv[optind], id);
	if (r)
		return r;
	if (cli_connect(&c, "answer", sock, CALL_TIMEOUT_MS,
			"a session of embedded mode takes its answers on its --ask-fd") < 0)
		return 1;
	r = daemon_answer(&c, id, ask_id, word, msg, sizeof(msg));
	daemon_client_close(&c);
	if (r < 0) {
		fprintf(stderr, "bpfbox %s\n", msg);
		return 1;
	}
	printf("session %s: ask %llu answered %s\n", id, ask_id, word);
	return 0;
}
