# SPDX-License-Identifier: MIT
"""Listing memory per open directory is bounded (DESIGN.md section 4,
"Listing memory"): an open directory holds tune.listing_batch names at
most, and reads the members again for the names past them, resuming
after the offset the kernel gives.  These tests check that a directory of
several batches lists every name exactly once, through os.listdir and
through a slow readdir that seeks back with telldir/seekdir, also with a
member removed and with names that only some members hold; and that the
daemon's memory for 50 handles held open on a directory of 20,000 names
stays bounded (on a daemon that holds each handle's whole listing it
grows by some 25 MB).

Started by meson as `python3 test_listing_batch.py ECFS [unittest args]`."""

import collections
import ctypes
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

K, M = 4, 2
BATCH = 500
# entry_timeout=0: the kernel keeps no listing, so every readdir reaches
# the daemon
OPTS = f"k={K},m={M},tune.listing_batch={BATCH},entry_timeout=0"
# what 50 windows of BATCH names cost, with room for the allocator
RSS_GROWTH_MAX_KIB = 8 * 1024
# Under ASan (the sanitizer build's suites) freed memory waits in a
# quarantine, which the daemon of the memory test runs without, and each
# allocation carries redzones: about twice the memory.
SANITIZED = os.environ.get("ECFS_TEST_SANITIZED") == "1"


class Dirent(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


libc = ctypes.CDLL(None, use_errno=True)
libc.opendir.restype = ctypes.c_void_p
libc.opendir.argtypes = [ctypes.c_char_p]
libc.readdir.restype = ctypes.POINTER(Dirent)
libc.readdir.argtypes = [ctypes.c_void_p]
libc.telldir.restype = ctypes.c_long
libc.telldir.argtypes = [ctypes.c_void_p]
libc.seekdir.restype = None
libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
libc.closedir.argtypes = [ctypes.c_void_p]


def opendir(path):
    d = libc.opendir(path.encode())
    if not d:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)
    return d


def readdir(d):
    """The next name, or None at the end."""
    e = libc.readdir(d)
    return e.contents.d_name.decode() if e else None


def make_names(v, rel, names, members=None):
    """Empty files named names in directory rel on the members (all by
    default), made behind the daemon's back while it is not mounted."""
    for j in members if members is not None else range(len(v.members)):
        top = os.path.join(v.members[j], rel)
        for name in names:
            os.close(os.open(os.path.join(top, name), os.O_CREAT | os.O_WRONLY, 0o644))


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class ListingBatchTest(H.MountedCase):
    def volume_with(self, count, members=None):
        """A volume whose directory d holds names n00000... (count of
        them), put on the members (all by default) while unmounted."""
        v = self.volume(K + M)
        mnt = self.mount(v, f"k={K},m={M}")
        os.mkdir(os.path.join(mnt, "d"))
        self.assert_clean_unmount(v)
        make_names(v, "d", [f"n{i:05d}" for i in range(count)], members)
        return v

    def slow_listing(self, path, every=None):
        """d's names by readdir one at a time, seeking back now and then
        to a position telldir gave (within the window and several
        windows back), which must give the same name again; every() is
        called after each 300 names (if given)."""
        d = opendir(path)
        names, marks = [], []
        try:
            while True:
                pos = libc.telldir(d)
                name = readdir(d)
                if name is None:
                    break
                if len(names) % 13 == 5:
                    libc.seekdir(d, pos)
                    self.assertEqual(readdir(d), name, f"after seekdir to {pos}")
                if len(names) % 211 == 0:
                    marks.append((pos, name))
                names.append(name)
                if every and len(names) % 300 == 0:
                    every()
            for pos, name in marks:
                libc.seekdir(d, pos)
                self.assertEqual(readdir(d), name, f"after seekdir back to {pos}")
        finally:
            libc.closedir(d)
        return names

    def assert_listed_once(self, mnt, want, every=None):
        d = os.path.join(mnt, "d")
        for how, names in (("os.listdir", os.listdir(d)),
                           ("readdir with seekdir", self.slow_listing(d, every))):
            names = [n for n in names if n not in (".", "..")]
            dup = {n for n, c in collections.Counter(names).items() if c > 1}
            self.assertFalse(dup, f"{how}: listed twice: {sorted(dup)[:10]}")
            self.assertEqual(set(names), want, f"{how}: missing "
                             f"{sorted(want - set(names))[:10]}, extra "
                             f"{sorted(set(names) - want)[:10]}")

    def test_every_name_once(self):
        """5,000 names (ten windows) list exactly once each, from the
        members and then from what the daemon holds; a name lost on two
        members and names only one member holds too; and so again with
        the first member removed."""
        self.check_every_name_once(5000)

    def test_every_name_once_read_through_windows(self):
        """The same with 10,000 names, more than a member's listing is
        read whole up to (16 windows): each member's names go through a
        window of its own, and the directory is never held."""
        self.check_every_name_once(10000)

    def check_every_name_once(self, count):
        v = self.volume_with(count)
        want = {f"n{i:05d}" for i in range(count)}
        # lost on members 0 and 1; held by member 1 only
        for j in (0, 1):
            os.unlink(os.path.join(v.members[j], "d", "n00010"))
        only = [f"only{i:03d}" for i in range(300)]
        make_names(v, "d", only, members=[1])
        want |= set(only)
        mnt = self.mount(v, OPTS)
        self.assert_listed_once(mnt, want)
        self.assert_listed_once(mnt, want)  # from the names held
        # an rmdir that fails drops what the daemon holds of its
        # directory (fs_dirnames.h): the next window is read from the
        # members again
        os.mkdir(os.path.join(mnt, "d", "full"))
        os.close(os.open(os.path.join(mnt, "d", "full", "x"), os.O_CREAT | os.O_WRONLY))
        want.add("full")

        def drop_held():
            with self.assertRaises(OSError):
                os.rmdir(os.path.join(mnt, "d", "full"))
        self.assert_listed_once(mnt, want, drop_held)
        shutil.rmtree(v.members[0])
        self.assert_listed_once(mnt, want, drop_held)
        self.assertTrue(v.alive(), v.log())

    def test_memory_of_open_handles(self):
        """50 handles held open on a directory of 20,000 names, each read
        past its first name after a change (so no two could share one
        listing), grow the daemon by less than RSS_GROWTH_MAX_KIB (twice
        that under ASan)."""
        # on the m + 1 members a listing reads, which is quicker to make
        v = self.volume_with(20000, members=range(M + 1))
        limit = RSS_GROWTH_MAX_KIB * (2 if SANITIZED else 1)
        asan = os.environ.get("ASAN_OPTIONS")
        if SANITIZED:
            os.environ["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "quarantine_size_mb=0"
        try:
            mnt = self.mount(v, OPTS)
        finally:
            if SANITIZED:
                os.environ.pop("ASAN_OPTIONS")
                if asan is not None:
                    os.environ["ASAN_OPTIONS"] = asan
        d = os.path.join(mnt, "d")
        self.assertEqual(len(os.listdir(d)), 20000)
        pid = v.proc.pid
        before = vm_rss_kib(pid)
        handles = []
        try:
            for i in range(50):
                h = opendir(d)
                handles.append(h)
                self.assertIsNotNone(readdir(h))
                os.close(os.open(os.path.join(d, f"new{i:02d}"), os.O_CREAT | os.O_WRONLY,
                                 0o644))
            grown = vm_rss_kib(pid) - before
        finally:
            for h in handles:
                libc.closedir(h)
        H.log(f"daemon RSS grew by {grown} KiB with 50 handles open")
        self.assertLess(grown, limit)
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
