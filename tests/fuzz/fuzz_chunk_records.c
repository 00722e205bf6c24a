/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the strip records of a chunk (src/core/format/chunk.c,
 * chunk_record_decode, and the reader's verdict on a strip that uses it,
 * rules_judge_strip in src/core/format/reader_rules.c, and in version 3
 * the verdict on part of it, rules_judge_blocks).  The input is the
 * volume's checksum key (CHECKSUM_KEY_SIZE bytes, as the superblock keeps
 * it) and then a chunk file from its start: the header (its sum made
 * right), the record blocks and strips, read as zeros past the end as the
 * stripe layer reads them.
 */
#include <assert.h>

#include "checksum.h"
#include "chunk.h"
#include "ec.h"
#include "fuzz.h"
#include "layout.h"
#include "reader_rules.h"

/* Larger strips (up to 1 GiB) are the daemon's to bound, not a parse's. */
#define STRIP_MAX (1u << 20)

/* Copies [off, off + len) of the chunk into out, zeros past its end. */
static void read_at(const uint8_t *chunk, size_t size, uint64_t off, uint8_t *out, uint64_t len)
{
	memset(out, 0, len);
	if (off < size)
		memcpy(out, chunk + off, size - off < len ? size - off : len);
}

static void judge(const uint8_t *key, const uint8_t *chunk, size_t size)
{
	chunk_header h;

	if (chunk_header_decode(chunk, size, &h, NULL) != 0 || h.strip_size > STRIP_MAX)
		return;
	checksum *sum = checksum_new((checksum_alg)h.checksum, key);
	if (!sum)
		return;
	layout l;
	ec_code *code = fuzz_layout(&h, &l);
	uint8_t rec[CHUNK_RECORD_SIZE];
	uint8_t *data = malloc(h.strip_size), *tags = malloc(layout_tags_size(&l) + 1);
	if (!data || !tags)
		abort();
	for (uint64_t s = 0; s < CHUNK_GROUP_STRIPES && layout_record_offset(&l, s) < size; s++) {
		strip_judgment st;
		read_at(chunk, size, layout_record_offset(&l, s), rec, sizeof rec);
		read_at(chunk, size, layout_strip_offset(&l, s), data, h.strip_size);
		if (l.version >= 3) {
			/* a part: the first and the last block of the strip */
			uint64_t last = (h.strip_size - 1) / CHUNK_BLOCK_SIZE;
			read_at(chunk, size, layout_tags_offset(&l, s), tags, layout_tags_size(&l));
			rules_judge_blocks(sum, &h, &l, s, rec, tags, data, 0, 1, &st);
			assert(st.v == STRIP_GOOD || st.v == STRIP_BAD);
			rules_judge_blocks(sum, &h, &l, s, rec, tags, data + last * CHUNK_BLOCK_SIZE,
			                   last, 1, &st);
			assert(st.v == STRIP_GOOD || st.v == STRIP_BAD);
		}
		rules_judge_strip(sum, &h, &l, s, rec, data, l.version >= 3 ? tags : NULL, -1, &st);
		assert(st.len <= h.strip_size);
		assert(st.v == STRIP_GOOD || st.v == STRIP_HOLE || st.v == STRIP_BAD);
	}
	free(tags);
	free(data);
	ec_destroy(code);
	checksum_free(sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < CHECKSUM_KEY_SIZE + 12)
		return 0;
	const uint8_t *chunk = data + CHECKSUM_KEY_SIZE;
	size_t csize = size - CHECKSUM_KEY_SIZE;
	size_t hlen = fuzz_get32(chunk + 8) == 1 ? CHUNK_HEADER_SIZE_V1 : CHUNK_HEADER_SIZE_V2;
	if (csize < hlen)
		return 0;
	uint8_t *b = fuzz_resum(chunk, csize, csize, hlen - 32);
	judge(data, b, csize);
	free(b);
	return 0;
}
