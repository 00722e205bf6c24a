/* SPDX-License-Identifier: MIT */
/*
 * A bounded window on a directory's listing (DESIGN.md section 4).  The
 * names of a directory are ordered by a key, a keyed hash of the name
 * (SipHash-2-4 cut to 63 bits, never 0), then by the name itself: an
 * order that depends on the names only, not on which members they were
 * read from nor in what order.  A batch holds the first `max` names
 * whose key is greater than a given one, gathered from any number of
 * sources (listings of one or more members) offered name by name, each
 * name once however often it is offered, in memory of `max` names at
 * most twice over while it gathers.
 *
 * The offset handed to the kernel after a name is its key, so a listing
 * resumes from any offset with nothing kept: the names after it are
 * those of greater key.  While the directory does not change no name
 * is listed twice and none is skipped; a name added or removed meanwhile
 * is listed or not, and every other name is listed once.  Names of equal
 * key (a collision of the keyed hash) are kept together: a batch takes
 * all of them or none, and the offset after each but the last is the
 * key before them, so a resume never passes over one of them.
 */
#ifndef ECFS_LISTING_BATCH_H
#define ECFS_LISTING_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "listing.h"

/* The key of a hash: SipHash's 128 bits, random for each mount. */
typedef struct listing_key_seed {
	uint64_t k[2];
} listing_key_seed;

/* A seed from the kernel's random numbers. */
void listing_key_seed_random(listing_key_seed *s);
/* SipHash-2-4 of name under s (for the tests' vectors). */
uint64_t listing_siphash(const listing_key_seed *s, const void *bytes, size_t len);
/* The key of name: from 1 to 2^63 - 1. */
uint64_t listing_key(const listing_key_seed *s, const char *name);

typedef struct listing_batch listing_batch;

/* An empty batch of at most max (>= 1) names. */
listing_batch *listing_batch_new(guint max);
void listing_batch_free(listing_batch *b);

/* Empties b, to gather the names of key greater than after (0: from
 * the first name). */
void listing_batch_start(listing_batch *b, uint64_t after);
/* The key b gathers the names after. */
uint64_t listing_batch_after(const listing_batch *b);
/* Offers one name of type (DT_*) and key. */
void listing_batch_offer(listing_batch *b, const char *name, unsigned char type, uint64_t key);
/* Offers every name of l. */
void listing_batch_offer_listing(listing_batch *b, const listing *l, const listing_key_seed *s);
/* A listing_sink (listing.h) that offers each name to b under seed. */
typedef struct listing_batch_sink {
	listing_batch *b;
	const listing_key_seed *seed;
} listing_batch_sink;
void listing_batch_sink_offer(void *sink, const char *name, unsigned char type);
/* Offers every name of from (finished), and what it left out: b's
 * first names are then those of the union of what was offered to both. */
void listing_batch_offer_batch(listing_batch *b, const listing_batch *from);
/* Ends gathering: the names in their order from here on. */
void listing_batch_finish(listing_batch *b);

/* How many names b holds, and the i-th, contiguous from i on. */
guint listing_batch_len(const listing_batch *b);
const struct listing_entry *listing_batch_at(const listing_batch *b, guint i);
/* The offset to hand out after the i-th name. */
uint64_t listing_batch_offset(const listing_batch *b, guint i);
/* True if names i - 1 and i share a key (a reply ending before i would
 * pass over i). */
bool listing_batch_splits(const listing_batch *b, guint i);
/* True if names past the last were offered (and left out). */
bool listing_batch_more(const listing_batch *b);
/* The index in b of the first name after offset off, in *at: false if
 * b does not hold what follows off (it starts later, or ends before and
 * names follow). */
bool listing_batch_find(const listing_batch *b, uint64_t off, guint *at);

#endif
