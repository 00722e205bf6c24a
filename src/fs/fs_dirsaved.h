/* SPDX-License-Identifier: MIT */
/*
 * Listings kept across a remount (DESIGN.md section 4): the names the
 * daemon holds of each directory whose member directories it knows
 * (fs_dirnames.h, dirstamps.h) are saved at a clean unmount in
 * .ecfs/listings (saved_listings.h), and the next mount lists such a
 * directory from them once the members it would read show the stamps
 * they were saved with.
 */
#ifndef ECFS_FS_DIRSAVED_H
#define ECFS_FS_DIRSAVED_H

#include <stdbool.h>
#include <stdint.h>

#include "saved_listings.h"
#include "volume.h"

/* At mount, before the session starts: reads what the last clean
 * unmount saved (while the names are settled), and has v keep the
 * stamps of its member directories for the next unmount (not read_only:
 * nothing is saved then). */
void fs_dirsaved_start(volume *v, bool read_only);
/* What was saved of dir, taken out (each is offered once): false if
 * nothing was. */
bool fs_dirsaved_take(uint64_t dir, saved_dir *d);
/* At unmount, once no request runs: saves the listings of the
 * directories held with members known, on every member in service.
 * Those saved by the last unmount and not listed since are kept. */
void fs_dirsaved_finish(volume *v);

#endif
