/* SPDX-License-Identifier: MIT */
/*
 * The code families compiled into libec, for registry.c.  Each is defined
 * in its own module (rs.c, pq.c, and the bit-matrix modules).
 */
#ifndef EC_FAMILIES_H
#define EC_FAMILIES_H

#include "ec_internal.h"

extern const ec_family ec_family_rs_vandermonde; /* rs.c */
extern const ec_family ec_family_rs_cauchy;      /* rs.c */
extern const ec_family ec_family_raid6_pq;       /* pq.c */

/* Bit-matrix XOR families (lib/bitmatrix*.c) are declared here. */

#endif /* EC_FAMILIES_H */
