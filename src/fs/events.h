/* SPDX-License-Identifier: MIT */
/*
 * -o events=PROGRAM: the volume's events (volume_event, volume.h) run a
 * program, as the daemon's user (root), not through a shell, with
 *   ECFS_EVENT        member_failed (also at mount, for a member failed
 *                     then), member_back, member_healed, checksum_error,
 *                     volume_full or scrub_done (a scrub run ended)
 *   ECFS_MEMBER       the member's index, empty for the volume's events
 *   ECFS_MEMBER_DIR   the member's directory, empty likewise
 *   ECFS_PATH         the file in the volume (checksum_error), else empty
 *   ECFS_DETAIL       what happened, in words; with "(N more held back)"
 *                     when the rate limit held some back
 *   ECFS_MOUNTPOINT   the volume's mount point
 * and PATH set to the system's directories (the variables are named
 * ECFS_* so that PATH keeps its meaning).  At most one event of a kind
 * and member goes per EVENTS_INTERVAL_S (ratelimit.h); posting never
 * waits: events queue for a thread of their own, which runs the program
 * for one at a time and reaps it.
 */
#ifndef ECFS_EVENTS_H
#define ECFS_EVENTS_H

#include "volume.h"

#define EVENTS_INTERVAL_S 60

typedef struct events events;

/* Starts the thread that runs program (an absolute path) for the events
 * of v mounted at mountpoint; NULL if it cannot start (said in the log). */
events *events_start(const char *program, volume *v, const char *mountpoint);
/* Queues an event (a volume_event_fn): returns at once.  e NULL: nothing. */
void events_post(events *e, volume_event ev, int member, const char *path,
                 const char *detail);
/* Stops the thread (a program still running gets a few seconds, then
 * SIGKILL) and frees e, once nothing tells events any more (the volume
 * is closed); events still queued are dropped, counted in the log.  NULL:
 * nothing. */
void events_stop(events *e);

#endif
