/* SPDX-License-Identifier: MIT */
/*
 * The AVX-512 kernels of lib/ built a second time against simd_emul.h
 * (the ec_simd_emul library of meson.build, which also injects this header
 * so that the definitions see their prototypes): the same code under an
 * _emul suffix, which the kernel tests run on any CPU.
 */
#ifndef EC_EMUL_KERNELS_H
#define EC_EMUL_KERNELS_H

#include "gf8_kernels.h"
#include "xor_kernels.h"

gf8_dot_fn gf8_dot_avx512_emul, gf8_dot_gfni_emul;
gf8_pq_fn gf8_pq_avx512_emul;
void xor_exec_avx512_emul(const xor_op *ops, size_t n_ops, uint8_t *const *packets,
                          size_t off, size_t len);

#endif /* EC_EMUL_KERNELS_H */
