/* SPDX-License-Identifier: GPL-2.0 */
#ifndef BPFBOX_LIB_SHA256_H
#define BPFBOX_LIB_SHA256_H

#include <stddef.h>
#include <stdint.h>

/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104): the policy's hash in
 * session.start and the host id. Here rather than from the TLS library,
 * so that a `bpfbox run` does not load that library and its start-up
 * work when no TLS sink is configured.
 */
#define SHA256_LEN 32

struct sha256 {
	uint32_t h[8];
	uint64_t bytes;
	uint8_t block[64];
	size_t used;
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_final(struct sha256 *c, uint8_t out[SHA256_LEN]);
void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);
void hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		 uint8_t out[SHA256_LEN]);

#endif
