/* SPDX-License-Identifier: MIT */
#include "fs_names.h"

#include <string.h>

#include <glib.h>

struct name_slot {
	uint64_t hash;
	name_key *key; /* NULL: empty */
};

/* How many names names_find_many keeps in flight. */
#define FIND_RUN 32

static uint64_t name_hash(uint64_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (parent * 0x9e3779b97f4a7c15ull); /* FNV-1a */
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return h ^ h >> 32; /* the slot comes from the low bits */
}

name_key *name_key_new(uint64_t parent, const char *name, struct node *n, uint64_t ino)
{
	size_t len = strlen(name);
	name_key *k = g_malloc(sizeof(*k) + len + 1);
	k->parent = parent;
	k->ino = ino;
	k->hash = name_hash(parent, name);
	k->node = n;
	k->given_us = 0;
	memcpy(k->name, name, len + 1);
	return k;
}

static void make_slots(name_index *ix, size_t size)
{
	ix->slots = g_new0(struct name_slot, size);
	ix->mask = size - 1;
	ix->count = 0;
}

void names_init(name_index *ix)
{
	make_slots(ix, 1024);
}

void names_free(name_index *ix)
{
	for (size_t i = 0; ix->slots && i <= ix->mask; i++)
		g_free(ix->slots[i].key);
	g_free(ix->slots);
	ix->slots = NULL;
}

static bool matches(const struct name_slot *s, uint64_t hash, uint64_t parent,
                    const char *name)
{
	return s->hash == hash && s->key->parent == parent && !strcmp(s->key->name, name);
}

static name_key *find(const name_index *ix, uint64_t hash, uint64_t parent, const char *name)
{
	for (size_t at = hash & ix->mask; ix->slots[at].key; at = (at + 1) & ix->mask)
		if (matches(&ix->slots[at], hash, parent, name))
			return ix->slots[at].key;
	return NULL;
}

name_key *names_find(const name_index *ix, uint64_t parent, const char *name)
{
	return find(ix, name_hash(parent, name), parent, name);
}

static void put(name_index *ix, name_key *k)
{
	size_t at = k->hash & ix->mask;
	while (ix->slots[at].key)
		at = (at + 1) & ix->mask;
	ix->slots[at] = (struct name_slot){ k->hash, k };
	ix->count++;
}

void names_add(name_index *ix, name_key *k)
{
	if (2 * (ix->count + 1) > ix->mask + 1) { /* at most half full: short probes */
		name_index bigger;
		make_slots(&bigger, 2 * (ix->mask + 1));
		for (size_t i = 0; i <= ix->mask; i++)
			if (ix->slots[i].key)
				put(&bigger, ix->slots[i].key);
		g_free(ix->slots);
		*ix = bigger;
	}
	put(ix, k);
}

void names_remove(name_index *ix, name_key *k)
{
	size_t hole = k->hash & ix->mask;
	while (ix->slots[hole].key != k)
		hole = (hole + 1) & ix->mask;
	/* Linear probing without tombstones: each later entry of the run that
	 * may sit in the hole (its home at or before it) moves back into it. */
	for (size_t next = (hole + 1) & ix->mask; ix->slots[next].key;
	     next = (next + 1) & ix->mask) {
		size_t home = ix->slots[next].hash & ix->mask;
		if (((next - home) & ix->mask) >= ((next - hole) & ix->mask)) {
			ix->slots[hole] = ix->slots[next];
			hole = next;
		}
	}
	ix->slots[hole].key = NULL;
	ix->count--;
	g_free(k);
}

void names_find_many(const name_index *ix, uint64_t parent, const char *const *names,
                     size_t count, name_key **out)
{
	uint64_t hash[FIND_RUN];
	for (size_t first = 0; first < count; first += FIND_RUN) {
		size_t run = MIN(FIND_RUN, count - first);
		for (size_t i = 0; i < run; i++) {
			hash[i] = name_hash(parent, names[first + i]);
			__builtin_prefetch(&ix->slots[hash[i] & ix->mask]);
		}
		for (size_t i = 0; i < run; i++) {
			const struct name_slot *s = &ix->slots[hash[i] & ix->mask];
			if (s->key && s->hash == hash[i])
				__builtin_prefetch(s->key);
		}
		for (size_t i = 0; i < run; i++)
			out[first + i] = find(ix, hash[i], parent, names[first + i]);
	}
}
