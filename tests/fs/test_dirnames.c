/* SPDX-License-Identifier: MIT */
/* The names the daemon holds whole (src/fs/fs_dirnames.c): a directory is
 * listed from here only once it was made or listed, and a name it lacks
 * is absent; every change after shows in its listing, a change it cannot follow (a failed one, a name
 * of a type not known) drops it, a listing given out never changes, a
 * listing read before a change is not held, and past DIRNAMES_MAX names
 * everything goes. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <glib.h>

#include "fs_dirnames.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static gint by_text(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* dir's listing as "name/type" sorted and joined by spaces, or NULL if
 * it is not held (g_free it). */
static char *listed(uint64_t dir)
{
	listing *l = fs_dirnames_listing(dir);
	if (!l)
		return NULL;
	GPtrArray *items = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < listing_len(l); i++)
		g_ptr_array_add(items, g_strdup_printf("%s/%d", listing_at(l, i)->name,
		                                       listing_at(l, i)->type));
	g_ptr_array_sort(items, by_text);
	g_ptr_array_add(items, NULL);
	char *s = g_strjoinv(" ", (char **)items->pdata);
	g_ptr_array_free(items, TRUE);
	listing_unref(l);
	return s;
}

#define assert_listed(dir, want)                    \
	do {                                            \
		char *got_ = listed(dir);                   \
		assert_non_null(got_);                      \
		assert_string_equal(got_, want);            \
		g_free(got_);                               \
	} while (0)

static int fresh(void **state)
{
	(void)state;
	fs_dirnames_drop_all();
	return 0;
}

static void test_made_then_changed(void **state)
{
	(void)state;
	assert_null(fs_dirnames_listing(10));
	fs_dirnames_added(10, "early", S_IFREG); /* not held: nothing to add to */
	assert_null(fs_dirnames_listing(10));
	assert_false(fs_dirnames_absent(10, "f")); /* not known: the members say */
	fs_dirnames_made(10, NULL);
	assert_listed(10, "../4 ./4");
	assert_true(fs_dirnames_absent(10, "f"));
	fs_dirnames_added(10, "f", S_IFREG);
	fs_dirnames_added(10, "d", S_IFDIR);
	fs_dirnames_added(10, "l", S_IFLNK);
	fs_dirnames_added(10, "f", S_IFREG); /* again: once */
	fs_dirnames_changed(10, "p", S_IFIFO, 0);
	assert_listed(10, "../4 ./4 d/4 f/8 l/10 p/1");
	listing *before = fs_dirnames_listing(10); /* a listing given out */
	fs_dirnames_removed(10, "f");
	assert_int_equal(listing_len(before), 6); /* does not change */
	listing_unref(before);
	fs_dirnames_removed(10, "absent");
	assert_listed(10, "../4 ./4 d/4 l/10 p/1");
	assert_true(fs_dirnames_absent(10, "f"));
	assert_false(fs_dirnames_absent(10, "d"));
	fs_dirnames_changed(10, "x", S_IFREG, -ENOSPC); /* may be on some members */
	assert_null(fs_dirnames_listing(10));
	assert_false(fs_dirnames_absent(10, "x"));
}

static void test_renames(void **state)
{
	(void)state;
	fs_dirnames_made(1, NULL);
	fs_dirnames_made(2, NULL);
	fs_dirnames_added(1, "a", S_IFREG);
	fs_dirnames_added(1, "b", S_IFDIR);
	fs_dirnames_added(2, "c", S_IFLNK);
	fs_dirnames_renamed(1, "a", 1, "a2", 0);
	assert_listed(1, "../4 ./4 a2/8 b/4");
	fs_dirnames_renamed(1, "a2", 2, "c", 0); /* over c */
	assert_listed(1, "../4 ./4 b/4");
	assert_listed(2, "../4 ./4 c/8");
	fs_dirnames_added(2, "e", S_IFDIR);
	fs_dirnames_renamed(1, "b", 2, "e", RENAME_EXCHANGE);
	assert_listed(1, "../4 ./4 b/4");
	assert_listed(2, "../4 ./4 c/8 e/4");
	fs_dirnames_renamed(2, "c", 1, "b", RENAME_EXCHANGE);
	assert_listed(1, "../4 ./4 b/8");
	assert_listed(2, "../4 ./4 c/4 e/4");
	/* From a directory not held: its type is not known. */
	fs_dirnames_renamed(3, "z", 1, "z", 0);
	assert_null(fs_dirnames_listing(1));
	assert_listed(2, "../4 ./4 c/4 e/4");
	fs_dirnames_renamed(2, "c", 3, "c", 0); /* to one not held */
	assert_listed(2, "../4 ./4 e/4");
	fs_dirnames_renamed(2, "e", 4, "q", RENAME_EXCHANGE);
	assert_null(fs_dirnames_listing(2));
}

static void test_listing_held_unless_changed_meanwhile(void **state)
{
	(void)state;
	listing *l = listing_new(2, 16);
	listing_append(l, "x", DT_REG);
	listing_append(l, "sub", DT_DIR);
	uint64_t before = fs_dirnames_generation();
	fs_dirnames_removed(77, "x"); /* a change after the members were read */
	fs_dirnames_listed(20, l, before, NULL);
	assert_null(fs_dirnames_listing(20));
	fs_dirnames_listed(20, l, fs_dirnames_generation(), NULL);
	assert_true(fs_dirnames_absent(20, "y"));
	assert_false(fs_dirnames_absent(20, "sub"));
	assert_listed(20, "sub/4 x/8");
	fs_dirnames_added(20, "y", S_IFREG);
	assert_listed(20, "sub/4 x/8 y/8");
	fs_dirnames_drop(20);
	assert_null(fs_dirnames_listing(20));
	listing_unref(l);
}

static void test_everything_dropped_past_the_bound(void **state)
{
	(void)state;
	fs_dirnames_made(30, NULL);
	fs_dirnames_made(31, NULL);
	fs_dirnames_added(31, "kept until the bound", S_IFREG);
	char name[32];
	/* held: 30 and 31 with . and .., 31's name and 30's */
	for (int i = 0; i < DIRNAMES_MAX - 7; i++) {
		snprintf(name, sizeof name, "n%d", i);
		fs_dirnames_added(30, name, S_IFREG);
	}
	listing *l = fs_dirnames_listing(30);
	assert_non_null(l);
	assert_int_equal(listing_len(l), DIRNAMES_MAX - 5);
	listing_unref(l);
	assert_listed(31, "../4 ./4 kept until the bound/8");
	fs_dirnames_added(30, "one more", S_IFREG);
	assert_null(fs_dirnames_listing(30));
	assert_null(fs_dirnames_listing(31));
	fs_dirnames_made(30, NULL); /* held again from scratch */
	assert_listed(30, "../4 ./4");
}

struct seen {
	int count;
	uint64_t dir, mask, ino2;
	guint names;
};

static void note(uint64_t dir, const listing *names, const dir_members *on, void *ctx)
{
	struct seen *s = ctx;
	*s = (struct seen){ s->count + 1, dir, on->mask, on->ino[2], listing_len(names) };
}

static void test_each_gives_the_members_known(void **state)
{
	(void)state;
	dir_members on = { .mask = 0x5 };
	on.ino[0] = 100;
	on.ino[2] = 102;
	fs_dirnames_made(40, &on);
	fs_dirnames_made(41, NULL); /* no member known: not given */
	listing *l = listing_new(1, 2);
	listing_append(l, "x", DT_REG);
	fs_dirnames_listed(42, l, fs_dirnames_generation(), NULL);
	listing_unref(l);
	fs_dirnames_added(40, "f", S_IFREG);
	struct seen s = { 0 };
	fs_dirnames_each(note, &s);
	assert_int_equal(s.count, 1);
	assert_int_equal(s.dir, 40);
	assert_int_equal(s.mask, 0x5);
	assert_int_equal(s.ino2, 102);
	assert_int_equal(s.names, 3); /* . .. f */
	fs_dirnames_drop(40);
	s.count = 0;
	fs_dirnames_each(note, &s);
	assert_int_equal(s.count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_made_then_changed, fresh),
		cmocka_unit_test_setup(test_renames, fresh),
		cmocka_unit_test_setup(test_listing_held_unless_changed_meanwhile, fresh),
		cmocka_unit_test_setup(test_everything_dropped_past_the_bound, fresh),
		cmocka_unit_test_setup(test_each_gives_the_members_known, fresh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
