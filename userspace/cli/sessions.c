// SPDX-License-Identifier: GPL-2.0
/* bpfbox sessions: what the daemon runs, as a table or as JSON. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"
#include "../daemon/client.h"
#include "../lib/util.h"

static void sessions_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox sessions [--json] [--socket PATH]\n"
		     "  --json          a JSON array, one object per session\n"
		     "  --socket PATH   the daemon's socket (default $BPFBOX_SOCKET or\n"
		     "                  " DAEMON_SOCKET_DEFAULT ")\n"
		     "exit: 0 listed; 1 no daemon answers or it refused; 2 bad usage\n");
}

static const char *member_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : "-";
}

/* The command as one line, cut to width. */
static void command_line(struct json_object *o, char *buf, size_t size)
{
	struct json_object *cmd;
	size_t len = 0;

	buf[0] = '\0';
	if (!json_object_object_get_ex(o, "command", &cmd) ||
	    !json_object_is_type(cmd, json_type_array)) {
		snprintf(buf, size, "-");
		return;
	}
	for (size_t i = 0; i < json_object_array_length(cmd) && len < size - 1; i++)
		len += snprintf(buf + len, size - len, "%s%s", i ? " " : "",
				json_object_get_string(json_object_array_get_idx(cmd, i)));
	term_clean(buf, size, buf);
}

/* The labels as KEY=VALUE,..., cut to width; "-" when none. */
static void labels_line(struct json_object *o, char *buf, size_t size)
{
	struct json_object *lb;
	size_t len = 0;

	snprintf(buf, size, "-");
	if (!json_object_object_get_ex(o, "labels", &lb) ||
	    !json_object_is_type(lb, json_type_object))
		return;
	json_object_object_foreach (lb, k, v) {
		if (len >= size - 1)
			break;
		len += snprintf(buf + len, size - len, "%s%s=%s", len ? "," : "", k,
				json_object_get_string(v));
	}
	term_clean(buf, size, buf);
}

static void print_table(struct json_object *list)
{
	size_t n = json_object_array_length(list);

	if (!n) {
		printf("no sessions\n");
		return;
	}
	printf("%-32s  %-10s  %7s  %5s  %-20s  %8s  %5s  %-24s  %s\n", "SESSION", "STATE", "PID",
	       "UID", "STARTED", "RECORDS", "LOST", "LABELS", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(list, i);
		char cmd[64], labels[25];

		command_line(s, cmd, sizeof(cmd));
		labels_line(s, labels, sizeof(labels));
		printf("%-32s  %-10s  %7s  %5s  %-20s  %8s  %5s  %-24s  %s\n",
		       member_str(s, "session"), member_str(s, "state"), member_str(s, "pid"),
		       member_str(s, "uid"), member_str(s, "start_time"), member_str(s, "records"),
		       member_str(s, "lost"), labels, cmd);
	}
}

int cmd_sessions(int argc, char **argv)
{
	struct json_object *list;
	const char *socket = NULL, *path;
	struct daemon_client c;
	bool json = false;
	char msg[512];
	const struct cli_opt opts[] = {
		{"json", 0, false, &json}, {"socket", 0, true, &socket}, {0}};
	int r = cli_parse(argc, argv, opts, false, sessions_usage);

	if (r >= 0)
		return r;
	if (cli_connect(&c, "sessions", socket, 5000, NULL) < 0)
		return 1;
	path = daemon_socket_path(socket);
	r = daemon_list(&c, &list, msg, sizeof(msg));
	daemon_client_close(&c);
	if (r < 0) {
		fprintf(stderr, "bpfbox sessions: the daemon on %s: %s\n", path, msg);
		return 1;
	}
	if (json)
		printf("%s\n",
		       json_object_to_json_string_ext(
			       list, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	else
		print_table(list);
	json_object_put(list);
	return 0;
}
