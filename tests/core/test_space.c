/* SPDX-License-Identifier: MIT */
/* The members' room (src/core/volume/space.c): the reserve rule, and when a claim
 * is taken, sent back to ask the members, or refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "space.h"

#define MIB (1024ull * 1024)
#define GIB (1024 * MIB)

static struct statvfs fs_of(uint64_t size, uint64_t avail)
{
	struct statvfs st = { .f_frsize = 4096 };

	st.f_blocks = size / 4096;
	st.f_bfree = st.f_bavail = avail / 4096;
	return st;
}

static void test_reserve_rule(void **state)
{
	(void)state;
	assert_int_equal(space_reserve_for(64 * GIB), 1 * GIB);   /* capped */
	assert_int_equal(space_reserve_for(320 * GIB), 1 * GIB);
	assert_int_equal(space_reserve_for(3200 * MIB), 100 * MIB); /* 1/32 */
	assert_int_equal(space_reserve_for(200 * MIB), 8 * MIB);  /* at least 8 MiB */
	assert_int_equal(space_reserve_for(16 * MIB), 4 * MIB);   /* at most a quarter */
	assert_int_equal(space_reserve_for(0), 0);
}

static void test_unknown_members_are_asked(void **state)
{
	space *s = space_new(3);

	(void)state;
	assert_int_equal(space_claim(s, 0x7, 4096, 0, false), SPACE_STALE);
	/* Asked but without an answer (a failed member): no verdict from it. */
	assert_int_equal(space_claim(s, 0x7, 4096, 0, true), SPACE_OK);
	space_free(s);
}

static void test_claims_until_the_reserve(void **state)
{
	space *s = space_new(2);
	struct statvfs big = fs_of(3200 * MIB, 1000 * MIB), small = fs_of(320 * MIB, 40 * MIB);

	(void)state;
	space_update(s, 0, &big, 0);
	space_update(s, 1, &small, 0);
	/* Member 1 keeps 10 MiB: 30 MiB above it. */
	assert_int_equal(space_room(s, 1), 30 * MIB);
	assert_int_equal(space_room(s, 0), 900 * MIB);
	assert_int_equal(space_claim(s, 0x3, 20 * MIB, 10, false), SPACE_OK);
	assert_int_equal(space_room(s, 1), 10 * MIB);
	/* Short: first ask again, and only figures just taken refuse. */
	assert_int_equal(space_claim(s, 0x3, 20 * MIB, 10, false), SPACE_STALE);
	assert_int_equal(space_claim(s, 0x3, 20 * MIB, 10, true), SPACE_FULL);
	assert_int_equal(space_room(s, 1), 10 * MIB); /* a refused claim takes nothing */
	/* The member not in the mask does not count. */
	assert_int_equal(space_claim(s, 0x1, 20 * MIB, 10, false), SPACE_OK);
	/* New figures forget the claims: the writes landed, or were freed. */
	small = fs_of(320 * MIB, 60 * MIB);
	space_update(s, 1, &small, 20);
	assert_int_equal(space_room(s, 1), 50 * MIB);
	assert_int_equal(space_claim(s, 0x3, 20 * MIB, 20, false), SPACE_OK);
	space_free(s);
}

static void test_in_the_reserve(void **state)
{
	space *s = space_new(1);
	struct statvfs full = fs_of(320 * MIB, 5 * MIB); /* below its 10 MiB reserve */

	(void)state;
	space_update(s, 0, &full, 0);
	assert_int_equal(space_room(s, 0), 0);
	assert_int_equal(space_claim(s, 0x1, 1, 0, true), SPACE_FULL);
	assert_int_equal(space_claim(s, 0x1, 0, 0, true), SPACE_OK); /* nothing to take */
	space_free(s);
}

static void test_old_figures_are_asked_again(void **state)
{
	space *s = space_new(1);
	struct statvfs st = fs_of(3200 * MIB, 1000 * MIB);

	(void)state;
	space_update(s, 0, &st, 1000);
	assert_int_equal(space_claim(s, 0x1, 4096, 1000 + SPACE_REFRESH_MS, false), SPACE_OK);
	assert_int_equal(space_claim(s, 0x1, 4096, 1001 + SPACE_REFRESH_MS, false), SPACE_STALE);
	space_free(s);
}

static void test_full_is_reported_once(void **state)
{
	space *s = space_new(1);

	(void)state;
	assert_false(space_set_full(s, false));
	assert_true(space_set_full(s, true));
	assert_false(space_set_full(s, true));
	assert_true(space_set_full(s, false));
	assert_true(space_error(-ENOSPC));
	assert_true(space_error(-EDQUOT));
	assert_false(space_error(-EIO));
	assert_false(space_error(ENOSPC)); /* negative errnos only */
	space_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserve_rule),
		cmocka_unit_test(test_unknown_members_are_asked),
		cmocka_unit_test(test_claims_until_the_reserve),
		cmocka_unit_test(test_in_the_reserve),
		cmocka_unit_test(test_old_figures_are_asked_again),
		cmocka_unit_test(test_full_is_reported_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
