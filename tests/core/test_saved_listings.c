/* SPDX-License-Identifier: MIT */
/* The file of listings saved at unmount (src/core/namespace/saved_listings.c,
 * FORMAT.md section 10): what is written reads back exactly, each
 * directory once; a file of another volume, cut short, with a byte
 * changed or a record that breaks a rule is refused whole, saying why;
 * what one mount did not list is carried to the next file, within a
 * bound. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>

#include "saved_listings.h"

static const uint8_t UUID[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t OTHER[16] = { 9 };

static listing *names_of(const char *const *names, const unsigned char *types)
{
	guint count = 0;
	size_t bytes = 0;
	for (; names[count]; count++)
		bytes += strlen(names[count]) + 1;
	listing *l = listing_new(count, bytes);
	for (guint i = 0; i < count; i++)
		listing_append(l, names[i], types[i]);
	return l;
}

static dirstamp stamp(uint64_t seed)
{
	return (dirstamp){ seed, seed + 1, seed + 2, (int64_t)seed + 3, (int64_t)seed + 4,
		           (int64_t)seed + 5, (int64_t)seed + 6 };
}

/* Adds dir with names and members (stamps from dir and the member). */
static void add(saved_listings *s, uint64_t dir, uint64_t members, const char *const *names,
                const unsigned char *types)
{
	saved_dir d = { .dir = dir, .members = members, .names = names_of(names, types) };
	for (int i = 0; i < SAVED_MEMBERS_MAX; i++)
		d.stamps[i] = stamp(dir * 100 + (uint64_t)i);
	saved_listings_add(s, &d);
	listing_unref(d.names);
}

static const char *const NAMES_A[] = { ".", "..", "file", "sub", "a name with spaces", NULL };
static const unsigned char TYPES_A[] = { DT_DIR, DT_DIR, DT_REG, DT_DIR, DT_LNK };
static const char *const NAMES_B[] = { "only", NULL };
static const unsigned char TYPES_B[] = { DT_FIFO };

static uint8_t *two_dirs(size_t *len)
{
	saved_listings *s = saved_listings_new(UUID, 6);
	add(s, 7, 0x5, NAMES_A, TYPES_A);
	add(s, 7, 0x3, NAMES_B, TYPES_B); /* the same directory again: kept once */
	add(s, 9, 0x3f, NAMES_B, TYPES_B);
	add(s, 11, 0, NAMES_B, TYPES_B); /* no member known: nothing to save */
	add(s, 13, 0x40, NAMES_B, TYPES_B); /* only a member the volume lacks */
	assert_int_equal(saved_listings_count(s), 2);
	uint8_t *bytes = saved_listings_encode(s, len);
	saved_listings_free(s);
	assert_non_null(bytes);
	return bytes;
}

static void assert_dir(saved_listings *s, uint64_t dir, uint64_t members,
                       const char *const *names, const unsigned char *types)
{
	saved_dir d;
	assert_true(saved_listings_take(s, dir, &d));
	assert_int_equal(d.dir, dir);
	assert_int_equal(d.members, members);
	for (int i = 0; i < SAVED_MEMBERS_MAX; i++) {
		dirstamp want = stamp(dir * 100 + (uint64_t)i);
		if (members >> i & 1)
			assert_true(dirstamp_same(&d.stamps[i], &want));
	}
	guint i = 0;
	for (; names[i]; i++) {
		assert_true(i < listing_len(d.names));
		assert_string_equal(listing_at(d.names, i)->name, names[i]);
		assert_int_equal(listing_at(d.names, i)->type, types[i]);
	}
	assert_int_equal(listing_len(d.names), i);
	listing_unref(d.names);
	assert_false(saved_listings_take(s, dir, &d)); /* offered once */
}

/* bytes decoded, which must be accepted */
static saved_listings *read_back(const uint8_t *bytes, size_t len)
{
	char *why = NULL;
	saved_listings *s = saved_listings_decode(bytes, len, UUID, 6, &why);
	assert_null(why);
	assert_non_null(s);
	return s;
}

static void test_written_reads_back(void **state)
{
	(void)state;
	size_t len;
	uint8_t *bytes = two_dirs(&len);
	saved_listings *s = read_back(bytes, len);
	assert_int_equal(saved_listings_count(s), 2);
	saved_dir d;
	assert_false(saved_listings_take(s, 11, &d));
	assert_dir(s, 7, 0x5, NAMES_A, TYPES_A);
	assert_dir(s, 9, 0x3f, NAMES_B, TYPES_B);
	assert_int_equal(saved_listings_count(s), 0);
	saved_listings_free(s);
	g_free(bytes);
}

static void assert_refused(const uint8_t *bytes, size_t len, const uint8_t *uuid, int n,
                           const char *want)
{
	char *why = NULL;
	assert_null(saved_listings_decode(bytes, len, uuid, n, &why));
	assert_non_null(why);
	assert_string_equal(why, want);
	g_free(why);
}

static void test_refused_whole(void **state)
{
	(void)state;
	size_t len;
	uint8_t *bytes = two_dirs(&len);
	assert_refused(bytes, len, OTHER, 6, "of another volume");
	assert_refused(bytes, len, UUID, 5, "of another volume");
	assert_refused(bytes, len - 1, UUID, 6, "checksum mismatch");
	assert_refused(bytes, 40, UUID, 6, "not a file of saved listings");
	for (size_t at = 8; at < len; at += 7) {
		bytes[at] ^= 0x10;
		assert_refused(bytes, len, UUID, 6, "checksum mismatch");
		bytes[at] ^= 0x10;
	}
	bytes[0] = 'X';
	assert_refused(bytes, len, UUID, 6, "not a file of saved listings");
	g_free(bytes);
}

static void test_record_that_breaks_a_rule(void **state)
{
	(void)state;
	static const char *const bad[][2] = { { "a/b", NULL }, { "", NULL } };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		saved_listings *s = saved_listings_new(UUID, 6);
		add(s, 1, 1, NAMES_B, TYPES_B);
		add(s, 2, 1, bad[i], TYPES_B);
		size_t len;
		uint8_t *bytes = saved_listings_encode(s, &len);
		saved_listings_free(s);
		assert_refused(bytes, len, UUID, 6, "record 1 is damaged");
		g_free(bytes);
	}
}

static void test_untaken_carried_within_a_bound(void **state)
{
	(void)state;
	size_t len;
	uint8_t *bytes = two_dirs(&len);
	saved_listings *old = read_back(bytes, len);
	saved_dir d;
	assert_true(saved_listings_take(old, 9, &d)); /* listed by this mount */
	listing_unref(d.names);

	saved_listings *next = saved_listings_new(UUID, 6);
	add(next, 7, 0x1, NAMES_B, TYPES_B); /* this mount's own of 7 stands */
	saved_listings_carry(next, old, 1000);
	uint8_t *again = saved_listings_encode(next, &len);
	saved_listings *read = read_back(again, len);
	assert_int_equal(saved_listings_count(read), 1);
	assert_dir(read, 7, 0x1, NAMES_B, TYPES_B);
	saved_listings_free(read);
	saved_listings_free(next);
	g_free(again);
	again = NULL;

	next = saved_listings_new(UUID, 6);
	add(next, 3, 0x1, NAMES_B, TYPES_B);
	saved_listings_carry(next, old, 5); /* 7's 5 names would make 6 */
	assert_int_equal(saved_listings_count(next), 1);
	saved_listings_carry(next, old, 6);
	assert_int_equal(saved_listings_count(next), 2);
	saved_listings_free(next);

	/* passed on unused by SAVED_UNUSED_MAX mounts, then dropped */
	saved_listings *held = old;
	for (int mount = 1; mount <= SAVED_UNUSED_MAX + 1; mount++) {
		next = saved_listings_new(UUID, 6);
		saved_listings_carry(next, held, 1000);
		assert_int_equal(saved_listings_count(next), mount <= SAVED_UNUSED_MAX ? 1 : 0);
		g_free(again);
		again = saved_listings_encode(next, &len);
		saved_listings_free(next);
		saved_listings_free(held);
		held = read_back(again, len);
	}
	saved_listings_free(held);
	g_free(again);
	g_free(bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_written_reads_back),
		cmocka_unit_test(test_refused_whole),
		cmocka_unit_test(test_record_that_breaks_a_rule),
		cmocka_unit_test(test_untaken_carried_within_a_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
