/* SPDX-License-Identifier: MIT */
/* The rate limit of the daemon's events (src/fs/ratelimit.c): one event
 * per interval and key, the ones held back counted and told with the
 * next that goes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ratelimit.h"

#define SEC 1000000

static void test_one_per_interval(void **state)
{
	ratelimit *r = ratelimit_new(60 * SEC);
	uint64_t held = 99;

	(void)state;
	assert_true(ratelimit_allow(r, 1, 5 * SEC, &held));
	assert_int_equal(held, 0);
	for (int i = 0; i < 1000; i++)
		assert_false(ratelimit_allow(r, 1, 5 * SEC + i * 1000, &held));
	assert_false(ratelimit_allow(r, 1, 65 * SEC - 1, &held));
	assert_true(ratelimit_allow(r, 1, 65 * SEC, &held));
	assert_int_equal(held, 1001); /* every one held back, told once */
	assert_false(ratelimit_allow(r, 1, 70 * SEC, &held));
	assert_true(ratelimit_allow(r, 1, 200 * SEC, &held));
	assert_int_equal(held, 1);
	ratelimit_free(r);
}

static void test_keys_apart(void **state)
{
	ratelimit *r = ratelimit_new(60 * SEC);
	uint64_t held;

	(void)state;
	assert_true(ratelimit_allow(r, 1, 0, &held));
	assert_false(ratelimit_allow(r, 1, 1, &held));
	/* another kind, or another member, is not held back by the first */
	assert_true(ratelimit_allow(r, 2, 1, &held));
	assert_true(ratelimit_allow(r, (uint64_t)1 << 40, 1, &held));
	assert_int_equal(held, 0);
	assert_false(ratelimit_allow(r, 2, 2, &held));
	ratelimit_free(r);
}

static void test_zero_interval_holds_nothing(void **state)
{
	ratelimit *r = ratelimit_new(0);
	uint64_t held;

	(void)state;
	for (int i = 0; i < 10; i++) {
		assert_true(ratelimit_allow(r, 7, 100, &held));
		assert_int_equal(held, 0);
	}
	ratelimit_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_per_interval),
		cmocka_unit_test(test_keys_apart),
		cmocka_unit_test(test_zero_interval_holds_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
