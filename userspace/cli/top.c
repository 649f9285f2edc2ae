// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox top: the daemon's sessions live, in a full-screen ncurses view
 * (docs/top.md), or one snapshot as text or JSON. This file parses the
 * command line; the model (sessions, rates, cgroup samples) and the view
 * (drawing, keys, the loop) are userspace/top/.
 */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "../top/top.h"
#include "../lib/util.h"

static void top_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox top [--socket PATH] [--once | --json] [-d SECONDS]\n"
		     "                  [--sort COLUMN] [--reverse] [--filter TEXT]\n"
		     "  --socket PATH   the daemon's socket (default $BPFBOX_SOCKET or\n"
		     "                  " DAEMON_SOCKET_DEFAULT ")\n"
		     "  --once          print one snapshot as text (rates over one interval)\n"
		     "  --json          print one snapshot as a JSON object\n"
		     "  -d, --delay S   refresh interval in seconds (default 1, 0.2 to 60)\n"
		     "  --sort COLUMN   session, state, level, pids, mem, cpu (default),\n"
		     "                  opens, execs, connects, denials, labels, command,\n"
		     "                  last-denial\n"
		     "  --reverse       reverse the sort order\n"
		     "  --filter TEXT   only sessions whose id, command, state, level or last\n"
		     "                  denial contains TEXT (case-insensitive)\n"
		     "Without a terminal on stdin and stdout, --once is implied.\n"
		     "exit: 0 done; 1 no daemon answers or it refused; 2 bad usage\n");
}

/* Connected to the daemon: the full-screen view, or one snapshot (--once, --json, no tty). */
static int run_top(const char *socket, const char *filter, enum top_col sort, bool reverse,
		   bool once, bool json, double interval)
{
	struct top *t;
	char msg[768];
	int r;

	setlocale(LC_ALL, "");
	t = calloc(1, sizeof(*t));
	if (!t) {
		fprintf(stderr, "bpfbox top: out of memory\n");
		return 1;
	}
	top_init(t, socket);
	t->sort = sort;
	t->reverse = reverse;
	if (filter)
		snprintf(t->filter, sizeof(t->filter), "%s", filter);
	r = top_connect(t, msg, sizeof(msg));
	if (r < 0) {
		fprintf(stderr, "bpfbox top: %s%s\n", msg,
			startswith(msg, "no daemon")
				? "; start one with 'bpfbox daemon' or pass --socket"
				: "");
		top_free(t);
		free(t);
		return 1;
	}
	if (!once && !json && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
		once = true;
	if (!once && !json) {
		r = top_run_ui(t, interval);
		if (r == -ENOTTY) {
			fprintf(stderr,
				"bpfbox top: the terminal (TERM=%s) cannot be drawn on; "
				"one snapshot instead\n",
				getenv("TERM") ? getenv("TERM") : "");
			once = true;
		}
	}
	if (once || json)
		r = top_snapshot(t, interval, json);
	top_free(t);
	free(t);
	return r;
}

static int check_delay(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	char *end;
	double d = strtod(arg, &end);

	if (*end || !(d >= 0.2 && d <= 60)) {
		fprintf(stderr, "bpfbox %s: --delay wants seconds from 0.2 to 60, not '%s'\n", cmd,
			arg);
		return EXIT_USAGE;
	}
	*(double *)opt->dst = d;
	return 0;
}

static int check_sort(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	if (top_col_parse(arg, opt->dst) == 0)
		return 0;
	return cli_usage_error(cmd, "unknown sort column '%s'", arg);
}

int cmd_top(int argc, char **argv)
{
	const char *socket = NULL, *filter = NULL;
	bool once = false, json = false, reverse = false;
	enum top_col sort = TOP_COL_CPU;
	double interval = 1.0;
	const struct cli_opt opts[] = {
		{"socket", 0, true, &socket},
		{"once", 0, false, &once},
		{"json", 0, false, &json},
		{"delay", 'd', true, &interval, check_delay},
		{"sort", 0, true, &sort, check_sort},
		{"reverse", 0, false, &reverse},
		{"filter", 0, true, &filter},
		{0},
	};
	int r = cli_parse(argc, argv, opts, false, top_usage);

	if (r >= 0)
		return r;
	if (filter && strlen(filter) >= TOP_FILTER_MAX) {
		fprintf(stderr, "bpfbox top: --filter is limited to %d bytes\n",
			TOP_FILTER_MAX - 1);
		return EXIT_USAGE;
	}
	return run_top(socket, filter, sort, reverse, once, json, interval);
}
