# SPDX-License-Identifier: MIT
"""Inode numbers (docs/DESIGN.md, "Inode numbers"): every name of a file
reports one st_ino, and an object keeps its st_ino for its whole life:
across renames, remounts, a member lost (its directory removed) and the
heal that rebuilds it.  A regular file's comes from its chunk headers'
file id, a directory's from the id stored with it on every member;
symlinks and special files have none stored and take theirs from a
member's inode (stable across renames and remounts only).  The kernel
keeps names and attributes (entry and attribute timeouts on by default):
link counts and ctimes agree through every name right after each change.

usage: test_inodes.py ECFS_BINARY [unittest args]"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

K, M = 4, 2
OPTS = f"k={K},m={M}"


def snapshot(mnt):
    """{relative name: st_ino} of every name beneath mnt."""
    out = {}
    for top, dirs, files in os.walk(mnt):
        for name in dirs + files:
            p = os.path.join(top, name)
            out[os.path.relpath(p, mnt)] = os.lstat(p).st_ino
    out["."] = os.lstat(mnt).st_ino
    return out


class InodeTest(H.MountedCase):
    def populate(self, mnt):
        os.makedirs(os.path.join(mnt, "d/sub"))
        H.write_file(os.path.join(mnt, "d/f"), H.pattern(100000, 1))
        H.write_file(os.path.join(mnt, "d/sub/small"), b"s")
        os.link(os.path.join(mnt, "d/f"), os.path.join(mnt, "d/sub/f-link"))
        os.link(os.path.join(mnt, "d/f"), os.path.join(mnt, "top-link"))
        os.symlink("f", os.path.join(mnt, "d/l"))
        os.mkfifo(os.path.join(mnt, "d/fifo"))

    def assert_one_file(self, mnt, names, what):
        sts = [os.lstat(os.path.join(mnt, n)) for n in names]
        for field in ("st_ino", "st_nlink", "st_ctime_ns", "st_size", "st_mode"):
            self.assertEqual(len({getattr(st, field) for st in sts}), 1,
                             f"{what}: {field} differs between {names}")

    def test_every_name_one_inode(self):
        """After link, unlink of a link, rename over a name and chmod
        through one name, every name agrees at once (the kernel keeps
        attributes for a second)."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        self.populate(mnt)
        names = ["d/f", "d/sub/f-link", "top-link"]
        self.assert_one_file(mnt, names, "linked")
        self.assertEqual(os.lstat(os.path.join(mnt, "d/f")).st_nlink, 3)
        os.chmod(os.path.join(mnt, "top-link"), 0o600)
        self.assert_one_file(mnt, names, "chmod through one name")
        os.unlink(os.path.join(mnt, "top-link"))
        names.remove("top-link")
        self.assert_one_file(mnt, names, "a link unlinked")
        self.assertEqual(os.lstat(os.path.join(mnt, "d/f")).st_nlink, 2)
        H.write_file(os.path.join(mnt, "other"), b"other")
        os.rename(os.path.join(mnt, "other"), os.path.join(mnt, "d/sub/f-link"))
        self.assertEqual(os.lstat(os.path.join(mnt, "d/f")).st_nlink, 1)
        self.assertNotEqual(os.lstat(os.path.join(mnt, "d/f")).st_ino,
                            os.lstat(os.path.join(mnt, "d/sub/f-link")).st_ino)
        with open(os.path.join(mnt, "d/f"), "ab") as f:
            os.link(os.path.join(mnt, "d/f"), os.path.join(mnt, "again"))
            f.write(b"tail")
        self.assert_one_file(mnt, ["d/f", "again"], "appended while linked")
        self.assert_clean_unmount(v)

    def test_stable_across_remount_member_loss_and_heal(self):
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        self.populate(mnt)
        before = snapshot(mnt)
        os.rename(os.path.join(mnt, "d/sub"), os.path.join(mnt, "sub-moved"))
        os.rename(os.path.join(mnt, "d/f"), os.path.join(mnt, "d/g"))
        renamed = snapshot(mnt)
        self.assertEqual(renamed["sub-moved"], before["d/sub"])
        self.assertEqual(renamed["sub-moved/f-link"], before["d/sub/f-link"])
        self.assertEqual(renamed["d/g"], before["d/f"])
        self.assertEqual(renamed["d/g"], renamed["top-link"])
        self.assert_clean_unmount(v)

        mnt = self.mount(v)
        H.drop_caches()
        self.assertEqual(snapshot(mnt), renamed, "after a remount")
        self.assert_clean_unmount(v)

        # Symlinks and special files take a member's inode number: only
        # objects with an identity of their own are checked from here.
        def own(snap):
            return {n: i for n, i in snap.items() if n not in ("d/l", "d/fifo")}
        shutil.rmtree(v.members[0])
        mnt = self.mount(v)
        self.assertEqual(own(snapshot(mnt)), own(renamed), "the first member lost")
        self.assert_clean_unmount(v)

        os.mkdir(v.members[0])  # an empty directory where it was: rebuilt
        mnt = self.mount(v)
        self.wait_healed(mnt)
        H.drop_caches()
        self.assertEqual(own(snapshot(mnt)), own(renamed), "after the heal")
        self.assert_clean_unmount(v)

    def test_link_attributes(self):
        """link answers with the attributes the first member took around
        its link (the size remembered from before it): what a lookup gives
        after a remount, for a file of several stripes and an empty one.
        A rename keeps the size remembered, and a write after it is seen
        through every name."""
        fields = ("st_ino", "st_mode", "st_nlink", "st_size", "st_blocks", "st_ctime_ns",
                  "st_mtime_ns", "st_uid", "st_gid")
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        H.write_file(os.path.join(mnt, "f"), H.pattern(300000, 3))
        H.write_file(os.path.join(mnt, "e"), b"")
        right_after = {}
        for name in ("f", "e"):
            os.stat(os.path.join(mnt, name))  # the size remembered
            os.link(os.path.join(mnt, name), os.path.join(mnt, name + "-link"))
            right_after[name] = os.lstat(os.path.join(mnt, name + "-link"))
            self.assertEqual(right_after[name].st_nlink, 2)
        self.assertEqual(right_after["f"].st_size, 300000)
        # The size follows a rename (remembered under the new ctime) and
        # a write after it, through every name.
        os.rename(os.path.join(mnt, "f-link"), os.path.join(mnt, "f-moved"))
        H.drop_caches()
        for name in ("f", "f-moved"):
            self.assertEqual(os.lstat(os.path.join(mnt, name)).st_size, 300000, name)
        with open(os.path.join(mnt, "f-moved"), "ab") as f:
            f.write(b"more")
        H.drop_caches()
        for name in ("f", "f-moved"):
            self.assertEqual(os.lstat(os.path.join(mnt, name)).st_size, 300004, name)
        os.rename(os.path.join(mnt, "f-moved"), os.path.join(mnt, "f-link"))
        right_after["f"] = os.lstat(os.path.join(mnt, "f-link"))
        self.assert_clean_unmount(v)
        mnt = self.mount(v)
        H.drop_caches()
        for name, st in right_after.items():
            fresh = os.lstat(os.path.join(mnt, name + "-link"))
            for f in fields:
                self.assertEqual(getattr(fresh, f), getattr(st, f), f"{name}: {f}")
        self.assert_clean_unmount(v)

    def test_new_directory_attributes(self):
        """mkdir answers with the attributes the first member took as it
        made the directory (no lookup after it): the kernel's copy right
        after is what a lookup gives after a remount, and the member's own
        (mode, owner, times), with the directory's identity as st_ino; with
        the first member failed, the next one's."""
        fields = ("st_ino", "st_mode", "st_uid", "st_gid", "st_nlink", "st_ctime_ns",
                  "st_mtime_ns")
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        old = os.umask(0o022)
        try:
            os.mkdir(os.path.join(mnt, "made"), 0o751)
            os.mkdir(os.path.join(mnt, "made/inner"), 0o700)
        finally:
            os.umask(old)
        right_after = {n: os.lstat(os.path.join(mnt, n)) for n in ("made", "made/inner")}
        self.assertEqual(right_after["made"].st_mode & 0o7777, 0o751)
        self.assertEqual(right_after["made/inner"].st_mode & 0o7777, 0o700)
        self.assert_clean_unmount(v)
        mnt = self.mount(v)
        H.drop_caches()
        for n, st in right_after.items():
            fresh = os.lstat(os.path.join(mnt, n))
            on_member = os.lstat(os.path.join(v.members[0], n))
            for f in fields:
                self.assertEqual(getattr(fresh, f), getattr(st, f), f"{n}: {f} after a remount")
                if f != "st_ino":
                    self.assertEqual(getattr(on_member, f), getattr(st, f), f"{n}: {f}")
        self.assert_clean_unmount(v)

        shutil.rmtree(v.members[0])
        mnt = self.mount(v)
        os.mkdir(os.path.join(mnt, "later"))
        st = os.lstat(os.path.join(mnt, "later"))
        on_member = os.lstat(os.path.join(v.members[1], "later"))
        for f in fields[1:]:
            self.assertEqual(getattr(on_member, f), getattr(st, f), f"later: {f}")
        self.assert_clean_unmount(v)
        mnt = self.mount(v)
        H.drop_caches()
        self.assertEqual(os.lstat(os.path.join(mnt, "later")).st_ino, st.st_ino)
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
