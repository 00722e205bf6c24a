/* SPDX-License-Identifier: MIT */
/*
 * What a crash leaves outside the namespace (fsck_pending, fsck.h):
 * intents finished before the walk, and the orphans of files unlinked
 * while open; and the census of journals and logs before the walk
 * (fsck_journal_census).
 */
#include "fsck.h"

#include <errno.h>
#include <fcntl.h>

#include <glib.h>

#include "fsck_view.h"
#include "intent.h"
#include "journal.h"
#include "memberio.h"
#include "memberops.h"
#include "smalllog_replay.h"
#include "volume_internal.h"
#include "volume_paths.h"

static void report_intent(void *arg, const char *op, const char *from, const char *to,
                          int copies)
{
	fsck *f = arg;
	fsck_problem(f, "intent", from, -1, 0, 0, fsck_outcome(f, 0),
	             "a %s%s%s interrupted by a crash (its record is on %d of %d members); "
	             "repair finishes it on every member", op, to ? " to " : "", to ? to : "",
	             copies, f->n);
}

typedef struct orphan_call {
	volume *v;
	int mb;
	const char *name;
} orphan_call;

static int remove_orphan(void *arg)
{
	const orphan_call *o = arg;
	char *path = g_strdup_printf(ECFS_META_DIR "/orphans/%s", o->name);
	int root = volume_root_fd(o->v, o->mb);
	int rc = volume_meta_unlinkat(o->v, o->mb, root, path, 0);

	if (rc == -EISDIR)
		rc = volume_meta_unlinkat(o->v, o->mb, root, path, AT_REMOVEDIR);
	g_free(path);
	return rc;
}

/* The member's orphan folder: files that were unlinked while open when
 * the daemon stopped.  Nothing can reach them any more. */
static void check_orphans(fsck *f, int mb)
{
	/* .ecfs held open since the probe: orphans is one component below */
	list_call l = { volume_meta_fd(f->v, mb), "orphans", 0, NULL };

	if (fsck_on_member(f, mb, fsck_list_run, &l) < 0 || !l.names)
		return;
	for (guint i = 0; i < l.names->len && !fsck_gone(f, mb); i++) {
		const char *name = l.names->pdata[i];
		orphan_call o = { f->v, mb, name };
		int rc = f->o.repair ? fsck_on_member(f, mb, remove_orphan, &o) : 0;
		if (fsck_gone(f, mb))
			break;
		fsck_problem(f, "orphan", NULL, mb, 0, 0, fsck_outcome(f, rc),
		             ECFS_META_DIR "/orphans/%s: a file unlinked while open, left by a "
		             "crash; repair removes it%s%s", name, rc ? ": " : "",
		             rc ? g_strerror(-rc) : "");
	}
	g_ptr_array_unref(l.names);
}

void fsck_pending(fsck *f)
{
	if (f->o.repair)
		intent_replay(f->v, report_intent, f);
	else
		intent_scan(f->v, report_intent, f);
	for (int mb = 0; mb < f->n; mb++) {
		if (!volume_member_ok(f->v, mb)) {
			/* failed while finishing an intent (or reading them) */
			if (memberio_lost(volume_memberio(f->v), mb))
				fsck_member_lost(f, mb);
			f->walk_mask &= ~(1ull << mb);
		}
		if (f->walk_mask >> mb & 1)
			check_orphans(f, mb);
	}
}

/* A member of the run: the argument of no_journal_run. */
struct member_of {
	fsck *f;
	int mb;
};

/* 1 if the member holds neither a journal nor a log with records, 2 if
 * it holds no log copy at all (an empty or missing log folder) either. */
static int no_journal_run(void *arg)
{
	const struct member_of *o = arg;
	if (!journal_member_none(o->f->v, o->mb) || !smalllog_member_none(o->f->v, o->mb))
		return 0;
	return volume_meta_dir_none(o->f->v, o->mb, SMALLLOG_DIR, -1) ? 2 : 1;
}

void fsck_journal_census(fsck *f)
{
	bool none = true;

	for (int mb = 0; mb < f->n; mb++) {
		struct member_of o = { f, mb };
		int rc = f->walk_mask >> mb & 1 ? fsck_on_member(f, mb, no_journal_run, &o) : 1;
		none &= rc >= 1;
		if (rc == 2)
			f->no_logs |= 1ull << mb;
	}
	if (none)
		volume_set_journals_none(f->v, true);
}
