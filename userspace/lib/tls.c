// SPDX-License-Identifier: GPL-2.0
#include <pthread.h>

#include "dynlib.h"
#include "tls.h"

struct tls_lib tlslib;

static const char *const tls_names[] = {
#define TLS_NAME(name) #name,
	TLS_FUNCTIONS(TLS_NAME)
#undef TLS_NAME
		"free", /* a variable: tlslib.free is its address */
};

/* Sinks may open it from more than one thread (lib/dynlib.h). */
static struct dynlib tls_dl = {
	.what = "TLS",
	.soname = "libgnutls.so.30",
	.package = "libgnutls30",
	.prefix = "gnutls_",
	.names = tls_names,
	.n = sizeof(tls_names) / sizeof(tls_names[0]),
	.table = &tlslib,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

int tls_lib_open(char *err, size_t size)
{
	_Static_assert(sizeof(tls_names) / sizeof(tls_names[0]) * sizeof(void *) == sizeof(tlslib),
		       "one pointer per name");
	return dynlib_open(&tls_dl, err, size);
}
