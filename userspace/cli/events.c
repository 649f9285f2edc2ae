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

/* --type exec,file: each name checked here, so that the error is ours. */
static int check_types(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf)) {
		fprintf(stderr, "bpfbox %s: --type is limited to %zu bytes\n", cmd,
			sizeof(buf) - 1);
		return EXIT_USAGE;
	}
	snprintf(buf, sizeof(buf), "%s", arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (ev_kind_parse(tok) < 0) {
			fprintf(stderr,
				"bpfbox %s: --type %s: unknown event type; use some of: %s\n", cmd,
				tok, ev_kind_list());
			return EXIT_USAGE;
		}
		json_object_array_add(opt->dst, json_object_new_string(tok));
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

/* Subscribes to session's events (every session: NULL) of types; says why not. */
static int subscribe(struct daemon_client *c, const char *path, const char *session,
		     struct json_object *types)
{
	char msg[512];
	int r = daemon_subscribe(c, session, types, msg, sizeof(msg));

	if (r == -DAEMON_ENDED) {
		fprintf(stderr,
			"bpfbox events: session %s has already ended; its events are in "
			"the daemon's sinks\n",
			session);
		return r;
	}
	if (r == -ENOENT && session) {
		fprintf(stderr,
			"bpfbox events: the daemon on %s runs no session %s (it ended or "
			"never started); its events are in the daemon's sinks\n",
			path, session);
		return r;
	}
	if (r < 0)
		fprintf(stderr, "bpfbox events: the daemon on %s: %s\n", path, msg);
	return r;
}

/* The subscribed stream printed until it ends, or is quiet for idle_ms (not --follow). */
static int stream_events(struct daemon_client *c, const char *path, enum sink_format fmt,
			 bool follow, int idle_ms)
{
	char hostname[256] = "localhost";
	struct jsonw w = {0};
	int r, code = 1;

	if (gethostname(hostname, sizeof(hostname) - 1) < 0)
		snprintf(hostname, sizeof(hostname), "localhost");
	for (;;) {
		char *line;
		size_t len;

		r = daemon_client_read_line(c, &line, &len, follow ? 60000 : idle_ms);
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
	jsonw_free(&w);
	return code;
}

static int check_session(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	if (!proto_session_id_valid(arg)) {
		fprintf(stderr,
			"bpfbox %s: --session %s: give a session id (32 lowercase hex digits; see "
			"'bpfbox sessions')\n",
			cmd, arg);
		return EXIT_USAGE;
	}
	*(const char **)opt->dst = arg;
	return 0;
}

static int check_format(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	if (sink_format_parse(arg, opt->dst) == 0)
		return 0;
	fprintf(stderr, "bpfbox %s: --format %s: use json, ocsf or text\n", cmd, arg);
	return EXIT_USAGE;
}

static int check_idle(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	unsigned long long s;

	if (parse_u64(arg, &s) < 0 || s < 1 || s > 86400) {
		fprintf(stderr, "bpfbox %s: --idle %s: give whole seconds from 1 to 86400\n", cmd,
			arg);
		return EXIT_USAGE;
	}
	*(int *)opt->dst = s * 1000;
	return 0;
}

int cmd_events(int argc, char **argv)
{
	struct json_object *types = json_object_new_array();
	const char *socket = NULL, *session = NULL, *path;
	enum sink_format fmt = SINK_FMT_JSON;
	int idle_ms = IDLE_DEFAULT_MS, code;
	struct daemon_client c = {.fd = -1};
	bool follow = false;
	const struct cli_opt opts[] = {
		{"follow", 'f', false, &follow},
		{"session", 0, true, &session, check_session},
		{"type", 0, true, types, check_types},
		{"format", 0, true, &fmt, check_format},
		{"idle", 0, true, &idle_ms, check_idle},
		{"socket", 0, true, &socket},
		{0},
	};

	code = cli_parse(argc, argv, opts, false, events_usage);
	if (code >= 0)
		goto out;
	code = 1;
	path = daemon_socket_path(socket);
	if (cli_connect(&c, "events", socket, 5000, NULL) < 0)
		goto out;
	if (subscribe(&c, path, session, types) < 0)
		goto out;
	code = stream_events(&c, path, fmt, follow, idle_ms);
out:
	fflush(stdout);
	daemon_client_close(&c);
	json_object_put(types);
	return code;
}
