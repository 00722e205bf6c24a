/* SPDX-License-Identifier: MIT */
/*
 * The public entry points of libec (ec.h).  Everything a caller passes is
 * checked here (code parameters with the family's check(), which builds
 * nothing) before any family code does work, so a failing call never
 * writes an output buffer and the families can assume sane arguments:
 * non-NULL buffers, a length that is a positive multiple of the code's
 * alignment, and erasure lists that are sorted, distinct, in range and no
 * longer than m.  The kind queries and the kernel API sit here too.
 */
#include "cpu.h"
#include "ec_internal.h"

#include <stdlib.h>
#include <string.h>

/* Far beyond any real stripe; keeps k * m and k + m products from
 * overflowing an int in the families. */
#define EC_MAX_BLOCKS (1 << 20)

const char *ec_kind_name(ec_kind kind)
{
	const ec_family *fam = ec_family_for(kind);

	return fam ? fam->name : NULL;
}

ec_kind ec_kind_from_name(const char *name)
{
	const ec_family *fam = ec_family_named(name);

	return fam ? fam->kind : 0;
}

int ec_kind_is_bitmatrix(ec_kind kind)
{
	const ec_family *fam = ec_family_for(kind);

	return fam ? fam->bitmatrix : 0;
}

const char *ec_strerror(int err)
{
	switch (err) {
	case EC_OK:
		return "success";
	case EC_EINVAL:
		return "invalid or unsupported code parameters or arguments";
	case EC_ENOMEM:
		return "out of memory";
	case EC_ETOOMANY:
		return "more erased blocks than the code can correct (more than m)";
	case EC_EERASURE:
		return "an erased block index is out of range or listed twice";
	case EC_ENULL:
		return "a required buffer or pointer is NULL";
	case EC_ELENGTH:
		return "block length is zero or not a multiple of the code's block alignment";
	case EC_ENOKERNEL:
		return "the requested SIMD kernel (EC_SIMD or ec_set_kernel) is unknown "
		       "or not supported by this CPU";
	case EC_ESINGULAR:
		return "internal error: a decoding matrix is singular";
	default:
		return "unknown error";
	}
}

/* Whether ec_create would accept params (of family fam, NULL if none):
 * 0 or EC_E*. */
static int check_params(const ec_family *fam, const ec_params *params)
{
	if (!fam)
		return EC_EINVAL;
	if (params->k < 1 || params->m < 1 || params->k > EC_MAX_BLOCKS ||
	    params->m > EC_MAX_BLOCKS || params->k + params->m > EC_MAX_BLOCKS)
		return EC_EINVAL;
	if ((int)params->order < EC_ORDER_DEFAULT || params->order > EC_ORDER_DWG)
		return EC_EINVAL;
	return fam->check(params);
}

int ec_kind_default_w(ec_kind kind, int k, int m)
{
	const ec_family *fam = ec_family_for(kind);
	/* Any packet size the bit-matrix codes accept: it does not bear on w. */
	ec_params p = { .kind = kind, .k = k, .m = m, .w = 8,
	                .packet_size = fam && fam->bitmatrix ? 8 : 0 };

	if (check_params(fam, &p) == 0)
		return 8;
	for (p.w = 1; p.w <= 32; p.w++)
		if (check_params(fam, &p) == 0)
			return p.w;
	return EC_EINVAL;
}

ec_kind ec_default_kind(int k, int m)
{
	ec_params pq = { .kind = EC_RAID6_PQ, .k = k, .m = m, .w = 8 };
	int level = ec_simd_level();

	if (level >= 0 && level < EC_SIMD_GFNI &&
	    check_params(ec_family_for(EC_RAID6_PQ), &pq) == 0)
		return EC_RAID6_PQ;
	return EC_RS_CAUCHY;
}

int ec_create(const ec_params *params, ec_code **out)
{
	if (!out)
		return EC_ENULL;
	*out = NULL;
	if (!params)
		return EC_ENULL;
	if (ec_simd_level() < 0)
		return EC_ENOKERNEL;

	const ec_family *fam = ec_family_for(params->kind);
	int rc = check_params(fam, params);

	if (rc != 0)
		return rc;

	ec_code *code = calloc(1, sizeof(*code));

	if (!code)
		return EC_ENOMEM;
	code->params = *params;
	code->family = fam;
	rc = fam->create(code);
	if (rc != 0) {
		free(code);
		return rc;
	}
	code->align = fam->block_align(code);
	*out = code;
	return 0;
}

void ec_destroy(ec_code *code)
{
	if (!code)
		return;
	code->family->destroy(code);
	free(code);
}

const ec_params *ec_get_params(const ec_code *code)
{
	return code ? &code->params : NULL;
}

size_t ec_block_align(const ec_code *code)
{
	return code ? code->align : 0;
}

size_t ec_params_block_align(const ec_params *params)
{
	const ec_family *fam = params ? ec_family_for(params->kind) : NULL;

	if (check_params(fam, params) != 0)
		return 0;
	/* Every family's alignment is a function of the parameters alone. */
	ec_code probe = { .params = *params, .family = fam };
	return fam->block_align(&probe);
}

static int check_len(const ec_code *code, size_t len)
{
	size_t align = code->align;

	if (len == 0 || align == 0)
		return EC_ELENGTH;
	/* Every GF(2^w) code aligns to a power of two: no division. */
	if ((align & (align - 1)) == 0 ? (len & (align - 1)) != 0 : len % align != 0)
		return EC_ELENGTH;
	return 0;
}

static int check_buffers(const void *const *bufs, int n)
{
	if (!bufs)
		return EC_ENULL;
	for (int i = 0; i < n; i++)
		if (!bufs[i])
			return EC_ENULL;
	return 0;
}

int ec_encode(const ec_code *code, const uint8_t *const *data,
              uint8_t *const *parity, size_t len)
{
	int rc;

	if (!code)
		return EC_EINVAL;
	if ((rc = check_buffers((const void *const *)data, code->params.k)) ||
	    (rc = check_buffers((const void *const *)parity, code->params.m)) ||
	    (rc = check_len(code, len)))
		return rc;
	return code->family->encode(code, data, parity, len);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The checks of ec_decode for a stripe of at most 64 blocks, with a bit
 * per block: each erasure in range and listed once, every other block
 * present; then the erasures, sorted, into sorted.  0 or EC_E*. */
static int check_erased64(uint8_t *const *blocks, const int *erased,
                          int n_erased, int n, int *sorted)
{
	uint64_t set = 0;

	for (int i = 0; i < n_erased; i++) {
		uint64_t bit = (uint64_t)1 << (erased[i] & 63);

		if (erased[i] < 0 || erased[i] >= n || (set & bit))
			return EC_EERASURE;
		set |= bit;
	}
	for (int b = 0; b < n; b++)
		if (!blocks[b] && !((set >> b) & 1))
			return EC_ENULL;
	for (int i = 0; set; i++, set &= set - 1)
		sorted[i] = __builtin_ctzll(set);
	return 0;
}

/* The same for any stripe: sorts a copy (sorted holds n_erased ints). */
static int check_erased(uint8_t *const *blocks, const int *erased,
                        int n_erased, int n, int *sorted)
{
	for (int i = 0; i < n_erased; i++)
		if (erased[i] < 0 || erased[i] >= n)
			return EC_EERASURE;
	memcpy(sorted, erased, (size_t)n_erased * sizeof(*sorted));
	qsort(sorted, (size_t)n_erased, sizeof(*sorted), cmp_int);
	for (int i = 1; i < n_erased; i++)
		if (sorted[i] == sorted[i - 1])
			return EC_EERASURE;
	/* Every surviving block is read: it must be there. */
	for (int b = 0, e = 0; b < n; b++) {
		if (e < n_erased && sorted[e] == b)
			e++;
		else if (!blocks[b])
			return EC_ENULL;
	}
	return 0;
}

#define STACK_ERASED 64

int ec_decode(const ec_code *code, uint8_t *const *blocks, const int *erased,
              int n_erased, size_t len)
{
	int stack[STACK_ERASED];
	int *sorted = stack;
	int rc;

	if (!code)
		return EC_EINVAL;
	int n = code->params.k + code->params.m;

	if (!blocks)
		return EC_ENULL;
	if (n_erased < 0)
		return EC_EINVAL;
	if (n_erased > code->params.m)
		return EC_ETOOMANY;
	if (n_erased > 0 && !erased)
		return EC_ENULL;
	if ((rc = check_len(code, len)))
		return rc;
	if (n <= 64)
		rc = check_erased64(blocks, erased, n_erased, n, sorted);
	else if (n_erased > STACK_ERASED && !(sorted = malloc((size_t)n_erased * sizeof(*sorted))))
		return EC_ENOMEM;
	else
		rc = check_erased(blocks, erased, n_erased, n, sorted);
	if (rc == 0 && n_erased > 0)
		rc = code->family->decode(code, blocks, sorted, n_erased, len);
	if (sorted != stack)
		free(sorted);
	return rc;
}

int ec_update(const ec_code *code, int index, const uint8_t *old_data,
              const uint8_t *new_data, uint8_t *const *parity, size_t len)
{
	int rc;

	if (!code)
		return EC_EINVAL;
	if (index < 0 || index >= code->params.k || !code->family->update)
		return EC_EINVAL;
	if (!old_data || !new_data)
		return EC_ENULL;
	if ((rc = check_buffers((const void *const *)parity, code->params.m)) ||
	    (rc = check_len(code, len)))
		return rc;
	return code->family->update(code, index, old_data, new_data, parity, len);
}

uint32_t ec_coefficient(const ec_code *code, int row, int col)
{
	if (!code || row < 0 || row >= code->params.m || col < 0 ||
	    col >= code->params.k || !code->family->coefficient)
		return 0;
	return code->family->coefficient(code, row, col);
}

long ec_xor_count(const ec_code *code)
{
	if (!code || !code->family->xor_count)
		return 0;
	return code->family->xor_count(code);
}

/* The kernel API of ec.h over the SIMD level of cpu.c. */
const char *ec_kernel_name(void)
{
	return ec_simd_name((ec_simd)ec_simd_level());
}

int ec_kernel_available(const char *name)
{
	int l = ec_simd_from_name(name);

	return l >= 0 && ec_cpu_supports((ec_simd)l);
}

int ec_set_kernel(const char *name)
{
	int l = ec_simd_from_name(name);

	return l >= 0 && ec_simd_set_level(l) == 0 ? 0 : EC_ENOKERNEL;
}

const char *const *ec_kernel_names(void)
{
	return ec_simd_names();
}
