// SPDX-License-Identifier: GPL-2.0
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
