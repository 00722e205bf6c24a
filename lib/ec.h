/* SPDX-License-Identifier: MIT */
/*
 * libec: erasure coding for ecfs.
 *
 * A code is created once from its parameters and then used, from any number
 * of threads at once, to encode k data blocks into m parity blocks and to
 * rebuild up to m erased blocks (data or parity) from any k survivors.
 * Blocks are plain byte buffers of one common length; they need no
 * particular alignment, and no two of them may overlap.
 *
 * Every function that can fail returns 0 or a positive count on success and
 * a negative EC_E* code on failure; ec_strerror() names it.  A call that
 * fails writes nothing to any output buffer.
 */
#ifndef EC_H
#define EC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (always negative). */
enum {
	EC_OK = 0,
	EC_EINVAL = -1,     /* a parameter is out of range or inconsistent */
	EC_ENOMEM = -2,     /* allocation failed */
	EC_ETOOMANY = -3,   /* more erasures than the code can correct */
	EC_EERASURE = -4,   /* an erasure index is out of range or repeated */
	EC_ENULL = -5,      /* a buffer the call needs is NULL */
	EC_ELENGTH = -6,    /* the block length is not a multiple of ec_block_align() */
	EC_ENOKERNEL = -7,  /* the requested SIMD kernel is unknown or the CPU lacks it */
	EC_ESINGULAR = -8,  /* internal: a matrix that must be invertible is not */
};

/* The code families.  The numbering is part of the on-disk format of ecfs
 * (chunk headers store it): never renumber, only append. */
typedef enum ec_kind {
	EC_RS_VANDERMONDE = 1, /* Reed-Solomon, systematic generator from a Vandermonde matrix */
	EC_RS_CAUCHY = 2,      /* Reed-Solomon, Cauchy generator */
	EC_RAID6_PQ = 3,       /* RAID-6 P+Q (Anvin): m = 2, w = 8, Q by multiply-by-2 */
	/* Bit-matrix XOR codes: a block is w packets of packet_size bytes. */
	EC_CAUCHY_ORIG = 16,   /* Cauchy RS as a bit matrix, the plain Cauchy matrix */
	EC_CAUCHY_GOOD = 17,   /* Cauchy RS as a bit matrix, optimized for few ones */
	EC_LIBERATION = 18,    /* m = 2, w prime, k <= w */
	EC_BLAUM_ROTH = 19,    /* m = 2, w + 1 prime, k <= w */
	EC_LIBER8TION = 20,    /* m = 2, w = 8, k <= 8 */
	EC_EVENODD = 21,       /* m = 2, w + 1 prime, k <= w + 1 */
	EC_RDP = 22,           /* m = 2, w + 1 prime, k <= w */
	EC_STAR = 23,          /* m = 3, w + 1 prime, k <= w + 1 */
} ec_kind;

/* How a bit-matrix code orders its XORs (Luo et al., IEEE TC 2014, sec. 4):
 * Parity/Data first, Packet/Word granularity.  Ignored by GF(2^w) codes. */
typedef enum ec_order {
	EC_ORDER_DEFAULT = 0,
	EC_ORDER_PPG = 1, /* parity-packet guided */
	EC_ORDER_PWG = 2, /* parity-word guided */
	EC_ORDER_DPG = 3, /* data-packet guided */
	EC_ORDER_DWG = 4, /* data-word guided */
} ec_order;

typedef struct ec_params {
	ec_kind kind;
	int k;              /* data blocks, >= 1 */
	int m;              /* parity blocks, >= 1 */
	int w;              /* word size in bits: 8, 16 or 32 for RS; per code otherwise */
	size_t packet_size; /* bit-matrix codes: bytes per packet; 0 for GF(2^w) codes */
	ec_order order;     /* bit-matrix codes: XOR order; EC_ORDER_DEFAULT picks */
} ec_params;

typedef struct ec_code ec_code;

/* Creates a code.  On success stores a new handle in *out and returns 0;
 * on failure stores NULL and returns a negative EC_E* code. */
int ec_create(const ec_params *params, ec_code **out);

/* Frees a code and its caches.  NULL is allowed. */
void ec_destroy(ec_code *code);

/* The parameters the code was created with (order resolved if DEFAULT). */
const ec_params *ec_get_params(const ec_code *code);

/* Every block length given to this code must be a positive multiple of this
 * many bytes: 1 for GF(2^8), 2 for GF(2^16), 4 for GF(2^32), w * packet_size
 * for bit-matrix codes. */
size_t ec_block_align(const ec_code *code);

/* What ec_block_align() would answer for a code of these parameters,
 * without creating it (a cheap check, for a reader judging parameters it
 * was given); 0 if ec_create would refuse them. */
size_t ec_params_block_align(const ec_params *params);

/* Computes parity[0..m-1] (each len bytes) from data[0..k-1]. */
int ec_encode(const ec_code *code, const uint8_t *const *data,
              uint8_t *const *parity, size_t len);

/* Rebuilds erased blocks.  blocks[0..k+m-1] are the k data blocks followed
 * by the m parity blocks.  erased[0..n_erased-1] lists every block that is
 * unavailable (at most m, distinct, each < k+m).  Each erased block whose
 * pointer in blocks[] is non-NULL is rebuilt into that buffer; an erased
 * block whose pointer is NULL is just unavailable and is not computed (so a
 * reader can ask for the data blocks only).  Surviving blocks are only read.
 * Decoding matrices are cached per erasure pattern. */
int ec_decode(const ec_code *code, uint8_t *const *blocks,
              const int *erased, int n_erased, size_t len);

/* Delta update after data block `index` changed from old_data to new_data:
 * parity[j] ^= coefficient(j, index) * (old_data ^ new_data) for every j.
 * This lets a small write update parity without reading the other data. */
int ec_update(const ec_code *code, int index, const uint8_t *old_data,
              const uint8_t *new_data, uint8_t *const *parity, size_t len);

/* The coefficient that multiplies data block `col` into parity block `row`
 * for GF(2^w) codes (for tests and the on-member format documentation);
 * 0 for bit-matrix codes. */
uint32_t ec_coefficient(const ec_code *code, int row, int col);

/* Number of XORs (of w-bit words / packets) one encode does per packet row
 * for bit-matrix codes, per the chosen schedule; 0 for GF(2^w) codes. */
long ec_xor_count(const ec_code *code);

/* A static message for an EC_E* code. */
const char *ec_strerror(int err);

/*
 * What a kind is, for callers that choose parameters (so that they need not
 * know the numbering of ec_kind or the rules of each code).
 */
/* Name of the kind ("rs-vandermonde", "rs-cauchy", "raid6-pq", "liberation",
 * ...; NULL for an unknown kind), and the inverse; ec_kind_from_name returns
 * 0 for an unknown name. */
const char *ec_kind_name(ec_kind kind);
ec_kind ec_kind_from_name(const char *name);
/* 1 for a bit-matrix code (a block is w packets of packet_size bytes, and
 * packet_size is required), 0 for a GF(2^w) code or an unknown kind. */
int ec_kind_is_bitmatrix(ec_kind kind);
/* The word size to use with k and m when the caller gives none: 8 if the
 * kind accepts it, else the smallest w it accepts (the codes whose w must be
 * prime or one less than a prime, and not below about k); EC_EINVAL if no w
 * works with k and m, or the kind is unknown. */
int ec_kind_default_w(ec_kind kind, int k, int m);
/* The MDS code libec runs fastest for k data and m parity blocks with the
 * kernel in force, for a caller that lets the library choose: raid6-pq for
 * m = 2 below the GFNI kernel (on AVX2 its P+Q encodes 1.2 to 2.1 times as
 * fast as Reed-Solomon, and every write encodes), rs-cauchy otherwise (with
 * GFNI it is ahead in encode and decode alike).  Measured with ecfs-bench,
 * docs/performance-history.md section 11. */
ec_kind ec_default_kind(int k, int m);

/*
 * SIMD kernels.  The library picks the fastest kernel the CPU supports the
 * first time it is needed.  The environment variable EC_SIMD (scalar, ssse3,
 * avx2, avx512, gfni) forces one; ec_set_kernel() does the same at run time.
 * Forcing a kernel the CPU lacks fails with EC_ENOKERNEL (and, for EC_SIMD,
 * makes ec_create fail with that code, so a test cannot silently run the
 * wrong kernel).
 */
const char *ec_kernel_name(void);            /* the kernel in use */
int ec_kernel_available(const char *name);   /* 1 if this CPU can run it */
int ec_set_kernel(const char *name);         /* 0 or EC_ENOKERNEL */
/* Names of all kernels compiled in, NULL-terminated, scalar first. */
const char *const *ec_kernel_names(void);

#ifdef __cplusplus
}
#endif

#endif /* EC_H */
