# SPDX-License-Identifier: MIT
"""Listings kept across a remount (DESIGN.md section 4, FORMAT.md section
10).  A clean unmount saves, in .ecfs/listings on every member, the names
of each directory whose member directories the daemon knows, with their
stamps; the next mount lists such a directory from there once the first
m + 1 members show those stamps still, and from the members otherwise.
These tests check that a listing so made is the one the members give, in
every case where they differ: a change behind the daemon's back while
unmounted, or while mounted between its own changes or after them; a
damaged or foreign file; a read-only mount; a mount that never ended.
The health report's listings_from_last_mount tells which way a listing
was made.

Started by meson as `python3 test_saved_listings.py ECFS ECFS_FSCK [unittest args]`."""

import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

K, M = 4, 2
OPTS = f"k={K},m={M}"
FSCK = None
NAMES = [f"f{i:04d}" for i in range(300)]
# the kernel keeps names, attributes and listings for 1 s
CACHES_LAPSE = 1.3


def every_name(d):
    """The names a listing gives, . and .. too."""
    out = subprocess.run(["ls", "-af", d], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def from_saved(mnt):
    return int(H.health(mnt)["listings_from_last_mount"])


class SavedListingsTest(H.MountedCase):
    def setup_volume(self):
        """A volume with d/ of 300 files, a directory, a symlink and a fifo,
        made through the mount and unmounted cleanly."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        d = os.path.join(mnt, "d")
        os.mkdir(d)
        for name in NAMES:
            H.write_file(os.path.join(d, name), name.encode())
        os.mkdir(os.path.join(d, "sub"))
        os.symlink(NAMES[0], os.path.join(d, "link"))
        os.mkfifo(os.path.join(d, "fifo"))
        self.assert_clean_unmount(v)
        return v

    def expected(self):
        return {".", "..", "sub", "link", "fifo"} | set(NAMES)

    def list_d(self, mnt):
        """d's names, and whether the listing came from what was saved."""
        before = from_saved(mnt)
        names = every_name(os.path.join(mnt, "d"))
        return names, from_saved(mnt) - before

    def test_listing_kept_across_remounts(self):
        """Saved on every member, used by the next mount with the names
        and types a listing of the members gives, saved again with the
        changes made through that mount (of its names and of its own
        attributes); ecfs-fsck finds nothing amiss."""
        v = self.setup_volume()
        for member in v.members:
            self.assertTrue(os.path.isfile(os.path.join(member, ".ecfs/listings")), member)
        r = subprocess.run([FSCK, "--no-progress", "-n", ":".join(v.members)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        mnt = self.mount(v, OPTS)
        self.assertIn("listings saved by the last unmount: 2", v.output())  # d, d/sub
        names, saved = self.list_d(mnt)
        self.assertEqual((names, saved), (self.expected(), 1))
        kinds = {e.name: (e.is_symlink(), e.is_dir()) for e in os.scandir(os.path.join(mnt, "d"))}
        self.assertEqual(kinds["link"], (True, False))
        self.assertEqual(kinds["sub"], (False, True))
        self.assertEqual(kinds[NAMES[1]], (False, False))
        H.write_file(os.path.join(mnt, "d/new"), b"new")
        os.unlink(os.path.join(mnt, "d", NAMES[2]))
        os.rename(os.path.join(mnt, "d", NAMES[3]), os.path.join(mnt, "d/renamed"))
        os.chmod(os.path.join(mnt, "d"), 0o750)  # as tar and cp -a end a directory
        os.utime(os.path.join(mnt, "d"), (1, 2))
        self.assert_clean_unmount(v)
        mnt = self.mount(v, OPTS)
        want = self.expected() - {NAMES[2], NAMES[3]} | {"new", "renamed"}
        self.assertEqual(self.list_d(mnt), (want, 1))
        with open(os.path.join(mnt, "d/renamed"), "rb") as f:
            self.assertEqual(f.read(), NAMES[3].encode())
        self.assert_clean_unmount(v)

    def test_changes_behind_the_back_while_unmounted(self):
        """A name added on member 0 and a chunk removed from member 1 (both
        among the first m + 1 members a listing reads) make the next mount
        list d from the members: the new name is listed, the lost one
        still is.  A name added on member 5 alone is not read by a
        listing of the members either, so the saved listing stands."""
        v = self.setup_volume()
        open(os.path.join(v.members[5], "d/on5"), "wb").close()
        mnt = self.mount(v, OPTS)
        self.assertEqual(self.list_d(mnt), (self.expected(), 1))
        self.assert_clean_unmount(v)
        open(os.path.join(v.members[0], "d/on0"), "wb").close()
        mnt = self.mount(v, OPTS)
        self.assertEqual(self.list_d(mnt), (self.expected() | {"on0"}, 0))
        self.assert_clean_unmount(v)
        os.unlink(os.path.join(v.members[0], "d/on0"))
        os.unlink(os.path.join(v.members[5], "d/on5"))
        mnt = self.mount(v, OPTS)
        self.assertEqual(self.list_d(mnt), (self.expected(), 0))
        self.assert_clean_unmount(v)
        os.unlink(os.path.join(v.members[1], "d", NAMES[5]))
        mnt = self.mount(v, OPTS)
        self.assertEqual(self.list_d(mnt), (self.expected(), 0))
        with open(os.path.join(mnt, "d", NAMES[5]), "rb") as f:
            self.assertEqual(f.read(), NAMES[5].encode())
        self.assert_clean_unmount(v)

    def test_changes_behind_the_back_while_mounted(self):
        """A name added on member 1 between two creates made through the
        mount, and one on member 2 after the last of them: the next mount
        reads the members, and lists both."""
        v = self.setup_volume()
        mnt = self.mount(v, OPTS)
        d = os.path.join(mnt, "d")
        self.assertEqual(self.list_d(mnt), (self.expected(), 1))
        H.write_file(os.path.join(d, "own1"), b"1")
        open(os.path.join(v.members[1], "d/behind1"), "wb").close()
        H.write_file(os.path.join(d, "own2"), b"2")
        open(os.path.join(v.members[2], "d/behind2"), "wb").close()
        self.assert_clean_unmount(v)
        mnt = self.mount(v, OPTS)
        want = self.expected() | {"own1", "own2", "behind1", "behind2"}
        self.assertEqual(self.list_d(mnt), (want, 0))
        self.assert_clean_unmount(v)

    def test_only_one_member_changed_behind_the_back_while_mounted(self):
        """A name added on member 1 and then taken away again, between
        two changes made through the mount: member 1's directory is no
        longer known, and the next mount reads the members."""
        v = self.setup_volume()
        mnt = self.mount(v, OPTS)
        d = os.path.join(mnt, "d")
        self.assertEqual(self.list_d(mnt), (self.expected(), 1))
        foreign = os.path.join(v.members[1], "d/gone")
        open(foreign, "wb").close()
        os.unlink(foreign)
        H.write_file(os.path.join(d, "own"), b"own")
        self.assert_clean_unmount(v)
        mnt = self.mount(v, OPTS)
        self.assertEqual(self.list_d(mnt), (self.expected() | {"own"}, 0))
        self.assert_clean_unmount(v)

    def test_damaged_or_foreign_file_refused(self):
        """A damaged file on member 0, or a directory in its place, is
        refused, saying so, and member 1's is used; damaged on every
        member, or one of another volume, and d is listed from the
        members, with the same names."""
        v = self.setup_volume()
        path = os.path.join(v.members[0], ".ecfs/listings")
        with open(path, "r+b") as f:
            f.seek(100)
            byte = f.read(1)
            f.seek(100)
            f.write(bytes([byte[0] ^ 1]))
        mnt = self.mount(v, OPTS)
        self.assertIn("member 0: saved listings refused (checksum mismatch)", v.output())
        self.assertEqual(self.list_d(mnt), (self.expected(), 1))
        self.assert_clean_unmount(v)
        os.unlink(path)
        os.mkdir(path)  # where no file can be saved either
        mnt = self.mount(v, OPTS)
        self.assertIn("member 0: saved listings refused (not a regular file)", v.output())
        self.assertEqual(self.list_d(mnt), (self.expected(), 1))
        self.assert_clean_unmount(v)
        self.assertIn("member 0: listings not saved", v.output())
        os.rmdir(path)
        for member in v.members:
            with open(os.path.join(member, ".ecfs/listings"), "wb") as f:
                f.write(b"ECFSLST1" + b"\0" * 40)
        mnt = self.mount(v, OPTS)
        self.assertIn("saved listings refused", v.output())
        self.assertEqual(self.list_d(mnt), (self.expected(), 0))
        self.assert_clean_unmount(v)
        other = self.volume(K + M)
        omnt = self.mount(other, OPTS)
        os.mkdir(os.path.join(omnt, "d"))
        self.assert_clean_unmount(other)
        for i, member in enumerate(v.members):
            shutil.copyfile(os.path.join(other.members[i], ".ecfs/listings"),
                            os.path.join(member, ".ecfs/listings"))
        mnt = self.mount(v, OPTS)
        self.assertIn("saved listings refused (of another volume)", v.output())
        self.assertEqual(self.list_d(mnt), (self.expected(), 0))
        self.assert_clean_unmount(v)

    def test_read_only_and_killed_mounts(self):
        """A read-only mount uses what was saved and writes nothing; a
        mount killed leaves the names unsettled, and the next one lists
        from every member whatever was saved."""
        v = self.setup_volume()
        path = os.path.join(v.members[0], ".ecfs/listings")
        before = os.stat(path)
        mnt = self.mount(v, OPTS + ",ro")
        self.assertEqual(self.list_d(mnt), (self.expected(), 1))
        self.assert_clean_unmount(v)
        after = os.stat(path)
        self.assertEqual((after.st_ino, after.st_mtime_ns), (before.st_ino, before.st_mtime_ns))
        mnt = self.mount(v, OPTS)
        v.proc.kill()
        v.proc.wait(timeout=20)
        v.proc = None
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        open(os.path.join(v.members[5], "d/late"), "wb").close()
        mnt = self.mount(v, OPTS)
        self.assertIn("not closed cleanly", v.output())
        self.assertEqual(self.list_d(mnt), (self.expected() | {"late"}, 0))
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main())
