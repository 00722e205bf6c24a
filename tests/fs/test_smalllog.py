# SPDX-License-Identifier: MIT
"""The small-write log (-o tune.small_log=on) through real FUSE mounts.

Started by meson as `python3 test_smalllog.py ECFS [unittest args]`.

- Random small overwrites (4 KiB and odd sizes) of a file laid out first
  go to the log: its copies appear on m+1 members while the file is open,
  and reads see the logged bytes, through the page cache and around it,
  before and after an fsync; past its bound (its copies' bytes, or its
  records' count) the log is applied while the file stays open.
- The logged bytes are read back from a copy and checked: a copy whose
  record does not verify is passed over, and with none left the read
  fails with EIO.  After the last close the log is applied:
  the file reads back exact after a remount, and again with two members
  emptied (the stripes hold the writes, not only the log).
- A write that is not logged (whole stripes, a truncate) over logged
  bytes lands after them.
- Replay: the daemon killed with a log synced and not applied; the next
  mount's open applies it, with the copies torn, on one member only, or
  with a record no copy verifies (a gap: the writes before it only).
  ecfs-fsck -n reports it (kind log), -y applies it.
- A member that held the only copies of some records and was away when
  the file was written again loses its copy when the heal (or ecfs-fsck
  -y) makes it current: those records never come back over the newer
  bytes.
"""

import errno
import json
import os
import random
import struct
import subprocess
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


def log_file(v, i):
    d = os.path.join(v.members[i], ".ecfs", "log")
    names = os.listdir(d) if os.path.isdir(d) else []
    return os.path.join(d, names[0]) if names else None


def record_ends(path):
    """Offsets where each record of a log copy ends."""
    with open(path, "rb") as f:
        b = f.read()
    at, ends = 96, []
    while at + 80 <= len(b) and b[at:at + 8] == b"ECFSSREC":
        at += 80 + struct.unpack_from("<I", b, at + 8)[0]
        ends.append(at)
    return ends


def fsck_path():
    return os.path.join(os.path.dirname(H.ECFS), "ecfs-fsck")


def close_quietly(fd):
    try:
        os.close(fd)
    except OSError:
        pass


class SmallLogTest(H.MountedCase):
    def open_rw(self, path):
        fd = os.open(path, os.O_RDWR)
        self.addCleanup(close_quietly, fd)
        return fd

    def close_and_remount(self, v, fd, path, want):
        """The file reads exact while open, then after a remount."""
        H.drop_file_cache(path)
        self.assert_exact(path, bytes(want), "while open")
        os.close(fd)
        self.assert_clean_unmount(v)
        self.mount(v, OPTS)
        self.assert_exact(path, bytes(want), "after remount")
        self.assert_clean_unmount(v)

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

    def test_bound(self):
        """Past tune.small_log_mib in its copies the log is applied while
        the file stays open, and logging goes on after."""
        v = self.volume(6)
        mnt = self.mount(v, OPTS + ",tune.small_log_mib=1,direct_io")
        path = os.path.join(mnt, "f")
        want = bytearray(H.pattern(SIZE, 4))
        H.write_file(path, bytes(want))
        rng = random.Random(5)
        fd = self.open_rw(path)
        sizes = []
        for _ in range(20):
            overwrite(fd, want, rng, 50)
            logs = [os.path.getsize(log_file(v, i)) for i in log_copies(v)]
            sizes.append(max(logs) if logs else 0)
        self.assertTrue(all(s <= 1024 * 1024 + 8192 for s in sizes), sizes)
        self.assertTrue(any(b < a for a, b in zip(sizes, sizes[1:])),
                        f"the log was never applied while open: {sizes}")
        self.close_and_remount(v, fd, path, want)

    def test_bound_records(self):
        """Past 512 records per MiB of tune.small_log_mib (the memory of the
        map of where each logged byte is) the log is applied, however few
        bytes they hold."""
        v = self.volume(6)
        mnt = self.mount(v, OPTS + ",tune.small_log_mib=1,direct_io")
        path = os.path.join(mnt, "f")
        want = bytearray(H.pattern(SIZE, 8))
        H.write_file(path, bytes(want))
        fd = self.open_rw(path)
        sizes = []
        for i in range(600):
            off = (i * 7919) % (SIZE // 2) * 2
            os.pwrite(fd, b"%c" % (i % 256), off)
            want[off] = i % 256
            if i % 50 == 49:
                logs = [os.path.getsize(log_file(v, j)) for j in log_copies(v)]
                sizes.append(max(logs) if logs else 0)
        self.assertTrue(any(b < a for a, b in zip(sizes, sizes[1:])),
                        f"the log was never applied while open: {sizes}")
        self.close_and_remount(v, fd, path, want)

    def test_copy_checked(self):
        """Reads take logged bytes from a copy whose record verifies: one
        that does not is passed over, and with none left the read fails."""
        v = self.volume(6)
        mnt = self.mount(v, OPTS + ",direct_io")
        path = os.path.join(mnt, "f")
        H.write_file(path, bytes(H.pattern(SIZE, 9)))
        fd = self.open_rw(path)
        a, b = os.urandom(4096), os.urandom(4096)
        os.pwrite(fd, a, 5 * 4096)
        os.pwrite(fd, b, 40 * 4096)
        os.pwrite(fd, b"c" * 4096, 80 * 4096)  # appends b's record
        copies = log_copies(v)
        self.assertEqual(len(copies), 3, copies)
        rec_a = 96 + 80          # a's data in every copy
        rec_b = rec_a + 4096 + 80
        for i in copies:
            with open(log_file(v, i), "r+b") as f:
                for at in ([rec_a] if i != copies[-1] else []) + [rec_b]:
                    f.seek(at + 100)
                    x = f.read(1)
                    f.seek(at + 100)
                    f.write(bytes([x[0] ^ 0xFF]))
        self.assertEqual(os.pread(fd, 4096, 5 * 4096), a)
        with self.assertRaises(OSError) as cm:
            os.pread(fd, 4096, 40 * 4096)
        self.assertEqual(cm.exception.errno, errno.EIO)

    def test_unlogged_writes_land_after(self):
        v = self.volume(6)
        mnt = self.mount(v, OPTS)
        path = os.path.join(mnt, "f")
        want = bytearray(H.pattern(SIZE, 2))
        H.write_file(path, bytes(want))
        rng = random.Random(7)
        fd = self.open_rw(path)
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
        self.close_and_remount(v, fd, path, want)



WRITES = 40


class ReplayTest(H.MountedCase):
    def crashed(self):
        """A volume whose daemon was killed after WRITES logged writes and
        an fsync; the file's content after each write (states[i]: after
        i writes) and the members holding the log."""
        v = self.volume(6)
        mnt = self.mount(v, OPTS + ",direct_io")
        path = os.path.join(mnt, "f")
        want = bytearray(H.pattern(SIZE // 4, 3))
        H.write_file(path, bytes(want), fsync=True)
        rng = random.Random(11)
        states = [bytes(want)]
        fd = os.open(path, os.O_RDWR)
        for _ in range(WRITES):
            n = rng.choice([4096, 512, 1000])
            # within one stripe: one record per write
            off = rng.randrange(0, SIZE // 4 // STRIPE) * STRIPE + rng.randrange(0, STRIPE - n)
            if n == 4096:
                off &= ~4095
            data = rng.randbytes(n)
            os.pwrite(fd, data, off)
            want[off:off + n] = data
            states.append(bytes(want))
        os.fsync(fd)
        holders = log_copies(v)
        self.assertEqual(len(holders), 3)
        v.emergency()
        try:
            os.close(fd)
        except OSError:
            pass
        v.unmount()
        for i in holders:
            self.assertEqual(len(record_ends(log_file(v, i))), WRITES)
        return v, states, holders

    def reopen_exact(self, v, want, msg):
        mnt = self.mount(v, OPTS)
        self.assert_exact(os.path.join(mnt, "f"), want, msg)
        self.assertEqual(log_copies(v), [], "the log was not retired")
        self.assert_clean_unmount(v)
        mnt = self.mount(v, "tune.small_log=off")
        self.assert_exact(os.path.join(mnt, "f"), want, msg + " (again, log off)")
        self.assert_clean_unmount(v)

    def test_replay_whole(self):
        v, states, holders = self.crashed()
        # one copy torn in its last record: the others have it
        path = log_file(v, holders[0])
        os.truncate(path, os.path.getsize(path) - 10)
        self.reopen_exact(v, states[-1], "after the replay")

    def test_replay_one_copy(self):
        v, states, holders = self.crashed()
        for i in holders[1:]:
            os.unlink(log_file(v, i))
        self.reopen_exact(v, states[-1], "replayed from one copy")

    def test_replay_gap(self):
        v, states, holders = self.crashed()
        gap = WRITES // 2  # record gap+1 verifies nowhere
        ends = record_ends(log_file(v, holders[0]))
        with open(log_file(v, holders[0]), "r+b") as f:
            f.seek(ends[gap] - 1)
            b = f.read(1)
            f.seek(ends[gap] - 1)
            f.write(bytes([b[0] ^ 1]))
        for i in holders[1:]:
            os.truncate(log_file(v, i), ends[gap - 1] if gap else 96)
        self.reopen_exact(v, states[gap], "replayed up to the gap")

    def test_stale_copy_healed(self):
        self.stale_copy(heal=True)

    def test_stale_copy_fsck(self):
        self.stale_copy(heal=False)

    def stale_copy(self, heal):
        v, states, holders = self.crashed()
        away = holders[0]
        for i in holders[1:]:
            os.truncate(log_file(v, i), 96)  # their records lost
        os.rename(v.members[away], v.members[away] + ".away")
        mnt = self.mount(v, "tune.small_log=off")
        path = os.path.join(mnt, "f")
        self.assert_exact(path, states[0], "without the member that has the log")
        newer = H.pattern(SIZE // 4, 9)
        H.write_file(path, newer, fsync=True)
        self.assert_clean_unmount(v)
        os.rename(v.members[away] + ".away", v.members[away])
        self.assertEqual(len(record_ends(log_file(v, away))), WRITES)
        if heal:
            mnt = self.mount(v, "tune.small_log=off")
            self.wait_healed(mnt)
            self.assert_exact(os.path.join(mnt, "f"), newer, "after the heal")
            self.assert_clean_unmount(v)
        else:
            r = subprocess.run([fsck_path(), "--no-progress", "-y", ":".join(v.members)],
                               capture_output=True, text=True, timeout=120)
            self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        mnt = self.mount(v, "tune.small_log=off")
        self.assert_exact(os.path.join(mnt, "f"), newer, "after a remount")
        self.assert_clean_unmount(v)

    def test_fsck(self):
        v, states, holders = self.crashed()
        r = subprocess.run([fsck_path(), "--no-progress", "--json", "-n", ":".join(v.members)],
                           capture_output=True, text=True, timeout=120)
        rep = json.loads(r.stdout)
        kinds = [(p["kind"], p["status"]) for p in rep["problems"]]
        self.assertIn(("log", "repairable"), kinds, r.stdout)
        self.assertEqual(r.returncode, 4, r.stdout)
        r = subprocess.run([fsck_path(), "--no-progress", "-y", ":".join(v.members)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(log_copies(v), [], "fsck -y did not apply the log")
        r = subprocess.run([fsck_path(), "--no-progress", "-n", ":".join(v.members)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        mnt = self.mount(v, "tune.small_log=off")
        self.assert_exact(os.path.join(mnt, "f"), states[-1], "after fsck -y")
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
