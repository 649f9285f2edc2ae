/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers shared by every layer: cleanup attributes and file I/O. */
#ifndef BPFBOX_UTIL_H
#define BPFBOX_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_(f)     __attribute__((cleanup(f)))
#define _cleanup_free_   _cleanup_(freep)
#define _cleanup_close_  _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static inline bool startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Reads a small file into buf (NUL-terminated, trailing newline cut). */
int read_file_str(const char *path, char *buf, size_t size);
/* Writes str to an existing file such as a cgroup or sysfs knob. */
int write_file_str(const char *path, const char *str);
/* Whether a whitespace-separated word list contains word. */
bool word_list_has(const char *list, const char *word, const char *seps);
/* Monotonic clock in nanoseconds. */
unsigned long long now_ns(void);
/* Parses a decimal unsigned value; -EINVAL on junk or overflow. */
int parse_u64(const char *s, unsigned long long *out);
/* A size: bytes, or with a suffix K, M, G (powers of 1024, optional B/iB). */
int parse_size(const char *s, uint64_t *out);
/* A size in MB: a bare number is MB, else a size with a suffix, rounded up. */
int parse_size_mb(const char *s, uint64_t *mb);
/* A duration: 500ms, 5s, 2m, 1h; a bare number is seconds. */
int parse_duration_ns(const char *s, uint64_t *ns);

/*
 * Removes path and everything below it, at any depth: openat and unlinkat
 * one name at a time, never a path longer than a name (nftw and rm -r give
 * up past PATH_MAX). Symlinks are removed, never followed; other mounts
 * inside are not entered (EXDEV). 0, or the first -errno met (what could be
 * removed is removed).
 */
int rm_tree(const char *path);

/*
 * Folds "." and ".." out of an absolute path in place ("//" too), lexically:
 * exact when no component before a ".." is a symlink (the directory part
 * of a name the BPF programs resolved has none). A relative path is left
 * as it is.
 */
void path_fold(char *path);

#endif
