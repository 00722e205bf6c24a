/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the intent record (src/core/namespace/intent.c): intent_decode
 * on a slot of a member's .ecfs/intent/log, for a volume of as many
 * members as the record names (docs/FORMAT.md section 8 gives the
 * offsets used here to make its sum right).
 */
#include "fuzz.h"
#include "intent.h"

#define HEAD 48  /* the fixed part */
#define IDENT 32 /* per member */
#define SUM 32

static void decode(const uint8_t *b, size_t size, int n)
{
	intent *it = intent_decode(b, size, n);
	intent_release(it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HEAD + SUM)
		return 0;
	uint32_t rn = fuzz_get32(data + 24), l1 = fuzz_get32(data + 28), l2 = fuzz_get32(data + 32);
	int n = rn >= 1 && rn <= 64 ? (int)rn : 6;
	decode(data, size, n);
	if (rn <= 64 && l1 <= 4095 && l2 <= 4095) {
		size_t len = HEAD + (size_t)rn * IDENT + l1 + l2 + SUM;
		if (len <= size) {
			uint8_t *b = fuzz_resum(data, size, size, len - SUM);
			decode(b, size, n);
			free(b);
		}
	}
	return 0;
}
