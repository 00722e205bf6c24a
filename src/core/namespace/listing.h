/* SPDX-License-Identifier: MIT */
/*
 * A directory's listing as the union of its members' (DESIGN.md section
 * 4).  Each member's directory is read with getdents64 into blocks of
 * its own, and the union keeps the names where the kernel put them:
 * no copy of a name, no allocation per name.  Members made their entries
 * in the same order, so their listings mostly match record for record;
 * the union compares each member's names with the first's in step, and
 * only a name out of step is looked up in a hash set of the names so far.
 */
#ifndef ECFS_LISTING_H
#define ECFS_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

/* Where a part's names go one by one (a window, listing_batch.h). */
typedef void (*listing_sink)(void *ctx, const char *name, unsigned char type);

/* getdents64 output of one member's directory, in the order it came.
 * With a sink, a part keeps at most `keep` records: past them it hands
 * every name it reads (hidden ones left out) to the sink and keeps none,
 * so reading a directory of any size takes what the sink keeps and one
 * block.  A part read again hands the sink its names again. */
typedef struct listing_part {
	GPtrArray *blocks; /* struct listing_block * */
	listing_sink sink; /* NULL: keeps every block */
	void *sink_ctx;
	bool (*hidden)(const char *name);
	guint keep;
	guint kept;        /* records in blocks */
	bool overflowed;   /* past keep: the names went to the sink */
} listing_part;

void listing_part_init(listing_part *p);
/* As listing_part_init, with a sink for the names past keep records. */
void listing_part_init_sink(listing_part *p, listing_sink sink, void *ctx,
                            bool (*hidden)(const char *name), guint keep);
void listing_part_clear(listing_part *p);
/* Hands the names p keeps (hidden ones left out) to sink. */
void listing_part_offer(const listing_part *p, listing_sink sink, void *ctx,
                        bool (*hidden)(const char *name));

/* Reads the directory open at fd to its end into p, dropping what an
 * earlier attempt left.  Each getdents64 is one member call (MIO_CALL)
 * into a block of its own, handed to p only once the call returned, so
 * a call given up on a worker writes nothing of the caller's.  Returns 0
 * or -errno. */
int listing_part_read(listing_part *p, int fd);
/* How many names p holds that hidden (if not NULL) does not leave out. */
guint listing_part_count(const listing_part *p, bool (*hidden)(const char *name));

struct listing_entry {
	const char *name;
	unsigned char type; /* DT_* */
};

/* Shared by reference, never changed once made (but by listing_append
 * before it is shared). */
typedef struct listing {
	GArray *entries;   /* struct listing_entry */
	GPtrArray *blocks; /* where the names lie */
	gint refs;
} listing;

/* The union of the parts whose bit is set in `whole` (at most 64 parts),
 * names a part repeats counted once: the first part's names in its
 * order, then each name only a later part holds, where it comes in that
 * part.  Names for which hidden (if not NULL) is true are left out.
 * Takes the blocks it keeps from the parts; clears them all. */
listing *listing_union(listing_part *parts, int count, uint64_t whole,
                       bool (*hidden)(const char *name));
/* One more reference to l; listing_unref drops one, and frees l with the
 * last (NULL: nothing). */
listing *listing_ref(listing *l);
void listing_unref(listing *l);

/* An empty listing with room for names of `bytes` bytes in all (their
 * terminating NULs included), to fill with listing_append. */
listing *listing_new(guint count, size_t bytes);
/* Appends a copy of name (which must fit what listing_new was told). */
void listing_append(listing *l, const char *name, unsigned char type);

static inline guint listing_len(const listing *l)
{
	return l->entries->len;
}

static inline const struct listing_entry *listing_at(const listing *l, guint i)
{
	return &g_array_index(l->entries, struct listing_entry, i);
}

#endif
