// SPDX-License-Identifier: GPL-2.0
/*
 * lib/sha256: the published vectors (FIPS 180-4 examples, RFC 4231), and
 * coreutils' sha256sum on every length from 0 to 300 bytes, which crosses
 * the padding's edges (55, 56, 63, 64 bytes and their multiples).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/sha256.h"

static void hex(const uint8_t d[SHA256_LEN], char out[2 * SHA256_LEN + 1])
{
	for (int i = 0; i < SHA256_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void vectors(void **state)
{
	static const struct {
		const char *in, *want;
	} v[] = {
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	};
	uint8_t d[SHA256_LEN];
	char got[2 * SHA256_LEN + 1];
	struct sha256 c;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sha256(v[i].in, strlen(v[i].in), d);
		hex(d, got);
		assert_string_equal(got, v[i].want);
	}
	/* a million 'a', fed in uneven pieces */
	sha256_init(&c);
	for (size_t left = 1000000, n = 1; left; left -= n, n = n % 97 + 1) {
		char a[97];

		if (n > left)
			n = left;
		memset(a, 'a', n);
		sha256_update(&c, a, n);
	}
	sha256_final(&c, d);
	hex(d, got);
	assert_string_equal(got,
			    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void hmac(void **state)
{
	static const char big[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	uint8_t key[131], d[SHA256_LEN];
	char got[2 * SHA256_LEN + 1];

	(void)state;
	/* RFC 4231 test case 2: a key shorter than the block */
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
	hex(d, got);
	assert_string_equal(got,
			    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* test case 6: a key longer than the block is hashed first */
	memset(key, 0xaa, sizeof(key));
	hmac_sha256(key, sizeof(key), big, strlen(big), d);
	hex(d, got);
	assert_string_equal(got,
			    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void against_sha256sum(void **state)
{
	char path[] = "/tmp/bpfbox-sha256-XXXXXX", cmd[128], line[128], got[2 * SHA256_LEN + 1];
	uint8_t buf[300], d[SHA256_LEN];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t n = 0; n <= sizeof(buf); n++) {
		FILE *p;

		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, buf, n, 0), (ssize_t)n);
		snprintf(cmd, sizeof(cmd), "sha256sum %s", path);
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(line, sizeof(line), p));
		assert_int_equal(pclose(p), 0);
		sha256(buf, n, d);
		hex(d, got);
		assert_memory_equal(line, got, 2 * SHA256_LEN);
	}
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(vectors),
		cmocka_unit_test(hmac),
		cmocka_unit_test(against_sha256sum),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
