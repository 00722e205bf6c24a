/* SPDX-License-Identifier: MIT */
/*
 * The data of one regular file: a chunk file at the file's path on every
 * member, striped and erasure-coded (docs/DESIGN.md sections 4 and 6).
 *
 * An ecfile is shared by every open of the same file (hard links included:
 * it is keyed by the file's identity, not its path) and holds an fd per
 * member, so rename and unlink of an open file do not disturb it (an idle
 * file's are closed when the volume's pool of them is full, and reopened
 * by file handle at its next use: ecfile_pool.c; never those of a chunk
 * unlinked while open).  It
 * buffers writes per stripe, encodes full stripes and writes them to all
 * members in parallel, does read-modify-write for partial stripes, and on
 * reads decodes around missing or corrupt strips.  All functions are
 * thread-safe and return a negative errno on failure.
 */
#ifndef ECFS_ECFILE_H
#define ECFS_ECFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "chunk.h"
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
/* lseek's SEEK_DATA (data true) and SEEK_HOLE from off, at stripe
 * granularity: the offset found or a negative errno (-ENXIO at or past
 * the end, or no data after off).  A stripe is a hole when no member's
 * record says it was written (stripe_find_written); what is buffered is
 * flushed first. */
off_t ecfile_seek_data(ecfile *f, off_t off, bool data);

/* stat of an open file, with st_size the logical size and st_blocks the
 * blocks its chunks hold on the members, scaled by k/(k+m): the chunk's
 * st_blocks on the member answering times k, as the n chunks hold about
 * the same (data, headers and records; a stripe never written holds
 * none).  ecfile_fill_size turns st, a chunk's lstat, into that for a
 * file of logical size size and k data strips.  objects_stat (objects.h)
 * answers for a path. */
int ecfile_fstat(ecfile *f, struct stat *st);
void ecfile_fill_size(struct stat *st, uint64_t size, int k);
/* A regular file's identity: 64 bits of the file id its chunk headers
 * share, the same through every name, for the whole life of the file
 * (inode numbers, docs/FORMAT.md). */
uint64_t ecfile_ident(ecfile *f);
/* The file id (16 bytes) of its chunk headers. */
const uint8_t *ecfile_file_id(const ecfile *f);
/* If the file of chunk file id file_id is open, the size it knows
 * (buffered writes included) goes into *size, and true; no member call. */
bool ecfile_open_size(volume *v, const uint8_t file_id[16], uint64_t *size);
/* Which of the members' valid headers (hs[mb], NULL for none) a name's
 * file is: the file that most members hold a chunk of, so that a chunk
 * of another file put under the name (a copy made behind the daemon's
 * back) is an erasure rather than the file; ties go to the newest
 * generation.  Then that file's newest header.  Returns its member, or
 * -1 if there is no header.  Open and stat judge alike by it. */
int ecfile_trusted_header(const chunk_header *const *hs, int n);
/* ecfs-fsck's repair of a file a crash left small writes in the log of
 * (docs/FORMAT.md 12): opens it, which replays the log as every
 * read-write open does, and closes it.  0 once nothing of the log is left
 * to apply, or a negative errno. */
int ecfile_replay_log(volume *v, const char *path);
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
