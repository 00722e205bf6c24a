/* SPDX-License-Identifier: MIT */
/*
 * The open-file limit of the daemon and of ecfs-fsck: each open file holds
 * a descriptor on every member (and its journal's) while it is in use, so
 * the soft limit of RLIMIT_NOFILE (often 1024) would leave little room.
 * The daemon's open files stay within a pool of what it allows (fdpool.h).
 */
#ifndef ECFS_FDLIMIT_H
#define ECFS_FDLIMIT_H

/* Raises the soft RLIMIT_NOFILE to the hard limit, at start; logs a
 * warning only if it cannot. */
void ecfs_raise_fd_limit(void);

#endif
