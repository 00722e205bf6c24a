/* SPDX-License-Identifier: MIT */
/*
 * The member-operation recorder of test builds (docs/RECORD.md): with
 * ECFS_RECORD=DIR every mutating member operation that succeeded is a
 * JSON line of DIR/ops.jsonl (written bytes in DIR/data.bin), numbered
 * by seq in completion order; ECFS_FAULT=abort_after=N SIGKILLs the
 * process right after the operation numbered N.  The count of such
 * operations is kept in every fault-injection build ("member writes: W"
 * at each volume close).  Process-wide: a second volume opened by the
 * same process continues the record and the count.
 *
 * memberops.c brackets each mutating operation:
 *
 *	locked = record_begin();        // serialises while needed
 *	rc = syscall(...);
 *	if (rc >= 0) {
 *		rec_line *l = record_line("write", idx);  // NULL unless recording
 *		record_path_fd(l, "path", fd); ...
 *		record_done(l);         // seq, line, abort_after
 *	}
 *	record_end(locked);
 */
#ifndef ECFS_RECORD_H
#define ECFS_RECORD_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* At every volume open, before any member operation: the first call
 * reads ECFS_RECORD (and starts the record); abort_after (> 0) comes
 * from the volume's ECFS_FAULT. */
void record_start(long abort_after);
/* The root directory of member idx, whose paths are recorded relative to
 * it (its place in the volume; set again when members are placed). */
void record_set_root(int idx, int rootfd);
/* At every volume close: logs "member writes: W" (NOTICE) and, when
 * recording, writes W to DIR/count. */
void record_close(void);
/* Mutating member operations so far (the last seq). */
uint64_t record_count(void);

/* ECFS_RECORD is set: every change is being recorded. */
bool record_active(void);
/* Takes the process-wide mutex if recording or abort_after is set;
 * returns whether it did. */
bool record_begin(void);
void record_end(bool locked);
typedef struct rec_line rec_line;

/* A line for operation op on member idx, or NULL when not recording (the
 * record_* adders accept NULL and do nothing). */
rec_line *record_line(const char *op, int idx);
/* The operation took effect: numbers it, writes l (freed), and kills the
 * process if it was the abort_after-th. */
void record_done(rec_line *l);

/* Fields.  key "path" of a descriptor also adds "deleted":true for a
 * file with no name left. */
void record_path_fd(rec_line *l, const char *key, int fd);
void record_path_at(rec_line *l, const char *key, int dirfd, const char *name);
void record_int(rec_line *l, const char *key, long long x);
void record_bool(rec_line *l, const char *key, bool x);
void record_str(rec_line *l, const char *key, const char *s);
void record_hex(rec_line *l, const char *key, const void *p, size_t len);
/* The first len bytes of iov into data.bin: "off", "len", "data". */
void record_data(rec_line *l, const struct iovec *iov, int cnt, size_t len, long long off);

/* JSON string of bytes (docs/RECORD.md: every byte that is not printable
 * ASCII, and " and \, as \u00XX), quoted, appended to out. */
void record_json_string(GString *out, const char *s);

#endif
