/* SPDX-License-Identifier: MIT */
/*
 * The node table's index of names (fs_nodes.c): (parent node, name) to
 * the name's key, in an open-addressing table whose slots keep each key's
 * 64-bit hash beside it, so that a probe reads a key only on a full hash
 * match.  A listing asks for every name of a reply at once
 * (names_find_many): the slots of a run of names are fetched first, then
 * their keys, so that the cache misses overlap.  One by one, a name costs
 * several misses, and a listing of 10,000 names spent 2 to 3 ms on them.
 * Not thread-safe: fs_nodes.c holds its lock.
 */
#ifndef ECFS_FS_NAMES_H
#define ECFS_FS_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct node;

/* Node ids are fuse_ino_t, a uint64_t. */
typedef struct name_key {
	uint64_t parent;
	uint64_t ino; /* its node's id, which never changes */
	uint64_t hash;
	struct node *node;
	int64_t given_us; /* when the kernel was last given it with attributes
	                   * (g_get_monotonic_time), 0: never */
	char name[];    /* in the same allocation */
} name_key;

typedef struct name_index {
	struct name_slot *slots;
	size_t mask, count;
} name_index;

name_key *name_key_new(uint64_t parent, const char *name, struct node *n, uint64_t ino);
void names_init(name_index *ix);
/* Frees the index and every key in it. */
void names_free(name_index *ix);
name_key *names_find(const name_index *ix, uint64_t parent, const char *name);
/* Adds k, whose (parent, name) is not in the index. */
void names_add(name_index *ix, name_key *k);
/* Takes k out of the index and frees it. */
void names_remove(name_index *ix, name_key *k);
/* out[i] = names_find(ix, parent, names[i]) for i < count. */
void names_find_many(const name_index *ix, uint64_t parent, const char *const *names,
                     size_t count, name_key **out);

#endif
