# SPDX-License-Identifier: MIT
"""Reads bounded against a member that stops answering (docs/DESIGN.md,
bounded reads): a read waits for a member no longer than
max(2 s, 4x its latency), then decodes from the others, while the member
call goes on in the background; only the member timeout fails the member.

An injected hang (ECFS_FAULT op=data,armed=PATH,hang, builds with
-Dfault_injection) armed once the file is open: the data reads (pread,
preadv) of the member holding each data position in turn hang, and the file still reads back
exact, well within the member timeout, with the member still in service.
Lookups and stats that come after the hang go around the member too.

usage: test_bounded.py ECFS_BINARY [unittest args]"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402
import test_faults as F  # noqa: E402

TIMEOUT = 20.0   # the member timeout: what the read must stay well under
# The bound of a read (2 s here) once, with room for a loaded machine (a
# read took 4.3 s at load 12): the file's four 1 MiB reads waiting for the
# member each would take 8 s.
ONE_WAIT = 6.0


class BoundedReadTest(F.FaultCase):
    def data_member(self, v, path, pos):
        """The member that holds data position pos of the file: only a
        member holding data is read while the volume is healthy, so only
        its hang is one a read can meet."""
        self.mount(v)
        rot = int(H.layout(path)["rotation"])
        self.assert_clean_unmount(v)
        return (pos + rot) % F.N

    def hang_after_open(self, pos):
        v, path, data = self.stored_file(40 + pos)
        j = self.data_member(v, path, pos)
        arm = os.path.join(os.path.dirname(v.members[0]), f"armed{j}")
        # Every call of the member takes a millisecond, as a disk's may:
        # then its calls go to its own worker, not to the relay, and a
        # call queued behind the hung one waits for it.
        mnt = self.mount_faulty(v, f"member={j},op=data,armed={arm},hang;"
                                f"member={j},op=any,delay=1", f"timeout={TIMEOUT:g}")
        H.drop_caches()
        with open(path, "rb") as f:
            open(arm, "w").close()
            armed = time.monotonic()
            got = f.read()
            took = time.monotonic() - armed
            self.assertEqual(got, data, f"member {j} hung in the reads")
            # one wait of the bound (2 s), with room for a loaded machine:
            # later reads, and the root checks they make, go around the
            # member without waiting again
            self.assertLess(took, ONE_WAIT,
                            f"the read took {took:.1f} s with member {j} hung "
                            f"(member timeout {TIMEOUT:g} s)")
            # at once: the hung call goes on, and the watchdog fails the
            # member only once it is TIMEOUT old
            h = H.health(mnt)
            asked = time.monotonic() - armed
            self.assertTrue(h[f"member.{j}"].startswith("up"),
                            f"member {j} not up {asked:.1f} s after its first hang "
                            f"(the read took {took:.1f} s): {h}")
            self.assertGreater(int(h["strips_decoded"]), 0,
                               f"the read never met member {j}'s hang: {h}")
            # lookups and stats go around the member's hung call too
            start = time.monotonic()
            with self.assertRaises(FileNotFoundError):
                os.stat(os.path.join(mnt, "absent"))
            self.assertEqual(os.stat(path).st_size, len(data))
            took = time.monotonic() - start
            self.assertLess(took, TIMEOUT / 4,
                            f"a lookup and a stat took {took:.1f} s with member {j} hung")
        self.assert_clean_unmount(v)

    def test_hang_in_data_reads(self):
        """Every read of the member holding one data position hangs once
        the file is open, each data position in turn: the read decodes
        around it and returns exact data after one wait of the bound,
        lookups and stats do not wait for the member either, and it is not
        failed for it."""
        for pos in range(F.K):
            with self.subTest(position=pos):
                self.hang_after_open(pos)


class BoundedQueryTest(F.FaultCase):
    """A namespace query (a lookup, a stat, a listing) that meets a
    member's first hang: the member is not known as stalled yet when the
    query asks it, and the query still waits for it no longer than its
    bound, then answers from the others; the member stays in service."""

    QUERY_TIMEOUT = 30.0  # the member timeout, far above the bound
    ANSWERED = 8.0        # one bound (2 s), with wide room for a loaded machine

    def hung_query(self, j, query, extra="", before=None):
        v, path, data = self.stored_file(60 + j)
        mnt = self.mount(v, f"k={F.K},m={F.M}")
        os.mkdir(os.path.join(mnt, "d"))
        for name in ("x", "y", "z"):
            H.write_file(os.path.join(mnt, "d", name), name.encode() * 100)
        self.assert_clean_unmount(v)
        arm = os.path.join(os.path.dirname(v.members[0]), f"armed{j}")
        mnt = self.mount_faulty(v, f"member={j},op=read,armed={arm},hang{extra}",
                                f"timeout={self.QUERY_TIMEOUT:g}")
        if before:
            before(mnt)
        open(arm, "w").close()
        start = time.monotonic()
        query(mnt, data)
        took = time.monotonic() - start
        self.assertLess(took, self.ANSWERED,
                        f"the query took {took:.1f} s on member {j}'s first hang "
                        f"(member timeout {self.QUERY_TIMEOUT:g} s)")
        h = H.health(mnt)
        self.assertTrue(h[f"member.{j}"].startswith("up"), f"member {j} failed: {h}")
        self.assert_clean_unmount(v)

    def test_lookup_meets_the_first_hang(self):
        """Member 0 (the one a lookup asks first) hangs on the relay: a
        lookup of a name no member holds answers ENOENT, then a stat of
        the file answers its size."""
        def query(mnt, data):
            with self.assertRaises(FileNotFoundError):
                os.stat(os.path.join(mnt, "absent"))
            self.assertEqual(os.stat(os.path.join(mnt, "f")).st_size, len(data))
        self.hung_query(0, query)

    def test_stat_meets_the_first_hang_on_a_worker(self):
        """Member 2's calls take a millisecond (so they go to its own
        worker, not the relay) and hang: a stat of the file answers."""
        def query(mnt, data):
            self.assertEqual(os.stat(os.path.join(mnt, "f")).st_size, len(data))
        self.hung_query(2, query, f";member=2,op=any,delay=1")

    def test_listing_meets_the_first_hang(self):
        """The directory looked up before the hang: its listing meets
        member 1's hang first, and lists every name."""
        def query(mnt, data):
            self.assertEqual(sorted(os.listdir(os.path.join(mnt, "d"))), ["x", "y", "z"])
        self.hung_query(1, query, before=lambda mnt: os.stat(os.path.join(mnt, "d")))


if __name__ == "__main__":
    sys.exit(H.main())
