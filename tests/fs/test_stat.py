# SPDX-License-Identifier: MIT
"""stat of closed files, which ecfs answers from one member once it knows
the file's size (src/core/volume/size_cache.h): the size must follow every way a
file changes.  Each case stats the file while closed (so its size is
remembered), changes it, and stats it again, through the mount and after
a remount, against the bytes it must hold.

usage: test_stat.py ECFS_BINARY [unittest args]"""

import errno
import os
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

K, M = 4, 2


class StatTest(H.MountedCase):
    def setUp(self):
        self.v = self.volume(K + M)
        self.mnt = self.mount(self.v, f"k={K},m={M}")

    def p(self, name):
        return os.path.join(self.mnt, name)

    def assert_size(self, name, size, what):
        for _ in range(2):  # the second answer comes from what was remembered
            self.assertEqual(os.stat(self.p(name)).st_size, size, f"{what}: {name}")
        self.assertEqual(os.lstat(self.p(name)).st_size, size, f"{what}: {name}")

    def test_follows_every_change(self):
        H.write_file(self.p("a"), b"x" * 100000)
        self.assert_size("a", 100000, "written")
        with open(self.p("a"), "ab") as f:
            f.write(b"y" * 5)
            f.flush()
            self.assertEqual(os.stat(self.p("a")).st_size, 100005, "open, appended")
        self.assert_size("a", 100005, "appended and closed")
        os.truncate(self.p("a"), 7)
        self.assert_size("a", 7, "truncated by path")
        with open(self.p("a"), "r+b") as f:
            f.truncate(300000)
        self.assert_size("a", 300000, "grown by ftruncate")
        os.link(self.p("a"), self.p("b"))
        self.assert_size("b", 300000, "hard link")
        with open(self.p("b"), "r+b") as f:
            f.truncate(11)
        self.assert_size("a", 11, "cut through the other name")
        H.write_file(self.p("c"), b"z" * 4242)
        self.assert_size("c", 4242, "new")
        os.rename(self.p("c"), self.p("a"))
        self.assert_size("a", 4242, "renamed over")
        self.assert_size("b", 11, "the other link of the replaced file")
        os.unlink(self.p("a"))
        os.unlink(self.p("b"))
        for i in range(20):  # inode numbers get reused: never a stale size
            H.write_file(self.p(f"n{i}"), b"q" * (i * 1000 + 1))
            self.assert_size(f"n{i}", i * 1000 + 1, "recreated")
            os.unlink(self.p(f"n{i}"))
        H.write_file(self.p("d"), b"w" * 65536)
        with open(self.p("d"), "r+b") as f:  # an overwrite: same size
            f.write(b"v" * 10)
        self.assert_size("d", 65536, "overwritten")
        self.assert_clean_unmount(self.v)
        self.mnt = self.mount(self.v)
        self.assert_size("d", 65536, "remounted")
        self.assertFalse(os.path.exists(self.p("a")))
        self.assert_clean_unmount(self.v)

    def linked(self, src, dst, size, nlink, what):
        """Links src to dst: the kernel's copy of dst right after is the
        link's reply, which must hold the file's size and link count."""
        os.link(self.p(src), self.p(dst))
        st = os.lstat(self.p(dst))
        self.assertEqual((st.st_size, st.st_nlink), (size, nlink), what)
        self.assertEqual(os.lstat(self.p(src)).st_ino, st.st_ino, what)

    def chunk_atimes(self, names):
        """{(member, name): atime} of the chunk files of names."""
        return {(i, n): os.lstat(self.v.chunk_path(i, n)).st_atime_ns
                for i in range(K + M) for n in names}

    def test_link_answers_the_size(self):
        """link answers with the file's size, without a lookup when it is
        known: of a file open with its writes still in the daemon (its
        size, with no chunk header read: see chunk_atimes), of one whose
        remembered size a write made stale, of one written and never
        looked at, truncated by path, and after a remount."""
        fd = os.open(self.p("w"), os.O_CREAT | os.O_WRONLY, 0o644)
        before = self.chunk_atimes(["w"])
        time.sleep(0.05)
        os.write(fd, b"w" * 70000)
        self.linked("w", "w1", 70000, 2, "open, written")
        self.assertEqual(self.chunk_atimes(["w"]), before, "a chunk header was read")
        os.write(fd, b"x" * 5)
        self.linked("w", "w2", 70005, 3, "open, appended after a link")
        os.close(fd)
        for name in ("w", "w1", "w2"):
            self.assert_size(name, 70005, "closed")
        H.write_file(self.p("s"), b"s" * 100)
        self.assert_size("s", 100, "written")
        with open(self.p("s"), "ab") as f:
            f.write(b"t" * 23)
        self.linked("s", "s1", 123, 2, "appended after its size was remembered")
        H.write_file(self.p("j"), H.pattern(300001, 5))
        self.linked("j", "j1", 300001, 2, "written, never looked at")
        os.truncate(self.p("j"), 5)
        self.linked("j1", "j2", 5, 3, "truncated by path")
        self.assert_clean_unmount(self.v)
        self.mnt = self.mount(self.v)
        self.linked("j2", "j3", 5, 4, "remounted")
        self.linked("w2", "w3", 70005, 4, "remounted")
        self.assert_clean_unmount(self.v)

    def test_new_files_named_without_their_headers(self):
        """Files just made are renamed, linked and looked up with the size
        their create knew, remembered for their chunks (the creates of the
        others leave it so): no member reads a chunk header, which would
        move its chunk's atime (relatime: older than the header write)."""
        names = [f"n{i}" for i in range(8)]
        for n in names:
            os.close(os.open(self.p(n), os.O_CREAT | os.O_WRONLY, 0o644))
        before = self.chunk_atimes(names)
        time.sleep(0.05)  # a read from now on stamps another atime
        for n in names:
            os.rename(self.p(n), self.p(n + "r"))
            self.linked(n + "r", n + "l", 0, 2, "linked after a rename")
        H.drop_caches()  # (as root) the names looked up again
        for n in names:
            for name in (n + "r", n + "l"):
                self.assertEqual(os.lstat(self.p(name)).st_size, 0, name)
        after = self.chunk_atimes([n + "r" for n in names])
        self.assertEqual(list(after.values()), list(before.values()),
                         "a chunk header was read")
        with open(self.p("n0r"), "rb") as f:  # an open reads them: seen
            self.assertEqual(f.read(), b"")
        moved = self.chunk_atimes(["n0r"])
        self.assertTrue(all(moved[(i, "n0r")] != before[(i, "n0")] for i in range(K + M)),
                        "the atimes show no read")
        self.assert_clean_unmount(self.v)

    def test_closed_files_set_without_their_headers(self):
        """tar x sets a file's times (and cp its mode) once it is closed:
        the size the file's last header round wrote is remembered at its
        close, so those changes answer with it and read no chunk header,
        also after other files were made.  A header read after utime
        would stamp its chunk's atime anew (relatime: the atime set is
        older than the chunk's mtime)."""
        sizes = {"c0": 0, "c1": 3000, "c2": 100000}
        for n, size in sizes.items():
            H.write_file(self.p(n), b"c" * size)
        H.write_file(self.p("other"), b"o")
        time.sleep(0.2)  # the kernel's release of each comes after close()
        for n, size in sizes.items():
            os.utime(self.p(n), ns=(10**18, 2 * 10**18))
            os.chmod(self.p(n), 0o600)
            st = os.lstat(self.p(n))
            self.assertEqual((st.st_size, st.st_mode & 0o777, st.st_mtime_ns),
                             (size, 0o600, 2 * 10**18), n)
        self.assertEqual(set(self.chunk_atimes(sizes).values()), {10**18},
                         "a chunk header was read")
        self.assert_clean_unmount(self.v)
        self.mnt = self.mount(self.v)
        for n, size in sizes.items():
            self.assert_size(n, size, "remounted")
        self.assert_clean_unmount(self.v)

    def test_made_on_a_removed_chunk(self):
        """A file made right after another is removed may get its chunk
        inodes, and their ctimes: never the removed file's size or inode
        number (mknod makes a file without the open a create answers by)."""
        for i in range(30):
            H.write_file(self.p("a"), b"a" * (5000 + i))
            self.assert_size("a", 5000 + i, "written")
            ino = os.lstat(self.p("a")).st_ino
            os.unlink(self.p("a"))
            os.mknod(self.p("b"), stat.S_IFREG | 0o644)
            st = os.lstat(self.p("b"))
            self.assertEqual(st.st_size, 0, f"round {i}")
            self.assertNotEqual(st.st_ino, ino, f"round {i}")
            self.linked("b", "c", 0, 2, f"round {i}")
            os.unlink(self.p("b"))
            os.unlink(self.p("c"))
        self.assert_clean_unmount(self.v)

    def test_times_set_while_open(self):
        """Times set while the file is open and its data still buffered in
        the daemon (tar and cp -p set them right after writing, before the
        kernel's release arrives), by path and through the descriptor, hold
        after the close, then after a remount; a file not open takes them
        at once."""
        fd = os.open(self.p("t"), os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"t" * 100000)
        os.utime(self.p("t"), ns=(10**18, 10**18))
        os.write(fd, b"")
        os.close(fd)
        fd = os.open(self.p("u"), os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"u" * 5000)
        os.utime(fd, ns=(2 * 10**18, 2 * 10**18))
        os.close(fd)
        H.write_file(self.p("w"), b"w" * 3)
        os.utime(self.p("w"), ns=(3 * 10**18, 3 * 10**18))
        for _ in range(2):
            self.assertEqual(os.stat(self.p("t")).st_mtime_ns, 10**18)
            self.assertEqual(os.stat(self.p("u")).st_mtime_ns, 2 * 10**18)
            self.assertEqual(os.stat(self.p("w")).st_mtime_ns, 3 * 10**18)
            self.assert_size("t", 100000, "times set while open")
            self.assert_clean_unmount(self.v)
            self.mnt = self.mount(self.v)
        self.assert_clean_unmount(self.v)

    def test_attribute_changes_keep_the_size(self):
        """chmod, chown and utime answer with the attributes they leave,
        the size included: of a file open with writes buffered (the open
        file's size), and of a closed one (the size remembered, carried
        across the change)."""
        fd = os.open(self.p("o"), os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"o" * 70000)
        os.chmod(self.p("o"), 0o600)
        st = os.stat(self.p("o"))
        self.assertEqual((st.st_size, st.st_mode & 0o777), (70000, 0o600))
        os.chown(self.p("o"), 123, 456)
        st = os.stat(self.p("o"))
        self.assertEqual((st.st_size, st.st_uid, st.st_gid), (70000, 123, 456))
        os.write(fd, b"p" * 5)
        os.close(fd)
        self.assert_size("o", 70005, "closed")
        os.chmod(self.p("o"), 0o640)
        os.utime(self.p("o"), ns=(5 * 10**17, 5 * 10**17))
        st = os.stat(self.p("o"))
        self.assertEqual((st.st_size, st.st_mode & 0o777, st.st_mtime_ns),
                         (70005, 0o640, 5 * 10**17))
        self.assert_clean_unmount(self.v)
        self.mnt = self.mount(self.v)
        st = os.stat(self.p("o"))
        self.assertEqual((st.st_size, st.st_mode & 0o777, st.st_uid, st.st_mtime_ns),
                         (70005, 0o640, 123, 5 * 10**17))
        self.assert_clean_unmount(self.v)

    def test_with_members_lost(self):
        """A member lost after its size was remembered, and writes while
        it is gone: the size follows (it comes from the newest header)."""
        H.write_file(self.p("f"), b"a" * 50000)
        self.assert_size("f", 50000, "written")
        self.v.lose(0, "rmdir")
        H.write_file(self.p("f"), b"b" * 20000)
        self.assert_size("f", 20000, "rewritten without member 0")
        self.assert_clean_unmount(self.v)

    def assert_dir(self, name, what, **want):
        """stat of name, twice, against want (values, or predicates)."""
        for _ in range(2):  # the second answer may come from what was remembered
            st = os.stat(self.p(name))
            got = {"nlink": st.st_nlink, "mode": st.st_mode & 0o7777,
                   "mtime": st.st_mtime_ns, "ctime": st.st_ctime_ns, "atime": st.st_atime_ns}
            for key, value in want.items():
                if callable(value):
                    self.assertTrue(value(got[key]), f"{what}: {name} {key} {got[key]}")
                else:
                    self.assertEqual(got[key], value, f"{what}: {name} {key}")
        return os.stat(self.p(name))

    def test_directory_follows_every_change(self):
        """Directories' attributes are remembered between changes
        (src/fs/attr_cache.h): each change shows at once."""
        os.mkdir(self.p("d"), 0o755)
        st = self.assert_dir("d", "made", nlink=2, mode=0o755)
        os.mkdir(self.p("d/e"))
        st = self.assert_dir("d", "subdirectory made", nlink=3,
                             mtime=lambda t, t0=st.st_mtime_ns: t >= t0)
        os.chmod(self.p("d"), 0o700)
        st = self.assert_dir("d", "chmod", mode=0o700)
        os.utime(self.p("d"), ns=(5 * 10**9, 7 * 10**9))
        st = self.assert_dir("d", "utime", mtime=7 * 10**9, atime=5 * 10**9)
        os.setxattr(self.p("d"), "user.k", b"v")
        st = self.assert_dir("d", "setxattr", ctime=lambda t, t0=st.st_ctime_ns: t >= t0)
        H.write_file(self.p("d/f"), b"x")
        st = self.assert_dir("d", "file made", mtime=lambda t: t > 7 * 10**9)
        # listing moves the atime (relatime: it was older than the mtime)
        self.assertEqual(sorted(os.listdir(self.p("d"))), ["e", "f"])
        st = self.assert_dir("d", "listed", atime=lambda t, m=st.st_mtime_ns: t >= m)
        os.rename(self.p("d"), self.p("d2"))
        self.assertFalse(os.path.exists(self.p("d")))
        self.assert_dir("d2", "renamed", nlink=3, mode=0o700)
        os.rmdir(self.p("d2/e"))
        self.assert_dir("d2", "subdirectory removed", nlink=2)
        os.unlink(self.p("d2/f"))
        os.rmdir(self.p("d2"))
        self.assertFalse(os.path.exists(self.p("d2")))
        os.mkdir(self.p("d2"), 0o711)  # the same path, another directory
        self.assert_dir("d2", "made again", nlink=2, mode=0o711)
        self.assert_clean_unmount(self.v)

    def test_file_attributes_follow_every_name(self):
        """A file's attributes are remembered too (attr_cache.h): a change
        through another name shows at once.  (Not the atime: ecfs reads
        chunk headers, which moves it under relatime.)"""
        H.write_file(self.p("f"), b"x" * 5000)
        os.utime(self.p("f"), ns=(10**9, 2 * 10**9))
        os.link(self.p("f"), self.p("g"))
        self.assert_dir("f", "linked", nlink=2, mode=0o644, mtime=2 * 10**9)
        os.chmod(self.p("g"), 0o600)
        self.assert_dir("f", "chmod through the other name", mode=0o600)
        with open(self.p("g"), "ab") as f:
            f.write(b"y")
            f.flush()  # in the open file's buffer, not on the members yet
            self.assertEqual(os.stat(self.p("f")).st_size, 5001)
            self.assertEqual(os.stat(self.p("f")).st_size, 5001)
        self.assert_dir("f", "appended through the other name",
                        mtime=lambda t: t > 2 * 10**9)
        self.assertEqual(os.stat(self.p("f")).st_size, 5001)
        os.utime(self.p("g"), ns=(10**9, 3 * 10**9))
        self.assert_dir("f", "times set through the other name", mtime=3 * 10**9)
        os.unlink(self.p("g"))
        self.assert_dir("f", "the other name removed", nlink=1)
        self.assert_clean_unmount(self.v)
    def listed_sizes(self, d):
        """Sizes and modes by stat after a fresh listing of d (readdirplus:
        the listing hands out the attributes, fs_dirs.c)."""
        H.drop_caches()
        return {name: (os.stat(os.path.join(d, name), follow_symlinks=False).st_size,
                       os.stat(os.path.join(d, name), follow_symlinks=False).st_mode & 0o7777)
                for name in sorted(os.listdir(d))}

    def test_listing_then_stat(self):
        """Listings take the attributes getattr would answer: right after
        a remount (sizes not known yet), once known, and after changes."""
        d = self.p("d")
        os.mkdir(d)
        H.write_file(os.path.join(d, "a"), b"a" * 100000)
        H.write_file(os.path.join(d, "b"), b"b" * 7)
        os.mkdir(os.path.join(d, "sub"), 0o700)
        os.symlink("a", os.path.join(d, "l"))
        os.link(os.path.join(d, "a"), os.path.join(d, "c"))
        want = {"a": (100000, 0o644), "b": (7, 0o644), "c": (100000, 0o644),
                "l": (1, 0o777), "sub": (None, 0o700)}

        def check(what):
            got = self.listed_sizes(d)
            self.assertEqual(sorted(got), sorted(want), what)
            for name, (size, mode) in want.items():
                if size is not None:
                    self.assertEqual(got[name][0], size, f"{what}: {name}")
                self.assertEqual(got[name][1], mode, f"{what}: {name}")

        self.assert_clean_unmount(self.v)
        self.mnt = self.mount(self.v)
        check("remounted")
        check("sizes known")
        os.truncate(os.path.join(d, "b"), 3)
        os.chmod(os.path.join(d, "sub"), 0o750)
        want.update(b=(3, 0o644), sub=(None, 0o750))
        check("changed")
        os.listdir(d)
        with open(os.path.join(d, "c"), "ab") as f:  # the other name of a
            f.write(b"z" * 11)
            f.flush()
            self.assertEqual(os.stat(os.path.join(d, "a")).st_size, 100011)
        want.update(a=(100011, 0o644), c=(100011, 0o644))
        check("appended through the other name")
        self.assert_clean_unmount(self.v)

    def test_kept_listing_follows_every_change(self):
        """The kernel keeps a directory's listing (FOPEN_CACHE_DIR) while
        nothing changes: each listing right after a change through the
        mount, in the directory or elsewhere, shows it."""
        d, e = self.p("d"), self.p("e")
        os.mkdir(d)
        os.mkdir(e)
        want = set()

        def check(what):
            for _ in range(3):  # the later ones from the kernel's copy
                self.assertEqual(set(os.listdir(d)), want, what)

        check("empty")
        steps = [
            ("create", lambda: H.write_file(os.path.join(d, "f"), b"f"), {"f"}, set()),
            ("mkdir", lambda: os.mkdir(os.path.join(d, "sub")), {"sub"}, set()),
            ("symlink", lambda: os.symlink("f", os.path.join(d, "l")), {"l"}, set()),
            ("link", lambda: os.link(os.path.join(d, "f"), os.path.join(d, "g")), {"g"}, set()),
            ("rename within", lambda: os.rename(os.path.join(d, "g"), os.path.join(d, "h")),
             {"h"}, {"g"}),
            ("rename out", lambda: os.rename(os.path.join(d, "h"), os.path.join(e, "h")),
             set(), {"h"}),
            ("rename in", lambda: os.rename(os.path.join(e, "h"), os.path.join(d, "i")),
             {"i"}, set()),
            ("unlink", lambda: os.unlink(os.path.join(d, "i")), set(), {"i"}),
            ("rmdir", lambda: os.rmdir(os.path.join(d, "sub")), set(), {"sub"}),
            ("mknod", lambda: os.mkfifo(os.path.join(d, "p")), {"p"}, set()),
        ]
        for what, change, added, removed in steps:
            change()
            want = (want | added) - removed
            check(what)
        with open(os.path.join(d, "f"), "rb"):
            os.unlink(os.path.join(d, "f"))  # open: set aside, not listed
            want.discard("f")
            check("unlinked while open")
        self.assert_clean_unmount(self.v)

    def test_listings_with_names_from_an_earlier_mount(self):
        """A directory made through the mount is listed from the names the
        daemon holds (DESIGN.md section 4), one made by an earlier mount
        too once it was listed.  Names that come into one (rename,
        exchange, link), from one held or not, list with their types as a
        plain directory lists them."""
        os.mkdir(self.p("old"))
        os.mkdir(self.p("old/sub"))
        H.write_file(self.p("old/f"), b"f")
        os.symlink("f", self.p("old/l"))
        os.mkdir(self.p("other"))
        H.write_file(self.p("other/q"), b"q")
        self.assert_clean_unmount(self.v)
        self.mnt = self.mount(self.v, f"k={K},m={M}")

        def every_name(d):  # . and .. too, which os.listdir leaves out
            out = subprocess.run(["ls", "-af", d], capture_output=True, text=True, check=True)
            return set(out.stdout.split())

        os.mkdir(self.p("new"))
        os.mkfifo(self.p("new/p"))
        self.assertEqual(every_name(self.p("new")), {".", "..", "p"})  # made: held
        self.assertEqual(sorted(os.listdir(self.p("old"))), ["f", "l", "sub"])
        os.rename(self.p("old/f"), self.p("new/f"))
        os.link(self.p("new/f"), self.p("new/g"))
        os.rename(self.p("old/l"), self.p("new/l"))
        H.renameat2(self.p("old/sub"), self.p("new/p"), H.RENAME_EXCHANGE)
        os.rename(self.p("other/q"), self.p("new/q"))  # from one never listed
        want_new = {"f": "file", "g": "file", "l": "link", "p": "dir", "q": "file"}
        want_old = {"sub": "fifo"}

        def kinds(d):
            got = {}
            for entry in os.scandir(d):  # the types the listing gives
                got[entry.name] = ("link" if entry.is_symlink() else "dir" if entry.is_dir()
                                   else "file" if entry.is_file() else "fifo")
            return got

        for _ in range(2):
            self.assertEqual(kinds(self.p("new")), want_new)
            self.assertEqual(kinds(self.p("old")), want_old)
            self.assertEqual(every_name(self.p("new")), {".", ".."} | set(want_new))
            self.assertEqual(every_name(self.p("old")), {".", ".."} | set(want_old))
            time.sleep(1.2)  # past the kernel's copies: the daemon's answers
        os.rename(self.p("new/q"), self.p("new/q2"))
        want_new["q2"] = want_new.pop("q")
        self.assertEqual(kinds(self.p("new")), want_new)
        self.assert_clean_unmount(self.v)


MIB = 1 << 20


class LinksAndBlocksTest(H.MountedCase):
    """st_nlink of a file unlinked while open, st_blocks (the blocks of
    the file's chunks scaled by k/(k+m)) and SEEK_DATA/SEEK_HOLE."""

    def setUp(self):
        self.v = self.volume(K + M)
        self.mnt = self.mount(self.v, f"k={K},m={M}")

    def p(self, name):
        return os.path.join(self.mnt, name)

    def orphans(self):
        """The orphans left on member 0, once the release that follows the
        last close (the kernel sends it after close returns) came."""
        d = self.v.chunk_path(0, ".ecfs/orphans")
        for _ in range(50):
            left = os.listdir(d) if os.path.isdir(d) else []
            if not left:
                break
            time.sleep(0.1)
        return left

    def test_unlinked_open_file_has_no_links(self):
        """fstat of an open file after its last name is gone: st_nlink 0
        (pjdfstest unlink/open_file_not_freed), its data still there; one
        of two names gone: 1."""
        data = H.pattern(300000, 1)
        H.write_file(self.p("f"), data)
        fd = os.open(self.p("f"), os.O_RDWR)
        try:
            os.unlink(self.p("f"))
            self.assertEqual(os.fstat(fd).st_nlink, 0, "unlinked while open")
            self.assertEqual(os.pread(fd, len(data) + 1, 0), data)
            os.fchmod(fd, 0o600)  # setattr's reply too
            self.assertEqual(os.fstat(fd).st_nlink, 0, "fchmod after unlink")
            os.pwrite(fd, b"x", 5)
            self.assertEqual(os.fstat(fd).st_nlink, 0, "written after unlink")
        finally:
            os.close(fd)
        self.assertEqual(self.orphans(), [], "orphan removed at the last close")

        H.write_file(self.p("a"), data)
        os.link(self.p("a"), self.p("b"))
        fd = os.open(self.p("a"), os.O_RDONLY)
        try:
            os.unlink(self.p("a"))
            self.assertEqual(os.fstat(fd).st_nlink, 1, "one of two names gone")
            self.assertEqual(os.stat(self.p("b")).st_nlink, 1)
            os.unlink(self.p("b"))
            self.assertEqual(os.fstat(fd).st_nlink, 0, "both names gone")
            self.assertEqual(os.pread(fd, len(data) + 1, 0), data)
        finally:
            os.close(fd)
        self.assertEqual(self.orphans(), [])
        self.assert_clean_unmount(self.v)

    def assert_blocks(self, name, lo, hi, what):
        """st_blocks through a stat, an fstat and after a remount: k times
        the blocks of the chunk on member 0 (the first healthy member
        answers), and in [lo, hi] bytes."""
        chunk = os.lstat(self.v.chunk_path(0, name)).st_blocks
        with open(self.p(name), "rb") as f:
            got = [os.stat(self.p(name)).st_blocks, os.stat(self.p(name)).st_blocks,
                   os.fstat(f.fileno()).st_blocks]
        self.v.unmount()
        self.mount(self.v, f"k={K},m={M}")
        got.append(os.stat(self.p(name)).st_blocks)
        self.assertEqual(got, [K * chunk] * 4, what)
        self.assertTrue(lo <= got[0] * 512 <= hi, f"{what}: {got[0] * 512} bytes")

    def test_blocks_are_the_data_held(self):
        """A file written whole holds its size and the chunks' headers,
        record blocks and tag blocks (a 4 KiB header, a 4 KiB record block
        and, in format 3, a 16 KiB tag block per 64 stripes, per chunk:
        scaled, k times that); a sparse file of 20 GiB with 1 MiB written
        holds about 1 MiB."""
        H.write_file(self.p("full"), H.pattern(10 * MIB, 2))
        stripes = 10 * MIB // (K * 64 * 1024)
        groups = (stripes + 63) // 64
        tag_block = 64 * 16 * (64 * 1024 // 4096)
        over = K * (4096 * (1 + groups + 1) + tag_block * groups)
        self.assert_blocks("full", 10 * MIB, 10 * MIB + over, "10 MiB written whole")
        with open(self.p("sparse"), "wb") as f:
            f.truncate(20 << 30)
            f.seek(100 * MIB)
            f.write(H.pattern(MIB, 3))
        # per chunk a header page, a record block and its stripes' tags
        # (format 3), which may straddle two pages of the tag block
        self.assert_blocks("sparse", MIB, MIB + K * 4096 * 4, "20 GiB, 1 MiB written")
        du = subprocess.run(["du", "-k", self.p("sparse")], capture_output=True, text=True)
        self.assertLess(int(du.stdout.split()[0]), 2 * 1024, "du of the sparse file")
        self.assert_clean_unmount(self.v)

    def assert_seeks(self, name, what):
        sd = K * 64 * 1024  # a stripe's data
        with open(self.p(name), "rb") as f:
            fd = f.fileno()
            self.assertEqual(os.lseek(fd, 0, os.SEEK_DATA), 100 * MIB, what)
            self.assertEqual(os.lseek(fd, 0, os.SEEK_HOLE), 0, what)
            self.assertEqual(os.lseek(fd, 100 * MIB + 5, os.SEEK_DATA), 100 * MIB + 5, what)
            self.assertEqual(os.lseek(fd, 100 * MIB + 5, os.SEEK_HOLE), 101 * MIB, what)
            self.assertEqual(os.lseek(fd, 101 * MIB, os.SEEK_DATA), 300 * MIB, what)
            self.assertEqual(os.lseek(fd, 300 * MIB + sd, os.SEEK_HOLE), 300 * MIB + sd, what)
            with self.assertRaises(OSError, msg=what) as e:
                os.lseek(fd, 300 * MIB + sd, os.SEEK_DATA)
            self.assertEqual(e.exception.errno, errno.ENXIO, what)
            self.assertEqual(os.lseek(fd, (20 << 30) - 1, os.SEEK_HOLE), (20 << 30) - 1, what)

    def test_seek_data_and_hole(self):
        """SEEK_DATA and SEEK_HOLE find the stripes written, on a healthy
        volume, with a member gone, and through the open file that wrote
        them (its buffered bytes count)."""
        with open(self.p("s"), "wb") as f:
            f.truncate(20 << 30)
            f.seek(100 * MIB)
            f.write(H.pattern(MIB, 4))
            f.seek(300 * MIB)
            f.write(b"y")
            f.flush()
            fd = f.fileno()
            self.assertEqual(os.lseek(fd, 101 * MIB, os.SEEK_DATA), 300 * MIB, "unflushed")
        self.assert_seeks("s", "healthy")
        self.v.lose(0, "rmdir")
        self.assert_seeks("s", "member 0 lost")
        self.v.unmount()
        self.mount(self.v, f"k={K},m={M}")
        self.assert_seeks("s", "mounted without member 0")
        self.assert_clean_unmount(self.v)

    # ---- listings that give attributes (readdirplus, fs_dirs.c) ----

    def listed_stat(self, d, name):
        """stat of d/name right after a listing of d, which gives it."""
        self.assertIn(name, os.listdir(d))
        return os.lstat(os.path.join(d, name))

    def test_listing_size_from_one_of_two_members(self):
        """A listing gives a file's attributes where its first two members
        agree on the mode and owner, the size from the one of them that
        remembers it (nsops_stat_names): after a chmod, which carries the
        remembered size across on one member only, and once a member's
        copy disagrees behind the daemon's back."""
        d = self.p("d")
        os.mkdir(d)
        H.write_file(os.path.join(d, "f"), b"f" * 5000)
        os.chmod(os.path.join(d, "f"), 0o640)
        for what in ("after a chmod", "again"):
            H.drop_caches()
            st = self.listed_stat(d, "f")
            self.assertEqual((st.st_size, st.st_mode & 0o7777), (5000, 0o640), what)
        for member in (0, 1):
            chunk = os.path.join(self.v.members[member], "d", "f")
            os.chmod(chunk, 0o666)
            H.drop_caches()
            st = self.listed_stat(d, "f")
            self.assertEqual((st.st_size, st.st_mode & 0o7777), (5000, 0o640),
                             f"member {member}'s chunk made 0666 behind the daemon's back")
            os.chmod(chunk, 0o640)
        self.assert_clean_unmount(self.v)

    def test_listing_leaves_attributes_the_kernel_holds(self):
        """A listing does not give again the attributes the kernel was
        given with a name lately (kernel_holds, fs_dirs.c): `rm -r` lists
        every directory twice before it removes the names.  Seen through a
        change behind the daemon's back, which the kernel's copy hides for
        its timeout; a name the kernel forgot is given afresh."""
        self.assert_clean_unmount(self.v)
        self.mnt = self.mount(self.v, "attr_timeout=60,entry_timeout=60")
        d = self.p("d")
        os.mkdir(d)
        H.write_file(os.path.join(d, "f"), b"f" * 300)
        H.drop_caches()
        self.assertEqual(self.listed_stat(d, "f").st_mode & 0o7777, 0o644)
        for member in self.v.members:
            os.chmod(os.path.join(member, "d", "f"), 0o600)
        os.mkdir(self.p("elsewhere"))  # so the kernel keeps no copy of d's listing
        self.assertEqual(self.listed_stat(d, "f").st_mode & 0o7777, 0o644, "held")
        H.drop_caches()
        self.assertEqual(self.listed_stat(d, "f").st_mode & 0o7777, 0o600, "forgotten")
        self.assert_clean_unmount(self.v)


if __name__ == "__main__":
    sys.exit(H.main())
