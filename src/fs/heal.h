/* SPDX-License-Identifier: MIT */
/*
 * The daemon's online heal: a thread that watches the failed members,
 * brings back one whose directory returns (or is replaced by an empty
 * one, which gets the volume's superblock), and rebuilds it while the
 * volume stays mounted, with the code of ecfs-fsck --repair (fsck_tree.c
 * and repair.c: one decoder, one writer), paced to a rate.  Progress shows
 * in the volume-health report:
 *   heal=idle                      nothing to rebuild
 *   heal=member 2 rebuilding files=12/40 bytes=123456/999999 rate=12.3MB/s eta=0:05
 *   heal.bytes=, heal.bytes_total=, heal.files=, heal.files_total=,
 *   heal.rate_bytes= (per second), heal.eta_s=  the same figures for
 *                                  programs, while a rebuild runs (eta_s
 *                                  once it can be told)
 *   heals_completed=<members rebuilt since mount>
 *   heal_catchup=<files written past slow members, not caught up yet>
 * It also runs the online scrub (scrub.h), when no member is rebuilt, and
 * catches up the files that writes left slow members out of
 * (-o write_quorum, volume_left_out): see heal.c.
 */
#ifndef ECFS_HEAL_H
#define ECFS_HEAL_H

#include <stdint.h>

#include "scrub.h"
#include "volume.h"

typedef struct heal heal;

/* Starts the heal thread; rate in bytes per second of file data rebuilt
 * (0: unlimited).  It also runs the online scrub s (NULL: none) when one
 * is asked, at scrub_rate likewise; s outlives the heal.  NULL if the
 * thread cannot start. */
heal *heal_start(volume *v, uint64_t rate, uint64_t scrub_rate, scrub *s);
/* Stops it (an unfinished rebuild resumes at the next mount) and frees it. */
void heal_stop(heal *h);

#endif
