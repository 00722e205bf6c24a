/* SPDX-License-Identifier: MIT */
/*
 * The attributes getattr answered for directories and regular files, for
 * the next getattr of the same path.  The kernel keeps attributes for
 * attr_timeout only (1 s by default, 0 if the user says so), then asks for
 * those of every directory of a path at each path walk, to check the
 * permissions, and for a file's again right after looking it up: many
 * getattr requests of `ls -lR` or of opening files would each cost a
 * member call.
 *
 * An entry holds what objects_stat answered with the stamp read before it
 * asked: the count of the changes made through the member wrappers
 * (mop_changes, memberops.h); for a directory, the count of listings (a
 * listing may move its atime); for a regular file, the count of member
 * reads (mop_reads: a read may move an atime) and the count of its sizes
 * (objects_stat_epoch: an open file's size changes in memory).  It holds
 * while those stand, so any change the daemon makes to any member (a new
 * name, a chmod, a write) drops every entry, and for
 * ATTR_CACHE_TTL_MS at most, which bounds how long a change behind the
 * daemon's back (or a member that broke meanwhile) goes unseen.  Hard
 * links cannot make an entry stale: whatever changes a file through one
 * name moves the stamp for all.  Symlinks and special files are not kept.
 * Thread-safe.
 */
#ifndef ECFS_ATTR_CACHE_H
#define ECFS_ATTR_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct attr_cache attr_cache;

/* What the answers depend on (see above), read before asking. */
typedef struct attr_stamp {
	uint64_t changes;  /* mop_changes */
	uint64_t listings; /* attr_cache_listings */
	uint64_t reads;    /* mop_reads */
	uint64_t sizes;    /* objects_stat_epoch */
} attr_stamp;

/* Entries kept at most; past it the cache starts again empty. */
#define ATTR_CACHE_MAX 16384
/* How long an entry holds at most, in milliseconds. */
#define ATTR_CACHE_TTL_MS 100

attr_cache *attr_cache_new(void);
void attr_cache_free(attr_cache *ac);

/* The count of directory listings: raised after each (attr_cache_listed),
 * read into the stamp. */
uint64_t attr_cache_listings(attr_cache *ac);
void attr_cache_listed(attr_cache *ac);

/* True, with *st, if path's attributes are remembered from a stamp that
 * still stands (`now`), less than the TTL ago. */
bool attr_cache_get(attr_cache *ac, const char *path, const attr_stamp *now, struct stat *st);
/* Remembers st for path, asked after the stamp was read as `asked`.
 * Anything but a directory or a regular file is not kept. */
void attr_cache_put(attr_cache *ac, const char *path, const attr_stamp *asked,
                    const struct stat *st);

#endif
