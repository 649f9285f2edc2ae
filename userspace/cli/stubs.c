// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include "cli.h"
int cmd_run(int argc, char **argv) { (void)argc; (void)argv; return 125; }
int cmd_policy(int argc, char **argv) { (void)argc; (void)argv; return 2; }
int cmd_selftest(int argc, char **argv) { (void)argc; (void)argv; return 1; }
