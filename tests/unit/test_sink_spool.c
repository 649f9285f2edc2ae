// SPDX-License-Identifier: GPL-2.0
/*
 * The on-disk spool: FIFO order across segments, the bound (oldest
 * segments dropped, their unread records counted exactly), persistence
 * across close and open (with the read position), a torn tail cut off, the
 * lock, and prepend.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "audit/spool.h"
#include "scratch.h"
#include "unit_main.h"

static char dir[64];

SCRATCH_FIXTURES(dir, "spool")

static void open_spool(struct spool *sp, uint64_t max)
{
	char err[512];
	char sub[128];

	snprintf(sub, sizeof(sub), "%s/q", dir);
	if (spool_open(sp, sub, max, err, sizeof(err)) < 0)
		fail_msg("spool_open: %s", err);
}

/* Record i: "rec-<i>" padded to len bytes. */
static size_t make(char *buf, int i, size_t len)
{
	int n = snprintf(buf, len + 1, "rec-%d", i);

	memset(buf + n, 'x', len - n);
	return len;
}

static int read_index(struct spool *sp)
{
	const char *data;
	size_t len;
	uint64_t dropped = 0;
	int r = spool_read(sp, &data, &len, &dropped), i;

	assert_int_equal(dropped, 0);
	if (r == 0)
		return -1;
	assert_int_equal(r, 1);
	assert_int_equal(sscanf(data, "rec-%d", &i), 1);
	return i;
}

/* Appends records from..to-1 of len bytes each; how many were dropped. */
static uint64_t append_range(struct spool *sp, int from, int to, size_t len)
{
	char buf[1024 + 1];
	uint64_t dropped = 0;

	assert_true(len < sizeof(buf));
	for (int i = from; i < to; i++)
		assert_int_equal(spool_append(sp, buf, make(buf, i, len), &dropped), 0);
	return dropped;
}

/* Reads records from..to-1, in that order. */
static void read_range(struct spool *sp, int from, int to)
{
	for (int i = from; i < to; i++)
		assert_int_equal(read_index(sp), i);
}

static void test_fifo(void **state)
{
	struct spool sp;

	(void)state;
	open_spool(&sp, 4 << 20); /* 256 KiB segments */
	assert_int_equal(append_range(&sp, 0, 1000, 1000), 0);
	assert_int_equal(sp.records, 1000);
	assert_true(sp.head != sp.tail); /* several segments */
	read_range(&sp, 0, 600);
	/* Appends while reading land after everything else. */
	assert_int_equal(append_range(&sp, 1000, 1001, 10), 0);
	read_range(&sp, 600, 1001);
	assert_int_equal(read_index(&sp), -1);
	assert_true(spool_empty(&sp));
	assert_int_equal(sp.bytes, 0); /* read segments are deleted */
	spool_close(&sp);
}

static void test_bound_drops_oldest(void **state)
{
	struct spool sp;
	uint64_t dropped, appended = 3000;
	int first;

	(void)state;
	open_spool(&sp, 1 << 20); /* 64 KiB segments */
	dropped = append_range(&sp, 0, (int)appended, 1000);
	assert_true(sp.bytes <= 1 << 20);
	assert_true(dropped > 0);
	/* Exact: what is left plus what was dropped is what went in. */
	assert_int_equal(sp.records + dropped, appended);
	first = read_index(&sp);
	assert_int_equal(first, (int)dropped); /* the oldest went, the rest is whole */
	read_range(&sp, first + 1, (int)appended);
	/* A record larger than the whole spool is dropped itself. */
	dropped = 0;
	char *big = malloc(2 << 20);

	assert_non_null(big);
	assert_int_equal(spool_append(&sp, big, 2 << 20, &dropped), 0);
	assert_int_equal(dropped, 1);
	free(big);
	spool_close(&sp);
}

static void test_persist_and_position(void **state)
{
	struct spool sp;

	(void)state;
	open_spool(&sp, 4 << 20);
	assert_int_equal(append_range(&sp, 0, 100, 100), 0);
	read_range(&sp, 0, 40);
	spool_close(&sp);
	/* The next daemon goes on where this one stopped reading. */
	open_spool(&sp, 4 << 20);
	assert_int_equal(sp.records, 60);
	read_range(&sp, 40, 100);
	assert_int_equal(read_index(&sp), -1);
	spool_close(&sp);
}

static void test_torn_tail(void **state)
{
	struct spool sp;
	char seg[256];
	int fd;

	(void)state;
	open_spool(&sp, 4 << 20);
	assert_int_equal(append_range(&sp, 0, 10, 100), 0);
	snprintf(seg, sizeof(seg), "%s/q/%020llu.seg", dir, (unsigned long long)sp.tail->id);
	spool_close(&sp);
	/* A crash in the middle of a record: a header that promises more. */
	fd = open(seg, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\x40\x00\x00\x00\x01\x02\x03\x04partial", 15), 15);
	close(fd);
	open_spool(&sp, 4 << 20);
	assert_int_equal(sp.torn_bytes, 15);
	assert_int_equal(sp.records, 10);
	read_range(&sp, 0, 10);
	spool_close(&sp);
}

static void test_lock(void **state)
{
	struct spool a, b;
	char err[512], sub[128];

	(void)state;
	open_spool(&a, 1 << 20);
	snprintf(sub, sizeof(sub), "%s/q", dir);
	assert_int_equal(spool_open(&b, sub, 1 << 20, err, sizeof(err)), -EWOULDBLOCK);
	assert_non_null(strstr(err, "used by another process"));
	spool_close(&a);
}

static void test_prepend(void **state)
{
	struct spool sp;
	char p0[32], p1[32];
	const void *data[2] = {p0, p1};
	size_t len[2];

	(void)state;
	open_spool(&sp, 4 << 20);
	assert_int_equal(append_range(&sp, 10, 20, 50), 0);
	assert_int_equal(read_index(&sp), 10);
	len[0] = make(p0, 8, 20);
	len[1] = make(p1, 9, 20);
	assert_int_equal(spool_prepend(&sp, data, len, 2), 0);
	assert_int_equal(read_index(&sp), 8);
	assert_int_equal(read_index(&sp), 9);
	read_range(&sp, 11, 20);
	assert_int_equal(read_index(&sp), -1);
	spool_close(&sp);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

UNIT_MAIN(T(test_fifo), T(test_bound_drops_oldest), T(test_persist_and_position), T(test_torn_tail),
	  T(test_lock), T(test_prepend))
