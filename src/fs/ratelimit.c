/* SPDX-License-Identifier: MIT */
/*
 * The rate limit of the daemon's events: per key, when the last event
 * went and how many were held back since (ratelimit.h).
 */
#include "ratelimit.h"

#include <glib.h>

struct ratelimit {
	int64_t interval_us;
	GHashTable *keys; /* uint64_t key -> struct key_state */
};

struct key_state {
	uint64_t key;     /* first: the table's key points here */
	int64_t went_us;  /* when the last event of the key went */
	uint64_t held;    /* events held back since */
};

ratelimit *ratelimit_new(int64_t interval_us)
{
	ratelimit *r = g_new0(ratelimit, 1);

	r->interval_us = interval_us;
	r->keys = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
	return r;
}

void ratelimit_free(ratelimit *r)
{
	if (!r)
		return;
	g_hash_table_destroy(r->keys);
	g_free(r);
}

bool ratelimit_allow(ratelimit *r, uint64_t key, int64_t now_us, uint64_t *held)
{
	struct key_state *k = g_hash_table_lookup(r->keys, &key);

	if (!k) {
		k = g_new0(struct key_state, 1);
		k->key = key;
		g_hash_table_insert(r->keys, &k->key, k);
	} else if (now_us - k->went_us < r->interval_us) {
		k->held++;
		return false;
	}
	k->went_us = now_us;
	*held = k->held;
	k->held = 0;
	return true;
}
