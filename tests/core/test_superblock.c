/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the member superblock (src/core/volume/superblock.c): round trip, and
 * a clear error (never a crash, never a guess) for garbage, truncation,
 * missing keys, bad values and unknown versions.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "core_test_util.h"
#include "ec.h"
#include "superblock.h"

static superblock sample(void)
{
	superblock sb = { .version = SUPERBLOCK_VERSION, .index = 3, .n = 6, .k = 4, .m = 2,
	                  .code = EC_RS_VANDERMONDE, .w = 16, .packet_size = 0,
	                  .strip_size = 131072, .checksum = CHECKSUM_BLAKE2B,
	                  .created = 1700000000 };
	fill_random(sb.uuid, 16, 1);
	fill_random(sb.key, sizeof(sb.key), 2);
	return sb;
}

static void test_round_trip(void **state)
{
	superblock sb = sample(), d;
	char *text = superblock_format(&sb), *why = NULL;

	(void)state;
	assert_int_equal(superblock_parse(text, strlen(text), &d, &why), 0);
	assert_null(why);
	assert_int_equal(d.version, SUPERBLOCK_VERSION);
	assert_memory_equal(d.uuid, sb.uuid, 16);
	assert_int_equal(d.index, 3);
	assert_int_equal(d.n, 6);
	assert_int_equal(d.k, 4);
	assert_int_equal(d.m, 2);
	assert_int_equal(d.code, EC_RS_VANDERMONDE);
	assert_int_equal(d.w, 16);
	assert_int_equal(d.strip_size, 131072);
	assert_int_equal(d.checksum, CHECKSUM_BLAKE2B);
	assert_memory_equal(d.key, sb.key, sizeof(sb.key));
	assert_int_equal(d.created, 1700000000);
	g_free(text);
}

static void expect_error(const char *text, size_t len, int err, const char *fragment)
{
	superblock d;
	char *why = NULL;

	assert_int_equal(superblock_parse(text, len, &d, &why), err);
	assert_non_null(why);
	if (fragment && !strstr(why, fragment))
		fail_msg("message '%s' lacks '%s'", why, fragment);
	g_free(why);
}

static void test_truncated_at_every_length(void **state)
{
	superblock sb = sample(), d;
	char *text = superblock_format(&sb);
	size_t len = strlen(text);

	(void)state;
	for (size_t cut = 0; cut + 1 < len; cut++) {
		char *why = NULL;
		char *part = g_strndup(text, cut);
		int rc = superblock_parse(part, cut, &d, &why);
		/* A cut inside the last value can still parse (a shorter
		 * number); anything else must be an error with a reason. */
		if (rc == 0)
			assert_true(cut > len - 12);
		else
			assert_non_null(why);
		g_free(why);
		g_free(part);
	}
	g_free(text);
}

static void test_garbage_and_bad_values(void **state)
{
	superblock sb = sample();
	char *text = superblock_format(&sb);

	(void)state;
	expect_error("\x01\x02garbage\xff\xfe", 11, -EINVAL, NULL);
	expect_error("", 0, -EINVAL, NULL);
	expect_error("[other]\nformat=1\n", 17, -EINVAL, "format");

	/* One edit each: where, what to write there, the error, the word the
	 * message must contain. */
	static const struct {
		const char *at;
		int skip;
		const char *put;
		int err;
		const char *says;
	} edits[] = {
		{ "k=4", 2, "9", -EINVAL, "k=9" },             /* k+m != n */
		{ "index=3", 6, "7", -EINVAL, "index" },       /* index beyond n */
		{ "uuid=", 5, "z", -EINVAL, "uuid" },
		{ "checksum=blake2b", 9, "crc32xx", -EINVAL, "checksum" },
		{ "code=", 5, "X", -EINVAL, "code" },
		{ "format=" G_STRINGIFY(SUPERBLOCK_VERSION), 7, "9", -EPROTO, "version 9" },
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char *s = g_strdup(text);
		char *p = strstr(s, edits[i].at);
		assert_non_null(p);
		memcpy(p + edits[i].skip, edits[i].put, strlen(edits[i].put));
		expect_error(s, strlen(s), edits[i].err, edits[i].says);
		g_free(s);
	}
	g_free(text);
}

static void test_read_write_files(void **state)
{
	char *dir = g_dir_make_tmp("ecfs-sb-XXXXXX", NULL);
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	superblock sb = sample(), d;
	char *why = NULL;

	(void)state;
	assert_int_equal(superblock_read(fd, &d, &why), -ENOENT);
	assert_non_null(why);
	g_free(why);
	why = NULL;
	assert_int_equal(superblock_write(NULL, 0, fd, &sb), 0);
	assert_int_equal(superblock_read(fd, &d, &why), 0);
	assert_memory_equal(d.uuid, sb.uuid, 16);

	/* An empty file and binary garbage: errors, no crash. */
	int f = openat(fd, SUPERBLOCK_FILE, O_WRONLY | O_TRUNC);
	close(f);
	assert_int_equal(superblock_read(fd, &d, &why), -EINVAL);
	g_free(why);
	f = openat(fd, SUPERBLOCK_FILE, O_WRONLY | O_TRUNC);
	uint8_t junk[3000];
	fill_random(junk, sizeof(junk), 5);
	assert_int_equal(write(f, junk, sizeof(junk)), sizeof(junk));
	close(f);
	why = NULL;
	assert_int_equal(superblock_read(fd, &d, &why), -EINVAL);
	assert_non_null(why);
	g_free(why);
	close(fd);
	rm_tree(dir);
	g_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_truncated_at_every_length),
		cmocka_unit_test(test_garbage_and_bad_values),
		cmocka_unit_test(test_read_write_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
