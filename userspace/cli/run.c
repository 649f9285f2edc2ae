// SPDX-License-Identifier: GPL-2.0
/* bpfbox run: the command line becomes the last policy layer, then a session. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"
#include "bpfbox/events.h"
#include "../policy/policy.h"
#include "../run/run.h"
#include "../sandbox/session.h"
#include "../daemon/client.h"
#include "../lib/log.h"
#include "../lib/prefault.h"
#include "../lib/ratelimit.h"
#include "../lib/util.h"

enum {
	OPT_MODE = 256,
	OPT_RO,
	OPT_RW,
	OPT_NET,
	OPT_ENV,
	OPT_TIMEOUT,
	OPT_OUTPUT,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPU,
	OPT_DISK,
	OPT_PAUSE_TIMEOUT,
	OPT_TIMEOUT_COUNTS,
	OPT_ON_LIMIT,
	OPT_STATUS_FD,
	OPT_LABEL,
	OPT_READ_HOST,
	OPT_NET_ASK,
	OPT_USER,
	OPT_UNCONFINED,
	OPT_NO_NAMESPACES,
	OPT_CONFIG,
	OPT_AGENT,
	OPT_TASK,
	OPT_AUDIT,
	OPT_AUDIT_MODE,
	OPT_AUDIT_RING,
	OPT_NET_ALLOW,
	OPT_NET_DENY,
	OPT_NET_RESOLVER,
	OPT_SECRET,
	OPT_EXEC_DENY,
	OPT_DAEMON_SOCKET,
	OPT_NO_DAEMON,
	OPT_LIMITS_VIA,
	OPT_AUDIT_RATE,
	OPT_AUDIT_ARGV,
	OPT_LEVEL,
	OPT_DENY_COMMAND,
	OPT_ASK_FD,
	OPT_DEVICE,
	OPT_SSH_AGENT,
	OPT_CHANGES,
	OPT_CHANGES_FROM,
};

static const struct option run_opts[] = {
	{"mode", required_argument, NULL, OPT_MODE},
	{"workspace", required_argument, NULL, 'w'},
	{"ro", required_argument, NULL, OPT_RO},
	{"rw", required_argument, NULL, OPT_RW},
	{"device", required_argument, NULL, OPT_DEVICE},
	{"ssh-agent", no_argument, NULL, OPT_SSH_AGENT},
	{"net", required_argument, NULL, OPT_NET},
	{"env", required_argument, NULL, OPT_ENV},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"output-limit", required_argument, NULL, OPT_OUTPUT},
	{"memory", required_argument, NULL, OPT_MEMORY},
	{"pids", required_argument, NULL, OPT_PIDS},
	{"cpu", required_argument, NULL, OPT_CPU},
	{"disk", required_argument, NULL, OPT_DISK},
	{"pause-timeout", required_argument, NULL, OPT_PAUSE_TIMEOUT},
	{"timeout-counts", required_argument, NULL, OPT_TIMEOUT_COUNTS},
	{"on-limit", required_argument, NULL, OPT_ON_LIMIT},
	{"status-fd", required_argument, NULL, OPT_STATUS_FD},
	{"label", required_argument, NULL, OPT_LABEL},
	{"read-host", no_argument, NULL, OPT_READ_HOST},
	{"net-ask", no_argument, NULL, OPT_NET_ASK},
	{"user", required_argument, NULL, OPT_USER},
	{"allow-unconfined", no_argument, NULL, OPT_UNCONFINED},
	{"no-namespaces", no_argument, NULL, OPT_NO_NAMESPACES},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"agent", required_argument, NULL, OPT_AGENT},
	{"task", required_argument, NULL, OPT_TASK},
	{"audit", required_argument, NULL, OPT_AUDIT},
	{"audit-mode", required_argument, NULL, OPT_AUDIT_MODE},
	{"audit-ring", required_argument, NULL, OPT_AUDIT_RING},
	{"audit-rate", required_argument, NULL, OPT_AUDIT_RATE},
	{"audit-argv", required_argument, NULL, OPT_AUDIT_ARGV},
	{"net-allow", required_argument, NULL, OPT_NET_ALLOW},
	{"net-deny", required_argument, NULL, OPT_NET_DENY},
	{"net-resolver", required_argument, NULL, OPT_NET_RESOLVER},
	{"secret", required_argument, NULL, OPT_SECRET},
	{"exec-deny", required_argument, NULL, OPT_EXEC_DENY},
	{"deny-command", required_argument, NULL, OPT_DENY_COMMAND},
	{"ask-fd", required_argument, NULL, OPT_ASK_FD},
	{"changes", required_argument, NULL, OPT_CHANGES},
	{"changes-from", required_argument, NULL, OPT_CHANGES_FROM},
	{"daemon-socket", required_argument, NULL, OPT_DAEMON_SOCKET},
	{"no-daemon", no_argument, NULL, OPT_NO_DAEMON},
	{"limits-via", required_argument, NULL, OPT_LIMITS_VIA},
	{"level", required_argument, NULL, OPT_LEVEL},
	{"verbose", no_argument, NULL, 'v'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{0},
};

/* A bad command line: exit 2 like every subcommand; its line is the status channel's reason. */
static int __attribute__((format(printf, 1, 2))) bad_usage(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_keep_error(msg);
	return cli_usage_error("run", "%s", msg);
}

/*
 * The --status-fd of a command line that fails to parse, wherever it
 * stands before "--": its "ended" says the usage was bad. -1: none.
 */
static int status_fd_of(int argc, char **argv)
{
	unsigned long long ul;

	for (int i = 1; i < argc && !streq(argv[i], "--"); i++) {
		const char *v = NULL;

		if (streq(argv[i], "--status-fd") && i + 1 < argc)
			v = argv[i + 1];
		else if (!strncmp(argv[i], "--status-fd=", 12))
			v = argv[i] + 12;
		if (v && parse_u64(v, &ul) == 0 && ul > 2 && ul <= INT32_MAX &&
		    fcntl((int)ul, F_GETFD) >= 0)
			return (int)ul;
	}
	return -1;
}

static struct json_object *sub_object(struct json_object *o, const char *key)
{
	struct json_object *sub;

	if (!json_object_object_get_ex(o, key, &sub)) {
		sub = json_object_new_object();
		json_object_object_add(o, key, sub);
	}
	return sub;
}

static void append_string(struct json_object *o, const char *key, const char *value)
{
	struct json_object *arr;

	if (!json_object_object_get_ex(o, key, &arr)) {
		arr = json_object_new_array();
		json_object_object_add(o, key, arr);
	}
	json_object_array_add(arr, json_object_new_string(value));
}

/* --env NAME=VALUE, or NAME alone to pass the caller's value through. */
static int add_env(struct json_object *flags, const char *arg)
{
	struct json_object *env = sub_object(sub_object(flags, "extra"), "env");
	const char *eq = strchr(arg, '=');
	char name[256];

	if (eq) {
		if (eq == arg || (size_t)(eq - arg) >= sizeof(name))
			return -EINVAL;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - arg), arg);
		json_object_object_add(env, name, json_object_new_string(eq + 1));
		return 0;
	}
	if (!*arg || !getenv(arg))
		return -ENOENT;
	json_object_object_add(env, arg, json_object_new_string(getenv(arg)));
	return 0;
}

/* A bare number in the key's unit, or a string with a unit the policy layer reads. */
static int add_limit(struct json_object *flags, const char *key, const char *arg)
{
	unsigned long long v;

	if (!*arg)
		return -EINVAL;
	if (parse_u64(arg, &v) == 0 && v <= INT64_MAX)
		json_object_object_add(sub_object(flags, "limits"), key, json_object_new_int64(v));
	else
		json_object_object_add(sub_object(flags, "limits"), key,
				       json_object_new_string(arg));
	return 0;
}

/* --on-limit pause|kill, or memory=pause|kill, disk=pause|kill (comma separated). */
static int add_on_limit(struct json_object *flags, const char *arg)
{
	struct json_object *lim = sub_object(flags, "limits");
	_cleanup_free_ char *copy = strdup(arg);
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		const char *what = eq ? eq + 1 : t;

		if (!streq(what, "pause") && !streq(what, "kill"))
			return -EINVAL;
		if (eq)
			*eq = '\0';
		if (!eq || streq(t, "memory") || streq(t, "oom"))
			json_object_object_add(lim, "on_oom", json_object_new_string(what));
		if (!eq || streq(t, "disk"))
			json_object_object_add(lim, "on_disk", json_object_new_string(what));
		if (eq && !streq(t, "memory") && !streq(t, "oom") && !streq(t, "disk"))
			return -EINVAL;
	}
	return 0;
}

static const char *const limit_keys[] = {
	[OPT_TIMEOUT - OPT_TIMEOUT] = "timeout_s",
	[OPT_OUTPUT - OPT_TIMEOUT] = "output_bytes",
	[OPT_MEMORY - OPT_TIMEOUT] = "memory_mb",
	[OPT_PIDS - OPT_TIMEOUT] = "pids",
	[OPT_CPU - OPT_TIMEOUT] = "cpu_percent",
	[OPT_DISK - OPT_TIMEOUT] = "disk_mb",
	[OPT_PAUSE_TIMEOUT - OPT_TIMEOUT] = "pause_timeout_s",
	[OPT_TIMEOUT_COUNTS - OPT_TIMEOUT] = "timeout_counts",
};

/* The options that become the command line's policy layer (src.flags). */
/* long: one case per option, each a line or two */
static int policy_opt(struct json_object *flags, int c, const char *arg)
{
	switch (c) {
	case OPT_MODE:
		json_object_object_add(flags, "mode", json_object_new_string(arg));
		return 0;
	case 'w':
		json_object_object_add(flags, "workspace", json_object_new_string(arg));
		return 0;
	case OPT_RO:
	case OPT_RW:
	case OPT_DEVICE:
	case OPT_NET_ALLOW:
	case OPT_NET_DENY:
	case OPT_SECRET:
	case OPT_EXEC_DENY:
		append_string(sub_object(flags, "extra"),
			      c == OPT_RO	   ? "ro"
			      : c == OPT_RW	   ? "rw"
			      : c == OPT_DEVICE	   ? "devices"
			      : c == OPT_NET_ALLOW ? "net_allow"
			      : c == OPT_NET_DENY  ? "net_deny"
			      : c == OPT_SECRET	   ? "secrets"
						   : "exec_deny",
			      arg);
		return 0;
	case OPT_NET_RESOLVER:
		json_object_object_add(flags, "net_resolver", json_object_new_string(arg));
		return 0;
	case OPT_DENY_COMMAND:
		append_string(sub_object(flags, "extra"), "deny_commands", arg);
		return 0;
	case OPT_NET:
		json_object_object_add(flags, "network", json_object_new_string(arg));
		return 0;
	case OPT_ENV: {
		int r = add_env(flags, arg);

		if (r == -ENOENT)
			return bad_usage("--env %s: the variable is not set here; use --env "
					 "NAME=VALUE",
					 arg);
		return r < 0 ? bad_usage("--env '%s' is not NAME=VALUE", arg) : 0;
	}
	case OPT_TIMEOUT:
	case OPT_OUTPUT:
	case OPT_MEMORY:
	case OPT_PIDS:
	case OPT_CPU:
	case OPT_DISK:
	case OPT_PAUSE_TIMEOUT:
	case OPT_TIMEOUT_COUNTS:
		return add_limit(flags, limit_keys[c - OPT_TIMEOUT], arg) < 0
			       ? bad_usage("'%s' is empty", arg)
			       : 0;
	case OPT_ON_LIMIT:
		return add_on_limit(flags, arg) < 0
			       ? bad_usage("--on-limit '%s': use pause, kill, or "
					   "memory=pause|kill,disk=pause|kill",
					   arg)
			       : 0;
	case OPT_READ_HOST:
		json_object_object_add(flags, "read_host", json_object_new_boolean(1));
		return 0;
	case OPT_NET_ASK:
		json_object_object_add(flags, "net_ask", json_object_new_boolean(1));
		return 0;
	case OPT_SSH_AGENT:
		json_object_object_add(flags, "ssh_agent", json_object_new_boolean(1));
		return 0;
	case OPT_USER:
		json_object_object_add(flags, "user", json_object_new_string(arg));
		return 0;
	case OPT_UNCONFINED:
		json_object_object_add(flags, "allow_unconfined", json_object_new_boolean(1));
		return 0;
	case OPT_NO_NAMESPACES:
		json_object_object_add(flags, "namespaces", json_object_new_boolean(0));
		return 0;
	case OPT_CHANGES:
		if (!streq(arg, "direct") && !streq(arg, "review") && !streq(arg, "apply"))
			return bad_usage("--changes '%s': use direct, review or apply", arg);
		json_object_object_add(flags, "changes", json_object_new_string(arg));
		return 0;
	}
	return -ENOENT;
}

/* --audit and its tuning. */
static int audit_opt(struct audit_opts *a, int c, const char *arg)
{
	unsigned long long v;

	switch (c) {
	case OPT_AUDIT:
		a->path = arg;
		return 0;
	case OPT_AUDIT_MODE:
		if (!streq(arg, "all") && !streq(arg, "off") && !streq(arg, "aggregate"))
			return bad_usage("--audit-mode '%s': use aggregate, all or off", arg);
		a->all = streq(arg, "all");
		a->off = streq(arg, "off");
		return 0;
	case OPT_AUDIT_RING:
		if (parse_u64(arg, &v) < 0 || v < 4096 || v > (1ULL << 30) || (v & (v - 1)))
			return bad_usage("--audit-ring %s: give a power of two from 4096 to "
					 "1073741824",
					 arg);
		a->ring_bytes = v;
		return 0;
	case OPT_AUDIT_RATE:
		if (ratelimit_parse(arg, &a->rate, &a->burst) < 0)
			return bad_usage("--audit-rate %s: give records a second, N or N/BURST (0: "
					 "no limit)",
					 arg);
		a->rate_set = true;
		return 0;
	case OPT_AUDIT_ARGV:
		if (parse_u64(arg, &v) < 0 || v < 64 || v > BPFBOX_ARGV_LEN)
			return bad_usage("--audit-argv %s: give bytes from 64 to 4096", arg);
		a->argv_max = v;
		return 0;
	}
	return -ENOENT;
}

/* How the session runs: the daemon, the level, the status channel, labels. */
static int run_opt(struct run_plan *p, struct strv *labels, int c, const char *arg)
{
	unsigned long long ul;

	switch (c) {
	case OPT_STATUS_FD:
		if (parse_u64(arg, &ul) < 0 || ul < 3 || ul > INT32_MAX ||
		    fcntl((int)ul, F_GETFD) < 0)
			return bad_usage("--status-fd %s: give an open file descriptor above 2 "
					 "(e.g. 3 with 3>status.jsonl)",
					 arg);
		p->status_fd = (int)ul;
		/* The command must not write to it: closed at its exec. */
		fcntl(p->status_fd, F_SETFD, FD_CLOEXEC);
		return 0;
	case OPT_ASK_FD:
		if (parse_u64(arg, &ul) < 0 || ul < 3 || ul > INT32_MAX ||
		    fcntl((int)ul, F_GETFD) < 0)
			return bad_usage(
				"--ask-fd %s: give an open file descriptor above 2 to read "
				"the answers from (e.g. 3 with 3<answers)",
				arg);
		p->audit.ask_fd = (int)ul;
		/* The command must not read the answers: closed at its exec. */
		fcntl(p->audit.ask_fd, F_SETFD, FD_CLOEXEC);
		return 0;
	case OPT_LABEL:
		if (!cli_label_valid(arg))
			return bad_usage("--label '%s': give KEY=VALUE, KEY of letters, digits, "
					 "'_', '.', '-' (at most 64), VALUE at most 256 bytes",
					 arg);
		return strv_push(labels, arg) < 0 ? EXIT_SETUP : 0;
	case OPT_CONFIG:
		p->src.global_file = arg;
		return 0;
	case OPT_AGENT:
		p->src.agent = arg;
		return 0;
	case OPT_TASK:
		p->src.task_file = arg;
		return 0;
	case OPT_DAEMON_SOCKET:
		p->daemon_socket = arg;
		return 0;
	case OPT_NO_DAEMON:
		p->no_daemon = true;
		return 0;
	case OPT_CHANGES_FROM: /* checked by the session: changes_open */
		p->changes_from = arg;
		return 0;
	case OPT_LEVEL:
		if (level_parse(arg, &p->want) < 0 ||
		    (p->want != LEVEL_FULL && p->want != LEVEL_STANDARD))
			return bad_usage("--level '%s': use full or standard", arg);
		p->level_given = true;
		return 0;
	case OPT_LIMITS_VIA:
		return limits_via_parse(arg, &p->via) < 0
			       ? bad_usage("--limits-via '%s': use auto, cgroup or rlimit", arg)
			       : 0;
	case 'v':
		p->verbose = true;
		return 0;
	}
	return audit_opt(&p->audit, c, arg);
}

/* The command line into plan; 0, or the exit code (-1: --help, printed). */
static int parse_run(int argc, char **argv, struct run_plan *p, struct strv *labels, bool *quiet)
{
	const char *e = getenv("BPFBOX_LEVEL");
	int c, r;

	/* $BPFBOX_LEVEL is the default of --level (a runtime that wants less everywhere). */
	if (e &&
	    (level_parse(e, &p->want) < 0 || (p->want != LEVEL_FULL && p->want != LEVEL_STANDARD)))
		return bad_usage("BPFBOX_LEVEL='%s': use full or standard", e);
	while ((c = getopt_long(argc, argv, "+w:vqh", run_opts, NULL)) != -1) {
		if (c == 'q') {
			*quiet = true;
			continue;
		}
		if (c == 'h') {
			run_usage(stdout);
			return -1;
		}
		r = policy_opt(p->src.flags, c, optarg);
		if (r == -ENOENT)
			r = run_opt(p, labels, c, optarg);
		if (r == -ENOENT)
			return bad_usage("unknown or incomplete option '%s'", argv[optind - 1]);
		if (r)
			return r;
	}
	if (optind >= argc || !streq(argv[optind - 1], "--"))
		return bad_usage("%s", optind >= argc ? "no command given: put it after '--'"
						      : "missing '--' before the command");
	if (!argv[optind][0])
		return bad_usage("%s", "empty command");
	p->argv = argv + optind;
	return 0;
}

int cmd_run(int argc, char **argv)
{
	struct run_plan plan;
	struct strv labels = {0};
	bool quiet = false;
	int code;

	run_plan_init(&plan);
	plan.src.flags = json_object_new_object();
	plan.labels = &labels;
	/* The run path's stack and .bss, present before it writes them (prefault.h). */
	prefault_init();
	prefault_writable(true);
	code = parse_run(argc, argv, &plan, &labels, &quiet);
	if (code == EXIT_USAGE) {
		struct session none = {0};

		session_ended_early(&none, status_fd_of(argc, argv), plan.start_ns, EXIT_USAGE,
				    "usage");
	}
	if (code == 0) {
		log_set_level(plan.verbose ? LOG_LVL_INFO : quiet ? LOG_LVL_ERROR : LOG_LVL_WARN);
		code = run_session(&plan);
	}
	strv_clear(&labels);
	json_object_put(plan.src.flags);
	return code < 0 ? 0 : code;
}
