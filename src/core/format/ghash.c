/* SPDX-License-Identifier: MIT */
/*
 * GHASH (the hash of AES-GCM, NIST SP 800-38D) with carry-less multiplies
 * on 256- or 512-bit vectors, for the gmac strip checksum (checksum.c).
 *
 * Blocks are byte-reversed on load, which turns GCM's bit-reflected field
 * elements into polynomials pclmulqdq multiplies directly, up to a shift
 * by one bit (Gueron and Kounavis, "Intel Carry-Less Multiplication
 * Instruction and its Usage for Computing the GCM Mode", rev. 2.02,
 * algorithms 1-5).  Runs of blocks are folded per step of up to
 * GHASH_POWERS blocks, 4, 2 or 1 to a multiply (512-, 256- or 128-bit
 * vectors): block i of a step of n is multiplied by H^(n-i), the 256-bit
 * products summed (Karatsuba: three multiplies a block), and one
 * reduction done per step, so that a 4 KiB block of a strip's tags is one
 * step whose multiplies wait for no reduction.  Multiplication, the shift
 * and the reduction are all linear over GF(2), so the sum of unreduced
 * products reduces to the sum of the reduced ones: the result is exactly
 * GHASH's.
 */
#include "ghash.h"

#include <string.h>

#include "ec.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T128 __attribute__((target("pclmul,ssse3,sse4.1")))
#define T256 __attribute__((target("avx2,vpclmulqdq,pclmul")))
#define T512 __attribute__((target("avx512f,avx512bw,vpclmulqdq,pclmul")))

/* Byte reversal of a 16-byte block (per 128-bit lane in the wide forms). */
#define BSWAP_BYTES 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15

T128 static inline __m128i bswap128(__m128i x)
{
	return _mm_shuffle_epi8(x, _mm_set_epi8(BSWAP_BYTES));
}

/* The 256-bit product hi:lo (bit-reflected, one bit short) shifted left by
 * one and reduced modulo x^128 + x^7 + x^2 + x + 1 (algorithm 5). */
T128 static inline __m128i reduce(__m128i lo, __m128i hi)
{
	__m128i t7 = _mm_srli_epi32(lo, 31), t8 = _mm_srli_epi32(hi, 31), t9, t2;

	lo = _mm_slli_epi32(lo, 1);
	hi = _mm_slli_epi32(hi, 1);
	t9 = _mm_srli_si128(t7, 12);
	t8 = _mm_slli_si128(t8, 4);
	t7 = _mm_slli_si128(t7, 4);
	lo = _mm_or_si128(lo, t7);
	hi = _mm_or_si128(_mm_or_si128(hi, t8), t9);
	t7 = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(lo, 31), _mm_slli_epi32(lo, 30)),
	                   _mm_slli_epi32(lo, 25));
	t8 = _mm_srli_si128(t7, 4);
	t7 = _mm_slli_si128(t7, 12);
	lo = _mm_xor_si128(lo, t7);
	t2 = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(lo, 1), _mm_srli_epi32(lo, 2)),
	                   _mm_srli_epi32(lo, 7));
	lo = _mm_xor_si128(lo, _mm_xor_si128(t2, t8));
	return _mm_xor_si128(hi, lo);
}

/* lo, hi and the middle terms summed, folded into 256 bits and reduced. */
T128 static inline __m128i fold(__m128i lo, __m128i mid, __m128i hi)
{
	return reduce(_mm_xor_si128(lo, _mm_slli_si128(mid, 8)),
	              _mm_xor_si128(hi, _mm_srli_si128(mid, 8)));
}

/* a * b in the byte-reversed representation. */
T128 static __m128i gfmul(__m128i a, __m128i b)
{
	__m128i mid = _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01),
	                            _mm_clmulepi64_si128(a, b, 0x10));
	return fold(_mm_clmulepi64_si128(a, b, 0x00), mid, _mm_clmulepi64_si128(a, b, 0x11));
}

T128 static void make_key(ghash_key *k, const uint8_t h[16])
{
	__m128i hp[GHASH_POWERS];

	hp[0] = bswap128(_mm_loadu_si128((const __m128i *)h));
	for (int i = 1; i < GHASH_POWERS; i++)
		hp[i] = gfmul(hp[i - 1], hp[0]);
	/* pw[i] = H^(GHASH_POWERS-i); kw[i] its two halves XORed, in both. */
	for (int i = 0; i < GHASH_POWERS; i++) {
		__m128i v = hp[GHASH_POWERS - 1 - i];
		_mm_storeu_si128((__m128i *)k->pw[i], v);
		_mm_storeu_si128((__m128i *)k->kw[i],
		                 _mm_xor_si128(v, _mm_shuffle_epi32(v, 0x4e)));
	}
}

/* Karatsuba: lo, hi, and (a0^a1)(b0^b1) in mid (reduce_sums). */
T128 static inline void mul128(__m128i a, const uint8_t *pw, const uint8_t *kw, __m128i *lo,
                               __m128i *mid, __m128i *hi)
{
	__m128i b = _mm_loadu_si128((const __m128i *)pw);
	__m128i kb = _mm_loadu_si128((const __m128i *)kw);
	__m128i ka = _mm_xor_si128(a, _mm_shuffle_epi32(a, 0x4e));

	*lo = _mm_xor_si128(*lo, _mm_clmulepi64_si128(a, b, 0x00));
	*hi = _mm_xor_si128(*hi, _mm_clmulepi64_si128(a, b, 0x11));
	*mid = _mm_xor_si128(*mid, _mm_clmulepi64_si128(ka, kb, 0x00));
}

/* The summed products of a step reduced: Karatsuba's middle term is
 * mid^lo^hi. */
T128 static inline __m128i reduce_sums(__m128i lo, __m128i mid, __m128i hi)
{
	return fold(lo, _mm_xor_si128(mid, _mm_xor_si128(lo, hi)), hi);
}

/* Blocks [from, n) of a sum (sums128) one at a time. */
T128 static inline void tail128(const ghash_key *k, const uint8_t *p, size_t from, size_t n,
                                size_t base, __m128i *lo, __m128i *mid, __m128i *hi)
{
	for (size_t i = from; i < n; i++)
		mul128(bswap128(_mm_loadu_si128((const __m128i *)(p + 16 * i))), k->pw[base + i],
		       k->kw[base + i], lo, mid, hi);
}

/* The products of blocks p[0..n), x added to the first, block i times
 * pw[base + i], added unreduced to lo, mid and hi. */
T128 static void sums128(const ghash_key *k, __m128i x, const uint8_t *p, size_t n, size_t base,
                         __m128i *lo, __m128i *mid, __m128i *hi)
{
	tail128(k, p, 1, n, base, lo, mid, hi);
	/* x's multiply last: the others do not wait for it */
	mul128(_mm_xor_si128(x, bswap128(_mm_loadu_si128((const __m128i *)p))), k->pw[base],
	       k->kw[base], lo, mid, hi);
}

T256 static inline void mul256(__m256i a, const uint8_t *pw, const uint8_t *kw, __m256i *lo,
                               __m256i *mid, __m256i *hi)
{
	__m256i b = _mm256_loadu_si256((const __m256i *)pw);
	__m256i kb = _mm256_loadu_si256((const __m256i *)kw);
	__m256i ka = _mm256_xor_si256(a, _mm256_shuffle_epi32(a, 0x4e));

	*lo = _mm256_xor_si256(*lo, _mm256_clmulepi64_epi128(a, b, 0x00));
	*hi = _mm256_xor_si256(*hi, _mm256_clmulepi64_epi128(a, b, 0x11));
	*mid = _mm256_xor_si256(*mid, _mm256_clmulepi64_epi128(ka, kb, 0x00));
}

T256 static inline __m128i lanes256(__m256i v)
{
	return _mm_xor_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

/* sums128 on 256-bit vectors: two blocks a multiply. */
T256 static void sums256(const ghash_key *k, __m128i x, const uint8_t *p, size_t n, size_t base,
                         __m128i *l, __m128i *m, __m128i *h)
{
	const __m256i bs = _mm256_broadcastsi128_si256(_mm_set_epi8(BSWAP_BYTES));
	size_t wide = n / 2 * 2;

	if (!wide) {
		sums128(k, x, p, n, base, l, m, h);
		return;
	}
	__m256i lo = _mm256_setzero_si256(), mid = lo, hi = lo, b;
	tail128(k, p, wide, n, base, l, m, h);
	for (size_t j = 2; j < wide; j += 2) {
		b = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(p + 16 * j)), bs);
		mul256(b, k->pw[base + j], k->kw[base + j], &lo, &mid, &hi);
	}
	b = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)p), bs);
	mul256(_mm256_xor_si256(b, _mm256_zextsi128_si256(x)), k->pw[base], k->kw[base], &lo, &mid, &hi);
	*l = _mm_xor_si128(*l, lanes256(lo));
	*m = _mm_xor_si128(*m, lanes256(mid));
	*h = _mm_xor_si128(*h, lanes256(hi));
}

T512 static inline void mul512(__m512i a, const uint8_t *pw, const uint8_t *kw, __m512i *lo,
                               __m512i *mid, __m512i *hi)
{
	__m512i b = _mm512_loadu_si512(pw), kb = _mm512_loadu_si512(kw);
	__m512i ka = _mm512_xor_si512(a, _mm512_shuffle_epi32(a, 0x4e));

	*lo = _mm512_xor_si512(*lo, _mm512_clmulepi64_epi128(a, b, 0x00));
	*hi = _mm512_xor_si512(*hi, _mm512_clmulepi64_epi128(a, b, 0x11));
	*mid = _mm512_xor_si512(*mid, _mm512_clmulepi64_epi128(ka, kb, 0x00));
}

T512 static inline __m128i lanes512(__m512i v)
{
	__m256i y = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
	return _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
}

/* sums128 on 512-bit vectors: four blocks a multiply. */
T512 static void sums512(const ghash_key *k, __m128i x, const uint8_t *p, size_t n, size_t base,
                         __m128i *l, __m128i *m, __m128i *h)
{
	const __m512i bs = _mm512_broadcast_i32x4(_mm_set_epi8(BSWAP_BYTES));
	size_t wide = n / 4 * 4;

	if (!wide) {
		sums128(k, x, p, n, base, l, m, h);
		return;
	}
	__m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo, b;
	tail128(k, p, wide, n, base, l, m, h);
	for (size_t j = 4; j < wide; j += 4) {
		b = _mm512_shuffle_epi8(_mm512_loadu_si512((p + 16 * j)), bs);
		mul512(b, k->pw[base + j], k->kw[base + j], &lo, &mid, &hi);
	}
	b = _mm512_shuffle_epi8(_mm512_loadu_si512(p), bs);
	mul512(_mm512_xor_si512(b, _mm512_zextsi128_si512(x)), k->pw[base], k->kw[base], &lo, &mid, &hi);
	*l = _mm_xor_si128(*l, lanes512(lo));
	*m = _mm_xor_si128(*m, lanes512(mid));
	*h = _mm_xor_si128(*h, lanes512(hi));
}

static enum ghash_impl detect(void)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("ssse3") ||
	    !__builtin_cpu_supports("sse4.1"))
		return GHASH_NONE;
	if (__builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw"))
		return GHASH_512;
	if (__builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2"))
		return GHASH_256;
	return GHASH_128;
}

/* sums128 at the state's width. */
T128 static void sums(const ghash_state *st, __m128i x, const uint8_t *p, size_t n, size_t base,
                      __m128i *lo, __m128i *mid, __m128i *hi)
{
	if (st->impl == GHASH_512)
		sums512(st->key, x, p, n, base, lo, mid, hi);
	else if (st->impl == GHASH_256)
		sums256(st->key, x, p, n, base, lo, mid, hi);
	else
		sums128(st->key, x, p, n, base, lo, mid, hi);
}

/* Hashes nb whole blocks at p into the state, in steps of up to
 * GHASH_POWERS blocks: block i of a step of n times H^(n-i). */
T128 static void blocks(ghash_state *st, const uint8_t *p, size_t nb)
{
	__m128i x = _mm_loadu_si128((const __m128i *)st->x);

	while (nb) {
		size_t n = nb < GHASH_POWERS ? nb : GHASH_POWERS;
		__m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
		sums(st, x, p, n, GHASH_POWERS - n, &lo, &mid, &hi);
		x = reduce_sums(lo, mid, hi);
		p += 16 * n;
		nb -= n;
	}
	_mm_storeu_si128((__m128i *)st->x, x);
}

/* ghash_tag's one step: head, the n blocks at p and the length block
 * (lenblock, in GCM's order) after st's data, without touching st. */
T128 static void tag_step(const ghash_state *st, const uint8_t head[16], const uint8_t *p,
                          size_t n, const uint8_t lenblock[16], uint8_t out[16])
{
	const ghash_key *k = st->key;
	size_t base = GHASH_POWERS - (n + 2);
	__m128i x = _mm_loadu_si128((const __m128i *)st->x), lo = _mm_setzero_si128(), mid = lo,
	        hi = lo;

	sums(st, _mm_setzero_si128(), p, n, base + 1, &lo, &mid, &hi);
	mul128(bswap128(_mm_loadu_si128((const __m128i *)lenblock)), k->pw[GHASH_POWERS - 1],
	       k->kw[GHASH_POWERS - 1], &lo, &mid, &hi);
	mul128(_mm_xor_si128(x, bswap128(_mm_loadu_si128((const __m128i *)head))), k->pw[base],
	       k->kw[base], &lo, &mid, &hi);
	_mm_storeu_si128((__m128i *)out, bswap128(reduce_sums(lo, mid, hi)));
}

T128 static void finish_x(const ghash_state *st, uint8_t out[16])
{
	_mm_storeu_si128((__m128i *)out, bswap128(_mm_loadu_si128((const __m128i *)st->x)));
}

#else /* not x86-64: no fast path, checksum.c uses OpenSSL */
static enum ghash_impl detect(void)
{
	return GHASH_NONE;
}
static void make_key(ghash_key *k, const uint8_t h[16])
{
	(void)k;
	(void)h;
}
static void blocks(ghash_state *st, const uint8_t *p, size_t nb)
{
	(void)st;
	(void)p;
	(void)nb;
}
static void finish_x(const ghash_state *st, uint8_t out[16])
{
	(void)st;
	memset(out, 0, 16);
}
static void tag_step(const ghash_state *st, const uint8_t head[16], const uint8_t *p,
                     size_t n, const uint8_t lenblock[16], uint8_t out[16])
{
	(void)st;
	(void)head;
	(void)p;
	(void)n;
	(void)lenblock;
	memset(out, 0, 16);
}
#endif

/* libec held to a lower level than the CPU's (EC_SIMD, ec_set_kernel:
 * standing in for an older CPU) holds GHASH to what such a CPU has:
 * 256-bit vectors with AVX2, single blocks below it. */
static enum ghash_impl held_by_libec(enum ghash_impl impl)
{
	const char *k = ec_kernel_name();
	enum ghash_impl cap = !strcmp(k, "avx2") ? GHASH_256
	                      : !strcmp(k, "ssse3") || !strcmp(k, "scalar") ? GHASH_128
	                      : GHASH_512;

	return impl > cap ? cap : impl;
}

enum ghash_impl ghash_impl_available(void)
{
	static enum ghash_impl impl = (enum ghash_impl)-1;

	if (impl == (enum ghash_impl)-1)
		impl = held_by_libec(detect());
	return impl;
}

int ghash_key_init(ghash_key *k, const uint8_t h[16], enum ghash_impl impl)
{
	memset(k, 0, sizeof(*k));
	if (impl == GHASH_NONE || impl > ghash_impl_available())
		return -1;
	k->impl = impl;
	make_key(k, h);
	return 0;
}

void ghash_start(ghash_state *st, const ghash_key *k)
{
	memset(st, 0, sizeof(*st));
	st->key = k;
	st->impl = k->impl;
}

void ghash_update(ghash_state *st, const void *data, size_t len)
{
	const uint8_t *p = data;

	st->total += len;
	if (st->fill) {
		size_t take = 16 - st->fill < len ? 16 - st->fill : len;
		memcpy(st->part + st->fill, p, take);
		st->fill += take;
		p += take;
		len -= take;
		if (st->fill < 16)
			return;
		blocks(st, st->part, 1);
		st->fill = 0;
	}
	if (len >= 16)
		blocks(st, p, len / 16);
	p += len / 16 * 16;
	st->fill = len % 16;
	memcpy(st->part, p, st->fill);
}

/* GCM's length block: the data's bits, then 0 bits of ciphertext. */
static void length_block(uint64_t total, uint8_t out[16])
{
	uint64_t bits = total * 8;

	memset(out, 0, 16);
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(bits >> (56 - 8 * i));
}

void ghash_final_aad(ghash_state *st, uint8_t out[16])
{
	uint8_t lenblock[16];

	if (st->fill) {
		memset(st->part + st->fill, 0, 16 - st->fill);
		blocks(st, st->part, 1);
		st->fill = 0;
	}
	length_block(st->total, lenblock);
	blocks(st, lenblock, 1);
	finish_x(st, out);
}

void ghash_tag(const ghash_state *st, const uint8_t head[16], const void *data, size_t len,
               uint8_t out[16])
{
	uint8_t lenblock[16];

	if (st->impl != GHASH_NONE && !st->fill && len >= 16 && len % 16 == 0 &&
	    len / 16 + 2 <= GHASH_POWERS) {
		length_block(st->total + 16 + len, lenblock);
		tag_step(st, head, data, len / 16, lenblock, out);
		return;
	}
	ghash_state t = *st;
	ghash_update(&t, head, 16);
	ghash_update(&t, data, len);
	ghash_final_aad(&t, out);
}
