/* SPDX-License-Identifier: MIT */
/*
 * The rules that decide what a file's chunks hold (docs/FORMAT.md 4.1 and
 * 4.3): the verdict on one strip, the generation vote of a stripe, the
 * hole rule, a file's identity across its chunks, and the header's
 * generation reservation.  The stripe layer and ecfile (the daemon's
 * reads and opens) and ecfs-fsck's repair judge by these same rules.
 * Pure functions but for the lost-page probe of a strip's chunk file.
 */
#ifndef ECFS_READER_RULES_H
#define ECFS_READER_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "checksum.h"
#include "chunk.h"
#include "layout.h"

/* The verdict on one strip of a stripe. */
enum strip_verdict {
	STRIP_UNREAD = 0, /* not read: no usable chunk there, or not asked for */
	STRIP_GOOD,       /* its record names it and the checksum matches */
	STRIP_HOLE,       /* blank record and zero data: never written (generation 0) */
	STRIP_BAD,        /* read, but neither: an erasure */
	STRIP_ERR,        /* the read failed: an erasure */
};

/* One strip as judged, with what the hole rule needs of it. */
typedef struct strip_judgment {
	enum strip_verdict v;
	bool blank;      /* the record is all zeros */
	bool zpage;      /* STRIP_BAD: the strip lost a page (chunk_strip_has_lost_page) */
	bool tags_bad;   /* STRIP_GOOD, version 3, its stored tags read: they are not
	                  * those of its bytes (a good strip; its tags need writing) */
	uint64_t gen;    /* the record's generation if it names the strip, verified
	                  * or not (so a good strip's generation), else 0 */
	uint64_t size;   /* STRIP_GOOD: the file size the record carries */
	uint64_t len;    /* bytes of the strip its record covers (layout_strip_len);
	                  * a good strip reads as zeros past them */
	const char *why; /* STRIP_BAD: what is wrong with it */
} strip_judgment;

/* The strip and its record were read (rightly or wrongly) from a usable
 * member: not unread, not a failed read. */
static inline bool rules_strip_read(const strip_judgment *st)
{
	return st->v != STRIP_UNREAD && st->v != STRIP_ERR;
}

/* Judges strip s from its record (CHUNK_RECORD_SIZE bytes) and data
 * (strip_size bytes), both read as zeros past the end of the chunk.  h is
 * the file's header with the strip's position; fd the chunk file, probed
 * for lost pages when the strip does not verify.  A good short strip
 * (versions 2 and 3, the file's last stripe) has its bytes past len
 * zeroed.  Version 3: tags, if not NULL, are the strip's stored tags
 * (layout_tags_size bytes), which a good strip's tags_bad says wrong;
 * they never change the verdict. */
void rules_judge_strip(const checksum *sum, const chunk_header *h, const layout *lay,
                       uint64_t s, const uint8_t *rec, uint8_t *data, const uint8_t *tags,
                       int fd, strip_judgment *out);

/* Version 3, a read of part of strip s: judges blocks [first, first +
 * count) of it, read into data (block `first` first), by its record (rec)
 * and its tags (layout_tags_size bytes):
 * good only if the record names the strip and covers the whole strip
 * (not a short last stripe), its checksum matches the tags and each block
 * its tag.  Anything else is STRIP_BAD, and the reader reads the whole
 * stripe the careful way (which judges every strip by rules_judge_strip:
 * the tags stored play no part there). */
void rules_judge_blocks(const checksum *sum, const chunk_header *h, const layout *lay,
                        uint64_t s, const uint8_t *rec, const uint8_t *tags,
                        const uint8_t *data, uint64_t first, uint64_t count,
                        strip_judgment *out);

/* The generation vote over the n strips of one stripe (st, by position):
 * the highest generation held by at least k good strips, a hole counting
 * as a good strip of generation 0.  Returns how many strips hold it and
 * sets *best, or returns 0 (and *best = 0) if no generation has k. */
int rules_vote(const strip_judgment *st, int n, int k, uint64_t *best);
/* A vote taken with `unread` strips left unread (a member known to be
 * slow, read around): true if its winner `best` (with k votes) stands
 * whatever they hold, that is if no newer generation could reach k with
 * them.  Otherwise the unread strips must be read. */
bool rules_vote_settled(const strip_judgment *st, int n, int k, int unread, uint64_t best);

/* A strip of the winning generation best: the stripe's content. */
bool rules_strip_current(const strip_judgment *st, uint64_t best);

/* The hole rule, for stripe s whose vote found no generation with k
 * strips: true if it is a first write (in place, not journaled) that a
 * crash cut short, which reads as zeros, its content before.  m is the
 * code's parity count, durable the header's durable mark; the positions
 * in ignore count as not read whatever they hold. */
bool rules_first_write_cut_short(const strip_judgment *st, int n, int m, uint64_t s,
                                 uint64_t durable, uint64_t ignore);

/* True if headers a and b are of the same file in the same code: a chunk
 * whose header is not of the file's is corrupt for it. */
bool rules_same_file(const chunk_header *a, const chunk_header *b);

/* A volume as a chunk header must fit it, in plain values (the volume
 * layer fills them in: volume_header_misfit). */
typedef struct rules_volume {
	const uint8_t *uuid; /* 16 bytes */
	int k, m;
	uint64_t strip_max;  /* rules_volume_strip_max */
} rules_volume;

/* The largest strip a volume allows its files unless its superblock's
 * strip size is larger: it bounds the buffers of an open file, whatever
 * a header claims (docs/FORMAT.md section 7). */
#define RULES_STRIP_BOUND (UINT64_C(64) << 20)

/* The largest strip size of a volume whose superblock says sb_strip:
 * RULES_STRIP_BOUND or sb_strip, the larger, at most CHUNK_STRIP_MAX. */
uint64_t rules_volume_strip_max(uint64_t sb_strip);

/* Why chunk header h (decoded, so consistent in itself) does not fit the
 * volume for the chunk of member `member` (-1: any), or NULL if it does:
 * the volume's UUID, its k and m (so k + m = n), a strip size at most
 * the volume's largest, and the position the header's rotation gives
 * that member.  A header that does not fit makes the chunk corrupt. */
const char *rules_header_misfit(const chunk_header *h, const rules_volume *vol, int member);

/* Generations a header reserves at once when it must move above the
 * records' (one header write per this many commits at most). */
#define RULES_GEN_RESERVE (UINT64_C(1) << 16)

/* True if a header of generation hdr reserves generation gen: every
 * generation a record of the file may carry must be. */
bool rules_gen_reserved(uint64_t hdr, uint64_t gen);

/* The generation of a header written over one of generation hdr, for a
 * file whose records carry generations up to used: hdr + 1 (every header
 * write raises it, so the newest header wins) if that reserves the room
 * generations above used, else (or with reserve) used + RULES_GEN_RESERVE. */
uint64_t rules_header_generation(uint64_t hdr, uint64_t used, int room, bool reserve);

#endif
