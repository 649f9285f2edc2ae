// SPDX-License-Identifier: GPL-2.0
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <json-c/json.h>
#include <seccomp.h>

#include "cli.h"
#include "../lib/util.h"
#include "../sandbox/changes.h"

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
#define CLI_ENTRY(name, fn, summary) {name, fn, summary},
	CLI_COMMANDS(CLI_ENTRY)
#undef CLI_ENTRY
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
	int r = cli_word_help(cmd, usage);

	if (r >= 0)
		return r;
	if (streq(cmd, "--version") || streq(cmd, "version")) {
		version();
		return 0;
	}
	if (streq(cmd, "__changes-keep")) /* hidden: a review session's end (changes_warm.c) */
		return changes_keep_main(argc - 1, argv + 1);
	if (streq(cmd, "__probe")) {
		probe_mode = 1;
		return cmd_probe(argc - 1, argv + 1);
	}
	/* getopt_long() starts at the command's first argument (optind 1) and
	 * leaves bad usage to the command (cli_bad_option). */
	opterr = 0;
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (streq(cmd, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "bpfbox: unknown command '%s'; run 'bpfbox --help' for the list\n", cmd);
	return EXIT_USAGE;
}
