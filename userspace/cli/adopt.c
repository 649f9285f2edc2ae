// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox adopt --cgroup PATH --policy NAME: a cgroup someone else runs (a
 * container, a systemd unit) made a session of the daemon (op adopt).
 * bpfbox hook oci STAGE: the same for an OCI runtime's hook (hooks.d of
 * Podman and CRI-O), the container's state on stdin: at createRuntime a
 * container whose annotation io.bpfbox.policy names a policy is adopted,
 * and a failure stops it from starting (docs/daemon.md, "Adopted cgroups").
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "../daemon/client.h"
#include "../lib/cgroup.h"
#include "../lib/util.h"
#include "../policy/policy.h"

#define CALL_TIMEOUT_MS	  5000
#define STATE_MAX	  (1 << 20)
#define POLICY_ANNOTATION "io.bpfbox.policy"

static struct strv labels; /* KEY=VALUE, as bpfbox run --label */

static void adopt_usage(FILE *out)
{
	fprintf(out,
		"usage: bpfbox adopt --cgroup PATH --policy NAME [--label KEY=VALUE]... "
		"[--socket PATH]\n"
		"  makes the processes of a running cgroup v2 directory (a container's, a\n"
		"  unit's) a session of the daemon, under NAME of its config's \"policies\";\n"
		"  the session ends when the cgroup empties. Root only. Prints the session id.\n"
		"  --socket PATH  the daemon's socket (default $BPFBOX_SOCKET "
		"or " DAEMON_SOCKET_DEFAULT ")\n"
		"exit: 0 adopted; 1 no daemon, or the daemon refused (the line says why);\n"
		"2 bad usage\n");
}

static int add_label(const char *cmd, const struct cli_opt *opt, const char *arg)
{
	(void)opt;
	if (!cli_label_valid(arg))
		return cli_usage_error(cmd,
				       "--label '%s': give KEY=VALUE, KEY of letters, digits, "
				       "'_', '.', '-' (up to 64), VALUE up to 256 bytes",
				       arg);
	return strv_push(&labels, arg) < 0 ? EXIT_USAGE : 0;
}

/*
 * The daemon's adopt: 0 with the session id printed, or 1 after one line on
 * stderr. The network namespace of pid (0: of the cgroup's first process)
 * goes with the request, for a policy's egress proxy to listen in: the
 * caller, root, may open it; the daemon, with fewer capabilities, may not.
 */
static int adopt(const char *cmd, const char *sock, const char *cgroup, const char *policy,
		 const char *hint, pid_t pid)
{
	struct daemon_client c;
	struct json_object *reply = NULL, *v;
	char msg[1024];
	int r, ns;

	if (cli_connect(&c, cmd, sock, CALL_TIMEOUT_MS, hint) < 0)
		return 1;
	ns = cgroup_netns_open(cgroup, pid);
	c.attach_fd = ns; /* none (< 0): the daemon refuses a policy with names */
	r = daemon_adopt(&c, cgroup, policy, &labels, &reply, msg, sizeof(msg));
	if (ns >= 0)
		close(ns);
	daemon_client_close(&c);
	if (r < 0) {
		/* msg is the daemon's "adopt: ..." line. */
		fprintf(stderr, "bpfbox %s%s%s%s\n", streq(cmd, "adopt") ? "" : "hook oci: ", msg,
			hint ? "; " : "", hint ? hint : "");
		return 1;
	}
	if (json_object_object_get_ex(reply, "session", &v))
		printf("%s\n", json_object_get_string(v));
	json_object_put(reply);
	return 0;
}

int cmd_adopt(int argc, char **argv)
{
	const char *sock = NULL, *cgroup = NULL, *policy = NULL;
	const struct cli_opt opts[] = {{"cgroup", 0, true, &cgroup},
				       {"policy", 0, true, &policy},
				       {"label", 0, true, NULL, add_label},
				       {"socket", 0, true, &sock},
				       {0}};
	int r = cli_parse(argc, argv, opts, false, adopt_usage);

	if (r < 0 && (!cgroup || !policy))
		r = cli_usage_error("adopt", "give --cgroup PATH and --policy NAME");
	else if (r < 0)
		r = adopt("adopt", sock, cgroup, policy, NULL, 0);
	strv_clear(&labels);
	return r;
}

static void hook_usage(FILE *out)
{
	fprintf(out,
		"usage: bpfbox hook oci createRuntime|poststop [--socket PATH]\n"
		"  an OCI runtime hook (hooks.d, packaging/oci/bpfbox.json); the\n"
		"  container's state is on stdin. At createRuntime a container annotated\n"
		"  " POLICY_ANNOTATION "=NAME is adopted under the daemon's policy NAME; when\n"
		"  that fails the hook fails, and the runtime does not start the container.\n"
		"  poststop: nothing to do (the session ends when the cgroup empties).\n"
		"exit: 0 adopted, or nothing asked; 1 not adopted (the line says why); 2 bad\n"
		"usage or a state that is not an OCI state\n");
}

/* The labels a container's annotations and state give its session. */
static void container_labels(struct json_object *state, struct json_object *ann)
{
	static const char *const keys[][2] = {
		{"io.kubernetes.pod.namespace", "k8s.namespace"},
		{"io.kubernetes.pod.name", "k8s.pod"},
		{"io.kubernetes.container.name", "k8s.container"},
		{"io.kubernetes.cri-o.ImageName", "image"},
		{"org.opencontainers.image.ref.name", "image"},
		{"io.bpfbox.name", "name"},
	};
	struct json_object *v;
	char l[64 + 1 + 256 + 1];

	if (json_object_object_get_ex(state, "id", &v) && json_object_get_string_len(v) <= 256) {
		snprintf(l, sizeof(l), "oci.id=%s", json_object_get_string(v));
		strv_push(&labels, l);
	}
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (json_object_object_get_ex(ann, keys[i][0], &v) &&
		    json_object_is_type(v, json_type_string) &&
		    json_object_get_string_len(v) <= 256) {
			snprintf(l, sizeof(l), "%s=%s", keys[i][1], json_object_get_string(v));
			strv_push(&labels, l);
		}
}

/* stdin's OCI state, parsed; NULL after one line on stderr. */
static struct json_object *read_state(void)
{
	char *buf = malloc(STATE_MAX + 1);
	size_t n = 0;
	ssize_t k;
	struct json_object *state = NULL, *v;

	while (buf && n < STATE_MAX && (k = read(0, buf + n, STATE_MAX - n)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		n += k;
	}
	if (buf) {
		buf[n] = '\0';
		state = json_tokener_parse(buf);
	}
	free(buf);
	if (!state || !json_object_is_type(state, json_type_object) ||
	    !json_object_object_get_ex(state, "id", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		fprintf(stderr, "bpfbox hook oci: stdin is not an OCI container state (a JSON "
				"object with \"id\" and \"pid\"); run it as a runtime hook\n");
		json_object_put(state);
		return NULL;
	}
	return state;
}

/* createRuntime: the annotated container adopted, else it does not start. */
static int hook_create(struct json_object *state, const char *sock)
{
	struct json_object *ann = NULL, *v;
	const char *id = json_object_get_string(json_object_object_get(state, "id")), *policy;
	char cg[PATH_MAX], hint[160];
	int64_t pid;
	int r;

	if (!json_object_object_get_ex(state, "annotations", &ann) ||
	    !json_object_object_get_ex(ann, POLICY_ANNOTATION, &v) ||
	    !json_object_is_type(v, json_type_string))
		return 0; /* not asked for: the hook's "when" should not have matched */
	policy = json_object_get_string(v);
	if (!json_object_object_get_ex(state, "pid", &v) || (pid = json_object_get_int64(v)) <= 0 ||
	    pid > INT_MAX) {
		fprintf(stderr,
			"bpfbox hook oci: container %s not adopted: its state has no "
			"pid (run the hook at createRuntime); it does not start\n",
			id);
		return 1;
	}
	r = cgroup_dir_of_pid(pid, cg, sizeof(cg));
	if (r < 0) {
		fprintf(stderr,
			"bpfbox hook oci: container %s not adopted: no cgroup v2 of pid "
			"%lld (%s); it does not start\n",
			id, (long long)pid, strerror(-r));
		return 1;
	}
	container_labels(state, ann);
	snprintf(hint, sizeof(hint), "container %.64s does not start unwatched", id);
	r = adopt("hook oci", sock, cg, policy, hint, (pid_t)pid);
	strv_clear(&labels);
	return r;
}

int cmd_hook(int argc, char **argv)
{
	const char *sock = NULL, *stage;
	const struct cli_opt opts[] = {{"socket", 0, true, &sock}, {0}};
	struct json_object *state;
	int r = cli_parse(argc, argv, opts, true, hook_usage);

	if (r >= 0)
		return r;
	if (optind != argc - 2 || !streq(argv[optind], "oci"))
		return cli_usage_error("hook", "give 'oci' and the stage (createRuntime or "
					       "poststop)");
	stage = argv[optind + 1];
	if (!streq(stage, "createRuntime") && !streq(stage, "poststop"))
		return cli_usage_error("hook", "stage '%s': createRuntime or poststop", stage);
	state = read_state();
	if (!state)
		return EXIT_USAGE;
	r = streq(stage, "createRuntime") ? hook_create(state, sock) : 0;
	json_object_put(state);
	return r;
}
