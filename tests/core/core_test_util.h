/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the storage-core unit tests: temporary member directories
 * that are always removed, volumes on them, and small file utilities.
 */
#ifndef CORE_TEST_UTIL_H
#define CORE_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "volume.h"

typedef struct members {
	char *root;      /* temporary directory holding m0..m{n-1} */
	int n;
	char *path[64];
} members;

/* Creates root/m0 .. root/m{n-1} (empty directories). */
void members_make(members *mb, int n);
/* Removes the whole tree. */
void members_remove(members *mb);
/* rm -rf of one path. */
void rm_tree(const char *path);
/* Reads a whole file into a g_malloc'd buffer (NULL if absent). */
uint8_t *slurp(const char *path, size_t *len);

/* A volume on fresh member directories: a test's state. */
typedef struct test_volume {
	members mb;
	volume *v;
	volume_options o;
} test_volume;

/* Makes k+m member directories and opens a volume on them with o (the
 * test fails if it cannot be opened). */
test_volume *test_volume_new(const volume_options *o);
/* Closes the volume and opens it again (members failed are back). */
void test_volume_reopen(test_volume *t);
/* Closes it and removes the member directories. */
void test_volume_free(test_volume *t);
/* cmocka setup and teardown of a test_volume as the test's state, its
 * options given as the prestate (cmocka_unit_test_prestate_setup_teardown). */
int test_volume_setup(void **state);
int test_volume_teardown(void **state);
/* Member i's copy of volume path rel ("/a/b"), g_malloc'd. */
char *member_path(const members *mb, int i, const char *rel);
/* Writes a regular file holding content at rel on member i. */
void put_member_file(const members *mb, int i, const char *rel, const char *content);

/* Deterministic pseudo-random bytes. */
void fill_random(uint8_t *buf, size_t len, uint64_t seed);

/* The slots of a member's intent log (root/.ecfs/intent/log, FORMAT.md
 * section 8) that hold a record's magic (bit i: slot i), or with
 * any_bytes those whose magic is anything but zeros (records, torn ones).
 * 0 if there is no log. */
uint64_t intent_log_slots(const char *root, bool any_bytes);

#endif
