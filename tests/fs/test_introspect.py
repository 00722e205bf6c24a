# SPDX-License-Identifier: MIT
"""Introspection: the user.ecfs.layout xattr of a file and the
user.ecfs.health xattr of the volume root tell the truth, healthy and after
a member is lost or corrupt; statfs reports what k/n of the members' free
space can hold.

usage: test_introspect.py ECFS_BINARY [unittest args]"""

import errno
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

LAYOUT_KEYS = ["code", "k", "m", "w", "packet_size", "strip_size", "checksum",
               "size", "generation", "healthy"]


class IntrospectTest(H.MountedCase):
    def write_files(self, mnt, count, size):
        files = {}
        for i in range(count):
            rel = f"f{i:02d}"
            files[rel] = H.pattern(size, 40 + i)
            H.write_file(os.path.join(mnt, rel), files[rel])
        return files

    def test_layout_healthy_and_after_loss(self):
        k, m, n = 4, 2, 6
        v = self.volume(n)
        mnt = self.mount(v, f"k={k},m={m},code=rs-cauchy")
        path = os.path.join(mnt, "file")
        data = H.pattern(1234567, 1)
        H.write_file(path, data)
        lay = H.layout(path)
        for key in LAYOUT_KEYS:
            self.assertIn(key, lay, f"layout lacks {key}=: {lay}")
        self.assertEqual(lay["code"], "rs-cauchy")
        self.assertEqual((lay["k"], lay["m"]), (str(k), str(m)))
        self.assertEqual(lay["size"], str(len(data)))
        self.assertGreater(int(lay["strip_size"]), 0)
        self.assertEqual(sorted(int(x) for x in lay["healthy"].split(",")),
                         list(range(n)), lay)
        for idx in range(n):
            self.assertEqual(lay.get(f"member.{idx}"), f"ok {v.members[idx]}")
        gen = int(lay["generation"])
        with open(path, "r+b") as f:
            f.write(b"new")
        lay = H.layout(path)
        self.assertGreaterEqual(int(lay["generation"]), gen)

        v.lose(3, "rmdir")
        H.drop_caches()
        self.assert_exact(path, b"new" + data[3:], "member 3 removed:")
        lay = H.layout(path)
        healthy = [int(x) for x in lay["healthy"].split(",") if x]
        self.assertNotIn(3, healthy, lay)
        self.assertEqual(len(healthy), n - 1, lay)
        state = lay.get("member.3", "")
        self.assertTrue(state.startswith(("missing", "failed")), lay)
        self.assertIn(v.members[3], state)
        self.assert_clean_unmount(v)

    def test_layout_reports_a_deleted_chunk(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1,code=rs-vandermonde")
        path = os.path.join(mnt, "file")
        H.write_file(path, H.pattern(300000, 2))
        v.lose(1, "chunkdel", files=["file"])
        lay = H.layout(path)
        self.assertTrue(lay.get("member.1", "").startswith("missing"), lay)
        self.assertEqual(lay.get("healthy"), "0,2", lay)
        self.assert_clean_unmount(v)

    def test_health_report(self):
        k, m, n = 4, 2, 6
        v = self.volume(n)
        mnt = self.mount(v, f"k={k},m={m}")
        hl = H.health(mnt)
        self.assertEqual(hl.get("state"), "healthy", hl)
        self.assertEqual((hl.get("k"), hl.get("m"), hl.get("n")),
                         (str(k), str(m), str(n)), hl)
        self.assertEqual(hl.get("members_failed"), "0", hl)
        for idx in range(n):
            self.assertEqual(hl.get(f"member.{idx}"), f"up {v.members[idx]}")
        decoded0 = int(hl["strips_decoded"])
        self.assertIn("checksum_failures", hl)

        files = self.write_files(mnt, 12, 200000)
        v.lose(0, "rmdir")
        H.drop_caches()
        for rel, data in files.items():
            self.assert_exact(os.path.join(mnt, rel), data, "member 0 gone:")
        hl = H.health(mnt)
        self.assertEqual(hl.get("state"), "degraded", hl)
        self.assertEqual(hl.get("members_failed"), "1", hl)
        entry = hl.get("member.0", "")
        self.assertTrue(entry.startswith(f"failed {v.members[0]}"), hl)
        self.assertIn(":", entry[len("failed " + v.members[0]):],
                      "the failed member's entry gives no reason")
        self.assertGreater(int(hl["strips_decoded"]), decoded0, hl)

        v.lose(1, "rmdir")
        v.lose(2, "rmdir")
        H.drop_caches()
        for rel in files:
            H.read_all(os.path.join(mnt, rel))
        hl = H.health(mnt)
        self.assertEqual(hl.get("state"), "failed", hl)
        self.assertEqual(hl.get("members_failed"), "3", hl)
        self.assert_clean_unmount(v)

    def test_checksum_failures_are_counted(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        files = self.write_files(mnt, 12, 300000)
        before = int(H.health(mnt)["checksum_failures"])
        rng = random.Random(3)
        for rel in files:
            idx = rng.randrange(3)
            H.flip_bytes(v.chunk_path(idx, rel), rng, count=64)
        H.drop_caches()
        for rel, data in files.items():
            self.assert_exact(os.path.join(mnt, rel), data, "corrupt chunk:")
        hl = H.health(mnt)
        self.assertGreater(int(hl["checksum_failures"]), before, hl)
        self.assertGreater(int(hl["strips_decoded"]), 0, hl)
        self.assert_clean_unmount(v)

    def test_ecfs_names_are_not_listed_and_cannot_be_changed(self):
        """user.ecfs.layout and user.ecfs.health are read by name only:
        listxattr leaves them out (so rsync -X and cp -a neither copy nor
        remove them), and setting or removing a user.ecfs. name is accepted
        and changes nothing (a copy of a file carrying one must not fail)."""
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        path = os.path.join(mnt, "f")
        H.write_file(path, b"x")
        os.setxattr(path, "user.mine", b"1")
        self.assertEqual(os.listxattr(path), ["user.mine"])
        self.assertEqual(os.listxattr(mnt), [])
        before = H.getxattr_text(path, "user.ecfs.layout")
        self.assertIn("code=", before)
        self.assertIn("state=", H.getxattr_text(mnt, "user.ecfs.health"))
        os.setxattr(path, "user.ecfs.layout", b"code=none\n")
        os.setxattr(path, "user.ecfs.other", b"v")
        os.removexattr(path, "user.ecfs.layout")
        os.removexattr(mnt, "user.ecfs.health")
        self.assertEqual(H.getxattr_text(path, "user.ecfs.layout"), before)
        self.assertIn("state=", H.getxattr_text(mnt, "user.ecfs.health"))
        with self.assertRaises(OSError) as cm:
            os.getxattr(path, "user.ecfs.other")
        self.assertEqual(cm.exception.errno, errno.ENODATA)
        self.assertEqual(os.listxattr(path), ["user.mine"])
        for idx in range(3):
            names = os.listxattr(v.chunk_path(idx, "f"))
            self.assertEqual([n for n in names if n.startswith("user.ecfs.")], [],
                             f"member {idx} stores an ecfs name")
        self.assert_clean_unmount(v)

    def test_statfs(self):
        k, m = 4, 2
        v = self.volume(k + m)
        mnt = self.mount(v, f"k={k},m={m}")
        st = os.statvfs(mnt)
        free = sum(os.statvfs(p).f_bavail * os.statvfs(p).f_frsize
                   for p in v.members)
        avail = st.f_bavail * st.f_frsize
        expect = free * k / (k + m)
        self.assertGreater(avail, 0.85 * expect,
                           f"statfs avail {avail} vs k/n of members' {free}")
        self.assertLess(avail, 1.15 * expect,
                        f"statfs avail {avail} vs k/n of members' {free}")
        self.assertGreaterEqual(st.f_blocks, st.f_bfree)
        self.assertGreaterEqual(st.f_bfree, st.f_bavail)
        self.assertGreater(st.f_namemax, 0)
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
