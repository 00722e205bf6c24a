/* SPDX-License-Identifier: MIT */
/*
 * What the namespace check reads of one member: an entry's view (its
 * lstat, symlink target and xattrs, as the votes of fsck_tree.c compare
 * them) and a directory's listing, each on the member's worker, and the
 * views of a directory's entries read a block at a time.
 */
#ifndef ECFS_FSCK_VIEW_H
#define ECFS_FSCK_VIEW_H

#include <stdbool.h>
#include <sys/stat.h>

#include <glib.h>

#include "stripe.h"
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

/* The views of a directory's entries, a block at a time: ecfs-fsck reads
 * the views of up to VIEW_BLOCK entries of a directory in one call per
 * member, on the members' workers in parallel, not one round trip to
 * every member per entry.  Nothing the check of an entry repairs changes
 * the view of another, but for hard links (one inode under several
 * names): those are read again where they are checked.  Not in the
 * daemon's heal, where the volume changes meanwhile. */
#define VIEW_BLOCK 64

struct fsck;

typedef struct view_block {
	struct fsck *f;
	const int *dfd;
	const char *names[VIEW_BLOCK];
	int count;
	view *w;     /* count * f->n: w[i * n + mb], entry i on member mb */
	int rcs[STRIPE_MAX_N];
} view_block;

/* Reads the views of the entries from l on (up to VIEW_BLOCK) on every
 * member of b->dfd at once. */
void fsck_read_view_block(view_block *b, GList *l);
/* Moves entry i's views (f->n of them) to w and returns each member's
 * result of the read, unless they are a hard link's (read again where
 * it is checked): then NULL, w untouched. */
const int *fsck_take_views(view_block *b, int i, view *w);
void fsck_free_view_block(view_block *b);

#endif
