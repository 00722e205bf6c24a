/* SPDX-License-Identifier: MIT */
/*
 * Who clears the setuid and setgid bits and drops a file capability when
 * a file is written, truncated or given away (fs_killpriv.c says why it is
 * the daemon, and how it learns what the kernel asks).
 */
#ifndef ECFS_FS_KILLPRIV_H
#define ECFS_FS_KILLPRIV_H

#include "fs_nodes.h"

#include <stdbool.h>

#include "ecfile.h"

/* Reads the requests of se and writes its replies through the hooks that
 * see the kernel's kill flags and offer it FUSE_HANDLE_KILLPRIV_V2; once
 * mounted, before the loop starts.  False if libfuse refused them (said
 * in the log): the kernel then clears the bits as before. */
bool fs_killpriv_attach(struct fuse_session *se);
/* Whether the kernel took FUSE_HANDLE_KILLPRIV_V2. */
bool fs_killpriv_on(void);

/* A write to node ino, open as f, by the caller of req (direct: through a
 * direct I/O open, which the kernel's own clearing skips): clears the bits
 * if the writer may not keep them, and drops the file's capability. */
int fs_killpriv_write(fuse_req_t req, fuse_ino_t ino, ecfile *f, bool direct);
/* An open of node ino with O_TRUNC by the caller of req, once truncated
 * (f the open file); the request holds the node's path. */
int fs_killpriv_open_trunc(fuse_req_t req, fuse_ino_t ino, ecfile *f);
/* After a setattr of node ino (at path) by the caller of req that made the
 * changes to_set (none: the kernel's removal of privileges before a write
 * or fallocate): 1 if it changed the mode, else 0 or a negative errno. */
int fs_killpriv_setattr(fuse_req_t req, fuse_ino_t ino, const char *path, int to_set);

#endif
