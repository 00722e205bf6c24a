/* SPDX-License-Identifier: MIT */
/*
 * The XOR-code tuner and paper-figure runs of ecfs-bench (bench_xor.c).
 */
#ifndef BENCH_XOR_H
#define BENCH_XOR_H

/* Runs `ecfs-bench --tune ...` or `ecfs-bench --figures ...`: argv is the
 * whole command line.  Returns the process exit status (0, 1 failure,
 * 2 usage). */
int bench_xor_main(int argc, char **argv);

#endif /* BENCH_XOR_H */
