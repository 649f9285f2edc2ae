// SPDX-License-Identifier: GPL-2.0
#include <pthread.h>

#include "h2lib.h"
#include "../lib/dynlib.h"

struct h2_lib h2lib;

static const char *const h2_names[] = {
#define H2_NAME(name) #name,
	H2_FUNCTIONS(H2_NAME)
#undef H2_NAME
};

/* The first connection that needs it opens it (lib/dynlib.h). */
static struct dynlib h2_dl = {
	.what = "HTTP/2",
	.soname = "libnghttp2.so.14",
	.package = "libnghttp2-14",
	.prefix = "nghttp2_",
	.names = h2_names,
	.n = sizeof(h2_names) / sizeof(h2_names[0]),
	.table = &h2lib,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

int h2_lib_open(char *err, size_t size)
{
	_Static_assert(sizeof(h2_names) / sizeof(h2_names[0]) * sizeof(void *) == sizeof(h2lib),
		       "one pointer per function");
	return dynlib_open(&h2_dl, err, size);
}
