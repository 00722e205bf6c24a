/* SPDX-License-Identifier: MIT */
/*
 * The -o options of the daemon in one table, their parser and usage, and
 * the defaults of a volume's settings (volume_options.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "checksum.h"
#include "superblock.h"
#include "volume_options.h"

#define STR G_STRINGIFY

const volume_option volume_option_table[VOPT_COUNT] = {
	[VOPT_K] = { "k", "K", VOPT_TYPE_NUMBER, .lo = 1, .hi = 255, .superblock = true,
		.help = "data members (needed to create a volume)" },
	[VOPT_M] = { "m", "M", VOPT_TYPE_NUMBER, .lo = 1, .hi = 255, .superblock = true,
		.help = "parity members; k+m = number of members" },
	[VOPT_FORMAT] = { "format", "N", VOPT_TYPE_NUMBER, STR(SUPERBLOCK_VERSION), 2,
		SUPERBLOCK_VERSION, .superblock = true, .help = "on-member format of a new "
		"volume (docs/FORMAT.md): 3 keeps a checksum per 4 KiB of each strip, so "
		"small reads read and verify only what they need; 2 is read by older builds" },
	[VOPT_CODE] = { "code", "NAME", VOPT_TYPE_CODE, .superblock = true,
		.help = "code for new files (default: the volume's; a new volume takes "
		"raid6-pq for m=2 on a CPU without GFNI, else rs-cauchy)" },
	[VOPT_W] = { "w", "W", VOPT_TYPE_NUMBER, .lo = 1, .hi = 64, .superblock = true,
		.help = "word size of the code (default: the code's)" },
	[VOPT_STRIP] = { "strip", "SIZE", VOPT_TYPE_SIZE, STR(VOLUME_DEFAULT_STRIP_KIB) "K",
		.superblock = true, .help = "bytes per strip of new files, suffix K/M/G; a "
		"multiple of 64 and of the code's alignment, at most 64M (or the volume's, "
		"up to 1G)" },
	[VOPT_PACKET] = { "packet", "SIZE", VOPT_TYPE_SIZE, STR(VOLUME_DEFAULT_PACKET_KIB) "K",
		.superblock = true, .help = "packet size of bit-matrix codes" },
	[VOPT_CHECKSUM] = { "checksum", "ALG", VOPT_TYPE_CHECKSUM, CHECKSUM_DEFAULT,
		.superblock = true, .help = "strip checksum of new files" },
	[VOPT_RO] = { "ro", NULL, VOPT_TYPE_FLAG,
		.help = "mount read-only, change nothing on members" },
	/* about a tenth of what a tmpfs member moves: foreground I/O stays
	 * responsive */
	[VOPT_HEAL_RATE] = { "heal_rate", "MB/s", VOPT_TYPE_NUMBER, "64", 0, 1000000, "no limit",
		.help = "pace of the online rebuild of a member that returns or is replaced" },
	/* a scrub reads every strip of the volume: slower than a rebuild */
	[VOPT_SCRUB_RATE] = { "scrub_rate", "MB/s", VOPT_TYPE_NUMBER, "32", 0, 1000000,
		"no limit", .help = "pace of the online scrub (ecfs scrub): file data read "
		"per second" },
	[VOPT_NOHEAL] = { "noheal", NULL, VOPT_TYPE_FLAG,
		.help = "no online rebuild: such members stay failed until ecfs-fsck -y "
		"rebuilds them" },
	[VOPT_TIMEOUT] = { "timeout", "SECONDS", VOPT_TYPE_TIMEOUT, STR(VOLUME_DEFAULT_TIMEOUT_S),
		.zero = "never", .help = "a member whose I/O call has not returned after "
		"this long is failed" },
	[VOPT_WRITE_QUORUM] = { "write_quorum", "all|N", VOPT_TYPE_QUORUM, "all", 1, 64,
		.help = "all: every member gets every write; N (k < N <= k+m): a write may "
		"leave out members much slower than the others down to N, and the online "
		"heal catches them up (such a file survives N-k losses until then)" },
	[VOPT_EVENTS] = { "events", "PROGRAM", VOPT_TYPE_PATH,
		.help = "runs PROGRAM (an absolute path, as root) with ECFS_EVENT, ECFS_MEMBER, "
		"ECFS_PATH and ECFS_DETAIL in its environment when a member fails, is back "
		"or healed, on a checksum error, when the volume is full and when a scrub "
		"ends (at most one a minute of each kind and member)" },
	[VOPT_METRICS] = { "metrics", "FILE", VOPT_TYPE_PATH,
		.help = "writes the volume's state, counters and latencies to FILE (an "
		"absolute path) in Prometheus text format every 5 seconds and at each "
		"change of state, for node_exporter's textfile collector" },
	[VOPT_ENTRY_TIMEOUT] = { "entry_timeout", "T", VOPT_TYPE_SECONDS, "1", 0, 1e9,
		.help = "seconds the kernel keeps names and listings" },
	[VOPT_ATTR_TIMEOUT] = { "attr_timeout", "T", VOPT_TYPE_SECONDS, "1", 0, 1e9,
		.help = "seconds it keeps attributes" },
	[VOPT_NEGATIVE_TIMEOUT] = { "negative_timeout", "T", VOPT_TYPE_SECONDS, "0", 0, 1e9,
		.help = "seconds it keeps that a name does not exist" },
	[VOPT_KERNEL_CACHE] = { "kernel_cache", NULL, VOPT_TYPE_FLAG,
		.help = "keep a file's page cache across opens" },
	[VOPT_AUTO_CACHE] = { "auto_cache", NULL, VOPT_TYPE_FLAG,
		.help = "keep it while the file's size and mtime stand" },
	[VOPT_DIRECT_IO] = { "direct_io", NULL, VOPT_TYPE_FLAG,
		.help = "every open bypasses the page cache" },
	[VOPT_TUNE_SPIN] = { "tune.spin", "MICROSECONDS", VOPT_TYPE_NUMBER,
		STR(VOLUME_DEFAULT_SPIN_US), 0, 100000, "never", .tuning = true,
		.help = "after a batch of member calls, the thread that makes them and a "
		"request waiting for them stay awake this long (yielding the CPU) before "
		"they sleep" },
	[VOPT_TUNE_HEDGE] = { "tune.hedge", "on|off", VOPT_TYPE_ON_OFF, "on", .tuning = true,
		.help = "on: a read around a slow member asks one member more when its "
		"first answers are late; off: it waits for them" },
	[VOPT_TUNE_SLOW_READAROUND] = { "tune.slow_readaround", "on|off", VOPT_TYPE_ON_OFF, "on",
		.tuning = true, .help = "on: reads go around a member much slower than the "
		"others, decoding from the rest; off: they wait for it" },
	[VOPT_TUNE_LISTING_BATCH] = { "tune.listing_batch", "NAMES", VOPT_TYPE_NUMBER,
		STR(VOLUME_DEFAULT_LISTING_BATCH), 16, 1048576, .tuning = true,
		.help = "an open directory holds this many of its names at most, and reads "
		"the members again for the names past them" },
	[VOPT_TUNE_SMALL_LOG] = { "tune.small_log", "on|off", VOPT_TYPE_ON_OFF, "on",
		.tuning = true, .help = "on: an overwrite smaller than a stripe goes to a log "
		"mirrored on m+1 members and is applied to the stripes later; off: it is a "
		"read-modify-write of its stripe" },
	[VOPT_TUNE_SMALL_LOG_MIB] = { "tune.small_log_mib", "MIB", VOPT_TYPE_NUMBER,
		STR(VOLUME_DEFAULT_SMALL_LOG_MIB), 1, 65536, .tuning = true,
		.help = "an open file's small-write log is applied to its stripes once its "
		"copies hold this many MiB (or 512 records per MiB)" },
};

volume_runtime volume_runtime_defaults(void)
{
	return (volume_runtime){ .timeout_ms = VOLUME_DEFAULT_TIMEOUT_MS,
	                         .spin_us = VOLUME_DEFAULT_SPIN_US,
	                         .listing_batch = VOLUME_DEFAULT_LISTING_BATCH,
	                         .small_log = true,
	                         .small_log_mib = VOLUME_DEFAULT_SMALL_LOG_MIB };
}

int volume_runtime_check(const volume_runtime *r, int k, int n, char **message)
{
	if (r->write_quorum && (r->write_quorum <= k || r->write_quorum > n)) {
		*message = g_strdup_printf("write_quorum=%d: give all or a number of members "
		                           "from k+1 = %d to n = %d", r->write_quorum, k + 1, n);
		return -EINVAL;
	}
	return 0;
}

bool volume_parse_timeout(const char *s, unsigned *ms)
{
	char *end;
	double secs = strtod(s, &end);

	if (end == s || *end || !(secs >= 0 && secs <= 86400) || (secs > 0 && secs < 0.01))
		return false;
	*ms = (unsigned)(secs * 1000 + 0.5);
	return true;
}

/* Parses a positive size with an optional K, M or G (binary) suffix. */
static bool parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return false;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end != '\0' || n == 0 || n > (SIZE_MAX >> shift))
		return false;
	*out = (size_t)(n << shift);
	return true;
}

static bool parse_number(const char *s, double lo, double hi, long long *out)
{
	char *end;
	errno = 0;
	long long n = strtoll(s, &end, 10);
	if (errno || end == s || *end != '\0' || n < lo || n > hi)
		return false;
	*out = n;
	return true;
}

static bool parse_seconds(const char *s, double lo, double hi, double *out)
{
	char *end;
	double t = strtod(s, &end);
	if (end == s || *end || !(t >= lo && t <= hi))
		return false;
	*out = t;
	return true;
}

char *volume_checksum_choices(void)
{
	GString *s = g_string_new(NULL);
	/* the ids count up from 1 and are never renumbered (checksum.h) */
	for (checksum_alg a = 1; checksum_alg_size(a); a++)
		g_string_append_printf(s, "%s%s", a == 1 ? "" : checksum_alg_size(a + 1)
		                       ? ", " : " or ", checksum_alg_name(a));
	return g_string_free(s, FALSE);
}

/* The names of the codes, "rs-vandermonde, rs-cauchy, ...", g_malloc'd. */
static char *code_choices(const char *sep)
{
	GString *s = g_string_new(NULL);
	for (int k = 1; k < 256; k++) {
		const char *name = ec_kind_name((ec_kind)k);
		if (name)
			g_string_append_printf(s, "%s%s", s->len ? sep : "", name);
	}
	return g_string_free(s, FALSE);
}

/* Parses text as a value of option o into *out. */
static bool parse_value(const volume_option *o, const char *text, volume_option_value *out)
{
	unsigned ms;

	switch (o->type) {
	case VOPT_TYPE_FLAG:
		out->number = 1;
		return true;
	case VOPT_TYPE_NUMBER:
		return parse_number(text, o->lo, o->hi, &out->number);
	case VOPT_TYPE_SIZE:
		return parse_size(text, &out->size);
	case VOPT_TYPE_SECONDS:
		return parse_seconds(text, o->lo, o->hi, &out->seconds);
	case VOPT_TYPE_TIMEOUT:
		if (!volume_parse_timeout(text, &ms))
			return false;
		out->number = ms;
		return true;
	case VOPT_TYPE_ON_OFF:
		out->number = !strcmp(text, "on");
		return out->number || !strcmp(text, "off");
	case VOPT_TYPE_CODE:
		out->number = ec_kind_from_name(text);
		return out->number != 0;
	case VOPT_TYPE_CHECKSUM:
		return checksum_alg_from_name(text) != 0;
	case VOPT_TYPE_QUORUM:
		out->number = 0;
		return !strcmp(text, "all") || parse_number(text, o->lo, o->hi, &out->number);
	case VOPT_TYPE_PATH:
		return text[0] == '/';
	}
	return false;
}

/* What option o takes, for the refusal of a value, g_malloc'd. */
static char *what_it_takes(const volume_option *o)
{
	char *list, *s;

	switch (o->type) {
	case VOPT_TYPE_NUMBER:
		return g_strdup_printf("give a whole number from %.0f to %.0f", o->lo, o->hi);
	case VOPT_TYPE_SIZE:
		return g_strdup("not a size (a positive number, suffix K, M or G)");
	case VOPT_TYPE_SECONDS:
		return g_strdup_printf("give seconds, from %g", o->lo);
	case VOPT_TYPE_TIMEOUT:
		return g_strdup(VOLUME_TIMEOUT_RANGE);
	case VOPT_TYPE_ON_OFF:
		return g_strdup("give on or off");
	case VOPT_TYPE_CODE:
		list = code_choices(", ");
		s = g_strdup_printf("unknown code (choose %s)", list);
		g_free(list);
		return s;
	case VOPT_TYPE_CHECKSUM:
		list = volume_checksum_choices();
		s = g_strdup_printf("unknown checksum (choose %s)", list);
		g_free(list);
		return s;
	case VOPT_TYPE_QUORUM:
		return g_strdup("give all or a number of members from k+1 to k+m");
	case VOPT_TYPE_PATH:
		return g_strdup("give an absolute path");
	case VOPT_TYPE_FLAG:
		break;
	}
	return g_strdup("takes no value");
}

bool volume_option_parse(int id, const char *text, volume_option_value *out, char **why)
{
	const volume_option *o = &volume_option_table[id];

	memset(out, 0, sizeof(*out));
	*why = NULL;
	out->given = text != NULL;
	out->text = text ? text : o->def;
	if (!out->text)
		return true; /* not given, no default: unset */
	if (o->type == VOPT_TYPE_FLAG && !text)
		return true;
	if (parse_value(o, out->text, out))
		return true;
	char *what = what_it_takes(o);
	*why = g_strdup_printf("%s=%s: %s", o->name, out->text, what);
	g_free(what);
	return false;
}

/* The column the end of s is at. */
static size_t column(const GString *s)
{
	const char *nl = strrchr(s->str, '\n');
	return s->len - (nl ? (size_t)(nl + 1 - s->str) : 0);
}

/* Appends words to s, wrapped at 80 columns with an indent of 27 (a BEL
 * is a space that does not break). */
static void wrap(GString *s, const char *words)
{
	gchar **w = g_strsplit(words, " ", -1);
	for (gchar **p = w; *p; p++) {
		if (p != w && column(s) + 1 + strlen(*p) > 79)
			g_string_append_printf(s, "\n%27s", "");
		else if (p != w)
			g_string_append_c(s, ' ');
		g_string_append(s, *p);
	}
	g_strfreev(w);
	g_strdelimit(s->str, "\a", ' ');
}

void volume_options_usage(FILE *out)
{
	GString *s = g_string_new(NULL);
	for (int id = 0; id < VOPT_COUNT; id++) {
		const volume_option *o = &volume_option_table[id];
		if (o->tuning)
			continue;
		g_string_append_printf(s, "    -o %s%s%s", o->name, o->value ? "=" : "",
		                       o->value ? o->value : "");
		if (column(s) > 26)
			g_string_append_printf(s, "\n%27s", "");
		else
			g_string_append_printf(s, "%*s", (int)(27 - column(s)), "");
		char *list = o->type == VOPT_TYPE_CODE ? code_choices(" ")
		             : o->type == VOPT_TYPE_CHECKSUM ? volume_checksum_choices() : NULL;
		char *help = g_strdup_printf("%s%s%s%s%s%s%s%s", o->help, list ? ": " : "",
		                             list ? list : "", o->def ? " (default\a" : "",
		                             o->def ? o->def : "", o->zero ? ", 0 = " : "",
		                             o->zero ? o->zero : "", o->def ? ")" : "");
		wrap(s, help);
		g_string_append_c(s, '\n');
		g_free(help);
		g_free(list);
	}
	g_string_append(s, "    -o tune.NAME=VALUE     switches for benchmarks and A/B "
	                   "comparisons\n                           (docs/TUNING.md)\n");
	fputs(s->str, out);
	g_string_free(s, TRUE);
}

char *volume_tuning_names(void)
{
	GString *s = g_string_new(NULL);
	for (int i = 0; i < VOPT_COUNT; i++)
		if (volume_option_table[i].tuning)
			g_string_append_printf(s, "%s%s", s->len ? ", " : "",
			                       volume_option_table[i].name + 5);
	return g_string_free(s, FALSE);
}

bool volume_runtime_tune(volume_runtime *r, const char *setting, char **why)
{
	const char *eq = strchr(setting, '=');
	size_t len = eq ? (size_t)(eq - setting) : strlen(setting);
	const char *name = strncmp(setting, "tune.", 5) == 0 ? setting + 5 : setting;
	int id = -1;

	len -= (size_t)(name - setting);
	for (int i = 0; i < VOPT_COUNT; i++)
		if (volume_option_table[i].tuning &&
		    strncmp(volume_option_table[i].name + 5, name, len) == 0 &&
		    volume_option_table[i].name[5 + len] == '\0')
			id = i;
	if (id < 0 || !eq) {
		char *names = volume_tuning_names();
		*why = g_strdup_printf("%s: give NAME=VALUE, NAME one of %s (docs/TUNING.md)",
		                       setting, names);
		g_free(names);
		return false;
	}
	volume_option_value val;
	if (!volume_option_parse(id, eq + 1, &val, why))
		return false;
	volume_runtime_set_tuning(r, id, &val);
	return true;
}

void volume_runtime_set_tuning(volume_runtime *r, int id, const volume_option_value *val)
{
	if (id == VOPT_TUNE_SPIN)
		r->spin_us = (unsigned)val->number;
	else if (id == VOPT_TUNE_HEDGE)
		r->no_hedge = !val->number;
	else if (id == VOPT_TUNE_SLOW_READAROUND)
		r->no_read_around = !val->number;
	else if (id == VOPT_TUNE_LISTING_BATCH)
		r->listing_batch = (unsigned)val->number;
	else if (id == VOPT_TUNE_SMALL_LOG)
		r->small_log = val->number != 0;
	else if (id == VOPT_TUNE_SMALL_LOG_MIB)
		r->small_log_mib = (unsigned)val->number;
}
