/* SPDX-License-Identifier: MIT */
/*
 * The table of code families: ec_create() looks a kind up here.  A kind
 * listed in ec.h but without an entry here is simply not available
 * (ec_create returns EC_EINVAL).
 */
#include "families.h"

#include <stddef.h>
#include <string.h>

#define N_FAMILIES (sizeof(families) / sizeof(families[0]))

static const ec_family *const families[] = {
	&ec_family_rs_vandermonde,
	&ec_family_rs_cauchy,
	&ec_family_raid6_pq,
	/* Bit-matrix XOR families (cauchy-orig, cauchy-good, liberation,
	 * blaum-roth, liber8tion, evenodd, rdp, star) go here. */
	&ec_family_cauchy_orig,
	&ec_family_cauchy_good,
	&ec_family_liberation,
	&ec_family_blaum_roth,
	&ec_family_liber8tion,
	&ec_family_evenodd,
	&ec_family_rdp,
	&ec_family_star,
};

const ec_family *ec_family_for(ec_kind kind)
{
	for (size_t i = 0; i < N_FAMILIES; i++)
		if (families[i]->kind == kind)
			return families[i];
	return NULL;
}

const ec_family *ec_family_named(const char *name)
{
	for (size_t i = 0; name && i < N_FAMILIES; i++)
		if (strcmp(families[i]->name, name) == 0)
			return families[i];
	return NULL;
}
