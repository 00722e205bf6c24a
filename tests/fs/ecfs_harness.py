# SPDX-License-Identifier: MIT
"""Shared machinery for the ecfs integration tests: real FUSE mounts.

Every test program is started by meson as `python3 test_x.py ECFS_BINARY
[unittest args]`.  This module finds out whether FUSE is usable (exit 77,
meson's "skip", when it is not), creates volumes of member directories in
fresh temporary directories, mounts them with `ecfs -f` as a child process,
and guarantees that every mount is undone: on normal exit, on test failure,
on SIGTERM from meson's timeout, and even when the test's main thread is
stuck inside a FUSE request (a watcher thread then kills the daemons and
lazily unmounts, which makes the stuck request fail with ENOTCONN).

It also holds the helpers the tests share: running a function as another
user in a forked child, dropping the page cache so that reads really reach
the daemon, parsing the key=value xattr reports, and the ways a member can
be lost (removed, emptied, chunk deleted, bytes flipped, made unreadable).

Members are plain directories, or with member_fs="ext4" (or the environment
variable ECFS_TEST_MEMBER_FS=ext4, which moves every suite's members onto
disks) whole ext4 file systems: one image file per member in the volume's
temp directory, formatted with mkfs.ext4's defaults, on a loop device,
mounted on the member directory.  The disks are unmounted (lazily if busy)
and their loop devices detached whatever happens: after the FUSE mount is
gone, in cleanup(), in the emergency paths and at exit.

With member_fs="sshfs" (ECFS_TEST_MEMBER_FS=sshfs) every member is on a
host of its own: a network namespace made by the test, linked to this one
by a veth pair with addresses of a private range, running sshd on its own
address (a host key, a client key and a configuration file of the test's,
in the volume's temp dir), and the member directory is an sshfs mount of a
directory it serves.  A host's link can be cut, slowed with tc, its sshd
stopped and continued, its sshfs killed.  The sshfs mounts are detached,
the sshds killed and the namespaces and veths deleted whatever happens,
after the FUSE mount is gone, as for disks.
"""

import atexit
import ctypes
import errno
import fcntl
import hashlib
import itertools
import os
import pickle
import random
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unittest

SKIP = 77
NOBODY = 65534
# Size of the chunk header in a member's chunk file of a new volume
# (docs/FORMAT.md 4.1: 192 bytes in versions 2 and 3, 4096 in version 1);
# corruption is injected past it so that it hits strip data or strip
# records, which the daemon must detect by checksum.
CHUNK_HEADER_SIZE = 192
CHUNK_RECORD_SIZE = 64


def chunk_places(path, stripe):
    """(record offset, tags offset, tags size, strip offset) of a stripe in
    the chunk file at path, of any format version (docs/FORMAT.md section
    4; tags only in version 3: 16 bytes per 4 KiB of strip, size 0 else)."""
    with open(path, "rb") as f:
        head = f.read(96)
    version = int.from_bytes(head[8:12], "little")
    strip = int.from_bytes(head[80:88], "little")
    groups = 64
    tags = -(-strip // 4096) * 16 if version >= 3 else 0
    tag_block = -(-groups * tags // 4096) * 4096
    group = groups * CHUNK_RECORD_SIZE + tag_block + groups * strip
    if version == 1:
        base, g, i = 4096, stripe // groups, stripe % groups
    elif stripe == 0:
        rec = CHUNK_HEADER_SIZE
        return rec, rec + CHUNK_RECORD_SIZE, tags, rec + CHUNK_RECORD_SIZE + tags
    else:
        base = -(-(CHUNK_HEADER_SIZE + CHUNK_RECORD_SIZE + tags + strip) // 4096) * 4096
        g, i = (stripe - 1) // groups, (stripe - 1) % groups
    rec = base + g * group + i * CHUNK_RECORD_SIZE
    blocks = base + g * group + groups * CHUNK_RECORD_SIZE
    return rec, blocks + i * tags, tags, blocks + tag_block + i * strip


def sha256_strip_sum(ident, rec, strip, version):
    """(record sum, tags) of a strip on a volume with sha256 sums
    (docs/FORMAT.md 4.2): ident the chunk header's bytes 16..47 (volume
    UUID, file id), rec the record's first 32 bytes; in version 3 the
    record sums the strip's tags, 16 bytes per 4 KiB block (each over
    ident, rec, le64(block), 8 zero bytes and the block), else the
    strip itself (tags b"")."""
    if version < 3:
        return hashlib.sha256(ident + rec + strip).digest(), b""
    tags = b"".join(hashlib.sha256(ident + rec + b.to_bytes(16, "little") +
                                   strip[b * 4096:(b + 1) * 4096]).digest()[:16]
                    for b in range(-(-len(strip) // 4096)))
    return hashlib.sha256(ident + rec + tags).digest(), tags


def chunk_offsets(path, stripe):
    """(record offset, strip offset) of a stripe in the chunk file at path
    (chunk_places)."""
    rec, _tags, _size, strip = chunk_places(path, stripe)
    return rec, strip


ECFS = None            # path of the ecfs binary, set by main()
# Runs a program as root but without the capabilities that let root ignore
# file modes, so that a member made mode 000 is unreadable to the daemon
# (an unprivileged daemon cannot be used: /dev/fuse may be root-only).
DROP_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search",
            "--inh-caps", "-dac_override,-dac_read_search"]
TMPDIR = os.environ.get("ECFS_TEST_TMPDIR", "/tmp")
# What the members are: "dir" (directories in the temp dir) or "ext4"
# (whole-disk members on loop devices), and the default disk size.
MEMBER_FS = os.environ.get("ECFS_TEST_MEMBER_FS") or "dir"
MEMBER_MIB = int(os.environ.get("ECFS_TEST_MEMBER_MIB") or "64")
# Serialises loop device set-up between test programs (meson runs several).
LOOP_LOCK = "/run/lock/ecfs-test-loop.lock"
_active = set()        # volumes that may have a daemon or a mount
_active_lock = threading.Lock()
_disks = set()         # disks that may be attached or mounted
_disks_lock = threading.Lock()
_hosts = set()         # remote hosts that may have a namespace or a mount
_hosts_lock = threading.Lock()
_host_seq = itertools.count(1)

_libc = ctypes.CDLL(None, use_errno=True)


# ---------------------------------------------------------------- utilities

def log(*args):
    print(*args, file=sys.stderr, flush=True)


def device_unusable_reason(path):
    """None if the device at path opens for reading and writing, else why not."""
    try:
        os.close(os.open(path, os.O_RDWR))
    except OSError as e:
        return f"{path} unusable: {e.strerror}"
    return None


def fuse_unusable_reason():
    """None if this process can mount FUSE file systems, else why not."""
    if shutil.which("fusermount3") is None:
        return "fusermount3 not found (install fuse3)"
    return device_unusable_reason("/dev/fuse")


def fuse_connection(path):
    """The FUSE connection number (/sys/fs/fuse/connections/N) of the file
    system mounted on path, or None.  Never touches path itself: only its
    parent is resolved, so a mount that hangs does not hang the caller."""
    path = os.path.join(os.path.realpath(os.path.dirname(path)),
                        os.path.basename(path))
    try:
        with open("/proc/self/mountinfo", encoding="utf-8",
                  errors="surrogateescape") as f:
            for line in f:
                fields = line.split()
                mnt = fields[4].encode().decode("unicode_escape")
                sep = fields.index("-")
                fstype = fields[sep + 1]
                if mnt == path and fstype.startswith("fuse"):
                    return int(fields[2].split(":")[1])
    except OSError:
        pass
    return None


def is_mounted(path):
    """True if path is the mount point of a FUSE file system."""
    return fuse_connection(path) is not None


def abort_fuse(path):
    """Aborts the FUSE connection mounted on path: every call waiting on it,
    and every later one, fails with ENOTCONN (the mount stays until
    unmounted)."""
    conn = fuse_connection(path)
    if conn is not None:
        try:
            with open(f"/sys/fs/fuse/connections/{conn}/abort", "w") as f:
                f.write("1")
        except OSError:
            pass


def drop_caches():
    """Makes the next reads of mounted files go to the daemon again."""
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def drop_file_cache(path):
    """Per-file fallback for drop_caches (and harmless in addition)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def pattern(size, seed):
    """size pseudo-random bytes, reproducible from seed."""
    return random.Random(seed).randbytes(size)


def read_all(path, chunk=1 << 20):
    """Reads a whole file; returns (bytes read, errno or 0).  Stops at the
    first error so that the caller can check what came before it."""
    out = bytearray()
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return bytes(out), e.errno
    try:
        while True:
            try:
                b = os.pread(fd, chunk, len(out))
            except OSError as e:
                return bytes(out), e.errno
            if not b:
                return bytes(out), 0
            out += b
    finally:
        os.close(fd)


def write_file(path, data, chunk=1 << 20, fsync=False):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        off = 0
        while off < len(data):
            off += os.pwrite(fd, data[off:off + chunk], off)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def first_difference(a, b):
    n = min(len(a), len(b))
    for i in range(0, n, 4096):
        if a[i:i + 4096] != b[i:i + 4096]:
            for j in range(i, min(i + 4096, n)):
                if a[j] != b[j]:
                    return j
    return n if len(a) != len(b) else -1


def tree_snapshot(top):
    """top and every entry beneath it: type, size, and a file's sha256 or
    a directory's mtime (a name made and removed again moves it)."""
    out = {}
    for dirpath, dirs, files in os.walk(top):
        for p in ([top] if dirpath == top else []) + \
                [os.path.join(dirpath, name) for name in dirs + files]:
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    seen = hashlib.sha256(f.read()).hexdigest()
            else:
                seen = st.st_mtime_ns if stat.S_ISDIR(st.st_mode) else None
            out[os.path.relpath(p, top)] = (st.st_mode, st.st_size, seen)
    return out


def describe_mismatch(got, want):
    off = first_difference(got, want)
    return (f"read {len(got)} bytes, expected {len(want)}; first difference "
            f"at offset {off}: got {got[off:off + 8].hex()} want "
            f"{want[off:off + 8].hex()}")


def parse_report(text):
    """Parses the key=value lines of user.ecfs.layout / user.ecfs.health."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out


def getxattr_text(path, name):
    return os.getxattr(path, name).decode("utf-8", "replace")


def layout(path):
    return parse_report(getxattr_text(path, "user.ecfs.layout"))


def events_program(base):
    """(directory, program): an -o events program, made in base, that
    writes each run's environment to a file of its own in the directory."""
    out = os.path.join(base, "events")
    os.mkdir(out)
    prog = os.path.join(base, "on-event")
    with open(prog, "w") as f:
        f.write('#!/bin/sh\nenv > "%s/run.$$.tmp" && mv "%s/run.$$.tmp" "%s/run.$$"\n'
                % (out, out, out))
    os.chmod(prog, 0o755)
    return out, prog


def health(mnt):
    return parse_report(getxattr_text(mnt, "user.ecfs.health"))


def fallocate(fd, mode, offset, length):
    """fallocate(2) itself (os.posix_fallocate would emulate it)."""
    fn = _libc.fallocate
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if fn(fd, mode, offset, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


def renameat2(old, new, flags):
    fn = _libc.renameat2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                   ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd = -100
    if fn(at_fdcwd, os.fsencode(old), at_fdcwd, os.fsencode(new), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def _pdeathsig():
    """preexec_fn: the daemon gets SIGTERM (and unmounts) if the test dies."""
    _libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _as_user(uid, gid):
    def fn():
        _pdeathsig()
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    return fn


def start_as(uid, gid, fn, *args):
    """Forks a child that runs fn(*args) with the given ids (no
    supplementary groups) and exits, 0 or 1 if fn raised; returns its
    pid, for os.waitpid."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            fn(*args)
        except BaseException:  # noqa: B036 - the child must exit
            traceback.print_exc()
            code = 1
        os._exit(code)
    return pid


def run_as(uid, gid, fn, *args):
    """Runs fn(*args) in a forked child with the given ids and returns its
    result (or re-raises its exception, as a RuntimeError with the child's
    traceback)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            os.umask(0o022)
            payload = ("ok", fn(*args))
        except BaseException:  # everything goes back to the parent
            payload = ("exc", traceback.format_exc())
            code = 1
        try:
            data = pickle.dumps(payload)
            with os.fdopen(w, "wb") as f:
                f.write(data)
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    if not data:
        raise RuntimeError("child died without an answer")
    kind, value = pickle.loads(data)
    if kind == "exc":
        raise RuntimeError("in child running as uid %d:\n%s" % (uid, value))
    return value


# ---------------------------------------------------------------- disks

EXT4_IOC_SHUTDOWN = 0x8004587D   # _IOR('X', 125, __u32)
EXT4_GOING_FLAGS_NOLOGFLUSH = 2


def disks_unusable_reason():
    """None if ext4 disks on loop devices can be made here, else why not."""
    for prog, pkg in (("mkfs.ext4", "e2fsprogs"), ("losetup", "util-linux"),
                      ("mount", "mount")):
        if shutil.which(prog) is None:
            return f"{prog} not found (install {pkg})"
    if os.geteuid() != 0:
        return "loop devices need root"
    if not os.path.exists("/dev/loop-control"):
        return "no /dev/loop-control (loop module not loaded?)"
    return device_unusable_reason("/dev/loop-control")


def _mount_points(devno):
    """Where the block device devno (st_rdev) is mounted, innermost last."""
    want = f"{os.major(devno)}:{os.minor(devno)}"
    out = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8",
                  errors="surrogateescape") as f:
            for line in f:
                fields = line.split()
                if fields[2] == want:
                    out.append(fields[4].encode().decode("unicode_escape"))
    except OSError:
        pass
    return out


def _run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


class Disk:
    """An ext4 file system in an image file on a loop device, mounted on
    a member directory as a whole-disk member.  Formatted with mkfs.ext4's
    defaults, as a new user would (below 512 MiB that means 1 KiB blocks),
    with lost+found left at its root."""

    def __init__(self, image, mib, path):
        self.image, self.mib, self.path = image, mib, path
        self.dev = None
        self.devno = None
        with _disks_lock:
            _disks.add(self)
        self.format()
        self.mount()

    def format(self):
        """A fresh image (a new disk): only while not attached."""
        assert self.dev is None
        # a new file: a lazily unmounted old disk may still use the old one
        if os.path.exists(self.image):
            os.unlink(self.image)
        with open(self.image, "wb") as f:
            f.truncate(self.mib << 20)
        r = _run(["mkfs.ext4", "-q", "-F", self.image])
        if r.returncode != 0:
            raise OSError(f"mkfs.ext4 {self.image}: {r.stderr.strip()}")

    def attach(self):
        """Puts the image on a free loop device.  losetup -f picks the first
        free one (and the kernel adds more when none is); the lock keeps two
        test programs from racing for the same."""
        with open(LOOP_LOCK, "a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            r = _run(["losetup", "-f", "--show", self.image])
        if r.returncode != 0:
            raise OSError(f"losetup -f {self.image}: {r.stderr.strip()}")
        self.dev = r.stdout.strip()
        self.devno = os.stat(self.dev).st_rdev

    def mount(self, opts=None):
        """Mounts the disk on its member directory (made if missing)."""
        if self.dev is None:
            self.attach()
        os.makedirs(self.path, 0o755, exist_ok=True)
        r = _run(["mount", "-t", "ext4"] + (["-o", opts] if opts else [])
                 + [self.dev, self.path])
        if r.returncode != 0:
            raise OSError(f"mount {self.dev} {self.path}: {r.stderr.strip()}")

    def mounted(self):
        return self.devno is not None and bool(_mount_points(self.devno))

    def remount(self, opts):
        r = _run(["mount", "-o", "remount," + opts, self.path])
        if r.returncode != 0:
            raise OSError(f"remount,{opts} {self.path}: {r.stderr.strip()}")

    def shutdown(self):
        """The disk dies: every call on the file system fails with EIO from
        now on (ext4's shutdown ioctl, without flushing the journal)."""
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN,
                        struct.pack("I", EXT4_GOING_FLAGS_NOLOGFLUSH))
        finally:
            os.close(fd)

    def unmount(self, lazy=False, tries=20):
        """Unmounts every mount of the disk (the innermost first): a few
        tries while busy, then lazily (lazy=True: at once)."""
        if self.devno is None:
            return
        for attempt in range(0 if lazy else tries):
            mps = _mount_points(self.devno)
            if not mps:
                return
            _run(["umount", mps[-1]])
            if mps[-1] in _mount_points(self.devno):
                time.sleep(0.05 * (attempt + 1))
        for mp in reversed(_mount_points(self.devno)):
            if not lazy:
                log(f"disk {self.dev} busy at {mp}; lazy unmount")
            _run(["umount", "-l", mp])

    def detach(self):
        """Frees the loop device (the kernel does it once the last user of
        a lazily unmounted disk is gone)."""
        if self.dev is not None:
            _run(["losetup", "-d", self.dev])
        self.dev = self.devno = None

    def release(self, lazy=False):
        try:
            self.unmount(lazy)
        finally:
            self.detach()
            with _disks_lock:
                _disks.discard(self)


def release_all_disks():
    """Unmounts and detaches every disk still set up (at exit)."""
    with _disks_lock:
        disks = list(_disks)
    for d in disks:
        d.release(lazy=True)


atexit.register(release_all_disks)


# ---------------------------------------------------------------- hosts

SSHD = "/usr/sbin/sshd"


def remote_unusable_reason():
    """None if members on sshfs from sshd in network namespaces can be made
    here, else why not."""
    for prog, pkg in (("ip", "iproute2"), ("tc", "iproute2"),
                      ("ssh-keygen", "openssh-client"),
                      ("sshfs", "sshfs")):
        if shutil.which(prog) is None:
            return f"{prog} not found (install {pkg})"
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} not found (install openssh-server)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"ecfs-probe-{os.getpid()}"
    r = _run(["ip", "netns", "add", probe])
    if r.returncode != 0:
        return f"ip netns add: {r.stderr.strip()}"
    _run(["ip", "netns", "del", probe])
    return None


def ssh_keys(d):
    """A host key, a client key and authorized_keys in the directory d
    (made on first use; one set per volume)."""
    if not os.path.exists(os.path.join(d, "authorized_keys")):
        os.makedirs(d, 0o700, exist_ok=True)
        for name in ("host_key", "client_key"):
            r = _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                      "ecfs-test", "-f", os.path.join(d, name)])
            if r.returncode != 0:
                raise OSError(f"ssh-keygen: {r.stderr.strip()}")
        shutil.copy(os.path.join(d, "client_key.pub"),
                    os.path.join(d, "authorized_keys"))
    return d


class Host:
    """A member on another host: network namespace `ns`, joined to this
    one by the veth pair `veth` (here) / eth0 (there) with a /30 of
    10.0.0.0/8 chosen from the process id, sshd listening on `addr`
    serving `served`, and the member directory `path` an sshfs mount of
    it.  sshfs is told to give up on a dead link within a few seconds
    (ServerAliveInterval=1, ServerAliveCountMax=3, no reconnect)."""

    SSHFS_OPTS = ("BatchMode=yes,StrictHostKeyChecking=no,"
                  "UserKnownHostsFile=/dev/null,LogLevel=ERROR,"
                  "ServerAliveInterval=1,ServerAliveCountMax=3,"
                  "ConnectTimeout=5,allow_other")

    def __init__(self, base, idx, path):
        seq = next(_host_seq)
        pid = os.getpid()
        self.ns = f"ecfs-{pid}-{seq}"
        self.veth = f"ecr{pid}h{seq}"[:15]
        s = ((pid & 0xFFFF) << 6) | (seq & 63)
        net = f"10.{s >> 14}.{(s >> 6) & 255}"
        self.net = f"{net}.{(s & 63) << 2}/30"
        self.local = f"{net}.{((s & 63) << 2) + 1}"
        self.addr = f"{net}.{((s & 63) << 2) + 2}"
        self.path = path
        self.keys = ssh_keys(os.path.join(base, "ssh"))
        self.served = os.path.join(base, f"host{idx}")
        self.conf = os.path.join(self.keys, f"sshd{idx}.conf")
        self.sshd_log = os.path.join(base, f"sshd{idx}.log")
        self.sshfs_log = os.path.join(base, f"sshfs{idx}.log")
        self.sshd = self.sshfs = None
        with _hosts_lock:
            _hosts.add(self)
        os.makedirs(self.served, 0o755, exist_ok=True)
        self.start()
        self.mount()

    def in_ns(self, *cmd):
        """cmd run in the host's network namespace only.  Not `ip netns
        exec`: that also gives cmd a mount namespace of its own, a private
        copy of every mount there is, and a FUSE mount of another test
        copied into a long-lived sshd would outlive its unmount, keeping
        that test's daemon running."""
        return ["nsenter", f"--net=/run/netns/{self.ns}"] + list(cmd)

    def _ns(self, *cmd):
        r = _run(self.in_ns(*cmd))
        if r.returncode != 0:
            raise OSError(f"in {self.ns}: {' '.join(cmd)}: {r.stderr.strip()}")

    def _ip(self, *args):
        r = _run(["ip"] + list(args))
        if r.returncode != 0:
            raise OSError(f"ip {' '.join(args)}: {r.stderr.strip()}")

    def start(self):
        """The namespace, its link and its sshd (ready to accept)."""
        self._ip("netns", "add", self.ns)
        self._ip("link", "add", self.veth, "type", "veth", "peer", "name",
                 "eth0", "netns", self.ns)
        self._ip("addr", "add", self.local + "/30", "dev", self.veth)
        # While the link is down its /30 must not go out by the default
        # route (a gateway may accept any connection and never answer).
        self._ip("route", "add", "unreachable", self.net, "metric", "4242")
        self._ip("link", "set", self.veth, "up")
        self._ns("ip", "addr", "add", self.addr + "/30", "dev", "eth0")
        self._ns("ip", "link", "set", "eth0", "up")
        self._ns("ip", "link", "set", "lo", "up")
        with open(self.conf, "w") as f:
            f.write(f"ListenAddress {self.addr}\n"
                    f"HostKey {self.keys}/host_key\n"
                    f"AuthorizedKeysFile {self.keys}/authorized_keys\n"
                    "PidFile none\nPermitRootLogin prohibit-password\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                    "UsePAM no\nStrictModes no\nSubsystem sftp internal-sftp\n"
                    "LogLevel ERROR\n")
        os.makedirs("/run/sshd", 0o755, exist_ok=True)  # privilege separation
        with open(self.sshd_log, "ab") as logf:
            self.sshd = subprocess.Popen(
                self.in_ns(SSHD, "-D", "-e", "-f", self.conf), stdout=logf, stderr=logf,
                stdin=subprocess.DEVNULL, preexec_fn=_pdeathsig)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((self.addr, 22), timeout=1).close()
                return
            except OSError:
                if self.sshd.poll() is not None or time.monotonic() > deadline:
                    raise OSError(f"sshd on {self.addr} in {self.ns} did not "
                                  f"start: {self.log()}")
                time.sleep(0.05)

    def mount(self):
        """Mounts the served directory on the member directory."""
        os.makedirs(self.path, 0o755, exist_ok=True)
        cmd = ["sshfs", "-f", f"root@{self.addr}:{self.served}", self.path,
               "-o", f"IdentityFile={self.keys}/client_key,{self.SSHFS_OPTS}"]
        with open(self.sshfs_log, "ab") as logf:
            self.sshfs = subprocess.Popen(cmd, stdout=logf, stderr=logf,
                                          stdin=subprocess.DEVNULL,
                                          preexec_fn=_pdeathsig)
        deadline = time.monotonic() + 15
        while not is_mounted(self.path):
            if self.sshfs.poll() is not None or time.monotonic() > deadline:
                raise OSError(f"sshfs {self.addr} did not mount: {self.log()}")
            time.sleep(0.02)

    def mounted(self):
        return is_mounted(self.path)

    def log(self):
        out = ""
        for p in (self.sshd_log, self.sshfs_log):
            try:
                with open(p, "rb") as f:
                    out += f"{p}: " + f.read()[-2000:].decode("utf-8", "replace")
            except OSError:
                pass
        return out

    def pids(self):
        """The processes in the namespace (sshd and its sessions)."""
        r = _run(["ip", "netns", "pids", self.ns])
        return [int(x) for x in r.stdout.split()] if r.returncode == 0 else []

    def signal(self, sig):
        """Sends sig to every process of the host (SIGSTOP: the host hangs,
        its TCP connections stay up; SIGCONT: it goes on)."""
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def cut(self):
        """The link goes down: the host is unreachable, nothing answers."""
        self._ip("link", "set", self.veth, "down")

    def uncut(self):
        self._ip("link", "set", self.veth, "up")

    def slow(self, rate="2mbit"):
        """Limits the link to `rate` both ways (tc tbf; netem is absent
        here).  tbf queues a few seconds' worth and drops past that."""
        tbf = ["qdisc", "replace", "dev", None, "root", "tbf", "rate", rate,
               "burst", "16kb", "latency", "2s"]
        r = _run(["tc"] + [self.veth if a is None else a for a in tbf])
        if r.returncode != 0:
            raise OSError(f"tc on {self.veth}: {r.stderr.strip()}")
        self._ns("tc", *["eth0" if a is None else a for a in tbf])

    def kill_sshfs(self):
        """sshfs dies without unmounting: every call on the member fails
        with ENOTCONN."""
        if self.sshfs is not None:
            self.sshfs.kill()
            self.sshfs.wait()

    def unmount(self):
        """Detaches the sshfs mount (lazily: it may hang on a dead link)
        and ends its process.  The connection is aborted first, so that
        calls waiting on the dead link (the daemon's) fail at once."""
        if is_mounted(self.path):
            abort_fuse(self.path)
            _run(["fusermount3", "-u", "-z", self.path])
        p, self.sshfs = self.sshfs, None
        if p is not None:
            if p.poll() is None:
                p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def release(self):
        """Unmounts sshfs, kills the host's processes, deletes the
        namespace and the veth (any already gone is no error)."""
        try:
            self.unmount()
        finally:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                self.signal(sig)
            if self.sshd is not None:
                if self.sshd.poll() is None:
                    self.sshd.kill()
                self.sshd.wait()
                self.sshd = None
            _run(["ip", "netns", "del", self.ns])
            _run(["ip", "link", "del", self.veth])
            _run(["ip", "route", "del", "unreachable", self.net, "metric", "4242"])
            with _hosts_lock:
                _hosts.discard(self)


def release_all_hosts():
    """Detaches every sshfs mount and deletes every namespace (at exit)."""
    with _hosts_lock:
        hosts = list(_hosts)
    for h in hosts:
        try:
            h.release()
        except Exception:  # the others must go too
            log(f"releasing host {h.ns}: {traceback.format_exc()}")


atexit.register(release_all_hosts)


# ---------------------------------------------------------------- volumes

def thread_report(pid):
    """Where each thread of process pid waits (its wchan and, with gdb
    installed, its stack): said when a daemon does not exit, so that a
    hang seen once can be understood."""
    lines = [f"threads of {pid}:"]
    for tid in sorted(os.listdir(f"/proc/{pid}/task")) if os.path.isdir(f"/proc/{pid}/task") else []:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                wchan = f.read().strip()
        except OSError:
            continue
        lines.append(f"  {tid} {comm} {wchan}")
    if shutil.which("gdb"):
        r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                           capture_output=True, text=True, timeout=60)
        lines += [ln for ln in r.stdout.splitlines() if ln.startswith(("#", "Thread"))]
    return "\n".join(lines)


class MountError(Exception):
    pass


class Volume:
    """n members and a mount point in a fresh temp directory.  The members
    are directories, or (member_fs="ext4") whole ext4 disks of member_mib
    MiB each (one size for all, or a list of n sizes), or (member_fs=
    "sshfs") sshfs mounts from hosts in network namespaces (`hosts`)."""

    def __init__(self, n, tmpdir=None, owner=None, member_fs=None,
                 member_mib=None):
        self.base = tempfile.mkdtemp(prefix="ecfs-test-", dir=tmpdir or TMPDIR)
        os.chmod(self.base, 0o755)
        self.members = [os.path.join(self.base, f"member{i}") for i in range(n)]
        self.disks = [None] * n
        self.hosts = [None] * n
        self.proc = None
        with _active_lock:
            _active.add(self)
        for p in self.members:
            os.mkdir(p, 0o755)
        self.member_fs = member_fs or MEMBER_FS
        if self.member_fs == "ext4":
            sizes = member_mib if member_mib is not None else MEMBER_MIB
            if isinstance(sizes, int):
                sizes = [sizes] * n
            for i, p in enumerate(self.members):
                self.disks[i] = Disk(os.path.join(self.base, f"disk{i}.img"),
                                     sizes[i], p)
        elif self.member_fs == "sshfs":
            for i, p in enumerate(self.members):
                self.hosts[i] = Host(self.base, i, p)
        elif self.member_fs != "dir":
            raise ValueError(f"member_fs {self.member_fs!r}: dir, ext4 or sshfs")
        self.mnt = os.path.join(self.base, "mnt")
        os.mkdir(self.mnt, 0o755)
        self.owner = owner
        if owner is not None:
            for p in self.members + [self.mnt]:
                os.chown(p, owner, owner)
        self.wrapper = []      # command prefix for the daemon (e.g. setpriv)
        self.logpath = os.path.join(self.base, "daemon.log")
        self.last_exit = None
        self.mount_args = None

    # -- daemon ------------------------------------------------------------
    def _command(self, opts, members, fuse_opts):
        cmd = self.wrapper + [ECFS, "-f"]
        if opts:
            cmd += ["-o", opts]
        if fuse_opts:
            cmd += ["-o", fuse_opts]
        cmd += [":".join(members if members is not None else self.members),
                self.mnt]
        return cmd

    def start(self, opts="", members=None, fuse_opts=None, cmd=None):
        """Starts the daemon; returns once it mounted or exited.  Returns
        True if mounted, False if the daemon exited (see last_exit/log())."""
        if fuse_opts is None:
            fuse_opts = ("allow_other,default_permissions"
                         if self.owner is None else "default_permissions")
        if cmd is None:
            cmd = self._command(opts, members, fuse_opts)
        self.mount_args = cmd
        preexec = _pdeathsig if self.owner is None else _as_user(self.owner,
                                                                 self.owner)
        logf = open(self.logpath, "ab")
        logf.write(("$ " + " ".join(cmd) + "\n").encode())
        logf.flush()
        self.output_from = logf.tell()
        self.proc = subprocess.Popen(cmd, stdout=logf, stderr=logf,
                                     stdin=subprocess.DEVNULL,
                                     preexec_fn=preexec)
        logf.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if is_mounted(self.mnt):
                return True
            rc = self.proc.poll()
            if rc is not None:
                self.last_exit = rc
                self.proc = None
                return False
            time.sleep(0.02)
        self.emergency()
        raise MountError("ecfs neither mounted nor exited within 30 s\n"
                         + self.log())

    def mount(self, opts="", members=None, fuse_opts=None):
        if not self.start(opts, members, fuse_opts):
            raise MountError(f"ecfs exited with {self.last_exit} instead of "
                             f"mounting:\n{self.log()}")
        return self.mnt

    def output(self):
        """What the daemon started last printed (so far)."""
        with open(self.logpath, "rb") as f:
            f.seek(self.output_from)
            return f.read().decode("utf-8", "replace")

    def log(self, tail=4000):
        try:
            with open(self.logpath, "rb") as f:
                data = f.read()
        except OSError:
            return ""
        return data[-tail:].decode("utf-8", "replace")

    def unmount(self):
        """Unmounts and waits for the daemon; returns its exit status
        (negative: killed by that signal; None: there was no daemon)."""
        proc = self.proc
        if is_mounted(self.mnt):
            for attempt in range(20):
                r = subprocess.run(["fusermount3", "-u", self.mnt],
                                   capture_output=True)
                if r.returncode == 0 or not is_mounted(self.mnt):
                    break
                time.sleep(0.1 * (attempt + 1))
            if is_mounted(self.mnt):
                log(f"unmount of {self.mnt} busy; lazy unmount")
                subprocess.run(["fusermount3", "-u", "-z", self.mnt],
                               capture_output=True)
        rc = None
        if proc is not None:
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                log(f"daemon {proc.pid} did not exit after unmount; killing")
                log(thread_report(proc.pid))
                proc.kill()
                try:
                    rc = proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    log(f"daemon {proc.pid} stuck in a member call; "
                        "releasing the members")
                    self.release_disks(lazy=True)
                    rc = proc.wait()
                rc = rc if rc != -signal.SIGKILL else "hung"
            self.proc = None
            self.last_exit = rc
        return rc

    def emergency(self):
        """Kills the daemon and detaches the mount (no waiting on FUSE)."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
            except OSError:
                pass
        subprocess.run(["fusermount3", "-u", "-z", self.mnt],
                       capture_output=True)
        self.release_disks(lazy=True)

    def release_disks(self, lazy=False):
        """Unmounts the member disks and detaches their loop devices, and
        detaches the sshfs members and deletes their hosts (the FUSE mount
        must be gone first: the daemon holds them open)."""
        for d in self.disks + self.hosts:
            if d is not None:
                try:
                    d.release(lazy) if isinstance(d, Disk) else d.release()
                except Exception:  # the others must go too
                    log(f"releasing {d.path}: {traceback.format_exc()}")

    def cleanup(self, keep=False):
        try:
            self.unmount()
        finally:
            if is_mounted(self.mnt):
                self.emergency()
            self.release_disks()
            with _active_lock:
                _active.discard(self)
            if not keep and not os.environ.get("ECFS_TEST_KEEP"):
                for p in self.members:
                    if os.path.isdir(p) and not os.path.islink(p):
                        os.chmod(p, 0o755)
                shutil.rmtree(self.base, ignore_errors=True)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    # -- members -------------------------------------------------------------
    def chunk_path(self, idx, rel):
        return os.path.join(self.members[idx], rel.lstrip("/"))

    def lose(self, idx, how, files=(), seed=0):
        """Makes member idx unusable in one of these ways:
          rmdir      the member directory is removed (rm -rf); a disk is
                     unmounted (lazily) and its mount point removed
          empty      removed and replaced by an empty directory (new disk);
                     a disk is replaced by a freshly formatted one
          chunkdel   the chunk files of `files` are deleted on it
          flip       bytes of the chunk files of `files` are flipped
          unreadable chmod 000 on the member directory (only meaningful
                     when the daemon lacks CAP_DAC_OVERRIDE: root ignores
                     modes; see DROP_DAC)
          chunkmode  chmod 000 on the chunk files of `files` (same caveat)
          file       the member directory is replaced by a regular file
          dead       disks: the disk dies, every call fails with EIO;
                     sshfs: sshfs dies, every call fails with ENOTCONN
          cut        sshfs only: the host's link goes down (sshfs gives up
                     after its keep-alive, and unmounts itself)
        An sshfs member is unmounted for rmdir and file, and for empty
        mounted again from a new empty directory on its host.
        """
        p = self.members[idx]
        disk = self.disks[idx]
        host = self.hosts[idx]
        if how == "cut":
            if host is None:
                raise ValueError("lose(cut) needs an sshfs member")
            host.cut()
        elif how in ("rmdir", "empty", "file", "dead") and host is not None:
            self._lose_host(host, how)
        elif how in ("rmdir", "empty", "file") and disk is not None:
            disk.unmount(lazy=True)
            if how == "empty":
                disk.detach()
                disk.format()
                disk.mount()
                return
            os.rmdir(p)
            if how == "file":
                with open(p, "w") as f:
                    f.write("not a directory\n")
        elif how == "dead":
            if disk is None:
                raise ValueError("lose(dead) needs a disk member")
            disk.shutdown()
        elif how == "rmdir":
            shutil.rmtree(p)
        elif how == "empty":
            shutil.rmtree(p)
            os.mkdir(p, 0o755)
        elif how == "chunkdel":
            for rel in files:
                try:
                    os.unlink(self.chunk_path(idx, rel))
                except FileNotFoundError:
                    pass
        elif how == "flip":
            rng = random.Random(seed * 1000 + idx)
            for rel in files:
                flip_bytes(self.chunk_path(idx, rel), rng)
        elif how == "unreadable":
            os.chmod(p, 0)
        elif how == "chunkmode":
            for rel in files:
                os.chmod(self.chunk_path(idx, rel), 0)
        elif how == "file":
            shutil.rmtree(p)
            with open(p, "w") as f:
                f.write("not a directory\n")
        else:
            raise ValueError(how)

    def _lose_host(self, host, how):
        if how == "dead":
            host.kill_sshfs()
            return
        host.unmount()
        if how == "empty":
            shutil.rmtree(host.served)
            os.mkdir(host.served, 0o755)
            host.mount()
            return
        os.rmdir(host.path)
        if how == "file":
            with open(host.path, "w") as f:
                f.write("not a directory\n")

    def hide(self, idx):
        """Takes member idx away while the volume is not mounted, to be put
        back by unhide(): a directory is renamed aside, a disk unmounted and
        its mount point removed."""
        disk = self.disks[idx] or self.hosts[idx]
        if disk is not None and disk.mounted():
            disk.unmount()
            os.rmdir(self.members[idx])
        else:
            os.rename(self.members[idx], self.members[idx] + ".away")

    def unhide(self, idx):
        disk = self.disks[idx] or self.hosts[idx]
        if os.path.lexists(self.members[idx] + ".away"):
            os.rename(self.members[idx] + ".away", self.members[idx])
        elif disk is not None:
            disk.mount()

    def fill_member(self, idx, src):
        """Makes member idx a copy of the member directory src (cp -a:
        modes, xattrs, hard links)."""
        p = self.members[idx]
        if self.disks[idx] is not None or self.hosts[idx] is not None:
            subprocess.run(["cp", "-a", src + "/.", p], check=True)
        else:
            os.rmdir(p)
            subprocess.run(["cp", "-a", src, p], check=True)


def flip_bytes(path, rng, count=16):
    """Inverts `count` bytes of a chunk file: past the chunk header when the
    file is longer than it (strip data and records), else inside it."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return
    if size == 0:
        return
    lo = CHUNK_HEADER_SIZE if size > CHUNK_HEADER_SIZE else 0
    with open(path, "r+b") as f:
        for _ in range(count):
            off = rng.randrange(lo, size)
            f.seek(off)
            b = f.read(1)
            f.seek(off)
            f.write(bytes([b[0] ^ 0xFF]))


# ---------------------------------------------------------------- lifetime

def emergency_all(why):
    with _active_lock:
        vols = list(_active)
    if vols:
        log(f"ecfs tests: {why}: killing daemons and detaching mounts")
    for v in vols:
        v.emergency()
    release_all_disks()
    release_all_hosts()


def _signal_watcher(rfd):
    """Runs in its own thread: a signal (meson's SIGTERM on timeout) detaches
    all mounts at once, because the main thread may be blocked in FUSE."""
    while True:
        try:
            data = os.read(rfd, 16)
        except OSError:
            return
        if not data:
            return
        emergency_all(f"signal {data[0]}")


def _on_signal(signum, frame):
    raise SystemExit(f"ecfs tests: interrupted by signal {signum}")


def _watchdog(seconds):
    time.sleep(seconds)
    emergency_all(f"watchdog: still running after {seconds} s")
    time.sleep(15)
    log("ecfs tests: watchdog: giving up")
    os._exit(1)


def take_fsck_argument():
    """For programs run as `prog ECFS ECFS_FSCK [unittest args]`: takes
    ECFS_FSCK out of sys.argv and returns its absolute path (exits 2 with
    the usage if it is missing)."""
    if len(sys.argv) < 3:
        print(f"usage: {sys.argv[0]} ECFS ECFS_FSCK [unittest args]", file=sys.stderr)
        sys.exit(2)
    return os.path.abspath(sys.argv.pop(2))


def main(argv=None, needs_disks=False, needs_remote=False):
    """Entry point of every test program (needs_disks: it makes ext4
    member disks whatever ECFS_TEST_MEMBER_FS says; needs_remote: the same
    for sshfs members on hosts in network namespaces)."""
    global ECFS
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2:
        print(f"usage: {argv[0]} ECFS_BINARY [unittest args]", file=sys.stderr)
        return 2
    ECFS = os.path.abspath(argv[1])
    if not os.access(ECFS, os.X_OK):
        print(f"ecfs binary {ECFS} is not executable", file=sys.stderr)
        return 1
    why = fuse_unusable_reason()
    if os.geteuid() != 0:
        why = ("the integration tests need root (other users' files, "
               "mknod, drop_caches, a daemon without CAP_DAC_OVERRIDE)")
    if not why and (MEMBER_FS == "ext4" or needs_disks):
        why = disks_unusable_reason()
        why = why and f"ext4 member disks: {why}"
    if not why and (MEMBER_FS == "sshfs" or needs_remote):
        why = remote_unusable_reason()
        why = why and f"sshfs members: {why}"
    if why:
        print(f"SKIP: {why}", file=sys.stderr)
        return SKIP
    os.umask(0o022)
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)
    threading.Thread(target=_signal_watcher, args=(rfd,), daemon=True).start()
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _on_signal)
    # scripts/test.sh raises meson's time limits by ECFS_TEST_SLOW
    limit = (float(os.environ.get("ECFS_TEST_WATCHDOG", "0"))
             * float(os.environ.get("ECFS_TEST_SLOW", "1")))
    if limit > 0:
        threading.Thread(target=_watchdog, args=(limit,), daemon=True).start()
    try:
        prog = unittest.main(module="__main__", argv=[argv[0]] + argv[2:],
                             exit=False, verbosity=2)
    finally:
        with _active_lock:
            vols = list(_active)
        for v in vols:
            v.cleanup()
    res = prog.result
    if res.testsRun == 0:
        return 1
    if res.testsRun == len(res.skipped):
        return SKIP
    return 0 if res.wasSuccessful() else 1


class MountedCase(unittest.TestCase):
    """A test case whose volumes are always cleaned up, and whose daemon
    must not have died under it."""

    def volume(self, n, **kw):
        v = Volume(n, **kw)
        self.addCleanup(v.cleanup)
        return v

    def mount_faulty(self, v, rules, opts=""):
        """Mounts with ECFS_FAULT=rules; a build without fault injection
        (meson -Dfault_injection=true, which scripts/test.sh sets) skips
        the test, saying so."""
        os.environ["ECFS_FAULT"] = rules
        try:
            mnt = self.mount(v, opts)
        finally:
            del os.environ["ECFS_FAULT"]
        if "ECFS_FAULT and ECFS_RECORD are ignored" in v.output():
            v.unmount()
            self.skipTest("this build has no fault injection")
        return mnt

    def mount(self, v, opts="", **kw):
        try:
            return v.mount(opts, **kw)
        except MountError as e:
            self.fail(str(e))

    def assert_clean_unmount(self, v):
        alive = v.alive()
        rc = v.unmount()
        self.assertTrue(alive, "daemon died while mounted:\n" + v.log())
        self.assertEqual(rc, 0, f"daemon exit status {rc}:\n" + v.log())

    def wait_healed(self, mnt, timeout=60):
        """Waits until no member is failed and the online heal completed
        one pass and is idle; returns the health report."""
        deadline = time.monotonic() + timeout
        rep = {}
        while time.monotonic() < deadline:
            rep = health(mnt)
            if (rep.get("members_failed") == "0" and rep.get("heal") == "idle"
                    and int(rep.get("heals_completed", 0)) >= 1):
                return rep
            time.sleep(0.1)
        self.fail(f"no heal within {timeout} s: {rep}")

    def assert_exact(self, path, want, msg=""):
        got, err = read_all(path)
        self.assertEqual(err, 0, f"{path}: {msg} read failed with "
                         f"{errno.errorcode.get(err, err)} after {len(got)} bytes")
        if got != want:
            self.fail(f"{path}: {msg} {describe_mismatch(got, want)}")

    def assert_exact_or_eio(self, path, want, msg=""):
        """For volumes past m failures: bytes read must be right as far as
        they go; any failure must be EIO.  Returns the errno seen."""
        got, err = read_all(path)
        if err == 0:
            if got != want:
                self.fail(f"{path}: {msg} {describe_mismatch(got, want)}")
            return 0
        self.assertIn(err, (errno.EIO,), f"{path}: {msg} failed with "
                      f"{errno.errorcode.get(err, err)}, expected EIO")
        self.assertEqual(got, want[:len(got)],
                         f"{path}: {msg} bytes before the error are wrong")
        return err


def mode_str(m):
    return stat.filemode(m)
