/* SPDX-License-Identifier: MIT */
/*
 * Scalar, SSE2 and AVX2 XOR kernels and the table of kernels per SIMD
 * level (the AVX-512 kernel lives in xor_kernel_avx512.c so that the tests
 * can compile it a second time against a model of its intrinsics).  Each kernel walks the operation
 * list and, for each operation, streams the byte range with the widest
 * unaligned loads it has, finishing with 64-bit words.  The vector kernels
 * are compiled with target attributes, so the library builds with plain
 * flags and only runs them when cpuid says the CPU can.
 */
#include "xor_kernels.h"

#include "cpu.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define XOR_HAVE_X86 1
#endif

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void store64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* The 64-bit tail shared by every kernel (and the whole scalar kernel). */
static inline void words64(uint8_t *d, const uint8_t *s, size_t len, uint32_t kind)
{
	size_t i = 0;
	if (kind == XOR_OP_XOR) {
		for (; i + 32 <= len; i += 32) {
			store64(d + i, load64(d + i) ^ load64(s + i));
			store64(d + i + 8, load64(d + i + 8) ^ load64(s + i + 8));
			store64(d + i + 16, load64(d + i + 16) ^ load64(s + i + 16));
			store64(d + i + 24, load64(d + i + 24) ^ load64(s + i + 24));
		}
		for (; i < len; i += 8)
			store64(d + i, load64(d + i) ^ load64(s + i));
	} else if (kind == XOR_OP_COPY) {
		for (; i < len; i += 8)
			store64(d + i, load64(s + i));
	} else {
		for (; i < len; i += 8)
			store64(d + i, 0);
	}
}

void xor_mark_runs(xor_op *ops, size_t n_ops)
{
	for (size_t i = n_ops; i-- > 0;) {
		int joins = i + 1 < n_ops && ops[i + 1].dst == ops[i].dst &&
		            ops[i + 1].kind == XOR_OP_XOR && ops[i].kind != XOR_OP_ZERO;
		ops[i].run = joins ? ops[i + 1].run + 1 : 1;
	}
}

static void xk_tail64(uint8_t *d, const uint8_t *s, size_t len, uint32_t kind)
{
	words64(d, s, len, kind);
}

/* The scalar kernel is the same body over 64-bit words. */
#define XK_NAME xor_exec_scalar
#define XK_TARGET
#define XK_VEC uint64_t
#define XK_BYTES 8
#define XK_LOAD(p) load64(p)
#define XK_STORE(p, v) store64((p), (v))
#define XK_XOR(a, b) ((a) ^ (b))
#define XK_ZERO() ((uint64_t)0)
#define XK_END() ((void)0)
#include "xor_kernel_body.h"

#ifdef XOR_HAVE_X86
#define XK_NAME xor_exec_sse2
#define XK_TARGET __attribute__((target("sse2")))
#define XK_VEC __m128i
#define XK_BYTES 16
#define XK_LOAD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define XK_STORE(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define XK_XOR(a, b) _mm_xor_si128((a), (b))
#define XK_ZERO() _mm_setzero_si128()
#define XK_END() ((void)0)
#include "xor_kernel_body.h"

/* AVX2 ends with vzeroupper: SSE code after a dirty upper state is slow. */
#define XK_NAME xor_exec_avx2
#define XK_TARGET __attribute__((target("avx2")))
#define XK_VEC __m256i
#define XK_BYTES 32
#define XK_LOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define XK_STORE(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define XK_XOR(a, b) _mm256_xor_si256((a), (b))
#define XK_ZERO() _mm256_setzero_si256()
#define XK_END() _mm256_zeroupper()
#include "xor_kernel_body.h"
#endif

static const xor_kernel kernels[EC_SIMD_COUNT] = {
	[EC_SIMD_SCALAR] = { "scalar", xor_exec_scalar },
#ifdef XOR_HAVE_X86
	[EC_SIMD_SSSE3] = { "sse2", xor_exec_sse2 },
	[EC_SIMD_AVX2] = { "avx2", xor_exec_avx2 },
	[EC_SIMD_AVX512] = { "avx512", xor_exec_avx512 },
#endif
};

const xor_kernel *xor_kernel_for(int level)
{
	return EC_SIMD_ENTRY(kernels, level);
}

const xor_kernel *xor_kernel_current(void)
{
	return EC_SIMD_CURRENT(kernels);
}
