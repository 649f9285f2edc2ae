// SPDX-License-Identifier: GPL-2.0
/* The lines every subcommand prints the same way (see cli.h). */
#include <ctype.h>
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

int cli_parse(int argc, char **argv, const struct cli_opt *opts, bool operands,
	      void (*usage)(FILE *out))
{
	struct option lo[CLI_OPTS_MAX + 2];
	char shorts[2 * CLI_OPTS_MAX + 2] = "h";
	size_t n = 0, ns = 1;
	int c;

	for (; opts[n].name && n < CLI_OPTS_MAX; n++) {
		lo[n] = (struct option){opts[n].name,
					opts[n].has_arg ? required_argument : no_argument, NULL,
					opts[n].letter ? opts[n].letter : 256 + (int)n};
		if (opts[n].letter) {
			shorts[ns++] = opts[n].letter;
			if (opts[n].has_arg)
				shorts[ns++] = ':';
		}
	}
	lo[n] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n + 1] = (struct option){0};
	shorts[ns] = '\0';
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct cli_opt *o = NULL;

		for (size_t i = 0; i < n && !o; i++)
			if (lo[i].val == c)
				o = &opts[i];
		if (!o)
			return cli_help_or_bad(c, argv[0], argv, usage);
		if (!o->has_arg)
			*(bool *)o->dst = true;
		else if (o->check && o->check(argv[0], o, optarg))
			return EXIT_USAGE;
		else if (!o->check)
			*(const char **)o->dst = optarg;
	}
	if (!operands && cli_extra_args(argv[0], argc, argv))
		return EXIT_USAGE;
	return -1;
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

/* KEY=VALUE with a KEY that is a plain identifier and bounded sizes. */
bool cli_label_valid(const char *l)
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
