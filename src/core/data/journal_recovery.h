/* SPDX-License-Identifier: MIT */
/*
 * Recovery from the overwrite journal (journal.h holds its format), above
 * the stripe layer: it reads stripes in place and commits them again
 * through stripe.h.  Run at every read-write open of a file (ecfile_io.c)
 * and by ecfs-fsck before it judges a file.
 */
#ifndef ECFS_JOURNAL_RECOVERY_H
#define ECFS_JOURNAL_RECOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include "stripe.h"

/* Rolls forward, from the journals of the file on the usable members,
 * every stripe whose journaled commit may have been cut short in place
 * (docs/FORMAT.md 9, "Recovery"): those with at least k verified journal
 * strips of generation g whose in-place strips are neither all of g, nor
 * superseded by a newer generation, nor all unwritten.  With write false
 * nothing is changed (a read-only check): *stripes counts the stripes
 * that need it.  With write true they are rewritten in place at g, the
 * chunks synced and the journals removed.  0 or a negative errno (the
 * journals are then kept for a later attempt). */
int journal_recover(stripe_ctx *c, bool write, uint64_t *stripes);

#endif
