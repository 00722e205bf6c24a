/* SPDX-License-Identifier: MIT */
#include "listing.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memberio.h"

/* Bytes asked for per getdents64 call: a directory of ten thousand
 * names in one or two calls, so that there are few member calls to time
 * and watch.  A block keeps only what the call filled. */
#define LISTING_BLOCK_SIZE (256 * 1024)

struct listing_block {
	size_t used;
	char bytes[];
};

/* The fields of the kernel's struct linux_dirent64 (getdents64(2)). */
struct kernel_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

void listing_part_init(listing_part *p)
{
	*p = (listing_part){ .blocks = g_ptr_array_new() };
}

void listing_part_init_sink(listing_part *p, listing_sink sink, void *ctx,
                            bool (*hidden)(const char *name), guint keep)
{
	listing_part_init(p);
	p->sink = sink;
	p->sink_ctx = ctx;
	p->hidden = hidden;
	p->keep = keep;
}

/* Frees the part's blocks (those the listing took are NULL). */
static void drop_blocks(listing_part *p)
{
	for (guint i = 0; i < p->blocks->len; i++)
		g_free(g_ptr_array_index(p->blocks, i));
	g_ptr_array_set_size(p->blocks, 0);
}

void listing_part_clear(listing_part *p)
{
	if (!p->blocks)
		return;
	drop_blocks(p);
	g_ptr_array_free(p->blocks, TRUE);
	p->blocks = NULL;
}

static void spill(listing_part *p);

int listing_part_read(listing_part *p, int fd)
{
	drop_blocks(p); /* what an earlier attempt left */
	p->kept = 0;
	p->overflowed = false;
	for (;;) {
		struct listing_block *b = g_malloc(sizeof(*b) + LISTING_BLOCK_SIZE);
		long got = MIO_CALL(syscall(SYS_getdents64, fd, b->bytes, LISTING_BLOCK_SIZE));
		if (got <= 0) {
			int rc = got < 0 ? -errno : 0;
			g_free(b);
			return rc;
		}
		b->used = (size_t)got;
		g_ptr_array_add(p->blocks, g_realloc(b, sizeof(*b) + b->used));
		if (p->sink)
			spill(p);
	}
}

/* The first record of block from *at that hidden (if not NULL) does not
 * leave out, *at moved past it; NULL at the block's end. */
static const struct kernel_dirent64 *next_record(const struct listing_block *block, size_t *at,
                                                 bool (*hidden)(const char *))
{
	while (*at < block->used) {
		const struct kernel_dirent64 *de = (const void *)(block->bytes + *at);
		*at += de->d_reclen;
		if (!hidden || !hidden(de->d_name))
			return de;
	}
	return NULL;
}

void listing_part_offer(const listing_part *p, listing_sink sink, void *ctx,
                        bool (*hidden)(const char *name))
{
	for (guint b = 0; b < p->blocks->len; b++) {
		size_t at = 0;
		for (const struct kernel_dirent64 *de;
		     (de = next_record(g_ptr_array_index(p->blocks, b), &at, hidden));)
			sink(ctx, de->d_name, de->d_type);
	}
}

/* Past keep records, hands what p holds to its sink and keeps none. */
static void spill(listing_part *p)
{
	const struct listing_block *last = g_ptr_array_index(p->blocks, p->blocks->len - 1);
	size_t at = 0;
	while (!p->overflowed && next_record(last, &at, NULL))
		p->kept++;
	if (!p->overflowed && p->kept <= p->keep)
		return;
	p->overflowed = true;
	listing_part_offer(p, p->sink, p->sink_ctx, p->hidden);
	drop_blocks(p);
}

guint listing_part_count(const listing_part *p, bool (*hidden)(const char *name))
{
	guint count = 0;
	for (guint b = 0; b < p->blocks->len; b++) {
		size_t at = 0;
		while (next_record(g_ptr_array_index(p->blocks, b), &at, hidden))
			count++;
	}
	return count;
}

/* ---- a set of the names listed so far, by their index in entries ---- */

struct name_set {
	uint32_t *slots;  /* entry index + 1; 0 for an empty slot */
	uint32_t *hashes; /* the hash of each slot's name */
	uint32_t mask;
	guint count;
};

static uint32_t name_hash(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 16777619u;
	return h;
}

static const char *entry_name(const GArray *entries, guint i)
{
	return g_array_index(entries, struct listing_entry, i).name;
}

/* The index of name in entries, or -1. */
static gint set_find(const struct name_set *s, const GArray *entries, const char *name,
                     uint32_t hash)
{
	for (uint32_t at = hash & s->mask; s->slots[at]; at = (at + 1) & s->mask)
		if (s->hashes[at] == hash && !strcmp(entry_name(entries, s->slots[at] - 1), name))
			return (gint)s->slots[at] - 1;
	return -1;
}

static void set_put(struct name_set *s, uint32_t hash, guint index)
{
	uint32_t at = hash & s->mask;
	while (s->slots[at])
		at = (at + 1) & s->mask;
	s->slots[at] = index + 1;
	s->hashes[at] = hash;
	s->count++;
}

/* Sizes the set for at least `need` names at most half full, and puts
 * every entry in it (the names before the set was needed, or all of them
 * again in a larger table). */
static void set_fill(struct name_set *s, const GArray *entries, guint need)
{
	uint32_t size = 64;
	while (size < 2 * need)
		size *= 2;
	g_free(s->slots);
	g_free(s->hashes);
	*s = (struct name_set){ g_new0(uint32_t, size), g_new(uint32_t, size), size - 1, 0 };
	for (guint i = 0; i < entries->len; i++)
		set_put(s, name_hash(entry_name(entries, i)), i);
}

/* Adds a name only a later part holds. */
static void add_new(listing *l, struct name_set *s, const struct kernel_dirent64 *de,
                    uint32_t hash)
{
	struct listing_entry e = { de->d_name, de->d_type };
	g_array_append_val(l->entries, e);
	if (2 * (s->count + 1) > s->mask + 1)
		set_fill(s, l->entries, l->entries->len);
	else
		set_put(s, hash, l->entries->len - 1);
}

/* Merges one later part's names into l: in step with the first part's
 * (cursor) while they match, else by the set, which is made on the first
 * name out of step.  A name found in the first part's brings the cursor
 * after it, so one missing or extra name costs one lookup, not the rest.
 * Returns true if a name of `block` is now the listing's. */
static bool merge_block(listing *l, struct name_set *s, guint first_len, guint *cursor,
                        const struct listing_block *block, bool (*hidden)(const char *))
{
	bool kept = false;
	size_t at = 0;
	for (const struct kernel_dirent64 *de; (de = next_record(block, &at, hidden));) {
		if (*cursor < first_len && !strcmp(entry_name(l->entries, *cursor), de->d_name)) {
			(*cursor)++;
			continue;
		}
		if (!s->slots)
			set_fill(s, l->entries, l->entries->len + 64);
		uint32_t hash = name_hash(de->d_name);
		gint found = set_find(s, l->entries, de->d_name, hash);
		if (found >= 0) {
			if ((guint)found < first_len)
				*cursor = (guint)found + 1;
			continue;
		}
		add_new(l, s, de, hash);
		kept = true;
	}
	return kept;
}

static void take_first(listing *l, const struct listing_block *block,
                       bool (*hidden)(const char *))
{
	size_t at = 0;
	for (const struct kernel_dirent64 *de; (de = next_record(block, &at, hidden));) {
		struct listing_entry e = { de->d_name, de->d_type };
		g_array_append_val(l->entries, e);
	}
}

static listing *empty_listing(guint count)
{
	listing *l = g_new(listing, 1);
	l->entries = g_array_sized_new(FALSE, FALSE, sizeof(struct listing_entry), count);
	l->blocks = g_ptr_array_new_with_free_func(g_free);
	l->refs = 1;
	return l;
}

listing *listing_union(listing_part *parts, int count, uint64_t whole,
                       bool (*hidden)(const char *name))
{
	listing *l = empty_listing(0);
	struct name_set set = { 0 };
	guint first_len = 0;
	bool first = true;

	for (int i = 0; i < count; i++) {
		listing_part *p = &parts[i];
		guint cursor = 0;
		for (guint b = 0; (whole >> i & 1) && b < p->blocks->len; b++) {
			struct listing_block *block = g_ptr_array_index(p->blocks, b);
			bool kept = true;
			if (first)
				take_first(l, block, hidden);
			else
				kept = merge_block(l, &set, first_len, &cursor, block, hidden);
			if (kept) {
				g_ptr_array_add(l->blocks, block);
				p->blocks->pdata[b] = NULL; /* now the listing's */
			}
		}
		if (whole >> i & 1 && first) {
			first = false;
			first_len = l->entries->len;
		}
		listing_part_clear(p);
	}
	g_free(set.slots);
	g_free(set.hashes);
	return l;
}

listing *listing_new(guint count, size_t bytes)
{
	listing *l = empty_listing(count);
	struct listing_block *block = g_malloc(sizeof(*block) + bytes);
	block->used = 0;
	g_ptr_array_add(l->blocks, block);
	return l;
}

void listing_append(listing *l, const char *name, unsigned char type)
{
	struct listing_block *block = g_ptr_array_index(l->blocks, 0);
	size_t len = strlen(name) + 1;
	struct listing_entry e = { memcpy(block->bytes + block->used, name, len), type };
	block->used += len;
	g_array_append_val(l->entries, e);
}

listing *listing_ref(listing *l)
{
	g_atomic_int_inc(&l->refs);
	return l;
}

void listing_unref(listing *l)
{
	if (!l || !g_atomic_int_dec_and_test(&l->refs))
		return;
	g_array_free(l->entries, TRUE);
	g_ptr_array_free(l->blocks, TRUE);
	g_free(l);
}
