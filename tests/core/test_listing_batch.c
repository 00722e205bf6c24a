/* SPDX-License-Identifier: MIT */
/* The bounded window on a listing (src/core/namespace/listing_batch.c):
 * SipHash-2-4 against its reference vectors; a listing walked batch by
 * batch from the offsets handed out gives every name once, in key order,
 * whatever the order and the repeats of the names offered (members that
 * disagree); names added or removed between batches leave every other
 * name listed once; names of one key are never split; windows of each
 * member merged give the window of all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "listing_batch.h"

static const listing_key_seed seed = { { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull } };

static void siphash_vectors(void **state)
{
	(void)state;
	uint8_t msg[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	assert_true(listing_siphash(&seed, msg, 0) == 0x726fdb47dd0e0e31ull);
	assert_true(listing_siphash(&seed, msg, 1) == 0x74f839c593dc67fdull);
	assert_true(listing_siphash(&seed, msg, 8) == 0x93f5f5799a932462ull);
	uint64_t k = listing_key(&seed, "");
	assert_true(k >= 1 && k < (1ull << 63));
}

/* names[i] as offered to the batch by "member" m: members 0 and 1 hold
 * all, member 2 only the odd ones, member 3 the names past count. */
static void offer_member(listing_batch *b, int m, guint count, guint extra, GHashTable *gone)
{
	char name[32];
	guint from = m == 3 ? count : 0, to = m == 3 ? count + extra : count;
	for (guint j = from; j < to; j++) {
		/* each member in an order of its own */
		guint i = m == 1 ? to - 1 - (j - from) : j;
		if (m == 2 && !(i & 1))
			continue;
		snprintf(name, sizeof name, "n%u", i);
		if (gone && g_hash_table_contains(gone, name))
			continue;
		listing_batch_offer(b, name, 8, listing_key(&seed, name));
	}
}

static void offer_members(listing_batch *b, guint count, guint extra, GHashTable *gone)
{
	for (int m = 0; m < 4; m++)
		offer_member(b, m, count, extra, gone);
}

/* Walks the whole listing in batches of max from offset 0; every name
 * lands in seen (counted), keys strictly rising.  between(step) may
 * change what is offered. */
static void walk(guint max, guint count, guint extra, GHashTable *seen, GHashTable *gone,
                 void (*between)(GHashTable *gone, guint step))
{
	listing_batch *b = listing_batch_new(max);
	uint64_t off = 0, last_key = 0;
	for (guint step = 0;; step++) {
		listing_batch_start(b, off);
		offer_members(b, count, extra, gone);
		listing_batch_finish(b);
		guint at;
		assert_true(listing_batch_find(b, off, &at));
		assert_int_equal(at, 0);
		assert_true(listing_batch_len(b) <= max);
		for (guint i = 0; i < listing_batch_len(b); i++) {
			const char *name = listing_batch_at(b, i)->name;
			uint64_t key = listing_key(&seed, name);
			assert_true(key > last_key);
			last_key = key;
			guint n = GPOINTER_TO_UINT(g_hash_table_lookup(seen, name));
			g_hash_table_replace(seen, g_strdup(name), GUINT_TO_POINTER(n + 1));
			off = listing_batch_offset(b, i);
		}
		if (!listing_batch_more(b))
			break;
		if (between)
			between(gone, step);
	}
	listing_batch_free(b);
}

static void every_name_once(void **state)
{
	(void)state;
	const guint count = 5000, extra = 37;
	GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	walk(100, count, extra, seen, NULL, NULL);
	assert_int_equal(g_hash_table_size(seen), count + extra);
	GHashTableIter it;
	gpointer name, n;
	g_hash_table_iter_init(&it, seen);
	while (g_hash_table_iter_next(&it, &name, &n))
		assert_int_equal(GPOINTER_TO_UINT(n), 1);
	g_hash_table_destroy(seen);
}

/* Between batches one name in seven of those not yet gone goes. */
static void remove_some(GHashTable *gone, guint step)
{
	char name[32];
	for (guint i = step; i < 5000; i += 7) {
		snprintf(name, sizeof name, "n%u", i);
		g_hash_table_add(gone, g_strdup(name));
	}
}

static void changes_between_batches(void **state)
{
	(void)state;
	GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	GHashTable *gone = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	walk(64, 5000, 0, seen, gone, remove_some);
	char name[32];
	for (guint i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "n%u", i);
		guint n = GPOINTER_TO_UINT(g_hash_table_lookup(seen, name));
		assert_true(n <= 1);
		if (!g_hash_table_contains(gone, name))
			assert_int_equal(n, 1); /* never removed: listed once */
	}
	g_hash_table_destroy(seen);
	g_hash_table_destroy(gone);
}

/* Names of one key stay together: a batch takes them all, and an offset
 * after any but the last of them resumes before the first. */
static void equal_keys(void **state)
{
	(void)state;
	listing_batch *b = listing_batch_new(3);
	const char *names[] = { "a", "b", "c", "d", "e", "f" };
	const uint64_t keys[] = { 10, 20, 30, 30, 30, 40 };
	for (int i = 5; i >= 0; i--)
		listing_batch_offer(b, names[i], 8, keys[i]);
	listing_batch_offer(b, "c", 8, 30); /* a repeat */
	listing_batch_finish(b);
	assert_int_equal(listing_batch_len(b), 5);
	assert_true(listing_batch_more(b));
	assert_string_equal(listing_batch_at(b, 4)->name, "e");
	assert_true(listing_batch_offset(b, 1) == 20);
	assert_true(listing_batch_offset(b, 2) == 20);
	assert_true(listing_batch_offset(b, 3) == 20);
	assert_true(listing_batch_offset(b, 4) == 30);
	assert_true(listing_batch_splits(b, 3));
	assert_false(listing_batch_splits(b, 2));
	guint at;
	assert_true(listing_batch_find(b, 20, &at));
	assert_int_equal(at, 2);
	/* past the window while names follow: not answered here */
	assert_false(listing_batch_find(b, 30, &at));
	listing_batch_start(b, 30);
	for (int i = 0; i < 6; i++)
		listing_batch_offer(b, names[i], 8, keys[i]);
	listing_batch_finish(b);
	assert_int_equal(listing_batch_len(b), 1);
	assert_false(listing_batch_more(b));
	assert_false(listing_batch_find(b, 29, &at));
	assert_true(listing_batch_find(b, 40, &at));
	assert_int_equal(at, 1); /* the end */
	listing_batch_free(b);
}

/* Each member's names gathered in a window of its own, then merged
 * (listing_batch_offer_batch), give the window of all of them at once. */
static void members_through_windows(void **state)
{
	(void)state;
	listing_batch *all = listing_batch_new(100), *merged = listing_batch_new(100);
	listing_batch *own[4];
	for (int m = 0; m < 4; m++)
		own[m] = listing_batch_new(100);
	uint64_t off = 0;
	for (bool more = true; more;) {
		listing_batch_start(all, off);
		offer_members(all, 3000, 150, NULL);
		listing_batch_finish(all);
		listing_batch_start(merged, off);
		for (int m = 0; m < 4; m++) {
			listing_batch_start(own[m], off);
			offer_member(own[m], m, 3000, 150, NULL);
			listing_batch_finish(own[m]);
			listing_batch_offer_batch(merged, own[m]);
		}
		listing_batch_finish(merged);
		assert_int_equal(listing_batch_len(merged), listing_batch_len(all));
		assert_int_equal(listing_batch_more(merged), listing_batch_more(all));
		for (guint i = 0; i < listing_batch_len(all); i++)
			assert_string_equal(listing_batch_at(merged, i)->name,
			                    listing_batch_at(all, i)->name);
		more = listing_batch_more(all);
		if (listing_batch_len(all))
			off = listing_batch_offset(all, listing_batch_len(all) - 1);
	}
	for (int m = 0; m < 4; m++)
		listing_batch_free(own[m]);
	listing_batch_free(all);
	listing_batch_free(merged);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(siphash_vectors),
		cmocka_unit_test(every_name_once),
		cmocka_unit_test(changes_between_batches),
		cmocka_unit_test(equal_keys),
		cmocka_unit_test(members_through_windows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
