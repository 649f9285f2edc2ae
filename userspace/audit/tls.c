// SPDX-License-Identifier: GPL-2.0
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "tls.h"

#define TLS_SONAME "libgnutls.so.30"

struct tls_lib tlslib;

int tls_lib_open(char *err, size_t size)
{
	static void *handle;
	void *h, *sym;

	if (handle)
		return 0;
	h = dlopen(TLS_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, size, "TLS needs %s (Debian: libgnutls30): %s", TLS_SONAME,
			 dlerror());
		return -ENOENT;
	}
#define TLS_LOOKUP(name)                        \
	if (!(sym = dlsym(h, "gnutls_" #name))) \
		goto missing;                   \
	tlslib.name = (__typeof__(tlslib.name))sym;
	TLS_FUNCTIONS(TLS_LOOKUP)
#undef TLS_LOOKUP
	if (!(sym = dlsym(h, "gnutls_free")))
		goto missing;
	tlslib.free = sym;
	handle = h;
	return 0;
missing:
	snprintf(err, size, "TLS: %s lacks a function bpfbox calls: %s", TLS_SONAME, dlerror());
	dlclose(h);
	return -ENOENT;
}
