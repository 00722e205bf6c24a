/* SPDX-License-Identifier: MIT */
/*
 * AVX-512 XOR kernel.  Kept in its own file and written against a handful
 * of intrinsics (loadu, storeu, xor, setzero on __m512i, and
 * _mm256_zeroupper) so that the tests can compile this same file a second
 * time with EC_SIMD_EMULATE defined and a plain C model of those
 * intrinsics injected by the build (tests/lib), and check it against the
 * scalar kernel on a CPU that has no AVX-512.  In that build the function
 * is named xor_exec_avx512_emul.
 */
#include "xor_kernels.h"

#include <string.h>

#ifdef EC_SIMD_EMULATE
#define XOR_AVX512_FN xor_exec_avx512_emul
#define XOR_AVX512_TARGET
#elif defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define XOR_AVX512_FN xor_exec_avx512
#define XOR_AVX512_TARGET __attribute__((target("avx512f")))
#endif

#ifdef XOR_AVX512_FN
static void xk_tail64(uint8_t *d, const uint8_t *s, size_t len, uint32_t kind)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t a, b = 0;
		if (kind != XOR_OP_ZERO)
			memcpy(&b, s + i, 8);
		if (kind == XOR_OP_XOR) {
			memcpy(&a, d + i, 8);
			b ^= a;
		}
		memcpy(d + i, &b, 8);
	}
}

#define XK_NAME XOR_AVX512_FN
#define XK_TARGET XOR_AVX512_TARGET
#define XK_VEC __m512i
#define XK_BYTES 64
#define XK_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define XK_STORE(p, v) _mm512_storeu_si512((void *)(p), (v))
#define XK_XOR(a, b) _mm512_xor_si512((a), (b))
#define XK_ZERO() _mm512_setzero_si512()
#define XK_END() _mm256_zeroupper()
#include "xor_kernel_body.h"
#endif
