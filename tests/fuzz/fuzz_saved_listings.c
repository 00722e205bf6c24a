/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the saved listings (src/core/namespace/saved_listings.c):
 * saved_listings_decode on a member's .ecfs/listings, for the volume the
 * file names (its uuid and member count, so that the records are
 * reached), then what a mount does with a set it accepts: the first
 * directory taken out, the rest carried on, encoded and decoded again.
 */
#include <assert.h>

#include <glib.h>

#include "fuzz.h"
#include "listing.h"
#include "saved_listings.h"

#define HEAD 48 /* magic, uuid, members, zero, dirs, body length */
#define SUM 32

static void use(saved_listings *s, const uint8_t *uuid, int n, uint64_t first)
{
	saved_dir d;
	if (saved_listings_take(s, first, &d)) {
		assert(d.dir == first);
		for (guint i = 0; i < listing_len(d.names); i++)
			assert(strlen(listing_at(d.names, i)->name) > 0);
		listing_unref(d.names);
	}
	saved_listings *to = saved_listings_new(uuid, n);
	saved_listings_carry(to, s, UINT64_MAX);
	size_t len;
	uint8_t *bytes = saved_listings_encode(to, &len);
	char *why = NULL;
	saved_listings *again = saved_listings_decode(bytes, len, uuid, n, &why);
	assert(again && !why);
	assert(saved_listings_count(again) == saved_listings_count(to));
	saved_listings_free(again);
	g_free(bytes);
	saved_listings_free(to);
}

static void decode(const uint8_t *b, size_t size)
{
	const uint8_t *uuid = b + 8;
	uint32_t members = fuzz_get32(b + 24);
	int n = members >= 1 && members <= 64 ? (int)members : 6; /* a volume's n */
	uint64_t first = 0;
	char *why = NULL;

	if (size >= HEAD + 8)
		memcpy(&first, b + HEAD, 8); /* the first record's directory (little-endian host) */
	saved_listings *s = saved_listings_decode(b, size, uuid, n, &why);
	if (!s) {
		assert(why);
		g_free(why);
		return;
	}
	use(s, uuid, n, first);
	saved_listings_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HEAD + SUM)
		return 0;
	uint8_t *b = fuzz_resum(data, size, size, size - SUM);
	decode(data, size);
	decode(b, size); /* with its sum made right */
	free(b);
	return 0;
}
