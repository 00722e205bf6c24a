/* SPDX-License-Identifier: MIT */
/*
 * CPU feature detection (cpuid + xgetbv, so a feature the OS does not save
 * state for counts as absent) and the library-wide SIMD level.
 *
 * The level is chosen once, at first use: the best the CPU has, unless the
 * EC_SIMD environment variable or ec_set_kernel() forces one.  Every kernel
 * family of the library (GF(2^8) in gf8/, GF(2^16) in gfw/, XOR in xor/)
 * picks its kernel from one table indexed by this level, by the rule of
 * ec_simd_entry() below, so one switch moves all of them together.
 */
#ifndef EC_CPU_H
#define EC_CPU_H

#include <stddef.h>

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

/*
 * A kernel table has EC_SIMD_COUNT entries, each a struct whose first
 * member is the kernel's name.  A NULL name marks a level without a kernel
 * of its own: it runs the one of the nearest level below that has one (the
 * levels are nested, so that kernel runs wherever the higher level does).
 * The scalar entry is always filled.  This returns the entry that runs at
 * `level`, or NULL for a level outside the table.
 */
static inline const void *ec_simd_entry(const void *table, size_t entry_size, int level)
{
	const char *base = table;

	if (level < 0 || level >= EC_SIMD_COUNT)
		return NULL;
	while (level > 0 && !*(const char *const *)(const void *)(base + (size_t)level * entry_size))
		level--;
	return base + (size_t)level * entry_size;
}

/* The entry for the level in force; the scalar one while EC_SIMD names a
 * level this CPU cannot run (ec_create refuses then, so only a direct
 * caller of the kernels gets there). */
static inline const void *ec_simd_current(const void *table, size_t entry_size)
{
	int level = ec_simd_level();

	return ec_simd_entry(table, entry_size, level < 0 ? EC_SIMD_SCALAR : level);
}

/* The same, typed by the table's entries. */
#define EC_SIMD_ENTRY(table, level)                                               \
	((const __typeof__((table)[0]) *)ec_simd_entry((table), sizeof((table)[0]), \
	                                               (level)))
#define EC_SIMD_CURRENT(table) \
	((const __typeof__((table)[0]) *)ec_simd_current((table), sizeof((table)[0])))

#endif /* EC_CPU_H */
