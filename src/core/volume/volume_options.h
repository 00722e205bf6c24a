/* SPDX-License-Identifier: MIT */
/*
 * The options of a volume and the -o options of the daemon, each defined
 * once.
 *
 * volume_open() takes a volume_options in three parts: the geometry (k and
 * m), the defaults for files created from now on, and the settings of
 * this run.  In the first two a field left 0 (NULL) is unset: the
 * superblock's value is taken, or for a new volume the built-in default
 * below.  The settings are never stored and never unset: each applies as
 * it is (0 is no timeout, no spin, every member written); programs start
 * from volume_runtime_defaults().
 *
 * volume_option_table lists every -o option of the daemon: its name, the
 * kind of value, the default, the range, one help line, and whether the
 * superblock stores it.  The daemon's parser and --help come from it;
 * tests/fs/test_options.py holds man/ecfs.8, README.md and docs/TUNING.md
 * to it.  Options named tune.* are switches for benchmarks and A/B
 * comparisons (docs/TUNING.md), not in the user's list.
 */
#ifndef ECFS_VOLUME_OPTIONS_H
#define ECFS_VOLUME_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ec.h"

/* Built-in defaults, in the units the options are written in. */
#define VOLUME_DEFAULT_STRIP_KIB 64
#define VOLUME_DEFAULT_PACKET_KIB 2
#define VOLUME_DEFAULT_TIMEOUT_S 10
/* A request's next batch comes within it: docs/TUNING.md. */
#define VOLUME_DEFAULT_SPIN_US 200
/* Names an open directory holds at most: docs/TUNING.md. */
#define VOLUME_DEFAULT_LISTING_BATCH 8192
/* Logged bytes an open file holds before its log is applied. */
#define VOLUME_DEFAULT_SMALL_LOG_MIB 256
#define VOLUME_DEFAULT_STRIP_SIZE ((size_t)VOLUME_DEFAULT_STRIP_KIB * 1024)
#define VOLUME_DEFAULT_PACKET_SIZE ((size_t)VOLUME_DEFAULT_PACKET_KIB * 1024)
#define VOLUME_DEFAULT_TIMEOUT_MS (VOLUME_DEFAULT_TIMEOUT_S * 1000)

/* The volume's shape; 0 = the superblock's (a new volume needs both). */
typedef struct volume_geometry {
	int k, m;
	int format;  /* docs/FORMAT.md's version for a new volume; 0 = the newest */
} volume_geometry;

/* Defaults for files created from now on; 0 (NULL) = the superblock's. */
typedef struct volume_file_defaults {
	ec_kind code;
	int w;                 /* the word size; unset with a code other than
	                        * the superblock's: the code's own */
	size_t packet_size;    /* bit-matrix codes only */
	size_t strip_size;     /* bytes per strip */
	const char *checksum;  /* checksum algorithm name */
} volume_file_defaults;

/* How this run of the volume works: nothing here is unset. */
typedef struct volume_runtime {
	bool read_only;        /* do not take the write lock or create anything */
	unsigned timeout_ms;   /* member I/O timeout (memberio.h); 0 = none */
	bool give_up_at_bound; /* ecfs-fsck: a member whose read call runs past its
	                        * bound is given up then (memberio_give_up_at_bound),
	                        * and so is one whose first look does (probe) */
	unsigned spin_us;      /* the relay stays awake this long (memberio_set_spin);
	                        * 0 = never */
	int write_quorum;      /* writes may leave slow members out down to this many
	                        * (stripe_leave_out_slow); 0 = all, every usable member */
	bool no_read_around;   /* read a slow member like the others (stripe_fetch.c) */
	bool no_hedge;         /* reads around it never ask a spare member (stripe_hedge.c) */
	unsigned listing_batch; /* names an open directory holds (listing_batch.h) */
	bool small_log;        /* small overwrites go to the mirrored log (ecfile_log.c) */
	unsigned small_log_mib; /* its copies' bound per open file */
} volume_runtime;

typedef struct volume_options {
	volume_geometry geometry;
	volume_file_defaults files;
	volume_runtime run;
} volume_options;

/* The settings of the options' defaults (the daemon's, ecfs-fsck's). */
volume_runtime volume_runtime_defaults(void);

/* Refuses settings that do not fit a volume of n members, k of them data:
 * a write quorum outside k+1..n.  0, or -EINVAL with *message. */
int volume_runtime_check(const volume_runtime *r, int k, int n, char **message);

/* Reads a member I/O timeout given in seconds (ecfs -o timeout=,
 * ecfs-fsck --timeout=) into *ms; false, and *ms untouched, unless it is
 * what VOLUME_TIMEOUT_RANGE says, the words both programs refuse it with. */
#define VOLUME_TIMEOUT_RANGE "give seconds, from 0.01 to 86400 (0 = never)"
bool volume_parse_timeout(const char *s, unsigned *ms);

/* ---- the -o options of the daemon ---- */

enum volume_option_id {
	VOPT_K, VOPT_M, VOPT_FORMAT, VOPT_CODE, VOPT_W, VOPT_STRIP, VOPT_PACKET, VOPT_CHECKSUM,
	VOPT_RO, VOPT_HEAL_RATE, VOPT_SCRUB_RATE, VOPT_NOHEAL, VOPT_TIMEOUT, VOPT_WRITE_QUORUM,
	VOPT_EVENTS, VOPT_METRICS,
	VOPT_ENTRY_TIMEOUT, VOPT_ATTR_TIMEOUT, VOPT_NEGATIVE_TIMEOUT,
	VOPT_KERNEL_CACHE, VOPT_AUTO_CACHE, VOPT_DIRECT_IO,
	VOPT_TUNE_SPIN, VOPT_TUNE_HEDGE, VOPT_TUNE_SLOW_READAROUND, VOPT_TUNE_LISTING_BATCH,
	VOPT_TUNE_SMALL_LOG, VOPT_TUNE_SMALL_LOG_MIB,
	VOPT_COUNT
};

typedef enum volume_option_type {
	VOPT_TYPE_FLAG,     /* no value: given or not */
	VOPT_TYPE_NUMBER,   /* a whole number from lo to hi */
	VOPT_TYPE_SIZE,     /* bytes: a positive number, suffix K, M or G (of 1024) */
	VOPT_TYPE_SECONDS,  /* seconds from lo to hi, fractions allowed */
	VOPT_TYPE_TIMEOUT,  /* the member I/O timeout (volume_parse_timeout), in ms */
	VOPT_TYPE_ON_OFF,   /* on or off */
	VOPT_TYPE_CODE,     /* the name of a code (lib/ec.h) */
	VOPT_TYPE_CHECKSUM, /* the name of a checksum (checksum.h) */
	VOPT_TYPE_QUORUM,   /* all (0), or a number of members from lo to hi */
	VOPT_TYPE_PATH,     /* an absolute path (the daemon leaves its directory) */
} volume_option_type;

typedef struct volume_option {
	const char *name;      /* as after -o */
	const char *value;     /* the value in the usage ("SIZE"); NULL for a flag */
	volume_option_type type;
	const char *def;       /* the default as it is written; NULL: none, or the
	                        * help line says */
	double lo, hi;         /* range of NUMBER, SECONDS and QUORUM */
	const char *zero;      /* what 0 means, if it means more than none */
	bool superblock;       /* a new volume's superblock stores it */
	bool tuning;           /* a tune.* switch (docs/TUNING.md) */
	const char *help;      /* one line */
} volume_option;

extern const volume_option volume_option_table[VOPT_COUNT];

/* Sets one tune.* switch of r from "NAME=VALUE" (NAME with or without its
 * "tune." prefix), for programs that take the switches one by one
 * (ecfs-fsck --tune).  False, with *why g_malloc'd, if setting names no
 * switch or its value is not one the switch takes. */
bool volume_runtime_tune(volume_runtime *r, const char *setting, char **why);
/* The tune.* switches' names without the prefix, "spin, hedge, ...",
 * g_malloc'd. */
char *volume_tuning_names(void);

/* One option's value, parsed. */
typedef struct volume_option_value {
	bool given;            /* on the command line, else the default (if any) */
	long long number;      /* NUMBER; QUORUM (0 = all); FLAG and ON_OFF (1 = on);
	                        * CODE (its ec_kind); TIMEOUT (ms) */
	size_t size;           /* SIZE */
	double seconds;        /* SECONDS */
	const char *text;      /* the text parsed (CHECKSUM's name, PATH); NULL: none */
} volume_option_value;

/* Parses option id from text as given (NULL: not given; for a flag, any
 * non-NULL text is given), else from its default.  False, with *why a
 * g_malloc'd line naming the option and what it takes, if text is not a
 * value of the option. */
bool volume_option_parse(int id, const char *text, volume_option_value *out, char **why);
/* Sets the runtime field of tune.* switch id from its parsed value (one
 * home for what each switch sets: the daemon's -o and ecfs-fsck --tune). */
void volume_runtime_set_tuning(volume_runtime *r, int id, const volume_option_value *val);
/* The checksum names for a message: "sha256, blake2b, ... or poly1305",
 * g_malloc'd. */
char *volume_checksum_choices(void);
/* The ecfs options part of the daemon's --help. */
void volume_options_usage(FILE *out);

#endif
