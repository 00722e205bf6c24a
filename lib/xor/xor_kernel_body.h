/* SPDX-License-Identifier: MIT */
/*
 * The body of one vector XOR kernel, instantiated once per instruction set
 * (xor_kernels.c for SSE2 and AVX2, xor_kernel_avx512.c for AVX-512) so
 * the three stay identical but for their width.  Before including, define:
 *   XK_NAME    function name          XK_TARGET  attribute (may be empty)
 *   XK_VEC     vector type            XK_BYTES   its width in bytes
 *   XK_LOAD(p) unaligned load         XK_STORE(p, v) unaligned store
 *   XK_XOR(a, b), XK_ZERO()           XK_END()   cleanup (vzeroupper)
 * and have a `static void xk_tail64(uint8_t *d, const uint8_t *s, size_t
 * len, uint32_t kind)` in scope for the last bytes.  Every macro is
 * undefined at the end.
 */
XK_TARGET
void XK_NAME(const xor_op *ops, size_t n_ops, uint8_t *const *packets,
             size_t off, size_t len)
{
	size_t o = 0;
	while (o < n_ops) {
		uint8_t *d = packets[ops[o].dst] + off;
		size_t run = ops[o].run > XOR_MAX_FUSE ? XOR_MAX_FUSE : ops[o].run;
		size_t i = 0;
		if (run >= 2) {
			/* A run of operations into one packet: keep the sum in
			 * registers and store it once. */
			const uint8_t *src[XOR_MAX_FUSE];
			for (size_t j = 0; j < run; j++)
				src[j] = packets[ops[o + j].src] + off;
			int from_dst = ops[o].kind == XOR_OP_XOR;
			for (; i + 2 * XK_BYTES <= len; i += 2 * XK_BYTES) {
				XK_VEC a0 = XK_LOAD(src[0] + i);
				XK_VEC a1 = XK_LOAD(src[0] + i + XK_BYTES);
				if (from_dst) {
					a0 = XK_XOR(a0, XK_LOAD(d + i));
					a1 = XK_XOR(a1, XK_LOAD(d + i + XK_BYTES));
				}
				for (size_t j = 1; j < run; j++) {
					a0 = XK_XOR(a0, XK_LOAD(src[j] + i));
					a1 = XK_XOR(a1, XK_LOAD(src[j] + i + XK_BYTES));
				}
				XK_STORE(d + i, a0);
				XK_STORE(d + i + XK_BYTES, a1);
			}
			for (size_t j = 0; j < run; j++)
				xk_tail64(d + i, src[j] + i, len - i, ops[o + j].kind);
			o += run;
			continue;
		}
		const uint8_t *s = packets[ops[o].src] + off;
		uint32_t kind = ops[o].kind;
		if (kind == XOR_OP_XOR) {
			/* Four vectors per step hide the load latency. */
			for (; i + 4 * XK_BYTES <= len; i += 4 * XK_BYTES) {
				XK_VEC a0 = XK_LOAD(s + i);
				XK_VEC a1 = XK_LOAD(s + i + XK_BYTES);
				XK_VEC a2 = XK_LOAD(s + i + 2 * XK_BYTES);
				XK_VEC a3 = XK_LOAD(s + i + 3 * XK_BYTES);
				a0 = XK_XOR(a0, XK_LOAD(d + i));
				a1 = XK_XOR(a1, XK_LOAD(d + i + XK_BYTES));
				a2 = XK_XOR(a2, XK_LOAD(d + i + 2 * XK_BYTES));
				a3 = XK_XOR(a3, XK_LOAD(d + i + 3 * XK_BYTES));
				XK_STORE(d + i, a0);
				XK_STORE(d + i + XK_BYTES, a1);
				XK_STORE(d + i + 2 * XK_BYTES, a2);
				XK_STORE(d + i + 3 * XK_BYTES, a3);
			}
			for (; i + XK_BYTES <= len; i += XK_BYTES)
				XK_STORE(d + i, XK_XOR(XK_LOAD(s + i), XK_LOAD(d + i)));
		} else if (kind == XOR_OP_COPY) {
			for (; i + XK_BYTES <= len; i += XK_BYTES)
				XK_STORE(d + i, XK_LOAD(s + i));
		} else {
			for (; i + XK_BYTES <= len; i += XK_BYTES)
				XK_STORE(d + i, XK_ZERO());
		}
		xk_tail64(d + i, s + i, len - i, kind);
		o++;
	}
	XK_END();
}

#undef XK_NAME
#undef XK_TARGET
#undef XK_VEC
#undef XK_BYTES
#undef XK_LOAD
#undef XK_STORE
#undef XK_XOR
#undef XK_ZERO
#undef XK_END
