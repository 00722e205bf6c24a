/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes of the volume's objects, stored on the members.
 *
 * Every attribute ecfs keeps is a real attribute of the object on every
 * member (the chunk files of a regular file, the directory, symlink or
 * node): set and removed through mirror_apply() on every healthy member,
 * read and listed from the first member that has the object
 * (mirror_query()), but for the ACLs, which are the majority's (votes.h).
 * The volume root's live on its stand-in, but its default ACL
 * (volume_attrs_path).  Which names are kept:
 *   - user.*, except user.ecfs.*, which is ecfs's own (virtual, computed by
 *     the daemon, or a directory's user.ecfs.id: docs/FORMAT.md section 1;
 *     never set or listed through here);
 *   - system.posix_acl_access and system.posix_acl_default: POSIX ACLs, as
 *     real ACLs of the member objects, so that each member's filesystem
 *     keeps the mode and the ACL in step (chmod changes the mask, setting
 *     an access ACL the mode) and applies a directory's default ACL to
 *     what is created in it;
 *   - security.* (security.capability, and whatever the member supports);
 *   - trusted.*, listed to privileged callers only (as local filesystems
 *     list them).
 * A capability or an ACL, which the kernel asks for before each write and
 * at permission checks, is read from a member only on volumes where one
 * was ever set (XATTRS_CAPS_MARKER, XATTRS_ACLS_MARKER).
 * Other names get EOPNOTSUPP, as on a local filesystem; so does every
 * name on a member whose filesystem keeps no xattrs (sshfs), except that
 * reading an ACL there finds none (ENODATA): the kernel asks for ACLs at
 * permission checks.
 *
 * The member-side part (xattrs_member_*) is shared with ecfs-fsck, which
 * settles the members' attributes by majority.  Functions return a
 * negative errno on failure.
 */
#ifndef ECFS_XATTRS_H
#define ECFS_XATTRS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <glib.h>

#include "volume.h"

/* ecfs's own namespace: virtual attributes, and the directory id that
 * objects.c stores itself (OBJECTS_IDENT_XATTR, docs/FORMAT.md section 1). */
#define XATTRS_ECFS_PREFIX "user.ecfs."
#define XATTRS_ACL_ACCESS "system.posix_acl_access"
#define XATTRS_ACL_DEFAULT "system.posix_acl_default"
#define XATTRS_CAPABILITY "security.capability"
/* In each member's .ecfs: file capabilities were set on this volume. */
#define XATTRS_CAPS_MARKER VOLUME_CAPS_MARK
/* In each member's .ecfs: POSIX ACLs were set on this volume. */
#define XATTRS_ACLS_MARKER VOLUME_ACLS_MARK

/* True for the names of the POSIX ACLs. */
bool xattrs_is_acl(const char *name);
/* True if name is one that ecfs stores (see above), whoever asks. */
bool xattrs_name_kept(const char *name);

/* getxattr(2) of path: the value's length (size 0: only the length), or
 * -ENODATA, -ERANGE, -ENOENT, ... */
int xattrs_get(volume *v, const char *path, const char *name, void *value, size_t size);
/* setxattr(2) of path on every member; flags XATTR_CREATE or XATTR_REPLACE.
 * Claims the space the attribute takes first (space.h). */
int xattrs_set(volume *v, const char *path, const char *name, const void *value,
               size_t size, int flags);
/* removexattr(2) of path on every member. */
int xattrs_remove(volume *v, const char *path, const char *name);
/* The name at *at of a list of names as listxattr(2) gives it (len bytes,
 * from a member), moving *at past it; NULL at the end, or where a last
 * name lacks its NUL (nothing is read past len).  Parsing only. */
const char *xattrs_list_next(const char *list, size_t len, size_t *at);
/* listxattr(2) of path: the kept names (trusted.* only if privileged) as
 * NUL-terminated strings into list, with the size rules of getxattr. */
int xattrs_list(volume *v, const char *path, bool privileged, char *list, size_t size);

/* The permission bits a new object at path is created with on the members,
 * for a caller with this umask (mode is not yet masked: the kernel leaves
 * that to the daemon once ACLs are on): mode itself when the parent
 * directory has a default ACL, which each member's filesystem then applies
 * as the kernel does for a local one; otherwise mode less the umask. */
mode_t xattrs_create_mode(volume *v, const char *path, mode_t mode, mode_t umask);
/* True if every member in service keeps POSIX ACLs (the daemon asks the
 * kernel to enforce them only then). */
bool xattrs_acl_supported(volume *v);

/* ---- one member object (ecfs-fsck) ---- */

/* The attributes of one member object, names sorted. */
typedef struct xattrs_stored {
	GPtrArray *names;  /* char * */
	GPtrArray *values; /* GBytes *, in the order of names */
	bool complete;     /* false: some could not be read (no vote on them) */
} xattrs_stored;

/* Reads every attribute of (dirfd, leaf) without following a symlink; a
 * filesystem without xattrs gives an empty, complete set.  Plain system
 * calls on the calling thread, each watched on a member's worker (MIO_CALL):
 * ecfs-fsck runs it there (fsck_on_member). */
void xattrs_member_read(int dirfd, const char *leaf, xattrs_stored *out);
/* An empty, complete set: what xattrs_member_read gives for an object
 * known to hold none. */
void xattrs_stored_empty(xattrs_stored *out);
void xattrs_stored_clear(xattrs_stored *s);
/* Makes the attributes of (dirfd, leaf) on member mb that `which` selects
 * the same as want's (have: what it holds now), through memberops.h. */
int xattrs_member_write(volume *v, int mb, int dirfd, const char *leaf,
                        const xattrs_stored *want, const xattrs_stored *have,
                        bool (*which)(const char *name));

#endif
