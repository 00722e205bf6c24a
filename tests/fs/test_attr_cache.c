/* SPDX-License-Identifier: MIT */
/* The attributes getattr answered (src/fs/attr_cache.c): an entry holds
 * while the stamp it was made at stands (a directory's changes and
 * listings, a file's changes, reads and sizes), for ATTR_CACHE_TTL_MS at most, and only directories and regular
 * files are kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "attr_cache.h"

static struct stat object(ino_t ino, mode_t type)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = type | 0755;
	st.st_nlink = 2;
	return st;
}

static void test_held_while_nothing_changes(void **state)
{
	attr_cache *ac = attr_cache_new();
	struct stat a = object(10, S_IFDIR), got;
	attr_stamp s = { 5, 0, 1, 1 }, later = { 6, 0, 1, 1 };

	(void)state;
	assert_false(attr_cache_get(ac, "/a", &s, &got));
	attr_cache_put(ac, "/a", &s, &a);
	memset(&got, 0, sizeof(got));
	assert_true(attr_cache_get(ac, "/a", &s, &got));
	assert_int_equal(got.st_ino, 10);
	assert_int_equal(got.st_mode, S_IFDIR | 0755);
	assert_false(attr_cache_get(ac, "/b", &s, &got));     /* another path */
	assert_false(attr_cache_get(ac, "/a", &later, &got)); /* a change since */
	attr_cache_put(ac, "/a", &later, &a);                 /* asked again */
	assert_true(attr_cache_get(ac, "/a", &later, &got));
	attr_cache_free(ac);
}

static void test_made_across_a_change(void **state)
{
	attr_cache *ac = attr_cache_new();
	struct stat a = object(10, S_IFDIR), got;
	attr_stamp asked = { 5, 0, 1, 1 }, now = { 6, 0, 1, 1 };

	(void)state;
	/* asked when the count was 5, a change meanwhile: 6 now */
	attr_cache_put(ac, "/a", &asked, &a);
	assert_false(attr_cache_get(ac, "/a", &now, &got));
	attr_cache_free(ac);
}

static void test_what_each_kind_follows(void **state)
{
	attr_cache *ac = attr_cache_new();
	struct stat d = object(10, S_IFDIR), f = object(11, S_IFREG), got;
	attr_stamp s = { 5, 3, 7, 9 }, read = { 5, 3, 8, 9 }, sized = { 5, 3, 7, 10 },
	           listed = { 5, 4, 7, 9 };

	(void)state;
	attr_cache_put(ac, "/d", &s, &d);
	attr_cache_put(ac, "/f", &s, &f);
	assert_true(attr_cache_get(ac, "/f", &s, &got));
	assert_int_equal(got.st_ino, 11);
	/* a read (atime) or a size in memory: the file's entry lapses, the
	 * directory's does not */
	assert_false(attr_cache_get(ac, "/f", &read, &got));
	assert_false(attr_cache_get(ac, "/f", &sized, &got));
	assert_true(attr_cache_get(ac, "/d", &read, &got));
	assert_true(attr_cache_get(ac, "/d", &sized, &got));
	/* a listing (a directory's atime): the other way round */
	assert_false(attr_cache_get(ac, "/d", &listed, &got));
	assert_true(attr_cache_get(ac, "/f", &listed, &got));
	attr_cache_free(ac);
}

static void test_only_directories_and_files(void **state)
{
	attr_cache *ac = attr_cache_new();
	struct stat l = object(12, S_IFLNK), c = object(13, S_IFCHR), got;
	attr_stamp s = { 1, 1, 1, 1 };

	(void)state;
	attr_cache_put(ac, "/l", &s, &l);
	attr_cache_put(ac, "/c", &s, &c);
	assert_false(attr_cache_get(ac, "/l", &s, &got));
	assert_false(attr_cache_get(ac, "/c", &s, &got));
	attr_cache_free(ac);
}

static void test_expires(void **state)
{
	attr_cache *ac = attr_cache_new();
	struct stat a = object(10, S_IFDIR), got;
	attr_stamp s = { 1, 1, 1, 1 };

	(void)state;
	attr_cache_put(ac, "/a", &s, &a);
	assert_true(attr_cache_get(ac, "/a", &s, &got));
	usleep((ATTR_CACHE_TTL_MS + 20) * 1000);
	assert_false(attr_cache_get(ac, "/a", &s, &got));
	attr_cache_free(ac);
}

static void test_bounded(void **state)
{
	attr_cache *ac = attr_cache_new();
	char path[32];
	struct stat got;
	attr_stamp s = { 1, 1, 1, 1 };

	(void)state;
	for (int i = 0; i <= ATTR_CACHE_MAX; i++) {
		struct stat st = object((ino_t)i + 1, S_IFDIR);
		snprintf(path, sizeof(path), "/d%d", i);
		attr_cache_put(ac, path, &s, &st);
	}
	snprintf(path, sizeof(path), "/d%d", ATTR_CACHE_MAX);
	assert_true(attr_cache_get(ac, path, &s, &got));
	assert_int_equal(got.st_ino, ATTR_CACHE_MAX + 1);
	assert_false(attr_cache_get(ac, "/d0", &s, &got)); /* started again */
	attr_cache_free(ac);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held_while_nothing_changes),
		cmocka_unit_test(test_made_across_a_change),
		cmocka_unit_test(test_what_each_kind_follows),
		cmocka_unit_test(test_only_directories_and_files),
		cmocka_unit_test(test_expires),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
