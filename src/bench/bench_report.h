/* SPDX-License-Identifier: MIT */
/*
 * Output of ecfs-bench: one row per measurement, as an aligned table for
 * people or as CSV for scripts (one header line, then rows, nothing else on
 * stdout).  Both forms carry the same columns.
 */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include <stddef.h>
#include <stdio.h>

typedef struct bench_row {
	const char *impl;     /* ecfs, isal, jerasure, memcpy, xor */
	const char *op;       /* encode, decode, copy, xor */
	const char *code;     /* code name, or "-" for baselines */
	int k, m, w;          /* w = 0 for baselines */
	size_t strip;         /* bytes per block */
	char erasures[96];    /* "0+1+5" for decode, "-" otherwise */
	double gbps;          /* data rate, 1e9 bytes per second */
	double normalized;    /* Plank et al.'s normalized speed; < 0: not applicable */
	double vs_isal;       /* gbps / ISA-L's gbps for the same op; < 0: none */
	const char *kernel;   /* libec SIMD kernel for ecfs rows, else "-" */
} bench_row;

/* Normalized coding speed of Plank et al. (FAST'09):
 * data rate x m(k-1)/k, in the rate's unit. */
double bench_normalized(double gbps, int k, int m);

/* Formats a strip size for people: 4K, 64K, 1M, or plain bytes. */
void bench_format_size(size_t bytes, char *buf, size_t buflen);

void bench_report_header(FILE *out, int csv);
void bench_report_row(FILE *out, const bench_row *row, int csv);

#endif /* BENCH_REPORT_H */
