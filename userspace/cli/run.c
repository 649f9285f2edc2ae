// SPDX-License-Identifier: GPL-2.0
/* bpfbox run: the command line becomes the last policy layer, then a session. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"
#include "bpfbox/events.h"
#include "../policy/policy.h"
#include "../policy/rules.h"
#include "../sandbox/session.h"
#include "../agent/embedded.h"
#include "../daemon/client.h"
#include "../lib/log.h"
#include "../lib/ratelimit.h"
#include "../lib/util.h"

static void run_usage(FILE *out)
{
	fprintf(out,
		"usage: bpfbox run [OPTIONS] -- CMD [ARGS...]\n"
		"  --mode MODE           workspace-write (default), read-only, full-access\n"
		"  -w, --workspace DIR   the session's read-write tree (default: cwd)\n"
		"  --ro PATH, --rw PATH  extra read-only / read-write paths (repeatable)\n"
		"  --net deny|allow      network policy (default: deny)\n"
		"  --net-allow RULE      with --net deny, still allow HOST[:PORT[-PORT]]: a name\n"
		"                        (pypi.org), *.wildcard, ADDR or ADDR/LEN (docs/network.md)\n"
		"  --net-deny RULE       exceptions to --net-allow, same form\n"
		"  --net-resolver ADDR[:PORT]  upstream DNS of the egress resolver (default: resolv.conf)\n"
		"                        (needs the BPF agent: --audit as root, or a daemon)\n"
		"  --exec-deny NAME      never execute NAME (a file name or absolute path;\n"
		"                        enforced by BPF LSM where it loads)\n"
		"  --deny-command PAT    deny every exec whose argv, joined with spaces,\n"
		"                        contains PAT (added to the defaults; docs/config.md)\n"
		"  --ask-fd N            answers to the command rules' asks, one line each\n"
		"                        (ID approve|always|deny); with --audit as root an\n"
		"                        ask stops the exec and waits (--pause-timeout, then\n"
		"                        deny); the questions go to --status-fd\n"
		"  --env NAME[=VALUE]    add a variable (NAME alone passes the caller's)\n"
		"  --timeout DURATION    stop the session after this much wall-clock time\n"
		"                        (90, 500ms, 5s, 2m, 1h; default 120 s, 0: none)\n"
		"  --timeout-counts wall|running   running: time paused is not counted\n"
		"  --output-limit SIZE   cap on stdout+stderr, head and tail kept\n"
		"                        (65536, 64K, 1M; default 1M, 0: none)\n"
		"  --memory SIZE, --pids N, --cpu PERCENT, --disk SIZE   resource limits\n"
		"                        (a bare SIZE is MB; 512M, 2G)\n"
		"  --on-limit pause|kill what the memory and disk limits do (default pause);\n"
		"                        per limit: memory=kill,disk=pause\n"
		"  --pause-timeout DURATION   a paused session is killed after this\n"
		"                        (default 60 s; exit 123)\n"
		"  --status-fd N         write one JSON line per lifecycle event to fd N\n"
		"                        (started, paused, resumed, denied, ended)\n"
		"  --label KEY=VALUE     attach a label to the session (repeatable)\n"
		"  --read-host           read (not write) the whole host but the credential\n"
		"                        paths\n"
		"  --limits-via auto|cgroup|rlimit   how they hold (default auto: cgroup v2,\n"
		"                        else v1 as root, else rlimit; cgroup: refuse to run\n"
		"                        without; rlimit: no cgroup controllers, docs/limits.md)\n"
		"  --user USER           run the command as USER (root only)\n"
		"  --allow-unconfined    run even if neither Landlock nor seccomp holds\n"
		"  --no-namespaces       no mount, PID, IPC or user namespace (reported as\n"
		"                        not enforced; docs/SECURITY.md)\n"
		"  --config FILE         global config (default /etc/bpfbox/config.json)\n"
		"  --agent NAME          apply the config's agents.NAME layer\n"
		"  --task FILE           apply a task layer file\n"
		"  --audit FILE|-        load the BPF agent (root) and write the session's\n"
		"                        events as JSON lines to FILE or stdout\n"
		"  --audit-mode MODE     aggregate (default: repeated allowed opens fold\n"
		"                        into one record with a count), all, off\n"
		"  --audit-ring BYTES    ring buffer size, a power of two >= 4096\n"
		"                        (default 4194304)\n"
		"  --audit-argv BYTES    argv bytes kept per exec, 64 to 4096 (default 4096)\n"
		"  --audit-rate N[/BURST] records a second the session may write with\n"
		"                        --audit (default 5000/20000; 0: no limit); the\n"
		"                        rest are counted in loss lines\n"
		"  --daemon-socket PATH  use the daemon on PATH (default $BPFBOX_SOCKET or\n"
		"                        " DAEMON_SOCKET_DEFAULT "; used when it answers)\n"
		"  --no-daemon           embedded mode even when a daemon answers\n"
		"  --level full|standard the level asked for (default full: BPF LSM through\n"
		"                        a daemon, or loaded here as root where it loads);\n"
		"                        an explicit full that cannot hold is exit 125;\n"
		"                        $BPFBOX_LEVEL sets the default\n"
		"  -v, --verbose         print the effective policy and level to stderr\n"
		"  -q, --quiet           no warnings, but what is not enforced (once)\n"
		"exit: the command's code; 123 killed by a limit (paused too long, or\n"
		"      --on-limit kill); 124 timeout; 125 setup failed (nothing ran);\n"
		"      126 not executable; 127 not found; 128+N killed by signal N\n");
}

enum {
	OPT_MODE = 256, OPT_RO, OPT_RW, OPT_NET, OPT_ENV, OPT_TIMEOUT, OPT_OUTPUT,
	OPT_MEMORY, OPT_PIDS, OPT_CPU, OPT_DISK, OPT_PAUSE_TIMEOUT, OPT_TIMEOUT_COUNTS,
	OPT_ON_LIMIT, OPT_STATUS_FD, OPT_LABEL, OPT_READ_HOST, OPT_USER, OPT_UNCONFINED,
	OPT_NO_NAMESPACES,
	OPT_CONFIG, OPT_AGENT, OPT_TASK, OPT_AUDIT, OPT_AUDIT_MODE, OPT_AUDIT_RING,
	OPT_NET_ALLOW, OPT_NET_DENY, OPT_NET_RESOLVER, OPT_EXEC_DENY,
	OPT_DAEMON_SOCKET, OPT_NO_DAEMON, OPT_LIMITS_VIA, OPT_AUDIT_RATE, OPT_AUDIT_ARGV,
	OPT_LEVEL, OPT_DENY_COMMAND, OPT_ASK_FD,
};

static const struct option run_opts[] = {
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "workspace", required_argument, NULL, 'w' },
	{ "ro", required_argument, NULL, OPT_RO },
	{ "rw", required_argument, NULL, OPT_RW },
	{ "net", required_argument, NULL, OPT_NET },
	{ "env", required_argument, NULL, OPT_ENV },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "output-limit", required_argument, NULL, OPT_OUTPUT },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "pids", required_argument, NULL, OPT_PIDS },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "pause-timeout", required_argument, NULL, OPT_PAUSE_TIMEOUT },
	{ "timeout-counts", required_argument, NULL, OPT_TIMEOUT_COUNTS },
	{ "on-limit", required_argument, NULL, OPT_ON_LIMIT },
	{ "status-fd", required_argument, NULL, OPT_STATUS_FD },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "read-host", no_argument, NULL, OPT_READ_HOST },
	{ "user", required_argument, NULL, OPT_USER },
	{ "allow-unconfined", no_argument, NULL, OPT_UNCONFINED },
	{ "no-namespaces", no_argument, NULL, OPT_NO_NAMESPACES },
	{ "deny-command", required_argument, NULL, OPT_DENY_COMMAND },
	{ "ask-fd", required_argument, NULL, OPT_ASK_FD },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "agent", required_argument, NULL, OPT_AGENT },
	{ "task", required_argument, NULL, OPT_TASK },
	{ "audit", required_argument, NULL, OPT_AUDIT },
	{ "audit-mode", required_argument, NULL, OPT_AUDIT_MODE },
	{ "audit-ring", required_argument, NULL, OPT_AUDIT_RING },
	{ "audit-rate", required_argument, NULL, OPT_AUDIT_RATE },
	{ "audit-argv", required_argument, NULL, OPT_AUDIT_ARGV },
	{ "net-allow", required_argument, NULL, OPT_NET_ALLOW },
	{ "net-deny", required_argument, NULL, OPT_NET_DENY },
	{ "net-resolver", required_argument, NULL, OPT_NET_RESOLVER },
	{ "exec-deny", required_argument, NULL, OPT_EXEC_DENY },
	{ "daemon-socket", required_argument, NULL, OPT_DAEMON_SOCKET },
	{ "no-daemon", no_argument, NULL, OPT_NO_DAEMON },
	{ "limits-via", required_argument, NULL, OPT_LIMITS_VIA },
	{ "level", required_argument, NULL, OPT_LEVEL },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "bpfbox run: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "; see 'bpfbox run --help'\n");
	return EXIT_SETUP;
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

/*
 * A monitor (OOM, disk) wants the session paused: the daemon freezes its
 * cgroup and writes session.paused; its reply names the OOM victim.
 */
static int pause_via_daemon(void *ctx, struct session_event *ev)
{
	struct daemon_run *r = ctx;
	char msg[512];
	pid_t pid;
	int rc;

	rc = daemon_pause(&r->ctl, r->session_id, ev->reason, ev->oom_kills, ev->disk_used_mb, &pid,
			  ev->comm, sizeof(ev->comm), msg, sizeof(msg));
	if (rc < 0) {
		log_warn("the daemon did not pause session %s (%s); pausing it here", r->session_id,
			 msg);
		return rc;
	}
	if (pid)
		ev->pid = pid;
	return 0;
}

/* KEY=VALUE with a KEY that is a plain identifier and bounded sizes. */
static bool label_valid(const char *l)
{
	const char *eq = strchr(l, '=');
	size_t klen = eq ? (size_t)(eq - l) : 0;

	if (!eq || !klen || klen > 64 || strlen(eq + 1) > 256)
		return false;
	for (size_t i = 0; i < klen; i++)
		if (!isalnum((unsigned char)l[i]) && !strchr("_.-", l[i]))
			return false;
	return true;
}

static void print_verbose(const struct session *s, const struct bpfbox_policy *p)
{
	struct json_object *o = policy_to_json(p);

	fprintf(stderr, "bpfbox: session %s, level requested %s, enabled %s\n", s->id,
		level_name(s->layers.requested), level_name(s->layers.enabled));
	fprintf(stderr, "bpfbox: landlock %s (ABI %d), seccomp %s\n",
		s->layers.landlock ? "on" : "off", s->layers.landlock_abi,
		s->layers.seccomp ? "on" : "off");
	fprintf(stderr, "bpfbox: policy %s\n",
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						  JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

int cmd_run(int argc, char **argv)
{
	struct json_object *flags = json_object_new_object();
	struct policy_sources src = { .flags = flags };
	struct policy_error perr = { 0 };
	struct bpfbox_policy policy;
	struct session s;
	struct audit_opts aopts = { .ring_bytes = 4U << 20, .aggregate_ns = 1000000000ULL };
	struct embedded emb = { .out_fd = -1 };
	struct daemon_run drun;
	const char *daemon_socket = NULL;
	bool no_daemon = false, use_daemon = false, planned = false;
	bool verbose = false, quiet = false, audit = false;
	enum limits_via via = LIMITS_VIA_AUTO;
	struct strv labels = { 0 };
	int c, r, code = EXIT_SETUP, status_fd = -1;
	unsigned long long ul;
	enum bpfbox_level want = LEVEL_FULL;
	bool level_given = false, auto_full = false;
	char why[320] = "";
	struct rules_verdict verdict;
	bool ask_at_exec = false;

	/* $BPFBOX_LEVEL is the default of --level (a runtime that wants less everywhere). */
	if (getenv("BPFBOX_LEVEL")) {
		const char *e = getenv("BPFBOX_LEVEL");

		if (level_parse(e, &want) < 0 || (want != LEVEL_FULL && want != LEVEL_STANDARD)) {
			code = bad_usage("BPFBOX_LEVEL='%s': use full or standard", e);
			goto out_flags;
		}
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+w:vqh", run_opts, NULL)) != -1) {
		switch (c) {
		case OPT_MODE:
			json_object_object_add(flags, "mode", json_object_new_string(optarg));
			break;
		case 'w':
			json_object_object_add(flags, "workspace", json_object_new_string(optarg));
			break;
		case OPT_RO:
			append_string(sub_object(flags, "extra"), "ro", optarg);
			break;
		case OPT_RW:
			append_string(sub_object(flags, "extra"), "rw", optarg);
			break;
		case OPT_NET_ALLOW:
			append_string(sub_object(flags, "extra"), "net_allow", optarg);
			break;
		case OPT_NET_DENY:
			append_string(sub_object(flags, "extra"), "net_deny", optarg);
			break;
		case OPT_NET_RESOLVER:
			json_object_object_add(flags, "net_resolver", json_object_new_string(optarg));
			break;
		case OPT_EXEC_DENY:
			append_string(sub_object(flags, "extra"), "exec_deny", optarg);
			break;
		case OPT_ASK_FD:
			if (parse_u64(optarg, &ul) < 0 || ul < 3 || ul > INT32_MAX ||
			    fcntl((int)ul, F_GETFD) < 0) {
				code = bad_usage("--ask-fd %s: give an open file descriptor above 2 "
						 "to read the answers from (e.g. 3 with 3<answers)",
						 optarg);
				goto out_flags;
			}
			aopts.ask_fd = (int)ul;
			/* The command must not read the answers: closed at its exec. */
			fcntl(aopts.ask_fd, F_SETFD, FD_CLOEXEC);
			break;
		case OPT_DENY_COMMAND:
			append_string(sub_object(flags, "extra"), "deny_commands", optarg);
			break;
		case OPT_NET:
			json_object_object_add(flags, "network", json_object_new_string(optarg));
			break;
		case OPT_ENV:
			r = add_env(flags, optarg);
			if (r == -ENOENT) {
				code = bad_usage("--env %s: the variable is not set here; "
						 "use --env NAME=VALUE", optarg);
				goto out_flags;
			}
			if (r < 0) {
				code = bad_usage("--env '%s' is not NAME=VALUE", optarg);
				goto out_flags;
			}
			break;
		case OPT_TIMEOUT:
		case OPT_OUTPUT:
		case OPT_MEMORY:
		case OPT_PIDS:
		case OPT_CPU:
		case OPT_DISK:
		case OPT_PAUSE_TIMEOUT:
		case OPT_TIMEOUT_COUNTS:
			if (add_limit(flags, limit_keys[c - OPT_TIMEOUT], optarg) < 0) {
				code = bad_usage("'%s' is empty", optarg);
				goto out_flags;
			}
			break;
		case OPT_STATUS_FD:
			if (parse_u64(optarg, &ul) < 0 || ul < 3 || ul > INT32_MAX ||
			    fcntl((int)ul, F_GETFD) < 0) {
				code = bad_usage("--status-fd %s: give an open file descriptor above 2 "
						 "(e.g. 3 with 3>status.jsonl)", optarg);
				goto out_flags;
			}
			status_fd = (int)ul;
			/* The command must not write to it: closed at its exec. */
			fcntl(status_fd, F_SETFD, FD_CLOEXEC);
			break;
		case OPT_LABEL:
			if (!label_valid(optarg)) {
				code = bad_usage("--label '%s': give KEY=VALUE, KEY of letters, digits, "
						 "'_', '.', '-' (at most 64), VALUE at most 256 bytes",
						 optarg);
				goto out_flags;
			}
			if (strv_push(&labels, optarg) < 0)
				goto out_flags;
			break;
		case OPT_READ_HOST:
			json_object_object_add(flags, "read_host", json_object_new_boolean(1));
			break;
		case OPT_ON_LIMIT:
			if (add_on_limit(flags, optarg) < 0) {
				code = bad_usage("--on-limit '%s': use pause, kill, or "
						 "memory=pause|kill,disk=pause|kill", optarg);
				goto out_flags;
			}
			break;
		case OPT_USER:
			json_object_object_add(flags, "user", json_object_new_string(optarg));
			break;
		case OPT_UNCONFINED:
			json_object_object_add(flags, "allow_unconfined", json_object_new_boolean(1));
			break;
		case OPT_NO_NAMESPACES:
			json_object_object_add(flags, "namespaces", json_object_new_boolean(0));
			break;
		case OPT_CONFIG:
			src.global_file = optarg;
			break;
		case OPT_AGENT:
			src.agent = optarg;
			break;
		case OPT_TASK:
			src.task_file = optarg;
			break;
		case OPT_AUDIT:
			aopts.path = optarg;
			break;
		case OPT_AUDIT_MODE:
			if (streq(optarg, "all") || streq(optarg, "off") || streq(optarg, "aggregate")) {
				aopts.all = streq(optarg, "all");
				aopts.off = streq(optarg, "off");
				break;
			}
			code = bad_usage("--audit-mode '%s': use aggregate, all or off", optarg);
			goto out_flags;
		case OPT_AUDIT_RING: {
			unsigned long long v;

			if (parse_u64(optarg, &v) < 0 || v < 4096 || v > (1ULL << 30) ||
			    (v & (v - 1))) {
				code = bad_usage("--audit-ring %s: give a power of two from 4096 to "
						 "1073741824", optarg);
				goto out_flags;
			}
			aopts.ring_bytes = v;
			break;
		}
		case OPT_AUDIT_RATE:
			if (ratelimit_parse(optarg, &aopts.rate, &aopts.burst) < 0) {
				code = bad_usage("--audit-rate %s: give records a second, N or "
						 "N/BURST (0: no limit)", optarg);
				goto out_flags;
			}
			aopts.rate_set = true;
			break;
		case OPT_AUDIT_ARGV: {
			unsigned long long v;

			if (parse_u64(optarg, &v) < 0 || v < 64 || v > BPFBOX_ARGV_LEN) {
				code = bad_usage("--audit-argv %s: give bytes from 64 to 4096", optarg);
				goto out_flags;
			}
			aopts.argv_max = v;
			break;
		}
		case OPT_DAEMON_SOCKET:
			daemon_socket = optarg;
			break;
		case OPT_NO_DAEMON:
			no_daemon = true;
			break;
		case OPT_LEVEL:
			if (level_parse(optarg, &want) < 0 ||
			    (want != LEVEL_FULL && want != LEVEL_STANDARD)) {
				code = bad_usage("--level '%s': use full or standard", optarg);
				goto out_flags;
			}
			level_given = true;
			break;
		case OPT_LIMITS_VIA:
			if (limits_via_parse(optarg, &via) < 0) {
				code = bad_usage("--limits-via '%s': use auto, cgroup or rlimit", optarg);
				goto out_flags;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			run_usage(stdout);
			code = 0;
			goto out_flags;
		default:
			code = bad_usage("unknown or incomplete option '%s'", argv[optind - 1]);
			goto out_flags;
		}
	}
	if (optind >= argc || !streq(argv[optind - 1], "--")) {
		code = bad_usage("%s", optind >= argc ? "no command given: put it after '--'"
					 : "missing '--' before the command");
		goto out_flags;
	}
	if (!argv[optind][0]) {
		code = bad_usage("%s", "empty command");
		goto out_flags;
	}
	log_set_level(verbose ? LOG_LVL_INFO : quiet ? LOG_LVL_ERROR : LOG_LVL_WARN);

	r = policy_load(&policy, &src, &perr);
	if (r < 0) {
		fprintf(stderr, "bpfbox run: %s%s%s: %s\n", perr.file, perr.path[0] ? ": at " : "",
			perr.path, perr.message);
		goto out_policy;
	}
	/* Command rules, before anything runs (docs/config.md): deny and ask are 125. */
	rules_check_command(&policy, argv + optind, &verdict);
	/*
	 * An ask with someone to answer (--ask-fd) and the BPF agent (--audit)
	 * is asked at the command's exec in the session, like any other; the
	 * agent must then hold the rules, else it is refused below.
	 */
	if (verdict.action == CMD_ASK && aopts.ask_fd > 2 && aopts.path)
		ask_at_exec = true;
	else if (verdict.action != CMD_ALLOW) {
		log_error("command %s by rule '%s'%s; nothing ran",
			  verdict.action == CMD_DENY ? "denied" : "needs approval", verdict.rule,
			  verdict.action == CMD_ASK ? " and nobody can answer before it starts" : "");
		goto out_policy;
	}
	if (session_plan(&s, &policy) < 0)
		goto out_policy;
	planned = true;
	s.status_fd = status_fd;
	s.labels = &labels;
	s.layers.requested = want;
	if (via != LIMITS_VIA_AUTO)
		session_plan_limits(&s, via);
	if (s.layers.enabled == LEVEL_NONE && !policy.allow_unconfined) {
		log_error("neither Landlock nor seccomp is available, so nothing would confine the "
			  "command; refusing (pass --allow-unconfined to run it anyway)");
		goto out_policy;
	}
	if (s.layers.enabled == LEVEL_MINIMAL)
		log_warn("running at level Minimal: no filesystem isolation");
	/*
	 * Daemon mode (docs/daemon.md): when a daemon answers, it holds the
	 * session's cgroup and BPF state and writes the audit stream; else
	 * embedded mode below, as before.
	 */
	if (no_daemon) {
		char why[PATH_MAX + 256];

		/* The operator's ceilings may say no (docs/operating.md). */
		if (daemon_no_daemon_allowed(daemon_socket, why, sizeof(why)) < 0) {
			log_error("%s; nothing ran", why);
			goto out_policy;
		}
	} else {
		r = daemon_run_begin(&drun, &s, daemon_socket, &aopts, argv + optind);
		if (r < 0)
			goto out_policy;
		use_daemon = r > 0;
	}
	/* End of the daemon-mode block. */
	if (use_daemon) {
		/* The daemon makes and limits the cgroups; a monitor's pause goes through it. */
		s.hooks.request_pause = pause_via_daemon;
	} else if (via == LIMITS_VIA_CGROUP && !session_limits_by_cgroup(&s)) {
		log_error("--limits-via cgroup: %s; nothing ran", s.lim.not_enforced);
		goto out_policy;
	}
	/*
	 * Full without a daemon: as root where a BPF LSM program loads, the
	 * agent is loaded for this one session even without --audit (its
	 * records then go nowhere; docs/benchmarks.md has the cost).
	 */
	if (!aopts.path && !use_daemon && want == LEVEL_FULL &&
	    s.layers.enabled == LEVEL_STANDARD && probe_bpf_lsm(why, sizeof(why))) {
		auto_full = true;
		aopts.off = true; /* decisions only: nobody reads the opens */
	}
	if ((aopts.path || auto_full) && !use_daemon) {
		if (embedded_start(&emb, &s, &aopts, argv + optind) < 0)
			goto out_policy;
		audit = true;
	} else if (!use_daemon) {
		session_note_bpf_lsm(&s, false);
	}
	/* Every exec is checked only by the embedded agent's program (docs/config.md). */
	if (rules_any(&policy) && !audit && !(use_daemon && s.exec_rules))
		session_not_enforced(&s, use_daemon ? "command rules on the execs inside the session "
						      "(only the top-level command was checked: the "
						      "daemon's exec program is not loaded)"
						    : "command rules on the execs inside the session "
						      "(only the top-level command was checked: no BPF "
						      "agent here, it needs --audit as root)");
	if (ask_at_exec && !(audit && agent_status(emb.agent)->cmd)) {
		log_error("command needs approval by rule '%s', and the exec program that would ask "
			  "did not load; nothing ran", verdict.rule);
		if (audit)
			embedded_finish(&emb, NULL);
		goto out_policy;
	}
	/* What the policy asks and nothing here enforces: said even with -q, once, one line. */
	if (s.layers.not_enforced[0] || (!use_daemon && s.lim.not_enforced[0]))
		log_warn_always("not enforced on this host: %s%s%s", s.layers.not_enforced,
				s.layers.not_enforced[0] && !use_daemon && s.lim.not_enforced[0] ? "; "
												   : "",
				use_daemon ? "" : s.lim.not_enforced);
	/* Never silently less: an explicit --level full that cannot hold refuses. */
	if (level_given && s.layers.enabled < s.layers.requested) {
		log_error("--level %s: this session reaches only %s (%s); run as root where the "
			  "BPF LSM loads, or through a daemon that has it; nothing ran",
			  level_name(s.layers.requested), level_name(s.layers.enabled),
			  why[0] ? why : "the BPF LSM is not loaded for it");
		if (audit)
			embedded_finish(&emb, NULL);
		if (use_daemon)
			daemon_run_finish(&drun, NULL);
		goto out_policy;
	}
	/* An allow-list opens inet sockets: without BPF to judge them, refuse. */
	if (policy.net == NET_DENY && policy.net_allow.n && !use_daemon &&
	    !(audit && agent_status(emb.agent)->net)) {
		log_error("--net-allow needs the BPF network layer, which is not loaded: run as root "
			  "with --audit FILE, or through bpfbox daemon; nothing ran");
		if (audit)
			embedded_finish(&emb, NULL);
		goto out_policy;
	}
	if (verbose)
		print_verbose(&s, &policy);
	r = session_run(&s, argv + optind);
	if (use_daemon)
		daemon_run_finish(&drun, r < 0 ? NULL : &s);
	if (audit)
		embedded_finish(&emb, r < 0 ? NULL : &s);
	if (r < 0)
		goto out_policy;
	code = s.result.exit_code;
	if (s.result.timed_out)
		log_warn("session %s stopped: timeout of %llu s", s.id,
			 (unsigned long long)(policy.limits.timeout_ms / 1000));
out_policy:
	if (planned)
		session_cleanup(&s);
	policy_free(&policy);
out_flags:
	strv_clear(&labels);
	json_object_put(flags);
	return code;
}
