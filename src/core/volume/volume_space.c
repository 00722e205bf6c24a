/* SPDX-License-Identifier: MIT */
/*
 * The volume's room: statfs, and the claims the operations that take space
 * make before they write (space.h holds the accounting and the reserve
 * rule).  Every member is asked at once, on its worker, so a member that
 * stops answering costs the I/O timeout and not the caller.
 */
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "chunk.h"
#include "log.h"
#include "memberio.h"
#include "space.h"
#include "volume_private.h"

struct member_statfs {
	volume *v;
	int idx;
	int err;
	struct statvfs s;
};

/* On the member's worker; writes to its task only after the call returns
 * (memberio.h: a call given up must find nothing of the caller's). */
static void member_statfs_run(void *arg)
{
	struct member_statfs *q = arg;
	struct statvfs s;
	int rc = MIO_CALL(fstatvfs(volume_root_fd(q->v, q->idx), &s));

	q->err = rc < 0 ? -errno : 0;
	if (rc == 0)
		q->s = s;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Asks every member in service for its statvfs (q[i].err: 1 if not asked)
 * and records the answers as the members' room. */
static void ask_members(volume *v, struct member_statfs *q)
{
	int n = volume_n(v);
	mio_batch batch;

	mio_batch_init_small(volume_memberio(v), &batch);
	for (int i = 0; i < n; i++) {
		q[i] = (struct member_statfs){ .v = v, .idx = i, .err = 1 };
		if (volume_member_ok(v, i)) {
			q[i].err = 0;
			memberio_submit(volume_memberio(v), i, &batch, member_statfs_run, &q[i]);
		}
	}
	uint64_t lost = mio_batch_wait(&batch);
	int64_t now = now_ms();
	for (int i = 0; i < n; i++) {
		if (lost >> i & 1)
			q[i].err = -ETIMEDOUT;
		if (q[i].err == 0)
			space_update(volume_space(v), i, &q[i].s, now);
		else if (q[i].err < 0)
			volume_member_error(v, i, q[i].err, "statfs");
	}
}

static uint64_t members_in_service(volume *v)
{
	uint64_t mask = 0;

	for (int i = 0; i < volume_n(v); i++)
		if (volume_member_ok(v, i))
			mask |= 1ull << i;
	return mask;
}

int volume_claim_space(volume *v, uint64_t bytes)
{
	space *s = volume_space(v);
	space_verdict verdict = space_claim(s, members_in_service(v), bytes, now_ms(), false);

	if (verdict == SPACE_STALE) {
		struct member_statfs q[64];
		ask_members(v, q);
		verdict = space_claim(s, members_in_service(v), bytes, now_ms(), true);
	}
	bool full = verdict == SPACE_FULL;
	if (space_set_full(s, full)) {
		ecfs_log(LOG_NOTICE, full ? "the volume is full: writes get ENOSPC until space is "
		                            "freed (each member keeps a reserve for deletes)"
		                          : "the volume has room again");
		if (full)
			vol_event(v, VOLUME_EVENT_VOLUME_FULL, -1, NULL, "writes get ENOSPC until "
			          "space is freed");
	}
	return full ? -ENOSPC : 0;
}

/* Bytes of user data that `room` bytes on each member hold: k strips of
 * every stripe, less the 64-byte record each strip carries (FORMAT.md). */
static uint64_t data_in(const volume *v, uint64_t room)
{
	uint64_t strip = volume_defaults(v)->strip_size;

	if (strip)
		room = room / (strip + CHUNK_RECORD_SIZE) * strip;
	return room * (uint64_t)volume_k(v);
}

int volume_statfs(volume *v, struct statvfs *st)
{
	struct member_statfs q[64];
	bool any = false;
	uint64_t min_blocks = 0, min_free = 0, min_room = 0, files = 0, ffree = 0;

	memset(st, 0, sizeof(*st));
	ask_members(v, q);
	for (int i = 0; i < volume_n(v); i++) {
		if (q[i].err != 0 || !volume_member_ok(v, i))
			continue;
		const struct statvfs *s = &q[i].s;
		uint64_t b = (uint64_t)s->f_blocks * s->f_frsize, f = (uint64_t)s->f_bfree * s->f_frsize,
		         r = space_room(volume_space(v), i);
		if (!any || b < min_blocks) min_blocks = b;
		if (!any || f < min_free) min_free = f;
		if (!any || r < min_room) min_room = r;
		if (!any || s->f_files < files) files = s->f_files;
		if (!any || s->f_ffree < ffree) ffree = s->f_ffree;
		any = true;
	}
	if (!any || !volume_usable(v))
		return -EIO;
	/* Each file puts 1/n of its coded size on every member, so the member
	 * with the least room bounds the volume at k times that room; what a
	 * user can still write leaves every member its reserve. */
	st->f_bsize = st->f_frsize = 4096;
	st->f_blocks = min_blocks / 4096 * (uint64_t)volume_k(v);
	st->f_bfree = min_free / 4096 * (uint64_t)volume_k(v);
	st->f_bavail = data_in(v, min_room) / 4096;
	st->f_files = files;
	st->f_ffree = st->f_favail = ffree;
	st->f_namemax = 255;
	return 0;
}
