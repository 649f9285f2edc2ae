// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int read_file_str(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = -1;
	ssize_t n;

	if (size == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return (int)n;
}

const char *proc_stat_fields(pid_t pid, char *buf, size_t size)
{
	char path[64], *p;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	if (read_file_str(path, buf, size) < 0 || !(p = strrchr(buf, ')')))
		return NULL;
	return p + 1;
}

unsigned long long proc_start_time(pid_t pid)
{
	char buf[1024];
	const char *p = proc_stat_fields(pid, buf, sizeof(buf));
	unsigned long long t = 0;

	if (!p || sscanf(p,
			 " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			 "%*d %*d %*d %*d %llu",
			 &t) != 1)
		return 0;
	return t;
}

int write_file_str(const char *path, const char *str)
{
	_cleanup_close_ int fd = -1;
	size_t len = strlen(str);
	ssize_t n;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, str, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

bool path_plain(const char *path)
{
	if (*path != '/')
		return false;
	while (*path == '/') {
		size_t k = strcspn(++path, "/");

		if (!k || (k == 1 && path[0] == '.') ||
		    (k == 2 && path[0] == '.' && path[1] == '.'))
			return false;
		path += k;
	}
	return !*path;
}

bool word_list_has(const char *list, const char *word, const char *seps)
{
	size_t wlen = strlen(word);
	const char *p = list;

	while (*p) {
		size_t len;

		p += strspn(p, seps);
		len = strcspn(p, seps);
		if (len == wlen && strncmp(p, word, len) == 0)
			return true;
		p += len;
	}
	return false;
}

unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int64_t clock_now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t real_now_ns(void)
{
	return clock_now_ns(CLOCK_REALTIME);
}

size_t rfc3339(char *buf, size_t size, int64_t real_ns, unsigned int digits)
{
	static const long div[] = {1000000000L, 1000000L, 1000L, 1L};
	time_t sec = real_ns / 1000000000LL;
	long frac = real_ns % 1000000000LL;
	struct tm tm;
	size_t n;
	int k;

	if (frac < 0) {
		frac += 1000000000L;
		sec--;
	}
	if (!size)
		return 0;
	digits = digits > 9 ? 9 : digits / 3 * 3;
	gmtime_r(&sec, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	if (digits)
		k = snprintf(buf + n, size - n, ".%0*ldZ", (int)digits, frac / div[digits / 3]);
	else
		k = snprintf(buf + n, size - n, "Z");
	n += k > 0 ? (size_t)k : 0;
	return n < size ? n : size - 1;
}

int rfc3339_parse(const char *s, size_t len, int64_t *ns)
{
	struct tm tm = {0};
	int64_t frac = 0, scale = 1000000000LL;
	size_t i = 19;
	char buf[40];
	time_t t;

	if (len < 20 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (sscanf(buf, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6 ||
	    buf[4] != '-' || buf[10] != 'T')
		return -EINVAL;
	if (buf[i] == '.')
		for (i++; i < len && buf[i] >= '0' && buf[i] <= '9'; i++)
			if (scale > 1) {
				scale /= 10;
				frac += (buf[i] - '0') * scale;
			}
	if (i != len - 1 || buf[i] != 'Z')
		return -EINVAL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*ns = (int64_t)t * 1000000000LL + frac;
	return 0;
}

int parse_u64(const char *s, unsigned long long *out)
{
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

/* 100, 4K, 100M, 1G, 16MiB, 2GB (powers of 1024). */
int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	int shift = 0;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	}
	if (shift)
		end++;
	if (end[0] == 'i' && end[1] == 'B')
		end += 2;
	else if (end[0] == 'B')
		end++;
	if (*end || v > (1ULL << 50) >> shift)
		return -EINVAL;
	*out = v << shift;
	return 0;
}

int parse_size_mb(const char *s, uint64_t *mb)
{
	unsigned long long v;
	uint64_t bytes;

	/* A bare number keeps its old meaning: MB. */
	if (parse_u64(s, &v) == 0) {
		if (v > (1ULL << 40))
			return -EINVAL;
		*mb = v;
		return 0;
	}
	if (parse_size(s, &bytes) < 0 || !isalpha((unsigned char)s[strspn(s, "0123456789")]))
		return -EINVAL;
	*mb = (bytes + (1 << 20) - 1) >> 20;
	return 0;
}

/* 500ms, 2s, 1m, 1h; a bare number is seconds. */
int parse_duration_ns(const char *s, uint64_t *ns)
{
	unsigned long long v;
	uint64_t unit = 1000000000ULL;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || v > 1000000000ULL)
		return -EINVAL;
	if (streq(end, "ms"))
		unit = 1000000ULL;
	else if (streq(end, "m") || streq(end, "min"))
		unit = 60ULL * 1000000000ULL;
	else if (streq(end, "h"))
		unit = 3600ULL * 1000000000ULL;
	else if (*end && !streq(end, "s"))
		return -EINVAL;
	*ns = v * unit;
	return 0;
}

DIR *dir_open_at(int dir, const char *name)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (streq(name, ".") ? 0 : O_NOFOLLOW);
	int fd = openat(dir, name, flags), e;
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

struct dirent *dir_next(DIR *d)
{
	struct dirent *de;

	while ((de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			return de;
	return NULL;
}

/*
 * One pass over the directory fd: every entry but the directories
 * unlinked (one readdir for all, not one per entry: a directory of 10,000
 * files is one pass, not 10,000). 1 with the first subdirectory's name
 * and st_dev, 0 when none is left, or -errno.
 */
static int clear_entries(int fd, char **name, dev_t *dev)
{
	DIR *d = dir_open_at(fd, ".");
	struct dirent *de;
	int r = 0;

	*name = NULL;
	if (!d)
		return -errno;
	while (!r && (de = dir_next(d))) {
		struct stat st;

		/* Not a directory by its type: unlinked without a stat (a directory there now fails EISDIR). */
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN &&
		    (unlinkat(fd, de->d_name, 0) == 0 || errno == ENOENT))
			continue;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT)
				r = -errno;
		} else if (!*name) {
			*name = strdup(de->d_name);
			*dev = st.st_dev;
			if (!*name)
				r = -ENOMEM;
		}
	}
	closedir(d);
	if (r < 0) {
		free(*name);
		*name = NULL;
		return r;
	}
	return *name ? 1 : 0;
}

/* long: one walk down and up the tree without recursion, so that any depth is removed */
int rm_tree(const char *path)
{
	char **stack = NULL;
	size_t depth = 0, cap = 0;
	struct stat st, root;
	int fd, r = 0;

	/*
	 * Only an absolute path below the root: "" or a relative name comes
	 * from a directory nobody made (a change set's empty dir once gave
	 * "" + "/work", and the walk removed the host's /work).
	 */
	if (path[0] != '/' || !path[1 + strspn(path + 1, "/")])
		return -EINVAL;
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != ENOTDIR && errno != ELOOP)
			return -errno;
		return unlink(path) < 0 ? -errno : 0;
	}
	if (fstat(fd, &st) < 0)
		r = -errno;
	/* Nor any other name of the root ("/tmp/..", "/."). */
	else if (stat("/", &root) == 0 && root.st_dev == st.st_dev && root.st_ino == st.st_ino)
		r = -EINVAL;
	while (!r) {
		char *name = NULL, *child;
		dev_t dev = 0;
		int e = clear_entries(fd, &name, &dev), pfd;

		if (e > 0 && dev == st.st_dev) {
			int nfd = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			e = nfd < 0 ? -errno : 0;
			if (!e && depth == cap) {
				char **ns = realloc(stack, (cap ? cap * 2 : 64) * sizeof(*ns));

				if (ns) {
					stack = ns;
					cap = cap ? cap * 2 : 64;
				} else {
					e = -ENOMEM;
				}
			}
			if (!e) {
				close(fd);
				fd = nfd;
				stack[depth++] = name;
				continue;
			}
			if (nfd >= 0)
				close(nfd);
		} else if (e > 0) {
			e = -EXDEV; /* another file system mounted here: left alone */
		}
		free(name);
		if (e < 0) {
			r = e; /* what cannot be removed stops the walk, never loops */
			break;
		}
		/* Empty: removed from its parent, one level up. */
		if (depth == 0)
			break;
		pfd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		child = stack[--depth];
		if (pfd < 0) {
			r = -errno;
			free(child);
			break;
		}
		close(fd);
		fd = pfd;
		if (unlinkat(fd, child, AT_REMOVEDIR) < 0)
			r = -errno;
		free(child);
	}
	close(fd);
	while (depth)
		free(stack[--depth]);
	free(stack);
	if (!r && rmdir(path) < 0 && errno != ENOENT)
		r = -errno;
	return r;
}

void path_fold(char *path)
{
	char *out = path, *in = path;

	if (path[0] != '/')
		return;
	while (*in) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		if (in[0] == '.' && (in[1] == '/' || !in[1])) {
			in++;
			continue;
		}
		if (in[0] == '.' && in[1] == '.' && (in[2] == '/' || !in[2])) {
			in += 2;
			while (out > path && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		while (*in && *in != '/')
			*out++ = *in++;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

size_t term_clean(char *dst, size_t size, const char *src)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t o = 0;

	if (!size)
		return 0;
	while (*p) {
		size_t adv = 1, w;
		bool keep;

		if (*p < 0x80) {
			keep = *p >= 0x20 && *p != 0x7f;
		} else {
			size_t n = utf8_char_len(p, strnlen((const char *)p, 4));

			/* A C1 control written as UTF-8 is one '?', like a raw one. */
			keep = n && !(n == 2 && p[0] == 0xc2 && p[1] <= 0x9f);
			adv = n ? n : 1;
		}
		w = keep ? adv : 1; /* never more than read: dst may be src */
		if (o + w >= size)
			break;
		if (keep)
			memmove(dst + o, p, adv);
		else
			dst[o] = '?';
		o += w;
		p += adv;
	}
	dst[o] = '\0';
	return o;
}

int err_invalid(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && streq(names[i], s))
			return (int)i;
	return -EINVAL;
}

int mkdir_parents(const char *path, unsigned int mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

int signalfd_block(const int *sigs, size_t n, sigset_t *old)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	for (size_t i = 0; i < n; i++)
		sigaddset(&mask, sigs[i]);
	sigprocmask(SIG_BLOCK, &mask, old);
	fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#define UTIL_RESOLVE_NO_XDEV	   0x01
#define UTIL_RESOLVE_NO_MAGICLINKS 0x02
#define UTIL_RESOLVE_NO_SYMLINKS   0x04
#define UTIL_RESOLVE_BENEATH	   0x08

struct util_open_how {
	uint64_t flags, mode, resolve;
};

int open_beneath(int dir, const char *rel, int flags)
{
	struct util_open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.resolve = UTIL_RESOLVE_BENEATH | UTIL_RESOLVE_NO_SYMLINKS |
			   UTIL_RESOLVE_NO_MAGICLINKS | UTIL_RESOLVE_NO_XDEV,
	};
	int fd = syscall(__NR_openat2, dir, rel[0] ? rel : ".", &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}
