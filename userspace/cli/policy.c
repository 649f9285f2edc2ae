// SPDX-License-Identifier: GPL-2.0
/* bpfbox policy check: print the effective policy, or say what is wrong. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "../lib/util.h"
#include "../policy/policy.h"
#include "../probe/probe.h"
#include "../sandbox/session.h"

static void policy_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox policy check [OPTIONS] [FILES...]\n"
		     "  --config FILE        global config "
		     "(default " POLICY_DEFAULT_CONFIG ", if it exists)\n"
		     "  --agent NAME         apply agents.NAME of the global "
		     "config\n"
		     "  --mode MODE          workspace-write, read-only or "
		     "full-access\n"
		     "  --task FILE          a task layer\n"
		     "  -w, --workspace DIR  the project directory (default: "
		     "the current "
		     "directory)\n"
		     "  FILES                more layers, applied after the "
		     "task in order\n"
		     "Prints the effective policy as JSON; exit 2 if it is "
		     "invalid.\n"
		     "See docs/config.md for the format.\n");
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bpfbox policy: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; run 'bpfbox policy --help'\n");
	return EXIT_USAGE;
}

/* The command-line options as a layer; NULL when there are none. */
static int flags_layer(const char *mode, const char *workspace, struct json_object **out)
{
	struct json_object *o;

	*out = NULL;
	if (!mode && !workspace)
		return 0;
	o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	if (mode)
		json_object_object_add(o, "mode", json_object_new_string(mode));
	if (workspace)
		json_object_object_add(o, "workspace", json_object_new_string(workspace));
	*out = o;
	return 0;
}

/*
 * What of p this host would not enforce in a session without a daemon:
 * the layers session_plan() finds missing and, without BPF LSM, the rules
 * only it holds. Also said on stderr, one line.
 */
static void add_not_enforced(struct json_object *out, const struct bpfbox_policy *p)
{
	struct json_object *arr = json_object_new_array();
	struct host_caps caps;
	struct session s;
	char *save = NULL;

	if (session_plan(&s, p) < 0) {
		json_object_put(arr);
		return;
	}
	/* Loading BPF LSM is the only true test of it; without root it cannot load here. */
	probe_host(&caps, getuid() == 0 ? PROBE_ALL : 0);
	session_note_bpf_lsm(&s, caps.feat[FEAT_BPF_LSM].state == FEAT_YES);
	if (s.layers.not_enforced[0])
		fprintf(stderr, "bpfbox policy: not enforced on this host: %s\n",
			s.layers.not_enforced);
	for (char *t = strtok_r(s.layers.not_enforced, ";", &save); t;
	     t = strtok_r(NULL, ";", &save))
		json_object_array_add(arr, json_object_new_string(t + strspn(t, " ")));
	json_object_object_add(out, "not_enforced", arr);
	session_cleanup(&s);
}

static int policy_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"agent", required_argument, NULL, 'a'},
		{"mode", required_argument, NULL, 'm'},
		{"task", required_argument, NULL, 't'},
		{"workspace", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *mode = NULL, *workspace = NULL;
	struct policy_sources src = {0};
	struct json_object *flags = NULL, *out;
	struct bpfbox_policy p;
	struct policy_error err;
	char line[1024];
	enum sandbox_mode m;
	int c, r;

	while ((c = getopt_long(argc, argv, ":w:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			src.global_file = optarg;
			break;
		case 'a':
			src.agent = optarg;
			break;
		case 'm':
			if (sandbox_mode_parse(optarg, &m) < 0)
				return usage_error("--mode: unknown mode '%s'; "
						   "use workspace-write, "
						   "read-only or full-access",
						   optarg);
			mode = optarg;
			break;
		case 't':
			src.task_file = optarg;
			break;
		case 'w':
			workspace = optarg;
			break;
		case 'h':
			policy_usage(stdout);
			return 0;
		case ':':
			return usage_error("%s needs an argument", argv[optind - 1]);
		default:
			if (optopt)
				return usage_error("unknown option '-%c'", optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (src.agent && !*src.agent)
		return usage_error("--agent: empty name");
	if (workspace && !*workspace)
		return usage_error("-w: empty directory name");
	/* getopt moved the operands to the end, NULL-terminated by argv */
	src.files = (const char *const *)(argv + optind);

	if (flags_layer(mode, workspace, &flags) < 0) {
		fprintf(stderr, "bpfbox policy: out of memory\n");
		return 1;
	}
	src.flags = flags;
	r = policy_load(&p, &src, &err);
	json_object_put(flags);
	if (r < 0) {
		fprintf(stderr, "bpfbox policy: %s\n",
			policy_error_format(&err, line, sizeof(line)));
		return EXIT_USAGE;
	}
	out = policy_to_json(&p);
	if (out)
		add_not_enforced(out, &p);
	policy_free(&p);
	if (!out) {
		fprintf(stderr, "bpfbox policy: out of memory\n");
		return 1;
	}
	printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY |
								   JSON_C_TO_STRING_SPACED |
								   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(out);
	return 0;
}

int cmd_policy(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;
	int r = cli_word_help(sub, policy_usage);

	if (r >= 0)
		return r;
	if (!streq(sub, "check"))
		return usage_error("unknown subcommand '%s'; the only one is "
				   "'check'",
				   sub);
	return policy_check(argc - 1, argv + 1);
}
