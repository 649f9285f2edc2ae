/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A shared library opened with dlopen() at its first use (GnuTLS for the
 * TLS sinks and the proxy, nghttp2 for HTTP/2): a process that never needs
 * it loads nothing, and a host without it fails where it is needed, with a
 * message naming the package. The caller's table is an array of pointers,
 * one per name, in order: filled whole under the lock, or not at all.
 */
#ifndef BPFBOX_LIB_DYNLIB_H
#define BPFBOX_LIB_DYNLIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct dynlib {
	const char *what;	  /* "TLS": the messages' subject */
	const char *soname;	  /* "libgnutls.so.30" */
	const char *package;	  /* Debian's: "libgnutls30" */
	const char *prefix;	  /* of every symbol: "gnutls_" */
	const char *const *names; /* without the prefix */
	size_t n;		  /* names, and pointers in table */
	void *table;		  /* n pointers */
	pthread_mutex_t lock;	  /* PTHREAD_MUTEX_INITIALIZER */
	bool open;
};

/*
 * Opens the library once per process; the first caller fills the table,
 * later ones wait and see it done. A failure is not kept: a later call
 * tries again (the package installed meanwhile). 0, or -ENOENT with err.
 */
int dynlib_open(struct dynlib *l, char *err, size_t size);

#endif
