/* SPDX-License-Identifier: MIT */
/*
 * XOR schedules: a bit matrix turned, once, into a flat list of packet
 * operations, so that coding never walks a matrix.
 *
 * Building (Plank's "smart" scheduling, generalized): every target row is
 * computed either from scratch (copy its first source, XOR the others) or
 * from an already computed target plus the XOR of the difference; targets
 * are taken greedily cheapest first, so rows that share most of their
 * sources reuse each other.  Helper rows (EVENODD's and STAR's adjuster S)
 * are ordinary targets that live in scratch packets: the Q rows then start
 * from S, which is exactly EVENODD's common-S trick, and RDP's Q rows start
 * from P rows by the same rule.
 *
 * Ordering (Luo et al., IEEE TC 2014, section 4): the built list is
 * parity-guided (all operations of one target together).  A data-guided
 * list sorts the operations by source, so each source packet is read while
 * it is hot and feeds every target that needs it; dependencies stay
 * satisfied because computed sources sort after everything that computes
 * them.  Packet granularity runs the list once per packet; word
 * granularity runs it once per slice of every packet, so the working set
 * of a slice stays in cache however large the packets are.  Kernels sum a
 * run of operations into one packet in registers (xor_kernels.h), which
 * the parity-guided lists are made of; that is why PPG measures fastest
 * here (docs/xor-codes.md).
 */
#ifndef EC_XOR_SCHEDULE_H
#define EC_XOR_SCHEDULE_H

#include "bitmatrix.h"
#include "xor_kernels.h"

#include <stddef.h>
#include <stdint.h>

typedef struct xor_schedule {
	xor_op *ops;
	size_t n_ops;
	long n_xors;      /* XOR operations (copies and zeroing not counted) */
	int word_guided;  /* run per slice rather than per packet */
} xor_schedule;

/* Builds the smart schedule for the rows of `rows`: row t is written to
 * packet dst_id[t] and column c of the matrix is packet src_id[c].  The
 * result is parity-guided.  0 or EC_ENOMEM. */
int xor_schedule_build(const bm *rows, const uint32_t *src_id,
                       const uint32_t *dst_id, xor_schedule *out);

/* Like xor_schedule_build but without reuse: every row from scratch (the
 * "dumb" schedule, kept for the figures and as a test reference). */
int xor_schedule_build_plain(const bm *rows, const uint32_t *src_id,
                             const uint32_t *dst_id, xor_schedule *out);

/* Puts the schedule in the given order (EC_ORDER_PPG..DWG; DEFAULT is
 * not accepted here).  0 or EC_ENOMEM / EC_EINVAL. */
int xor_schedule_set_order(xor_schedule *s, int order);

void xor_schedule_free(xor_schedule *s);

/* Slice size in bytes for word-guided runs over groups of n_packets
 * packets: keeps n_packets slices within about 256 KiB (L2). */
size_t xor_word_bytes(int n_packets);

/*
 * Runs a schedule over len bytes of blocks laid out as groups of w
 * packets of packet_size bytes.  Packet id b*w + p is packet p of
 * blocks[b] (b < n_blocks); ids from n_blocks*w on are n_temps scratch
 * packets.  table must hold n_blocks*w + n_temps pointers and scratch
 * n_temps * packet_size bytes.
 */
typedef struct xor_run {
	xor_exec_fn fn;
	uint8_t *const *blocks;
	int n_blocks;
	int w;
	size_t packet_size;
	int n_temps;
	uint8_t **table;
	uint8_t *scratch;
	size_t word_bytes;
} xor_run;

void xor_schedule_run(const xor_schedule *s, const xor_run *run, size_t len);

#endif /* EC_XOR_SCHEDULE_H */
