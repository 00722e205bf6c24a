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
"""

import ctypes
import errno
import os
import pickle
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unittest

SKIP = 77
NOBODY = 65534
# Size of the chunk header in a member's chunk file (docs/FORMAT.md: the
# 4 KiB header); corruption is injected past it so that it hits strip data
# or strip records, which the daemon must detect by checksum.
CHUNK_HEADER_SIZE = 4096

ECFS = None            # path of the ecfs binary, set by main()
# Runs a program as root but without the capabilities that let root ignore
# file modes, so that a member made mode 000 is unreadable to the daemon
# (an unprivileged daemon cannot be used: /dev/fuse may be root-only).
DROP_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search",
            "--inh-caps", "-dac_override,-dac_read_search"]
TMPDIR = os.environ.get("ECFS_TEST_TMPDIR", "/tmp")
_active = set()        # volumes that may have a daemon or a mount
_active_lock = threading.Lock()

_libc = ctypes.CDLL(None, use_errno=True)


# ---------------------------------------------------------------- utilities

def log(*args):
    print(*args, file=sys.stderr, flush=True)


def fuse_unusable_reason():
    """None if this process can mount FUSE file systems, else why not."""
    if shutil.which("fusermount3") is None:
        return "fusermount3 not found (install fuse3)"
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
        os.close(fd)
    except OSError as e:
        return f"/dev/fuse unusable: {e.strerror}"
    return None


def is_mounted(path):
    """True if path is the mount point of a FUSE file system."""
    path = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8",
                  errors="surrogateescape") as f:
            for line in f:
                fields = line.split()
                mnt = fields[4].encode().decode("unicode_escape")
                sep = fields.index("-")
                fstype = fields[sep + 1]
                if mnt == path and fstype.startswith("fuse"):
                    return True
    except OSError:
        pass
    return False


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


# ---------------------------------------------------------------- volumes

class MountError(Exception):
    pass


class Volume:
    """n member directories and a mount point in a fresh temp directory."""

    def __init__(self, n, tmpdir=None, owner=None):
        self.base = tempfile.mkdtemp(prefix="ecfs-test-", dir=tmpdir or TMPDIR)
        os.chmod(self.base, 0o755)
        self.members = [os.path.join(self.base, f"member{i}") for i in range(n)]
        for p in self.members:
            os.mkdir(p, 0o755)
        self.mnt = os.path.join(self.base, "mnt")
        os.mkdir(self.mnt, 0o755)
        self.owner = owner
        if owner is not None:
            for p in self.members + [self.mnt]:
                os.chown(p, owner, owner)
        self.proc = None
        self.wrapper = []      # command prefix for the daemon (e.g. setpriv)
        self.logpath = os.path.join(self.base, "daemon.log")
        self.last_exit = None
        self.mount_args = None
        with _active_lock:
            _active.add(self)

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
                proc.kill()
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

    def cleanup(self, keep=False):
        try:
            self.unmount()
        finally:
            if is_mounted(self.mnt):
                self.emergency()
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
          rmdir      the member directory is removed (rm -rf)
          empty      removed and replaced by an empty directory (new disk)
          chunkdel   the chunk files of `files` are deleted on it
          flip       bytes of the chunk files of `files` are flipped
          unreadable chmod 000 on the member directory (only meaningful
                     when the daemon lacks CAP_DAC_OVERRIDE: root ignores
                     modes; see DROP_DAC)
          chunkmode  chmod 000 on the chunk files of `files` (same caveat)
          file       the member directory is replaced by a regular file
        """
        p = self.members[idx]
        if how == "rmdir":
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


def main(argv=None):
    """Entry point of every test program."""
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
    limit = float(os.environ.get("ECFS_TEST_WATCHDOG", "0"))
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
