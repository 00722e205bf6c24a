/* SPDX-License-Identifier: MIT */
/*
 * Strip checksums through OpenSSL EVP: plain digests (SHA-256, BLAKE2) and
 * keyed MACs (GMAC, Poly1305) whose key lives in the volume superblock.
 * The key is not a secret from anyone who can read a member: these values
 * detect accidental corruption (and misplaced strips, since the caller binds
 * the strip's identity into the input), they do not authenticate.
 * A checksum object is immutable after creation and usable from any thread.
 */
#ifndef ECFS_CHECKSUM_H
#define ECFS_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Algorithm ids: stored in chunk headers, never renumber. */
typedef enum checksum_alg {
	CHECKSUM_SHA256 = 1,
	CHECKSUM_BLAKE2B = 2,  /* BLAKE2b-512, first 32 bytes kept */
	CHECKSUM_BLAKE2S = 3,  /* BLAKE2s-256 */
	CHECKSUM_GMAC = 4,     /* AES-128 GMAC, 16 bytes */
	CHECKSUM_POLY1305 = 5, /* Poly1305, 16 bytes */
} checksum_alg;

#define CHECKSUM_MAX 32      /* bytes stored per strip record */
#define CHECKSUM_KEY_SIZE 32 /* key bytes kept in the superblock */
#define CHECKSUM_DEFAULT "gmac"

typedef struct checksum checksum;

/* 0 for an unknown name / id. */
checksum_alg checksum_alg_from_name(const char *name);
const char *checksum_alg_name(checksum_alg alg);
/* Bytes of output (<= CHECKSUM_MAX) of an algorithm, 0 if unknown. */
size_t checksum_alg_size(checksum_alg alg);

/* key: CHECKSUM_KEY_SIZE bytes (ignored by digests).  NULL on failure. */
checksum *checksum_new(checksum_alg alg, const uint8_t *key);
void checksum_free(checksum *c);
checksum_alg checksum_get_alg(const checksum *c);

/* Computes the checksum of the concatenation of iov[0..cnt-1] into out
 * (CHECKSUM_MAX bytes, zero-padded after the algorithm's size).
 * Returns 0, or -EIO if OpenSSL failed. */
int checksum_compute(const checksum *c, const struct iovec *iov, int cnt,
                     uint8_t out[CHECKSUM_MAX]);

/* For each block of data (len bytes in blocks of bs bytes, the last one
 * short), numbered from first: the checksum of prefix (plen bytes) ||
 * le64(number) || 8 zero bytes || the block, its first `cut` bytes (at
 * most CHECKSUM_MAX) into out, block after block.  The same as
 * checksum_compute of those bytes, with the prefix's work done once for
 * all the blocks (with plen a multiple of 16, the blocks start on a
 * 16-byte boundary of the input, as GHASH and Poly1305 work).  Returns 0
 * or -EIO. */
int checksum_blocks(const checksum *c, const uint8_t *prefix, size_t plen, uint64_t first,
                    const uint8_t *data, size_t len, size_t bs, size_t cut, uint8_t *out);

#endif
