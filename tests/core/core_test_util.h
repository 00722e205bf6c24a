/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the storage-core unit tests: temporary member directories
 * that are always removed, and small file utilities.
 */
#ifndef CORE_TEST_UTIL_H
#define CORE_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

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
/* Deterministic pseudo-random bytes. */
void fill_random(uint8_t *buf, size_t len, uint64_t seed);

#endif
