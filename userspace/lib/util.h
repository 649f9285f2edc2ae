/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers shared by every layer: cleanup attributes and file I/O. */
#ifndef BPFBOX_UTIL_H
#define BPFBOX_UTIL_H

#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* Closes *fd when open and marks it closed (-1): safe to call twice. */
static inline void fd_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_(f)	 __attribute__((cleanup(f)))
#define _cleanup_free_	 _cleanup_(freep)
#define _cleanup_close_	 _cleanup_(closep)
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
/*
 * A parser's refusal: the message into err (size bytes, cut to fit);
 * returns -EINVAL.
 */
int err_invalid(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The index of s in names[0..n) (NULL entries never match); -EINVAL: none. */
int name_index(const char *const *names, size_t n, const char *s);

/* names[v] when v is in names[0..n) and named there, else other. */
static inline const char *name_of(const char *const *names, size_t n, unsigned int v,
				  const char *other)
{
	return v < n && names[v] ? names[v] : other;
}

/* mkdir -p of the directories above path's last component (mode for the
 * new ones); 0 or -errno, -ENAMETOOLONG past PATH_MAX. */
int mkdir_parents(const char *path, unsigned int mode);

/*
 * Blocks the n signals sigs (the mask before in *old unless NULL; blocked
 * also when it fails) and returns a non-blocking, close-on-exec signalfd
 * that reads them; -errno (errno kept).
 */
int signalfd_block(const int *sigs, size_t n, sigset_t *old);

int read_file_str(const char *path, char *buf, size_t size);
/*
 * The start time of process pid (field 22 of /proc/PID/stat, clock ticks
 * after boot), 0 when unreadable: with the pid, it names one process even
 * after the pid is reused.
 */
unsigned long long proc_start_time(pid_t pid);
/*
 * /proc/PID/stat (pid 0: self) read into buf; the fields after the name
 * (field 3, the state, on), or NULL. The name may hold spaces and ')'.
 */
const char *proc_stat_fields(pid_t pid, char *buf, size_t size);
/* Writes str to an existing file such as a cgroup or sysfs knob. */
int write_file_str(const char *path, const char *str);
/* Whether a whitespace-separated word list contains word. */
bool word_list_has(const char *list, const char *word, const char *seps);
/*
 * Whether path is "/a/b...": absolute, one or more components, none empty,
 * "." or ".." (no "//", no trailing '/'): it names what it spells.
 */
bool path_plain(const char *path);
/* Monotonic clock in nanoseconds. */
unsigned long long now_ns(void);
/* A clock (clock_gettime's) in nanoseconds. */
int64_t clock_now_ns(clockid_t clk);
/* CLOCK_REALTIME in nanoseconds. */
int64_t real_now_ns(void);

#define RFC3339_MAX 40 /* 2026-01-02T03:04:05.123456789Z and its NUL */
/*
 * The one RFC 3339 formatter: UTC time real_ns (CLOCK_REALTIME ns) with
 * digits (0, 3, 6 or 9) fraction digits and a Z, into buf (RFC3339_MAX
 * bytes suffice). Returns the length written.
 */
size_t rfc3339(char *buf, size_t size, int64_t real_ns, unsigned int digits);
/* The time of an RFC 3339 UTC string (a Z, 0 to 9 fraction digits) in *ns; -EINVAL. */
int rfc3339_parse(const char *s, size_t len, int64_t *ns);
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
 * A directory stream of name under dir ("." is dir itself; any other name
 * is not followed when a symlink), or NULL with errno: no descriptor left
 * open either way. closedir() ends it.
 */
DIR *dir_open_at(int dir, const char *name);
/* The stream's next entry but "." and "..", or NULL at its end. */
struct dirent *dir_next(DIR *d);

/*
 * rel beneath dir (openat2 RESOLVE_BENEATH): no symlink, no magic link, no
 * other mount on the way, and rel itself not followed when a symlink; ""
 * is dir itself. fd (O_CLOEXEC added) or -errno (ENOSYS before Linux 5.6).
 */
int open_beneath(int dir, const char *rel, int flags);

/*
 * Folds "." and ".." out of an absolute path in place ("//" too), lexically:
 * exact when no component before a ".." is a symlink (the directory part
 * of a name the BPF programs resolved has none). A relative path is left
 * as it is.
 */
void path_fold(char *path);

/*
 * The length of the well-formed UTF-8 character at s (at most n bytes
 * read): 1 for ASCII, 2..4, or 0 when the bytes are not UTF-8 (overlong
 * forms, surrogates and code points past U+10FFFF are not). Inline: the
 * JSON writer calls it for every byte of the audit stream.
 */
static inline size_t utf8_char_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are invalid. */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/*
 * Copies src into dst (size bytes with the NUL) so that a terminal shows
 * it as text: C0 controls, DEL, C1 controls (U+0080..U+009F, as UTF-8 or as
 * raw 8-bit bytes) and bytes that are not UTF-8 each become '?'; a
 * well-formed UTF-8 character is kept whole or not at all (the cut never
 * splits one). dst may be src. Returns the length written.
 */
size_t term_clean(char *dst, size_t size, const char *src);

#endif
