/* SPDX-License-Identifier: MIT */
/* The pool of open files' descriptors (src/core/base/fdpool.c): idle
 * holders evicted oldest first until the pool is within its cap, pinned
 * and busy ones spared, and the cap soft when nothing can go. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fdpool.h"

struct holder {
	fdpool_entry e; /* first: the eviction finds the holder from it */
	int fds;        /* open "descriptors" */
	bool busy;      /* declines */
	int evictions;
};

static int evict(fdpool_entry *e, void *arg)
{
	struct holder *h = (struct holder *)e;
	int *order = arg;

	if (h->busy)
		return -1;
	h->fds = 0;
	h->evictions = ++*order;
	return 0;
}

/* Opens a holder of n descriptors as a file open does: room first. */
static void open_holder(fdpool *p, struct holder *h, int n, int *order)
{
	fdpool_make_room(p, n, evict, order);
	h->fds = n;
	fdpool_add(p, &h->e, n);
}

static void test_cap_for_limit(void **state)
{
	(void)state;
	assert_int_equal(fdpool_cap_for_limit(256), 192);
	assert_int_equal(fdpool_cap_for_limit(1024), 768);
	assert_int_equal(fdpool_cap_for_limit(100), 36); /* 64 of headroom at least */
	assert_int_equal(fdpool_cap_for_limit(10), 1);
	assert_true(fdpool_cap_for_limit(RLIM_INFINITY) > 1000000);
}

static void test_oldest_idle_first(void **state)
{
	struct holder h[10] = { 0 };
	int order = 0;
	fdpool *p = fdpool_new(12); /* four holders of three */

	(void)state;
	for (int i = 0; i < 4; i++)
		open_holder(p, &h[i], 3, &order);
	assert_int_equal(fdpool_held(p), 12);
	assert_int_equal(order, 0);
	/* h[0] used again: h[1] is now the oldest */
	fdpool_pin(p, &h[0].e);
	fdpool_unpin(p, &h[0].e, 3);
	open_holder(p, &h[4], 3, &order);
	assert_int_equal(h[1].evictions, 1);
	assert_int_equal(h[1].fds, 0);
	assert_int_equal(fdpool_held(p), 12);
	/* pinned and busy holders are spared: h[2] pinned, h[3] busy */
	fdpool_pin(p, &h[2].e);
	h[3].busy = true;
	open_holder(p, &h[5], 3, &order);
	assert_int_equal(h[0].evictions, 2);
	assert_int_equal(h[2].fds, 3);
	assert_int_equal(h[3].fds, 3);
	assert_int_equal(fdpool_held(p), 12);
	/* nothing else can go: the cap is soft, the open goes ahead */
	h[4].busy = h[5].busy = true;
	open_holder(p, &h[6], 3, &order);
	assert_int_equal(fdpool_held(p), 15);
	/* a holder used again after its eviction counts its descriptors again */
	fdpool_unpin(p, &h[2].e, 3);
	fdpool_pin(p, &h[1].e);
	fdpool_make_room(p, 0, evict, &order);
	assert_int_equal(h[2].evictions, 3); /* the oldest idle one, for room */
	assert_int_equal(fdpool_held(p), 12);
	fdpool_unpin(p, &h[1].e, 3);
	assert_int_equal(fdpool_held(p), 15);
	for (int i = 0; i < 7; i++)
		fdpool_remove(p, &h[i].e);
	assert_int_equal(fdpool_held(p), 0);
	fdpool_free(p);
}

static void test_many_holders_stay_within_the_cap(void **state)
{
	static struct holder h[1000];
	int order = 0;
	fdpool *p = fdpool_new(192);

	(void)state;
	for (int i = 0; i < 1000; i++) {
		open_holder(p, &h[i], 3, &order);
		assert_true(fdpool_held(p) <= 192);
	}
	/* each used once more, reopened with room made first */
	for (int i = 0; i < 1000; i++) {
		if (!h[i].fds)
			fdpool_make_room(p, 3, evict, &order);
		fdpool_pin(p, &h[i].e);
		h[i].fds = 3;
		fdpool_unpin(p, &h[i].e, 3);
		assert_true(fdpool_held(p) <= 192);
	}
	for (int i = 0; i < 1000; i++)
		fdpool_remove(p, &h[i].e);
	fdpool_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_for_limit),
		cmocka_unit_test(test_oldest_idle_first),
		cmocka_unit_test(test_many_holders_stay_within_the_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
