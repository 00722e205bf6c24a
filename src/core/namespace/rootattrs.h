/* SPDX-License-Identifier: MIT */
/*
 * The volume root's attributes on their stand-in (VOLUME_ROOT_STANDIN,
 * docs/FORMAT.md section 1), and the member roots kept the daemon's alone.
 * A volume made by an older build kept the volume root's mode, owner, ACL
 * and xattrs on the member roots themselves, so each member root had to
 * be open to the users the volume root is open to.  The first read-write
 * open by this build carries them over, member by member, to a stand-in
 * made whole under another name and renamed into place (a crash leaves
 * either the old state or the new), then makes the member root
 * VOLUME_MEMBER_ROOT_MODE and the daemon's.
 */
#ifndef ECFS_ROOTATTRS_H
#define ECFS_ROOTATTRS_H

#include <stdbool.h>

#include "volume.h"

/* On every member in service: the stand-in made from the member root's
 * attributes where it is missing (logged once, when carried), and with
 * guard the member root made the daemon's alone (logged when changed).
 * The stand-ins are in use from then on (volume_root_standin).  Every
 * read-write mount of the daemon calls it with guard; ecfs-fsck -y without,
 * before its walk reports and repairs the member roots. */
void rootattrs_settle(volume *v, bool guard);

#endif
