/* SPDX-License-Identifier: GPL-2.0 */
/* The daemon's config file and its reload (docs/operating.md). */
#ifndef BPFBOX_DAEMON_CONFIG_H
#define BPFBOX_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "../policy/ceiling.h"

struct daemon;
struct daemon_opts;
struct sink_config;

struct json_object;

/*
 * Reads --config: its sinks (appended to *sinks), ceilings and named
 * policies (*policies: NAME -> effective policy JSON, NULL when none).
 * 0, or -errno with err.
 */
int daemon_config_load(const char *path, struct sink_config **sinks, size_t *nsinks,
		       struct ceilings *ceil, struct json_object **policies, char *err,
		       size_t size);

/* NAME is 1-64 of A-Z a-z 0-9 . _ - (a key of "policies"). */
bool daemon_policy_name_valid(const char *name);

/* The sinks to open: --audit (or stdout), --sink, then the file's. */
int daemon_sink_list(const struct daemon_opts *o, const struct sink_config *file_sinks,
		     size_t nfile, struct sink_config **out, size_t *n);

/*
 * SIGHUP, `bpfbox daemon reload`: reads the config again. 0 (why: "reloaded"),
 * or -errno with the one line of why it was refused (also logged); the
 * running configuration then stays.
 */
int daemon_reload(struct daemon *d, char *why, size_t size);

#endif
