# SPDX-License-Identifier: MIT
"""Differential testing: the same sequence of system calls is run beneath
two roots (an ecfs mount and a plain directory), each outcome is recorded
in a normalised form (return value or errno name, never fd or inode
numbers), and the two transcripts and the resulting trees must agree.

The scenarios below are the operations of a POSIX file system that ecfs
must pass through faithfully: file I/O at any offset and size, truncation,
directories, renames, links, ownership and modes, times, user xattrs,
fallocate, mmap, very long paths, and the permission checks that an
unprivileged caller meets.
"""

import errno
import hashlib
import mmap
import os
import random
import shutil
import stat
import subprocess

from ecfs_harness import fallocate, renameat2, RENAME_NOREPLACE, NOBODY

O = os  # flags read better as O.O_CREAT
FALLOC_FL_KEEP_SIZE = 1


def pat(n, seed):
    return random.Random(seed).randbytes(n)


def _norm_bytes(b):
    if len(b) <= 64:
        return bytes(b)
    return ("sha256", len(b), hashlib.sha256(b).hexdigest()[:16])


def _norm_stat(st, times=False):
    d = {"mode": oct(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}
    if not stat.S_ISDIR(st.st_mode):
        d["nlink"] = st.st_nlink
        d["size"] = st.st_size
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        d["rdev"] = st.st_rdev
    if times:
        # atime is not compared: ecfs reads chunk headers on its members,
        # which may move their atime (relatime); mtime must be exact
        d["mtime_ns"] = st.st_mtime_ns
    return d


KEPT_XATTRS = ("user.", "system.posix_acl_", "security.", "trusted.")


def _kept_name(name):
    """The xattr names a filesystem passes through and ecfs keeps (never
    its own user.ecfs.*)."""
    return name.startswith(KEPT_XATTRS) and not name.startswith("user.ecfs.")


def _user_xattrs(path, follow=False):
    """The kept xattrs of path (user.*, ACLs, security.*, trusted.*),
    without ecfs's own virtual ones."""
    out = {}
    for name in sorted(os.listxattr(path, follow_symlinks=follow)):
        if _kept_name(name):
            out[name] = _norm_bytes(os.getxattr(path, name,
                                                follow_symlinks=follow))
    return out


def _tool(root, cmd):
    """Runs a command-line tool in root (paths relative to it, so both
    roots print the same); its status, output and errors."""
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    return (r.returncode, r.stdout, r.stderr.replace(root, "ROOT"))


class Recorder:
    """Runs calls beneath root; appends (call, outcome) to self.log."""

    def __init__(self, root):
        self.root = root
        self.log = []
        self.fds = {}

    def p(self, rel):
        return os.path.join(self.root, rel)

    def rec(self, what, fn):
        try:
            out = ("ok", fn())
        except OSError as e:
            out = ("err", errno.errorcode.get(e.errno, str(e.errno)))
        self.log.append((what, out))
        return out

    def fd(self, h):
        fd = self.fds.get(h)
        if fd is None:
            raise OSError(errno.EBADF, "handle not open")
        return fd

    # -- files ---------------------------------------------------------------
    def open(self, h, path, flags, mode=0o644):
        def fn():
            self.fds[h] = os.open(self.p(path), flags, mode)
            return "fd"
        self.fds[h] = None
        return self.rec(f"open {path!r} flags={flags:#o} mode={mode:#o}", fn)

    def create_file(self, path, data, mode=0o644):
        """open(O_CREAT) + pwrite + close, each recorded."""
        self.open("c", path, CREAT, mode)
        self.pwrite("c", data, 0)
        self.close("c")

    def close(self, h):
        def fn():
            fd = self.fd(h)
            self.fds[h] = None
            os.close(fd)
        return self.rec(f"close {h}", fn)

    def pwrite(self, h, data, off):
        return self.rec(f"pwrite {h} len={len(data)} off={off}",
                        lambda: os.pwrite(self.fd(h), data, off))

    def write(self, h, data):
        return self.rec(f"write {h} len={len(data)}",
                        lambda: os.write(self.fd(h), data))

    def pread(self, h, n, off):
        return self.rec(f"pread {h} n={n} off={off}",
                        lambda: _norm_bytes(os.pread(self.fd(h), n, off)))

    def read_file(self, path):
        def fn():
            with open(self.p(path), "rb") as f:
                return _norm_bytes(f.read())
        return self.rec(f"read_file {path!r}", fn)

    def ftruncate(self, h, n):
        return self.rec(f"ftruncate {h} {n}",
                        lambda: os.ftruncate(self.fd(h), n))

    def truncate(self, path, n):
        return self.rec(f"truncate {path!r} {n}",
                        lambda: os.truncate(self.p(path), n))

    def fsync(self, h):
        return self.rec(f"fsync {h}", lambda: os.fsync(self.fd(h)))

    def fdatasync(self, h):
        return self.rec(f"fdatasync {h}", lambda: os.fdatasync(self.fd(h)))

    def fallocate(self, h, mode, off, length):
        return self.rec(f"fallocate {h} mode={mode} off={off} len={length}",
                        lambda: fallocate(self.fd(h), mode, off, length))

    def fstat(self, h):
        return self.rec(f"fstat {h}", lambda: _norm_stat(os.fstat(self.fd(h))))

    def mmap_write(self, h, length, writes, shared=True):
        """Maps the file, stores `writes` [(off, bytes)], msyncs a shared
        map, and returns what the mapping then holds."""
        def fn():
            flags = mmap.MAP_SHARED if shared else mmap.MAP_PRIVATE
            m = mmap.mmap(self.fd(h), length, flags=flags,
                          prot=mmap.PROT_READ | mmap.PROT_WRITE)
            try:
                for off, data in writes:
                    m[off:off + len(data)] = data
                if shared:
                    m.flush()
                return _norm_bytes(m[:])
            finally:
                m.close()
        kind = "shared" if shared else "private"
        return self.rec(f"mmap_{kind} {h} len={length} writes="
                        f"{[(o, len(d)) for o, d in writes]}", fn)

    def mmap_read(self, h, length):
        def fn():
            m = mmap.mmap(self.fd(h), length, flags=mmap.MAP_SHARED,
                          prot=mmap.PROT_READ)
            try:
                return _norm_bytes(m[:])
            finally:
                m.close()
        return self.rec(f"mmap_read {h} len={length}", fn)

    # -- names ---------------------------------------------------------------
    def stat(self, path, times=False):
        return self.rec(f"stat {path!r}",
                        lambda: _norm_stat(os.stat(self.p(path)), times))

    def lstat(self, path, times=False):
        return self.rec(f"lstat {path!r}", lambda: _norm_stat(
            os.lstat(self.p(path)), times))

    def unlink(self, path):
        return self.rec(f"unlink {path!r}", lambda: os.unlink(self.p(path)))

    def rename(self, a, b):
        return self.rec(f"rename {a!r} {b!r}",
                        lambda: os.rename(self.p(a), self.p(b)))

    def rename_noreplace(self, a, b):
        return self.rec(f"renameat2 NOREPLACE {a!r} {b!r}",
                        lambda: renameat2(self.p(a), self.p(b),
                                          RENAME_NOREPLACE))

    def mkdir(self, path, mode=0o755):
        return self.rec(f"mkdir {path!r} {mode:#o}",
                        lambda: os.mkdir(self.p(path), mode))

    def rmdir(self, path):
        return self.rec(f"rmdir {path!r}", lambda: os.rmdir(self.p(path)))

    def listdir(self, path):
        return self.rec(f"listdir {path!r}",
                        lambda: sorted(os.listdir(self.p(path))))

    def symlink(self, target, path):
        return self.rec(f"symlink {target[:40]!r} {path!r}",
                        lambda: os.symlink(target, self.p(path)))

    def readlink(self, path):
        return self.rec(f"readlink {path!r}",
                        lambda: os.readlink(self.p(path)))

    def link(self, a, b):
        return self.rec(f"link {a!r} {b!r}",
                        lambda: os.link(self.p(a), self.p(b),
                                        follow_symlinks=False))

    def chmod(self, path, mode):
        return self.rec(f"chmod {path!r} {mode:#o}",
                        lambda: os.chmod(self.p(path), mode))

    def chown(self, path, uid, gid, follow=True):
        return self.rec(f"chown {path!r} {uid}:{gid} follow={follow}",
                        lambda: os.chown(self.p(path), uid, gid,
                                         follow_symlinks=follow))

    def utime(self, path, ns=None, follow=True):
        return self.rec(f"utime {path!r} {ns} follow={follow}",
                        lambda: os.utime(self.p(path), ns=ns,
                                         follow_symlinks=follow)
                        if ns is not None else
                        os.utime(self.p(path), follow_symlinks=follow))

    def mkfifo(self, path):
        return self.rec(f"mkfifo {path!r}", lambda: os.mkfifo(self.p(path)))

    def mknod(self, path, mode, dev):
        return self.rec(f"mknod {path!r} {mode:#o}",
                        lambda: os.mknod(self.p(path), mode, dev))

    def access(self, path, mode):
        return self.rec(f"access {path!r} {mode}",
                        lambda: os.access(self.p(path), mode))

    # -- xattrs --------------------------------------------------------------
    def setxattr(self, path, name, value, flags=0, follow=True):
        return self.rec(f"setxattr {path!r} {name} len={len(value)} "
                        f"flags={flags}",
                        lambda: os.setxattr(self.p(path), name, value, flags,
                                            follow_symlinks=follow))

    def getxattr(self, path, name, follow=True):
        return self.rec(f"getxattr {path!r} {name}", lambda: _norm_bytes(
            os.getxattr(self.p(path), name, follow_symlinks=follow)))

    def listxattr(self, path, follow=True):
        return self.rec(f"listxattr {path!r}", lambda: sorted(
            n for n in os.listxattr(self.p(path), follow_symlinks=follow)
            if n.startswith("user.") and not n.startswith("user.ecfs.")))

    def removexattr(self, path, name):
        return self.rec(f"removexattr {path!r} {name}",
                        lambda: os.removexattr(self.p(path), name))

    def xattr_names(self, path):
        """Every name listxattr gives but ecfs's own (ACLs, security.*,
        trusted.* included)."""
        return self.rec(f"xattr_names {path!r}", lambda: sorted(
            n for n in os.listxattr(self.p(path), follow_symlinks=False)
            if not n.startswith("user.ecfs.")))

    # -- ACLs (the acl package's tools) --------------------------------------
    def setfacl(self, args, path):
        return self.rec(f"setfacl {' '.join(args)} {path!r}",
                        lambda: _tool(self.root, ["setfacl", *args, path]))

    def getfacl(self, path):
        return self.rec(f"getfacl {path!r}",
                        lambda: _tool(self.root, ["getfacl", "-n", path]))

    def create_masked(self, path, mode, umask, kind="file"):
        """open(O_CREAT), mkdir or mkfifo of path with mode under umask;
        then the object's mode."""
        def fn():
            old = os.umask(umask)
            try:
                if kind == "dir":
                    os.mkdir(self.p(path), mode)
                elif kind == "fifo":
                    os.mkfifo(self.p(path), mode)
                else:
                    os.close(os.open(self.p(path), CREAT | O.O_EXCL, mode))
            finally:
                os.umask(old)
            return oct(os.lstat(self.p(path)).st_mode)
        return self.rec(f"create {kind} {path!r} {mode:#o} umask={umask:#o}", fn)

    def same_inode(self, *paths):
        """Whether every name reports one file: the same st_ino, link
        count and ctime through each (the numbers themselves differ
        between the roots, so only the agreement is recorded)."""
        def check():
            sts = [os.lstat(self.p(q)) for q in paths]
            return tuple(len({getattr(st, f) for st in sts}) == 1
                         for f in ("st_ino", "st_nlink", "st_ctime_ns"))
        return self.rec(f"same inode {paths!r}", check)

    def custom(self, what, fn):
        """A composite step; fn(root) returns a comparable value."""
        return self.rec(what, lambda: fn(self.root))

    def close_all(self):
        for h, fd in list(self.fds.items()):
            if fd is not None:
                os.close(fd)
            self.fds[h] = None


# ---------------------------------------------------------------- trees

def snapshot(root):
    """Everything about the tree under root that must match: per entry its
    type and mode, owner, size and nlink (non-directories), symlink target,
    file contents (digest), device number and user xattrs."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            try:
                st = os.lstat(full)
            except OSError as e:
                out[rel] = ("lstat-error", errno.errorcode.get(e.errno))
                continue
            entry = _norm_stat(st)
            if stat.S_ISLNK(st.st_mode):
                entry["target"] = os.readlink(full)
            elif stat.S_ISREG(st.st_mode):
                try:
                    with open(full, "rb") as f:
                        entry["data"] = _norm_bytes(f.read())
                except OSError as e:
                    entry["data"] = ("error", errno.errorcode.get(e.errno))
            if not stat.S_ISLNK(st.st_mode) and not stat.S_ISFIFO(st.st_mode) \
                    and not stat.S_ISCHR(st.st_mode):
                try:
                    entry["xattrs"] = _user_xattrs(full)
                except OSError as e:
                    entry["xattrs"] = ("error", errno.errorcode.get(e.errno))
            out[rel] = entry
    return out


def transcript_diff(a, b, context=3):
    """None if the transcripts agree, else a readable account of where the
    first disagreement is (a = ecfs, b = reference)."""
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x != y:
            lines = [f"first difference at call {i}:"]
            for j in range(max(0, i - context), i):
                lines.append(f"   {b[j][0]} -> {b[j][1]}")
            lines.append(f"ecfs:      {_short(x, 400)}")
            lines.append(f"reference: {_short(y, 400)}")
            bad = sum(1 for k in range(min(len(a), len(b))) if a[k] != b[k])
            lines.append(f"({bad} differing calls in all)")
            return "\n".join(lines)
    return None


def _short(s, n=100):
    s = str(s)
    return s if len(s) <= n else s[:n // 2] + "..." + s[-n // 2:]


def snapshot_diff(a, b):
    lines = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            lines.append(f"{_short(key)}:\n   ecfs:      {_short(a.get(key), 300)}"
                         f"\n   reference: {_short(b.get(key), 300)}")
    if len(lines) > 12:
        lines = lines[:12] + [f"... and {len(lines) - 12} more entries"]
    return "\n".join(lines) if lines else None


# ---------------------------------------------------------------- scenarios

RW = O.O_RDWR
CREAT = O.O_CREAT | O.O_RDWR


def sc_file_io(o):
    """create, open, read, write at any offset, holes, truncate, append,
    unlink of an open file, several descriptors, fsync."""
    o.mkdir("files")
    o.open("a", "files/a", CREAT | O.O_EXCL)
    o.pwrite("a", pat(1000, 1), 0)
    o.pread("a", 2000, 0)
    o.pwrite("a", pat(5000, 2), 3000)          # hole 1000..3000
    o.pread("a", 8000, 0)
    o.pwrite("a", b"x", 1 << 20)               # far sparse byte
    o.pread("a", 4096, 500000)                 # hole reads zeros
    o.pread("a", 10, 1 << 20)
    o.pread("a", 10, (1 << 20) + 1)            # at EOF
    o.fstat("a")
    o.ftruncate("a", 2500)                     # down, inside data
    o.pread("a", 5000, 0)
    o.ftruncate("a", 300000)                   # up: zeros past 2500
    o.pread("a", 300000, 0)
    o.pwrite("a", pat(70000, 3), 123457)       # unaligned, crossing
    o.pread("a", 400000, 0)
    o.fsync("a")
    o.fdatasync("a")
    o.close("a")
    o.read_file("files/a")
    o.open("e", "files/a", CREAT | O.O_EXCL)   # EEXIST
    o.open("n", "files/nonexistent", O.O_RDONLY)
    o.open("t", "files/a", O.O_WRONLY | O.O_TRUNC)
    o.fstat("t")
    o.close("t")
    o.stat("files/a")
    o.open("p", "files/app", O.O_CREAT | O.O_WRONLY | O.O_APPEND)
    o.write("p", b"hello")
    o.write("p", b" world")
    o.pwrite("p", b"!", 0)                     # O_APPEND: goes at the end
    o.close("p")
    o.read_file("files/app")
    o.truncate("files/app", 3)
    o.read_file("files/app")
    o.truncate("files/app", 100000)
    o.read_file("files/app")
    o.truncate("files/nonexistent", 0)
    o.truncate("files", 0)
    o.open("r", "files/app", O.O_RDONLY)
    o.pwrite("r", b"x", 0)                     # EBADF
    o.ftruncate("r", 0)                        # EINVAL
    o.close("r")
    o.open("u", "files/unlinked", CREAT)
    o.pwrite("u", pat(200000, 4), 0)
    o.unlink("files/unlinked")
    o.listdir("files")
    o.pread("u", 200000, 0)
    o.pwrite("u", b"more", 199998)
    o.pread("u", 10, 199990)
    o.close("u")
    o.stat("files/unlinked")
    o.open("x1", "files/two", CREAT)
    o.open("x2", "files/two", RW)
    o.pwrite("x1", pat(100000, 5), 0)
    o.pread("x2", 100000, 0)
    o.pwrite("x2", b"Z" * 10, 50000)
    o.pread("x1", 20, 49995)
    o.close("x1")
    o.close("x2")
    rng = random.Random(6)
    o.open("w", "files/random", CREAT)
    for i in range(60):
        off = rng.randrange(0, 600000)
        o.pwrite("w", pat(rng.randrange(1, 20000), 100 + i), off)
        if i % 10 == 9:
            o.pread("w", 700000, 0)
    o.close("w")
    o.read_file("files/random")
    o.open("d", "files", O.O_WRONLY)           # EISDIR
    o.stat("files/app/")                       # ENOTDIR
    o.unlink("files")                          # EISDIR
    o.unlink("files/nonexistent")
    # truncate down, then extend past EOF by a write: the stripes that
    # the truncation cut must read as zeros, not as their old data
    o.open("tw", "files/trunc-write", CREAT)
    o.pwrite("tw", pat(1 << 20, 20), 0)
    o.ftruncate("tw", 0x2316f)
    o.ftruncate("tw", 0x4227e)
    o.pwrite("tw", pat(0xac9a, 21), 0x52205)
    o.pread("tw", 1 << 21, 0)
    o.ftruncate("tw", 1000)
    o.mmap_write("tw", 1000, [(10, b"mapped")])
    o.pwrite("tw", b"end", 900000)
    o.pread("tw", 1 << 20, 0)
    o.close("tw")
    o.read_file("files/trunc-write")
    o.open("big", "files/big", CREAT)
    o.pwrite("big", pat(3 << 20, 7), 0)
    o.pwrite("big", pat(777, 8), (3 << 20) - 300)
    o.pread("big", 4 << 20, 0)
    o.ftruncate("big", 1234567)
    o.pwrite("big", b"tail", 2000000)
    o.pread("big", 4 << 20, 0)
    o.close("big")


def sc_dirs(o):
    """mkdir, rmdir, readdir of many and odd names, every kind of rename."""
    o.mkdir("d")
    o.mkdir("d")                                # EEXIST
    o.mkdir("d/sub")
    o.mkdir("d/sub/deeper", 0o700)
    o.mkdir("missing/x")                        # ENOENT
    o.rmdir("d/sub")                            # ENOTEMPTY
    o.rmdir("d/sub/deeper")
    o.rmdir("d/sub")
    o.rmdir("d/nonexistent")
    o.open("f", "d/f", CREAT)
    o.close("f")
    o.rmdir("d/f")                              # ENOTDIR
    o.mkdir("d/many")
    for i in range(300):
        if i % 7 == 0:
            o.mkdir(f"d/many/dir-{i:03d}")
        else:
            o.open("m", f"d/many/entry-{i:03d}", CREAT)
            o.close("m")
    o.listdir("d/many")
    for name in ["sp ace", "ünïcödé", "new\nline", "n" * 255, "n" * 256,
                 ".hidden", "-dash"]:
        o.open("q", "d/" + name, CREAT)
        o.close("q")
    o.listdir("d")
    # file over file
    o.create_file("d/r1", b"AAAA")
    o.create_file("d/r2", b"BB")
    o.rename("d/r1", "d/r2")
    o.read_file("d/r2")
    o.stat("d/r1")
    # directory rename, across directories
    o.mkdir("d/da")
    o.create_file("d/da/inside", pat(70000, 9))
    o.rename("d/da", "d/db")
    o.read_file("d/db/inside")
    o.mkdir("d/x")
    o.mkdir("d/y")
    o.open("z", "d/x/f", CREAT)
    o.pwrite("z", b"moving", 0)
    o.rename("d/x/f", "d/y/g")                  # while open
    o.pwrite("z", b"MOVED", 0)
    o.close("z")
    o.read_file("d/y/g")
    o.listdir("d/x")
    o.listdir("d/y")
    o.mkdir("d/e1")
    o.open("z", "d/e1/f", CREAT)
    o.close("z")
    o.mkdir("d/e2")
    o.rename("d/e1", "d/e2")                    # over empty dir
    o.listdir("d/e2")
    o.mkdir("d/n1")
    o.mkdir("d/n2")
    o.open("z", "d/n2/f", CREAT)
    o.close("z")
    o.rename("d/n1", "d/n2")                    # ENOTEMPTY
    o.rename("d/r2", "d/y")                     # EISDIR
    o.rename("d/db", "d/r2")                    # ENOTDIR
    o.rename("d/x", "d/x/sub")                  # EINVAL
    o.rename("d/nonexistent", "d/zz")           # ENOENT
    o.rename("d/r2", "d/r2")
    o.rename("d/y/g", "d/many/dir-000/g")       # deeper
    o.rename_noreplace("d/r2", "d/many/entry-001")   # EEXIST
    o.rename_noreplace("d/r2", "d/r3")
    o.listdir("d")
    o.rmdir("d/.")                              # EINVAL


def sc_links(o):
    """symlink, readlink, hard links and their link counts."""
    o.mkdir("links")
    o.create_file("links/t", pat(9000, 10))
    o.symlink("t", "links/s1")
    o.readlink("links/s1")
    o.read_file("links/s1")
    o.lstat("links/s1")
    o.stat("links/s1")
    o.symlink("../nowhere", "links/dangling")
    o.readlink("links/dangling")
    o.stat("links/dangling")                    # ENOENT
    o.lstat("links/dangling")
    o.symlink("/absolute/elsewhere", "links/abs")
    o.readlink("links/abs")
    o.readlink("links/t")                       # EINVAL
    o.symlink("t", "links/s1")                  # EEXIST
    o.symlink("loop2", "links/loop1")
    o.symlink("loop1", "links/loop2")
    o.open("l", "links/loop1", O.O_RDONLY)      # ELOOP
    o.symlink("y" * 4000, "links/longtarget")
    o.readlink("links/longtarget")
    o.mkdir("links/sub")
    o.symlink("../t", "links/sub/up")
    o.read_file("links/sub/up")
    o.link("links/t", "links/h")
    o.stat("links/t")
    o.stat("links/h")
    o.same_inode("links/t", "links/h")
    o.open("h", "links/h", RW)
    o.pwrite("h", b"through h", 100)
    o.close("h")
    o.read_file("links/t")
    o.link("links/sub", "links/dirlink")        # EPERM
    o.link("links/nonexistent", "links/n")      # ENOENT
    o.link("links/t", "links/s1")               # EEXIST
    o.link("links/t", "links/sub/h2")
    o.stat("links/t")
    o.same_inode("links/t", "links/h", "links/sub/h2")
    o.unlink("links/t")
    o.stat("links/h")
    o.same_inode("links/h", "links/sub/h2")
    o.read_file("links/sub/h2")
    o.rename("links/h", "links/sub/h2")         # same file: no-op
    o.listdir("links")
    o.listdir("links/sub")
    o.stat("links/sub/h2")
    o.link("links/s1", "links/s1-hard")         # link to the symlink itself
    o.lstat("links/s1-hard")
    o.same_inode("links/s1", "links/s1-hard")
    o.create_file("links/t2", b"second")
    o.link("links/t2", "links/t2b")
    o.open("t2", "links/t2b", O.O_WRONLY | O.O_TRUNC)
    o.close("t2")
    o.stat("links/t2")
    o.read_file("links/t2")
    # rename over one name of a linked file, and of a file with one name
    o.create_file("links/r", b"r")
    o.link("links/t2", "links/t2c")
    o.rename("links/r", "links/t2b")
    o.same_inode("links/t2", "links/t2c")
    o.stat("links/t2")
    o.rename("links/t2c", "links/t2")           # same file: no-op
    o.same_inode("links/t2", "links/t2c")
    o.open("keep", "links/t2c", O.O_RDONLY)
    o.rename("links/t2b", "links/t2c")          # open and renamed over
    o.same_inode("links/t2", "links/t2")
    o.stat("links/t2")
    o.close("keep")


def sc_attrs(o):
    """chmod, chown, utimens, set-group-id inheritance, special files."""
    o.mkdir("attrs")
    o.create_file("attrs/f", b"attrs")
    for mode in (0o600, 0o4755, 0o2711, 0o1644, 0o000, 0o644):
        o.chmod("attrs/f", mode)
        o.stat("attrs/f")
    o.chmod("attrs", 0o711)
    o.stat("attrs")
    o.chmod("attrs", 0o755)
    o.chown("attrs/f", 1234, 5678)
    o.stat("attrs/f")
    o.chown("attrs/f", -1, 99)
    o.stat("attrs/f")
    o.chown("attrs", 4321, -1)
    o.stat("attrs")
    o.chown("attrs", 0, 0)
    o.symlink("f", "attrs/sl")
    o.chown("attrs/sl", 4321, 4322, follow=False)
    o.lstat("attrs/sl")
    o.stat("attrs/f")
    o.utime("attrs/f", ns=(1_500_000_000_123_456_789, 1_600_000_000_987_654_321))
    o.stat("attrs/f", times=True)
    o.utime("attrs", ns=(1_400_000_000_000_000_001, 1_400_000_000_000_000_002))
    o.stat("attrs", times=True)
    o.utime("attrs/sl", ns=(1_300_000_000_000_000_000, 1_300_000_000_500_000_000),
            follow=False)
    o.lstat("attrs/sl", times=True)
    o.utime("attrs/f")
    o.utime("attrs/nonexistent", ns=(1, 1))
    o.chmod("attrs/nonexistent", 0o644)
    o.mkdir("attrs/sg", 0o775)
    o.chown("attrs/sg", 0, 4242)
    o.chmod("attrs/sg", 0o2775)
    o.open("g", "attrs/sg/f", CREAT)
    o.close("g")
    o.stat("attrs/sg/f")                        # gid 4242 inherited
    o.mkdir("attrs/sg/sub")
    o.stat("attrs/sg/sub")                      # gid and set-gid bit
    o.mkfifo("attrs/fifo")
    o.stat("attrs/fifo")
    o.mknod("attrs/null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    o.stat("attrs/null")
    o.open("g", "attrs/sizes", CREAT)
    o.pwrite("g", pat(123456, 11), 0)
    o.fstat("g")
    o.close("g")
    o.stat("attrs/sizes")


def sc_xattrs(o):
    """user xattrs: set, get, list, remove, CREATE/REPLACE errors."""
    o.mkdir("x")
    o.open("f", "x/f", CREAT)
    o.close("f")
    for path in ("x/f", "x"):
        o.setxattr(path, "user.a", b"1")
        o.getxattr(path, "user.a")
        o.listxattr(path)
        o.setxattr(path, "user.a", b"22", os.XATTR_CREATE)   # EEXIST
        o.setxattr(path, "user.b", b"22", os.XATTR_REPLACE)  # ENODATA
        o.setxattr(path, "user.a", b"333", os.XATTR_REPLACE)
        o.getxattr(path, "user.a")
        o.setxattr(path, "user.empty", b"")
        o.getxattr(path, "user.empty")
        o.setxattr(path, "user.big", pat(2000, 12))
        o.getxattr(path, "user.big")
        o.setxattr(path, "user.bin", bytes(range(256)))
        o.listxattr(path)
        o.removexattr(path, "user.a")
        o.getxattr(path, "user.a")                           # ENODATA
        o.removexattr(path, "user.a")                        # ENODATA
        o.listxattr(path)
    o.getxattr("x/nonexistent", "user.a")                    # ENOENT
    o.symlink("f", "x/sl")
    o.setxattr("x/sl", "user.s", b"v", follow=False)         # EPERM
    o.link("x/f", "x/hard")
    o.setxattr("x/hard", "user.via", b"hard link")
    o.getxattr("x/f", "user.via")
    o.rename("x/f", "x/g")
    o.getxattr("x/g", "user.big")


def sc_space(o):
    """fsync, fdatasync and fallocate (mode 0 and KEEP_SIZE)."""
    o.mkdir("space")
    o.open("f", "space/f", CREAT)
    o.pwrite("f", pat(1000, 13), 0)
    o.fallocate("f", 0, 0, 50000)               # extends to 50000
    o.fstat("f")
    o.pread("f", 60000, 0)
    o.fallocate("f", FALLOC_FL_KEEP_SIZE, 0, 200000)
    o.fstat("f")
    o.fallocate("f", 0, 100, 200)               # inside: data unchanged
    o.pread("f", 60000, 0)
    o.pwrite("f", b"after", 70000)
    o.fsync("f")
    o.fdatasync("f")
    o.pread("f", 80000, 0)
    o.fallocate("f", 0, 300000, 1)
    o.fstat("f")
    o.close("f")
    o.read_file("space/f")


def sc_mmap(o):
    """Shared mappings write through (after msync, read() sees them);
    private mappings never do."""
    size = 3 * 4096 + 100
    o.mkdir("mm")
    o.open("f", "mm/f", CREAT)
    o.pwrite("f", pat(size, 14), 0)
    o.mmap_read("f", size)
    o.mmap_write("f", size, [(0, b"head"), (4090, b"crossing-page"),
                             (10000, pat(2000, 15)), (size - 3, b"end")])
    o.pread("f", size, 0)
    o.mmap_write("f", size, [(5, b"private"), (8000, pat(100, 16))],
                 shared=False)
    o.pread("f", size, 0)
    o.ftruncate("f", 200000)
    o.mmap_write("f", 200000, [(150000, pat(30000, 17))])
    o.pread("f", 200000, 0)
    o.close("f")
    o.read_file("mm/f")
    o.open("g", "mm/f", O.O_RDONLY)
    o.mmap_read("g", 200000)
    o.close("g")
    o.custom("write-only fd beside a cached fd and a shared map",
             _write_only_coherence)


def _write_only_coherence(root):
    """ecfs gives write-only opens direct I/O (no page cache): what they
    write must still show through another open's cached pages and shared
    mapping, and a mapping's dirty page must not be lost."""
    path = os.path.join(root, "mm/wo")
    size = 300000
    fd = os.open(path, CREAT, 0o644)
    try:
        os.pwrite(fd, pat(size, 19), 0)
        os.pread(fd, size, 0)                  # cache it
        m = mmap.mmap(fd, size, flags=mmap.MAP_SHARED,
                      prot=mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            m[:4] = b"mmap"                    # dirty, not synced
            w = os.open(path, O.O_WRONLY)
            try:
                os.pwrite(w, b"W" * 5000, 100000)
                os.pwrite(w, b"E" * 10, size - 5)  # extends
            finally:
                os.close(w)
            mapped = _norm_bytes(m[:])
        finally:
            m.close()
        return [mapped, _norm_bytes(os.pread(fd, 2 * size, 0))]
    finally:
        os.close(fd)


def _deep_path_ops(root):
    """Builds a path of about 4,080 bytes below the mount (so that on a
    member it exceeds PATH_MAX) with *at() calls, uses a file at its
    bottom, and removes it all again."""
    names = [f"{i:02d}" + "L" * 211 for i in range(19)]
    results = []
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        os.mkdir("deep", dir_fd=fds[0])
        fds.append(os.open("deep", os.O_RDONLY | os.O_DIRECTORY,
                           dir_fd=fds[0]))
        for name in names:
            os.mkdir(name, dir_fd=fds[-1])
            fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY,
                               dir_fd=fds[-1]))
        data = pat(100000, 18)
        fd = os.open("f", os.O_CREAT | os.O_RDWR, 0o644, dir_fd=fds[-1])
        try:
            os.pwrite(fd, data, 0)
            results.append(os.pread(fd, 100000, 0) == data)
        finally:
            os.close(fd)
        results.append(_norm_stat(os.stat("f", dir_fd=fds[-1])))
        os.rename("f", "g", src_dir_fd=fds[-1], dst_dir_fd=fds[-1])
        os.symlink("g", "s", dir_fd=fds[-1])
        results.append(os.readlink("s", dir_fd=fds[-1]))
        results.append(sorted(os.listdir(fds[-1])))
        os.unlink("s", dir_fd=fds[-1])
        os.unlink("g", dir_fd=fds[-1])
        for i in range(len(names) - 1, -1, -1):
            os.close(fds.pop())
            os.rmdir(names[i], dir_fd=fds[-1])
        results.append("removed")
    finally:
        for fd in fds:
            os.close(fd)
        # fd-based, so it copes with the long path if a step failed
        shutil.rmtree(os.path.join(root, "deep"), ignore_errors=True)
    return results


def sc_deep(o):
    """A user path of about 4,080 bytes."""
    o.custom("deep path of ~4080 bytes", _deep_path_ops)


def sc_name_too_long(o):
    """A name of 255 bytes works; one of 256 (as the last component or
    inside the path) is ENAMETOOLONG in every call, never ENOENT."""
    o.mkdir("nl")
    o.create_file("nl/f", b"short name")
    o.mkdir("nl/d")
    ok = "nl/" + "m" * 255
    o.create_file(ok, b"longest name")
    o.stat(ok)
    o.rename(ok, ok[:-1] + "n")
    o.link(ok[:-1] + "n", ok)
    o.unlink(ok[:-1] + "n")
    o.listdir("nl")
    for bad in ("nl/" + "l" * 256, "nl/" + "l" * 256 + "/below",
                "nl/d/" + "\xe9" * 200):       # 400 bytes in UTF-8
        o.stat(bad)
        o.lstat(bad)
        o.chmod(bad, 0o600)
        o.chown(bad, 1, 1)
        o.chown(bad, 1, 1, follow=False)        # lchown
        o.link("nl/f", bad)
        o.link(bad, "nl/g")
        o.rename("nl/f", bad)
        o.rename(bad, "nl/g")
        o.rmdir(bad)
        o.truncate(bad, 0)
        o.unlink(bad)
        o.open("x", bad, O.O_RDONLY)
        o.open("x", bad, CREAT)
        o.mkdir(bad)
        o.symlink("nl/f", bad)
        o.readlink(bad)
        o.mkfifo(bad)
        o.mknod(bad, stat.S_IFCHR | 0o600, os.makedev(1, 3))
        o.utime(bad, ns=(1, 1))
        o.access(bad, os.R_OK)
        o.listdir(bad)
        o.setxattr(bad, "user.a", b"v")
        o.getxattr(bad, "user.a")
        o.listxattr(bad)
        o.removexattr(bad, "user.a")
    o.listdir("nl")


# security.capability, version 2: effective, CAP_NET_BIND_SERVICE permitted
CAPABILITY = (bytes.fromhex("01000002") + (1 << 10).to_bytes(4, "little")
              + bytes(12))


def sc_acls(o):
    """POSIX ACLs with setfacl/getfacl: access ACLs and the mode kept in
    step, chmod and the mask, an ACL equal to the mode not stored, default
    ACLs inherited by what is made in the directory with the umask left
    out, removal; file capabilities and their removal by a write;
    trusted.* and security.* attributes."""
    o.mkdir("acl")
    o.mkdir("acl/d")
    o.setfacl(["-m", "u:1234:rwx,g:4321:rx"], "acl/d")
    o.getfacl("acl/d")
    o.stat("acl/d")
    o.create_file("acl/f", b"acl")
    o.setfacl(["-m", "u:1234:rw,m::r"], "acl/f")
    o.getfacl("acl/f")
    o.stat("acl/f")
    o.xattr_names("acl/f")
    o.chmod("acl/f", 0o600)                     # the mask follows
    o.getfacl("acl/f")
    o.chmod("acl/f", 0o674)
    o.getfacl("acl/f")
    o.setfacl(["--set", "u::rw,g::r,o::r"], "acl/f")   # equal to a mode
    o.xattr_names("acl/f")
    o.stat("acl/f")
    o.setfacl(["-m", "u:5:r"], "acl/nonexistent")
    o.setxattr("acl/f", "system.posix_acl_access", b"\x02\x00\x00\x00junk")
    o.setfacl(["-d", "-m", "u:1234:rwx,g::rx,o::-"], "acl/d")
    o.getfacl("acl/d")
    for umask in (0o022, 0o077):
        o.create_masked(f"acl/d/f{umask:o}", 0o666, umask)
        o.getfacl(f"acl/d/f{umask:o}")
        o.create_masked(f"acl/d/sub{umask:o}", 0o777, umask, "dir")
        o.getfacl(f"acl/d/sub{umask:o}")
        o.create_masked(f"acl/d/fifo{umask:o}", 0o666, umask, "fifo")
        o.getfacl(f"acl/d/fifo{umask:o}")
    o.create_masked("acl/d/sub22/deeper", 0o700, 0o022, "dir")
    o.getfacl("acl/d/sub22/deeper")
    o.create_masked("acl/plain", 0o666, 0o027)
    o.create_masked("acl/plaindir", 0o777, 0o027, "dir")
    o.getfacl("acl/plain")
    o.setfacl(["-k"], "acl/d")
    o.create_masked("acl/d/after", 0o666, 0o022)
    o.getfacl("acl/d/after")
    o.setfacl(["-b"], "acl/d")
    o.getfacl("acl/d")
    o.stat("acl/d")
    o.symlink("f", "acl/sl")
    o.getfacl("acl/sl")
    # file capabilities: kept, and removed by a write, as the kernel does
    for flags in (RW, O.O_WRONLY):
        o.create_file("acl/cap", b"#!/bin/true\n", 0o755)
        o.setxattr("acl/cap", "security.capability", CAPABILITY)
        o.getxattr("acl/cap", "security.capability")
        o.xattr_names("acl/cap")
        o.open("c", "acl/cap", flags)
        o.pwrite("c", b"#", 0)
        o.close("c")
        o.getxattr("acl/cap", "security.capability")
        o.unlink("acl/cap")
    o.create_file("acl/cap2", b"kept", 0o755)
    o.setxattr("acl/cap2", "security.capability", CAPABILITY)
    o.setxattr("acl/f", "security.ecfs_test", b"sec")
    o.setxattr("acl/f", "trusted.t", b"trusted")
    o.getxattr("acl/f", "trusted.t")
    o.xattr_names("acl/f")
    o.removexattr("acl/f", "trusted.t")
    o.setxattr("acl/f", "unknown.ns", b"x")
    o.getxattr("acl/f", "unknown.ns")


def sc_every_byte(o):
    """Names made of every byte but '/' and NUL (254 bytes, most of them
    not UTF-8), and of single bytes across the range: created, listed,
    renamed, linked, read and removed as on any other filesystem."""
    every = os.fsdecode(bytes(b for b in range(1, 256) if b != 0x2F))
    o.mkdir("eb")
    o.create_file("eb/" + every, b"every byte")
    o.listdir("eb")
    o.stat("eb/" + every)
    o.rename("eb/" + every, "eb/" + every[::-1])
    o.link("eb/" + every[::-1], "eb/" + every)
    o.read_file("eb/" + every)
    o.mkdir("eb/one")
    for b in sorted((set(range(1, 256, 9)) | {0x20, 0x5C, 0x7F, 0x80, 0xFF}) - {0x2E, 0x2F}):
        o.create_file("eb/one/" + os.fsdecode(bytes([b])), bytes([b]))
    o.listdir("eb/one")
    o.read_file("eb/one/" + os.fsdecode(b"\xff"))
    o.unlink("eb/" + every)
    o.unlink("eb/" + every[::-1])
    o.listdir("eb")


ROOT_SCENARIOS = [sc_file_io, sc_dirs, sc_links, sc_attrs, sc_xattrs,
                  sc_space, sc_mmap, sc_deep, sc_name_too_long, sc_acls, sc_every_byte]


# setuid/setgid files a write by uid 65534 meets: setgid without group
# execute stays only for a writer in the file's group
SETID_FILES = [("suid-wo", 0o6777), ("suid-rw", 0o6777), ("sgid-wo", 0o2777),
               ("sgid-noexec-wo", 0o2666), ("sgid-noexec-ingroup-wo", 0o2666)]


def perm_setup(o):
    """As root: the objects an unprivileged user meets."""
    o.mkdir("perm")
    o.mkdir("perm/pub")
    o.create_file("perm/pub/rootfile", b"root's data")
    o.setxattr("perm/pub/rootfile", "user.r", b"readable")
    o.create_file("perm/pub/secret", b"secret", 0o600)
    o.mkdir("perm/home")
    o.chown("perm/home", NOBODY, NOBODY)
    o.mkdir("perm/sticky")
    o.chmod("perm/sticky", 0o1777)
    o.open("f", "perm/sticky/rootf", CREAT)
    o.close("f")
    o.chmod("perm/sticky/rootf", 0o666)
    o.mkdir("perm/closed", 0o700)
    o.open("f", "perm/closed/f", CREAT)
    o.close("f")
    for name, mode in SETID_FILES:
        o.create_file("perm/pub/" + name, b"setuid")
        if "ingroup" in name:
            o.chown("perm/pub/" + name, 0, NOBODY)
        o.chmod("perm/pub/" + name, mode)


def perm_as_nobody(o):
    """As uid/gid 65534: what must be refused and what must work."""
    o.open("r", "perm/pub/rootfile", O.O_RDONLY)
    o.pread("r", 100, 0)
    o.close("r")
    o.open("r", "perm/pub/rootfile", O.O_WRONLY)       # EACCES
    o.open("r", "perm/pub/rootfile", O.O_RDWR)         # EACCES
    o.open("r", "perm/pub/secret", O.O_RDONLY)         # EACCES
    o.open("r", "perm/pub/new", CREAT)                 # EACCES
    o.unlink("perm/pub/rootfile")                      # EACCES
    o.rename("perm/pub/rootfile", "perm/home/x")       # EACCES
    o.mkdir("perm/pub/d")                              # EACCES
    o.chmod("perm/pub/rootfile", 0o666)                # EPERM
    o.chown("perm/pub/rootfile", NOBODY, NOBODY)       # EPERM
    o.utime("perm/pub/rootfile", ns=(1, 1))            # EPERM
    o.utime("perm/pub/rootfile")                       # EACCES
    o.setxattr("perm/pub/rootfile", "user.x", b"no")   # EACCES
    o.getxattr("perm/pub/rootfile", "user.r")
    o.getxattr("perm/pub/secret", "user.r")            # EACCES
    o.truncate("perm/pub/rootfile", 0)                 # EACCES
    o.listdir("perm/closed")                           # EACCES
    o.stat("perm/closed/f")                            # EACCES
    o.access("perm/pub/rootfile", os.W_OK)
    o.access("perm/pub/rootfile", os.R_OK)
    o.create_file("perm/home/mine", pat(70000, 19))
    o.read_file("perm/home/mine")
    o.stat("perm/home/mine")
    o.chmod("perm/home/mine", 0o600)
    o.chown("perm/home/mine", NOBODY, NOBODY)
    o.chown("perm/home/mine", 0, -1)                   # EPERM
    o.chown("perm/home/mine", -1, 0)                   # EPERM
    o.utime("perm/home/mine", ns=(5, 6))
    o.stat("perm/home/mine", times=True)
    o.setxattr("perm/home/mine", "user.m", b"mine")
    o.getxattr("perm/home/mine", "user.m")
    o.symlink("mine", "perm/home/sl")
    o.link("perm/home/mine", "perm/home/mine2")
    o.link("perm/pub/secret", "perm/home/stolen")      # EPERM (protected)
    o.mkdir("perm/home/sub")
    o.mkdir("perm/home/sub/inner")
    o.rename("perm/home/sub", "perm/home/sub2")
    o.rmdir("perm/home/sub2/inner")
    o.open("s", "perm/sticky/rootf", O.O_WRONLY)
    o.pwrite("s", b"anyone may write", 0)
    o.close("s")
    o.unlink("perm/sticky/rootf")                      # EPERM (sticky)
    o.rename("perm/sticky/rootf", "perm/sticky/mine")  # EPERM
    o.open("s", "perm/sticky/nb", CREAT)
    o.close("s")
    o.stat("perm/sticky/nb")
    o.unlink("perm/sticky/nb")
    o.listdir("perm/home")
    o.chmod("perm/home/mine", 0o000)
    o.open("r", "perm/home/mine", O.O_RDONLY)          # EACCES, even own
    o.chmod("perm/home/mine", 0o644)
    # a write by another user clears setuid, and setgid if group-executable
    # (write-only opens are direct I/O in ecfs: the daemon must do it)
    for name, _ in SETID_FILES:
        o.open("w", "perm/pub/" + name, RW if name.endswith("rw") else O.O_WRONLY)
        o.pwrite("w", b"x", 1)
        o.close("w")
        o.stat("perm/pub/" + name)


def acl_setup(o):
    """As root: objects whose ACLs grant or deny uid/gid 65534 what their
    mode alone would not."""
    o.mkdir("aclp")
    o.create_file("aclp/named", b"named user", 0o640)
    o.setfacl(["-m", f"u:{NOBODY}:rw"], "aclp/named")
    o.setxattr("aclp/named", "trusted.t", b"root only")
    o.create_file("aclp/denied", b"denied", 0o644)
    o.setfacl(["-m", f"u:{NOBODY}:-"], "aclp/denied")
    o.create_file("aclp/grp", b"group", 0o600)
    o.setfacl(["-m", f"g:{NOBODY}:r"], "aclp/grp")
    o.create_file("aclp/masked", b"masked", 0o640)
    o.setfacl(["-m", f"u:{NOBODY}:rw,m::r"], "aclp/masked")
    o.mkdir("aclp/drop")
    o.setfacl(["-m", f"u:{NOBODY}:rwx"], "aclp/drop")
    o.mkdir("aclp/inherit")
    o.setfacl(["-m", f"u:{NOBODY}:rwx,d:u:{NOBODY}:rwx,d:u:1234:r"], "aclp/inherit")
    o.mkdir("aclp/home")
    o.chown("aclp/home", NOBODY, NOBODY)
    o.mkdir("aclp/sg")
    o.chown("aclp/sg", 0, 4242)
    o.chmod("aclp/sg", 0o2777)


def acl_as_nobody(o):
    """As uid/gid 65534: the kernel enforces the ACLs of acl_setup, and
    an owner's own ACLs."""
    o.read_file("aclp/named")
    o.open("w", "aclp/named", RW)
    o.pwrite("w", b"N", 0)
    o.close("w")
    o.open("r", "aclp/denied", O.O_RDONLY)              # EACCES
    o.read_file("aclp/grp")
    o.open("r", "aclp/grp", RW)                         # EACCES
    o.open("r", "aclp/masked", RW)                      # EACCES (mask)
    o.read_file("aclp/masked")
    o.create_file("aclp/drop/mine", b"mine")
    o.stat("aclp/drop/mine")
    o.unlink("aclp/drop/mine")
    o.create_masked("aclp/inherit/f", 0o666, 0o022)
    o.getfacl("aclp/inherit/f")
    o.create_masked("aclp/inherit/d", 0o777, 0o022, "dir")
    o.getfacl("aclp/inherit/d")
    o.setfacl(["-m", "u:1234:r"], "aclp/named")         # EPERM: not the owner
    o.getfacl("aclp/named")
    o.xattr_names("aclp/named")                         # no trusted.*
    o.getxattr("aclp/named", "trusted.t")               # EPERM
    o.create_masked("aclp/home/f", 0o644, 0o022)
    o.setfacl(["-m", "u:1234:rw,g:4242:r"], "aclp/home/f")
    o.getfacl("aclp/home/f")
    o.stat("aclp/home/f")
    o.chmod("aclp/home/f", 0o640)
    o.getfacl("aclp/home/f")
    o.setfacl(["-b"], "aclp/home/f")
    o.getfacl("aclp/home/f")
    o.create_masked("aclp/sg/sub", 0o777, 0o022, "dir")  # gid 4242, setgid
    o.stat("aclp/sg/sub")
    o.setfacl(["-m", "u:1234:rx"], "aclp/sg/sub")
    o.stat("aclp/sg/sub")                               # setgid cleared


def run_scenario(root, fn):
    o = Recorder(root)
    try:
        fn(o)
    finally:
        o.close_all()
    return o.log
