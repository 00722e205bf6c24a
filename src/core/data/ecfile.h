/* SPDX-License-Identifier: MIT */
/*
 * The data of one regular file: a chunk file at the file's path on every
 * member, striped and erasure-coded (docs/DESIGN.md sections 4 and 6).
 *
 * An ecfile is shared by every open of the same file (hard links included:
 * it is keyed by the file's identity, not its path) and holds an fd per
 * member, so rename and unlink of an open file do not disturb it.  It
 * buffers writes per stripe, encodes full stripes and writes them to all
 * members in parallel, does read-modify-write for partial stripes, and on
 * reads decodes around missing or corrupt strips.  All functions are
 * thread-safe and return a negative errno on failure.
 */
#ifndef ECFS_ECFILE_H
#define ECFS_ECFILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "volume.h"

typedef struct ecfile ecfile;

/* Creates the chunk files for a new regular file at path on every healthy
 * member (O_EXCL if flags has it, truncating an existing file if flags has
 * O_TRUNC), owned by uid:gid with the given mode, and opens it. */
int ecfile_create(volume *v, const char *path, int flags, mode_t mode,
                  uid_t uid, gid_t gid, ecfile **out);
/* Opens an existing regular file (flags: O_TRUNC honoured).  Fails with EIO
 * if fewer than k members hold a valid chunk of it. */
int ecfile_open(volume *v, const char *path, int flags, ecfile **out);
/* The file already open whose identity (ecfile_ident) is ident, shared as
 * ecfile_open would share it, without a member call; -ENOENT if no such
 * file is open. */
int ecfile_open_ident(volume *v, uint64_t ident, ecfile **out);
/* If the file whose identity is ident is open, the size it knows (buffered
 * writes included) goes into *st, which holds a chunk's lstat, and true. */
bool ecfile_stat_open(volume *v, uint64_t ident, struct stat *st);
/* Drops one reference; the last one flushes buffered data and closes. */
int ecfile_release(ecfile *f);
/* Releases every file still open, as the last close would: the kernel
 * drops the RELEASE of files open when its connection ends (an unmount
 * racing a request, an abort), and their buffered writes and headers
 * must still reach the members.  Returns how many opens it closed. */
int ecfile_release_all(volume *v);

ssize_t ecfile_read(ecfile *f, void *buf, size_t size, off_t off);
ssize_t ecfile_write(ecfile *f, const void *buf, size_t size, off_t off);
int ecfile_truncate(ecfile *f, off_t size);
/* mode: 0 (allocate and extend) or FALLOC_FL_KEEP_SIZE; others EOPNOTSUPP. */
int ecfile_fallocate(ecfile *f, int mode, off_t off, off_t len);
/* Writes buffered data to the members (flush) and, for fsync, makes it
 * durable on every available member. */
int ecfile_flush(ecfile *f);
int ecfile_fsync(ecfile *f, int datasync);

/* stat of an open file / a path, with st_size the logical size and
 * st_blocks the space the file's data holds (not its parity). */
int ecfile_fstat(ecfile *f, struct stat *st);
int ecfile_stat(volume *v, const char *path, struct stat *st);
/* A regular file's identity: 64 bits of the file id its chunk headers
 * share, the same through every name, for the whole life of the file
 * (inode numbers, docs/FORMAT.md).  ecfile_stat_ident is ecfile_stat and
 * the object's identity: a file's, a directory's (below), else 0, or 0
 * when none could be read. */
uint64_t ecfile_ident(ecfile *f);
/* The file id (16 bytes) of its chunk headers. */
const uint8_t *ecfile_file_id(const ecfile *f);
int ecfile_stat_ident(volume *v, const char *path, struct stat *st, uint64_t *ident);
/* A directory's identity lives in this xattr of the directory on every
 * member: 8 bytes, little-endian, random, given at mkdir
 * (docs/FORMAT.md).  ecfile_object_ident reads it from (dirfd, leaf) of
 * type mode with a plain call on the calling thread (a member worker):
 * 0 for anything but a directory, or a directory without one.
 * ecfile_stat_ident answers it for directories too. */
#define ECFILE_IDENT_XATTR "user.ecfs.id"
uint64_t ecfile_object_ident(int dirfd, const char *leaf, mode_t mode);
/* Stores ident as the identity of the directory (dirfd, leaf) on member
 * idx.  A member that keeps no xattrs goes without: its inode numbers
 * stand in (fs_nodes_ino). */
void ecfile_store_object_ident(volume *v, int idx, int dirfd, const char *leaf,
                               uint64_t ident);
/* A new random identity, never 0. */
uint64_t ecfile_new_ident(void);
/* A count that moves whenever a size ecfile_stat answers may change (a
 * header written, an open file's size changed in memory): read before
 * ecfile_stat, what it answered holds while the count stands and no
 * member was changed or read meanwhile (attr_cache.h). */
uint64_t ecfile_stat_epoch(volume *v);
/* What ecfile_stat answers for a name whose lstat on member mb, the first
 * in service that has it, is *st, when that takes no other member call:
 * true, with a regular file's logical size filled in when it is
 * remembered (size_cache.h), or *st as is for anything else; false for a
 * regular file whose size would take its headers.  *ident: the file's
 * identity as ecfile_stat_ident gives it (0 for anything else). */
bool ecfile_stat_from(volume *v, int mb, struct stat *st, uint64_t *ident);
/* Truncate by path (the kernel's truncate without an open file). */
int ecfile_truncate_path(volume *v, const char *path, off_t size);

/* The user.ecfs.layout xattr text of the file, g_malloc'd key=value lines:
 *   code=<ec_kind_name> k= m= w= packet_size= strip_size= checksum=<alg>
 *   size=<logical bytes>  generation=<n>
 *   healthy=<comma-separated member indices holding a valid chunk>
 *   member.<idx>=ok|missing|corrupt|failed <path>              */
char *ecfile_layout_text(ecfile *f);

/* The online heal (heal.c) rebuilds a file through its ecfile: begin opens
 * it (sharing it with any open of the same file), takes its lock and
 * waits for its commits in flight, so no user of the file reads or writes
 * while its chunks are rebuilt behind it.  NULL if it cannot be opened.
 * end takes back the chunks of the members in `members` that the heal
 * made current again (found at path), unlocks and releases the file. */
ecfile *ecfile_heal_begin(volume *v, const char *path);
void ecfile_heal_end(ecfile *f, const char *path, uint64_t members);

#endif
