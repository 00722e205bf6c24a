/* SPDX-License-Identifier: MIT */
/*
 * `ecfs status [--json] [MOUNTPOINT]`: the state of mounted volumes on one
 * screen, read from the daemon's health report (the root's
 * user.ecfs.health xattr, health_report.h), by any user who may read the
 * mount's root.  Without MOUNTPOINT, every ecfs mount in
 * /proc/self/mountinfo (file system type fuse.ecfs).  Exit status: the
 * worst of the volumes shown, STATUS_* below.
 */
#ifndef ECFS_STATUS_H
#define ECFS_STATUS_H

enum {
	STATUS_HEALTHY = 0,
	STATUS_DEGRADED = 1,   /* members failed (no more than m) or healing */
	STATUS_FAILED = 2,     /* more than m members failed */
	STATUS_NOT_ECFS = 3,   /* MOUNTPOINT is no ecfs mount, or none is mounted */
	STATUS_UNREADABLE = 4, /* the report cannot be read (the daemon does not
	                        * answer, or the mount is not allow_other) */
	STATUS_USAGE = 5,      /* a bad command line */
};

/* The subcommand, argv[0] being "status". */
int status_main(int argc, char **argv);
/* `ecfs scrub start|pause|resume|status ... MOUNTPOINT` (usage: ecfs scrub
 * --help), argv[0] being "scrub": sets the root's user.ecfs.scrub (root
 * only, scrub.h) or shows the scrub's lines of the health report. */
int scrub_main(int argc, char **argv);

#endif
