// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <json-c/json.h>
#include <seccomp.h>

#include "cli.h"
#include "../lib/util.h"

#ifndef BPFBOX_VERSION
#define BPFBOX_VERSION "0.0.0"
#endif
#ifndef BPFBOX_GIT_REV
#define BPFBOX_GIT_REV "unknown"
#endif

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"status", cmd_status, "probe what this host can enforce"},
	{"run", cmd_run, "run one command in a sandboxed session"},
	{"policy", cmd_policy, "print and check the effective policy"},
	{"test", cmd_selftest, "smoke-test the sandbox on this host"},
	{"daemon", cmd_daemon, "serve sessions over a unix socket (BPF loaded once)"},
	{"sessions", cmd_sessions, "list the sessions a daemon runs"},
	{"pause", cmd_pause, "freeze a running session"},
	{"resume", cmd_resume, "thaw a paused session, raising its limits first"},
	{"kill", cmd_kill, "kill every process of a session"},
	{"answer", cmd_answer, "answer a command rule's ask (approve, always, deny)"},
	{"net", cmd_net, "allow or deny a destination of a running session"},
	{"events", cmd_events, "print a daemon's live events (json, ocsf, text)"},
	{"top", cmd_top, "watch a daemon's sessions live (ncurses)"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: bpfbox COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "  %-8s %s\n", "version", "print version and library versions");
	fprintf(out, "\nRun 'bpfbox COMMAND --help' for a command's options.\n");
}

static void version(void)
{
	printf("bpfbox %s (git %s)\n", BPFBOX_VERSION, BPFBOX_GIT_REV);
	/* The seccomp filters were compiled at build time by this libseccomp. */
	printf("libbpf %s, libseccomp %d.%d.%d, json-c %s\n", libbpf_version_string(),
	       SCMP_VER_MAJOR, SCMP_VER_MINOR, SCMP_VER_MICRO, json_c_version());
}

/*
 * Under LeakSanitizer (make test-asan) the hidden probe mode runs inside a
 * session whose seccomp filter refuses ptrace, which LSan needs at exit:
 * the probe turns it off instead of dying. No effect in a normal build.
 */
static int probe_mode;

int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return probe_mode;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (streq(cmd, "-h") || streq(cmd, "--help") || streq(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (streq(cmd, "--version") || streq(cmd, "version")) {
		version();
		return 0;
	}
	if (streq(cmd, "__probe")) {
		probe_mode = 1;
		return cmd_probe(argc - 1, argv + 1);
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (streq(cmd, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "bpfbox: unknown command '%s'; run 'bpfbox --help' for the list\n", cmd);
	return EXIT_USAGE;
}
