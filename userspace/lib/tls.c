// SPDX-License-Identifier: GPL-2.0
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "tls.h"

#define TLS_SONAME "libgnutls.so.30"

struct tls_lib tlslib;

/*
 * Sinks may open from more than one thread: the first caller opens the
 * library and fills tlslib under the lock, the others wait and see it
 * done. A failure is not kept: a later open tries again (the library
 * installed meanwhile), and each caller gets its own message.
 */
static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER;
static bool tls_open;

/* dlopen and every symbol into *t: 0, or -ENOENT with err. */
static int tls_load(struct tls_lib *t, char *err, size_t size)
{
	void *h = dlopen(TLS_SONAME, RTLD_NOW | RTLD_LOCAL), *sym;

	if (!h) {
		snprintf(err, size, "TLS needs %s (Debian: libgnutls30): %s", TLS_SONAME,
			 dlerror());
		return -ENOENT;
	}
#define TLS_LOOKUP(name)                        \
	if (!(sym = dlsym(h, "gnutls_" #name))) \
		goto missing;                   \
	t->name = (__typeof__(t->name))sym;
	TLS_FUNCTIONS(TLS_LOOKUP)
#undef TLS_LOOKUP
	if (!(sym = dlsym(h, "gnutls_free")))
		goto missing;
	t->free = sym;
	return 0; /* the handle stays open for the process's life */
missing:
	snprintf(err, size, "TLS: %s lacks a function bpfbox calls: %s", TLS_SONAME, dlerror());
	dlclose(h);
	return -ENOENT;
}

int tls_lib_open(char *err, size_t size)
{
	struct tls_lib t;
	int r = 0;

	pthread_mutex_lock(&tls_lock);
	if (!tls_open) {
		/* Filled whole or not at all: a stand-in without the functions changes nothing. */
		r = tls_load(&t, err, size);
		if (!r) {
			tlslib = t;
			tls_open = true;
		}
	}
	pthread_mutex_unlock(&tls_lock);
	return r;
}
