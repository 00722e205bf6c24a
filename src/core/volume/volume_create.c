/* SPDX-License-Identifier: MIT */
/*
 * A new volume and the defaults for new files: the superblock written on
 * n empty members from the options given (k, m, the code, the strip size,
 * the checksum), and at every open the mount options over the
 * superblock's, checked before anything is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <glib.h>
#include <openssl/rand.h>

#include "checksum.h"
#include "log.h"
#include "memberops.h"
#include "reader_rules.h"
#include "superblock.h"
#include "volume_private.h"


/* ---- option defaults ---- */

/* The code's own w for k and m (libec's rule); 8 when none works, so that
 * the check of the defaults says why. */
static int default_w(ec_kind kind, int k, int m)
{
	int w = ec_kind_default_w(kind, k, m);

	return w > 0 ? w : 8;
}

/* The refusal of code parameters libec does not accept, g_malloc'd. */
static char *invalid_code_message(const ec_params *p)
{
	return g_strdup_printf("code %s with k=%d m=%d w=%d packet_size=%zu is not valid",
	                       ec_kind_name(p->kind), p->k, p->m, p->w, p->packet_size);
}

/* Strips are a whole number of cache lines, which every SIMD kernel of
 * lib/ handles without a scalar tail. */
#define STRIP_GRANULE 64

/* A strip size must be a multiple of the code's block alignment: one the
 * user gave is refused (and one not in whole granules), a defaulted one is
 * rounded up. */
static int fit_strip(size_t *strip_size, size_t align, bool strip_given, ec_kind kind,
                     char **message)
{
	if (*strip_size > CHUNK_STRIP_MAX) {
		*message = g_strdup_printf("strip=%zu: the strip size may be at most %llu bytes",
		                           *strip_size, (unsigned long long)CHUNK_STRIP_MAX);
		return -EINVAL;
	}
	if (strip_given && *strip_size % STRIP_GRANULE) {
		*message = g_strdup_printf("strip=%zu: the strip size must be a multiple of %d "
		                           "bytes", *strip_size, STRIP_GRANULE);
		return -EINVAL;
	}
	if (*strip_size % align == 0)
		return 0;
	if (strip_given) {
		*message = g_strdup_printf("strip=%zu is not a multiple of %zu, the block "
		                           "alignment of code %s", *strip_size, align,
		                           ec_kind_name(kind));
		return -EINVAL;
	}
	*strip_size = (*strip_size + align - 1) / align * align;
	return 0;
}

/* Checks that files can be created with defaults d (creating the code) and
 * rounds a defaulted strip size up to the code's alignment. */
static int check_defaults(volume *v, volume_file_defaults *d, bool strip_given,
                          char **message)
{
	ec_params p = { .kind = d->code, .k = v->k, .m = v->m, .w = d->w,
	                .packet_size = d->packet_size };
	const ec_code *code = volume_code(v, &p);

	if (!code) {
		*message = invalid_code_message(&p);
		return -EINVAL;
	}
	int rc = fit_strip(&d->strip_size, ec_block_align(code), strip_given, d->code, message);
	if (rc < 0)
		return rc;
	if (d->strip_size > v->strip_max) {
		/* A header naming more is refused (rules_header_misfit). */
		*message = g_strdup_printf("strip=%zu: this volume's files take strips of at most "
		                           "%llu bytes (its superblock's strip size or 64 MiB)",
		                           d->strip_size, (unsigned long long)v->strip_max);
		return -EINVAL;
	}
	if (!checksum_alg_from_name(d->checksum) ||
	    !volume_checksum(v, checksum_alg_from_name(d->checksum))) {
		char *choices = volume_checksum_choices();
		*message = g_strdup_printf("unknown or unavailable checksum '%s' (choose %s)",
		                           d->checksum, choices);
		g_free(choices);
		return -EINVAL;
	}
	return 0;
}

/* Mount options over the superblock's defaults, and the settings. */
int vol_set_defaults(volume *v, const superblock *sb, const volume_options *opts,
                     char **message)
{
	const volume_file_defaults *o = &opts->files;
	volume_file_defaults *d = &v->defaults;

	d->code = o->code ? o->code : (ec_kind)sb->code;
	if (o->w)
		d->w = o->w;
	else if (d->code == (ec_kind)sb->code)
		d->w = sb->w;
	else
		d->w = default_w(d->code, v->k, v->m);
	d->packet_size = o->packet_size ? o->packet_size
	                 : d->code == (ec_kind)sb->code ? sb->packet_size
	                 : ec_kind_is_bitmatrix(d->code) ? VOLUME_DEFAULT_PACKET_SIZE : 0;
	if (!ec_kind_is_bitmatrix(d->code))
		d->packet_size = 0;
	else if (!d->packet_size)
		d->packet_size = VOLUME_DEFAULT_PACKET_SIZE;
	d->strip_size = o->strip_size ? o->strip_size : sb->strip_size;
	v->strip_max = rules_volume_strip_max(sb->strip_size);
	v->checksum_name = g_strdup(o->checksum ? o->checksum : checksum_alg_name(sb->checksum));
	d->checksum = v->checksum_name;
	v->settings = opts->run;
	if (opts->run.write_quorum == v->n)
		v->settings.write_quorum = 0;
	int rc = volume_runtime_check(&opts->run, v->k, v->n, message);
	return rc < 0 ? rc : check_defaults(v, d, o->strip_size != 0, message);
}

/* ---- creating a volume ---- */

int vol_create(probe *pr, int n, const volume_options *opts, superblock *sb,
               char **message)
{
	const volume_geometry *g = &opts->geometry;
	const volume_file_defaults *o = &opts->files;

	if (opts->run.read_only) {
		*message = g_strdup("all members are empty and the mount is read-only: "
		                    "nothing to open");
		return -EROFS;
	}
	if (g->k <= 0 || g->m <= 0) {
		*message = g_strdup_printf("all %d members are empty: to create a volume give "
		                           "-o k=K,m=M with K+M=%d", n, n);
		return -EINVAL;
	}
	if (g->k + g->m != n) {
		*message = g_strdup_printf("k=%d + m=%d must equal the number of members (%d)",
		                           g->k, g->m, n);
		return -EINVAL;
	}
	if (n > 64) {
		*message = g_strdup_printf("at most 64 members are supported, %d given", n);
		return -EINVAL;
	}
	int crc = volume_runtime_check(&opts->run, g->k, n, message);
	if (crc < 0)
		return crc;
	memset(sb, 0, sizeof(*sb));
	sb->version = g->format ? g->format : SUPERBLOCK_VERSION;
	sb->n = n;
	sb->k = g->k;
	sb->m = g->m;
	sb->code = o->code ? o->code : ec_default_kind(g->k, g->m);
	sb->w = o->w ? o->w : default_w(sb->code, g->k, g->m);
	sb->packet_size = ec_kind_is_bitmatrix(sb->code)
	                  ? (o->packet_size ? o->packet_size : VOLUME_DEFAULT_PACKET_SIZE) : 0;
	sb->strip_size = o->strip_size ? o->strip_size : VOLUME_DEFAULT_STRIP_SIZE;
	sb->checksum = checksum_alg_from_name(o->checksum ? o->checksum : CHECKSUM_DEFAULT);
	if (!sb->checksum) {
		char *choices = volume_checksum_choices();
		*message = g_strdup_printf("unknown checksum '%s' (choose %s)", o->checksum,
		                           choices);
		g_free(choices);
		return -EINVAL;
	}
	/* Refuse a code or strip size that cannot work before any member is
	 * touched: bad options must leave empty members empty. */
	ec_params p = { .kind = sb->code, .k = sb->k, .m = sb->m, .w = sb->w,
	                .packet_size = sb->packet_size };
	ec_code *code;
	crc = ec_create(&p, &code);
	if (crc < 0) {
		*message = invalid_code_message(&p);
		return -EINVAL;
	}
	size_t strip = sb->strip_size;
	crc = fit_strip(&strip, ec_block_align(code), o->strip_size != 0, sb->code, message);
	ec_destroy(code);
	if (crc < 0)
		return crc;
	sb->strip_size = strip;
	sb->created = time(NULL);
	if (RAND_bytes(sb->uuid, 16) != 1 || RAND_bytes(sb->key, sizeof(sb->key)) != 1) {
		*message = g_strdup("cannot get random bytes for the volume identity");
		return -EIO;
	}
	sb->uuid[6] = (sb->uuid[6] & 0x0f) | 0x40; /* RFC 4122 version 4 */
	sb->uuid[8] = (sb->uuid[8] & 0x3f) | 0x80;
	for (int i = 0; i < n; i++) {
		sb->index = i;
		/* No volume yet (v NULL): creation is not faulted, but counted and
		 * recorded (ECFS_RECORD) as member i. */
		int rc = mop_mkdirat(NULL, i, pr[i].rootfd, ECFS_META_DIR, 0700);
		if (rc == -EEXIST)
			rc = 0;
		if (rc == 0 && (pr[i].metafd = openat(pr[i].rootfd, ECFS_META_DIR,
		                                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		                                      O_CLOEXEC)) < 0)
			rc = -errno;
		if (rc == 0)
			rc = superblock_write(NULL, i, pr[i].metafd, sb);
		if (rc < 0) {
			*message = g_strdup_printf("cannot write the superblock of member %s: %s",
			                           pr[i].path, g_strerror(-rc));
			return rc;
		}
		pr[i].sb = *sb;
		pr[i].state = P_OK;
		pr[i].slot = i;
	}
	char uuid[37];
	uuid_format(sb->uuid, uuid);
	ecfs_log(LOG_INFO, "created volume %s: k=%d m=%d code=%s w=%d strip_size=%llu checksum=%s",
	         uuid, sb->k, sb->m, ec_kind_name(sb->code), sb->w,
	         (unsigned long long)sb->strip_size, checksum_alg_name(sb->checksum));
	return 0;
}
