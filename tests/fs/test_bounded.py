# SPDX-License-Identifier: MIT
"""Reads bounded against a member that stops answering (docs/DESIGN.md,
bounded reads): a read waits for a member no longer than
max(2 s, 4x its latency), then decodes from the others, while the member
call goes on in the background; only the member timeout fails the member.

An injected hang (ECFS_FAULT op=data,armed=PATH,hang, builds with
-Dfault_injection) armed once the file is open: the data reads (pread,
preadv) of the member holding each data position in turn hang, and the file still reads back
exact, well within the member timeout, with the member still in service.
(Lookups and getattr are not bounded yet: op=data leaves them alone.)

usage: test_bounded.py ECFS_BINARY [unittest args]"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402
import test_faults as F  # noqa: E402

TIMEOUT = 20.0   # the member timeout: what the read must stay well under


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
        mnt = self.mount_faulty(v, f"member={j},op=data,armed={arm},hang",
                                f"timeout={TIMEOUT:g}")
        H.drop_caches()
        with open(path, "rb") as f:
            open(arm, "w").close()
            armed = time.monotonic()
            got = f.read()
            took = time.monotonic() - armed
            self.assertEqual(got, data, f"member {j} hung in the reads")
            self.assertLess(took, TIMEOUT / 2,
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
        self.assert_clean_unmount(v)

    def test_hang_in_data_reads(self):
        """Every read of the member holding one data position hangs once
        the file is open, each data position in turn: the read decodes
        around it and returns exact data within half the member timeout,
        and the member is not failed for it."""
        for pos in range(F.K):
            with self.subTest(position=pos):
                self.hang_after_open(pos)


if __name__ == "__main__":
    sys.exit(H.main())
