// SPDX-License-Identifier: GPL-2.0
/* bpfbox daemon: serve sessions over a unix socket, or clean up after it. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"
#include "bpfbox/events.h"
#include "../audit/sink.h"
#include "../daemon/proto.h"
#include "../daemon/client.h"
#include "../daemon/config.h"
#include "../daemon/server.h"
#include "../lib/log.h"
#include "../lib/ratelimit.h"
#include "../lib/util.h"

static void daemon_usage(FILE *out)
{
	fprintf(out,
		"usage: bpfbox daemon [OPTIONS]\n"
		"  --socket PATH         where to listen (default " DAEMON_SOCKET_DEFAULT ")\n"
		"  --group NAME          a group allowed to use the socket besides root\n"
		"  --audit FILE|-        append the events of every session to FILE\n"
		"                        (default: stdout, unless --sink or --config names sinks)\n"
		"  --sink SPEC           one more sink (repeatable), e.g.\n"
		"                          file:/var/log/bpfbox/audit.jsonl?rotate=100M&keep=5\n"
		"                          syslog+tcp://127.0.0.1:5514?format=ocsf\n"
		"                          syslog+udp://HOST:PORT, stdout?format=text\n"
		"  --config FILE         a JSON file whose \"sinks\" array lists more specs\n"
		"  --pin-dir DIR         where programs, links and maps are pinned\n"
		"                        (default " DAEMON_PIN_DIR_DEFAULT ")\n"
		"  --cgroup-parent DIR   where session cgroups are made (default\n"
		"                        $BPFBOX_CGROUP_PARENT or <cgroup2>/bpfbox)\n"
		"  --audit-ring BYTES    ring buffer size when it is first created\n"
		"  --max-conns-per-uid N connections one uid (not root) may hold (default 256);\n"
		"                        past it, and past 960 in all, a client is told busy\n"
		"  --max-sessions-per-uid N\n"
		"                        sessions one uid (not root) may run (default 256)\n"
		"  --audit-argv BYTES    argv bytes kept per exec, 64 to 4096 (default 4096;\n"
		"                        fixed once the programs are pinned)\n"
		"  --audit-rate N[/BURST] records a second one session may write (default\n"
		"                        5000/20000; 0: no limit); the rest are counted\n"
		"  --metrics ADDR        serve Prometheus metrics on http://ADDR/metrics and a\n"
		"                        health check on /healthz (HOST:PORT, [IPV6]:PORT or\n"
		"                        :PORT; docs/operating.md)\n"
		"  --bpf-stats           have the kernel count the programs' run time while\n"
		"                        the daemon runs (bpfbox_bpf_program_*; costs a few\n"
		"                        ns per program run)\n"
		"  --cleanup             kill the pinned sessions, remove pins, links and\n"
		"                        session cgroups, then exit (no daemon may run)\n"
		"  --check               check the options and --config, then exit\n"
		"  --config FILE also takes \"ceilings\" and \"policies\" (docs/operating.md)\n"
		"Runs in the foreground until SIGTERM or SIGINT; the pins stay so that\n"
		"sessions stay enforced, and the next start re-adopts them. SIGHUP, or\n"
		"'bpfbox daemon reload', reads --config again (sinks, ceilings; the audit\n"
		"files are opened again). See docs/daemon.md, docs/sinks.md, docs/operating.md.\n"
		"exit: 0 stopped cleanly; 1 could not start or clean up; 2 bad usage or sink\n"
		"      configuration\n");
}

/* The --sink options given so far. */
struct sink_list {
	struct sink_config *v;
	size_t n;
};

/* --sink SPEC: one more entry of the sink_list. */
static int check_sink(const char *cmd, const struct cli_opt *opt, const char *spec)
{
	struct sink_list *l = opt->dst;
	struct sink_config *nv = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	char err[PATH_MAX + 512];

	if (!nv) {
		fprintf(stderr, "bpfbox %s: out of memory\n", cmd);
		return EXIT_USAGE;
	}
	l->v = nv;
	if (sink_config_parse(spec, &nv[l->n], err, sizeof(err)) < 0) {
		fprintf(stderr, "bpfbox %s: --sink '%s': %s; see docs/sinks.md\n", cmd, spec, err);
		return EXIT_USAGE;
	}
	l->n++;
	return 0;
}

/* --audit-ring BYTES: a power of two from 4096 to 1 GiB. */
static int check_ring(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	unsigned long long v;

	if (parse_u64(arg, &v) < 0 || v < 4096 || v > (1ULL << 30) || (v & (v - 1))) {
		fprintf(stderr, "bpfbox %s: --%s %s: give a power of two from 4096 to 1073741824\n",
			cmd, opt->name, arg);
		return EXIT_USAGE;
	}
	*(uint32_t *)opt->dst = v;
	return 0;
}

static int check_argv_max(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	unsigned long long v;

	if (parse_u64(arg, &v) < 0 || v < 64 || v > BPFBOX_ARGV_LEN) {
		fprintf(stderr, "bpfbox %s: --%s %s: give bytes from 64 to %d\n", cmd, opt->name,
			arg, BPFBOX_ARGV_LEN);
		return EXIT_USAGE;
	}
	*(uint32_t *)opt->dst = v;
	return 0;
}

/* --max-conns-per-uid, --max-sessions-per-uid: 1 to 4096. */
static int check_per_uid(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	unsigned long long v;

	if (parse_u64(arg, &v) < 0 || v < 1 || v > 4096) {
		fprintf(stderr, "bpfbox %s: --%s %s: give a number from 1 to 4096\n", cmd,
			opt->name, arg);
		return EXIT_USAGE;
	}
	*(unsigned int *)opt->dst = v;
	return 0;
}

static int check_audit_rate(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	struct daemon_opts *o = opt->dst;

	if (ratelimit_parse(arg, &o->audit_rate, &o->audit_burst) < 0) {
		fprintf(stderr,
			"bpfbox %s: --%s %s: give records a second, N or N/BURST (0: no limit)\n",
			cmd, opt->name, arg);
		return EXIT_USAGE;
	}
	o->audit_rate_set = true;
	return 0;
}

/* --config FILE: checked here (bad usage); the daemon reads it, and again on reload. */
static int check_config(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	struct sink_config *cs = NULL;
	struct ceilings ceil;
	struct json_object *policies;
	size_t ncs = 0;
	char err[PATH_MAX + 1024];
	int r = daemon_config_load(arg, &cs, &ncs, &ceil, &policies, err, sizeof(err));

	free(cs);
	ceilings_free(&ceil);
	json_object_put(policies);
	if (r < 0) {
		fprintf(stderr, "bpfbox %s: --config %s; see docs/operating.md\n", cmd, err);
		return EXIT_USAGE;
	}
	*(const char **)opt->dst = arg;
	return 0;
}

static int serve(struct daemon_opts *o, bool cleanup)
{
	log_set_level(LOG_LVL_INFO);
	if (cleanup)
		return daemon_cleanup(o) < 0 ? 1 : 0;
	return daemon_serve(o) < 0 ? 1 : 0;
}

/* bpfbox daemon reload [--socket PATH]: the running daemon reads --config again. */
static int daemon_reload_cmd(int argc, char **argv)
{
	const char *sock = NULL;
	struct daemon_client c;
	int sinks, rules;
	char msg[PATH_MAX + 1024];
	int r;

	for (int i = 2; i < argc; i++) {
		if (streq(argv[i], "--socket") && i + 1 < argc) {
			sock = argv[++i];
		} else if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
			printf("usage: bpfbox daemon reload [--socket PATH]\n"
			       "Has the running daemon read its --config again (like SIGHUP): "
			       "sinks\n"
			       "and ceilings. A config that does not parse or whose sinks do not "
			       "open\n"
			       "is refused and the running one stays.\n"
			       "exit: 0 reloaded; 1 refused or no daemon answers; 2 bad usage\n");
			return 0;
		} else {
			return cli_usage_error("daemon reload", "unexpected argument '%s'",
					       argv[i]);
		}
	}
	if (cli_connect(&c, "daemon reload", sock, 5000, NULL) < 0)
		return 1;
	sock = daemon_socket_path(sock);
	r = daemon_call_reload(&c, &sinks, &rules, msg, sizeof(msg));
	daemon_client_close(&c);
	if (r < 0) {
		fprintf(stderr, "bpfbox daemon reload: %s\n", msg);
		return 1;
	}
	printf("reloaded: %d sinks, %d ceiling rules\n", sinks, rules);
	return 0;
}

int cmd_daemon(int argc, char **argv)
{
	struct daemon_opts o = {.socket_path = DAEMON_SOCKET_DEFAULT,
				.pin_dir = DAEMON_PIN_DIR_DEFAULT};
	struct sink_list sinks = {0};
	bool cleanup = false, check = false;
	const struct cli_opt opts[] = {
		{"socket", 0, true, &o.socket_path},
		{"group", 0, true, &o.group},
		{"audit", 0, true, &o.audit_path},
		{"pin-dir", 0, true, &o.pin_dir},
		{"cgroup-parent", 0, true, &o.cgroup_parent},
		{"audit-ring", 0, true, &o.ring_bytes, check_ring},
		{"cleanup", 0, false, &cleanup},
		{"sink", 0, true, &sinks, check_sink},
		{"config", 0, true, &o.config_path, check_config},
		{"max-conns-per-uid", 0, true, &o.max_conns_per_uid, check_per_uid},
		{"max-sessions-per-uid", 0, true, &o.max_sessions_per_uid, check_per_uid},
		{"audit-rate", 0, true, &o, check_audit_rate},
		{"audit-argv", 0, true, &o.argv_max, check_argv_max},
		{"metrics", 0, true, &o.metrics_addr},
		{"bpf-stats", 0, false, &o.bpf_stats},
		{"check", 0, false, &check},
		{0},
	};
	int code;

	if (argc > 1 && streq(argv[1], "reload"))
		return daemon_reload_cmd(argc, argv);
	code = cli_parse(argc, argv, opts, false, daemon_usage);
	if (code >= 0)
		goto out;
	code = EXIT_USAGE;
	if (o.bpf_stats && !o.metrics_addr) {
		fprintf(stderr, "bpfbox daemon: --bpf-stats counts program run time for the "
				"metrics; give --metrics ADDR too\n");
		goto out;
	}
	if (o.socket_path[0] != '/' || o.pin_dir[0] != '/' ||
	    (o.cgroup_parent && o.cgroup_parent[0] != '/')) {
		fprintf(stderr, "bpfbox daemon: --socket, --pin-dir and --cgroup-parent take "
				"absolute paths\n");
		goto out;
	}
	o.sinks = sinks.v;
	o.nsinks = sinks.n;
	if (check) { /* the options and --config parsed above: nothing else to do */
		printf("bpfbox daemon: the options and %s are valid\n",
		       o.config_path ? o.config_path : "(no --config)");
		code = 0;
		goto out;
	}
	code = serve(&o, cleanup);
out:
	free(sinks.v);
	return code;
}
