/* SPDX-License-Identifier: GPL-2.0 */
/* The seccomp layer: a default-allow filter with a deny list (SECURITY.md). */
#ifndef BPFBOX_SECCOMP_H
#define BPFBOX_SECCOMP_H

#include <stdbool.h>

struct seccomp_opts {
	bool deny_network; /* socket() for every family but AF_UNIX */
};

/* A filter built in the parent so the child only has to load it. */
struct seccomp_filter;

int seccomp_filter_build(const struct seccomp_opts *opts,
			 struct seccomp_filter **out);
/* Installs the filter on the calling thread; needs no_new_privs or root. */
int seccomp_filter_load(struct seccomp_filter *f);
void seccomp_filter_free(struct seccomp_filter *f);

#endif
