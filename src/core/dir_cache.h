/* SPDX-License-Identifier: MIT */
/*
 * The attributes of directories, for getattr.  Attributes are not cached
 * by the kernel (ecfs mounts with attr_timeout=0), so it asks for those of
 * every directory of a path at each path walk, to check the permissions:
 * most getattr requests of `ls -lR` or of opening files are for the same
 * few directories, and each cost a member call.
 *
 * An entry is what ecfile_stat answered for a directory, with the count
 * of the changes made through the member wrappers (mop_changes,
 * memberops.h) when it was asked and the time.  It holds while that count
 * has not moved, so any change the daemon makes to any member (a new
 * name, a chmod, a write, a listing that moves an atime) drops every
 * entry, and for DIR_CACHE_TTL_MS at most, which bounds how long a change
 * behind the daemon's back (or a member that broke meanwhile) goes
 * unseen.  Only directories: they have one name, so one path is one
 * object.  Thread-safe.
 */
#ifndef ECFS_DIR_CACHE_H
#define ECFS_DIR_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct dir_cache dir_cache;

/* Entries kept at most; past it the cache starts again empty. */
#define DIR_CACHE_MAX 16384
/* How long an entry holds at most, in milliseconds. */
#define DIR_CACHE_TTL_MS 100

dir_cache *dir_cache_new(void);
void dir_cache_free(dir_cache *dc);

/* True, with *st, if path's attributes are remembered from when the
 * change count was `changes` (the count now), less than the TTL ago. */
bool dir_cache_get(dir_cache *dc, const char *path, uint64_t changes, struct stat *st);
/* Remembers st, a directory's attributes, for path: asked after the
 * change count was read as `changes`.  Anything but a directory is not
 * kept. */
void dir_cache_put(dir_cache *dc, const char *path, uint64_t changes, const struct stat *st);

#endif
