# SPDX-License-Identifier: MIT
"""Volumes of format version 1, as this release writes them, stay readable
and writable: tests/fixtures/v1-volume.tar.gz (made by
tests/fixtures/make_v1_volume.py) is unpacked into fresh member
directories and mounted with the ecfs under test.

  every file, symlink, hard link, mode and xattr of the manifest is exact,
  also with m members removed; ecfs-fsck -n finds the volume clean once
  a mount carried the volume root's attributes over; files
  written and changed on it read back exact after a remount, and fsck
  stays clean.

usage: test_compat.py ECFS ECFS_FSCK [unittest args]"""

import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
FSCK = None
M = 2


def sha256(path):
    got, err = H.read_all(path)
    return hashlib.sha256(got).hexdigest() if err == 0 else f"errno {err}"


class V1Test(H.MountedCase):
    def setUp(self):
        with open(os.path.join(FIXTURES, "v1-manifest.json")) as f:
            self.manifest = json.load(f)
        self.v = self.volume(6)
        for p in self.v.members:
            os.rmdir(p)
        subprocess.run(["tar", "--xattrs", "--xattrs-include=*", "-xzf",
                        os.path.join(FIXTURES, "v1-volume.tar.gz"), "-C", self.v.base],
                       check=True)

    def fsck_clean(self, members=None):
        r = subprocess.run([FSCK, "--no-progress", "-n",
                            ":".join(members or self.v.members)],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, f"fsck -n of the v1 volume:\n{r.stdout}{r.stderr}")

    def assert_manifest(self, mnt, what):
        for name, want in self.manifest["files"].items():
            path = os.path.join(mnt, name)
            self.assertEqual(sha256(path), want["sha256"], f"{what}: {name}")
            st = os.lstat(path)
            self.assertEqual((st.st_size, st.st_mode & 0o7777), (want["size"], want["mode"]),
                             f"{what}: {name}")
            for key, value in want.get("xattrs", {}).items():
                self.assertEqual(os.getxattr(path, key), value.encode(), f"{what}: {name}")
        for name, target in self.manifest["symlinks"].items():
            self.assertEqual(os.readlink(os.path.join(mnt, name)), target, what)
        for a, b in self.manifest["hard_links"]:
            # (inode numbers through the mount are checked by fs-inodes;
            # the link count is the member's)
            self.assertEqual(os.stat(os.path.join(mnt, a)).st_nlink, 2, f"{what}: {a} = {b}")
        for d in self.manifest["dirs"]:
            self.assertTrue(os.path.isdir(os.path.join(mnt, d)), f"{what}: {d}")

    def test_read(self):
        """Exact as written, then with each pair of members removed in turn."""
        # An older build left the member roots open to other users, the
        # volume root's attributes on them: all fsck finds, until the first
        # mount carries them over to their stand-in.
        r = subprocess.run([FSCK, "--no-progress", "-n", ":".join(self.v.members)],
                           capture_output=True, text=True)
        problems = [line for line in r.stdout.splitlines() if line.endswith("]")]
        self.assertEqual(len(problems), len(self.v.members), r.stdout + r.stderr)
        for line in problems:
            self.assertIn("other users can reach", line, r.stdout)
        root = os.stat(self.v.members[0])
        mnt = self.mount(self.v)
        self.assert_manifest(mnt, "v1 volume")
        st = os.stat(mnt)
        self.assertEqual((st.st_mode, st.st_uid, st.st_gid),
                         (root.st_mode, root.st_uid, root.st_gid), "the volume root carried over")
        for p in self.v.members:
            st = os.stat(p)
            self.assertEqual((st.st_mode & 0o7777, st.st_uid), (0o700, 0), p)
        self.assert_clean_unmount(self.v)
        self.fsck_clean()
        for gone in ((0, 1), (2, 5), (3, 4)):
            with self.subTest(gone=gone):
                hidden = [p + ".away" for p in (self.v.members[j] for j in gone)]
                for j, h in zip(gone, hidden):
                    os.rename(self.v.members[j], h)
                try:
                    mnt = self.mount(self.v)
                    self.assert_manifest(mnt, f"v1 volume without members {gone}")
                    self.assert_clean_unmount(self.v)
                finally:
                    for j, h in zip(gone, hidden):
                        os.rename(h, self.v.members[j])

    def test_write(self):
        """New files, an append, an overwrite, a truncate, a rename and an
        unlink on the v1 volume: exact after a remount, fsck clean."""
        mnt = self.mount(self.v)
        new = H.pattern(70000, 41)
        H.write_file(os.path.join(mnt, "dir", "new"), new, fsync=True)
        big = H.read_all(os.path.join(mnt, "big"))[0]
        with open(os.path.join(mnt, "big"), "r+b") as f:
            f.seek(5000)
            f.write(b"y" * 3000)
            f.seek(0, os.SEEK_END)
            f.write(b"tail")
        big = big[:5000] + b"y" * 3000 + big[8000:] + b"tail"
        os.truncate(os.path.join(mnt, "strip"), 10)
        os.rename(os.path.join(mnt, "page"), os.path.join(mnt, "dir", "page"))
        os.unlink(os.path.join(mnt, "empty"))
        with open(os.path.join(mnt, "one"), "ab") as f:  # seen through its hard link
            f.write(b"z")
        self.assert_clean_unmount(self.v)
        # A volume keeps its version: the new file's chunks are of version 1.
        for i in range(len(self.v.members)):
            with open(self.v.chunk_path(i, "dir/new"), "rb") as f:
                head = f.read(16)
            self.assertEqual(int.from_bytes(head[8:12], "little"), 1, f"member {i}")
            self.assertEqual(int.from_bytes(head[12:16], "little"), 4096, f"member {i}")
        self.fsck_clean()
        mnt = self.mount(self.v)
        self.assert_exact(os.path.join(mnt, "dir", "new"), new, "written on v1:")
        self.assert_exact(os.path.join(mnt, "big"), big, "changed on v1:")
        self.assertEqual(os.path.getsize(os.path.join(mnt, "strip")), 10)
        self.assertTrue(os.path.exists(os.path.join(mnt, "dir", "page")))
        self.assertFalse(os.path.exists(os.path.join(mnt, "empty")))
        self.assert_exact(os.path.join(mnt, "dir", "hard"), b"xz", "hard link on v1:")
        self.assert_clean_unmount(self.v)


if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main())
