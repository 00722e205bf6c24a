/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz harnesses of tests/fuzz/ share: libFuzzer's entry point,
 * which each harness defines and replay.c (or libFuzzer) calls, and the
 * repair of a structure's SHA-256.  The sums on the members are unkeyed,
 * so whoever writes a member's bytes can make them valid: each harness
 * tries an input as given and again with its sum made right, so that the
 * fuzzer reaches the checks behind the sum.
 */
#ifndef ECFS_FUZZ_H
#define ECFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "chunk.h"
#include "ec.h"
#include "layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A malloc'd copy of the first len bytes of data (zeros past size), with
 * the SHA-256 of its bytes [0, at) written at at (at + 32 <= len). */
static inline uint8_t *fuzz_resum(const uint8_t *data, size_t size, size_t len, size_t at)
{
	uint8_t *b = calloc(1, len ? len : 1);
	if (!b)
		abort();
	memcpy(b, data, size < len ? size : len);
	SHA256(b, at, b + at);
	return b;
}

static inline uint32_t fuzz_get32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* As opening a file does (ecfile_open.c): the code of a header's
 * parameters (NULL if it has none) and the layout it describes. */
static inline ec_code *fuzz_layout(const chunk_header *h, layout *l)
{
	ec_params p = { .kind = h->kind, .k = h->k, .m = h->m, .w = h->w,
	                .packet_size = h->packet_size };
	ec_code *code = NULL;
	if (ec_create(&p, &code) != 0)
		code = NULL;
	chunk_layout(h, code ? ec_block_align(code) : 1, l);
	return code;
}

#endif
