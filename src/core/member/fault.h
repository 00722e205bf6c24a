/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for tests: the rules of ECFS_FAULT, consulted by every
 * member operation (memberops.c) in builds made with -Dfault_injection.
 *
 *   ECFS_FAULT="rule[;rule...]", a rule being comma-separated key=value:
 *     member=J      only member J (default: every member)
 *     op=KIND       read (pread, preadv, opens of existing files, the
 *                   statx of an intent's identities), write
 *                   (pwrite, pwritev, ftruncate, fallocate), sync (fsync,
 *                   fdatasync), meta (namespace and metadata changes,
 *                   opens with O_CREAT or O_TRUNC), any (the default),
 *                   data (the reads of pread and preadv only)
 *     after=N       the first N matching operations pass (default 0)
 *     count=C       then C operations are hit, the rest pass (default: all)
 *     armed=PATH    the rule counts only operations made while the file
 *                   PATH exists (a test arms it once the mount is up)
 *     errno=E       a hit fails with E: EIO, ENOSPC, EROFS, EDQUOT or a
 *                   number; 0 makes a write or sync report success without
 *                   doing anything (a crash's lost write), and is no fault
 *                   for other kinds (default EIO, unless delay or hang)
 *     delay=MS      a hit sleeps MS milliseconds, then does the operation
 *                   (or fails it, if errno= is given too)
 *     hang          a hit blocks its thread until the volume is closed
 *                   (fault_release), then fails with EIO: a member that
 *                   stops answering
 *     slow          no fault: the member is judged slow for the kinds of
 *                   op= (write: left out under -o write_quorum) from the
 *                   start, whatever its times (fault_slow, memberio.h)
 *   and the global rule abort_after=N (record.h: SIGKILL after the member
 *   operation recorded as N).  The old form "member=I,op=..,after=N,
 *   errno=E" is one rule.
 *
 * Each rule counts the operations it matches on its own; an operation
 * hit by several rules takes every delay and the first rule's error.
 */
#ifndef ECFS_FAULT_H
#define ECFS_FAULT_H

#include <stdbool.h>
#include <stdint.h>

enum {
	FAULT_READ = 1,
	FAULT_WRITE = 2,
	FAULT_SYNC = 4,
	FAULT_META = 8,
	FAULT_ANY = 15,
	FAULT_DATA = 16, /* with FAULT_READ: a pread or preadv (op=data) */
};

typedef struct fault_rules fault_rules;

/* Parses spec (NULL or "" gives NULL), logging every rule at WARNING and
 * every unknown key or bad value ("ECFS_FAULT: ignoring 'x'"). Returns
 * NULL if there is neither a rule nor abort_after. */
fault_rules *fault_parse(const char *spec);
void fault_free(fault_rules *r);
/* The number of rules (abort_after is not one). */
int fault_count(const fault_rules *r);
/* abort_after=N, or 0. */
long fault_abort_after(const fault_rules *r);

/* Consults the rules for one operation of kind (FAULT_READ..META) on
 * member idx: sleeps or hangs as a hit says, then returns true with the
 * errno in *err (0: fake success) if the operation is not to be done.
 * Thread safe; r may be NULL (no faults). */
bool fault_check(fault_rules *r, int idx, int kind, int *err);
/* True if a rule of kind on member idx delays or hangs what it hits,
 * whatever its counts and arming: that member's calls of kind may wait
 * (mop_reads_here).  False for r NULL. */
bool fault_may_block(const fault_rules *r, int idx, int kind);
/* The members that slow rules of kind name (bit i: member i); 0 for r
 * NULL. */
uint64_t fault_slow(const fault_rules *r, int kind);
/* Wakes every operation hung by r (they fail with EIO), and makes later
 * hits of hang rules fail at once: called before the volume's threads
 * are joined, so that an unmount never waits on a hung member. */
void fault_release(fault_rules *r);

#endif
