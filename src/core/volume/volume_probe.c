/* SPDX-License-Identifier: MIT */
/*
 * Probing the member directories and judging them together: what each
 * holds (a superblock, nothing, someone else's files), whether it is a
 * mount point where the others are, which volume the superblocks say
 * they belong to, and the place of each member in it.  An empty
 * directory among formatted members is a replaced disk, an unreadable
 * one is failed; n empty ones become a new volume (volume_create.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "mounts.h"
#include "record.h"
#include "superblock.h"
#include "volume_paths.h"
#include "volume_private.h"

static gint by_name(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What a member root holds but for the names reserved there (the
 * lost+found of a fresh filesystem is no content): the count of entries,
 * and in *found (g_malloc'd, if any) a sentence naming the first few in
 * order.  -1 if the directory cannot be read. */
static int root_content(int fd, char **found)
{
	int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	struct dirent *e;

	*found = NULL;
	if (!d) {
		int err = errno;
		if (dup_fd >= 0)
			close(dup_fd);
		g_ptr_array_free(names, TRUE);
		errno = err;
		return -1;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    !volume_root_name_reserved(e->d_name))
			g_ptr_array_add(names, g_strdup(e->d_name));
	closedir(d);
	int count = (int)names->len;
	if (count) {
		GString *s = g_string_new(NULL);
		g_ptr_array_sort(names, by_name);
		g_string_printf(s, "%d entr%s: ", count, count == 1 ? "y" : "ies");
		for (int i = 0; i < count && i < 3; i++)
			g_string_append_printf(s, "%s%s", i ? ", " : "", (char *)names->pdata[i]);
		g_string_append(s, count > 3 ? ", ..." : "");
		*found = g_string_free(s, FALSE);
	}
	g_ptr_array_free(names, TRUE);
	return count;
}

void vol_probe_member(probe *p)
{
	p->metafd = -1;
	p->slot = -1;
	p->rootfd = open(p->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->rootfd < 0) {
		p->state = P_MISSING;
		p->err = errno;
		p->why = g_strdup_printf("cannot open: %s", g_strerror(errno));
		return;
	}
	p->mi = mount_info_of_root(p->rootfd);
	p->guarded = mounts_path_guarded(p->path);
	p->metafd = openat(p->rootfd, ECFS_META_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (p->metafd < 0) {
		bool absent = errno == ENOENT;
		int count = absent ? root_content(p->rootfd, &p->why) : -1;
		if (count < 0) {
			p->state = P_BROKEN;
			p->why = errno == ENOTDIR || errno == ELOOP
			         ? volume_meta_refusal(ECFS_META_DIR)
			         : g_strdup_printf("cannot %s: %s", absent ? "list it"
			                           : "open " ECFS_META_DIR, g_strerror(errno));
		} else if (count == 0) {
			p->state = P_EMPTY;
			p->why = g_strdup("empty: replaced disk, needs rebuild");
		} else {
			p->state = P_FOREIGN; /* why: what it holds */
		}
		return;
	}
	p->err = -superblock_read(p->metafd, &p->sb, &p->why);
	if (!p->err)
		p->err = -volume_meta_dirs_check(p->metafd, &p->why);
	p->state = p->err ? P_BROKEN : P_OK;
}

void vol_probe_free(probe *p)
{
	if (p->rootfd >= 0)
		close(p->rootfd);
	if (p->metafd >= 0)
		close(p->metafd);
	g_free(p->why);
}

/* ---- judging probed members ---- */

/* A member that cannot be used refuses the open: one that holds
 * something else, or a superblock of a version this build cannot read. */
static int refuse_unusable(const probe *p, char **message)
{
	if (p->state == P_FOREIGN) {
		*message = g_strdup_printf(
			"member %s is not empty (%s) and holds no ecfs volume (no " ECFS_META_DIR
			"/superblock): refusing to use it.  Give an empty directory or a freshly "
			"formatted disk; a member of this volume that lost its " ECFS_META_DIR
			" is rebuilt once emptied, or kept with mkdir %s/" ECFS_META_DIR
			" and ecfs-fsck -y", p->path, p->why, p->path);
		return -EINVAL;
	}
	if (p->state == P_BROKEN && p->err == EPROTO) {
		*message = g_strdup_printf("member %s: %s", p->path, p->why);
		return -EPROTO;
	}
	return 0;
}

/* No superblock has a majority: the members that answered, grouped by
 * the superblock they carry, and what each group's differs in from the
 * first group's. */
static char *no_majority(const probe *pr, const superblock *const *sb, int n)
{
	GString *s = g_string_new(NULL);
	bool told[64] = { false };
	int first = -1, answered = 0;

	for (int i = 0; i < n; i++)
		answered += sb[i] != NULL;
	g_string_printf(s, "no superblock is carried by a majority of the %d members that "
	                "answered, so none is believed:", answered);
	for (int i = 0; i < n; i++) {
		if (!sb[i] || told[i])
			continue;
		int count = 0;
		g_string_append(s, first < 0 ? " " : "; ");
		for (int j = i; j < n; j++)
			if (sb[j] && !told[j] && superblock_same(sb[i], sb[j])) {
				g_string_append_printf(s, "%s%s", count++ ? ", " : "", pr[j].path);
				told[j] = true;
			}
		g_string_append(s, count > 1 ? " carry one" : " carries one");
		if (first < 0) {
			first = i;
			continue;
		}
		char *diff = superblock_differs(sb[i], sb[first]);
		g_string_append_printf(s, " that differs in %s", diff);
		g_free(diff);
	}
	return g_string_free(s, FALSE);
}

/* A member whose superblock differs from the majority's (*r) is failed,
 * with what differs, and never followed.  One of another volume (its
 * uuid differs) refuses the open: a wrong directory was given. */
static int fail_differing(probe *p, const superblock *r, int votes, int answered,
                          char **message)
{
	char ua[37], ub[37];
	char *diff = superblock_differs(&p->sb, r);

	if (!diff)
		return 0;
	if (memcmp(p->sb.uuid, r->uuid, 16)) {
		uuid_format(p->sb.uuid, ua);
		uuid_format(r->uuid, ub);
		*message = g_strdup_printf("member %s belongs to another volume (uuid %s, "
		                           "not %s): refusing to use it", p->path, ua, ub);
		g_free(diff);
		return -EINVAL;
	}
	g_free(p->why);
	p->why = g_strdup_printf("its superblock differs from the one %d of the %d members that "
	                         "answered carry (%s): not followed", votes, answered, diff);
	ecfs_log(LOG_WARNING, "member %s: %s", p->path, p->why);
	p->state = P_BROKEN;
	p->err = EINVAL;
	p->slot = p->sb.index; /* its place, if no member in service claims it */
	g_free(diff);
	return 0;
}

/* Picks the reference superblock: the one a majority of the members that
 * answered carry (uuid, geometry, code defaults, checksum and key).  A
 * member that differs from it is failed (fail_differing); with no
 * majority, or a member that contradicts the volume, the open is
 * refused.  Sets *ref to the reference probe (-1 if no member is
 * formatted); returns 0 or a negative errno with *message. */
static int check_superblocks(probe *pr, int n, const volume_options *o, int *ref,
                             char **message)
{
	const superblock *sb[64];
	int answered = 0, votes = 0, rc;

	*ref = -1;
	for (int i = 0; i < n; i++) {
		if ((rc = refuse_unusable(&pr[i], message)) < 0)
			return rc;
		sb[i] = pr[i].state == P_OK ? &pr[i].sb : NULL;
		answered += sb[i] != NULL;
	}
	if (!answered)
		return 0;
	int best = superblock_majority(sb, n);
	if (best < 0) {
		*message = no_majority(pr, sb, n);
		return -EINVAL;
	}
	const superblock r = pr[best].sb;
	for (int i = 0; i < n; i++)
		votes += sb[i] && superblock_same(sb[i], &r);
	for (int i = 0; i < n; i++)
		if (sb[i] && (rc = fail_differing(&pr[i], &r, votes, answered, message)) < 0)
			return rc;
	if (r.n != n) {
		*message = g_strdup_printf("member %s belongs to a volume of %d members "
		                           "(k=%d m=%d) but %d members were given",
		                           pr[best].path, r.n, r.k, r.m, n);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i && pr[i].state == P_OK; j++)
			if (pr[j].state == P_OK && pr[j].sb.index == pr[i].sb.index) {
				*message = g_strdup_printf("members %s and %s both claim index %d of the "
				                           "volume", pr[j].path, pr[i].path, pr[i].sb.index);
				return -EINVAL;
			}
	const volume_geometry *g = &o->geometry;
	if ((g->k && g->k != r.k) || (g->m && g->m != r.m)) {
		*message = g_strdup_printf("the volume has k=%d m=%d; k and m cannot change "
		                           "(given k=%d m=%d)", r.k, r.m, g->k, g->m);
		return -EINVAL;
	}
	if (g->format && g->format != r.version) {
		*message = g_strdup_printf("the volume is of format %d, which cannot change "
		                           "(given format=%d)", r.version, g->format);
		return -EINVAL;
	}
	*ref = best;
	return 0;
}

/* Puts each formatted member in its slot and the others in the free slots. */
void vol_place_members(probe *pr, int n, probe **slot)
{
	bool moved = false;

	for (int i = 0; i < n; i++)
		slot[i] = NULL;
	for (int i = 0; i < n; i++)
		if (pr[i].state == P_OK) {
			slot[pr[i].sb.index] = &pr[i];
			moved |= pr[i].sb.index != i;
		}
	for (int i = 0; i < n; i++)
		if (pr[i].state != P_OK && pr[i].slot >= 0 && pr[i].slot < n && !slot[pr[i].slot])
			slot[pr[i].slot] = &pr[i];
	for (int i = 0, s = 0; i < n; i++) {
		if (pr[i].state == P_OK || (pr[i].slot >= 0 && slot[pr[i].slot] == &pr[i]))
			continue;
		while (slot[s])
			s++;
		slot[s] = &pr[i];
	}
	if (moved)
		for (int i = 0; i < n; i++)
			if (slot[i]->state == P_OK)
				ecfs_log(LOG_INFO, "member %s is index %d of the volume", slot[i]->path, i);
}

/* No member holds a readable volume and not every one is empty: refused,
 * naming the first member that is not empty (or not mounted). */
static int refuse_unformatted(const probe *pr, int n, char **message)
{
	bool any_broken = false;

	for (int i = 0; i < n; i++) {
		any_broken |= pr[i].state == P_BROKEN;
		if (pr[i].state == P_UNMOUNTED && !*message)
			*message = g_strdup_printf("member %s is %s: refusing to create a volume on "
			                           "it (mount its disk first)", pr[i].path, pr[i].why);
	}
	if (*message)
		return -EINVAL;
	for (int i = 0; i < n && !*message; i++)
		if (pr[i].state != P_EMPTY)
			*message = g_strdup_printf("no member holds a readable volume and member %s %s",
			                           pr[i].path, pr[i].why ? pr[i].why : "is unusable");
	return any_broken ? -EINVAL : -ENOENT;
}

/* Fails the members that are not mount points where the others are: a
 * disk that did not mount leaves its empty mount point, which would be
 * taken for a replaced disk and filled on the filesystem beneath. */
static void judge_mounts(probe *pr, int n)
{
	mount_info mi[64];

	for (int i = 0; i < n; i++)
		mi[i] = pr[i].mi;
	for (int i = 0; i < n; i++) {
		int j = mounts_unmounted_beside(mi, n, i);
		if (j < 0)
			continue;
		g_free(pr[i].why);
		pr[i].why = g_strdup_printf("not a mount point while %s is: its disk may not "
		                            "have mounted", pr[j].path);
		pr[i].state = P_UNMOUNTED;
	}
}

/* Members of a new volume that share a filesystem fill up together, and
 * one failure of it fails them all: said once, at creation (and in the
 * health report while mounted). */
static void warn_same_filesystem(const probe *pr, int n, const char *const *paths)
{
	mount_info mi[64];

	for (int i = 0; i < n; i++)
		mi[i] = pr[i].mi;
	char *groups = mounts_same_filesystem(mi, n, ~0ull, paths);
	if (groups)
		ecfs_log(LOG_WARNING, "members on one filesystem: %s; they fill up together, and "
		         "one failure of it fails them all (give each member its own disk)", groups);
	g_free(groups);
}

static void probe_run(void *p)
{
	vol_probe_member(p);
}

static void probe_late(void *p)
{
	vol_probe_free(p);
	g_free(p);
}

/* Probes the members at once, each on a thread of its own, and gives up
 * on one that has not answered within the I/O timeout (there are no
 * member workers yet): it is broken, "no answer", and its thread is left
 * to it.  A member that hangs does not hold the open. */
static void probe_all(probe *pr, const char *const *paths, int n, unsigned timeout_ms)
{
	mio_bounded *b[64];
	probe *p[64];

	for (int i = 0; i < n; i++) {
		p[i] = g_new0(probe, 1);
		p[i]->path = paths[i];
		b[i] = mio_bounded_start(probe_run, probe_late, p[i]);
	}
	int64_t deadline = mio_deadline_ms(timeout_ms);
	for (int i = 0; i < n; i++) {
		if (mio_bounded_wait(b[i], deadline)) {
			pr[i] = *p[i];
			g_free(p[i]);
			continue;
		}
		pr[i] = (probe){ .path = paths[i], .rootfd = -1, .metafd = -1, .slot = -1,
		                 .state = P_BROKEN, .err = ETIMEDOUT };
		pr[i].why = g_strdup_printf("no answer in %u.%u s (a member call hangs)",
		                            timeout_ms / 1000, timeout_ms % 1000 / 100);
	}
}

/* Probes the member directories paths[0..n-1] into pr and judges them
 * together; n empty ones become a new volume.  Returns the index of the
 * probe whose superblock is the reference, or a negative errno with
 * *message. */
int vol_probe_members(probe *pr, const char *const *paths, int n, const volume_options *o,
                      char **message)
{
	int ref, rc, empty = 0;
	superblock sb;

	probe_all(pr, paths, n,
	          memberio_first_wait_ms(o->run.timeout_ms, o->run.give_up_at_bound));
	judge_mounts(pr, n);
	for (int i = 0; i < n; i++)
		empty += pr[i].state == P_EMPTY;
	rc = check_superblocks(pr, n, o, &ref, message);
	if (rc < 0 || ref >= 0)
		return rc < 0 ? rc : ref;
	if (empty != n)
		return refuse_unformatted(pr, n, message);
	for (int i = 0; i < n; i++)
		record_set_root(i, pr[i].rootfd); /* creation is recorded */
	rc = vol_create(pr, n, o, &sb, message);
	if (rc == 0)
		warn_same_filesystem(pr, n, paths);
	return rc < 0 ? rc : 0; /* every probe now holds the new superblock */
}
