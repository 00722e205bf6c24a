# SPDX-License-Identifier: MIT
"""The layout of versions 2 and 3 (docs/FORMAT.md section 4): a file's
last stripe is stored short, as many bytes per strip as its bytes need
rounded up to 64, right after a 192-byte header, its record and (version
3) its tags, so a small file takes
one block on each member.  Data must stay byte-exact for every size
around the alignment, the strip and the stripe, for files that grow and
shrink across them, with up to m members lost before, during and after.

usage: test_layout.py ECFS ECFS_FSCK [unittest args]"""

import errno
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

K, M = 4, 2
STRIP = 4096
STRIPE = K * STRIP
ALIGN = 64
HEADER = 192
FSCK = None
OPTS = f"k={K},m={M},strip={STRIP}"
SIZES = sorted({0, 1, ALIGN - 1, ALIGN, ALIGN + 1, K * ALIGN - 1, K * ALIGN, K * ALIGN + 1,
                STRIP - 1, STRIP, STRIP + 1, STRIPE - 1, STRIPE, STRIPE + 1,
                STRIPE + K * ALIGN + 1, 2 * STRIPE - 1, 3 * STRIPE + 5})


def short_len(size):
    """Bytes per strip of a file's last stripe (layout_strip_len)."""
    rest = size - (size - 1) // STRIPE * STRIPE if size else 0
    per = -(-rest // K)
    return max(ALIGN, -(-per // ALIGN) * ALIGN) if rest < STRIPE else STRIP


class LayoutTest(H.MountedCase):
    def setUp(self):
        self.v = self.volume(K + M)
        self.mnt = self.mount(self.v, OPTS)

    def p(self, name):
        return os.path.join(self.mnt, name)

    def remount(self):
        self.assert_clean_unmount(self.v)
        self.mnt = self.mount(self.v)

    def test_sizes_exact_and_small(self):
        data = {f"s{size}": H.pattern(size, seed=size) for size in SIZES}
        for name, want in data.items():
            H.write_file(self.p(name), want)
        self.remount()
        for name, want in data.items():
            self.assert_exact(self.p(name), want, "healthy")
        # A one-stripe file is one run of bytes on every member: header,
        # record, and strips as long as its bytes need.
        for name, want in data.items():
            if len(want) > STRIPE:
                continue
            for i in range(K + M):
                path = self.v.chunk_path(i, name)
                expect = HEADER if not want else H.chunk_offsets(path, 0)[1] + short_len(len(want))
                got = os.path.getsize(path)
                self.assertEqual(got, expect, f"{name} on member {i}")
        for lost, i in enumerate((1, 4)):
            self.v.lose(i, "rmdir")
            self.remount()
            for name, want in data.items():
                self.assert_exact(self.p(name), want, f"{lost + 1} members lost")
        self.assert_clean_unmount(self.v)

    def test_grow_and_shrink_across_stripes(self):
        """Appends and truncates walk one file across every boundary; a
        member is lost before, one during, and the file checked after a
        remount each time."""
        rng = random.Random(14)
        model = bytearray()
        name = self.p("g")
        H.write_file(name, b"")
        self.v.lose(0, "rmdir")
        steps = [1, ALIGN - 2, 2, K * ALIGN, STRIP, STRIPE - 3 * STRIP, STRIPE, 7]
        for n, grow in enumerate(steps):
            chunk = bytes(rng.randrange(256) for _ in range(grow))
            with open(name, "ab") as f:
                f.write(chunk)
            model += chunk
            self.assert_exact(name, bytes(model), f"grown by {grow}")
            if n == 4:
                self.v.lose(3, "rmdir")
        for size in (3 * STRIPE, 2 * STRIPE + 1, STRIPE + ALIGN, STRIPE - 1, 300, 1, 0, 5000):
            with open(name, "r+b") as f:
                f.truncate(size)
            model = model[:size] + bytes(max(0, size - len(model)))
            self.assert_exact(name, bytes(model), f"truncated to {size}")
            with open(name, "r+b") as f:  # and overwritten in the middle
                f.seek(size // 2)
                f.write(b"\xa5" * 3)
            end = size // 2 + 3
            model = model[:size // 2] + b"\xa5" * 3 + model[end:]
            self.assert_exact(name, bytes(model), f"overwritten at {size // 2}")
        self.remount()
        self.assert_exact(name, bytes(model), "after a remount, two members lost")
        self.assert_clean_unmount(self.v)

    def test_unknown_version_refused(self):
        """A chunk of a version this build does not know is an erasure,
        named in the log with the file and the member; never guessed at."""
        want = H.pattern(10000, seed=3)
        H.write_file(self.p("u"), want)
        self.assert_clean_unmount(self.v)
        def refuse(i):
            with open(self.v.chunk_path(i, "u"), "r+b") as f:
                f.seek(8)
                f.write((4).to_bytes(4, "little"))
        refuse(2)
        self.mnt = self.mount(self.v)
        self.assert_exact(self.p("u"), want, "one chunk of version 4")
        self.assertIn(f"/u: the chunk on member 2 ({self.v.members[2]}) is refused: "
                      "unsupported chunk format version 4", self.v.log())
        self.assert_clean_unmount(self.v)
        for i in range(K + M):
            refuse(i)
        self.mnt = self.mount(self.v)
        got, err = H.read_all(self.p("u"))
        self.assertEqual((got, err), (b"", errno.EIO), "no chunk of a known version")
        self.assert_clean_unmount(self.v)

    def test_small_file_bad_strip_read_around(self):
        """A small file's first read comes from the bytes its open read; a
        bad strip there is read around from the members and rewritten,
        and the next open reads the good one."""
        want = H.pattern(3000, seed=8)
        H.write_file(self.p("b"), want)
        self.assert_clean_unmount(self.v)
        for i in (1, 4):
            with open(self.v.chunk_path(i, "b"), "r+b") as f:
                f.seek(H.chunk_offsets(self.v.chunk_path(i, "b"), 0)[1] + 5)
                b = f.read(1)
                f.seek(-1, os.SEEK_CUR)
                f.write(bytes([b[0] ^ 0x5A]))
        self.mnt = self.mount(self.v)
        self.assert_exact(self.p("b"), want, "two bad strips")
        self.assertGreaterEqual(int(H.health(self.mnt)["strips_healed"]), 1)
        self.remount()
        self.assert_exact(self.p("b"), want, "after the self-healing read")
        self.assert_clean_unmount(self.v)
        r = self.fsck("-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def fsck(self, *args):
        return subprocess.run([FSCK, "--no-progress", *args, ":".join(self.v.members)],
                              capture_output=True, text=True, timeout=120)

    def test_fsck_repairs_small_files(self):
        """A small file's chunk deleted on one member and its strip bytes
        flipped on another: ecfs-fsck finds both and rebuilds them."""
        data = {f"f{size}": H.pattern(size, seed=size) for size in (1, 100, 5000, STRIPE - 7)}
        for name, want in data.items():
            H.write_file(self.p(name), want)
        self.assert_clean_unmount(self.v)
        for name, want in data.items():
            os.unlink(self.v.chunk_path(0, name))
            with open(self.v.chunk_path(3, name), "r+b") as f:
                # the strip's last byte
                f.seek(H.chunk_offsets(self.v.chunk_path(3, name), 0)[1] + short_len(len(want)) - 1)
                b = f.read(1)
                f.seek(-1, os.SEEK_CUR)
                f.write(bytes([b[0] ^ 0xFF]))
        r = self.fsck("-n")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        for name in data:
            self.assertIn(f"/{name}", r.stdout + r.stderr)
        r = self.fsck("-y")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        r = self.fsck("-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for hidden in ((0, 3), (1, 2)):
            for i in hidden:
                self.v.hide(i)
            self.mnt = self.mount(self.v)
            for name, want in data.items():
                self.assert_exact(self.p(name), want, f"members {hidden} away")
            self.assert_clean_unmount(self.v)
            for i in hidden:
                self.v.unhide(i)


if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main())
