/* SPDX-License-Identifier: MIT */
/*
 * Table-driven region multiply for GF(2^16) and GF(2^32) (see gfw.h).  The
 * work is cut into slices that fit L1 with their outputs, and each slice
 * of every input is multiplied into every output before moving on, so the
 * data is read from memory once.
 */
#include "gfw.h"

#include "gf.h"

#include <string.h>

size_t gfw_table_bytes(int w)
{
	if (w == 16)
		return 2 * 256 * sizeof(uint16_t);
	if (w == 32)
		return 4 * 256 * sizeof(uint32_t);
	return 0;
}

void gfw_table_init(int w, uint32_t c, void *tab)
{
	if (w == 16) {
		uint16_t *t = tab;

		for (uint32_t b = 0; b < 256; b++) {
			t[b] = (uint16_t)gf_mul(16, c, b);
			t[256 + b] = (uint16_t)gf_mul(16, c, b << 8);
		}
	} else {
		uint32_t *t = tab;

		for (uint32_t j = 0; j < 4; j++)
			for (uint32_t b = 0; b < 256; b++)
				t[j * 256 + b] = gf_mul(32, c, b << (8 * j));
	}
}

static void mul16(const uint16_t *t, const uint8_t *s, uint8_t *o, size_t len,
                  int assign)
{
	for (size_t p = 0; p < len; p += 2) {
		uint16_t x, y;

		memcpy(&x, s + p, 2);
		y = t[x & 0xff] ^ t[256 + (x >> 8)];
		if (!assign) {
			uint16_t old;

			memcpy(&old, o + p, 2);
			y ^= old;
		}
		memcpy(o + p, &y, 2);
	}
}

static void mul32(const uint32_t *t, const uint8_t *s, uint8_t *o, size_t len,
                  int assign)
{
	for (size_t p = 0; p < len; p += 4) {
		uint32_t x, y;

		memcpy(&x, s + p, 4);
		y = t[x & 0xff] ^ t[256 + ((x >> 8) & 0xff)] ^
		    t[512 + ((x >> 16) & 0xff)] ^ t[768 + (x >> 24)];
		if (!assign) {
			uint32_t old;

			memcpy(&old, o + p, 4);
			y ^= old;
		}
		memcpy(o + p, &y, 4);
	}
}

#define GFW_SLICE 2048

void gfw_dot(int w, size_t len, int k, int nout, const uint8_t *const *tabs,
             const uint8_t *const *in, uint8_t *const *out, int accumulate)
{
	size_t tb = gfw_table_bytes(w);

	for (size_t off = 0; off < len; off += GFW_SLICE) {
		size_t n = len - off < GFW_SLICE ? len - off : GFW_SLICE;

		for (int r = 0; r < nout; r++) {
			for (int i = 0; i < k; i++) {
				const void *t = tabs[r] + (size_t)i * tb;
				int assign = i == 0 && !accumulate;

				if (w == 16)
					mul16(t, in[i] + off, out[r] + off, n, assign);
				else
					mul32(t, in[i] + off, out[r] + off, n, assign);
			}
		}
	}
}
