// SPDX-License-Identifier: GPL-2.0
/* The lines every subcommand prints the same way (see cli.h). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "../daemon/client.h"

#define CLI_START_DAEMON "start one with 'bpfbox daemon' or pass --socket"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bpfbox %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; see 'bpfbox %s --help'\n", cmd);
	return EXIT_USAGE;
}

int cli_bad_option(const char *cmd, char **argv)
{
	return cli_usage_error(cmd, "unknown or incomplete option '%s'", argv[optind - 1]);
}

int cli_word_help(const char *word, void (*usage)(FILE *out))
{
	if (!word) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(word, "-h") && strcmp(word, "--help") && strcmp(word, "help"))
		return -1;
	usage(stdout);
	return 0;
}

int cli_help_or_bad(int opt, const char *cmd, char **argv, void (*usage)(FILE *out))
{
	if (opt != 'h')
		return cli_bad_option(cmd, argv);
	usage(stdout);
	return 0;
}

int cli_extra_args(const char *cmd, int argc, char **argv)
{
	if (optind >= argc)
		return 0;
	return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
}

int cli_connect(struct daemon_client *c, const char *cmd, const char *socket, int timeout_ms,
		const char *hint)
{
	const char *path = daemon_socket_path(socket);
	int r = daemon_client_connect(c, path, timeout_ms);

	if (r < 0)
		fprintf(stderr, "bpfbox %s: no daemon answers on %s (%s); %s\n", cmd, path,
			strerror(-r), hint ? hint : CLI_START_DAEMON);
	return r;
}
