/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the journal header (src/core/data/journal.c):
 * journal_header_decode on the first JOURNAL_HEADER_SIZE bytes of a
 * member's .ecfs/journal/<id> (zeros past the input), and the records it
 * carries as recovery decodes them (journal_recovery.c).
 */
#include <assert.h>

#include "chunk.h"
#include "fuzz.h"
#include "journal.h"

static void decode(const uint8_t *b)
{
	journal_header h;
	const char *why = NULL;

	if (journal_header_decode(b, &h, &why) != 0) {
		assert(why);
		return;
	}
	assert(h.count >= 1 && h.count <= JOURNAL_MAX_STRIPES);
	for (uint32_t i = 0; i < h.count; i++) {
		chunk_record r;
		chunk_record_decode(h.records[i], &r);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b = fuzz_resum(data, size, JOURNAL_HEADER_SIZE, JOURNAL_HEADER_SIZE - 32);
	decode(b); /* with its sum made right */
	memset(b, 0, JOURNAL_HEADER_SIZE);
	memcpy(b, data, size < JOURNAL_HEADER_SIZE ? size : JOURNAL_HEADER_SIZE);
	decode(b); /* as given */
	free(b);
	return 0;
}
