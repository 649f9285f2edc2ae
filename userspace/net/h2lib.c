// SPDX-License-Identifier: GPL-2.0
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "h2lib.h"

#define H2_SONAME "libnghttp2.so.14"

struct h2_lib h2lib;

static const char *const h2_names[] = {
#define H2_NAME(name) "nghttp2_" #name,
	H2_FUNCTIONS(H2_NAME)
#undef H2_NAME
};

static pthread_mutex_t h2_lock = PTHREAD_MUTEX_INITIALIZER;
static bool h2_open;

/*
 * The first connection that needs it opens the library and fills h2lib
 * whole, under the lock; a failure is not kept, so a later one tries
 * again. The table's members are the functions in H2_FUNCTIONS' order.
 */
int h2_lib_open(char *err, size_t size)
{
	void *slots[sizeof(h2_names) / sizeof(h2_names[0])];
	void *h = NULL;
	int r = 0;

	_Static_assert(sizeof(slots) == sizeof(h2lib), "one pointer per function");
	pthread_mutex_lock(&h2_lock);
	if (h2_open)
		goto out;
	h = dlopen(H2_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, size, "HTTP/2 needs %s (Debian: libnghttp2-14): %s", H2_SONAME,
			 dlerror());
		r = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		slots[i] = dlsym(h, h2_names[i]);
		if (!slots[i]) {
			snprintf(err, size, "HTTP/2: %s lacks %s", H2_SONAME, h2_names[i]);
			dlclose(h);
			r = -ENOENT;
			goto out;
		}
	}
	memcpy(&h2lib, slots, sizeof(h2lib)); /* the handle stays open for the process's life */
	h2_open = true;
out:
	pthread_mutex_unlock(&h2_lock);
	return r;
}
