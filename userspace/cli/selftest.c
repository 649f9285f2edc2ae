// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox test: smoke checks of the sandbox on this host. Each check runs a
 * real session whose command is this binary's hidden `__probe` mode, which
 * tries one action and reports through its exit code whether the kernel
 * allowed it (0), denied it (1) or failed otherwise (2). Denied: EACCES or
 * EPERM (Landlock, seccomp), or with the session's namespaces EROFS (a
 * read-only mount) and ENOENT (the path is not in the session's view; the
 * probed paths are planted by the test, so they exist outside).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "../policy/policy.h"
#include "../sandbox/session.h"
#include "../lib/log.h"
#include "../lib/util.h"

enum probe_result {
	PROBE_ALLOWED = 0,
	PROBE_DENIED = 1,
	PROBE_OTHER = 2,
};

static int result_of_errno(int err)
{
	return err == EACCES || err == EPERM || err == EROFS || err == ENOENT ? PROBE_DENIED
									      : PROBE_OTHER;
}

static int probe_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return result_of_errno(errno);
	close(fd);
	return PROBE_ALLOWED;
}

static int probe_read(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return result_of_errno(errno);
	close(fd);
	return PROBE_ALLOWED;
}

/*
 * A way out of the session: a UDP connect, which sends nothing, only asks
 * the kernel for a route to an outside address (TEST-NET-3). Refused, or
 * no route (the session's own network namespace has only its loopback):
 * denied. A TCP connect to 127.0.0.1 would reach that loopback's own port.
 */
static int probe_connect(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(9)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return result_of_errno(errno);
	sin.sin_addr.s_addr = htonl(0xcb007101); /* 203.0.113.1 */
	r = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ? errno : 0;
	close(fd);
	if (r == ENETUNREACH || (r && result_of_errno(r) == PROBE_DENIED))
		return PROBE_DENIED;
	return PROBE_ALLOWED;
}

/* A forked child tries the write: restrictions must be inherited. */
static int probe_child_write(const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return PROBE_OTHER;
	if (pid == 0)
		_exit(probe_write(path));
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return PROBE_OTHER;
	return WEXITSTATUS(status);
}

/* The hidden mode run inside the sessions of `bpfbox test`. */
int cmd_probe(int argc, char **argv)
{
	if (argc >= 3 && streq(argv[1], "write"))
		return probe_write(argv[2]);
	if (argc >= 3 && streq(argv[1], "read"))
		return probe_read(argv[2]);
	if (argc >= 3 && streq(argv[1], "child-write"))
		return probe_child_write(argv[2]);
	if (argc >= 2 && streq(argv[1], "connect"))
		return probe_connect();
	if (argc >= 2 && streq(argv[1], "sleep")) {
		sleep(60);
		return PROBE_ALLOWED;
	}
	return PROBE_OTHER;
}

struct selftest {
	char exe[PATH_MAX];
	char workspace[PATH_MAX];
	char outside[PATH_MAX];
	int failed;
};

/* Runs `bpfbox __probe ARGS` in a fresh session; returns its exit code. */
static int run_probe(struct selftest *t, const char *const args[], uint64_t timeout_s)
{
	struct json_object *flags = json_object_new_object();
	struct json_object *extra = json_object_new_object();
	struct json_object *ro = json_object_new_array();
	struct json_object *limits = json_object_new_object();
	struct policy_sources src = {.flags = flags};
	struct policy_error perr = {0};
	struct bpfbox_policy p;
	struct session s;
	char *argv[8] = {t->exe, "__probe"};
	int code = -1;

	for (int i = 0; args[i] && i < 5; i++)
		argv[2 + i] = (char *)args[i];
	json_object_object_add(flags, "workspace", json_object_new_string(t->workspace));
	json_object_array_add(ro, json_object_new_string(t->exe));
	json_object_object_add(extra, "ro", ro);
	json_object_object_add(flags, "extra", extra);
	json_object_object_add(limits, "timeout_s", json_object_new_int64(timeout_s));
	json_object_object_add(flags, "limits", limits);
	/* Only the built-in defaults: the smoke test checks the sandbox, not a config. */
	src.no_global = true;
	if (policy_load(&p, &src, &perr) == 0 && session_plan(&s, &p) == 0 &&
	    session_run(&s, argv) == 0)
		code = s.result.exit_code;
	else
		fprintf(stderr, "bpfbox test: could not start a session: %s\n", perr.message);
	if (s.policy)
		session_cleanup(&s);
	policy_free(&p);
	json_object_put(flags);
	return code;
}

static void check(struct selftest *t, const char *what, bool passed, const char *detail)
{
	if (passed || !detail)
		detail = "";
	printf("%-4s %s%s%s\n", passed ? "ok" : "FAIL", what, *detail ? ": " : "", detail);
	if (!passed)
		t->failed++;
}

static void check_probe(struct selftest *t, const char *what, const char *const args[], int want)
{
	int got = run_probe(t, args, 30);
	char detail[96];

	snprintf(detail, sizeof(detail), "probe exit %d, want %d (0 allowed, 1 denied)", got, want);
	check(t, what, got == want, detail);
}

/* Plants a file under ~/.ssh (made if missing) and removes what it made. */
static void check_ssh(struct selftest *t)
{
	const char *home = getenv("HOME");
	char dir[PATH_MAX], file[PATH_MAX + 32];
	bool made_dir = false;
	int fd;

	if (!home || home[0] != '/') {
		check(t, "read of a planted file under ~/.ssh denied", false, "HOME is not set");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/.ssh", home);
	if (mkdir(dir, 0700) == 0)
		made_dir = true;
	snprintf(file, sizeof(file), "%s/bpfbox-selftest-%d", dir, getpid());
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		check(t, "read of a planted file under ~/.ssh denied", false, strerror(errno));
	} else {
		const char *args[] = {"read", file, NULL};

		close(fd);
		check_probe(t, "read of a planted file under ~/.ssh denied", args, PROBE_DENIED);
		unlink(file);
	}
	if (made_dir)
		rmdir(dir);
}

int cmd_selftest(int argc, char **argv)
{
	struct selftest t = {0};
	char file[PATH_MAX + 16];
	uint64_t start;
	int code;

	if (argc > 1 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
		printf("usage: bpfbox test\n  smoke checks of the sandbox on this host; exit 1 if "
		       "one fails\n");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "bpfbox test: unexpected argument '%s'; usage: bpfbox test\n",
			argv[1]);
		return EXIT_USAGE;
	}
	log_set_level(LOG_LVL_ERROR);
	if (!realpath("/proc/self/exe", t.exe)) {
		fprintf(stderr, "bpfbox test: cannot find its own binary: %s\n", strerror(errno));
		return 1;
	}
	snprintf(t.workspace, sizeof(t.workspace), "/tmp/bpfbox-selftest-ws-XXXXXX");
	snprintf(t.outside, sizeof(t.outside), "/tmp/bpfbox-selftest-out-XXXXXX");
	if (!mkdtemp(t.workspace) || !mkdtemp(t.outside)) {
		fprintf(stderr, "bpfbox test: cannot create temp dirs in /tmp: %s\n",
			strerror(errno));
		return 1;
	}

	snprintf(file, sizeof(file), "%s/inside", t.workspace);
	check_probe(&t, "write in the workspace allowed", (const char *[]){"write", file, NULL},
		    PROBE_ALLOWED);
	unlink(file);
	snprintf(file, sizeof(file), "%s/outside", t.outside);
	check_probe(&t, "write outside the workspace denied", (const char *[]){"write", file, NULL},
		    PROBE_DENIED);
	check(&t, "nothing was written outside", access(file, F_OK) < 0, "the file exists");
	unlink(file);
	check_ssh(&t);
	check_probe(&t, "network denied", (const char *[]){"connect", NULL}, PROBE_DENIED);
	check_probe(&t, "children inherit the restrictions",
		    (const char *[]){"child-write", file, NULL}, PROBE_DENIED);
	unlink(file);

	start = now_ns();
	code = run_probe(&t, (const char *[]){"sleep", NULL}, 1);
	check(&t, "timeout enforced (exit 124 within 4 s)",
	      code == EXIT_TIMEOUT && now_ns() - start < 4000000000ULL, NULL);

	rmdir(t.workspace);
	rmdir(t.outside);
	printf("%s: %d check%s failed\n", t.failed ? "FAILED" : "PASSED", t.failed,
	       t.failed == 1 ? "" : "s");
	return t.failed ? 1 : 0;
}
