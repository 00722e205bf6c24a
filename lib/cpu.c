/* SPDX-License-Identifier: MIT */
/*
 * CPU feature detection and the library-wide SIMD level.
 *
 * A feature counts only if cpuid reports it and the OS saves its register
 * state (XCR0 via xgetbv), otherwise the first AVX instruction would fault.
 * The level is resolved once (EC_SIMD, else the best the CPU has) and can be
 * changed later by ec_set_kernel() (ec.c, over ec_simd_set_level); it lives
 * in an atomic int so that kernels picked by concurrent calls always see a
 * consistent value.
 */
#include "cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define EC_X86 1
#endif

static const char *const level_names[EC_SIMD_COUNT + 1] = {
	"scalar", "ssse3", "avx2", "avx512", "gfni", NULL,
};

const char *ec_simd_name(ec_simd level)
{
	if ((int)level < 0 || level >= EC_SIMD_COUNT)
		return "none";
	return level_names[level];
}

#ifdef EC_X86
static unsigned long long read_xcr0(void)
{
	unsigned int lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((unsigned long long)hi << 32) | lo;
}

static int detect_best(void)
{
	unsigned int a, b, c, d;
	unsigned int c1, b7 = 0, c7 = 0;
	unsigned long long xcr0 = 0;

	if (!__get_cpuid(1, &a, &b, &c1, &d))
		return EC_SIMD_SCALAR;
	if (__get_cpuid_max(0, NULL) >= 7)
		__cpuid_count(7, 0, a, b7, c7, d);
	if (c1 & (1u << 27)) /* OSXSAVE: xgetbv is usable */
		xcr0 = read_xcr0();

	int ssse3 = (c1 >> 9) & 1;
	int avx_os = (xcr0 & 0x6) == 0x6;       /* XMM and YMM state */
	int avx512_os = (xcr0 & 0xe6) == 0xe6;  /* plus opmask, ZMM hi */
	int avx2 = avx_os && ((c1 >> 28) & 1) && ((b7 >> 5) & 1);
	int avx512 = avx2 && avx512_os && ((b7 >> 16) & 1) /* F */ &&
	             ((b7 >> 30) & 1) /* BW */ && ((b7 >> 31) & 1) /* VL */;
	int gfni = avx512 && ((c7 >> 8) & 1);

	(void)c;
	if (gfni)
		return EC_SIMD_GFNI;
	if (avx512)
		return EC_SIMD_AVX512;
	if (avx2)
		return EC_SIMD_AVX2;
	if (ssse3)
		return EC_SIMD_SSSE3;
	return EC_SIMD_SCALAR;
}
#else
static int detect_best(void)
{
	return EC_SIMD_SCALAR;
}
#endif

/* current_level before detection: ec_simd_level() then detects first. */
#define LEVEL_UNSET (-2)

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static int best_level;
/* -1: EC_SIMD named something we cannot run.  Read on every coding call,
 * so the usual read is one atomic load, not pthread_once. */
static int current_level = LEVEL_UNSET;

int ec_simd_from_name(const char *name)
{
	for (int i = 0; name && i < EC_SIMD_COUNT; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

const char *const *ec_simd_names(void)
{
	return level_names;
}

static void detect(void)
{
	const char *env = getenv("EC_SIMD");
	int level;

	best_level = detect_best();
	level = best_level;
	if (env && *env) {
		int l = ec_simd_from_name(env);

		level = (l >= 0 && l <= best_level) ? l : -1;
	}
	__atomic_store_n(&current_level, level, __ATOMIC_RELEASE);
}

int ec_cpu_supports(ec_simd level)
{
	pthread_once(&detect_once, detect);
	/* The levels are nested on every CPU we know of: GFNI here means
	 * AVX-512 + GFNI, and AVX-512 implies AVX2 implies SSSE3. */
	return (int)level >= 0 && (int)level <= best_level;
}

int ec_simd_level(void)
{
	int level = __atomic_load_n(&current_level, __ATOMIC_ACQUIRE);

	if (__builtin_expect(level != LEVEL_UNSET, 1))
		return level;
	pthread_once(&detect_once, detect);
	return __atomic_load_n(&current_level, __ATOMIC_ACQUIRE);
}

int ec_simd_set_level(int level)
{
	if (!ec_cpu_supports((ec_simd)level))
		return -1;
	__atomic_store_n(&current_level, level, __ATOMIC_RELEASE);
	return 0;
}
