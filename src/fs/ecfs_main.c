/* SPDX-License-Identifier: MIT */
/*
 * ecfs: the FUSE daemon.  `ecfs [options] MEMBER:MEMBER:... MOUNTPOINT`
 * mounts the erasure-coded volume made of the member directories;
 * `ecfs status ...` shows mounted volumes instead and `ecfs scrub ...`
 * controls their online scrub (status.h: one volume cannot be named
 * "status" or "scrub", as it has at least two members).
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

#include "ecfile.h"
#include "fdlimit.h"
#include "fs_dirsaved.h"
#include "fs_killpriv.h"
#include "log.h"
#include "events.h"
#include "heal.h"
#include "metrics.h"
#include "status.h"
#include "intent.h"
#include "journal.h"
#include "smalllog_replay.h"
#include "rootattrs.h"
#include "volume.h"

#ifndef ECFS_VERSION
#define ECFS_VERSION "unknown"
#endif

/* What our -o options and positional arguments say, as given. */
struct cli {
	char *members;             /* the MEMBER:MEMBER:... argument */
	int positional;            /* non-option arguments seen */
	char *text[VOPT_COUNT];    /* each option's value (volume_options.h), or NULL */
	int flag[VOPT_COUNT];      /* each flag, 1 if given (fuse_opt stores an int) */
	bool help, version;
};

enum { KEY_HELP, KEY_VERSION, KEY_RO };

/* Options of fstab(5) that mount(8) or mount.fuse3(8) may hand on and
 * that mean nothing to the daemon: dropped, as are "x-" options (systemd's
 * x-systemd.*, cli_proc).  rw, dev, suid, exec and the atime options go
 * on to libfuse, which knows them. */
static const char *const fstab_only[] = {
	"defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group",
	"nofail", "_netdev", "comment=%s",
};
#define FSTAB_ONLY_COUNT (sizeof(fstab_only) / sizeof(fstab_only[0]))

/* The fuse_opt spec of the option table, then ours; its templates are
 * g_malloc'd, spec_free() frees them. */
static struct fuse_opt *spec_new(void)
{
	struct fuse_opt *spec = g_new0(struct fuse_opt, VOPT_COUNT + FSTAB_ONLY_COUNT + 5);
	int i = 0;
	for (int id = 0; id < VOPT_COUNT; id++) {
		const volume_option *o = &volume_option_table[id];
		bool flag = o->type == VOPT_TYPE_FLAG; /* stores 1, not the value */
		if (id == VOPT_RO) /* ro goes on to libfuse too (cli_proc) */
			spec[i++] = (struct fuse_opt)FUSE_OPT_KEY(g_strdup("ro"), KEY_RO);
		else
			spec[i++] = (struct fuse_opt){
				flag ? g_strdup(o->name) : g_strconcat(o->name, "=%s", NULL),
				flag ? offsetof(struct cli, flag) + id * sizeof(int)
				     : offsetof(struct cli, text) + id * sizeof(char *),
				flag };
	}
	for (size_t j = 0; j < FSTAB_ONLY_COUNT; j++)
		spec[i++] = (struct fuse_opt)FUSE_OPT_KEY(g_strdup(fstab_only[j]), FUSE_OPT_KEY_DISCARD);
	spec[i++] = (struct fuse_opt)FUSE_OPT_KEY(g_strdup("-h"), KEY_HELP);
	spec[i++] = (struct fuse_opt)FUSE_OPT_KEY(g_strdup("--help"), KEY_HELP);
	spec[i++] = (struct fuse_opt)FUSE_OPT_KEY(g_strdup("-V"), KEY_VERSION);
	spec[i++] = (struct fuse_opt)FUSE_OPT_KEY(g_strdup("--version"), KEY_VERSION);
	return spec; /* ends with a zeroed entry, FUSE_OPT_END */
}

static void spec_free(struct fuse_opt *spec)
{
	for (struct fuse_opt *o = spec; o->templ; o++)
		g_free((char *)o->templ);
	g_free(spec);
}

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
		c->flag[VOPT_RO] = 1;
		return 1; /* libfuse mounts read-only too */
	case FUSE_OPT_KEY_NONOPT:
		/* The first is the member list; the mountpoint goes on to
		 * fuse_parse_cmdline, which rejects any further one. */
		if (c->positional++ == 0) {
			c->members = strdup(arg);
			return c->members ? 0 : -1;
		}
		return 1;
	case FUSE_OPT_KEY_OPT:
		return strncmp(arg, "x-", 2) == 0 ? 0 : 1; /* fstab_only */
	default:
		return 1;
	}
}

static void usage(const char *prog)
{
	printf("usage: %s [options] MEMBER:MEMBER:...:MEMBER MOUNTPOINT\n"
	       "       %s status [--json] [MOUNTPOINT]\n"
	       "       %s scrub start|pause|resume|status [options] MOUNTPOINT\n\n"
	       "Mounts an erasure-coded volume made of k+m member directories.\n"
	       "The first mount of empty directories creates the volume.  ecfs status\n"
	       "shows the state of mounted volumes (ecfs status --help); ecfs scrub\n"
	       "checks and repairs every strip of one while mounted (ecfs scrub --help).\n\n"
	       "ecfs options:\n", prog, prog, prog);
	volume_options_usage(stdout);
	printf("    -h, --help             this help, then libfuse's\n"
	       "    -V, --version          versions of ecfs and libfuse\n\n"
	       "ecfs always mounts with -o default_permissions: the kernel checks\n"
	       "permissions, the daemon does not.  Code, w, strip, packet and checksum\n"
	       "apply to files created from now on; each file keeps its own.\n\n");
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

/* Every option's value, as given or its default, into val; false after
 * saying what is wrong. */
static bool parse_values(const struct cli *c, volume_option_value *val)
{
	for (int id = 0; id < VOPT_COUNT; id++) {
		const char *text = volume_option_table[id].type != VOPT_TYPE_FLAG ? c->text[id]
		                   : c->flag[id] ? "" : NULL;
		char *why;
		if (!volume_option_parse(id, text, &val[id], &why)) {
			fail("%s", why);
			g_free(why);
			return false;
		}
	}
	return true;
}

/* Turns the values into volume options for n members, checking what the
 * volume does not: k and m against n, and the daemon's own rules.  Code
 * options and the write quorum are volume_open's to check, before it
 * writes anything. */
static bool build_options(const volume_option_value *val, int n, volume_options *o)
{
	volume_geometry *g = &o->geometry;
	memset(o, 0, sizeof *o);
	g->k = (int)val[VOPT_K].number;
	g->m = (int)val[VOPT_M].number;
	g->format = val[VOPT_FORMAT].given ? (int)val[VOPT_FORMAT].number : 0;
	if (g->k && !g->m)
		g->m = n - g->k;
	if (g->m && !g->k)
		g->k = n - g->m;
	if ((g->k || g->m) && (g->k < 1 || g->m < 1 || g->k + g->m != n))
		return fail("k=%d, m=%d do not fit %d member%s: k+m must equal the number of "
		            "members, both at least 1", g->k, g->m, n, n == 1 ? "" : "s");
	/* the superblock's unless given: the table's defaults are a new volume's */
	o->files = (volume_file_defaults){
		.code = (ec_kind)val[VOPT_CODE].number,
		.w = (int)val[VOPT_W].number,
		.strip_size = val[VOPT_STRIP].given ? val[VOPT_STRIP].size : 0,
		.packet_size = val[VOPT_PACKET].given ? val[VOPT_PACKET].size : 0,
		.checksum = val[VOPT_CHECKSUM].given ? val[VOPT_CHECKSUM].text : NULL,
	};
	o->run = (volume_runtime){
		.read_only = val[VOPT_RO].number,
		.timeout_ms = (unsigned)val[VOPT_TIMEOUT].number,
		.write_quorum = (int)val[VOPT_WRITE_QUORUM].number,
	};
	for (int id = 0; id < VOPT_COUNT; id++)
		if (volume_option_table[id].tuning)
			volume_runtime_set_tuning(&o->run, id, &val[id]);
	if (val[VOPT_NOHEAL].number && o->run.write_quorum && o->run.write_quorum < n)
		return fail("write_quorum=%d leaves slow members out of writes for the online "
		            "heal to catch up: it does not go with noheal", o->run.write_quorum);
	return true;
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
	for (int id = 0; id < VOPT_COUNT; id++)
		free(c->text[id]);
}

/* What the daemon holds from the command line to the exit. */
struct daemon_state {
	struct fuse_args args;
	struct cli cli;
	volume_option_value val[VOPT_COUNT]; /* the -o options */
	struct fuse_cmdline_opts opts;
	GPtrArray *members;   /* absolute member paths */
	volume_options vopts;
	struct ecfs_fs state;
	struct fuse_session *se;
	bool mounted;
	heal *healer;
	events *events;       /* -o events */
	metrics *metrics;     /* -o metrics */
	int verdict_fd;       /* the parent waits on it (see detach_start) */
};

/* The kernel cache options into the operations' state. */
static void cache_options(struct daemon_state *d)
{
	struct ecfs_fs *fs = &d->state;
	fs->timeouts = (struct fs_timeouts){ d->val[VOPT_ENTRY_TIMEOUT].seconds,
	                                     d->val[VOPT_ATTR_TIMEOUT].seconds,
	                                     d->val[VOPT_NEGATIVE_TIMEOUT].seconds };
	fs->kernel_cache = d->val[VOPT_KERNEL_CACHE].number;
	fs->auto_cache = d->val[VOPT_AUTO_CACHE].number;
	fs->direct_io = d->val[VOPT_DIRECT_IO].number;
}

/* main() goes on: no exit status yet. */
#define GO_ON (-1)

/* Reads and checks the command line and adds the mount options ecfs
 * always uses.  Returns GO_ON, or the exit status: 0 after --help or
 * --version, 1 after saying what is wrong (or libfuse said it). */
static int parse_command_line(struct daemon_state *d, const char *prog)
{
	struct fuse_opt *spec = spec_new();
	int rc = fuse_opt_parse(&d->args, &d->cli, spec, cli_proc);
	spec_free(spec);
	if (rc < 0)
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
	if (!parse_values(&d->cli, d->val) ||
	    !build_options(d->val, (int)d->members->len, &d->vopts))
		return 1;
	cache_options(d);

	/* The kernel checks permissions (the daemon would be root for all). */
	if (fuse_opt_add_arg(&d->args, "-odefault_permissions") < 0 ||
	    fuse_opt_add_arg(&d->args, "-osubtype=ecfs") < 0 ||
	    add_escaped_opt(&d->args, "fsname=", d->cli.members) < 0)
		return !fail("out of memory");
	return GO_ON;
}

/* The volume's events go to -o events and wake -o metrics (a change of
 * state; the counters wait for its next period). */
static void on_volume_event(void *arg, volume_event ev, int member, const char *path,
                            const char *detail)
{
	struct daemon_state *d = arg;

	events_post(d->events, ev, member, path, detail);
	if (ev != VOLUME_EVENT_CHECKSUM_ERROR)
		metrics_poke(d->metrics);
}

/* Starts -o events and -o metrics, if given.  A member already failed
 * when the volume was opened is told as failing now (a degraded mount at
 * boot is news too). */
static void start_watchers(struct daemon_state *d)
{
	const char *program = d->val[VOPT_EVENTS].text, *file = d->val[VOPT_METRICS].text;
	volume *v = d->state.vol;

	if (program)
		d->events = events_start(program, v, d->opts.mountpoint);
	if (file)
		d->metrics = metrics_start(file, v, d->opts.mountpoint);
	if (!d->events && !d->metrics)
		return;
	volume_set_event_hook(v, on_volume_event, d);
	for (int i = 0; i < volume_n(v); i++)
		if (!volume_member_ok(v, i))
			on_volume_event(d, VOLUME_EVENT_MEMBER_FAILED, i, NULL,
			                "failed when the volume was mounted (ecfs status says why)");
}

/* Frees them once the volume is closed: until then a thread of the
 * volume may tell an event. */
static void free_watchers(struct daemon_state *d)
{
	events_stop(d->events);
	d->events = NULL;
	metrics_free(d->metrics);
	d->metrics = NULL;
}

/* Detaches (unless -f), opens the volume and mounts it, then starts the
 * online heal.  False if it could not mount (said why, or libfuse did). */
static bool mount_volume(struct daemon_state *d)
{
	ecfs_log_init("ecfs", false, d->opts.debug);
	ecfs_raise_fd_limit();
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
	if (!d->vopts.run.read_only) {
		rootattrs_settle(d->state.vol, true); /* the member roots the daemon's alone */
		intent_replay(d->state.vol, NULL, NULL); /* finish what a crash cut short */
		fs_orphans_prepare(d->state.vol);
	}
	journal_census(d->state.vol);
	smalllog_census(d->state.vol);
	fs_dirsaved_start(d->state.vol, d->vopts.run.read_only);

	if (fuse_session_mount(d->se, d->opts.mountpoint) != 0)
		return false; /* libfuse said why */
	d->mounted = true;
	if (!fs_killpriv_attach(d->se))
		ecfs_log(LOG_WARNING, "without the request hooks (fs_killpriv.c) the kernel clears "
		         "setuid itself and asks for security.capability before each write");
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
	if (!d->vopts.run.read_only && !d->val[VOPT_NOHEAL].number) {
		scrub *s = scrub_new(d->state.vol);
		d->healer = heal_start(d->state.vol, (uint64_t)d->val[VOPT_HEAL_RATE].number * 1000000,
		                       (uint64_t)d->val[VOPT_SCRUB_RATE].number * 1000000, s);
		if (!d->healer) {
			scrub_free(s);
			ecfs_log(LOG_WARNING, "cannot start the online heal: failed members are not "
			         "rebuilt while mounted, and there is no scrub");
		} else {
			__atomic_store_n(&d->state.scrub, s, __ATOMIC_RELEASE);
		}
	}
	start_watchers(d);
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
	metrics_stop(d->metrics); /* before the heal: it reads the heal's lines */
	heal_stop(d->healer); /* its open files are its own to release */
	d->healer = NULL;
	scrub_free(d->state.scrub); /* saved: a run goes on at the next mount */
	d->state.scrub = NULL;
	/* a mount meanwhile waits for the locks; after the heal, which would
	 * take the lock texts for changes a failed member missed */
	volume_mark_closing(d->state.vol);
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
	metrics_stop(d->metrics);
	heal_stop(d->healer);
	scrub_free(d->state.scrub);
	d->state.scrub = NULL;
	fs_nodes_notify_stop();
	if (d->mounted)
		fuse_session_unmount(d->se);
	if (d->se)
		fuse_session_destroy(d->se);
	fs_nodes_free();
	if (d->state.vol)
		volume_close(d->state.vol);
	free_watchers(d);
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
	                          .verdict_fd = -1 };

	if (argc >= 2 && strcmp(argv[1], "status") == 0)
		return status_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "scrub") == 0)
		return scrub_main(argc - 1, argv + 1);
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
