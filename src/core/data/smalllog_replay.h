/* SPDX-License-Identifier: MIT */
/*
 * Reading back the small-write log of a file (smalllog.h holds its bytes,
 * ecfile_log.c writes and applies it): the copies on the usable members
 * are read and merged into the writes a replay applies, in order.  Used
 * at every read-write open of a file (ecfile_log_replay) and by ecfs-fsck.
 */
#ifndef ECFS_SMALLLOG_REPLAY_H
#define ECFS_SMALLLOG_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "smalllog.h"
#include "stripe.h"

/* "SMALLLOG_DIR/<file id hex>" with its NUL: the log's path beneath a
 * member root. */
#define SMALLLOG_PATH_SIZE (sizeof(SMALLLOG_DIR) + 33)
void smalllog_path(const uint8_t id[16], char out[SMALLLOG_PATH_SIZE]);

/* What the copies hold, merged (docs/FORMAT.md 12, "Replay"): of the
 * copies whose header counts, those of the newest epoch; a record counts
 * if one copy of it verifies; the records 1..count, up to the first
 * sequence number no copy has. */
typedef struct smalllog_found {
	uint64_t epoch;
	uint64_t holders;  /* members whose copy has the newest epoch's header */
	int count;
	smalllog_record *recs; /* count, in sequence order */
	const uint8_t **data;  /* each record's bytes, in the copies below */
	uint8_t *copy[STRIPE_MAX_N]; /* the copies records were taken from */
	uint64_t lost;     /* copies given up in their member call: kept, not freed */
} smalllog_found;

/* Reads and merges the copies of the file's log on its usable members.
 * 0 (found->count 0: nothing to replay), or a negative errno. */
int smalllog_collect(stripe_ctx *c, smalllog_found *found);
void smalllog_found_free(smalllog_found *found);
/* Removes member mb's copy of file id's log: 0 (also when it has none)
 * or a negative errno. */
int smalllog_remove_copy(volume *v, int mb, const uint8_t id[16]);

/* True if member mb holds no log copy with a record in it (an empty or
 * missing .ecfs/log/, or only copies cut to their header). */
bool smalllog_member_none(volume *v, int mb);
/* At mount, after journal_census: a log with records on a member in
 * service counts as a journal there (volume_journals_none is false), so
 * that every open looks for logs to replay. */
void smalllog_census(volume *v);

#endif
