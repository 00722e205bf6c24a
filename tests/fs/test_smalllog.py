# SPDX-License-Identifier: MIT
"""The small-write log (-o tune.small_log=on) through real FUSE mounts.

Started by meson as `python3 test_smalllog.py ECFS [unittest args]`.

- Random small overwrites (4 KiB and odd sizes) of a file laid out first
  go to the log: its copies appear on m+1 members while the file is open,
  and reads see the logged bytes, through the page cache and around it,
  before and after an fsync.  After the last close the log is applied:
  the file reads back exact after a remount, and again with two members
  emptied (the stripes hold the writes, not only the log).
- A write that is not logged (whole stripes, a truncate) over logged
  bytes lands after them.
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

OPTS = "k=4,m=2,strip=4K,tune.small_log=on"
SIZE = 1 << 20
STRIPE = 4 * 4096


def log_copies(v, name_filter=None):
    """Members holding a log file (.ecfs/log/<id>) with records."""
    found = []
    for i, m in enumerate(v.members):
        d = os.path.join(m, ".ecfs", "log")
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if os.path.getsize(os.path.join(d, name)) > 96:
                found.append(i)
    return found


def overwrite(fd, want, rng, count):
    for _ in range(count):
        if rng.random() < 0.7:
            n = 4096
            off = rng.randrange(0, SIZE // 4096) * 4096
        else:
            n = rng.randrange(1, 3000)
            off = rng.randrange(0, SIZE - n)
        data = rng.randbytes(n)
        os.pwrite(fd, data, off)
        want[off:off + n] = data


class SmallLogTest(H.MountedCase):
    def test_random_overwrites(self):
        v = self.volume(6)
        mnt = self.mount(v, OPTS)
        path = os.path.join(mnt, "f")
        want = bytearray(H.pattern(SIZE, 1))
        H.write_file(path, bytes(want), fsync=True)
        rng = random.Random(35)
        fd = os.open(path, os.O_RDWR)
        try:
            overwrite(fd, want, rng, 400)
            self.assertEqual(len(log_copies(v)), 3, "the writes did not reach a log on m+1 members")
            H.drop_file_cache(path)
            self.assert_exact(path, bytes(want), "before fsync")
            os.fsync(fd)
            overwrite(fd, want, rng, 100)
            os.fsync(fd)
            H.drop_file_cache(path)
            self.assert_exact(path, bytes(want), "after fsync")
        finally:
            os.close(fd)
        # (the kernel sends the release after close returns)
        deadline = time.monotonic() + 10
        while log_copies(v) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(log_copies(v), [], "the log was not applied at the last close")
        self.assert_exact(path, bytes(want), "after close")
        self.assert_clean_unmount(v)
        mnt = self.mount(v, OPTS)
        self.assert_exact(path, bytes(want), "after remount")
        self.assert_clean_unmount(v)
        v.lose(0, "empty")
        v.lose(1, "empty")
        mnt = self.mount(v, OPTS + ",noheal")
        self.assert_exact(path, bytes(want), "with two members emptied")
        self.assert_clean_unmount(v)

    def test_unlogged_writes_land_after(self):
        v = self.volume(6)
        mnt = self.mount(v, OPTS)
        path = os.path.join(mnt, "f")
        want = bytearray(H.pattern(SIZE, 2))
        H.write_file(path, bytes(want))
        rng = random.Random(7)
        fd = os.open(path, os.O_RDWR)
        try:
            overwrite(fd, want, rng, 50)
            # whole stripes over logged bytes, then a cut and a regrowth
            whole = rng.randbytes(4 * STRIPE)
            os.pwrite(fd, whole, 8 * STRIPE)
            want[8 * STRIPE:12 * STRIPE] = whole
            overwrite(fd, want, rng, 50)
            os.ftruncate(fd, SIZE // 2 + 100)
            del want[SIZE // 2 + 100:]
            os.ftruncate(fd, SIZE)
            want += bytes(SIZE - len(want))
            H.drop_file_cache(path)
            self.assert_exact(path, bytes(want), "while open")
        finally:
            os.close(fd)
        self.assert_clean_unmount(v)
        mnt = self.mount(v, OPTS)
        self.assert_exact(path, bytes(want), "after remount")
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
