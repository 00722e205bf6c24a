/* SPDX-License-Identifier: MIT */
/*
 * The members' room (space.h): the last statvfs of each member, the
 * claims made since, and the reserve each keeps.
 */
#include "space.h"

#include <assert.h>
#include <glib.h>
#include <pthread.h>
#include <stdbool.h>

#define MIB (1024ull * 1024)

typedef struct member_room {
	bool known;
	int64_t asked_ms;  /* when the figures were taken */
	uint64_t avail;    /* f_bavail in bytes: what an unprivileged writer may use */
	uint64_t reserve;
	uint64_t claimed;  /* since asked_ms */
} member_room;

struct space {
	pthread_mutex_t lock; /* guards full, mem[]; order: a leaf */
	int n;
	bool full;
	member_room mem[];
};

space *space_new(int n)
{
	space *s = g_malloc0(sizeof(*s) + (size_t)n * sizeof(member_room));

	pthread_mutex_init(&s->lock, NULL);
	s->n = n;
	return s;
}

void space_free(space *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	g_free(s);
}

uint64_t space_reserve_for(uint64_t fs_bytes)
{
	uint64_t r = fs_bytes / 32;

	if (r < 8 * MIB)
		r = 8 * MIB;
	if (r > 1024 * MIB)
		r = 1024 * MIB;
	if (r > fs_bytes / 4)
		r = fs_bytes / 4;
	return r;
}

void space_update(space *s, int idx, const struct statvfs *st, int64_t now_ms)
{
	assert(idx >= 0 && idx < s->n);
	member_room *r = &s->mem[idx];

	pthread_mutex_lock(&s->lock);
	r->known = true;
	r->asked_ms = now_ms;
	r->avail = (uint64_t)st->f_bavail * st->f_frsize;
	r->reserve = space_reserve_for((uint64_t)st->f_blocks * st->f_frsize);
	r->claimed = 0;
	pthread_mutex_unlock(&s->lock);
}

/* Room above the reserve; s->lock held. */
static uint64_t room_locked(const member_room *r)
{
	uint64_t used = r->reserve + r->claimed;
	return r->known && r->avail > used ? r->avail - used : 0;
}

space_verdict space_claim(space *s, uint64_t members, uint64_t bytes, int64_t now_ms, bool fresh)
{
	space_verdict v = SPACE_OK;

	assert(s->n == 64 || members >> s->n == 0); /* members of this volume */
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < s->n && v == SPACE_OK; i++) {
		const member_room *r = &s->mem[i];
		if (!(members >> i & 1))
			continue;
		bool old = !r->known || now_ms - r->asked_ms > SPACE_REFRESH_MS;
		if (!fresh && (old || room_locked(r) < bytes))
			v = SPACE_STALE;
		else if (fresh && r->known && room_locked(r) < bytes)
			v = SPACE_FULL;
	}
	/* A member that could not be asked (fresh but unknown) claims
	 * nothing: its errors are the member layer's to judge. */
	for (int i = 0; i < s->n && v == SPACE_OK; i++)
		if (members >> i & 1)
			s->mem[i].claimed += bytes;
	pthread_mutex_unlock(&s->lock);
	return v;
}

uint64_t space_room(space *s, int idx)
{
	assert(idx >= 0 && idx < s->n);
	pthread_mutex_lock(&s->lock);
	uint64_t room = room_locked(&s->mem[idx]);
	pthread_mutex_unlock(&s->lock);
	return room;
}

bool space_set_full(space *s, bool full)
{
	pthread_mutex_lock(&s->lock);
	bool changed = s->full != full;
	s->full = full;
	pthread_mutex_unlock(&s->lock);
	return changed;
}
