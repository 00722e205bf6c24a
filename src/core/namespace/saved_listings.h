/* SPDX-License-Identifier: MIT */
/*
 * Listings kept across a remount: `.ecfs/listings` (FORMAT.md section
 * 10).  At a clean unmount the daemon writes the names it holds of each
 * directory whose names it knows on members (dirstamps.h), with the
 * stamps of those member directories; the next mount lists such a
 * directory from here, with no member listing, if the stamps of the
 * members it would read are still the same (DESIGN.md section 4).  The
 * file is a cache: written on every member in service without a sync,
 * checked whole (SHA-256) and refused whole, with a line in the log, if
 * anything in it is off.
 */
#ifndef ECFS_SAVED_LISTINGS_H
#define ECFS_SAVED_LISTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dirstamps.h"
#include "listing.h"

#define SAVED_LISTINGS_FILE "listings"
/* Directories and their stamps in one record at most: a volume's members. */
#define SAVED_MEMBERS_MAX 64
/* Mounts that may pass a record on without using it: a directory not
 * listed for as long (removed, or never visited) is dropped. */
#define SAVED_UNUSED_MAX 16

typedef struct volume volume;
typedef struct saved_listings saved_listings;

/* One directory as saved: its names, and the stamps of the members
 * (bits of `members`) whose directory holds exactly those names. */
typedef struct saved_dir {
	uint64_t dir; /* its node id */
	uint64_t members;
	dirstamp stamps[SAVED_MEMBERS_MAX]; /* by member */
	listing *names;
} saved_dir;

/* An empty set for v, or for the volume of uuid and n members, to fill
 * with saved_listings_add and write. */
saved_listings *saved_listings_for(volume *v);
saved_listings *saved_listings_new(const uint8_t uuid[16], int n);
void saved_listings_add(saved_listings *s, const saved_dir *d);
/* Writes s on every member of v in service (a member that cannot take it
 * is only named in the log).  Returns how many members took it. */
int saved_listings_write(volume *v, const saved_listings *s);

/* The file as encoded, and back: NULL and *why (g_free) if it is not one
 * of this volume's (uuid, n) or is damaged in any way. */
uint8_t *saved_listings_encode(const saved_listings *s, size_t *len);
saved_listings *saved_listings_decode(const uint8_t *bytes, size_t len,
                                      const uint8_t uuid[16], int n, char **why);
/* The file of the first member of v in service that has a good one, or
 * NULL (none there, or each refused: said in the log). */
saved_listings *saved_listings_read(volume *v);

/* How many directories s holds. */
unsigned saved_listings_count(const saved_listings *s);
/* Adds to `to` the directories of `from` (not taken) that it lacks, each
 * counted as passed on unused once more and dropped past
 * SAVED_UNUSED_MAX, while `to` holds at most max_names names. */
void saved_listings_carry(saved_listings *to, const saved_listings *from, uint64_t max_names);
/* dir as saved, into *d (listing_unref d->names), taken out of s: false
 * if s has none of it. */
bool saved_listings_take(saved_listings *s, uint64_t dir, saved_dir *d);
void saved_listings_free(saved_listings *s);

#endif
