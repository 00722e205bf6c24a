/* SPDX-License-Identifier: MIT */
/*
 * Striped-layout arithmetic.  A chunk file is a 4 KiB header followed by
 * groups; each group is one 4 KiB block of CHUNK_GROUP_STRIPES strip
 * records followed by the strips of those stripes.  Positions map to
 * members rotated by a per-file offset so parity of different files lands
 * on different members (RAID-5 style spreading, per file).
 */
#include "layout.h"

void layout_init(layout *l, int k, int m, uint64_t strip_size, int rot)
{
	l->k = k;
	l->m = m;
	l->n = k + m;
	l->strip_size = strip_size;
	l->rot = rot;
}

int layout_rotation(const uint8_t id[16], int n)
{
	uint32_t v = (uint32_t)id[0] | (uint32_t)id[1] << 8 | (uint32_t)id[2] << 16 |
	             (uint32_t)id[3] << 24;
	return (int)(v % (uint32_t)n);
}

uint64_t layout_stripe_count(const layout *l, uint64_t size)
{
	uint64_t sd = layout_stripe_data(l);
	return (size + sd - 1) / sd;
}

int layout_member_of(const layout *l, int pos)
{
	return (pos + l->rot) % l->n;
}

int layout_position_of(const layout *l, int member)
{
	return (member - l->rot + l->n) % l->n;
}

static uint64_t group_size(const layout *l)
{
	return CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE +
	       (uint64_t)CHUNK_GROUP_STRIPES * l->strip_size;
}

uint64_t layout_record_offset(const layout *l, uint64_t stripe)
{
	return CHUNK_HEADER_SIZE + stripe / CHUNK_GROUP_STRIPES * group_size(l) +
	       stripe % CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE;
}

uint64_t layout_strip_offset(const layout *l, uint64_t stripe)
{
	return CHUNK_HEADER_SIZE + stripe / CHUNK_GROUP_STRIPES * group_size(l) +
	       CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE +
	       stripe % CHUNK_GROUP_STRIPES * l->strip_size;
}

uint64_t layout_chunk_length(const layout *l, uint64_t count)
{
	if (count == 0)
		return CHUNK_HEADER_SIZE;
	return layout_strip_offset(l, count - 1) + l->strip_size;
}
