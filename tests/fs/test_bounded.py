# SPDX-License-Identifier: MIT
"""Reads bounded against a member that stops answering (docs/DESIGN.md,
bounded reads): a read waits for a member no longer than
max(2 s, 4x its latency), then decodes from the others, while the member
call goes on in the background; only the member timeout fails the member.

An injected hang (ECFS_FAULT op=data,armed=PATH,hang, builds with
-Dfault_injection) armed once the file is open: the data reads (pread,
preadv) of each member in turn hang, and the file still reads back
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
    def hang_after_open(self, j):
        v, path, data = self.stored_file(40 + j)
        arm = os.path.join(os.path.dirname(v.members[0]), f"armed{j}")
        mnt = self.mount_faulty(v, f"member={j},op=data,armed={arm},hang",
                                f"timeout={TIMEOUT:g}")
        H.drop_caches()
        with open(path, "rb") as f:
            open(arm, "w").close()
            start = time.monotonic()
            got = f.read()
            took = time.monotonic() - start
            self.assertEqual(got, data, f"member {j} hung in the reads")
            self.assertLess(took, TIMEOUT / 2,
                            f"the read took {took:.1f} s with member {j} hung "
                            f"(member timeout {TIMEOUT:g} s)")
            # at once: the hung call goes on, and the watchdog fails the
            # member once it is TIMEOUT old
            self.assert_state(mnt, j, "up")
        self.assert_clean_unmount(v)

    def test_hang_in_data_reads(self):
        """Every read of one member hangs once the file is open, each
        member in turn: the read returns exact data within half the
        member timeout, and the member is not failed for it."""
        for j in range(F.N):
            with self.subTest(member=j):
                self.hang_after_open(j)


if __name__ == "__main__":
    sys.exit(H.main())
