/* SPDX-License-Identifier: MIT */
/*
 * What the namespace check reads of one member: an entry's view (its
 * lstat, symlink target and xattrs, as the votes of fsck_tree.c compare
 * them) and a directory's listing, each on the member's worker.
 */
#ifndef ECFS_FSCK_VIEW_H
#define ECFS_FSCK_VIEW_H

#include <stdbool.h>
#include <sys/stat.h>

#include <glib.h>

#include "volume.h"
#include "xattrs.h"

typedef struct view {
	bool present;
	int err;           /* lstat error other than ENOENT */
	struct stat st;
	char *target;      /* symlink target */
	xattrs_stored xs;  /* every xattr of the member object */
	GString *xblob;    /* canonical form of the xattrs but the ACLs, for comparing */
	GString *ablob;    /* the same of the POSIX ACLs */
} view;

/* True for the name of an xattr that is not a POSIX ACL. */
bool fsck_not_acl(const char *name);
/* Frees what the view holds and clears it (not present). */
void fsck_view_clear(view *w);
/* Reads the view of (dfd, name) on member mb (fsck_view.c says how). */
void fsck_read_view(volume *v, int mb, int dfd, const char *name, view *w);

typedef struct list_call {
	int dfd;
	const char *name;
	int most;          /* names wanted at most; 0: all */
	GPtrArray *names;  /* the names but . and .., g_malloc'd */
} list_call;

/* Lists (dfd, name) on the member's worker (fsck_on_member): the names go
 * to a list of its own, handed to the caller at the end. */
int fsck_list_run(void *arg);

#endif
