/* SPDX-License-Identifier: MIT */
/* The closed files' sizes (src/core/volume/size_cache.c): an entry holds while its
 * file has not changed since it was made, its chunk was not made again,
 * and its chunk's ctime is the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "size_cache.h"

static struct stat chunk(ino_t ino, time_t ctime_s)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_dev = 7;
	st.st_ctim.tv_sec = ctime_s;
	return st;
}

static void test_remembered_until_a_header_is_written(void **state)
{
	size_cache *sc = size_cache_new();
	struct stat a = chunk(10, 100);
	uint64_t size = 0, ident = 0;

	(void)state;
	assert_false(size_cache_get(sc, 0, &a, &size, NULL));
	size_cache_put(sc, 0, &a, size_cache_epoch(sc), 1234, 0x5eed);
	assert_true(size_cache_get(sc, 0, &a, &size, &ident));
	assert_int_equal(size, 1234);
	assert_int_equal(ident, 0x5eed); /* the file's identity with it */
	assert_false(size_cache_get(sc, 1, &a, &size, NULL)); /* another member's chunk */
	size_cache_file_changed(sc, 0x5eed);
	assert_false(size_cache_get(sc, 0, &a, &size, NULL));
	size_cache_free(sc);
}

static void test_made_across_a_header_write(void **state)
{
	size_cache *sc = size_cache_new();
	struct stat a = chunk(10, 100);
	uint64_t size, epoch = size_cache_epoch(sc); /* read before the headers */

	(void)state;
	size_cache_file_changed(sc, 0xf);             /* a write while they were read */
	size_cache_put(sc, 0, &a, epoch, 1, 0xf);
	assert_false(size_cache_get(sc, 0, &a, &size, NULL));
	size_cache_free(sc);
}

static void test_changed_behind_its_back(void **state)
{
	size_cache *sc = size_cache_new();
	struct stat a = chunk(10, 100), touched = chunk(10, 101), reused = chunk(10, 100);
	uint64_t size;

	(void)state;
	size_cache_put(sc, 0, &a, size_cache_epoch(sc), 5, 0);
	assert_false(size_cache_get(sc, 0, &touched, &size, NULL));
	reused.st_dev = 8; /* the same inode number on another filesystem */
	assert_false(size_cache_get(sc, 0, &reused, &size, NULL));
	size_cache_free(sc);
}

/* A change of one file leaves the others' sizes remembered, also one made
 * while another's headers were read; a change of the file itself while
 * they were read does not. */
static void test_per_file(void **state)
{
	size_cache *sc = size_cache_new();
	struct stat a = chunk(10, 100), b = chunk(11, 100);
	uint64_t size, epoch = size_cache_epoch(sc);

	(void)state;
	size_cache_put(sc, 0, &a, epoch, 1, 0xa);
	size_cache_file_changed(sc, 0xb); /* another file written */
	size_cache_put(sc, 0, &b, epoch, 2, 0xb); /* read across that write */
	assert_true(size_cache_get(sc, 0, &a, &size, NULL));
	assert_int_equal(size, 1);
	assert_false(size_cache_get(sc, 0, &b, &size, NULL));
	size_cache_put(sc, 0, &b, size_cache_epoch(sc), 3, 0xb); /* read again, after */
	assert_true(size_cache_get(sc, 0, &b, &size, NULL));
	assert_int_equal(size, 3);
	size_cache_file_changed(sc, 0xa);
	assert_false(size_cache_get(sc, 0, &a, &size, NULL));
	assert_true(size_cache_get(sc, 0, &b, &size, NULL));
	/* past SIZE_CACHE_MAX files changed, whose change it was is forgotten */
	for (uint64_t i = 0; i <= SIZE_CACHE_MAX; i++)
		size_cache_file_changed(sc, 0x1000 + i);
	assert_false(size_cache_get(sc, 0, &b, &size, NULL));
	size_cache_free(sc);
}

/* A chunk made with the inode and the ctime of one removed: what was
 * remembered for that inode is forgotten, and a size read before is not
 * taken for it; the other chunks keep theirs. */
static void test_chunk_made_again(void **state)
{
	size_cache *sc = size_cache_new();
	struct stat removed = chunk(10, 100), other = chunk(11, 100), made = chunk(10, 100);
	uint64_t size, ident, before = size_cache_epoch(sc);

	(void)state;
	size_cache_put(sc, 0, &removed, before, 5, 0xa);
	size_cache_put(sc, 0, &other, before, 6, 0xb);
	size_cache_put(sc, 1, &removed, before, 7, 0xc); /* member 1's inode 10 */
	size_cache_chunk_made(sc, 0, &made);
	assert_false(size_cache_get(sc, 0, &made, &size, NULL));
	size_cache_put(sc, 0, &removed, before, 5, 0xa); /* a stat of the removed file, late */
	assert_false(size_cache_get(sc, 0, &made, &size, NULL));
	assert_true(size_cache_get(sc, 0, &other, &size, NULL));
	assert_int_equal(size, 6);
	assert_true(size_cache_get(sc, 1, &removed, &size, NULL));
	assert_int_equal(size, 7);
	size_cache_put(sc, 0, &made, size_cache_epoch(sc), 0, 0xd); /* the new file's own */
	assert_true(size_cache_get(sc, 0, &made, &size, &ident));
	assert_int_equal(size, 0);
	assert_int_equal(ident, 0xd);
	size_cache_free(sc);
}

/* A size read earlier never replaces one read later. */
static void test_older_read_kept_out(void **state)
{
	size_cache *sc = size_cache_new();
	struct stat a = chunk(10, 100);
	uint64_t size, early = size_cache_epoch(sc);

	(void)state;
	size_cache_file_changed(sc, 0xb); /* another file: the epoch moves */
	size_cache_put(sc, 0, &a, size_cache_epoch(sc), 2, 0xa);
	size_cache_put(sc, 0, &a, early, 1, 0xa);
	assert_true(size_cache_get(sc, 0, &a, &size, NULL));
	assert_int_equal(size, 2);
	size_cache_free(sc);
}

static void test_bounded(void **state)
{
	size_cache *sc = size_cache_new();
	uint64_t size, epoch = size_cache_epoch(sc);

	(void)state;
	for (int i = 0; i <= SIZE_CACHE_MAX; i++) {
		struct stat st = chunk((ino_t)i + 1, 1);
		size_cache_put(sc, 0, &st, epoch, (uint64_t)i, 0);
	}
	struct stat last = chunk(SIZE_CACHE_MAX + 1, 1), first = chunk(1, 1);
	assert_true(size_cache_get(sc, 0, &last, &size, NULL));
	assert_int_equal(size, SIZE_CACHE_MAX);
	assert_false(size_cache_get(sc, 0, &first, &size, NULL)); /* started again */
	/* what it forgot may have been a chunk made since an older read */
	uint64_t late = size_cache_epoch(sc);
	size_cache_file_changed(sc, 0xb);
	for (int i = 0; i < SIZE_CACHE_MAX; i++) {
		struct stat st = chunk((ino_t)i + 1, 2);
		size_cache_put(sc, 0, &st, size_cache_epoch(sc), 1, 0);
	}
	struct stat older = chunk(SIZE_CACHE_MAX + 10, 2);
	size_cache_put(sc, 0, &older, late, 1, 0);
	assert_false(size_cache_get(sc, 0, &older, &size, NULL));
	size_cache_free(sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remembered_until_a_header_is_written),
		cmocka_unit_test(test_made_across_a_header_write),
		cmocka_unit_test(test_changed_behind_its_back),
		cmocka_unit_test(test_per_file),
		cmocka_unit_test(test_chunk_made_again),
		cmocka_unit_test(test_older_read_kept_out),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
