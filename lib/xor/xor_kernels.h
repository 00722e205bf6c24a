/* SPDX-License-Identifier: MIT */
/*
 * XOR region kernels for the bit-matrix codes.  A coding schedule is a flat
 * list of packet operations (copy, xor or zero one packet into another); a
 * kernel runs a run of those operations over the byte range [off, off+len)
 * of every packet.  Running the whole list once per packet (off = 0, len =
 * packet size) gives the packet-guided orders; running it once per small
 * slice gives the word-guided orders (Luo et al.), so one kernel serves all
 * four orders.  There is one kernel per SIMD level: 64-bit scalar words,
 * SSE2 (the "ssse3" level), AVX2 and AVX-512, in a table indexed by
 * ec_simd_level() (cpu.h).  len and off are multiples of 8 bytes.
 */
#ifndef EC_XOR_KERNELS_H
#define EC_XOR_KERNELS_H

#include <stddef.h>
#include <stdint.h>

enum xor_op_kind {
	XOR_OP_COPY = 0, /* dst = src */
	XOR_OP_XOR = 1,  /* dst ^= src */
	XOR_OP_ZERO = 2, /* dst = 0 (src unused): a target with no inputs */
};

/* One packet operation; src and dst index a table of packet pointers.
 * run counts this and the following operations into the same dst (the
 * first a COPY or XOR, the rest XOR): kernels sum such a run in registers
 * and store once, up to XOR_MAX_FUSE operations at a time.  1 otherwise;
 * xor_mark_runs() fills it. */
typedef struct xor_op {
	uint32_t src;
	uint32_t dst;
	uint32_t kind;
	uint32_t run;
} xor_op;

#define XOR_MAX_FUSE 32

void xor_mark_runs(xor_op *ops, size_t n_ops);

typedef void (*xor_exec_fn)(const xor_op *ops, size_t n_ops,
                            uint8_t *const *packets, size_t off, size_t len);

/* Per-level implementations (the vector ones exist on x86 only). */
void xor_exec_scalar(const xor_op *ops, size_t n_ops, uint8_t *const *packets,
                     size_t off, size_t len);
void xor_exec_sse2(const xor_op *ops, size_t n_ops, uint8_t *const *packets,
                   size_t off, size_t len);
void xor_exec_avx2(const xor_op *ops, size_t n_ops, uint8_t *const *packets,
                   size_t off, size_t len);
void xor_exec_avx512(const xor_op *ops, size_t n_ops, uint8_t *const *packets,
                     size_t off, size_t len);

/* An entry of the kernel table (see cpu.h: the name comes first). */
typedef struct xor_kernel {
	const char *name;
	xor_exec_fn exec;
} xor_kernel;

/* The kernel of the SIMD level in force, and the one that runs at a level
 * (cpu.h's rule: GFNI runs the AVX-512 kernel, XOR needs no field
 * arithmetic), NULL outside 0 .. EC_SIMD_COUNT - 1. */
const xor_kernel *xor_kernel_current(void);
const xor_kernel *xor_kernel_for(int level);

#endif /* EC_XOR_KERNELS_H */
