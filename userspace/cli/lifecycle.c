// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox pause|resume|kill ID: through the daemon's socket (ops pause,
 * resume, kill); for a session no daemon knows (embedded mode), as root on
 * its cgroup directly, where its `bpfbox run` sees the change.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"
#include "../daemon/client.h"
#include "../monitor/control.h"
#include "../lib/util.h"

#define CALL_TIMEOUT_MS 5000

static void usage(FILE *out, const char *cmd)
{
	if (streq(cmd, "resume"))
		fprintf(out, "usage: bpfbox resume ID [--memory MB] [--disk MB] [--socket PATH]\n"
			     "  thaws a paused session, after raising its memory or disk limit\n");
	else
		fprintf(out, "usage: bpfbox %s ID [--socket PATH]\n  %s\n", cmd,
			streq(cmd, "pause") ? "freezes every process of a running session"
					    : "kills every process of a session, paused or not");
	fprintf(out, "  --socket PATH  the daemon's socket (default $BPFBOX_SOCKET or "
		     DAEMON_SOCKET_DEFAULT ")\n"
		     "Without a daemon that knows ID, root acts on the session's cgroup.\n"
		     "exit: 0 done; 1 unknown, ended or not in the right state; 2 bad usage\n");
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
	int r = ctl_session_cgroup(id, cg, sizeof(cg));

	if (r < 0) {
		fprintf(stderr, "bpfbox %s: unknown session %s: %s, and no session cgroup of that "
				"name exists (it has ended or never ran)\n", cmd, id, why_not_daemon);
		return 1;
	}
	if (streq(cmd, "pause"))
		r = ctl_pause(cg, "manual");
	else if (streq(cmd, "resume"))
		r = ctl_resume(cg, mem, disk, &m, &dk);
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
	if (r == -EACCES || r == -EPERM) {
		fprintf(stderr, "bpfbox %s: no permission on %s: %s; run it as root or through "
				"the daemon\n", cmd, cg, strerror(-r));
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "bpfbox %s: cannot %s session %s (%s): %s\n", cmd, cmd, id, cg,
			strerror(-r));
		return 1;
	}
	return say_done(cmd, id, m, dk);
}

static int lifecycle(const char *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "memory", required_argument, NULL, 'm' },
		{ "disk", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long long mem = 0, disk = 0;
	struct daemon_client c;
	const char *sock = NULL, *id;
	char msg[512], why[PATH_MAX + 64];
	int o, r;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'm':
		case 'd':
			if (!streq(cmd, "resume")) {
				fprintf(stderr, "bpfbox %s: --%s is for resume only\n", cmd,
					o == 'm' ? "memory" : "disk");
				return EXIT_USAGE;
			}
			if (parse_u64(optarg, o == 'm' ? &mem : &disk) < 0 ||
			    (o == 'm' ? mem < CTL_MIN_MEMORY_MB : disk < CTL_MIN_DISK_MB) ||
			    (o == 'm' ? mem : disk) > (1ULL << 40)) {
				fprintf(stderr, "bpfbox resume: --%s %s: give a whole number of MB, "
						"at least %d\n", o == 'm' ? "memory" : "disk", optarg,
					o == 'm' ? CTL_MIN_MEMORY_MB : CTL_MIN_DISK_MB);
				return EXIT_USAGE;
			}
			break;
		case 's':
			sock = optarg;
			break;
		case 'h':
			usage(stdout, cmd);
			return 0;
		default:
			fprintf(stderr, "bpfbox %s: unknown or incomplete option '%s'\n", cmd,
				argv[optind - 1]);
			usage(stderr, cmd);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "bpfbox %s: give exactly one session id\n", cmd);
		usage(stderr, cmd);
		return EXIT_USAGE;
	}
	id = argv[optind];
	if (!proto_session_id_valid(id)) {
		fprintf(stderr, "bpfbox %s: '%s' is not a session id (32 lowercase hex digits, "
				"as 'bpfbox sessions' lists them)\n", cmd, id);
		return EXIT_USAGE;
	}
	r = daemon_client_connect(&c, daemon_socket_path(sock), CALL_TIMEOUT_MS);
	if (r < 0) {
		if (sock) {
			fprintf(stderr, "bpfbox %s: no daemon answers on %s: %s\n", cmd, sock,
				strerror(-r));
			return 1;
		}
		snprintf(why, sizeof(why), "no daemon answers on %s", daemon_socket_path(NULL));
		return act_locally(cmd, id, mem, disk, why);
	}
	if (streq(cmd, "pause"))
		r = daemon_pause(&c, id, "manual", 0, -1, NULL, NULL, 0, msg, sizeof(msg));
	else if (streq(cmd, "resume")) {
		int64_t m = mem, dk = disk;

		r = daemon_resume(&c, id, m, dk, &m, &dk, msg, sizeof(msg));
		mem = m;
		disk = dk;
	}
	else
		r = daemon_kill(&c, id, msg, sizeof(msg));
	if (r == 0) {
		daemon_client_close(&c);
		return say_done(cmd, id, mem, disk);
	}
	daemon_client_close(&c);
	/* Unknown to the daemon (not ended there): maybe a session of embedded mode. */
	if ((r == -ENOENT && c.replied) || !c.replied) {
		snprintf(why, sizeof(why), "%s", c.replied ? "the daemon does not know it"
							   : "the daemon did not answer");
		return act_locally(cmd, id, mem, disk, why);
	}
	/* The daemon's message starts with the op's name already. */
	if (!strncmp(msg, cmd, strlen(cmd)) && msg[strlen(cmd)] == ':')
		fprintf(stderr, "bpfbox %s\n", msg);
	else
		fprintf(stderr, "bpfbox %s: %s\n", cmd, msg);
	return 1;
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
