/* SPDX-License-Identifier: MIT */
/*
 * CPU feature detection (cpuid + xgetbv, so a feature the OS does not save
 * state for counts as absent) and the library-wide SIMD level.
 *
 * The level is chosen once, at first use: the best the CPU has, unless the
 * EC_SIMD environment variable or ec_set_kernel() forces one.  Every kernel
 * table in the library (GF(2^8) region kernels, XOR kernels) indexes by
 * this level, so one switch moves all of them together.
 */
#ifndef EC_CPU_H
#define EC_CPU_H

typedef enum ec_simd {
	EC_SIMD_SCALAR = 0,
	EC_SIMD_SSSE3 = 1,
	EC_SIMD_AVX2 = 2,
	EC_SIMD_AVX512 = 3, /* AVX-512 F + BW (+VL) */
	EC_SIMD_GFNI = 4,   /* AVX-512 + GFNI (GF2P8AFFINEQB on zmm) */
	EC_SIMD_COUNT
} ec_simd;

/* 1 if this CPU (and OS) can run code of that level. */
int ec_cpu_supports(ec_simd level);
/* The level in force (resolving EC_SIMD on first call).  If EC_SIMD names
 * an unknown or unsupported level, returns -1 and ec_create fails with
 * EC_ENOKERNEL. */
int ec_simd_level(void);
/* Puts a level in force: 0, or -1 if this CPU cannot run it. */
int ec_simd_set_level(int level);
/* The name of a level ("none" outside the range), the level of a name (-1
 * if unknown), and all names, scalar first, NULL-terminated. */
const char *ec_simd_name(ec_simd level);
int ec_simd_from_name(const char *name);
const char *const *ec_simd_names(void);

#endif /* EC_CPU_H */
