/* SPDX-License-Identifier: MIT */
#include "fs_dirsaved.h"

#include <pthread.h>

#include "dirstamps.h"
#include "fs_dirnames.h"
#include "log.h"
#include "memberops.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards saved; order: a leaf */
static saved_listings *saved; /* what the last unmount saved, not yet taken */
static bool saving;

void fs_dirsaved_start(volume *v, bool read_only)
{
	saving = !read_only;
	if (saving)
		mop_keep_dirstamps(v);
	/* While the names may be unsettled a listing reads every member, and
	 * one saved holds what m + 1 of them did. */
	if (!volume_names_settled(v))
		return;
	saved_listings *s = saved_listings_read(v);
	if (s)
		ecfs_log(LOG_INFO, "listings saved by the last unmount: %u", saved_listings_count(s));
	pthread_mutex_lock(&lock);
	saved = s;
	pthread_mutex_unlock(&lock);
}

bool fs_dirsaved_take(uint64_t dir, saved_dir *d)
{
	pthread_mutex_lock(&lock);
	bool found = saved && saved_listings_take(saved, dir, d);
	pthread_mutex_unlock(&lock);
	return found;
}

struct saving {
	volume *v;
	saved_listings *out;
};

/* Saves dir with the members whose directory the daemon still knows
 * (their stamps now). */
static void save_dir(uint64_t dir, const listing *names, const dir_members *on, void *ctx)
{
	struct saving *s = ctx;
	saved_dir d = { .dir = dir, .names = (listing *)names };
	for (int i = 0; i < volume_n(s->v) && i < SAVED_MEMBERS_MAX; i++)
		if (on->mask >> i & 1 && volume_member_ok(s->v, i) &&
		    dirstamps_last(mop_dirstamps(s->v), i, on->ino[i], &d.stamps[i]))
			d.members |= 1ull << i;
	saved_listings_add(s->out, &d);
}

void fs_dirsaved_finish(volume *v)
{
	pthread_mutex_lock(&lock);
	saved_listings *untaken = saved;
	saved = NULL;
	pthread_mutex_unlock(&lock);
	if (saving && volume_names_settled(v)) {
		struct saving s = { v, saved_listings_for(v) };
		fs_dirnames_each(save_dir, &s);
		/* those this mount did not list may still stand: their stamps
		 * say at the next */
		if (untaken)
			saved_listings_carry(s.out, untaken, DIRNAMES_MAX);
		unsigned count = saved_listings_count(s.out);
		if (saved_listings_write(v, s.out) > 0)
			ecfs_log(LOG_INFO, "listings saved: %u", count);
		saved_listings_free(s.out);
	}
	saved_listings_free(untaken);
}
