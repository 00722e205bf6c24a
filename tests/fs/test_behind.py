# SPDX-License-Identifier: MIT
"""Member directories changed behind the daemon's back while mounted
as a user or another program might: an entry removed from one member, a foreign entry
added to one member, one file's chunk swapped for another file's.  The
mount keeps serving every file exactly (a lost or foreign chunk is an
erasure), never serves one file's bytes under another's name, does not
crash, and ecfs-fsck afterwards finds and repairs what was done.

Started by meson as `python3 test_behind.py ECFS ECFS_FSCK [unittest args]`."""

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
A = H.pattern(300000, 1)
B = H.pattern(250000, 2)
# the kernel keeps names, attributes and listings for 1 s, the daemon
# attributes for 100 ms
CACHES_LAPSE = 1.3


def read(path):
    with open(path, "rb") as f:
        return f.read()


class BehindTest(H.MountedCase):
    def fsck(self, v, *args):
        return subprocess.run([FSCK, "--no-progress", *args, ":".join(v.members)],
                              capture_output=True, text=True, timeout=120)

    def setup_volume(self):
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        os.mkdir(os.path.join(mnt, "d"))
        H.write_file(os.path.join(mnt, "d/a"), A, fsync=True)
        H.write_file(os.path.join(mnt, "d/b"), B, fsync=True)
        return v, mnt

    def assert_repaired(self, v):
        """Unmounted: ecfs-fsck -n finds a problem, -y repairs it, and a
        second -n is clean."""
        r = self.fsck(v, "-n")
        self.assertNotEqual(r.returncode, 0, "fsck -n found nothing:\n" + r.stdout)
        r = self.fsck(v, "-y")
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_entry_removed_on_one_member(self):
        """A chunk and a whole directory removed from members while
        mounted: every file reads back exactly, the names stay listed (the
        directory is gone from member 2, one of the first m + 1 members a
        listing reads), and a write into the directory goes on with the
        member as an erasure."""
        v, mnt = self.setup_volume()
        os.unlink(os.path.join(v.members[1], "d/a"))
        shutil.rmtree(os.path.join(v.members[2], "d"))
        time.sleep(CACHES_LAPSE)
        self.assertEqual(sorted(os.listdir(os.path.join(mnt, "d"))), ["a", "b"])
        self.assertEqual(read(os.path.join(mnt, "d/a")), A)
        self.assertEqual(read(os.path.join(mnt, "d/b")), B)
        H.write_file(os.path.join(mnt, "d/c"), B[:5000], fsync=True)
        self.assertEqual(read(os.path.join(mnt, "d/c")), B[:5000])
        self.assert_clean_unmount(v)
        self.assert_repaired(v)
        mnt = self.mount(v, OPTS)
        for name, data in (("a", A), ("b", B), ("c", B[:5000])):
            self.assertEqual(read(os.path.join(mnt, "d", name)), data, name)
        self.assert_clean_unmount(v)

    def test_foreign_entries_added_on_one_member(self):
        """A regular file, a directory and a symlink that ecfs never made,
        each on one member: while the daemon holds the directory's names
        whole (it made it, DESIGN.md section 4) they are neither listed nor
        found, and the files around them read back exactly.  The next
        mount finds every one by name until it lists the directory, which
        gives the one on the first m + 1 members (a listing of settled
        names reads those) and holds the others absent; it never serves
        the foreign bytes as a file's content."""
        v, mnt = self.setup_volume()
        # listed first: the kernel keeps the listing, for entry_timeout
        self.assertEqual(sorted(os.listdir(os.path.join(mnt, "d"))), ["a", "b"])
        stray = b"not a chunk of this volume " * 100
        with open(os.path.join(v.members[2], "d/stray"), "wb") as f:
            f.write(stray)
        os.mkdir(os.path.join(v.members[3], "d/straydir"))
        os.symlink("a", os.path.join(v.members[5], "d/straylink"))
        time.sleep(CACHES_LAPSE)
        self.assertEqual(sorted(os.listdir(os.path.join(mnt, "d"))), ["a", "b"])
        for name in ("stray", "straydir", "straylink"):
            self.assertFalse(os.path.lexists(os.path.join(mnt, "d", name)), name)
        self.assertEqual(read(os.path.join(mnt, "d/a")), A)
        self.assertEqual(read(os.path.join(mnt, "d/b")), B)
        self.assert_clean_unmount(v)
        mnt = self.mount(v, OPTS)
        for name in ("straydir", "straylink"):  # on members 3 and 5
            os.lstat(os.path.join(mnt, "d", name))  # found by name while not listed
        names = set(os.listdir(os.path.join(mnt, "d")))
        self.assertEqual(names, {"a", "b", "stray"})  # stray is on member 2 < m + 1
        time.sleep(CACHES_LAPSE)  # the kernel's entries lapse
        for name in ("straydir", "straylink"):
            self.assertFalse(os.path.lexists(os.path.join(mnt, "d", name)), name)
        try:
            got = read(os.path.join(mnt, "d/stray"))
        except OSError:
            got = None  # refused: the only chunk is foreign
        self.assertNotEqual(got, stray, "served a foreign file's bytes")
        self.assertNotIn(b"not a chunk", got or b"")
        self.assertEqual(read(os.path.join(mnt, "d/a")), A)
        self.assert_clean_unmount(v)
        self.assert_repaired(v)

    def test_killed_mount_lists_every_member_until_repaired(self):
        """A daemon killed while mounted leaves its lock text: the next
        mount says so, marks the names unsettled on every member, and
        lists a name only member 5 holds (as a create cut short can leave
        it), which a listing of settled names would not; ecfs-fsck -y
        settles the names and the mark goes."""
        v, mnt = self.setup_volume()
        v.proc.kill()
        v.proc.wait(timeout=20)
        v.proc = None
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        with open(os.path.join(v.members[5], "d/late"), "wb"):
            pass  # an empty chunk, as a create makes it before its header
        mnt = self.mount(v, OPTS)
        self.assertIn("not closed cleanly", v.output())
        marks = [os.path.exists(os.path.join(m, ".ecfs/unsettled")) for m in v.members]
        self.assertEqual(marks, [True] * (K + M))
        self.assertEqual(sorted(os.listdir(os.path.join(mnt, "d"))), ["a", "b", "late"])
        self.assertEqual(read(os.path.join(mnt, "d/a")), A)
        self.assert_clean_unmount(v)
        mnt = self.mount(v, OPTS)  # a clean unmount leaves the mark
        self.assertIn("names may not be on every member", v.output())
        self.assert_clean_unmount(v)
        r = self.fsck(v, "-y")
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        marks = [os.path.exists(os.path.join(m, ".ecfs/unsettled")) for m in v.members]
        self.assertEqual(marks, [False] * (K + M))
        mnt = self.mount(v, OPTS)
        self.assertNotIn("a listing reads every member", v.output())
        self.assertEqual(sorted(os.listdir(os.path.join(mnt, "d"))), ["a", "b"])
        self.assert_clean_unmount(v)

    def test_chunk_swapped_for_another_files(self):
        """The chunk of d/a on two members replaced by d/b's (same volume,
        another file id): d/a still reads as itself, with its own size and
        inode number, and d/b is untouched."""
        v, mnt = self.setup_volume()
        ino_a = os.stat(os.path.join(mnt, "d/a")).st_ino
        ino_b = os.stat(os.path.join(mnt, "d/b")).st_ino
        for i in (0, 3):
            shutil.copyfile(os.path.join(v.members[i], "d/b"), os.path.join(v.members[i], "d/a"))
        time.sleep(CACHES_LAPSE)
        st = os.stat(os.path.join(mnt, "d/a"))
        self.assertEqual((st.st_size, st.st_ino), (len(A), ino_a))
        self.assertEqual(read(os.path.join(mnt, "d/a")), A)
        self.assertEqual(os.stat(os.path.join(mnt, "d/b")).st_ino, ino_b)
        self.assertEqual(read(os.path.join(mnt, "d/b")), B)
        self.assert_clean_unmount(v)
        self.assert_repaired(v)
        mnt = self.mount(v, OPTS)
        self.assertEqual(read(os.path.join(mnt, "d/a")), A)
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main())
