/* SPDX-License-Identifier: MIT */
/*
 * The implementations ecfs-bench can measure, each behind the bench_coder
 * interface of bench_cell.h: ecfs's own libec, and, when the build found
 * them, ISA-L and Jerasure running the same work on the same buffers.
 *
 * Every constructor returns 0 and a ready coder in *out, 1 if the
 * implementation cannot run this code (err says why; the caller skips it),
 * or -1 on a real failure (err says what).  Coders are freed with
 * coder->destroy(coder) before their cell.  The peers' constructors exist
 * only in builds that found them (HAVE_ISAL, HAVE_JERASURE).
 */
#ifndef BENCH_CODERS_H
#define BENCH_CODERS_H

#include "bench_cell.h"

/* libec with the given parameters; the code handle is created here. */
int bench_ecfs_new(bench_cell *cell, const ec_params *params, bench_coder **out,
                   char *err, size_t errlen);
/* Makes an ecfs coder the cell's reference (parity and generator matrix). */
int bench_ecfs_make_reference(bench_coder *coder);

/* ISA-L: GF(2^8) codes only.  For rs-cauchy it builds its generator with
 * its own gf_gen_cauchy1_matrix, which must equal ecfs's (checked here);
 * for the other GF(2^8) codes it is given ecfs's coefficients.  Either way
 * its parity must equal the reference. */
int bench_isal_new(bench_cell *cell, bench_coder **out, char *err, size_t errlen);

/* Jerasure: GF(2^w) codes with w = 8, 16 or 32, with its own
 * reed_sol_vandermonde_coding_matrix (the same amount of work as any dense
 * [k,m] generator; parity is compared only if the matrices are equal). */
int bench_jerasure_new(bench_cell *cell, bench_coder **out, char *err, size_t errlen);

#endif /* BENCH_CODERS_H */
