# SPDX-License-Identifier: MIT
"""Small reads of members whose reads cannot wait (tmpfs): a read that asks
one strip is made on the calling thread, not on the member's worker
(docs/DESIGN.md section 4, reading step 1).  It still judges every strip
it reads: a strip that does not verify under a 4 KiB read is decoded
around and rewritten.  And it still never waits long on a member that
stops answering: a member whose reads a fault rule hangs (ECFS_FAULT,
builds with -Dfault_injection) is read on its worker, within the bound
of bounded reads, and stays in service.

The members are tmpfs mounts (root only, as the daemon).

usage: test_smallread.py ECFS_BINARY [unittest args]"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

K, M = 4, 2
N = K + M
SIZE = 2 * 1024 * 1024 + 1234   # several whole stripes and a short one
STRIPE = 3                        # the stripe read (not stripe 0, read at open)
TIMEOUT = 7.0                     # the member timeout (the bound is 2 s)


class SmallReadTest(H.MountedCase):
    def tmpfs_volume(self):
        v = self.volume(N)
        for p in v.members:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m",
                            "ecfs-test-small", p], check=True)
            self.addCleanup(subprocess.run, ["umount", "-l", p])
        return v

    def stored_file(self, v, seed):
        """Writes one file healthy and unmounts: (its path under the mount
        point, its bytes, its rotation, its strip size)."""
        mnt = self.mount(v, f"k={K},m={M}")
        data = H.pattern(SIZE, seed)
        path = os.path.join(mnt, "f")
        H.write_file(path, data, fsync=True)
        lay = H.layout(path)
        self.assert_clean_unmount(v)
        return path, data, int(lay["rotation"]), int(lay["strip_size"])

    def test_bad_strip_under_small_read(self):
        """A 4 KiB read inside a data strip that does not verify returns
        the right bytes, decoded from the others, and rewrites the strip."""
        v = self.tmpfs_volume()
        path, data, rot, strip = self.stored_file(v, 5)
        pos = 1
        member = (rot + pos) % N
        chunk = v.chunk_path(member, "f")
        at = H.chunk_offsets(chunk, STRIPE)[1] + 5000
        with open(chunk, "r+b") as f:
            f.seek(at)
            old = f.read(16)
            f.seek(at)
            f.write(bytes(b ^ 0xFF for b in old))
        mnt = self.mount(v)
        off = STRIPE * K * strip + pos * strip + 4096
        fd = os.open(path, os.O_RDONLY)
        try:
            got = os.pread(fd, 4096, off)
        finally:
            os.close(fd)
        self.assertEqual(got, data[off:off + 4096], "the bad strip's bytes were read")
        rep = H.health(mnt)
        self.assertGreater(int(rep["strips_healed"]), 0, rep)
        self.assertEqual(rep["members_failed"], "0", rep)
        self.assert_clean_unmount(v)
        with open(chunk, "rb") as f:
            f.seek(at)
            self.assertEqual(f.read(16), old, "the bad strip was not rewritten")

    def test_hung_member_under_small_read(self):
        """Once the file is open the data reads of the member of one strip
        hang: an 8 KiB read across that strip and the one before returns
        exact data within the bound, well before the member timeout, and
        the member is not failed for it.  (The close then waits for the
        hung call until the member timeout gives it up, hence a short
        one.)"""
        v = self.tmpfs_volume()
        path, data, rot, strip = self.stored_file(v, 6)
        off = STRIPE * K * strip + 2 * strip - 4096   # ends strip 1, begins strip 2
        member = (rot + 2) % N
        arm = os.path.join(v.base, "armed")
        mnt = self.mount_faulty(v, f"member={member},op=data,armed={arm},hang",
                                f"timeout={TIMEOUT:g}")
        fd = os.open(path, os.O_RDONLY)
        try:
            open(arm, "w").close()
            start = time.monotonic()
            got = os.pread(fd, 8192, off)
            took = time.monotonic() - start
            h = H.health(mnt)
        finally:
            os.close(fd)
        self.assertEqual(got, data[off:off + 8192], f"member {member} hung")
        self.assertLess(took, TIMEOUT - 2,
                        f"the read took {took:.1f} s with member {member} hung "
                        f"(member timeout {TIMEOUT:g} s)")
        self.assertTrue(h.get(f"member.{member}", "").startswith("up"),
                        f"member {member} not up: {h}")
        self.assert_clean_unmount(v)

if __name__ == "__main__":
    sys.exit(H.main())
