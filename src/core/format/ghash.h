/* SPDX-License-Identifier: MIT */
/*
 * GHASH of AES-GCM over additional data only, with carry-less multiplies
 * (pclmulqdq; vpclmulqdq on 256- or 512-bit vectors where the CPU has it):
 * the hash behind the gmac strip checksum, several times faster there than
 * OpenSSL 3.0's.  checksum.c turns it into GMAC (the tag is GHASH of the
 * data and its length block, XOR the encrypted counter block, both of
 * which it gets from OpenSSL); on a CPU without pclmulqdq it is not used.
 */
#ifndef ECFS_GHASH_H
#define ECFS_GHASH_H

#include <stddef.h>
#include <stdint.h>

/* H^258..H^1: blocks folded per reduction, at most; a 4 KiB block and
 * the two around it in ghash_tag. */
#define GHASH_POWERS 258

enum ghash_impl {
	GHASH_NONE, /* no pclmulqdq: use OpenSSL */
	GHASH_128,  /* one block at a time */
	GHASH_256,  /* AVX2 + VPCLMULQDQ */
	GHASH_512,  /* AVX-512BW + VPCLMULQDQ */
};

/* H's powers, byte-reversed: pw[i] = H^(GHASH_POWERS-i), kw[i] the XOR of
 * its two 64-bit halves (in both). */
typedef struct ghash_key {
	uint8_t pw[GHASH_POWERS][16] __attribute__((aligned(64)));
	uint8_t kw[GHASH_POWERS][16] __attribute__((aligned(64)));
	enum ghash_impl impl;
} ghash_key;

typedef struct ghash_state {
	uint8_t x[16] __attribute__((aligned(16))); /* byte-reversed */
	uint8_t part[16];                          /* a block not yet full */
	size_t fill;
	uint64_t total; /* bytes hashed */
	const ghash_key *key;
	enum ghash_impl impl;
} ghash_state;

/* The best implementation this CPU runs (GHASH_NONE: none), at most what
 * the level libec is held to has (EC_SIMD=avx2: GHASH_256). */
enum ghash_impl ghash_impl_available(void);

/* h: the hash key, AES_K(0^128).  impl: at most ghash_impl_available()
 * (lower ones for tests).  0, or -1 if impl cannot run here. */
int ghash_key_init(ghash_key *k, const uint8_t h[16], enum ghash_impl impl);

void ghash_start(ghash_state *st, const ghash_key *k);
/* Adds bytes of additional data; any lengths, any alignment. */
void ghash_update(ghash_state *st, const void *data, size_t len);
/* Pads the data to a block, hashes the length block (data bits, 0 bits of
 * ciphertext) and writes GHASH in GCM's byte order. */
void ghash_final_aad(ghash_state *st, uint8_t out[16]);
/* What ghash_update(head, 16), ghash_update(data, len) and
 * ghash_final_aad would give on a copy of st, which stays as it is: in
 * one reduction where st holds whole blocks and data is up to
 * GHASH_POWERS - 2 of them (a block tag of the gmac checksum). */
void ghash_tag(const ghash_state *st, const uint8_t head[16], const void *data, size_t len,
               uint8_t out[16]);

#endif
