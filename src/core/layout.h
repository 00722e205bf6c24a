/* SPDX-License-Identifier: MIT */
/*
 * Pure arithmetic of the striped layout (docs/FORMAT.md, "Layout"):
 * file offset <-> stripe and strip, strip position <-> member (rotated per
 * file), and where strips and strip records sit inside a chunk file.
 * No I/O, no allocation: easy to unit-test exhaustively.
 */
#ifndef ECFS_LAYOUT_H
#define ECFS_LAYOUT_H

#include <stdint.h>
#include <sys/types.h>

#define CHUNK_HEADER_SIZE 4096u
#define CHUNK_RECORD_SIZE 64u
/* Records of this many consecutive stripes share one 4 KiB record block,
 * written just before their strips, so strips stay 4 KiB aligned. */
#define CHUNK_GROUP_STRIPES (4096u / CHUNK_RECORD_SIZE)

typedef struct layout {
	int k, m, n;
	uint64_t strip_size; /* bytes per strip */
	int rot;             /* member index of strip position 0 */
} layout;

void layout_init(layout *l, int k, int m, uint64_t strip_size, int rot);
/* The rotation a file identity implies for n members. */
int layout_rotation(const uint8_t id[16], int n);

static inline uint64_t layout_stripe_data(const layout *l)
{
	return (uint64_t)l->k * l->strip_size;
}
/* Stripe holding byte off of the file. */
static inline uint64_t layout_stripe_of(const layout *l, uint64_t off)
{
	return off / layout_stripe_data(l);
}
/* Number of stripes a file of `size` bytes occupies. */
uint64_t layout_stripe_count(const layout *l, uint64_t size);

/* Member that stores strip position pos, and the inverse. */
int layout_member_of(const layout *l, int pos);
int layout_position_of(const layout *l, int member);

/* Offsets inside a chunk file. */
uint64_t layout_record_offset(const layout *l, uint64_t stripe);
uint64_t layout_strip_offset(const layout *l, uint64_t stripe);
/* Chunk file length that holds stripes [0, count). */
uint64_t layout_chunk_length(const layout *l, uint64_t count);

#endif
