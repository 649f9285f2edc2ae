// SPDX-License-Identifier: GPL-2.0
/*
 * The audit's file-change programs in an embedded agent's tracepoint mode:
 * one program (bpf/audit.bpf.c's exit_file) attached to the sys_exit
 * tracepoint of each syscall of bpfbox/file_syscalls.h, its row the link's
 * cookie, instead of 29 programs the verifier checks one by one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "agent_internal.h"
#include "bpfbox/events.h"
#include "bpfbox/file_syscalls.h"
#include "../lib/util.h"
#include "audit.skel.h"

#define FILE_ROW(sys, dfd, name, op) {#sys, BPFBOX_FILE_COOKIE(dfd, name, op)},

static const struct {
	const char *sys;
	unsigned long long cookie;
} file_rows[] = {BPFBOX_FILE_SYSCALLS(FILE_ROW)};

_Static_assert(ARRAY_SIZE(file_rows) <= AGENT_FILE_LINKS, "agent.file_links too small");

bool agent_file_syscall(const char *sys)
{
	for (size_t i = 0; i < ARRAY_SIZE(file_rows); i++)
		if (streq(file_rows[i].sys, sys))
			return true;
	return false;
}

int agent_attach_file_links(struct agent *a, bool (*have)(const char *, const char *))
{
	char tp[64];

	for (size_t i = 0; i < ARRAY_SIZE(file_rows); i++) {
		LIBBPF_OPTS(bpf_tracepoint_opts, opts, .bpf_cookie = file_rows[i].cookie);
		struct bpf_link *l;

		snprintf(tp, sizeof(tp), "sys_exit_%s", file_rows[i].sys);
		if (!have("syscalls", tp))
			continue; /* a syscall this kernel lacks */
		l = bpf_program__attach_tracepoint_opts(a->audit->progs.exit_file, "syscalls", tp,
							&opts);
		if (!l) {
			int r = -errno;

			agent_detach_file_links(a);
			return r;
		}
		a->file_links[a->n_file_links++] = l;
	}
	return 0;
}

void agent_detach_file_links(struct agent *a)
{
	while (a->n_file_links > 0)
		bpf_link__destroy(a->file_links[--a->n_file_links]);
}
