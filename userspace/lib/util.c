// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>

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
