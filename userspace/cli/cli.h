/* SPDX-License-Identifier: GPL-2.0 */
/* The CLI is thin: each subcommand parses, calls the library, prints. */
#ifndef BPFBOX_CLI_H
#define BPFBOX_CLI_H

/* Exit codes shared by every subcommand (man/bpfbox.1.scd EXIT STATUS; docs/runtime.md for run). */
#define EXIT_USAGE 2 /* bad command line for status, policy, ... */

int cmd_status(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_selftest(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_sessions(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_answer(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_kill(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_net(int argc, char **argv);
int cmd_probe(int argc, char **argv); /* hidden: run inside `bpfbox test` */

#endif
