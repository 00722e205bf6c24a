/* SPDX-License-Identifier: MIT */
/* The directories' attributes (src/core/dir_cache.c): an entry holds while
 * the change count it was made at stands, for DIR_CACHE_TTL_MS at most,
 * and only directories are kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dir_cache.h"

static struct stat dir(ino_t ino)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = S_IFDIR | 0755;
	st.st_nlink = 2;
	return st;
}

static void test_held_while_nothing_changes(void **state)
{
	dir_cache *dc = dir_cache_new();
	struct stat a = dir(10), got;

	(void)state;
	assert_false(dir_cache_get(dc, "/a", 5, &got));
	dir_cache_put(dc, "/a", 5, &a);
	memset(&got, 0, sizeof(got));
	assert_true(dir_cache_get(dc, "/a", 5, &got));
	assert_int_equal(got.st_ino, 10);
	assert_int_equal(got.st_mode, S_IFDIR | 0755);
	assert_false(dir_cache_get(dc, "/b", 5, &got));  /* another path */
	assert_false(dir_cache_get(dc, "/a", 6, &got));  /* a change since */
	dir_cache_put(dc, "/a", 6, &a);                  /* asked again */
	assert_true(dir_cache_get(dc, "/a", 6, &got));
	dir_cache_free(dc);
}

static void test_made_across_a_change(void **state)
{
	dir_cache *dc = dir_cache_new();
	struct stat a = dir(10), got;

	(void)state;
	/* asked when the count was 5, a change meanwhile: 6 now */
	dir_cache_put(dc, "/a", 5, &a);
	assert_false(dir_cache_get(dc, "/a", 6, &got));
	dir_cache_free(dc);
}

static void test_only_directories(void **state)
{
	dir_cache *dc = dir_cache_new();
	struct stat f = dir(11), l = dir(12), got;

	(void)state;
	f.st_mode = S_IFREG | 0644; /* a file may have other names */
	l.st_mode = S_IFLNK | 0777;
	dir_cache_put(dc, "/f", 1, &f);
	dir_cache_put(dc, "/l", 1, &l);
	assert_false(dir_cache_get(dc, "/f", 1, &got));
	assert_false(dir_cache_get(dc, "/l", 1, &got));
	dir_cache_free(dc);
}

static void test_expires(void **state)
{
	dir_cache *dc = dir_cache_new();
	struct stat a = dir(10), got;

	(void)state;
	dir_cache_put(dc, "/a", 1, &a);
	assert_true(dir_cache_get(dc, "/a", 1, &got));
	usleep((DIR_CACHE_TTL_MS + 20) * 1000);
	assert_false(dir_cache_get(dc, "/a", 1, &got));
	dir_cache_free(dc);
}

static void test_bounded(void **state)
{
	dir_cache *dc = dir_cache_new();
	char path[32];
	struct stat got;

	(void)state;
	for (int i = 0; i <= DIR_CACHE_MAX; i++) {
		struct stat st = dir((ino_t)i + 1);
		snprintf(path, sizeof(path), "/d%d", i);
		dir_cache_put(dc, path, 1, &st);
	}
	snprintf(path, sizeof(path), "/d%d", DIR_CACHE_MAX);
	assert_true(dir_cache_get(dc, path, 1, &got));
	assert_int_equal(got.st_ino, DIR_CACHE_MAX + 1);
	assert_false(dir_cache_get(dc, "/d0", 1, &got)); /* started again */
	dir_cache_free(dc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held_while_nothing_changes),
		cmocka_unit_test(test_made_across_a_change),
		cmocka_unit_test(test_only_directories),
		cmocka_unit_test(test_expires),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
