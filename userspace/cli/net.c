// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox net ID allow|deny|remove RULE: changes the network rules of a
 * session the daemon runs (op net, docs/network.md), e.g. an operator
 * approving a domain while the agent waits.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"
#include "../daemon/client.h"
#include "../lib/util.h"

#define CALL_TIMEOUT_MS 5000

static void usage(FILE *out)
{
	fprintf(out, "usage: bpfbox net ID allow|deny|remove RULE [--socket PATH]\n"
		     "  changes the network rules of a running session of the "
		     "daemon\n"
		     "  RULE: HOST[:PORT[-PORT]], HOST a name (pypi.org), "
		     "*.wildcard, ADDR or ADDR/LEN\n"
		     "  allow   add RULE to net_allow (names need a session started "
		     "with one)\n"
		     "  deny    add RULE to net_deny\n"
		     "  remove  drop a name rule added before (address rules stay)\n"
		     "  --socket PATH  the daemon's socket (default $BPFBOX_SOCKET "
		     "or " DAEMON_SOCKET_DEFAULT ")\n"
		     "exit: 0 done; 1 refused or no daemon; 2 bad usage\n");
}

int cmd_net(int argc, char **argv)
{
	struct json_object *req, *reply = NULL;
	struct daemon_client c;
	const char *sock = NULL, *action, *rule;
	char id[33];
	const struct cli_opt opts[] = {{"socket", 0, true, &sock}, {0}};
	char msg[512];
	int r = cli_parse(argc, argv, opts, true, usage);

	if (r >= 0)
		return r;
	if (optind != argc - 3) {
		fprintf(stderr, "bpfbox net: give a session id, an action and "
				"a rule\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	action = argv[optind + 1];
	rule = argv[optind + 2];
	if (!streq(action, "allow") && !streq(action, "deny") && !streq(action, "remove")) {
		fprintf(stderr,
			"bpfbox net: unknown action '%s'; use allow, deny or "
			"remove\n",
			action);
		return EXIT_USAGE;
	}
	/* An id prefix, as pause, resume and kill take it. */
	r = cli_resolve_id("net", sock, argv[optind], id);
	if (r)
		return r;
	if (cli_connect(&c, "net", sock, CALL_TIMEOUT_MS,
			"rules of an embedded session are fixed when it starts") < 0)
		return 1;
	req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("net"));
	json_object_object_add(req, "session", json_object_new_string(id));
	json_object_object_add(req, "action", json_object_new_string(action));
	json_object_object_add(req, "rule", json_object_new_string(rule));
	r = daemon_client_call(&c, req, &reply, msg, sizeof(msg));
	json_object_put(req);
	json_object_put(reply);
	daemon_client_close(&c);
	if (r < 0) {
		if (!strncmp(msg, "net:", 4))
			fprintf(stderr, "bpfbox %s\n", msg);
		else
			fprintf(stderr, "bpfbox net: %s\n", msg);
		return 1;
	}
	printf("session %s: net %s %s\n", id, action, rule);
	return 0;
}
