// SPDX-License-Identifier: GPL-2.0
/* bpfbox status: print the probes, as text or as the JSON in docs/status.md. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"
#include "../probe/probe.h"
#include "../monitor/limits.h"
#include "../lib/util.h"

#define STATUS_SCHEMA_VERSION 1

static void status_usage(FILE *out)
{
	fprintf(out, "usage: bpfbox status [--json] [--require LEVEL]\n"
		     "  --json           print the probes as one JSON object\n"
		     "  --require LEVEL  exit 1 unless the host reaches LEVEL "
		     "(None, Minimal, Standard, Full)\n");
}

/* Splits "a,b c" into a JSON array of words. */
static struct json_object *word_array(const char *list)
{
	struct json_object *arr = json_object_new_array();
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok_r(buf, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
		json_object_array_add(arr, json_object_new_string(w));
	return arr;
}

static struct json_object *status_json(const struct host_caps *caps)
{
	struct json_object *o = json_object_new_object();
	struct json_object *feats = json_object_new_object();
	struct json_object *ll = json_object_new_object();
	struct json_object *cg = json_object_new_object();
	char rights[256];

	json_object_object_add(o, "schema_version", json_object_new_int(STATUS_SCHEMA_VERSION));
	json_object_object_add(o, "level", json_object_new_string(level_name(caps->level)));
	json_object_object_add(o, "kernel_release", json_object_new_string(caps->kernel_release));
	json_object_object_add(o, "root", json_object_new_boolean(caps->root));
	for (int id = 0; id < FEAT__COUNT; id++) {
		const struct feature *f = &caps->feat[id];
		struct json_object *fo = json_object_new_object();

		json_object_object_add(fo, "available",
				       json_object_new_boolean(f->state == FEAT_YES));
		json_object_object_add(fo, "state",
				       json_object_new_string(feat_state_name(f->state)));
		json_object_object_add(fo, "errno",
				       f->err ? json_object_new_string(strerrorname_np(f->err))
					      : NULL);
		json_object_object_add(fo, "detail", json_object_new_string(f->detail));
		json_object_object_add(feats, feature_key(id), fo);
	}
	json_object_object_add(o, "features", feats);

	landlock_rights_describe(&caps->landlock, rights, sizeof(rights));
	json_object_object_add(ll, "abi", json_object_new_int(caps->landlock.abi));
	json_object_object_add(ll, "kernel_abi", json_object_new_int(caps->landlock_kernel_abi));
	json_object_object_add(ll, "rights", word_array(rights));
	json_object_object_add(o, "landlock", ll);

	json_object_object_add(o, "audit_attach", json_object_new_string(probe_audit_attach(caps)));
	json_object_object_add(o, "lsm_list", word_array(caps->lsm_list));
	json_object_object_add(cg, "v2_mount",
			       caps->cgroup2_mount[0] ? json_object_new_string(caps->cgroup2_mount)
						      : NULL);
	json_object_object_add(cg, "v2_controllers", word_array(caps->cgroup2_controllers));
	json_object_object_add(cg, "v1_controllers", word_array(caps->cgroup1_controllers));
	json_object_object_add(cg, "hybrid", json_object_new_boolean(caps->cgroup1_controllers[0]));
	json_object_object_add(o, "cgroup", cg);
	if (caps->limits_probed) {
		struct json_object *lim = json_object_new_object();

		for (int r = 0; r < RES__COUNT; r++)
			json_object_object_add(
				lim, limit_res_name(r),
				json_object_new_string(limit_how_name(caps->limits_how[r])));
		json_object_object_add(lim, "pause",
				       json_object_new_string(caps->limits_pause ? "cgroup2"
										 : "none"));
		json_object_object_add(lim, "disk", json_object_new_string("inotify"));
		json_object_object_add(o, "limits", lim);
	}
	return o;
}

static void status_text(const struct host_caps *caps)
{
	const struct feature *lsm = &caps->feat[FEAT_BPF_LSM];

	printf("kernel %s, probed as %s\n", caps->kernel_release,
	       caps->root ? "root" : "an unprivileged user");
	for (int id = 0; id < FEAT__COUNT; id++) {
		const struct feature *f = &caps->feat[id];

		printf("  %-30s %-12s %s\n", feature_label(id), feat_state_name(f->state),
		       f->detail);
	}
	printf("audit attach: %s", probe_audit_attach(caps));
	if (streq(probe_audit_attach(caps), "tracepoint"))
		printf(" (fexit: %s; syscall tracepoints put every task on the syscall slow path)",
		       caps->feat[FEAT_FEXIT].detail);
	printf("\n");
	printf("level: %s", level_name(caps->level));
	if (caps->level < LEVEL_FULL && lsm->state != FEAT_YES)
		printf(" (no BPF LSM: %s)", lsm->detail);
	printf("\n");
}

static int check_level(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	if (level_parse(arg, opt->dst) == 0)
		return 0;
	fprintf(stderr,
		"bpfbox %s: unknown level '%s'; valid levels: None, Minimal, Standard, Full\n", cmd,
		arg);
	return EXIT_USAGE;
}

int cmd_status(int argc, char **argv)
{
	enum bpfbox_level required = LEVEL_NONE;
	struct host_caps caps;
	bool json = false;
	const struct cli_opt opts[] = {
		{"json", 'j', false, &json},
		{"require", 'r', true, &required, check_level},
		{0},
	};
	int r = cli_parse(argc, argv, opts, false, status_usage);

	if (r >= 0)
		return r;
	probe_host(&caps, PROBE_ALL);
	if (json) {
		struct json_object *o = status_json(&caps);

		printf("%s\n",
		       json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								 JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		status_text(&caps);
	}
	if (caps.level < required) {
		fprintf(stderr, "bpfbox status: host is at level %s, below the required %s\n",
			level_name(caps.level), level_name(required));
		return 1;
	}
	return 0;
}
