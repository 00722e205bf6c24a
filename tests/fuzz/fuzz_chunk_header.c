/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the chunk header (src/core/format/chunk.c): chunk_header_decode
 * on the first bytes of a chunk, then what opening a file does with a
 * header it accepts (ecfile_open.c): the code of its parameters, its
 * layout, and the layout's arithmetic over the file's size.
 */
#include <assert.h>

#include "chunk.h"
#include "ec.h"
#include "fuzz.h"
#include "layout.h"

/* Stripes the arithmetic is run on, at the start and at the end. */
#define STRIPES_TRIED 4

static void use_layout(const chunk_header *h, const layout *l)
{
	uint64_t count = layout_stripe_count(l, h->size);
	for (int pos = 0; pos < l->n; pos++) {
		int mb = layout_member_of(l, pos);
		assert(mb >= 0 && mb < l->n && layout_position_of(l, mb) == pos);
	}
	(void)layout_header_size(l);
	for (uint64_t i = 0; i < 2 * STRIPES_TRIED && count; i++) {
		uint64_t s = i < STRIPES_TRIED ? i : count - 1 - (i - STRIPES_TRIED);
		if (s >= count)
			continue;
		uint64_t len = layout_strip_len(l, s, h->size);
		assert(len <= l->strip_size);
		uint64_t rec = layout_record_offset(l, s), tags = layout_tags_offset(l, s);
		uint64_t strip = layout_strip_offset(l, s);
		/* record, tags and strip in that order, none overlapping */
		assert(rec + CHUNK_RECORD_SIZE <= tags || rec >= tags + layout_tags_size(l));
		assert(tags + layout_tags_size(l) <= strip);
		(void)layout_group_start(l, s);
		(void)layout_group_end(l, s);
	}
	(void)layout_chunk_length(l, count);
}

static void decode(const uint8_t *data, size_t size)
{
	chunk_header h;
	const char *why = NULL;

	if (chunk_header_decode(data, size, &h, &why) != 0) {
		assert(why);
		return;
	}
	layout l;
	ec_code *code = fuzz_layout(&h, &l);
	use_layout(&h, &l);
	ec_destroy(code);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode(data, size);
	/* Again with the sum made right for the version the bytes name. */
	if (size >= 12) {
		size_t len = fuzz_get32(data + 8) == 1 ? CHUNK_HEADER_SIZE_V1 : CHUNK_HEADER_SIZE_V2;
		size_t have = size > len ? size : len;
		uint8_t *b = fuzz_resum(data, size, have, len - 32);
		decode(b, size);
		free(b);
	}
	return 0;
}
