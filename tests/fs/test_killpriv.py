# SPDX-License-Identifier: MIT
"""Setuid, setgid and file capabilities at writes, truncates and chown,
and the one request a write costs (src/fs/fs_killpriv.c), through real
FUSE mounts.

Started by meson as `python3 test_killpriv.py ECFS [unittest args]`.

- A 4 KiB write through a read-write open is one request to the daemon:
  the kernel asks for security.capability once, not before each write
  (FUSE_HANDLE_KILLPRIV_V2, which the daemon offers past libfuse).
- What uid 65534 does to setuid/setgid files, on ecfs and on a directory
  of the local filesystem, ends in the same modes: writes through
  read-write and write-only opens, ftruncate, truncate, an open with
  O_TRUNC (of a full and of an empty file), fallocate, a setgid file
  without group execute whose group it is not in; root's write keeps the
  bits (CAP_FSETID), root's chown clears them.
- security.capability is gone after a write through either kind of open,
  by root and by uid 65534, and after a truncate.
- A read-write open still maps shared and writable: a MAP_SHARED write
  reaches the file, and sqlite in WAL mode (which maps its -shm file)
  works.
"""

import collections
import errno
import mmap
import os
import re
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

NOBODY = 65534
OPTS = "k=4,m=2"
# security.capability, version 2: effective, CAP_NET_BIND_SERVICE permitted
CAPABILITY = (bytes.fromhex("01000002") + (1 << 10).to_bytes(4, "little")
              + bytes(12))


def fd_write(path, flags):
    fd = os.open(path, flags)
    try:
        os.pwrite(fd, b"w", 1)
    finally:
        os.close(fd)


def fd_truncate(path):
    fd = os.open(path, os.O_RDWR)
    try:
        os.ftruncate(fd, 3)
    finally:
        os.close(fd)


def open_trunc(path):
    os.close(os.open(path, os.O_WRONLY | os.O_TRUNC))


def fd_fallocate(path):
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, 1 << 16)
    finally:
        os.close(fd)


# name: (mode, owner group, what uid 65534 does to it)
BY_NOBODY = {
    "write-rw": (0o6777, 0, lambda p: fd_write(p, os.O_RDWR)),
    "write-wo": (0o6777, 0, lambda p: fd_write(p, os.O_WRONLY)),
    "ftruncate": (0o6777, 0, fd_truncate),
    "truncate": (0o6777, 0, lambda p: os.truncate(p, 2)),
    "open-trunc": (0o6777, 0, open_trunc),
    "open-trunc-empty": (0o6777, 0, open_trunc),
    "fallocate": (0o6777, 0, fd_fallocate),
    "sgid-noexec-rw": (0o2666, 0, lambda p: fd_write(p, os.O_RDWR)),
    "sgid-noexec-ingroup-rw": (0o2666, NOBODY, lambda p: fd_write(p, os.O_RDWR)),
}


def setid_modes(top):
    """Makes the files of BY_NOBODY in top (a directory of its own), lets
    uid 65534 act on them, then root write to one and chown another;
    returns every file's mode."""
    os.mkdir(top)
    os.chmod(top, 0o777)
    for name, (mode, gid, _) in BY_NOBODY.items():
        p = os.path.join(top, name)
        with open(p, "wb") as f:
            f.write(b"" if name.endswith("empty") else b"setid data")
        os.chown(p, 0, gid)
        os.chmod(p, mode)

    def act():
        for name, (_, _, fn) in BY_NOBODY.items():
            fn(os.path.join(top, name))
        return True

    H.run_as(NOBODY, NOBODY, act)
    for name in ("root-write", "root-chown"):
        p = os.path.join(top, name)
        with open(p, "wb") as f:
            f.write(b"root's")
        os.chmod(p, 0o6755)
    fd_write(os.path.join(top, "root-write"), os.O_RDWR)
    os.chown(os.path.join(top, "root-chown"), 1, 1)
    return {n: oct(os.stat(os.path.join(top, n)).st_mode & 0o7777)
            for n in sorted(os.listdir(top))}


def capability_after(path, change, as_uid=0):
    """Whether path still has its capability after change(path), run as
    as_uid."""
    with open(path, "wb") as f:
        f.write(b"#!/bin/true\n")
    os.chmod(path, 0o777)
    os.setxattr(path, "security.capability", CAPABILITY)
    if as_uid:
        H.run_as(as_uid, as_uid, change, path)
    else:
        change(path)
    try:
        os.getxattr(path, "security.capability")
        return True
    except OSError as e:
        if e.errno != errno.ENODATA:
            raise
        return False


class KillprivTest(H.MountedCase):
    maxDiff = None

    def test_a_write_is_one_request(self):
        v = self.volume(6)
        self.mount(v, OPTS, fuse_opts="allow_other,default_permissions,debug")
        p = os.path.join(v.mnt, "f")
        H.write_file(p, os.urandom(1 << 20))
        fd = os.open(p, os.O_RDWR)
        start = len(v.output())
        writes = 64
        for i in range(writes):
            os.pwrite(fd, H.pattern(4096, i), (i * 37 % 256) * 4096)
        os.close(fd)
        ops = collections.Counter(re.findall(r"opcode: (\w+)", v.output()[start:]))
        self.assertEqual(ops["WRITE"], writes, ops)
        # the first write may ask (the inode is checked once)
        self.assertLessEqual(ops["GETXATTR"], 1, f"the kernel asked before each write: {ops}")
        self.assert_clean_unmount(v)

    def test_setid_bits_as_on_a_local_filesystem(self):
        v = self.volume(6)
        self.mount(v, OPTS)
        got = setid_modes(os.path.join(v.mnt, "setid"))
        want = setid_modes(os.path.join(v.base, "reference"))
        self.assertEqual(got, want)
        # and the reference itself is what the kernel documents
        self.assertEqual(want["write-rw"], oct(0o777))
        self.assertEqual(want["open-trunc"], oct(0o777))
        self.assertEqual(want["sgid-noexec-ingroup-rw"], oct(0o2666))
        self.assertEqual(want["root-write"], oct(0o6755))
        self.assertEqual(want["root-chown"], oct(0o755))
        self.assert_clean_unmount(v)

    def test_a_write_drops_the_capability(self):
        v = self.volume(6)
        self.mount(v, OPTS)
        p = os.path.join(v.mnt, "cap")
        cases = {
            "root, read-write": (lambda q: fd_write(q, os.O_RDWR), 0),
            "root, write-only": (lambda q: fd_write(q, os.O_WRONLY), 0),
            "65534, read-write": (lambda q: fd_write(q, os.O_RDWR), NOBODY),
            "65534, write-only": (lambda q: fd_write(q, os.O_WRONLY), NOBODY),
            "root, truncate": (lambda q: os.truncate(q, 1), 0),
        }
        for what, (change, uid) in cases.items():
            with self.subTest(writer=what):
                self.assertFalse(capability_after(p, change, uid),
                                 "security.capability kept")
        # a second write to a file whose capability was set again
        fd = os.open(p, os.O_RDWR)
        os.pwrite(fd, b"x", 0)
        os.setxattr(p, "security.capability", CAPABILITY)
        os.pwrite(fd, b"y", 0)
        os.close(fd)
        with self.assertRaises(OSError) as cm:
            os.getxattr(p, "security.capability")
        self.assertEqual(cm.exception.errno, errno.ENODATA)
        self.assert_clean_unmount(v)

    def test_shared_writable_maps(self):
        v = self.volume(6)
        self.mount(v, OPTS)
        p = os.path.join(v.mnt, "mapped")
        H.write_file(p, bytes(1 << 16))
        fd = os.open(p, os.O_RDWR)
        m = mmap.mmap(fd, 1 << 16, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        m[4096:4100] = b"MMAP"
        m.flush()
        m.close()
        os.close(fd)
        db = os.path.join(v.mnt, "db")
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("PRAGMA journal_mode=WAL").fetchone()[0], "wal")
        con.execute("CREATE TABLE t (x)")
        with con:
            con.executemany("INSERT INTO t VALUES (?)", ((i,) for i in range(1000)))
        self.assertTrue(os.path.exists(db + "-shm"))
        self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 1000)
        con.close()
        self.assert_clean_unmount(v)
        self.mount(v, OPTS)
        with open(p, "rb") as f:
            f.seek(4096)
            self.assertEqual(f.read(4), b"MMAP")
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 1000)
        con.close()
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
