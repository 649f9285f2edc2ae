// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox events: the daemon's live event stream through its subscribe op,
 * filtered by session and type, as JSON lines, OCSF or text. The daemon
 * keeps no history: this shows what happens from now on (the sinks hold
 * the past, docs/sinks.md).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "../audit/sink.h"
#include "../daemon/client.h"
#include "../lib/jsonw.h"
#include "../lib/util.h"

#define IDLE_DEFAULT_MS 1000

static void events_usage(FILE *out)
{
	fprintf(out,
		"usage: bpfbox events [OPTIONS]\n"
		"  -f, --follow          print events until interrupted (with --session:\n"
		"                        until that session ends)\n"
		"  --session ID          only that session's events, its session.start first\n"
		"  --type T[,T...]       only these types (repeatable), of:\n"
		"                        %s\n"
		"  --format F            json (default: the lines of docs/events.md), ocsf\n"
		"                        (docs/ocsf.md) or text\n"
		"  --idle SECONDS        without --follow: stop once no event came for this\n"
		"                        long (default 1; the daemon keeps no history)\n"
		"  --socket PATH         the daemon's socket (default $BPFBOX_SOCKET or\n"
		"                        " DAEMON_SOCKET_DEFAULT ")\n"
		"exit: 0 done; 1 no daemon answers, it refused, or no such session; 2 bad usage\n",
		ev_kind_list());
}

static const struct option events_opts[] = {
	{"follow", no_argument, NULL, 'f'},	{"session", required_argument, NULL, 'S'},
	{"type", required_argument, NULL, 't'}, {"format", required_argument, NULL, 'F'},
	{"idle", required_argument, NULL, 'i'}, {"socket", required_argument, NULL, 's'},
	{"help", no_argument, NULL, 'h'},	{0},
};

/* --type exec,file: each name checked here, so that the error is ours. */
static int add_types(struct json_object *types, const char *arg)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (ev_kind_parse(tok) < 0) {
			fprintf(stderr,
				"bpfbox events: --type %s: unknown event type; use some of: "
				"%s\n",
				tok, ev_kind_list());
			return -EINVAL;
		}
		json_object_array_add(types, json_object_new_string(tok));
	}
	return 0;
}

static void print_event(enum sink_format fmt, const char *line, size_t len, const char *hostname,
			struct jsonw *w)
{
	struct json_object *o;

	if (fmt == SINK_FMT_JSON) {
		fwrite(line, 1, len, stdout);
		fputc('\n', stdout);
		return;
	}
	o = json_tokener_parse(line);
	jsonw_reset(w);
	if (o && sink_format_event(fmt, -1, o, hostname, w) == 0 && !w->oom)
		fwrite(w->buf, 1, w->len, stdout);
	else
		fprintf(stderr, "bpfbox events: the daemon sent a line that is not an event\n");
	json_object_put(o);
}

int cmd_events(int argc, char **argv)
{
	struct json_object *types = json_object_new_array();
	const char *socket = NULL, *session = NULL, *path;
	enum sink_format fmt = SINK_FMT_JSON;
	unsigned long long idle_s;
	int idle_ms = IDLE_DEFAULT_MS, opt, r, code = EXIT_USAGE;
	char msg[512], hostname[256] = "localhost";
	struct daemon_client c = {.fd = -1};
	struct jsonw w = {0};
	bool follow = false;

	while ((opt = getopt_long(argc, argv, "fh", events_opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			follow = true;
			break;
		case 'S':
			if (!proto_session_id_valid(optarg)) {
				fprintf(stderr,
					"bpfbox events: --session %s: give a session id (32 "
					"lowercase hex digits; see 'bpfbox sessions')\n",
					optarg);
				goto out;
			}
			session = optarg;
			break;
		case 't':
			if (add_types(types, optarg) < 0)
				goto out;
			break;
		case 'F':
			if (sink_format_parse(optarg, &fmt) < 0) {
				fprintf(stderr,
					"bpfbox events: --format %s: use json, ocsf or text\n",
					optarg);
				goto out;
			}
			break;
		case 'i':
			if (parse_u64(optarg, &idle_s) < 0 || idle_s < 1 || idle_s > 86400) {
				fprintf(stderr,
					"bpfbox events: --idle %s: give whole seconds from 1 "
					"to 86400\n",
					optarg);
				goto out;
			}
			idle_ms = idle_s * 1000;
			break;
		case 's':
			socket = optarg;
			break;
		default:
			code = cli_help_or_bad(opt, "events", argv, events_usage);
			goto out;
		}
	}
	if (cli_extra_args("events", argc, argv))
		goto out;
	code = 1;
	path = daemon_socket_path(socket);
	if (cli_connect(&c, "events", socket, 5000, NULL) < 0)
		goto out;
	r = daemon_subscribe(&c, session, types, msg, sizeof(msg));
	if (r == -DAEMON_ENDED) {
		fprintf(stderr,
			"bpfbox events: session %s has already ended; its events are in "
			"the daemon's sinks\n",
			session);
		goto out;
	}
	if (r == -ENOENT && session) {
		fprintf(stderr,
			"bpfbox events: the daemon on %s runs no session %s (it ended or "
			"never started); its events are in the daemon's sinks\n",
			path, session);
		goto out;
	}
	if (r < 0) {
		fprintf(stderr, "bpfbox events: the daemon on %s: %s\n", path, msg);
		goto out;
	}
	if (gethostname(hostname, sizeof(hostname) - 1) < 0)
		snprintf(hostname, sizeof(hostname), "localhost");
	for (;;) {
		char *line;
		size_t len;

		r = daemon_client_read_line(&c, &line, &len, follow ? 60000 : idle_ms);
		if (r == -EAGAIN && follow)
			continue;
		if (r == -EAGAIN || r == 0) {
			/* Quiet for --idle, or the daemon ended the stream (the session ended). */
			code = 0;
			break;
		}
		if (r < 0) {
			fprintf(stderr, "bpfbox events: reading from the daemon on %s: %s\n", path,
				strerror(-r));
			break;
		}
		print_event(fmt, line, len, hostname, &w);
		if (follow)
			fflush(stdout);
	}
out:
	fflush(stdout);
	daemon_client_close(&c);
	json_object_put(types);
	jsonw_free(&w);
	return code;
}
