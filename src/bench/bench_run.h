/* SPDX-License-Identifier: MIT */
/*
 * What ecfs-bench measures, once the command line is parsed: the cells of
 * one code over a list of strip sizes, or the fixed grid of the project's
 * performance bar.  Each cell verifies every implementation, times them
 * interleaved and prints its rows.
 */
#ifndef BENCH_RUN_H
#define BENCH_RUN_H

#include "ec.h"

#include <stddef.h>
#include <stdint.h>

typedef struct bench_config {
	ec_params params;     /* the code (single mode) */
	size_t strips[32];    /* strip sizes in bytes */
	int n_strips;
	int do_encode, do_decode;
	int erase_list[256];  /* explicit erasures (--erase), if n_erase_list > 0 */
	int n_erase_list;
	int n_erasures;       /* erasure count when no list: -1 means m */
	int use_isal, use_jerasure, use_baselines;
	double seconds;       /* measuring time per row */
	int rounds;           /* rounds per row; the best is reported */
	size_t offset;        /* bytes off 64-byte alignment (--unaligned) */
	int csv;
	uint64_t seed;
} bench_config;

/* One code over cfg->strips.  Returns 0, or 1 after printing why to stderr. */
int bench_run_single(const bench_config *cfg);

/* The grid: rs-cauchy and rs-vandermonde, w = 8, [6,2] [14,2] [12,4] [10,6]
 * [10,4], m data blocks erased, at cfg->strips; then (table mode) summaries
 * of ecfs / ISA-L and ecfs / Jerasure per cell.  Returns 0 or 1. */
int bench_run_grid(const bench_config *cfg);

/* Packet size for a bit-matrix code when none was given: the largest
 * power of two from 8 bytes to 2 KiB (packets that stay in L1 with their
 * partners, Plank et al. sec. 4.4) that splits the strip into w equal
 * packets; 0 if there is none. */
size_t bench_default_packet(int w, size_t strip);

/* The default erasure pattern: n blocks, data blocks first (the worst case
 * for decoding), then parity.  Fills out[0..n-1]. */
void bench_default_erasures(int k, int n, int *out);

#endif /* BENCH_RUN_H */
