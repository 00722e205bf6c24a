# SPDX-License-Identifier: MIT
"""Member directories as real disks give them, on real FUSE mounts.

Started by meson as `python3 test_members.py ECFS ECFS_FSCK [unittest args]`.

- A member root that holds only lost+found (what mkfs.ext4 leaves) is
  empty: a volume is created on such members, also on a freshly made ext4
  filesystem on a loop device, and a replaced disk holding only lost+found
  is rebuilt, at mount and by the online heal.  lost+found at the member
  root is never part of the volume (not listed, not found, not creatable)
  and ecfs-fsck leaves it alone; deeper in the tree it is an ordinary name.
- A non-empty directory without a volume is refused, the message naming
  what was found and what to do.
- Members on one filesystem are named in the health report, at creation
  and by ecfs-fsck.  A member that is not a mount point while the others
  are (tmpfs mounts stand for the disks) is refused at creation, failed at
  mount, and never taken by the online heal or written by ecfs-fsck until
  its disk is mounted.
"""

import contextlib
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time

import ecfs_harness as h

FSCK = None
LF = "lost+found"


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


@contextlib.contextmanager
def ext4_disk(where):
    """A freshly made 32 MiB ext4 filesystem on a loop device, mounted at
    `where` (lost+found at its root, as mkfs leaves it); always unmounted,
    which detaches the loop device."""
    fd, img = tempfile.mkstemp(prefix=os.path.basename(where) + "-", suffix=".img",
                               dir=os.path.dirname(where))
    os.ftruncate(fd, 32 << 20)
    os.close(fd)
    try:
        r = run("mkfs.ext4", "-q", "-F", img)
        if r.returncode:
            raise RuntimeError(f"mkfs.ext4: {r.stderr}")
        r = run("mount", "-o", "loop", img, where)
        if r.returncode:
            raise RuntimeError(f"mount -o loop: {r.stderr}")
        try:
            yield where
        finally:
            umount(where)
    finally:
        os.unlink(img)


@contextlib.contextmanager
def tmpfs(where):
    """A tmpfs mounted at `where`, always unmounted."""
    r = run("mount", "-t", "tmpfs", "-o", "size=64m", "none", where)
    if r.returncode:
        raise RuntimeError(f"mount -t tmpfs: {r.stderr}")
    try:
        yield where
    finally:
        umount(where)


def umount(where):
    """Unmounts the filesystem mounted at `where`, lazily if it is busy (a
    daemon still holds it)."""
    if run("umount", where).returncode and os.path.ismount(where):
        run("umount", "-l", where)


class MembersCase(h.MountedCase):

    def fsck(self, v, *args, members=None):
        cmd = [FSCK, "--no-progress", *args,
               ":".join(members if members is not None else v.members)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def assert_fsck_clean(self, v, members=None):
        r = self.fsck(v, "-n", members=members)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn(LF, r.stdout + r.stderr)

    def write_some(self, mnt):
        files = {}
        for i, size in enumerate((0, 1, 70000, 1 << 20)):
            files[f"f{i}"] = h.pattern(size, 40 + i)
            h.write_file(os.path.join(mnt, f"f{i}"), files[f"f{i}"])
        return files

    def check_files(self, mnt, files, when):
        h.drop_caches()
        for rel, data in files.items():
            self.assert_exact(os.path.join(mnt, rel), data, when)


class LostFoundTest(MembersCase):

    def assert_hidden(self, mnt):
        self.assertNotIn(LF, os.listdir(mnt))
        for call in (os.stat, os.lstat, os.listdir):
            with self.assertRaises(FileNotFoundError, msg=call.__name__):
                call(os.path.join(mnt, LF))
        with self.assertRaises(OSError) as cm:
            os.mkdir(os.path.join(mnt, LF))
        self.assertEqual(cm.exception.errno, errno.EPERM)
        with self.assertRaises(OSError) as cm:
            open(os.path.join(mnt, LF), "w").close()
        self.assertEqual(cm.exception.errno, errno.EPERM)
        with self.assertRaises(OSError) as cm:
            os.rename(os.path.join(mnt, "f1"), os.path.join(mnt, LF))
        self.assertIn(cm.exception.errno, (errno.EPERM, errno.ENOENT))

    def test_lost_found_members(self):
        v = self.volume(3)
        for p in v.members:
            os.mkdir(os.path.join(p, LF), 0o700)
            h.write_file(os.path.join(p, LF, "#1234"), b"recovered by e2fsck")
        mnt = self.mount(v, "k=2,m=1")
        files = self.write_some(mnt)
        self.assert_hidden(mnt)
        # Deeper in the tree lost+found is an ordinary name.
        os.mkdir(os.path.join(mnt, "d"))
        deep = os.path.join(mnt, "d", LF)
        h.write_file(deep, b"an ordinary file")
        self.assertEqual(sorted(os.listdir(mnt)), sorted(list(files) + ["d"]))
        self.assertEqual(os.listdir(os.path.join(mnt, "d")), [LF])
        self.assert_exact(deep, b"an ordinary file")
        self.assert_clean_unmount(v)
        self.assert_fsck_clean(v)
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for p in v.members:
            self.assertEqual(os.listdir(os.path.join(p, LF)), ["#1234"],
                             "ecfs-fsck touched lost+found")
        self.mount(v)
        self.check_files(mnt, files, "remounted:")
        self.assert_hidden(mnt)
        self.assert_clean_unmount(v)

    def test_replaced_disk_with_lost_found(self):
        """A member emptied but for lost+found, at mount: the volume opens
        degraded with it failed, and the online heal rebuilds it."""
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        files = self.write_some(mnt)
        self.assert_clean_unmount(v)
        shutil.rmtree(v.members[1])
        os.mkdir(v.members[1])
        os.mkdir(os.path.join(v.members[1], LF), 0o700)
        self.mount(v)
        self.wait_healed(mnt)
        self.check_files(mnt, files, "after the heal:")
        self.assertTrue(os.path.isfile(os.path.join(v.members[1], ".ecfs", "superblock")))
        self.assertTrue(os.path.isdir(os.path.join(v.members[1], LF)))
        self.assert_clean_unmount(v)
        self.assert_fsck_clean(v)
        self.mount(v)
        self.check_files(mnt, files, "remounted:")
        self.assert_clean_unmount(v)

    def test_fresh_ext4_disks(self):
        """Three freshly made ext4 filesystems as whole-disk members: the
        volume is created, lost+found stays hidden and untouched, and a
        replacement disk (a fresh ext4 filesystem mounted where a member
        was) is taken by the online heal."""
        v = self.volume(3)
        with contextlib.ExitStack() as disks:
            for p in v.members:
                disks.enter_context(ext4_disk(p))
                self.assertEqual(os.listdir(p), [LF])
            mnt = self.mount(v, "k=2,m=1")
            files = self.write_some(mnt)
            self.assert_hidden(mnt)
            self.assert_clean_unmount(v)
            self.assert_fsck_clean(v)
            self.mount(v)
            self.check_files(mnt, files, "remounted:")
            # A disk swapped while mounted: its mount is replaced by a fresh one.
            umount(v.members[2])
            disks.enter_context(ext4_disk(v.members[2]))
            self.wait_healed(mnt)
            self.check_files(mnt, files, "after the heal:")
            self.assert_clean_unmount(v)
            self.assert_fsck_clean(v)

class ForeignTest(MembersCase):

    def test_foreign_directory_refused(self):
        v = self.volume(3)
        for name in ("photos", "notes.txt", "b", "a"):
            h.write_file(os.path.join(v.members[1], name), b"x")
        os.mkdir(os.path.join(v.members[1], LF))
        self.assertFalse(v.start("k=2,m=1"), "mounted over a foreign directory")
        self.assertEqual(v.last_exit, 1, v.log())
        out = v.output()
        self.assertIn(v.members[1], out)
        self.assertIn("4 entries", out)
        self.assertIn("a, b, notes.txt", out)
        self.assertIn("empty directory", out)
        self.assertIn("ecfs-fsck", out)
        self.assertEqual(sorted(os.listdir(v.members[0])), [],
                         "an empty member was written to")

    def test_member_that_lost_its_metadata(self):
        """A member whose .ecfs was removed is refused as foreign; the two
        ways the message gives both bring it back."""
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        files = self.write_some(mnt)
        self.assert_clean_unmount(v)
        for way in ("mkdir .ecfs and ecfs-fsck -y", "emptied"):
            with self.subTest(way=way):
                shutil.rmtree(os.path.join(v.members[2], ".ecfs"))
                self.assertFalse(v.start(), "mounted with a member's .ecfs gone")
                self.assertIn("ecfs-fsck -y", v.output())
                if way == "emptied":
                    shutil.rmtree(v.members[2])
                    os.mkdir(v.members[2])
                    self.mount(v)
                    self.wait_healed(mnt)
                    self.assert_clean_unmount(v)
                else:
                    os.mkdir(os.path.join(v.members[2], ".ecfs"))
                    r = self.fsck(v, "-y")
                    self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assert_fsck_clean(v)
                self.mount(v)
                self.assertEqual(h.health(mnt)["state"], "healthy")
                self.check_files(mnt, files, f"{way}:")
                self.assert_clean_unmount(v)


class MountPointTest(MembersCase):
    """Members that share a filesystem, and a member that is not a mount
    point while the others are (its disk did not mount)."""

    def test_same_filesystem_reported(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        self.assertIn("members on one filesystem: " + ", ".join(v.members), v.output())
        self.assertEqual(h.health(mnt).get("same_filesystem"), "0,1,2")
        self.assert_clean_unmount(v)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("members 0,1,2 share one filesystem", r.stderr)
        # Each member on its own filesystem: nothing to say.
        w = self.volume(3)
        with contextlib.ExitStack() as disks:
            for p in w.members:
                disks.enter_context(tmpfs(p))
            mnt = self.mount(w, "k=2,m=1")
            self.assertNotIn("one filesystem", w.output())
            rep = h.health(mnt)
            self.assertEqual(rep.get("state"), "healthy", rep)
            self.assertNotIn("same_filesystem", rep)
            self.assert_clean_unmount(w)
            r = self.fsck(w, "-n")
            self.assertNotIn("share one filesystem", r.stderr)

    def test_plain_members_beside_one_mount(self):
        """Plain directories that are most of the members, beside one
        mounted member, are all used."""
        v = self.volume(4)
        with contextlib.ExitStack() as disks:
            disks.enter_context(tmpfs(v.members[0]))
            mnt = self.mount(v, "k=2,m=2")
            files = self.write_some(mnt)
            self.assertEqual(h.health(mnt).get("state"), "healthy")
            self.check_files(mnt, files, "one mounted member:")
            self.assert_clean_unmount(v)

    def test_unmounted_member_refused_at_creation(self):
        v = self.volume(3)
        with contextlib.ExitStack() as disks:
            for p in v.members[:2]:
                disks.enter_context(tmpfs(p))
            self.assertFalse(v.start("k=2,m=1"), "created a volume on an unmounted disk")
            self.assertEqual(v.last_exit, 1, v.log())
            out = v.output()
            self.assertIn(f"member {v.members[2]} is not a mount point while", out)
            self.assertIn("may not have mounted", out)
            for p in v.members:
                self.assertEqual(os.listdir(p), [], f"{p} was written to")

    def test_unmounted_member_is_failed_and_not_healed(self):
        """A member disk that did not mount: the volume opens degraded with
        it failed and reads exact; nothing is written beneath it, not by
        the online heal nor by ecfs-fsck -y; once its disk is mounted (a
        new empty one here) the heal takes it."""
        v = self.volume(3)
        with contextlib.ExitStack() as disks:
            for p in v.members:
                disks.enter_context(tmpfs(p))
            mnt = self.mount(v, "k=2,m=1")
            files = self.write_some(mnt)
            self.assert_clean_unmount(v)
            umount(v.members[2])            # its disk "did not mount"
            self.assertEqual(os.listdir(v.members[2]), [])
            self.mount(v)
            rep = h.health(mnt)
            self.assertEqual(rep.get("state"), "degraded", rep)
            self.assertIn("not a mount point while", rep.get("member.2", ""))
            self.check_files(mnt, files, "member 2 not mounted:")
            h.write_file(os.path.join(mnt, "new"), h.pattern(300000, 7))
            files["new"] = h.pattern(300000, 7)
            self.wait_for_log(v, "not taken back until it is a mount point")
            self.assertEqual(h.health(mnt).get("members_failed"), "1")
            self.assertEqual(os.listdir(v.members[2]), [], "written beneath the mount point")
            disks.enter_context(tmpfs(v.members[2]))   # the disk is mounted (a new one)
            self.wait_healed(mnt)
            self.check_files(mnt, files, "healed:")
            self.assert_clean_unmount(v)
            self.assert_fsck_clean(v)
            # ecfs-fsck -y does not write beneath an unmounted member either.
            umount(v.members[2])
            r = self.fsck(v, "-y")
            self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
            self.assertIn("not a mount point while", r.stdout)
            self.assertEqual(os.listdir(v.members[2]), [], "ecfs-fsck wrote beneath it")

    def wait_for_log(self, v, text, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in v.output():
                return
            time.sleep(0.1)
        self.fail(f"the daemon never said {text!r}:\n{v.log()}")


if __name__ == "__main__":
    FSCK = h.take_fsck_argument()
    sys.exit(h.main())
