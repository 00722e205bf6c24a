/* SPDX-License-Identifier: MIT */
/*
 * ecfs: the FUSE daemon.  `ecfs [options] MEMBER:MEMBER:... MOUNTPOINT`
 * mounts the erasure-coded volume made of the member directories.
 *
 * Everything that can be wrong with the command line or the volume is
 * found before the mount and reported as one line on stderr with exit
 * status 1.  The daemon detaches itself rather than through
 * fuse_daemonize(): the volume runs worker threads, which a fork after
 * volume_open() would lose, so the process forks first, and the parent
 * waits until the child has opened the volume and mounted, then exits
 * with the child's verdict.  Options are parsed with fuse_opt; ours
 * (with the kernel cache options of libfuse's path API, which the
 * low-level API leaves to the filesystem) are removed and the rest go to
 * libfuse (fuse_parse_cmdline for -f/-d/-s and the mountpoint,
 * fuse_session_new for mount options).
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "fs_ops.h"

#include "checksum.h"
#include "ec.h"
#include "ecfile.h"
#include "fs_dirsaved.h"
#include "log.h"
#include "heal.h"
#include "intent.h"
#include "journal.h"
#include "volume.h"

/* MB/s of the online heal unless -o heal_rate says otherwise: about a
 * tenth of what a tmpfs member moves, leaving foreground I/O responsive. */
#define DEFAULT_HEAL_RATE 64

/* Seconds the kernel keeps names and attributes unless told otherwise. */
#define DEFAULT_ENTRY_TIMEOUT 1.0
#define DEFAULT_ATTR_TIMEOUT 1.0

#ifndef ECFS_VERSION
#define ECFS_VERSION "unknown"
#endif

/* What our -o options and positional arguments say, as given. */
struct cli {
	char *members;   /* the MEMBER:MEMBER:... argument */
	int positional;  /* non-option arguments seen */
	char *k, *m, *code, *w, *strip, *packet, *checksum, *heal_rate, *timeout;
	char *slow_readaround, *hedge, *write_quorum, *spin;
	char *attr_timeout, *entry_timeout, *negative_timeout;
	int kernel_cache, auto_cache, direct_io; /* set by fuse_opt */
	bool read_only;
	int noheal;      /* set by fuse_opt, which stores an int */
	bool help, version;
};

enum { KEY_HELP, KEY_VERSION, KEY_RO };

#define CLI_OPT(t, field) { t, offsetof(struct cli, field), 0 }

static const struct fuse_opt cli_spec[] = {
	CLI_OPT("k=%s", k),
	CLI_OPT("m=%s", m),
	CLI_OPT("code=%s", code),
	CLI_OPT("w=%s", w),
	CLI_OPT("strip=%s", strip),
	CLI_OPT("packet=%s", packet),
	CLI_OPT("checksum=%s", checksum),
	CLI_OPT("heal_rate=%s", heal_rate),
	CLI_OPT("timeout=%s", timeout),
	CLI_OPT("slow_readaround=%s", slow_readaround),
	CLI_OPT("hedge=%s", hedge),
	CLI_OPT("write_quorum=%s", write_quorum),
	CLI_OPT("spin=%s", spin),
	CLI_OPT("attr_timeout=%s", attr_timeout),
	CLI_OPT("entry_timeout=%s", entry_timeout),
	CLI_OPT("negative_timeout=%s", negative_timeout),
	{ "noheal", offsetof(struct cli, noheal), 1 },
	{ "kernel_cache", offsetof(struct cli, kernel_cache), 1 },
	{ "auto_cache", offsetof(struct cli, auto_cache), 1 },
	{ "direct_io", offsetof(struct cli, direct_io), 1 },
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END
};

static int cli_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	struct cli *c = data;
	switch (key) {
	case KEY_HELP:
		c->help = true;
		return 0;
	case KEY_VERSION:
		c->version = true;
		return 0;
	case KEY_RO:
		c->read_only = true;
		return 1; /* libfuse mounts read-only too */
	case FUSE_OPT_KEY_NONOPT:
		/* The first is the member list; the mountpoint goes on to
		 * fuse_parse_cmdline, which rejects any further one. */
		if (c->positional++ == 0) {
			c->members = strdup(arg);
			return c->members ? 0 : -1;
		}
		return 1;
	default:
		return 1;
	}
}

static void usage(const char *prog)
{
	printf("usage: %s [options] MEMBER:MEMBER:...:MEMBER MOUNTPOINT\n\n"
	       "Mounts an erasure-coded volume made of k+m member directories.\n"
	       "The first mount of empty directories creates the volume.\n\n"
	       "ecfs options:\n"
	       "    -o k=K                 data members (needed to create a volume)\n"
	       "    -o m=M                 parity members; k+m = number of members\n"
	       "    -o code=NAME           code for new files (default raid6-pq for m=2\n"
	       "                           on a CPU without GFNI, else rs-cauchy):\n"
	       "                           rs-vandermonde rs-cauchy raid6-pq cauchy-orig\n"
	       "                           cauchy-good liberation blaum-roth liber8tion\n"
	       "                           evenodd rdp star\n"
	       "    -o w=W                 word size of the code (default: the code's)\n"
	       "    -o strip=SIZE          bytes per strip (default 64K), suffix K/M/G;\n"
	       "                           a multiple of 64 and of the code's alignment\n"
	       "    -o packet=SIZE         packet size of bit-matrix codes (default 2K)\n"
	       "    -o checksum=ALG        strip checksum: gmac (default), poly1305,\n"
	       "                           sha256, blake2b or blake2s\n"
	       "    -o ro                  mount read-only, change nothing on members\n"
	       "    -o heal_rate=MB/s      pace of the online rebuild of a member that\n"
	       "                           returns or is replaced (default %d, 0 = no limit)\n"
	       "    -o noheal              no online rebuild: such members stay failed\n"
	       "                           until ecfs-fsck -y rebuilds them\n"
	       "    -o timeout=SECONDS     a member whose I/O call has not returned after\n"
	       "                           this long is failed (default %g, 0 = never)\n"
	       "    -o slow_readaround=on|off\n"
	       "                           on (default): reads go around a member much\n"
	       "                           slower than the others, decoding from the rest\n"
	       "    -o hedge=on|off        on (default): such a read asks one member more\n"
	       "                           when its first answers are late, and goes on\n"
	       "                           with the first that suffice\n"
	       "    -o write_quorum=all|N  all (default): every member gets every write;\n"
	       "                           N (k < N <= k+m): a write may leave out members\n"
	       "                           much slower than the others down to N, marking\n"
	       "                           their chunks stale; the online heal catches\n"
	       "                           them up (a file so written survives N-k losses\n"
	       "                           until then)\n"
	       "    -o spin=MICROSECONDS   after a batch of member calls, the thread that\n"
	       "                           makes them, and a request waiting for them, stay\n"
	       "                           awake this long (yielding the CPU) before they\n"
	       "                           sleep: a wake-up costs more (default %d, 0 = never)\n"
	       "    -o entry_timeout=T     seconds the kernel keeps names, listings (default %g)\n"
	       "    -o attr_timeout=T      seconds it keeps attributes (default %g)\n"
	       "    -o negative_timeout=T  seconds it keeps that a name does not exist\n"
	       "                           (default 0)\n"
	       "    -o kernel_cache        keep a file's page cache across opens\n"
	       "    -o auto_cache          keep it while the file's size and mtime stand\n"
	       "    -o direct_io           every open bypasses the page cache\n"
	       "    -h, --help             this help, then libfuse's\n"
	       "    -V, --version          versions of ecfs and libfuse\n\n"
	       "ecfs always mounts with -o default_permissions: the kernel checks\n"
	       "permissions, the daemon does not.  Code, w, strip, packet and checksum\n"
	       "apply to files created from now on; each file keeps its own.\n\n",
	       prog, DEFAULT_HEAL_RATE, VOLUME_DEFAULT_TIMEOUT_MS / 1000.0, VOLUME_DEFAULT_SPIN_US,
	       DEFAULT_ENTRY_TIMEOUT, DEFAULT_ATTR_TIMEOUT);
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

static bool parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	errno = 0;
	long n = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || n < lo || n > hi)
		return false;
	*out = (int)n;
	return true;
}

/* An on|off option: false unless s is one of them (NULL: not given, on);
 * *off set for off. */
static bool parse_on_off(const char *s, bool *off)
{
	if (s && strcmp(s, "on") && strcmp(s, "off"))
		return false;
	*off = s && !strcmp(s, "off");
	return true;
}

/* Prints one line naming the problem and returns false. */
static bool fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ecfs: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return false;
}

/* Splits the member list and makes each path absolute (so the health
 * report and the log name them unambiguously). */
static bool parse_members(const char *list, GPtrArray *paths)
{
	if (!list)
		return fail("no member directories given (see ecfs --help)");
	gchar **parts = g_strsplit(list, ":", -1);
	bool ok = true;
	for (gchar **p = parts; *p && ok; p++) {
		if (**p == '\0') {
			ok = fail("empty member name in '%s'", list);
			break;
		}
		/* A member that cannot be reached (a dead disk, a removed
		 * directory) is volume_open()'s to judge: up to m of them
		 * make a degraded mount.  A file where a member should be is
		 * a mistake on the command line. */
		char *abs = realpath(*p, NULL);
		struct stat st;
		if (!abs) {
			char *c = g_canonicalize_filename(*p, NULL);
			abs = strdup(c);
			g_free(c);
		} else if (stat(abs, &st) == 0 && !S_ISDIR(st.st_mode)) {
			ok = fail("member '%s' is not a directory", *p);
		}
		if (abs)
			g_ptr_array_add(paths, abs);
	}
	g_strfreev(parts);
	for (guint i = 0; ok && i < paths->len; i++)
		for (guint j = 0; j < i; j++)
			if (strcmp(paths->pdata[i], paths->pdata[j]) == 0)
				return fail("member '%s' is given twice", (char *)paths->pdata[i]);
	return ok;
}

/* Strips are a whole number of cache lines, which every SIMD kernel of
 * lib/ handles without a scalar tail. */
#define STRIP_GRANULE 64

/* Checks the code options before anything touches a member (volume_open
 * checks them again against the superblock, but a new volume's superblocks
 * are already written by then): a known checksum, a strip size in whole
 * granules, and a code that exists for k and m (with w if given, else with
 * the library's default w) whose block alignment divides the strip. */
static bool check_code_options(const volume_options *o)
{
	if (o->checksum && !checksum_alg_from_name(o->checksum))
		return fail("checksum=%s: unknown (choose gmac, poly1305, sha256, blake2b or blake2s)",
		            o->checksum);
	if (o->strip_size && o->strip_size % STRIP_GRANULE)
		return fail("strip=%zu: the strip size must be a multiple of %d bytes",
		            o->strip_size, STRIP_GRANULE);
	if (!o->k || !o->m)
		return true; /* an existing volume: k and m are the superblock's */
	ec_kind kind = o->code ? o->code : ec_default_kind(o->k, o->m);
	bool bitmatrix = ec_kind_is_bitmatrix(kind);
	ec_params p = { .kind = kind, .k = o->k, .m = o->m,
	                /* any packet size will do to test k, m and w */
	                .packet_size = bitmatrix ? (o->packet_size ? o->packet_size : 2048) : 0 };
	size_t align = 0;
	/* without w=, the volume takes the library's default for k and m */
	int err = p.w = o->w ? o->w : ec_kind_default_w(kind, o->k, o->m);
	ec_code *code;
	if (p.w > 0 && (err = ec_create(&p, &code)) == 0) {
		align = ec_block_align(code);
		ec_destroy(code);
	}
	if (!align) {
		if (o->w)
			return fail("code=%s does not work with k=%d m=%d w=%d: %s", ec_kind_name(kind),
			            o->k, o->m, o->w, ec_strerror(err));
		return fail("code=%s does not work with k=%d m=%d", ec_kind_name(kind), o->k, o->m);
	}
	if (o->w && o->strip_size && o->strip_size % align)
		return fail("strip=%zu is not a multiple of %zu, the block alignment of code %s "
		            "with w=%d", o->strip_size, align, ec_kind_name(kind), o->w);
	return true;
}

/* Turns the -o values into volume options, checking what can be checked
 * without the superblock. */
static bool build_options(const struct cli *c, int n, volume_options *o)
{
	memset(o, 0, sizeof *o);
	o->read_only = c->read_only;
	if (c->k && !parse_int(c->k, 1, 255, &o->k))
		return fail("k=%s: k must be a whole number from 1", c->k);
	if (c->m && !parse_int(c->m, 1, 255, &o->m))
		return fail("m=%s: m must be a whole number from 1", c->m);
	if (o->k && !o->m)
		o->m = n - o->k;
	if (o->m && !o->k)
		o->k = n - o->m;
	if ((o->k || o->m) && (o->k < 1 || o->m < 1 || o->k + o->m != n))
		return fail("k=%d, m=%d do not fit %d member%s: k+m must equal the number of members, "
		            "both at least 1", o->k, o->m, n, n == 1 ? "" : "s");
	if (c->code) {
		o->code = ec_kind_from_name(c->code);
		if (!o->code)
			return fail("code=%s: unknown code (see ecfs --help)", c->code);
	}
	if (c->w && !parse_int(c->w, 1, 64, &o->w))
		return fail("w=%s: w must be a whole number from 1 to 64", c->w);
	if (c->strip && !parse_size(c->strip, &o->strip_size))
		return fail("strip=%s: not a size (a positive number, suffix K, M or G)", c->strip);
	if (c->packet && !parse_size(c->packet, &o->packet_size))
		return fail("packet=%s: not a size (a positive number, suffix K, M or G)", c->packet);
	o->checksum = c->checksum;
	o->timeout_ms = VOLUME_DEFAULT_TIMEOUT_MS;
	if (c->timeout && !volume_parse_timeout(c->timeout, &o->timeout_ms))
		return fail("timeout=%s: " VOLUME_TIMEOUT_RANGE, c->timeout);
	if (!parse_on_off(c->slow_readaround, &o->no_read_around))
		return fail("slow_readaround=%s: give on or off", c->slow_readaround);
	if (!parse_on_off(c->hedge, &o->no_hedge))
		return fail("hedge=%s: give on or off", c->hedge);
	int spin = VOLUME_DEFAULT_SPIN_US;
	if (c->spin && !parse_int(c->spin, 0, 100000, &spin))
		return fail("spin=%s: give microseconds, from 0 (never) to 100000", c->spin);
	o->spin_us = (unsigned)spin;
	if (c->write_quorum && strcmp(c->write_quorum, "all")) {
		char lo[24] = "";
		if (o->k)
			snprintf(lo, sizeof lo, " = %d", o->k + 1);
		if (!parse_int(c->write_quorum, 1, 64, &o->write_quorum) ||
		    o->write_quorum <= o->k || o->write_quorum > n)
			return fail("write_quorum=%s: give all or a number of members from k+1%s to "
			            "%d, the number of members", c->write_quorum, lo, n);
		if (c->noheal && o->write_quorum < n)
			return fail("write_quorum=%s leaves slow members out of writes for the online "
			            "heal to catch up: it does not go with noheal", c->write_quorum);
	}
	return check_code_options(o);
}

/* Adds one -o option, escaping the commas and backslashes a value (the
 * member list) may contain. */
static int add_escaped_opt(struct fuse_args *args, const char *key, const char *value)
{
	GString *s = g_string_new(key);
	for (const char *p = value; *p; p++) {
		if (*p == ',' || *p == '\\')
			g_string_append_c(s, '\\');
		g_string_append_c(s, *p);
	}
	char *opt = g_strconcat("-o", s->str, NULL);
	int rc = fuse_opt_add_arg(args, opt);
	g_free(opt);
	g_string_free(s, TRUE);
	return rc;
}

/* The kernel caps FUSE read-ahead at the backing device's read_ahead_kb,
 * 128 KiB by default; as root, raise it to the 1 MiB the daemon asks for.
 * The mount's device number comes from /proc/self/mountinfo: stat() of the
 * mountpoint would wait for this very daemon to answer. */
static void raise_readahead(const char *mountpoint)
{
	if (geteuid() != 0)
		return;
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	if (!mi)
		return;
	char line[8192];
	unsigned maj = 0, min = 0;
	bool found = false;
	while (fgets(line, sizeof line, mi)) {
		unsigned a, b;
		char mnt[4096];
		/* id parent maj:min root mountpoint ... (the last match wins:
		 * ours is the newest mount on that point) */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &a, &b, mnt) == 3 &&
		    strcmp(mnt, mountpoint) == 0) {
			maj = a;
			min = b;
			found = true;
		}
	}
	fclose(mi);
	if (!found)
		return;
	char path[64];
	snprintf(path, sizeof path, "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	FILE *f = fopen(path, "we");
	if (f) {
		fprintf(f, "1024\n");
		fclose(f);
	}
}

/* Detaches: forks, and the parent waits on a pipe for the child's verdict
 * (one byte, 0 = mounted) and exits with it.  Returns the write end in the
 * child. */
static int detach_start(void)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fail("cannot create a pipe: %s", strerror(errno));
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		fail("cannot fork: %s", strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		close(pfd[1]);
		unsigned char verdict = 1;
		ssize_t n;
		do
			n = read(pfd[0], &verdict, 1);
		while (n < 0 && errno == EINTR);
		_exit(n == 1 ? verdict : 1);
	}
	close(pfd[0]);
	return pfd[1];
}

/* In the child, once mounted: leave the terminal and tell the parent. */
static void detach_finish(int verdict_fd, bool debug)
{
	setsid();
	if (chdir("/") < 0)
		ecfs_log(LOG_WARNING, "chdir /: %s", strerror(errno));
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
	ecfs_log_init("ecfs", true, debug);
	unsigned char ok = 0;
	if (write(verdict_fd, &ok, 1) != 1)
		ecfs_log(LOG_WARNING, "cannot report the mount to the parent: %s", strerror(errno));
	close(verdict_fd);
}

static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *opts)
{
	if (opts->singlethread)
		return fuse_session_loop(se);
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)opts->clone_fd);
	/* UINT_MAX: not given, keep libfuse's defaults. */
	if (opts->max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(cfg, opts->max_idle_threads);
	if (opts->max_threads != UINT_MAX)
		fuse_loop_cfg_set_max_threads(cfg, opts->max_threads);
	int rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

static void free_cli(struct cli *c)
{
	free(c->members);
	free(c->k);
	free(c->m);
	free(c->code);
	free(c->w);
	free(c->strip);
	free(c->packet);
	free(c->checksum);
	free(c->heal_rate);
	free(c->timeout);
	free(c->slow_readaround);
	free(c->hedge);
	free(c->write_quorum);
	free(c->spin);
	free(c->attr_timeout);
	free(c->entry_timeout);
	free(c->negative_timeout);
}

/* What the daemon holds from the command line to the exit. */
struct daemon_state {
	struct fuse_args args;
	struct cli cli;
	struct fuse_cmdline_opts opts;
	GPtrArray *members;   /* absolute member paths */
	volume_options vopts;
	int heal_rate;        /* MB/s, 0 = no limit */
	struct ecfs_fs state;
	struct fuse_session *se;
	bool mounted;
	heal *healer;
	int verdict_fd;       /* the parent waits on it (see detach_start) */
};

/* Reads one -o *_timeout value (seconds, from 0) into *out, if given. */
static bool parse_timeout(const char *name, const char *s, double *out)
{
	if (!s)
		return true;
	char *end;
	double t = strtod(s, &end);
	if (end == s || *end || !(t >= 0 && t <= 1e9))
		return fail("%s=%s: give seconds, from 0", name, s);
	*out = t;
	return true;
}

/* The kernel cache options into the operations' state. */
static bool cache_options(struct daemon_state *d)
{
	struct ecfs_fs *fs = &d->state;
	fs->timeouts = (struct fs_timeouts){ DEFAULT_ENTRY_TIMEOUT, DEFAULT_ATTR_TIMEOUT, 0 };
	fs->kernel_cache = d->cli.kernel_cache;
	fs->auto_cache = d->cli.auto_cache;
	fs->direct_io = d->cli.direct_io;
	return parse_timeout("entry_timeout", d->cli.entry_timeout, &fs->timeouts.entry) &&
	       parse_timeout("attr_timeout", d->cli.attr_timeout, &fs->timeouts.attr) &&
	       parse_timeout("negative_timeout", d->cli.negative_timeout, &fs->timeouts.negative);
}

/* main() goes on: no exit status yet. */
#define GO_ON (-1)

/* Reads and checks the command line and adds the mount options ecfs
 * always uses.  Returns GO_ON, or the exit status: 0 after --help or
 * --version, 1 after saying what is wrong (or libfuse said it). */
static int parse_command_line(struct daemon_state *d, const char *prog)
{
	if (fuse_opt_parse(&d->args, &d->cli, cli_spec, cli_proc) < 0)
		return 1; /* libfuse said why */
	if (d->cli.help) {
		usage(prog);
		printf("FUSE options:\n");
		fuse_cmdline_help();
		fuse_lowlevel_help();
		return 0;
	}
	if (d->cli.version) {
		printf("ecfs version %s\nlibfuse version %s\n", ECFS_VERSION, fuse_pkgversion());
		return 0;
	}
	if (fuse_parse_cmdline(&d->args, &d->opts) < 0)
		return 1; /* libfuse said why (bad or extra mountpoint) */
	if (!parse_members(d->cli.members, d->members))
		return 1;
	if (!d->opts.mountpoint)
		return !fail("no mountpoint given (see ecfs --help)");
	if (d->cli.heal_rate && !parse_int(d->cli.heal_rate, 0, 1000000, &d->heal_rate))
		return !fail("heal_rate=%s: give MB/s as a whole number (0 = no limit)",
		             d->cli.heal_rate);
	if (!build_options(&d->cli, (int)d->members->len, &d->vopts) || !cache_options(d))
		return 1;

	/* The kernel checks permissions (the daemon would be root for all). */
	if (fuse_opt_add_arg(&d->args, "-odefault_permissions") < 0 ||
	    fuse_opt_add_arg(&d->args, "-osubtype=ecfs") < 0 ||
	    add_escaped_opt(&d->args, "fsname=", d->cli.members) < 0)
		return !fail("out of memory");
	return GO_ON;
}

/* Detaches (unless -f), opens the volume and mounts it, then starts the
 * online heal.  False if it could not mount (said why, or libfuse did). */
static bool mount_volume(struct daemon_state *d)
{
	ecfs_log_init("ecfs", false, d->opts.debug);
	if (!d->opts.foreground)
		d->verdict_fd = detach_start();

	/* Library and mount options are checked here, before the volume is
	 * opened (and maybe created). */
	fs_set_state(&d->state);
	fs_nodes_init();
	d->se = fuse_session_new(&d->args, ecfs_fs_operations(), sizeof(struct fuse_lowlevel_ops),
	                         &d->state);
	if (!d->se)
		return false; /* libfuse said why */

	char *message = NULL;
	int rc = volume_open((const char *const *)d->members->pdata, (int)d->members->len,
	                     &d->vopts, &d->state.vol, &message);
	if (rc < 0) {
		fail("%s", message ? message : strerror(-rc));
		g_free(message);
		return false;
	}
	d->state.uid = geteuid();
	d->state.gid = getegid();
	d->state.attrs = attr_cache_new();
	volume_set_refresh(d->state.vol, fs_refresh_dir);
	if (!d->vopts.read_only) {
		intent_replay(d->state.vol, NULL, NULL); /* finish what a crash cut short */
		fs_orphans_prepare(d->state.vol);
	}
	journal_census(d->state.vol);
	fs_dirsaved_start(d->state.vol, d->vopts.read_only);

	if (fuse_session_mount(d->se, d->opts.mountpoint) != 0)
		return false; /* libfuse said why */
	d->mounted = true;
	if (fuse_set_signal_handlers(d->se) != 0)
		return fail("cannot set signal handlers");
	fs_nodes_notify_start(d->se, fs_members_answering, d->state.vol);
	raise_readahead(d->opts.mountpoint);
	if (d->verdict_fd >= 0) {
		detach_finish(d->verdict_fd, d->opts.debug);
		d->verdict_fd = -1;
	}
	ecfs_log(LOG_INFO, "mounted %s on %s (k=%d m=%d)", d->cli.members, d->opts.mountpoint,
	         volume_k(d->state.vol), volume_m(d->state.vol));
	if (!d->vopts.read_only && !d->cli.noheal &&
	    !(d->healer = heal_start(d->state.vol, (uint64_t)d->heal_rate * 1000000)))
		ecfs_log(LOG_WARNING, "cannot start the online heal: failed members are not rebuilt "
		         "while mounted");
	return true;
}

/* Serves the mount until it ends; returns the exit status. */
static int serve(struct daemon_state *d)
{
	int loop_rc = run_loop(d->se, &d->opts);
	/* ECONNABORTED: the kernel ended the connection while a worker held
	 * a request it had taken, which an unmount racing a late request
	 * does as well as an abort through /sys/fs/fuse/connections; the
	 * volume is closed as cleanly either way. */
	bool aborted = abs(loop_rc) == ECONNABORTED;
	if (aborted)
		ecfs_log(LOG_INFO, "the kernel ended the FUSE connection (unmount or abort)");
	fuse_remove_signal_handlers(d->se);
	ecfs_log(LOG_INFO, "unmounting %s", d->opts.mountpoint);
	heal_stop(d->healer); /* its open files are its own to release */
	d->healer = NULL;
	fs_nodes_notify_stop();
	int left_open = ecfile_release_all(d->state.vol);
	if (left_open)
		ecfs_log(LOG_INFO, "closed %d open files the kernel did not release", left_open);
	fs_dirsaved_finish(d->state.vol);
	return loop_rc == 0 || aborted ? 0 : 1;
}

/* Unmounts and releases whatever the run got to. */
static void release(struct daemon_state *d)
{
	heal_stop(d->healer);
	fs_nodes_notify_stop();
	if (d->mounted)
		fuse_session_unmount(d->se);
	if (d->se)
		fuse_session_destroy(d->se);
	fs_nodes_free();
	if (d->state.vol)
		volume_close(d->state.vol);
	attr_cache_free(d->state.attrs);
	free(d->opts.mountpoint);
	free_cli(&d->cli);
	g_ptr_array_free(d->members, TRUE);
	fuse_opt_free_args(&d->args);
}

int main(int argc, char *argv[])
{
	struct daemon_state d = { .args = FUSE_ARGS_INIT(argc, argv),
	                          .members = g_ptr_array_new_with_free_func(free),
	                          .heal_rate = DEFAULT_HEAL_RATE, .verdict_fd = -1 };

	/* Objects are created on members with exactly the mode asked for: the
	 * caller's umask is already applied (by the kernel, or with ACLs by
	 * xattrs_create_mode), or a default ACL on the member replaces it. */
	umask(0);
	/* Every open file takes stripe buffers of up to a few MiB and gives
	 * them back at close.  Past glibc's mmap threshold each would be a
	 * fresh mapping, zero-filled, and unmapped at once (a TLB shootdown
	 * on every CPU running the daemon): kept in the heap, and the heap
	 * not trimmed below what a few open files use, they are reused. */
	mallopt(M_MMAP_THRESHOLD, 16 << 20);
	mallopt(M_TRIM_THRESHOLD, 32 << 20);

	int status = parse_command_line(&d, argv[0]);
	if (status == GO_ON)
		status = mount_volume(&d) ? serve(&d) : 1;
	/* A child that fails before mounting exits 1; the parent reads EOF and
	 * exits 1 too. */
	release(&d);
	return status;
}
