# SPDX-License-Identifier: MIT
"""Power-loss simulation from recorded member operations.

Each workload of crashlib runs once with ECFS_RECORD (docs/RECORD.md) on a
copy of its initial members; the application-side promises (fsyncs) are
tied to the record by the number of operations recorded when each call
returned.  replay.Record then builds crash states: every prefix of the
record, and at each barrier round states where what was not yet synced is
dropped, reordered or torn at 4 KiB pages, independently on each member
(see replay.py for the model).  Each state is applied to a fresh copy of
the initial members and must pass crashlib.verify_state: mounted without
fsck (also with m members hidden) every file reads and holds old or new
content per stripe with fsync'd data intact; fsck -y repairs, fsck -n is
clean, and the contents still check.

First, the record itself is checked: replaying all of it onto the initial
members must give exactly the members the daemon left.

CI: a seeded sample of STATES states per workload, one hidden m-subset
each; ECFS_CRASH_FULL=1: every state, every subset.  Needs a fault-
injection build (-Dfault_injection=true); skips otherwise.

ECFS_CRASH_STATES=S samples S states instead of 50.  One state (as a
failure names it): ECFS_CRASH_STATE=POINT/MODE/SEED;
ECFS_TEST_KEEP=1 keeps the volumes (in /dev/shm/ecfs-test-*).

usage: test_powerloss.py ECFS ECFS_FSCK [PowerLossTest.test_NAME ...]"""

import hashlib
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import crashlib as C  # noqa: E402
import replay  # noqa: E402

H = C.H
STATES = int(os.environ.get("ECFS_CRASH_STATES", "50"))  # per workload in CI
SUBSETS = 1         # hidden m-subsets per state in CI


def tree_digest(root):
    """{relative path: (type, content hash, mode)} of a member, without the
    lock file (its content is the holder's pid, not written by mop_*)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if rel == os.path.join(".ecfs", "lock"):
                continue
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out[rel] = ("file", hashlib.sha256(f.read()).hexdigest(),
                                st.st_mode)
            else:
                out[rel] = ("dir", st.st_mode)
    return out


def count_ops(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


class PowerLossTest(H.MountedCase):

    def record(self, tmpl, wl):
        """Runs wl with ECFS_RECORD; returns (Recorder, Record)."""
        recdir = tempfile.mkdtemp(prefix="ecfs-record-", dir=C.tmpdir())
        self.addCleanup(shutil.rmtree, recdir, True)
        v = C.new_volume(tmpl.members)
        self.addCleanup(v.cleanup)
        ops = os.path.join(recdir, "ops.jsonl")
        if not C.start_run(v, {"ECFS_RECORD": recdir}):
            self.fail(f"mount failed (exit {v.last_exit}):\n{v.log()}")
        rec = C.Recorder(v.mnt, wl.initial, mark_fn=lambda: count_ops(ops),
                         alive_fn=v.alive)
        try:
            wl.run(rec)
        except C.Crashed as e:
            self.fail(f"the workload failed: {e}\n{v.log()}")
        self.assert_clean_unmount(v)
        if not os.path.exists(ops):
            self.skipTest("no ops.jsonl: the daemon was not built with "
                          "-Dfault_injection=true")
        C.left_out(v)
        record = replay.Record(recdir, tmpl.members)
        # the record is complete: replaying it all gives the members the
        # daemon left
        c = C.new_volume(tmpl.members)
        try:
            record.apply(record.choose(len(record.ops), "prefix"), c.members,
                         translate=False)
            for i in range(C.N_MEMBERS):
                self.assertEqual(tree_digest(c.members[i]),
                                 tree_digest(v.members[i]),
                                 f"member {i}: replaying the record does not "
                                 "give what the daemon left")
        finally:
            c.cleanup()
        return rec, record

    def simulate(self, name):
        C.skip_pending(self, "powerloss", name)
        wl = C.WORKLOADS[name]
        rng = random.Random(f"powerloss-{name}")
        tmpl = C.make_template(wl)
        self.addCleanup(tmpl.cleanup)
        rec, record = self.record(tmpl, wl)
        states = record.states(rng, None if C.FULL else STATES)
        if os.environ.get("ECFS_CRASH_STATE"):
            # one state, to reproduce a failure: POINT/MODE/SEED
            point, mode, seed = os.environ["ECFS_CRASH_STATE"].split("/")
            states = [(int(point), mode, int(seed))]
        problems = []
        for point, mode, seed in states:
            def make_state(point=point, mode=mode, seed=seed):
                v = C.new_volume(tmpl.members)
                record.apply(record.choose(point, mode, seed), v.members)
                return (v, rec) + rec.promises(upto_mark=point)
            problems += C.verify_state(make_state, rng, SUBSETS,
                                       f"state {point}/{mode}/{seed}")[0]
        C.report(self, f"power loss {name}", problems,
                 f"{len(record.ops)} operations, {len(record.barriers)} "
                 f"fsyncs, {len(states)} states checked")

    def test_seqwrite(self):
        self.simulate("seqwrite")

    def test_overwrite(self):
        self.simulate("overwrite")

    def test_append(self):
        self.simulate("append")

    def test_truncate(self):
        self.simulate("truncate")

    def test_rename(self):
        self.simulate("rename")

    def test_random(self):
        self.simulate("random")

    def test_laidout(self):
        self.simulate("laidout")


if __name__ == "__main__":
    sys.exit(C.main())
