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

/* Bit-matrix XOR families (lib/xor/) are declared here. */
extern const ec_family ec_family_cauchy_orig;    /* xor_codes.c */
extern const ec_family ec_family_cauchy_good;    /* xor_codes.c */
extern const ec_family ec_family_liberation;     /* xor_codes.c */
extern const ec_family ec_family_blaum_roth;     /* xor_codes.c */
extern const ec_family ec_family_liber8tion;     /* xor_codes.c */
extern const ec_family ec_family_evenodd;        /* xor_codes.c */
extern const ec_family ec_family_rdp;            /* xor_codes.c */
extern const ec_family ec_family_star;           /* xor_codes.c */

#endif /* EC_FAMILIES_H */
