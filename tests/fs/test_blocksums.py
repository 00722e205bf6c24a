# SPDX-License-Identifier: MIT
"""Format version 3 (docs/FORMAT.md 4.2): a tag per 4 KiB block of each
strip, so a 4 KiB read reads and verifies about 4 KiB.  A damaged block is
caught by its tag under a small read, which then reads the stripe the
careful way: exact data around and through it, and the strip rewritten.
A healthy 4 KiB random read has the daemon read far less than a strip.
A volume made with -o format=2 stays of version 2: it mounts, reads and
writes, and its format cannot change.

usage: test_blocksums.py ECFS ECFS_FSCK [unittest args]"""

import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

K, M = 4, 2
N = K + M
STRIP = 65536
STRIPE = K * STRIP
SIZE = 40 * STRIPE + 777         # many whole stripes and a short one
OPTS = f"k={K},m={M},strip={STRIP}"
FSCK = None


def superblock_format(v):
    with open(os.path.join(v.members[0], ".ecfs", "superblock")) as f:
        for line in f:
            if line.startswith("format="):
                return int(line.split("=", 1)[1])
    return None


def chunk_version(path):
    with open(path, "rb") as f:
        return int.from_bytes(f.read(12)[8:12], "little")


def rchar(pid):
    """Bytes the process has read through read-like calls so far."""
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise OSError("no rchar")


class BlockSumsTest(H.MountedCase):
    def stored_file(self, v, opts, seed):
        """One file written and synced on a fresh mount, unmounted: (its
        path under the mount point, its bytes, its rotation)."""
        mnt = self.mount(v, opts)
        data = H.pattern(SIZE, seed)
        path = os.path.join(mnt, "f")
        H.write_file(path, data, fsync=True)
        rot = int(H.layout(path)["rotation"])
        self.assert_clean_unmount(v)
        return path, data, rot

    def test_bad_block_read_around(self):
        """One 4 KiB block of a data strip flipped: reads before, of,
        across and after it are exact, the block is caught by its tag
        alone (the blocks beside it still read by theirs), and the bad
        strip is rewritten."""
        v = self.volume(N)
        path, data, rot = self.stored_file(v, OPTS, 3)
        self.assertEqual(superblock_format(v), 3)
        stripe, pos, block = 5, 2, 7
        chunk = v.chunk_path((rot + pos) % N, "f")
        self.assertEqual(chunk_version(chunk), 3)
        at = H.chunk_offsets(chunk, stripe)[1] + block * 4096
        with open(chunk, "r+b") as f:
            f.seek(at + 100)
            old = f.read(8)
            f.seek(at + 100)
            f.write(bytes(b ^ 0xA5 for b in old))
        mnt = self.mount(v, "direct_io")
        base = stripe * STRIPE + pos * STRIP + block * 4096
        fd = os.open(path, os.O_RDONLY)
        try:
            for off, n in ((base - 4096, 4096), (base + 4096, 4096), (base + 8192, 100)):
                self.assertEqual(os.pread(fd, n, off), data[off:off + n], f"at {off}")
            self.assertEqual(H.health(mnt)["strips_healed"], "0",
                             "a block beside the bad one was not read by its tag")
            for off, n in ((base, 4096), (base + 50, 200), (base - 2048, 8192)):
                self.assertEqual(os.pread(fd, n, off), data[off:off + n], f"at {off}")
        finally:
            os.close(fd)
        rep = H.health(mnt)
        self.assertGreater(int(rep["strips_healed"]), 0, rep)
        self.assert_exact(path, data, "whole, after the bad block")
        self.assert_clean_unmount(v)
        with open(chunk, "rb") as f:
            f.seek(at + 100)
            self.assertEqual(f.read(8), old, "the bad strip was not rewritten")

    def test_bad_tag_rewritten(self):
        """A tag of a data strip flipped (its strip and record intact):
        a 4 KiB read of that strip is exact, read the careful way, and the
        strip is written again with its tags, which read back right."""
        v = self.volume(N)
        path, data, rot = self.stored_file(v, OPTS, 5)
        stripe, pos = 9, 1
        chunk = v.chunk_path((rot + pos) % N, "f")
        _, tags_at, tags_len, _ = H.chunk_places(chunk, stripe)
        self.assertEqual(tags_len, STRIP // 4096 * 16)
        with open(chunk, "r+b") as f:
            f.seek(tags_at)
            tags = f.read(tags_len)
            f.seek(tags_at + 3 * 16 + 2)
            f.write(bytes([tags[3 * 16 + 2] ^ 0x01]))
        mnt = self.mount(v, "direct_io")
        off = stripe * STRIPE + pos * STRIP + 10 * 4096
        fd = os.open(path, os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4096, off), data[off:off + 4096])
        finally:
            os.close(fd)
        rep = H.health(mnt)
        self.assertEqual(rep["strips_healed"], "1", rep)
        self.assert_clean_unmount(v)
        with open(chunk, "rb") as f:
            f.seek(tags_at)
            self.assertEqual(f.read(tags_len), tags, "the tags were not rewritten")

    def fsck(self, v, *args):
        return subprocess.run([FSCK, "--no-progress", *args, ":".join(v.members)],
                              capture_output=True, text=True, timeout=60)

    def test_fsck_bad_tags(self):
        """Tags flipped on one member, their strip and record intact: the
        data reads exact, ecfs-fsck -n reports the strip (its stored tags
        are checked against its bytes), -y writes it again, and then the
        volume is clean and the tags right."""
        v = self.volume(N)
        path, data, rot = self.stored_file(v, OPTS, 6)
        chunk = v.chunk_path((rot + 4) % N, "f")  # a parity strip
        _, tags_at, tags_len, _ = H.chunk_places(chunk, 12)
        with open(chunk, "r+b") as f:
            f.seek(tags_at)
            tags = f.read(tags_len)
            f.seek(tags_at)
            f.write(bytes(b ^ 0xFF for b in tags[:16]))
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertIn("tags do not match the strip", r.stdout)
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(chunk, "rb") as f:
            f.seek(tags_at)
            self.assertEqual(f.read(tags_len), tags)
        self.mount(v)
        self.assert_exact(path, data, "after the repair")
        self.assert_clean_unmount(v)

    def random_read_bytes(self, v, path, count=200):
        """Bytes the daemon reads per 4 KiB random read (direct_io, so
        each read is one request of 4 KiB), outside stripe 0."""
        mnt = self.mount(v, "direct_io")
        rng = random.Random(9)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.pread(fd, 4096, STRIPE)  # the open's own reads are done
            before = rchar(v.proc.pid)
            for _ in range(count):
                off = rng.randrange(1, SIZE // STRIPE) * STRIPE + rng.randrange(STRIPE // 4096) * 4096
                os.pread(fd, 4096, off)
            per = (rchar(v.proc.pid) - before) / count
        finally:
            os.close(fd)
        self.assertEqual(H.health(mnt)["strips_healed"], "0")
        self.assert_clean_unmount(v)
        return per

    def test_small_read_reads_little(self):
        """A healthy 4 KiB random read: the daemon reads its record, its
        tags and one block (and the FUSE request), far less than the
        64 KiB strip a version-2 volume reads."""
        v = self.volume(N)
        path, _, _ = self.stored_file(v, OPTS, 4)
        per = self.random_read_bytes(v, path)
        self.assertLess(per, 16384, f"{per:.0f} bytes read per 4 KiB read on version 3")
        w = self.volume(N)
        path, _, _ = self.stored_file(w, OPTS + ",format=2", 4)
        per2 = self.random_read_bytes(w, path)
        H.log(f"bytes the daemon read per 4 KiB random read: {per:.0f} (version 3), "
              f"{per2:.0f} (version 2)")
        self.assertGreaterEqual(per2, STRIP, f"{per2:.0f} bytes per 4 KiB read on version 2")

    def test_format_2_volume(self):
        """-o format=2 makes a version-2 volume: version-2 chunks, read
        and written across remounts; its format cannot change."""
        v = self.volume(N)
        mnt = self.mount(v, OPTS + ",format=2")
        data = bytearray(H.pattern(3 * STRIPE + 100, 7))
        path = os.path.join(mnt, "g")
        H.write_file(path, bytes(data), fsync=True)
        self.assert_clean_unmount(v)
        self.assertEqual(superblock_format(v), 2)
        for i in range(N):
            self.assertEqual(chunk_version(v.chunk_path(i, "g")), 2)
        mnt = self.mount(v)
        with open(path, "r+b") as f:
            f.seek(STRIPE + 5)
            f.write(b"\x5a" * 5000)
        data[STRIPE + 5:STRIPE + 5005] = b"\x5a" * 5000
        self.assert_exact(path, bytes(data), "written on version 2")
        self.assert_clean_unmount(v)
        mnt = self.mount(v)
        self.assert_exact(path, bytes(data), "after a remount")
        fd = os.open(path, os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4096, 2 * STRIPE + 8192),
                             bytes(data[2 * STRIPE + 8192:2 * STRIPE + 12288]))
        finally:
            os.close(fd)
        self.assert_clean_unmount(v)
        self.assertFalse(v.start("format=3"), "a version-2 volume mounted as version 3")
        self.assertIn("format", v.log())
        self.assertEqual(superblock_format(v), 2)


if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main())
