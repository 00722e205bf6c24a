/* SPDX-License-Identifier: MIT */
/* A directory's listing as the union of its members' (src/core/namespace/listing.c),
 * read from real directories: every name once, the first member's in its
 * order, then what only later members hold; hidden names and members left
 * out of `whole` give nothing; a part past what it keeps hands its names
 * to its sink. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "listing.h"

#define PARTS 3

struct dirs {
	char *root;
	char *dir[PARTS];
};

static int setup(void **state)
{
	struct dirs *d = g_new0(struct dirs, 1);
	d->root = g_dir_make_tmp("ecfs-listing-XXXXXX", NULL);
	assert_non_null(d->root);
	for (int i = 0; i < PARTS; i++) {
		d->dir[i] = g_strdup_printf("%s/m%d", d->root, i);
		assert_int_equal(g_mkdir(d->dir[i], 0700), 0);
	}
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dirs *d = *state;
	char *cmd = g_strdup_printf("rm -rf '%s'", d->root);
	assert_int_equal(system(cmd), 0);
	g_free(cmd);
	for (int i = 0; i < PARTS; i++)
		g_free(d->dir[i]);
	g_free(d->root);
	g_free(d);
	return 0;
}

static void make(const struct dirs *d, int part, const char *name)
{
	char *p = g_strdup_printf("%s/%s", d->dir[part], name);
	int fd = open(p, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	g_free(p);
}

/* Every part read, then their union. */
static listing *list(const struct dirs *d, uint64_t whole, bool (*hidden)(const char *))
{
	listing_part parts[PARTS];
	for (int i = 0; i < PARTS; i++) {
		listing_part_init(&parts[i]);
		int fd = open(d->dir[i], O_RDONLY | O_DIRECTORY);
		assert_true(fd >= 0);
		assert_int_equal(listing_part_read(&parts[i], fd), 0);
		close(fd);
	}
	return listing_union(parts, PARTS, whole, hidden);
}

/* The listing's names, "." and ".." left out, sorted. */
static GPtrArray *names(const listing *l)
{
	GPtrArray *a = g_ptr_array_new();
	for (guint i = 0; i < listing_len(l); i++) {
		const char *n = listing_at(l, i)->name;
		if (strcmp(n, ".") && strcmp(n, ".."))
			g_ptr_array_add(a, (gpointer)n);
	}
	return a;
}

static gint by_name(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void assert_names(const listing *l, const char *const *want, guint count)
{
	GPtrArray *a = names(l);
	g_ptr_array_sort(a, by_name);
	assert_int_equal(a->len, count);
	for (guint i = 0; i < count; i++)
		assert_string_equal(g_ptr_array_index(a, i), want[i]);
	g_ptr_array_free(a, TRUE);
}

static void test_same_names_listed_once(void **state)
{
	struct dirs *d = *state;
	for (int i = 0; i < PARTS; i++) {
		make(d, i, "a");
		make(d, i, "b");
	}
	listing *l = list(d, 7, NULL);
	static const char *const want[] = { "a", "b" };
	assert_names(l, want, 2);
	assert_int_equal(listing_len(l), 4); /* and . and .. once each */
	listing_unref(l);
}

static void test_names_only_later_members_hold(void **state)
{
	struct dirs *d = *state;
	make(d, 0, "a");
	make(d, 1, "a");
	make(d, 1, "only1");
	make(d, 2, "only2");
	make(d, 2, "a");
	listing *l = list(d, 7, NULL);
	static const char *const want[] = { "a", "only1", "only2" };
	assert_names(l, want, 3);
	/* the first member's names come first */
	bool seen_a = false;
	for (guint i = 0; i < listing_len(l); i++) {
		const char *n = listing_at(l, i)->name;
		if (!strcmp(n, "a"))
			seen_a = true;
		if (!strncmp(n, "only", 4))
			assert_true(seen_a);
	}
	listing_unref(l);
}

static void test_members_left_out(void **state)
{
	struct dirs *d = *state;
	make(d, 0, "zero");
	make(d, 1, "one");
	make(d, 2, "two");
	listing *l = list(d, 1u << 1 | 1u << 2, NULL); /* member 0 not asked */
	static const char *const want[] = { "one", "two" };
	assert_names(l, want, 2);
	listing_unref(l);
	l = list(d, 0, NULL);
	assert_int_equal(listing_len(l), 0);
	listing_unref(l);
}

static bool hide_secret(const char *name)
{
	return !strcmp(name, "secret");
}

static void test_hidden_names(void **state)
{
	struct dirs *d = *state;
	for (int i = 0; i < PARTS; i++) {
		make(d, i, "secret");
		make(d, i, "shown");
	}
	listing *l = list(d, 7, hide_secret);
	static const char *const want[] = { "shown" };
	assert_names(l, want, 1);
	listing_unref(l);
}

/* Thousands of names, the members out of step (one lacks a name, one has
 * an extra, one holds them in another order): each name once. */
static void test_many_names_out_of_step(void **state)
{
	struct dirs *d = *state;
	enum { N = 5000 };
	for (int j = 0; j < N; j++) {
		char name[32];
		snprintf(name, sizeof(name), "n%05d", j);
		if (j != 17)
			make(d, 0, name);
		make(d, 1, name);
		snprintf(name, sizeof(name), "n%05d", N - 1 - j);
		make(d, 2, name);
	}
	make(d, 2, "extra");
	listing *l = list(d, 7, NULL);
	GPtrArray *a = names(l);
	g_ptr_array_sort(a, by_name);
	assert_int_equal(a->len, N + 1);
	assert_string_equal(g_ptr_array_index(a, 0), "extra");
	for (guint i = 1; i < a->len; i++) {
		char name[32];
		snprintf(name, sizeof(name), "n%05u", i - 1);
		assert_string_equal(g_ptr_array_index(a, i), name);
	}
	g_ptr_array_free(a, TRUE);
	listing_unref(l);
}

/* A sink that keeps each name it is handed, counted. */
static void count_name(void *ctx, const char *name, unsigned char type)
{
	(void)type;
	GHashTable *seen = ctx;
	guint n = GPOINTER_TO_UINT(g_hash_table_lookup(seen, name));
	g_hash_table_replace(seen, g_strdup(name), GUINT_TO_POINTER(n + 1));
}

static bool hide_h(const char *name)
{
	return !strcmp(name, "h");
}

/* Past keep records a part hands every name to its sink once (hidden
 * ones left out) and keeps none; within keep it keeps them all and
 * hands over none. */
static void test_part_past_keep_goes_to_sink(void **state)
{
	struct dirs *d = *state;
	char name[16];
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof name, "n%02d", i);
		make(d, 0, name);
	}
	make(d, 0, "h");
	for (guint keep = 10; keep <= 1000; keep += 990) {
		GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		listing_part p;
		listing_part_init_sink(&p, count_name, seen, hide_h, keep);
		int fd = open(d->dir[0], O_RDONLY | O_DIRECTORY);
		assert_true(fd >= 0);
		assert_int_equal(listing_part_read(&p, fd), 0);
		close(fd);
		if (keep == 10) {
			assert_true(p.overflowed);
			assert_int_equal(p.blocks->len, 0);
			assert_int_equal(g_hash_table_size(seen), 52); /* and . and .. */
			assert_false(g_hash_table_contains(seen, "h"));
			GHashTableIter it;
			gpointer n;
			g_hash_table_iter_init(&it, seen);
			while (g_hash_table_iter_next(&it, NULL, &n))
				assert_int_equal(GPOINTER_TO_UINT(n), 1);
		} else {
			assert_false(p.overflowed);
			assert_int_equal(g_hash_table_size(seen), 0);
			assert_int_equal(listing_part_count(&p, hide_h), 52);
		}
		listing_part_clear(&p);
		g_hash_table_destroy(seen);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_same_names_listed_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_only_later_members_hold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_members_left_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hidden_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_names_out_of_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_part_past_keep_goes_to_sink, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
