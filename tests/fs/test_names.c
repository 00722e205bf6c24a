/* SPDX-License-Identifier: MIT */
/* The node table's index of names (src/fs/fs_names.c): what is added is
 * found, under its parent only; removals leave every other name findable
 * (linear probing without tombstones moves entries back), across growth,
 * and a batch finds what single lookups find. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <glib.h>

#include "fs_names.h"

static char *name_of(int i)
{
	return g_strdup_printf("entry-%d", i);
}

static void test_found_under_its_parent_only(void **state)
{
	name_index ix;
	(void)state;
	names_init(&ix);
	name_key *a = name_key_new(7, "a", NULL, 100), *b = name_key_new(8, "a", NULL, 101);
	names_add(&ix, a);
	names_add(&ix, b);
	assert_ptr_equal(names_find(&ix, 7, "a"), a);
	assert_ptr_equal(names_find(&ix, 8, "a"), b);
	assert_null(names_find(&ix, 9, "a"));
	assert_null(names_find(&ix, 7, "b"));
	assert_int_equal(names_find(&ix, 8, "a")->ino, 101);
	names_remove(&ix, a);
	assert_null(names_find(&ix, 7, "a"));
	assert_ptr_equal(names_find(&ix, 8, "a"), b);
	names_free(&ix);
}

/* Many names through several growths, every other one removed, then
 * added again: each lookup agrees with what is in the index. */
static void test_removals_keep_the_others(void **state)
{
	enum { N = 20000 };
	name_index ix;
	static name_key *keys[N];
	(void)state;
	names_init(&ix);
	for (int i = 0; i < N; i++) {
		char *n = name_of(i);
		names_add(&ix, keys[i] = name_key_new(1 + i % 3, n, NULL, (uint64_t)i + 2));
		g_free(n);
	}
	for (int i = 0; i < N; i += 2) {
		names_remove(&ix, keys[i]);
		keys[i] = NULL;
	}
	for (int i = 0; i < N; i++) {
		char *n = name_of(i);
		assert_ptr_equal(names_find(&ix, 1 + i % 3, n), keys[i]);
		g_free(n);
	}
	for (int i = 0; i < N; i += 4) {
		char *n = name_of(i);
		names_add(&ix, keys[i] = name_key_new(1 + i % 3, n, NULL, (uint64_t)i + 2));
		g_free(n);
	}
	for (int i = 0; i < N; i++) {
		char *n = name_of(i);
		assert_ptr_equal(names_find(&ix, 1 + i % 3, n), keys[i]);
		g_free(n);
	}
	assert_int_equal(ix.count, N / 2 + N / 4);
	names_free(&ix);
}

static void test_batch_finds_what_one_finds(void **state)
{
	enum { N = 1000 };
	name_index ix;
	char *names[N + 5];
	name_key *got[N + 5];
	(void)state;
	names_init(&ix);
	for (int i = 0; i < N + 5; i++) {
		names[i] = name_of(i);
		if (i < N)
			names_add(&ix, name_key_new(5, names[i], NULL, (uint64_t)i + 2));
	}
	names_find_many(&ix, 5, (const char *const *)names, N + 5, got);
	for (int i = 0; i < N + 5; i++) {
		assert_ptr_equal(got[i], names_find(&ix, 5, names[i]));
		assert_true(i < N ? got[i] && got[i]->ino == (uint64_t)i + 2 : !got[i]);
		g_free(names[i]);
	}
	names_free(&ix);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_under_its_parent_only),
		cmocka_unit_test(test_removals_keep_the_others),
		cmocka_unit_test(test_batch_finds_what_one_finds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
