/* SPDX-License-Identifier: GPL-2.0 */
/* The CLI is thin: each subcommand parses, calls the library, prints. */
#ifndef BPFBOX_CLI_H
#define BPFBOX_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* Exit codes shared by every subcommand (man/bpfbox.1.scd EXIT STATUS; docs/runtime.md for run). */
#define EXIT_USAGE 2 /* bad command line for status, policy, ... */

/*
 * Bad usage, one line on stderr: "bpfbox CMD: MESSAGE; see 'bpfbox CMD
 * --help'"; EXIT_USAGE. cli_bad_option() names the option getopt_long()
 * just refused (argv[optind - 1]); cli_extra_args() the first operand left
 * after the options, or returns 0 when there is none. main() calls each
 * command with getopt at its first argument and getopt's messages off.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_bad_option(const char *cmd, char **argv);
int cli_extra_args(const char *cmd, int argc, char **argv);
/* `bpfbox run --help` (run_usage.c). */
void run_usage(FILE *out);
/*
 * The default of a command's option switch: -h (--help) prints usage on
 * stdout and gives 0; any other option is cli_bad_option().
 */
/*
 * The word a command dispatches on (argv[1]): none prints usage on stderr
 * and gives EXIT_USAGE, -h, --help or help prints it on stdout and gives 0;
 * -1 for any other word, the caller's to dispatch.
 */
int cli_word_help(const char *word, void (*usage)(FILE *out));
int cli_help_or_bad(int opt, const char *cmd, char **argv, void (*usage)(FILE *out));

/*
 * One option of a command for cli_parse(): --name, and -letter too unless
 * letter is 0. Without an argument it sets *(bool *)dst; with one it
 * stores it in *(const char **)dst, or, with check, hands it to
 * check(cmd, opt, arg), which reads it into opt->dst: 0, or EXIT_USAGE
 * after its one line on stderr.
 */
struct cli_opt {
	const char *name;
	char letter;
	bool has_arg;
	void *dst;
	int (*check)(const char *cmd, const struct cli_opt *opt, const char *arg);
};
#define CLI_OPTS_MAX 16

/*
 * Parses the options of command argv[0] (main() passes argv from the
 * command's name) by opts, ended by {0}, in their order; -h and --help
 * print usage on stdout. -1 when all parsed, the operands left from optind
 * (with operands false, one is a usage error); else the exit code: 0 after
 * the help, EXIT_USAGE after one line naming the bad option or operand.
 */
int cli_parse(int argc, char **argv, const struct cli_opt *opts, bool operands,
	      void (*usage)(FILE *out));

/* --label KEY=VALUE: KEY of letters, digits, '_', '.', '-' (1-64), VALUE up to 256. */
bool cli_label_valid(const char *l);

struct daemon_client;
/*
 * Connects c to the daemon on socket (NULL: $BPFBOX_SOCKET or the default):
 * 0, or -errno after "bpfbox CMD: no daemon answers on PATH (why); HINT"
 * on stderr (hint NULL: start one or pass --socket).
 */
int cli_connect(struct daemon_client *c, const char *cmd, const char *socket, int timeout_ms,
		const char *hint);

/* The commands, in the order `bpfbox --help` lists them: name, function, summary. */
#define CLI_COMMANDS(X)                                                                   \
	X("status", cmd_status, "probe what this host can enforce")                       \
	X("run", cmd_run, "run one command in a sandboxed session")                       \
	X("policy", cmd_policy, "print and check the effective policy")                   \
	X("test", cmd_selftest, "smoke-test the sandbox on this host")                    \
	X("daemon", cmd_daemon, "serve sessions over a unix socket (BPF loaded once)")    \
	X("sessions", cmd_sessions, "list the sessions a daemon runs")                    \
	X("pause", cmd_pause, "freeze a running session")                                 \
	X("resume", cmd_resume, "thaw a paused session, raising its limits first")        \
	X("kill", cmd_kill, "kill every process of a session")                            \
	X("answer", cmd_answer, "answer a command rule's ask (approve, always, deny)")    \
	X("adopt", cmd_adopt, "make a running cgroup (a container) a daemon's session")   \
	X("hook", cmd_hook, "OCI runtime hook: adopt an annotated container")             \
	X("net", cmd_net, "allow or deny a destination of a running session")             \
	X("events", cmd_events, "print a daemon's live events (json, ocsf, text)")        \
	X("top", cmd_top, "watch a daemon's sessions live (ncurses)")                     \
	X("changes", cmd_changes, "list a session's change set (--changes review)")       \
	X("apply", cmd_apply, "write a session's change set into its workspace")          \
	X("discard", cmd_discard, "remove a session's change set")                        \
	X("undo", cmd_undo, "restore a workspace to before an apply; --list its history") \
	X("prepare", cmd_prepare, "make a workspace's next review session's overlay ahead")

/*
 * A session id or a unique prefix of one (4 to 32 hex digits, as 'bpfbox
 * sessions' shows them) into the whole id (33 bytes): the daemon's sessions
 * and embedded mode's session cgroups. 0, or an exit code (printed).
 */
int cli_resolve_id(const char *cmd, const char *sock, const char *prefix, char *id);

#define CLI_DECLARE(name, fn, summary) int fn(int argc, char **argv);
CLI_COMMANDS(CLI_DECLARE)
#undef CLI_DECLARE
int cmd_probe(int argc, char **argv); /* hidden: run inside `bpfbox test` */

#endif
