/* SPDX-License-Identifier: MIT */
/*
 * Little-endian integers in the bytes ecfs stores (docs/FORMAT.md): the
 * one set of encoders and decoders for chunk headers and records, the
 * overwrite journal and intent records.
 */
#ifndef ECFS_LE_H
#define ECFS_LE_H

#include <stdint.h>

static inline void le_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void le_put32(uint8_t *p, uint32_t v)
{
	le_put16(p, (uint16_t)v);
	le_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void le_put64(uint8_t *p, uint64_t v)
{
	le_put32(p, (uint32_t)v);
	le_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t le_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le_get32(const uint8_t *p)
{
	return le_get16(p) | (uint32_t)le_get16(p + 2) << 16;
}

static inline uint64_t le_get64(const uint8_t *p)
{
	return le_get32(p) | (uint64_t)le_get32(p + 4) << 32;
}

#endif
