/* SPDX-License-Identifier: MIT */
/* A bounded window on a directory's listing, ordered by keyed hash
 * (listing_batch.h). */
#include "listing_batch.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "le.h"

/* ---- the key ---- */

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static inline void sip_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = ROTL(v[1], 13);
	v[1] ^= v[0];
	v[0] = ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = ROTL(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = ROTL(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = ROTL(v[1], 17);
	v[1] ^= v[2];
	v[2] = ROTL(v[2], 32);
}

static inline void sip_word(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sip_round(v);
	sip_round(v);
	v[0] ^= m;
}

uint64_t listing_siphash(const listing_key_seed *s, const void *bytes, size_t len)
{
	uint64_t v[4] = { s->k[0] ^ 0x736f6d6570736575ull, s->k[1] ^ 0x646f72616e646f6dull,
		          s->k[0] ^ 0x6c7967656e657261ull, s->k[1] ^ 0x7465646279746573ull };
	const uint8_t *p = bytes;
	size_t whole = len & ~(size_t)7;
	for (size_t i = 0; i < whole; i += 8)
		sip_word(v, le_get64(p + i));
	uint64_t last = (uint64_t)len << 56;
	for (size_t i = whole; i < len; i++)
		last |= (uint64_t)p[i] << (8 * (i - whole));
	sip_word(v, last);
	v[2] ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

uint64_t listing_key(const listing_key_seed *s, const char *name)
{
	uint64_t key = listing_siphash(s, name, strlen(name)) >> 1;
	return key ? key : 1; /* 0 is the offset before every name */
}

void listing_key_seed_random(listing_key_seed *s)
{
	size_t got = 0;
	while (got < sizeof s->k) {
		ssize_t n = getrandom((uint8_t *)s->k + got, sizeof s->k - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < sizeof s->k) {
		/* no getrandom: a key that still differs from mount to mount */
		s->k[0] ^= (uint64_t)g_get_real_time();
		s->k[1] ^= (uint64_t)getpid() << 32 ^ (uint64_t)g_get_monotonic_time();
	}
}

/* ---- the batch ---- */

struct item {
	uint64_t key;
	char *name;
	unsigned char type;
};

struct listing_batch {
	guint max;
	uint64_t after;   /* the names are those of greater key */
	uint64_t bound;   /* a name of greater key is past the batch */
	bool more;        /* one such was offered */
	GArray *items;    /* struct item; sorted once finished */
	GArray *entries;  /* struct listing_entry: the items' names, once finished */
};

listing_batch *listing_batch_new(guint max)
{
	listing_batch *b = g_new0(listing_batch, 1);
	b->max = max ? max : 1;
	b->items = g_array_new(FALSE, FALSE, sizeof(struct item));
	b->entries = g_array_new(FALSE, FALSE, sizeof(struct listing_entry));
	listing_batch_start(b, 0);
	return b;
}

static struct item *item_at(const listing_batch *b, guint i)
{
	return &g_array_index(b->items, struct item, i);
}

/* Frees the names of items [from, len) and drops them. */
static void cut_items(listing_batch *b, guint from)
{
	for (guint i = from; i < b->items->len; i++)
		g_free(item_at(b, i)->name);
	g_array_set_size(b->items, from);
}

void listing_batch_free(listing_batch *b)
{
	if (!b)
		return;
	cut_items(b, 0);
	g_array_free(b->items, TRUE);
	g_array_free(b->entries, TRUE);
	g_free(b);
}

void listing_batch_start(listing_batch *b, uint64_t after)
{
	cut_items(b, 0);
	g_array_set_size(b->entries, 0);
	b->after = after;
	b->bound = UINT64_MAX;
	b->more = false;
}

static gint item_cmp(gconstpointer pa, gconstpointer pb)
{
	const struct item *a = pa, *b = pb;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Sorts the items, drops a name offered twice, and keeps the first max
 * (and those of the last one's key): what is left out lowers the bound. */
static void compact(listing_batch *b)
{
	g_array_sort(b->items, item_cmp);
	guint kept = 0;
	for (guint i = 0; i < b->items->len; i++) {
		struct item *it = item_at(b, i);
		if (kept && !item_cmp(item_at(b, kept - 1), it)) {
			g_free(it->name);
			continue;
		}
		*item_at(b, kept++) = *it;
	}
	g_array_set_size(b->items, kept);
	if (kept <= b->max)
		return;
	guint end = b->max;
	uint64_t last = item_at(b, end - 1)->key;
	while (end < kept && item_at(b, end)->key == last)
		end++;
	if (end < kept)
		b->more = true;
	cut_items(b, end);
	b->bound = last;
}

void listing_batch_offer(listing_batch *b, const char *name, unsigned char type, uint64_t key)
{
	if (key <= b->after)
		return;
	if (key > b->bound) {
		b->more = true;
		return;
	}
	struct item it = { key, g_strdup(name), type };
	g_array_append_val(b->items, it);
	if (b->items->len >= 2 * (gsize)b->max)
		compact(b);
}

void listing_batch_offer_listing(listing_batch *b, const listing *l, const listing_key_seed *s)
{
	for (guint i = 0; i < listing_len(l); i++) {
		const struct listing_entry *e = listing_at(l, i);
		listing_batch_offer(b, e->name, e->type, listing_key(s, e->name));
	}
}

void listing_batch_sink_offer(void *sink, const char *name, unsigned char type)
{
	const listing_batch_sink *s = sink;
	listing_batch_offer(s->b, name, type, listing_key(s->seed, name));
}

uint64_t listing_batch_after(const listing_batch *b)
{
	return b->after;
}

void listing_batch_offer_batch(listing_batch *b, const listing_batch *from)
{
	for (guint i = 0; i < from->items->len; i++) {
		const struct item *it = item_at(from, i);
		listing_batch_offer(b, it->name, it->type, it->key);
	}
	/* what from left out lies past its names, so past b's first max */
	if (from->more)
		b->more = true;
}

void listing_batch_finish(listing_batch *b)
{
	compact(b);
	g_array_set_size(b->entries, b->items->len);
	for (guint i = 0; i < b->items->len; i++)
		g_array_index(b->entries, struct listing_entry, i) =
			(struct listing_entry){ item_at(b, i)->name, item_at(b, i)->type };
}

guint listing_batch_len(const listing_batch *b)
{
	return b->entries->len;
}

const struct listing_entry *listing_batch_at(const listing_batch *b, guint i)
{
	return &g_array_index(b->entries, struct listing_entry, i);
}

bool listing_batch_splits(const listing_batch *b, guint i)
{
	return i > 0 && i < b->entries->len && item_at(b, i - 1)->key == item_at(b, i)->key;
}

uint64_t listing_batch_offset(const listing_batch *b, guint i)
{
	if (!listing_batch_splits(b, i + 1))
		return item_at(b, i)->key;
	/* not the last of its key: resume before all of them */
	while (listing_batch_splits(b, i))
		i--;
	return i ? item_at(b, i - 1)->key : b->after;
}

bool listing_batch_more(const listing_batch *b)
{
	return b->more;
}

bool listing_batch_find(const listing_batch *b, uint64_t off, guint *at)
{
	guint len = b->entries->len;
	if (off < b->after)
		return false;
	if (len && off >= item_at(b, len - 1)->key) {
		*at = len;
		return !b->more;
	}
	if (!len && b->more)
		return false;
	/* the first name of key greater than off */
	guint lo = 0, hi = len;
	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;
		if (item_at(b, mid)->key <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return true;
}
