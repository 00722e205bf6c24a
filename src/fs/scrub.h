/* SPDX-License-Identifier: MIT */
/*
 * The online scrub's state: what a run was asked (deep, a share of the
 * files, an age), how far it got, when each file was last verified, and
 * the last run's result.  The run itself is a pass of ecfs-fsck's repair
 * on the online heal's thread, at its own pace (heal.c); this file keeps
 * the state, persisted in .ecfs/scrub on every member (docs/FORMAT.md
 * section 11) so a remount resumes a run, or keeps it paused.  Control:
 * the root's user.ecfs.scrub xattr, set by root to "start [deep]
 * [percent=P] [older=DAYS]", "pause" or "resume" (fs_xattr.c, `ecfs
 * scrub`).  In the health report:
 *   scrub=idle|running|paused
 *   scrub.deep=, scrub.files=, scrub.files_total=, scrub.bytes=,
 *   scrub.bytes_total=, scrub.errors=, scrub.repaired=  the run's figures
 *                     (running or paused); scrub.rate_bytes=, scrub.eta_s=
 *                     while it runs
 *   scrub.last=<end of the last run, unix seconds>, scrub.last_result=
 *   clean|repaired|damaged, scrub.last_files=, scrub.last_errors=,
 *   scrub.last_repaired=                            once a run has ended
 */
#ifndef ECFS_SCRUB_H
#define ECFS_SCRUB_H

#include <stdbool.h>
#include <stdint.h>

#include "fsck.h"
#include "volume.h"

#define SCRUB_STATE_FILE "scrub"

typedef struct scrub scrub;

/* The scrub of v, its state read back from the members. */
scrub *scrub_new(volume *v);
/* Saves its state (a run goes on at the next mount) and frees it.  NULL:
 * nothing. */
void scrub_free(scrub *s);
/* A command of the control xattr: 0, -EINVAL (not one), -EBUSY (start
 * while a run is not over), -EALREADY (pause or resume with nothing to
 * pause or resume). */
int scrub_control(scrub *s, const char *cmd);
/* A run is asked and not paused. */
bool scrub_wanted(scrub *s);
/* The run's --deep. */
bool scrub_deep(scrub *s);

/* A pass of the run begins: f has its totals (fsck_count_totals). */
void scrub_pass_begin(scrub *s, const fsck *f);
/* Whether to leave the file of that id (NULL: not known) unread in this
 * run: verified already in it, or not due. */
bool scrub_skip(scrub *s, const uint8_t *id);
/* The file was checked (id NULL: not known; path for the record). */
void scrub_file_done(scrub *s, const fsck *f, const uint8_t *id, const char *path);
/* The pass ended with rc (fsck_tree's): any but -ECANCELED (stopped by
 * the pace hook) ends the run. */
void scrub_pass_end(scrub *s, const fsck *f, int rc);

/* Its lines of the health report, g_malloc'd. */
char *scrub_health_lines(scrub *s);

#endif
