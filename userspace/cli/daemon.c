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
		"  --config FILE also takes \"ceilings\" (docs/operating.md)\n"
		"Runs in the foreground until SIGTERM or SIGINT; the pins stay so that\n"
		"sessions stay enforced, and the next start re-adopts them. SIGHUP, or\n"
		"'bpfbox daemon reload', reads --config again (sinks, ceilings; the audit\n"
		"files are opened again). See docs/daemon.md, docs/sinks.md, docs/operating.md.\n"
		"exit: 0 stopped cleanly; 1 could not start or clean up; 2 bad usage or sink\n"
		"      configuration\n");
}

enum {
	OPT_SOCKET = 256,
	OPT_GROUP,
	OPT_AUDIT,
	OPT_PIN_DIR,
	OPT_PARENT,
	OPT_RING,
	OPT_CLEANUP,
	OPT_SINK,
	OPT_CONFIG,
	OPT_MAX_CONNS,
	OPT_MAX_SESSIONS,
	OPT_AUDIT_RATE,
	OPT_AUDIT_ARGV,
	OPT_METRICS,
	OPT_BPF_STATS,
};

static const struct option daemon_opts_long[] = {
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"group", required_argument, NULL, OPT_GROUP},
	{"audit", required_argument, NULL, OPT_AUDIT},
	{"pin-dir", required_argument, NULL, OPT_PIN_DIR},
	{"cgroup-parent", required_argument, NULL, OPT_PARENT},
	{"audit-ring", required_argument, NULL, OPT_RING},
	{"cleanup", no_argument, NULL, OPT_CLEANUP},
	{"sink", required_argument, NULL, OPT_SINK},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"max-conns-per-uid", required_argument, NULL, OPT_MAX_CONNS},
	{"max-sessions-per-uid", required_argument, NULL, OPT_MAX_SESSIONS},
	{"audit-rate", required_argument, NULL, OPT_AUDIT_RATE},
	{"audit-argv", required_argument, NULL, OPT_AUDIT_ARGV},
	{"metrics", required_argument, NULL, OPT_METRICS},
	{"bpf-stats", no_argument, NULL, OPT_BPF_STATS},
	{"help", no_argument, NULL, 'h'},
	{0},
};

/* --sink SPEC: one more entry of *sinks; 0 or -errno (printed). */
static int add_sink(struct sink_config **sinks, size_t *n, const char *spec)
{
	struct sink_config *nv = realloc(*sinks, (*n + 1) * sizeof(**sinks));
	char err[PATH_MAX + 512];

	if (!nv) {
		fprintf(stderr, "bpfbox daemon: out of memory\n");
		return -ENOMEM;
	}
	*sinks = nv;
	if (sink_config_parse(spec, &nv[*n], err, sizeof(err)) < 0) {
		fprintf(stderr, "bpfbox daemon: --sink '%s': %s; see docs/sinks.md\n", spec, err);
		return -EINVAL;
	}
	(*n)++;
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
	struct sink_config *sinks = NULL;
	size_t nsinks = 0;
	bool cleanup = false;
	char err[PATH_MAX + 1024];
	unsigned long long v;
	int c, code = EXIT_USAGE;

	if (argc > 1 && streq(argv[1], "reload"))
		return daemon_reload_cmd(argc, argv);
	while ((c = getopt_long(argc, argv, "h", daemon_opts_long, NULL)) != -1) {
		switch (c) {
		case OPT_SOCKET:
			o.socket_path = optarg;
			break;
		case OPT_GROUP:
			o.group = optarg;
			break;
		case OPT_AUDIT:
			o.audit_path = optarg;
			break;
		case OPT_PIN_DIR:
			o.pin_dir = optarg;
			break;
		case OPT_PARENT:
			o.cgroup_parent = optarg;
			break;
		case OPT_RING:
			if (parse_u64(optarg, &v) < 0 || v < 4096 || v > (1ULL << 30) ||
			    (v & (v - 1))) {
				fprintf(stderr,
					"bpfbox daemon: --audit-ring %s: give a power of two "
					"from 4096 to 1073741824\n",
					optarg);
				goto out;
			}
			o.ring_bytes = v;
			break;
		case OPT_CLEANUP:
			cleanup = true;
			break;
		case OPT_AUDIT_ARGV:
			if (parse_u64(optarg, &v) < 0 || v < 64 || v > BPFBOX_ARGV_LEN) {
				fprintf(stderr,
					"bpfbox daemon: --audit-argv %s: give bytes from 64 "
					"to %d\n",
					optarg, BPFBOX_ARGV_LEN);
				goto out;
			}
			o.argv_max = v;
			break;
		case OPT_AUDIT_RATE:
			if (ratelimit_parse(optarg, &o.audit_rate, &o.audit_burst) < 0) {
				fprintf(stderr,
					"bpfbox daemon: --audit-rate %s: give records a "
					"second, N or N/BURST (0: no limit)\n",
					optarg);
				goto out;
			}
			o.audit_rate_set = true;
			break;
		case OPT_MAX_CONNS:
		case OPT_MAX_SESSIONS:
			if (parse_u64(optarg, &v) < 0 || v < 1 || v > 4096) {
				fprintf(stderr,
					"bpfbox daemon: --%s %s: give a number from 1 to "
					"4096\n",
					c == OPT_MAX_CONNS ? "max-conns-per-uid"
							   : "max-sessions-per-uid",
					optarg);
				goto out;
			}
			if (c == OPT_MAX_CONNS)
				o.max_conns_per_uid = v;
			else
				o.max_sessions_per_uid = v;
			break;
		case OPT_METRICS:
			o.metrics_addr = optarg;
			break;
		case OPT_BPF_STATS:
			o.bpf_stats = true;
			break;
		case OPT_SINK:
			if (add_sink(&sinks, &nsinks, optarg) < 0)
				goto out;
			break;
		case OPT_CONFIG: {
			/* Checked here (bad usage); the daemon reads it, and again on reload. */
			struct sink_config *cs = NULL;
			struct ceilings ceil;
			size_t ncs = 0;
			int r = daemon_config_load(optarg, &cs, &ncs, &ceil, err, sizeof(err));

			free(cs);
			ceilings_free(&ceil);
			if (r < 0) {
				fprintf(stderr,
					"bpfbox daemon: --config %s; see docs/operating.md\n", err);
				goto out;
			}
			o.config_path = optarg;
			break;
		}
		default:
			code = cli_help_or_bad(c, "daemon", argv, daemon_usage);
			goto out;
		}
	}
	if (cli_extra_args("daemon", argc, argv))
		goto out;
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
	o.sinks = sinks;
	o.nsinks = nsinks;
	code = serve(&o, cleanup);
out:
	free(sinks);
	return code;
}
