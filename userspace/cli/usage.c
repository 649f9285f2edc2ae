// SPDX-License-Identifier: GPL-2.0
/* The bad-usage lines every subcommand prints (see cli.h). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

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

int cli_extra_args(const char *cmd, int argc, char **argv)
{
	if (optind >= argc)
		return 0;
	return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
}
