/* SPDX-License-Identifier: MIT */
/*
 * The generation vote of one stripe and the decode of its erased strips,
 * shared by the stripe layer's reads, journal recovery and ecfs-fsck's
 * repair.  The vote follows the reader's rules (reader_rules.h); the
 * decode hands the erasures to ec_decode, the one decoder.
 */
#ifndef ECFS_STRIPE_DECODE_H
#define ECFS_STRIPE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "ec.h"
#include "reader_rules.h"

/* What the vote of a stripe found. */
enum stripe_outcome {
	STRIPE_VOTED,     /* a generation (best) holds at least k strips */
	STRIPE_CUT_SHORT, /* none does, but a first write was cut short: zeros */
	STRIPE_LOST,      /* none does: the stripe is unreadable */
};

typedef struct stripe_vote {
	enum stripe_outcome outcome;
	uint64_t best;  /* the winning generation (0 unless STRIPE_VOTED with data) */
	uint64_t size;  /* the file size a good strip of best carries, else 0 */
	uint64_t stale; /* positions whose strip is not of best: erasures */
} stripe_vote;

/* Votes stripe s over the n judged strips st (by position), k data and m
 * parity: rules_vote, then, if no generation has k, the hole rule
 * (rules_first_write_cut_short with the header's durable mark and the
 * positions in ignore counted as unread). */
void stripe_vote_take(const strip_judgment *st, int n, int k, int m, uint64_t s,
                      uint64_t durable, uint64_t ignore, stripe_vote *out);

/* Rebuilds the strips of the positions in erased (bit j: position j < n;
 * the bits from n up are ignored) from the others' blocks, over len bytes;
 * an erased position whose block is NULL is not rebuilt.  With no
 * erasure nothing is done.  Returns 0 or ec_decode's negative error
 * (ec_strerror). */
int stripe_decode_erased(const ec_code *code, uint8_t *const *blocks, int n, uint64_t erased,
                         size_t len);

#endif
