// SPDX-License-Identifier: GPL-2.0
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynlib.h"

/* dlopen and every symbol into slots: 0, or -ENOENT with err. */
static int dynlib_load(const struct dynlib *l, void **slots, char *err, size_t size)
{
	void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	char sym[128];

	if (!h) {
		snprintf(err, size, "%s needs %s (Debian: %s): %s", l->what, l->soname, l->package,
			 dlerror());
		return -ENOENT;
	}
	for (size_t i = 0; i < l->n; i++) {
		snprintf(sym, sizeof(sym), "%s%s", l->prefix, l->names[i]);
		slots[i] = dlsym(h, sym);
		if (!slots[i]) {
			snprintf(err, size, "%s: %s lacks a function bpfbox calls: %s", l->what,
				 l->soname, sym);
			dlclose(h);
			return -ENOENT;
		}
	}
	return 0; /* the handle stays open for the process's life */
}

int dynlib_open(struct dynlib *l, char *err, size_t size)
{
	void **slots;
	int r = 0;

	pthread_mutex_lock(&l->lock);
	if (!l->open) {
		slots = calloc(l->n, sizeof(*slots));
		r = slots ? dynlib_load(l, slots, err, size) : -ENOMEM;
		if (!slots)
			snprintf(err, size, "%s: %s", l->what, strerror(ENOMEM));
		if (!r) {
			memcpy(l->table, slots, l->n * sizeof(*slots));
			l->open = true;
		}
		free(slots);
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}
