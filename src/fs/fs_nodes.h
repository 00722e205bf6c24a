/* SPDX-License-Identifier: MIT */
/*
 * The node table of the daemon: the kernel names objects by node ids
 * (libfuse's low-level API), the storage core by paths.  Each node the
 * kernel holds is here with the names it is known by (parent node and
 * name: several for a hard-linked file), the count of lookups the kernel
 * holds on it (dropped by forget) and the count of its opens.  This is
 * the one place that turns a node into a path for the core.
 *
 * A node's id is its inode number (st_ino), derived from the object's
 * identity (fs_nodes_ino): the same through every name of a file, across
 * renames, remounts, member failures and heals (docs/DESIGN.md, "Inode
 * numbers").  The root is FUSE_ROOT_ID.
 *
 * A file unlinked or renamed over while open, by its last name the table
 * knows, is not removed: it is moved to the members' orphan folder (outside
 * the namespace: never listed, not in the way of rmdir), where requests by
 * node (fstat, fchmod, ftruncate...) keep finding it, and removed at its
 * last close.  Thread-safe.
 */
#ifndef ECFS_FS_NODES_H
#define ECFS_FS_NODES_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "volume.h"

/* The orphan folder, and the names files get in it. */
#define FS_ORPHAN_DIR "/" ECFS_META_DIR "/orphans"
#define FS_ORPHAN_PREFIX ".fuse_hidden"

void fs_nodes_init(void);
void fs_nodes_free(void);

/* The path of node ino (g_free it): 0, or -ESTALE for a node the table
 * does not know, -ENOENT for one with no name left. */
int fs_nodes_path(fuse_ino_t ino, char **path);
/* The path of name in directory parent (g_free it): 0, -ENAMETOOLONG,
 * or what fs_nodes_path answers for parent. */
int fs_nodes_child(fuse_ino_t parent, const char *name, char **path);

/* ---- the names and the members' names move together ----
 * A path built from the table names the node's object only while no
 * rename moves an ancestor on the members.  So a request that builds
 * paths holds the names (shared) from its first path until the members
 * are done with them, and a rename holds them alone, from its paths until
 * the table has its new names.  Renames go first: one waits for the
 * requests under way, not for those after it.  Never taken twice by one
 * thread. */
void fs_nodes_hold(void);
void fs_nodes_unhold(void);
void fs_nodes_hold_alone(void);
void fs_nodes_unhold_alone(void);

/* The inode number of the object found at (parent, name) with lstat st
 * and identity ident (0: none known, see docs/DESIGN.md).  An object
 * with no identity keeps the node the name already has. */
fuse_ino_t fs_nodes_ino(fuse_ino_t parent, const char *name, uint64_t ident,
                        const struct stat *st);
/* The inode number of the object whose identity is ident (not 0). */
fuse_ino_t fs_nodes_ident_ino(uint64_t ident);
/* The kernel learnt (parent, name) is node ino, an object with lstat st
 * and identity ident (a lookup, a create, a readdirplus entry): the name
 * is the node's, the member object st names is the one last seen as the
 * node, and its lookup count grows by one.  A node made here whose id is
 * not ident's (0: none known) stands for no identity. */
void fs_nodes_add(fuse_ino_t parent, const char *name, fuse_ino_t ino, const struct stat *st,
                  uint64_t ident);
/* Whether node ino's id is its object's identity (fs_nodes_ident_ino). */
bool fs_nodes_identified(fuse_ino_t ino);
/* Whether node ino, known by a name, was last seen as another member
 * object than the one lstat st names (st_dev, st_ino): then *path is the
 * node's path (g_free it), to tell a second object claiming the node's
 * identity from the same object seen on another member or rebuilt. */
bool fs_nodes_seen_other(fuse_ino_t ino, const struct stat *st, char **path);
/* The kernel dropped n lookups of node ino. */
void fs_nodes_forget(fuse_ino_t ino, uint64_t n);

/* (parent, name) is gone (unlink, rmdir). */
void fs_nodes_unlinked(fuse_ino_t parent, const char *name);
/* (p1, n1) was renamed to (p2, n2); RENAME_EXCHANGE swaps them. */
void fs_nodes_renamed(fuse_ino_t p1, const char *n1, fuse_ino_t p2, const char *n2,
                      unsigned flags);

/* Opens of node ino (files only: directories do not count). */
void fs_nodes_opened(fuse_ino_t ino);
/* Whether node ino is open (its last close not yet done). */
bool fs_nodes_open(fuse_ino_t ino);
/* The close of an open of node ino: the path of the orphan to remove
 * (g_free it), if that was the last open of an orphan, else NULL. */
char *fs_nodes_closed(fuse_ino_t ino);

/* Whether removing (parent, name) must keep its object as an orphan (it
 * is open and the table knows no other name of it): the orphan path to
 * rename it to (g_free it), else NULL.  After the rename, call
 * fs_nodes_orphaned with that path. */
char *fs_nodes_orphan_for(fuse_ino_t parent, const char *name);
void fs_nodes_orphaned(fuse_ino_t parent, const char *name, const char *orphan);
/* Whether node ino's path (fs_nodes_path) is its orphan name: a link the
 * namespace does not show, which its link count leaves out. */
bool fs_nodes_orphan(fuse_ino_t ino);

/* -o auto_cache: true if st's size and modification time are those node
 * ino had at its last open, which they become. */
bool fs_nodes_same_version(fuse_ino_t ino, const struct stat *st);

/* The node (parent, name) is known as, or 0. */
fuse_ino_t fs_nodes_lookup_name(fuse_ino_t parent, const char *name);
/* inos[i] = fs_nodes_lookup_name(parent, names[i]) for i < count, under
 * one lock and with the index's misses overlapped (a listing's reply);
 * given_us[i]: when the kernel was last given that name with attributes
 * (fs_nodes_add, g_get_monotonic_time), 0 if never or not known. */
void fs_nodes_lookup_names(fuse_ino_t parent, const char *const *names, size_t count,
                           fuse_ino_t *inos, int64_t *given_us);

/* ---- what the kernel keeps, when the daemon changes it ----
 * The kernel keeps names and attributes for the timeouts the daemon
 * answers with.  Where ecfs itself changes what it may hold (not through a
 * request the kernel sees answered), these tell it to drop them: a
 * thread of its own sends the notifications, never one that serves a
 * request (the kernel may wait on that request for the same inode).
 * watch, polled a few times a second, returns a signature of what
 * answers for the volume (the members in service): when it changes, every
 * node's attributes are dropped. */
void fs_nodes_notify_start(struct fuse_session *se, uint64_t (*watch)(void *), void *arg);
void fs_nodes_notify_stop(void);
/* Node ino's attributes; _wait returns once the kernel is told (for a
 * request that must not be answered before). */
void fs_nodes_inval(fuse_ino_t ino);
void fs_nodes_inval_wait(fuse_ino_t ino);
/* The name at path (relative to the volume root) and its node's
 * attributes, as far as the table knows them. */
void fs_nodes_inval_path(const char *path);

#endif
