/* SPDX-License-Identifier: MIT */
/*
 * The rate limit of the daemon's events (events.h): of the events of one
 * key (an event kind and a member), at most one goes per interval; the
 * ones held back in between are counted, and the count is told with the
 * next one that goes.  Not thread-safe: the caller locks.
 */
#ifndef ECFS_RATELIMIT_H
#define ECFS_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ratelimit ratelimit;

/* A limit of one event per interval_us microseconds and key. */
ratelimit *ratelimit_new(int64_t interval_us);
void ratelimit_free(ratelimit *r);
/* Whether an event of key, met at now_us (a monotonic clock), goes.  If
 * it does, *held is the number of events of key held back since the last
 * that went (and the count starts again); if not, it is counted. */
bool ratelimit_allow(ratelimit *r, uint64_t key, int64_t now_us, uint64_t *held);

#endif
