/* SPDX-License-Identifier: MIT */
/*
 * Table-driven region multiply for GF(2^16) and GF(2^32) (see gfw.h), and
 * the table of GF(2^16) kernels per SIMD level.  The work is cut into
 * slices that fit L1 with their outputs, and each slice of every input is
 * multiplied into every output before moving on, so the data is read from
 * memory once.
 */
#include "gfw.h"

#include "cpu.h"
#include "gf.h"

#include <string.h>

size_t gfw_table_bytes(int w)
{
	if (w == 16)
		return GFW16_NIB_OFFSET + 8 * 32;
	if (w == 32)
		return 4 * 256 * sizeof(uint32_t);
	return 0;
}

/* Fills t[0..255] with c * (b << shift) for every byte b, from the
 * products of c with single bits (multiplication by c is linear). */
static void byte_table(const uint32_t *cbits, int shift, uint32_t *t)
{
	t[0] = 0;
	for (uint32_t b = 1; b < 256; b++) {
		uint32_t low = b & (0u - b); /* lowest set bit */

		t[b] = t[b ^ low] ^ cbits[shift + __builtin_ctz(low)];
	}
}

void gfw_table_init(int w, uint32_t c, void *tab)
{
	uint32_t cbits[32];
	uint32_t poly = w == 16 ? 0x100b : 0x400007, top = 1u << (w - 1);
	uint32_t x = c;

	/* cbits[j] = c * 2^j */
	for (int j = 0; j < w; j++) {
		cbits[j] = x;
		x = (x & top) ? ((x << 1) ^ poly) : (x << 1);
		if (w == 16)
			x &= 0xffff;
	}
	if (w == 16) {
		uint16_t *t16 = tab;
		uint8_t *nib = (uint8_t *)tab + GFW16_NIB_OFFSET;
		uint32_t t[256];

		for (int half = 0; half < 2; half++) {
			byte_table(cbits, 8 * half, t);
			for (int b = 0; b < 256; b++)
				t16[256 * half + b] = (uint16_t)t[b];
		}
		/* Nibble position j of x: c * (n << 4j) = T[j / 2][n << 4 (j & 1)] */
		for (uint32_t j = 0; j < 4; j++) {
			uint8_t *lo = nib + 64 * j, *hi = lo + 32;

			for (uint32_t n = 0; n < 16; n++) {
				uint16_t v = t16[256 * (j / 2) + (n << (4 * (j & 1)))];

				lo[n] = lo[16 + n] = (uint8_t)v;
				hi[n] = hi[16 + n] = (uint8_t)(v >> 8);
			}
		}
	} else {
		uint32_t *t32 = tab;

		for (int j = 0; j < 4; j++)
			byte_table(cbits, 8 * j, t32 + 256 * j);
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

void gfw_dot_scalar_at(int w, size_t off, size_t len, int k, int nout,
                       const uint8_t *const *tabs, const uint8_t *const *in,
                       uint8_t *const *out, int accumulate)
{
	size_t tb = gfw_table_bytes(w);
	size_t end = off + len;

	for (size_t pos = off; pos < end; pos += GFW_SLICE) {
		size_t n = end - pos < GFW_SLICE ? end - pos : GFW_SLICE;

		for (int r = 0; r < nout; r++) {
			for (int i = 0; i < k; i++) {
				const void *t = tabs[r] + (size_t)i * tb;
				int assign = i == 0 && !accumulate;

				if (w == 16)
					mul16(t, in[i] + pos, out[r] + pos, n, assign);
				else
					mul32(t, in[i] + pos, out[r] + pos, n, assign);
			}
		}
	}
}

void gfw16_dot_scalar(size_t off, size_t len, int k, int nout,
                      const uint8_t *const *tabs, const uint8_t *const *in,
                      uint8_t *const *out, int accumulate)
{
	gfw_dot_scalar_at(16, off, len, k, nout, tabs, in, out, accumulate);
}

static const gfw16_kernel kernels16[EC_SIMD_COUNT] = {
	[EC_SIMD_SCALAR] = { "scalar", gfw16_dot_scalar },
#if defined(__x86_64__) || defined(__i386__)
	[EC_SIMD_AVX2] = { "avx2", gfw16_dot_avx2 },
#endif
};

const gfw16_kernel *gfw16_kernel_for(int level)
{
	return EC_SIMD_ENTRY(kernels16, level);
}

/* Bytes of L1 one slice of inputs and a group of outputs may occupy. */
#define GFW16_SLICE_BUDGET (24 * 1024)

void gfw_dot(int w, size_t len, int k, int nout, const uint8_t *const *tabs,
             const uint8_t *const *in, uint8_t *const *out, int accumulate)
{
	if (w != 16) {
		gfw_dot_scalar_at(w, 0, len, k, nout, tabs, in, out, accumulate);
		return;
	}
	const gfw16_kernel *kern = EC_SIMD_CURRENT(kernels16);
	/* The AVX2 kernel keeps up to three outputs in registers. */
	size_t slice = GFW16_SLICE_BUDGET / (size_t)(k + 3);

	slice = slice < 256 ? 256 : slice & ~(size_t)63;
	if (nout <= 3)
		slice = len;
	for (size_t off = 0; off < len; off += slice) {
		size_t n = len - off < slice ? len - off : slice;

		kern->dot(off, n, k, nout, tabs, in, out, accumulate);
	}
}
