/* SPDX-License-Identifier: MIT */
/*
 * The logical sizes of closed files, so that stat costs one member call
 * and not a read of the chunk header on every member (`ls -lR` stats
 * every file).
 *
 * A file's size lives in its chunk headers.  An entry remembers the size
 * found for the chunk (member, device, inode) that answered the lstat,
 * with that chunk's ctime, the file's identity and the header epoch: a
 * count that every change of a file's size or headers (on any member)
 * raises once it is done, noting it as that file's last change.  An entry
 * holds while its file has not changed since the epoch it was made at,
 * so a write, a truncate, a repair or a heal of that file make it stale
 * (writes to other files do not), and it cannot outlive a change made
 * while it was being made (the epoch is read before the headers are).  A
 * chunk just made may reuse the inode, and the ctime, of one removed: its
 * maker forgets that chunk, and a size read before then is not taken for
 * it (an entry is never replaced by one made at an older epoch).  ecfs is
 * the only writer of a mounted volume; the ctime catches a change behind
 * its back.  Thread-safe.
 */
#ifndef ECFS_SIZE_CACHE_H
#define ECFS_SIZE_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct size_cache size_cache;

/* Entries kept at most; past it the cache starts again empty. */
#define SIZE_CACHE_MAX 262144

size_cache *size_cache_new(void);
void size_cache_free(size_cache *sc);

/* The header epoch now (read it before reading headers). */
uint64_t size_cache_epoch(size_cache *sc);
/* The chunk of member mb whose lstat is st was just made: whatever is
 * remembered for its inode is another file's. */
void size_cache_chunk_made(size_cache *sc, int mb, const struct stat *st);
/* The size or a header of the file with identity ident (chunk_file_ident)
 * changed: after the write, done or failed, or the change in memory. */
void size_cache_file_changed(size_cache *sc, uint64_t ident);

/* True, with *size (and the file's identity, ecfile_ident, in *ident
 * unless NULL), if the chunk of member mb whose lstat is st has a size
 * remembered that still holds. */
bool size_cache_get(size_cache *sc, int mb, const struct stat *st, uint64_t *size,
                    uint64_t *ident);
/* Remembers size and identity for that chunk, found by reading headers
 * (or the open file, with its headers written) after the epoch was
 * `epoch`; not if the entry there was made later, or the cache started
 * again empty since. */
void size_cache_put(size_cache *sc, int mb, const struct stat *st, uint64_t epoch,
                    uint64_t size, uint64_t ident);

#endif
