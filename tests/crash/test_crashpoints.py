# SPDX-License-Identifier: MIT
"""Crash-point enumeration: the daemon killed after each member operation.

For each workload of crashlib (sequential write, overwrite in the middle,
append to a partial stripe, truncate down and up, rename over an existing
file, small random writes with fsync, writes into a laid-out file): run it once from its initial state
to learn W, the number of mutating member operations of the whole mount
(the daemon's "member writes: W" line), then again for N in 1..W with
ECFS_FAULT=abort_after=N, which makes the daemon SIGKILL itself right after
its Nth member operation.  Each crash state must then pass
crashlib.verify_state: mounted without fsck, with all members and with
any m of them hidden (each time on the state made afresh by a new run),
every file reads entirely and holds old or new content per stripe,
fsync'd data intact; fsck -y repairs, fsck -n is clean, and the contents
still check.

CI runs N = 1..40 and a seeded stride beyond, two hidden subsets per N;
ECFS_CRASH_FULL=1 every N and every subset.  Needs a fault-injection build
(-Dfault_injection=true); skips otherwise.

ECFS_CRASH_QUORUM=5 runs the workloads under -o write_quorum=5 with one
member left out of every write (crashlib.QUORUM).

One crash point (as a failure names it): ECFS_CRASH_N=N; ECFS_TEST_KEEP=1
keeps the volumes (in /dev/shm/ecfs-test-*).

usage: test_crashpoints.py ECFS ECFS_FSCK [CrashPointTest.test_NAME ...]"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import crashlib as C  # noqa: E402

H = C.H
FIRST = 40          # every crash point up to this one in CI
STRIDED = 24        # and about this many beyond it
SUBSETS = 2         # hidden m-subsets per crash point in CI


def crash_points(w, rng):
    if C.FULL or w <= FIRST:
        return list(range(1, w + 1))
    stride = max(1, -(-(w - FIRST) // STRIDED))
    start = FIRST + 1 + rng.randrange(stride)
    return list(range(1, FIRST + 1)) + list(range(start, w + 1, stride))


class CrashPointTest(H.MountedCase):

    def run_workload(self, v, wl):
        """Runs wl on v (mounted); returns its recorder (crash or not)."""
        rec = C.Recorder(v.mnt, wl.initial, alive_fn=v.alive)
        try:
            wl.run(rec)
        except C.Crashed:
            rec.abandon()
        return rec

    def count_writes(self, tmpl, wl):
        v = C.new_volume(tmpl.members)
        try:
            if not C.start_run(v):
                self.fail(f"mount failed (exit {v.last_exit}):\n{v.log()}")
            rec = self.run_workload(v, wl)
            self.assertIsNone(rec.error, v.log())
            self.assertEqual(len(rec.versions), len(C.model(wl).versions),
                             "the workload failed without a fault:\n" + v.log())
            self.assert_clean_unmount(v)
            w = C.member_writes(v)
            if w is not None:
                C.left_out(v)
        finally:
            v.cleanup()
        if w is None:
            self.skipTest("no 'member writes: W' line: the daemon was not "
                          "built with -Dfault_injection=true")
        return w

    def crash_at(self, tmpl, wl, n, problems):
        """A fresh copy of the initial members, the workload run on it with
        abort_after=n; returns (volume, recorder, durable, name-set floor),
        or None if the daemon did not die (the run did fewer member
        operations than counted: threads finished in another order)."""
        v = C.new_volume(tmpl.members)
        try:
            mounted = C.start_run(v, {"ECFS_FAULT": f"abort_after={n}"})
            rec = C.Recorder(v.mnt, wl.initial)
            if mounted:
                rec = self.run_workload(v, wl)
            rc = C.stop(v) if mounted else v.last_exit
            if rec.error:
                problems.append(f"N={n}: {rec.error}\n{v.log(1500)}")
        except BaseException:
            v.cleanup()
            raise
        if rc != -9:
            v.cleanup()
            return None
        return (v, rec) + rec.promises()

    def enumerate(self, name):
        C.skip_pending(self, "points", name)
        wl = C.WORKLOADS[name]
        rng = random.Random(f"crashpoints-{name}")
        tmpl = C.make_template(wl)
        self.addCleanup(tmpl.cleanup)
        w = self.count_writes(tmpl, wl)
        points = crash_points(w, rng)
        if os.environ.get("ECFS_CRASH_N"):
            points = [int(os.environ["ECFS_CRASH_N"])]   # to reproduce one
        problems, crashed, missed = [], 0, []
        for n in points:
            def make_state(n=n):
                return self.crash_at(tmpl, wl, n, problems)
            probs, ok = C.verify_state(make_state, rng, SUBSETS, f"N={n}")
            problems += probs
            if ok:
                crashed += 1
            else:
                missed.append(n)
        # A handful of points past the real end is normal; most must crash.
        if len(missed) > len(points) // 4:
            problems.append(f"the daemon did not die at {len(missed)} of "
                            f"{len(points)} crash points: {missed[:20]}")
        C.report(self, f"crash points {name}", problems,
                 f"W={w}, {len(points)} points, {crashed} crashed and checked")

    def test_seqwrite(self):
        self.enumerate("seqwrite")

    def test_overwrite(self):
        self.enumerate("overwrite")

    def test_append(self):
        self.enumerate("append")

    def test_truncate(self):
        self.enumerate("truncate")

    def test_rename(self):
        self.enumerate("rename")

    def test_random(self):
        self.enumerate("random")

    def test_laidout(self):
        self.enumerate("laidout")


if __name__ == "__main__":
    sys.exit(C.main())
