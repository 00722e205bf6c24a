/* SPDX-License-Identifier: MIT */
/*
 * ecfs-fsck: offline check and repair of an ecfs volume's members.
 * `ecfs-fsck [options] MEMBER:MEMBER:...` (the member list of the mount).
 *
 * This file holds the command line, the member and superblock stage (a
 * missing member directory, a replaced empty member that gets its
 * superblock and index back, superblocks that disagree), the problem list
 * with its human and JSON forms, the progress line and the fsck(8) exit
 * status.  The namespace is checked by fsck_tree.c and each regular file's
 * chunks and strips by repair.c.  Repair opens the volume as the daemon
 * does, with its lock, so it refuses a mounted volume; a check only opens
 * it read-only and takes no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "chunk.h"
#include "fdlimit.h"
#include "fsck.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "rootattrs.h"
#include "stripe.h"
#include "superblock.h"
#include "volume_internal.h"
#include "volume_paths.h"

#ifndef ECFS_VERSION
#define ECFS_VERSION "unknown"
#endif

#define LOCK_NAME "lock"

/* ---- problems and output ---- */

/* The sink of the run (fsck.h): the problem list, printed as it grows and
 * kept for the JSON report, and the progress line.  Files are checked on
 * several threads (fsck_tree.c): the lock keeps their lines whole. */
typedef struct output {
	GMutex lock; /* guards all below and stdout; order: a leaf */
	GString *json;  /* the "problems" array items */
	int64_t last_us; /* the progress line was drawn */
	bool progress_shown;
} output;

/* The output of ecfs-fsck's run: its sink's own. */
static output *output_of(const fsck *f)
{
	return f->sink->arg;
}

static const char *status_word(enum fsck_status st)
{
	switch (st) {
	case FSCK_REPAIRED: return "repaired";
	case FSCK_REPAIRABLE: return "repairable";
	case FSCK_UNREPAIRABLE: return "unrepairable";
	default: return "repair failed";
	}
}

/* Appends s as a JSON string; bytes that are not UTF-8 become \u00XX. */
static void json_string(GString *out, const char *s)
{
	bool utf8 = g_utf8_validate(s, -1, NULL);

	g_string_append_c(out, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			g_string_append_printf(out, "\\%c", *p);
		else if (*p < 0x20 || (*p >= 0x80 && !utf8))
			g_string_append_printf(out, "\\u%04x", *p);
		else
			g_string_append_c(out, (char)*p);
	}
	g_string_append_c(out, '"');
}

static void clear_progress(output *out)
{
	if (out->progress_shown) {
		fputs("\r\033[K", stderr);
		out->progress_shown = false;
	}
}

/* A problem as an item of the JSON "problems" array. */
static void append_json_problem(GString *j, const fsck_report *r)
{
	g_string_append_printf(j, "%s\n    {\"kind\": ", j->len ? "," : "");
	json_string(j, r->kind);
	g_string_append(j, ", \"path\": ");
	if (r->path)
		json_string(j, r->path);
	else
		g_string_append(j, "null");
	if (r->member >= 0)
		g_string_append_printf(j, ", \"member\": %d", r->member);
	else
		g_string_append(j, ", \"member\": null");
	if (r->len)
		g_string_append_printf(j, ", \"offset\": %llu, \"length\": %llu",
		                       (unsigned long long)r->off, (unsigned long long)r->len);
	g_string_append_printf(j, ", \"status\": \"%s\", \"detail\": ", status_word(r->st));
	json_string(j, r->detail);
	g_string_append_c(j, '}');
}

/* A problem as a line on stdout. */
static void print_problem(output *out, fsck *f, const fsck_report *r)
{
	GString *line = g_string_new(NULL);
	g_string_append_printf(line, "%s: %s", r->kind, r->path ? r->path : "volume");
	if (r->member >= 0)
		g_string_append_printf(line, ": member %d (%s)", r->member,
		                       volume_member_path(f->v, r->member));
	if (r->len)
		g_string_append_printf(line, ": bytes %llu-%llu", (unsigned long long)r->off,
		                       (unsigned long long)(r->off + r->len - 1));
	g_string_append_printf(line, ": %s [%s]", r->detail, status_word(r->st));
	clear_progress(out);
	puts(line->str);
	fflush(stdout);
	g_string_free(line, TRUE);
}

static void output_problem(void *arg, fsck *f, const fsck_report *r)
{
	output *out = arg;

	g_mutex_lock(&out->lock);
	if (f->o.json)
		append_json_problem(out->json, r);
	else if (!f->o.quiet || r->st != FSCK_REPAIRED)
		print_problem(out, f, r);
	g_mutex_unlock(&out->lock);
}

static char *human_bytes(double b)
{
	const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	return g_strdup_printf(u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

static void output_progress(void *arg, fsck *f, bool force)
{
	output *out = arg;
	int64_t now = g_get_monotonic_time();

	if (!f->o.progress)
		return;
	g_mutex_lock(&out->lock);
	if (!force && now - out->last_us < 250000) {
		g_mutex_unlock(&out->lock);
		return;
	}
	out->last_us = now;
	/* Counted by the file threads meanwhile (fsck_count). */
	uint64_t bytes = __atomic_load_n(&f->bytes, __ATOMIC_RELAXED);
	uint64_t files = __atomic_load_n(&f->files, __ATOMIC_RELAXED);
	double secs = (double)(now - f->start_us) / 1e6;
	double rate = secs > 0 ? (double)bytes / secs : 0;
	char *done = human_bytes((double)bytes), *total = human_bytes((double)f->total_bytes);
	char *r = human_bytes(rate);
	char eta[32] = "?";
	if (rate > 0 && f->total_bytes > bytes) {
		long left = (long)((double)(f->total_bytes - bytes) / rate);
		snprintf(eta, sizeof(eta), "%ld:%02ld", left / 60, left % 60);
	} else if (f->total_bytes <= bytes) {
		snprintf(eta, sizeof(eta), "0:00");
	}
	fprintf(stderr, "\r\033[Kfiles %llu/%llu, %s of %s, %s/s, %s left",
	        (unsigned long long)files, (unsigned long long)f->total_files, done, total, r, eta);
	out->progress_shown = true;
	g_mutex_unlock(&out->lock);
	g_free(done);
	g_free(total);
	g_free(r);
}

/* ---- members and superblocks ---- */

/* A superblock read or written on its member's worker (fsck_on_member). */
typedef struct sb_call {
	volume *v;
	int idx, rootfd;
	superblock sb;
	char *why;
} sb_call;

static int read_superblock_run(void *arg)
{
	sb_call *c = arg;
	superblock sb;
	char *why = NULL;
	int metafd = MIO_CALL(openat(c->rootfd, ECFS_META_DIR, O_RDONLY | O_DIRECTORY |
	                                                        O_NOFOLLOW | O_CLOEXEC));
	if (metafd < 0) {
		int err = errno;
		c->why = g_strdup_printf("cannot open " ECFS_META_DIR ": %s", g_strerror(err));
		return -err;
	}
	mio_io_begin(); /* superblock_read's open and read, as one member call */
	int rc = superblock_read(metafd, &sb, &why);
	mio_io_end();
	MIO_CALL(close(metafd));
	c->sb = sb;
	c->why = why;
	return rc;
}

static int read_superblock(fsck *f, int idx, superblock *sb, char **why)
{
	sb_call c = { f->v, idx, volume_root_fd(f->v, idx), { 0 }, NULL };
	int rc = fsck_on_member(f, idx, read_superblock_run, &c);

	*sb = c.sb;
	*why = rc == -ETIMEDOUT && !c.why ? g_strdup("no answer") : c.why;
	return rc;
}

static int write_superblock_run(void *arg)
{
	sb_call *c = arg;
	/* a symlink where a metadata directory belongs: a real one instead */
	int rc = volume_meta_unlink_links(c->v, c->idx, c->rootfd);
	if (rc == 0)
		rc = mop_mkdirat(c->v, c->idx, c->rootfd, ECFS_META_DIR, 0700);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	int metafd = MIO_CALL(volume_dir_beneath(c->rootfd, ECFS_META_DIR));
	if (metafd < 0)
		return metafd;
	char *why = NULL;
	rc = MIO_CALL(volume_meta_dirs_check(metafd, &why)); /* a file in a dir's place stays */
	g_free(why);
	if (rc == 0)
		rc = superblock_write(c->v, c->idx, metafd, &c->sb);
	MIO_CALL(close(metafd));
	return rc;
}

static int write_superblock(fsck *f, int idx, int rootfd, const superblock *sb)
{
	sb_call c = { f->v, idx, rootfd, *sb, NULL };
	return fsck_on_member(f, idx, write_superblock_run, &c);
}

/* The member index the chunks on a member belong to (position + rotation
 * of the first chunk header found), or -1 if it holds none.  On the
 * member's worker (chunks_index). */
static int index_from_chunks(volume *v, int mb, int dirfd, int n, int depth)
{
	int fd = MIO_CALL(openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)), idx = -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			MIO_CALL(close(fd));
		return -1;
	}
	while (idx < 0 && (e = MIO_CALL(readdir(d)))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (depth == 0 && volume_root_name_reserved(e->d_name)))
			continue;
		int cfd = MIO_CALL(openat(dirfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
		                                             O_NONBLOCK));
		struct stat st;
		if (cfd < 0)
			continue;
		if (MIO_CALL(fstat(cfd, &st)) == 0 && S_ISDIR(st.st_mode) && depth < 8) {
			idx = index_from_chunks(v, mb, cfd, n, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			uint8_t buf[CHUNK_HEADER_MAX];
			chunk_header h;
			ssize_t got = mop_pread(v, mb, cfd, buf, sizeof(buf), 0);
			if (got >= 0 && chunk_header_decode(buf, (size_t)got, &h, NULL) == 0)
				idx = (int)((h.position + h.rotation) % (uint32_t)n);
		}
		MIO_CALL(close(cfd));
	}
	MIO_CALL(closedir(d));
	return idx;
}

typedef struct chunks_call {
	volume *v;
	int mb, rootfd, n;
} chunks_call;

static int chunks_index_run(void *arg)
{
	const chunks_call *c = arg;
	return index_from_chunks(c->v, c->mb, c->rootfd, c->n, 0);
}

/* index_from_chunks on member mb's worker: -1 also if it does not answer. */
static int chunks_index(fsck *f, int mb, int rootfd)
{
	chunks_call c = { f->v, mb, rootfd, f->n };
	int idx = fsck_on_member(f, mb, chunks_index_run, &c);
	return idx < 0 ? -1 : idx;
}

/* A look at a member path before the volume is open (no member workers
 * yet): on a thread of its own, bounded by --timeout or the least bound
 * (memberio_first_wait_ms, mio_bounded), so a member that hangs does not
 * hold the run.  Freed by look_late if late. */
typedef struct path_look {
	char *path;
	int rc, sb_rc; /* 0 or -errno: stat of the path, of its superblock */
} path_look;

static void look_run(void *arg)
{
	path_look *l = arg;
	char *sb = g_build_filename(l->path, ECFS_META_DIR, "superblock", NULL);
	struct stat st;

	l->rc = stat(l->path, &st) < 0 ? -errno : 0;
	l->sb_rc = l->rc < 0 ? l->rc : stat(sb, &st) < 0 ? -errno : 0;
	g_free(sb);
}

static void look_late(void *arg)
{
	path_look *l = arg;
	g_free(l->path);
	g_free(l);
}

/* look_run on the paths at once, into l[] (-ETIMEDOUT for a path that
 * did not answer in time). */
static void look_paths(fsck *f, char **paths, int n, path_look *l)
{
	mio_bounded *b[STRIPE_MAX_N];
	path_look *p[STRIPE_MAX_N];

	for (int i = 0; i < n; i++) {
		p[i] = g_new0(path_look, 1);
		p[i]->path = g_strdup(paths[i]);
		b[i] = mio_bounded_start(look_run, look_late, p[i]);
	}
	int64_t deadline = mio_deadline_ms(memberio_first_wait_ms(f->o.timeout_ms, true));
	for (int i = 0; i < n; i++) {
		l[i] = (path_look){ NULL, -ETIMEDOUT, -ETIMEDOUT };
		if (!mio_bounded_wait(b[i], deadline))
			continue; /* volume_open's probe says it */
		l[i] = *p[i];
		look_late(p[i]);
		l[i].path = NULL;
	}
}

/* Checks each given member path before the volume is opened: a member
 * that does not exist is recreated empty by a repair (then rebuilt), if
 * some other given member does hold the volume (never for a list of
 * mistyped paths). */
static int check_member_paths(fsck *f, char **paths, int n)
{
	path_look l[STRIPE_MAX_N];
	int formatted = 0;

	if (n > STRIPE_MAX_N)
		return 1; /* volume_open says what is wrong */
	look_paths(f, paths, n, l);
	for (int i = 0; i < n; i++)
		formatted += l[i].sb_rc == 0;
	for (int i = 0; i < n; i++) {
		if (l[i].rc != -ENOENT)
			continue;
		int rc = f->o.repair && formatted && mkdir(paths[i], VOLUME_MEMBER_ROOT_MODE) < 0
		         ? -errno : 0;
		fprintf(stderr, "ecfs-fsck: member %s does not exist%s\n", paths[i],
		        !f->o.repair || !formatted ? ""
		        : rc ? ": cannot create it" : ": created empty, to rebuild");
	}
	return formatted;
}

/* The members the volume could not use: tells why, and with repair gives
 * an empty (replaced) member, or one whose superblock is unreadable, its
 * superblock back.  Returns true if a superblock was written (the volume
 * must be opened again). */
static bool check_members(fsck *f, superblock *ref)
{
	bool rewritten = false;
	char *health = volume_health_text(f->v);
	char **lines = g_strsplit(health, "\n", -1);

	for (int i = 0; i < f->n; i++) {
		char key[32];
		const char *why = "unusable";
		if (volume_member_ok(f->v, i))
			continue;
		snprintf(key, sizeof(key), "member.%d=failed ", i);
		for (char **l = lines; *l; l++)
			if (g_str_has_prefix(*l, key)) {
				const char *colon = strstr(*l + strlen(key), ": ");
				why = colon ? colon + 2 : *l + strlen(key);
			}
		int rootfd = volume_root_fd(f->v, i);
		int rc = -ENODEV;
		enum fsck_status st = FSCK_UNREPAIRABLE;
		char *path = (char *)volume_member_path(f->v, i);
		path_look l;
		if (rootfd < 0 && !f->o.repair && !g_str_has_prefix(why, "no answer") &&
		    (look_paths(f, &path, 1, &l), l.rc == -ENOENT))
			st = FSCK_REPAIRABLE; /* -y creates it empty and rebuilds it */
		if (rootfd >= 0) {
			int has = chunks_index(f, i, rootfd);
			if (fsck_gone(f, i))
				continue; /* reported as a member given up */
			if (has >= 0 && has != i) {
				fsck_problem(f, "member", NULL, i, 0, 0, FSCK_UNREPAIRABLE,
				             "%s; it holds chunks of member index %d, not %d: give the "
				             "members so that it can be placed", why, has, i);
				continue;
			}
			st = FSCK_REPAIRABLE;
			if (f->o.repair) {
				superblock sb = *ref;
				sb.index = i;
				rc = write_superblock(f, i, rootfd, &sb);
				st = rc < 0 ? FSCK_FAILED : FSCK_REPAIRED;
				rewritten |= rc == 0;
			}
		}
		if (st == FSCK_REPAIRED)
			fsck_problem(f, "member", NULL, i, 0, 0, st, "%s: superblock written for index "
			             "%d, its namespace and chunks are rebuilt below", why, i);
		else
			fsck_problem(f, "member", NULL, i, 0, 0, st, "%s%s%s", why, rc == -ENODEV ? "" : ": ",
			             rc == -ENODEV ? "" : g_strerror(-rc));
	}
	g_strfreev(lines);
	g_free(health);
	return rewritten;
}

/* Compares the healthy members' superblocks (all but the index); the text
 * most members carry wins and is written to the others. */
static int check_superblocks(fsck *f, superblock *ref)
{
	superblock sb[STRIPE_MAX_N];
	char *text[STRIPE_MAX_N] = { 0 };
	int best = -1, best_votes = 0;

	for (int i = 0; i < f->n; i++) {
		char *why = NULL;
		if (!volume_member_ok(f->v, i))
			continue;
		if (read_superblock(f, i, &sb[i], &why) < 0) {
			fsck_problem(f, "superblock", NULL, i, 0, 0, FSCK_UNREPAIRABLE, "%s", why);
			g_free(why);
			continue;
		}
		superblock norm = sb[i];
		norm.index = 0;
		text[i] = superblock_format(&norm);
	}
	for (int i = 0; i < f->n; i++) {
		int votes = 0;
		for (int j = 0; j < f->n && text[i]; j++)
			votes += text[j] && !strcmp(text[i], text[j]);
		if (votes > best_votes) {
			best = i;
			best_votes = votes;
		}
	}
	if (best < 0)
		return -EIO;
	*ref = sb[best];
	for (int i = 0; i < f->n; i++) {
		if (!text[i] || !strcmp(text[i], text[best]))
			continue;
		superblock fix = sb[best];
		fix.index = sb[i].index;
		int rc = f->o.repair ? write_superblock(f, i, volume_root_fd(f->v, i), &fix) : 0;
		fsck_problem(f, "superblock", NULL, i, 0, 0, fsck_outcome(f, rc),
		             "volume defaults differ from the other members' superblocks");
	}
	for (int i = 0; i < f->n; i++)
		g_free(text[i]);
	return 0;
}

typedef struct lock_call {
	volume *v;
	int idx;
	char who[256];
} lock_call;

/* On the member's worker: 1 if its lock is held (the holder in c->who),
 * 0 if not, a negative errno if the lock cannot be opened. */
static int lock_held_run(void *arg)
{
	lock_call *c = arg;
	char who[sizeof(c->who)];
	int fd = volume_meta_open(c->v, c->idx, volume_root_fd(c->v, c->idx),
	                          ECFS_META_DIR "/" LOCK_NAME, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	bool locked = MIO_CALL(fcntl(fd, F_OFD_GETLK, &fl)) == 0 && fl.l_type != F_UNLCK;
	if (locked) {
		ssize_t r = mop_pread(c->v, c->idx, fd, who, sizeof(who) - 1, 0);
		who[r > 0 ? r : 0] = 0;
		memcpy(c->who, who, sizeof(who));
	}
	MIO_CALL(close(fd));
	return locked;
}

/* True (and the owner in *who) if a daemon holds the volume lock. */
static bool volume_locked(fsck *f, char *who, size_t len)
{
	for (int i = 0; i < f->n; i++) {
		if (!volume_member_ok(f->v, i))
			continue;
		lock_call c = { f->v, i, "" };
		int rc = fsck_on_member(f, i, lock_held_run, &c);
		if (rc < 0)
			continue;
		g_strlcpy(who, c.who, len);
		g_strchomp(who);
		return rc == 1;
	}
	return false;
}

static guint file_id_hash(gconstpointer p)
{
	const uint8_t *b = p;
	return (guint)b[0] | (guint)b[1] << 8 | (guint)b[2] << 16 | (guint)b[3] << 24;
}

static gboolean file_id_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, 16) == 0;
}

/* ---- command line ---- */

static void usage(FILE *out)
{
	static const char text[] =
	      "Usage: ecfs-fsck [options] MEMBER:MEMBER:...\n"
	      "Checks (and with -y repairs) the members of an unmounted ecfs volume.\n"
	      "\n"
	      "  -n, --dry-run     report only, change nothing (the default)\n"
	      "  -y, --repair      repair what can be repaired (refused while mounted)\n"
	      "      --rebuild     repair only what is known lost (replaced or failed\n"
	      "                    members, missing or stale chunks), reading k strips\n"
	      "                    per stripe; does not scrub the rest\n"
	      "      --deep        also re-encode every stripe and compare its parity\n"
	      "      --json        print a machine-readable report (see ecfs-fsck(8))\n"
	      "  -q, --quiet       print only the problems left unrepaired\n"
	      "      --progress    show progress on stderr (default on a terminal)\n"
	      "      --no-progress never show progress\n"
	      "      --timeout=SECONDS\n"
	      "                    a member whose call has not returned after this long\n"
	      "                    is failed and the run goes on without it (default %g,\n"
	      "                    0 = never)\n"
	      "      --tune=NAME=VALUE\n"
	      "                    a switch for benchmarks and tests, as the daemon's\n"
	      "                    -o tune.NAME (named in ecfs-fsck(8) and docs/TUNING.md)\n"
	      "  -h, --help        this help\n"
	      "  -V, --version     the version\n"
	      "\n"
	      "Exit status: 0 clean, 1 errors corrected, 4 errors left uncorrected (or a\n"
	      "member given up: the check is incomplete), "
	      "8 operational error, 16 usage error.\n";
	fprintf(out, text, VOLUME_DEFAULT_TIMEOUT_MS / 1000.0);
}

static void print_summary(fsck *f, int status, const char *error)
{
	if (f->o.json) {
		GString *j = g_string_new("{\n  \"program\": \"ecfs-fsck\", \"version\": ");
		json_string(j, ECFS_VERSION);
		g_string_append_printf(j, ",\n  \"mode\": \"%s\", \"deep\": %s,\n",
		                       f->o.rebuild ? "rebuild" : f->o.repair ? "repair" : "check",
		                       f->o.deep ? "true" : "false");
		if (f->v) {
			char uuid[37];
			uuid_format(volume_uuid(f->v), uuid);
			g_string_append_printf(j, "  \"volume\": {\"uuid\": \"%s\", \"k\": %d, \"m\": %d, "
			                       "\"n\": %d},\n  \"members\": [", uuid, f->k, f->m, f->n);
			for (int i = 0; i < f->n; i++) {
				g_string_append_printf(j, "%s\n    {\"index\": %d, \"path\": ", i ? "," : "", i);
				json_string(j, volume_member_path(f->v, i));
				g_string_append_printf(j, ", \"state\": \"%s\"}",
				                       volume_member_ok(f->v, i) ? "ok" : "failed");
			}
			g_string_append(j, "\n  ],\n");
		}
		const GString *problems = output_of(f)->json;
		g_string_append_printf(j, "  \"problems\": [%s%s],\n", problems->str,
		                       problems->len ? "\n  " : "");
		g_string_append_printf(j, "  \"summary\": {\"files\": %llu, \"directories\": %llu, "
		                       "\"other\": %llu, \"bytes\": %llu, \"stripes\": %llu, "
		                       "\"strips_rebuilt\": %llu, \"reads_hedged\": %llu, "
		                       "\"repaired\": %llu, "
		                       "\"repairable\": %llu, \"unrepairable\": %llu, "
		                       "\"failed\": %llu},\n",
		                       (unsigned long long)f->files, (unsigned long long)f->dirs,
		                       (unsigned long long)f->others, (unsigned long long)f->bytes,
		                       (unsigned long long)f->stripes,
		                       (unsigned long long)f->strips_rebuilt,
		                       (unsigned long long)f->reads_hedged,
		                       (unsigned long long)f->repaired, (unsigned long long)f->repairable,
		                       (unsigned long long)f->unrepairable, (unsigned long long)f->failed);
		g_string_append(j, "  \"error\": ");
		if (error)
			json_string(j, error);
		else
			g_string_append(j, "null");
		g_string_append_printf(j, ",\n  \"exit\": %d\n}\n", status);
		fputs(j->str, stdout);
		g_string_free(j, TRUE);
		return;
	}
	if (error || (f->o.quiet && status != FSCK_EXIT_UNCORRECTED))
		return;
	if (f->o.quiet && status == FSCK_EXIT_UNCORRECTED)
		return;
	char *b = human_bytes((double)f->bytes);
	printf("ecfs-fsck: %llu files, %llu directories, %llu other entries, %s in %llu stripes "
	       "%s\n",
	       (unsigned long long)f->files, (unsigned long long)f->dirs, (unsigned long long)f->others,
	       b, (unsigned long long)f->stripes,
	       f->o.deep ? "checked (deep)"
	       : f->o.rebuild ? "of damaged files read (--rebuild: the rest was not scrubbed)"
	                      : "checked");
	if (f->strips_rebuilt)
		printf("ecfs-fsck: %llu strips rebuilt\n", (unsigned long long)f->strips_rebuilt);
	if (f->reads_hedged)
		printf("ecfs-fsck: %llu runs read a spare chunk, their first were late\n",
		       (unsigned long long)f->reads_hedged);
	uint64_t left = f->repairable + f->unrepairable + f->failed;
	if (!f->repaired && !left)
		printf("ecfs-fsck: %s\n", f->o.rebuild ? "nothing to rebuild" : "the volume is clean");
	else
		printf("ecfs-fsck: %llu problems repaired, %llu left (%llu repairable with -y, "
		       "%llu unrepairable, %llu repairs failed)\n",
		       (unsigned long long)f->repaired, (unsigned long long)left,
		       (unsigned long long)f->repairable, (unsigned long long)f->unrepairable,
		       (unsigned long long)f->failed);
	g_free(b);
}

static int finish(fsck *f, int status, const char *error)
{
	if (error)
		fprintf(stderr, "ecfs-fsck: %s\n", error);
	if (status != FSCK_EXIT_USAGE)
		print_summary(f, status, error);
	volume_close(f->v);
	f->v = NULL;
	g_string_free(output_of(f)->json, TRUE);
	if (f->links)
		g_hash_table_destroy(f->links);
	return status;
}

/* finish() with an error message made from fmt. */
static int finish_why(fsck *f, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int finish_why(fsck *f, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *error = g_strdup_vprintf(fmt, ap);
	va_end(ap);

	status = finish(f, status, error);
	g_free(error);
	return status;
}

/* main() goes on: no exit status yet. */
#define GO_ON (-1)

/* Reads the options into *o.  Returns GO_ON with the member list at
 * argv[optind], FSCK_EXIT_CLEAN after --help or --version, or
 * FSCK_EXIT_USAGE after the usage (and *bad, what was wrong, if getopt
 * has not said it). */
static int parse_command_line(int argc, char **argv, fsck_options *o, const char **bad)
{
	enum { OPT_DEEP = 256, OPT_JSON, OPT_PROGRESS, OPT_NO_PROGRESS, OPT_REBUILD, OPT_TIMEOUT,
	       OPT_TUNE };
	static const struct option longopts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "repair", no_argument, NULL, 'y' },
		{ "rebuild", no_argument, NULL, OPT_REBUILD },
		{ "deep", no_argument, NULL, OPT_DEEP },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "tune", required_argument, NULL, OPT_TUNE },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int progress = -1, c;
	bool dry = false;
	const char *bad_timeout = NULL;
	char *bad_tune = NULL;

	o->timeout_ms = VOLUME_DEFAULT_TIMEOUT_MS;
	o->tune = volume_runtime_defaults();
	while ((c = getopt_long(argc, argv, "nyqhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': dry = true; break;
		case 'y': o->repair = true; break;
		case 'q': o->quiet = true; break;
		case OPT_REBUILD: o->rebuild = o->repair = true; break;
		case OPT_DEEP: o->deep = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_PROGRESS: progress = 1; break;
		case OPT_NO_PROGRESS: progress = 0; break;
		case OPT_TIMEOUT:
			if (!volume_parse_timeout(optarg, &o->timeout_ms))
				bad_timeout = optarg;
			break;
		case OPT_TUNE:
			if (!bad_tune)
				volume_runtime_tune(&o->tune, optarg, &bad_tune);
			break;
		case 'h': usage(stdout); return FSCK_EXIT_CLEAN;
		case 'V': printf("ecfs-fsck %s\n", ECFS_VERSION); return FSCK_EXIT_CLEAN;
		default: usage(stderr); return FSCK_EXIT_USAGE;
		}
	}
	/* the daemon's words for its -o timeout=; the message lives until exit */
	static char why[512];
	if (bad_timeout || bad_tune) {
		if (bad_timeout)
			snprintf(why, sizeof(why), "--timeout=%s: " VOLUME_TIMEOUT_RANGE, bad_timeout);
		else
			snprintf(why, sizeof(why), "%s", bad_tune);
		g_free(bad_tune);
	}
	*bad = bad_timeout || bad_tune ? why
	       : optind != argc - 1 ? "give one MEMBER:MEMBER:... list"
	       : dry && o->rebuild ? "-n and --rebuild exclude each other"
	       : dry && o->repair ? "-n and -y exclude each other"
	       : o->deep && o->rebuild ? "--deep reads everything; it does not go with --rebuild"
	       : NULL;
	if (*bad) {
		usage(stderr);
		return FSCK_EXIT_USAGE;
	}
	o->progress = progress < 0 ? isatty(STDERR_FILENO) && !o->quiet : progress;
	return GO_ON;
}

/* The member and superblock stage: opens the volume (*mounted: a daemon
 * holds it, in a check), settles its superblocks and members, and opens it
 * again if members got their superblock back.  Returns GO_ON, or the exit
 * status (the run is finished). */
static int open_members(fsck *f, char **paths, bool *mounted)
{
	int n = (int)g_strv_length(paths);
	char *msg = NULL;
	/* volume_open leaves the intents to fsck_pending, which reports them.
	 * The settings are the daemon's defaults: the walk makes the same small
	 * batches of member calls on the relay as a mount (and as the daemon's
	 * online heal, which runs this check), so the relay stays awake as
	 * long (tune.spin, docs/TUNING.md). */
	volume_options vo = { .run = f->o.tune };
	vo.run.read_only = !f->o.repair;
	vo.run.timeout_ms = f->o.timeout_ms;
	/* a run goes on without a member rather than ask it again: one that
	 * stops answering a read is given up after its bound */
	vo.run.give_up_at_bound = true;
	if (!check_member_paths(f, paths, n))
		return finish(f, FSCK_EXIT_OPERATIONAL, "no given member holds an ecfs volume "
		              "(" ECFS_META_DIR "/superblock): nothing to check");
	int rc = volume_open((const char *const *)paths, n, &vo, &f->v, &msg), st = GO_ON;
	if (rc == -EBUSY) {
		st = finish_why(f, FSCK_EXIT_OPERATIONAL, "refusing to repair a mounted volume: %s",
		                msg);
	} else if (rc < 0) {
		/* More than m members unusable is damage beyond repair; anything
		 * else (wrong members, foreign volume, bad arguments) is ours. */
		st = finish_why(f, rc == -EIO ? FSCK_EXIT_UNCORRECTED : FSCK_EXIT_OPERATIONAL,
		                "cannot open the volume: %s", msg ? msg : g_strerror(-rc));
	}
	if (st != GO_ON) {
		g_free(msg);
		return st;
	}
	f->k = volume_k(f->v);
	f->m = volume_m(f->v);
	f->n = volume_n(f->v);
	if (!f->o.repair) {
		char who[256];
		*mounted = volume_locked(f, who, sizeof(who));
		if (*mounted)
			fprintf(stderr, "ecfs-fsck: note: the volume is mounted (%s): writes in flight "
			        "may show as problems\n", who);
	}
	char *shared = volume_same_filesystem(f->v);
	if (shared)
		fprintf(stderr, "ecfs-fsck: note: members %s share one filesystem: they fill up "
		        "together, and one failure of it fails them all\n", shared);
	g_free(shared);
	superblock ref;
	if (check_superblocks(f, &ref) < 0)
		return finish(f, FSCK_EXIT_OPERATIONAL, "no healthy member has a readable superblock");
	if (check_members(f, &ref)) {
		/* The rebuilt members take their place again: reopen. */
		volume_close(f->v);
		f->v = NULL;
		rc = volume_open((const char *const *)paths, n, &vo, &f->v, &msg);
		if (rc < 0) {
			st = finish_why(f, FSCK_EXIT_OPERATIONAL, "cannot reopen the volume: %s",
			                msg ? msg : "");
			g_free(msg);
		}
	}
	return st;
}

/* The walk: what a crash left (not on a mounted volume, where it is in
 * use), then the namespace and every file.  Returns the exit status (the
 * run is finished). */
static int check_volume(fsck *f, bool mounted)
{
	for (int i = 0; i < f->n; i++)
		if (volume_member_ok(f->v, i))
			f->walk_mask |= 1ull << i;
	f->links = g_hash_table_new_full(file_id_hash, file_id_equal, g_free, g_free);
	f->start_us = g_get_monotonic_time();
	if (f->o.progress)
		fsck_count_totals(f);
	if (!mounted)
		fsck_pending(f);
	/* a volume root's attributes still on the member roots move to their
	 * stand-in before the walk judges the member roots */
	if (f->o.repair)
		rootattrs_settle(f->v, false);
	int rc = fsck_tree(f);
	/* Members given up in calls the stripe layer made for the repair
	 * (headers, syncs) were not seen by the calls above. */
	for (int i = 0; i < f->n; i++)
		if (memberio_lost(volume_memberio(f->v), i))
			fsck_member_lost(f, i);
	fsck_progress(f, true);
	clear_progress(output_of(f));
	/* Every member whole again: none missed anything any more, and every
	 * name is on every member (a listing may read m + 1 of them). */
	if (f->o.repair && rc == 0 && !f->repairable && !f->unrepairable && !f->failed &&
	    volume_failed_count(f->v) == 0) {
		for (int i = 0; i < f->n; i++)
			if (volume_healing_mask(f->v) >> i & 1)
				volume_missed_healed(f->v, i, (uint64_t)g_get_real_time());
		if (volume_names_settle(f->v) < 0)
			fprintf(stderr, "ecfs-fsck: note: cannot mark the names settled: a listing "
			        "still reads every member\n");
	}

	int status = FSCK_EXIT_CLEAN;
	if (f->repaired)
		status |= FSCK_EXIT_CORRECTED;
	if (f->repairable || f->unrepairable || f->failed)
		status |= FSCK_EXIT_UNCORRECTED;
	if (rc < 0)
		return finish_why(f, status | FSCK_EXIT_OPERATIONAL, "the check stopped early: %s",
		                  g_strerror(-rc));
	return finish(f, status, NULL);
}

int main(int argc, char **argv)
{
	output out = { .json = g_string_new(NULL) };
	const fsck_sink sink = { output_problem, output_progress, &out };
	fsck f = { .sink = &sink };
	const char *bad = NULL;
	bool mounted = false;

	ecfs_log_init("ecfs-fsck", false, false);
	int st = parse_command_line(argc, argv, &f.o, &bad);
	if (st == FSCK_EXIT_CLEAN) {
		g_string_free(out.json, TRUE);
		return st;
	}
	if (st != GO_ON)
		return finish(&f, st, bad);
	/* Only files with a chunk known lost are read at all. */
	f.quick = f.o.rebuild;
	ecfs_raise_fd_limit();

	char **paths = g_strsplit(argv[optind], ":", -1);
	st = open_members(&f, paths, &mounted);
	g_strfreev(paths);
	return st != GO_ON ? st : check_volume(&f, mounted);
}
