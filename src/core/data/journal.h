/* SPDX-License-Identifier: MIT */
/*
 * The overwrite journal that closes the RAID write hole (docs/FORMAT.md
 * section 9, docs/CRASH.md).  A commit that overwrites stripes which may
 * hold committed content first writes every position's strips and records
 * to a per-file journal on its member,
 * `.ecfs/journal/<file id hex>`, and syncs all of them; only then are the
 * strips written in place.  After a crash, journal_recover()
 * (journal_recovery.h, at file open and in ecfs-fsck) rolls each such
 * stripe forward from the journal, so a stripe is always its old or its
 * new content.
 *
 * This module holds the journal's byte format and its member I/O, below
 * the stripe layer; the decision of which commit is journaled lives in
 * stripe_commit().
 */
#ifndef ECFS_JOURNAL_H
#define ECFS_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "chunk.h"
#include "volume.h"

#define JOURNAL_MAGIC "ECFSJRNL"
#define JOURNAL_VERSION 1u
#define JOURNAL_HEADER_SIZE 4096u
/* Records offset inside the header, and how many fit before the sum. */
#define JOURNAL_RECORDS_OFFSET 128u
#define JOURNAL_MAX_STRIPES 32u
#define JOURNAL_DIR ".ecfs/journal"
/* "JOURNAL_DIR/<file id hex>" with its NUL. */
#define JOURNAL_PATH_SIZE (sizeof(JOURNAL_DIR) + 33)
#define JOURNAL_MAX_MEMBERS 64

typedef struct journal_header {
	uint8_t volume_uuid[16];
	uint8_t file_id[16];
	uint32_t position;   /* strip position j of the member that holds it */
	uint32_t count;      /* stripes in this commit, 1..JOURNAL_MAX_STRIPES */
	uint64_t first;      /* first stripe s0 */
	uint64_t generation; /* generation of the commit */
	uint64_t strip_size;
	/* Records of the strips, byte for byte the in-place records. */
	uint8_t records[JOURNAL_MAX_STRIPES][CHUNK_RECORD_SIZE];
} journal_header;

void journal_header_encode(const journal_header *h, uint8_t out[JOURNAL_HEADER_SIZE]);
/* 0, or -EINVAL (bad magic, sum or fields) / -EPROTO (unknown version)
 * with a static reason in *why (may be NULL). */
int journal_header_decode(const uint8_t in[JOURNAL_HEADER_SIZE], journal_header *h,
                          const char **why);
/* "<32 lowercase hex digits>" of a file id (33 bytes with the NUL). */
void journal_file_name(const uint8_t id[16], char out[33]);

/* JOURNAL_DIR "/" and the file name of id: the journal's path beneath a
 * member root. */
void journal_path(const uint8_t id[16], char out[JOURNAL_PATH_SIZE]);

/* At mount: notes in the volume that no member in service holds a
 * journal, so opening a file need not look for one (until a journal is
 * written or a member comes back into service). */
void journal_census(volume *v);
/* True if member mb's journal folder holds no journal (or is not there). */
bool journal_member_none(volume *v, int mb);

/* The journals of one open file that are open for writing, by member. */
typedef struct journal_files {
	uint64_t open; /* bit i: fd[i] is member i's open journal */
	int fd[JOURNAL_MAX_MEMBERS];
} journal_files;

/* Member mb's part of a journaled commit, run on its worker: writes the
 * header and strips[0..count-1] (strip_size bytes each) to the journal of
 * file h->file_id with one pwritev, then fdatasyncs it.  The journal is
 * created (and its directory synced) the first time, and stays open in jf.
 * 0 or a negative errno. */
int journal_write_member(volume *v, journal_files *jf, int mb, const journal_header *h,
                         const uint8_t *const *strips);

/* Closes the journal descriptors jf holds. */
void journal_close(volume *v, journal_files *jf);
/* Closes them and removes the journals of file id on the members in the
 * mask (after the in-place strips they protect are durable); a failure
 * is logged, naming path. */
void journal_remove(volume *v, journal_files *jf, const uint8_t id[16], uint64_t members,
                    const char *path);

#endif
