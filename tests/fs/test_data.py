# SPDX-License-Identifier: MIT
"""Byte-exact contents through member losses.

Files of the sizes where striping has its edges (0, 1, strip-1, strip,
stripe-1, stripe, stripe+1, 10 stripes + 7; strip from the file's
user.ecfs.layout, stripe = k x strip) are written sequentially in writes
that do not fall on strip boundaries, and by random-offset writes checked
against a model buffer.  Every byte is read back (page cache dropped, so
the daemon really decodes) healthy, after losing up to m members in each
way a member can be lost, after writing while degraded, after a remount,
and with m+1 lost, when each read must be exact or fail with EIO, never
wrong.  Losses also happen during a write and during a read.  One
100 MiB file on one configuration.

usage: test_data.py ECFS_BINARY [unittest args: LossTest, DuringTest,
                                 UnreadableTest, BigTest]"""

import errno
import os
import random
import shutil
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

LOSS_CONFIGS = [(4, 2, "rs-cauchy"), (2, 1, "rs-vandermonde"),
                (6, 3, "rs-vandermonde")]
KINDS = ["rmdir", "empty", "chunkdel", "flip"]
SEQ_WRITE = 100003          # deliberately not a power of two


def strip_of(mnt, k):
    """The strip size new files get, from a probe file's layout."""
    probe = os.path.join(mnt, "probe")
    H.write_file(probe, b"probe")
    lay = H.layout(probe)
    strip = int(lay["strip_size"])
    if strip <= 0:
        raise AssertionError(f"layout of a new file has strip_size={strip}")
    return strip


def edge_sizes(strip, k):
    stripe = k * strip
    return sorted({0, 1, strip - 1, strip, stripe - 1, stripe, stripe + 1,
                   10 * stripe + 7})


def write_sequential(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        off = 0
        while off < len(data):
            off += os.write(fd, data[off:off + SEQ_WRITE])
    finally:
        os.close(fd)


def write_random(path, size, strip, seed):
    """Random-offset writes; returns the model of what the file holds."""
    rng = random.Random(seed)
    model = bytearray(size)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(max(4, min(40, size // 1000))):
            if size == 0:
                break
            off = rng.randrange(size)
            ln = rng.randrange(1, min(size - off, 3 * strip) + 1)
            data = rng.randbytes(ln)
            os.pwrite(fd, data, off)
            model[off:off + ln] = data
        if size and os.fstat(fd).st_size < size:
            os.pwrite(fd, model[size - 1:], size - 1)
    finally:
        os.close(fd)
    return bytes(model)


def write_set(mnt, prefix, strip, k, seed):
    """Writes the edge-size files under mnt/prefix; returns {rel: bytes}."""
    os.makedirs(os.path.join(mnt, prefix), exist_ok=True)
    files = {}
    for i, size in enumerate(edge_sizes(strip, k)):
        rel = f"{prefix}/seq-{size}"
        data = H.pattern(size, seed * 100 + i)
        write_sequential(os.path.join(mnt, rel), data)
        files[rel] = data
        rel = f"{prefix}/rnd-{size}"
        files[rel] = write_random(os.path.join(mnt, rel), size, strip,
                                  seed * 100 + 50 + i)
    return files


def verify_set(case, mnt, files, when):
    H.drop_caches()
    for rel, data in sorted(files.items()):
        case.assert_exact(os.path.join(mnt, rel), data, when)


def verify_set_past_m(case, mnt, files, stripe, must_fail):
    """m+1 members lost: each file reads exact or fails with EIO; files of a
    full stripe or more for which must_fail(rel) holds (m+1 of their chunks
    are gone, so nothing can decode them) must fail."""
    H.drop_caches()
    for rel, data in sorted(files.items()):
        err = case.assert_exact_or_eio(os.path.join(mnt, rel), data,
                                       "with m+1 members lost:")
        if must_fail(rel) and len(data) >= stripe:
            case.assertEqual(err, errno.EIO, f"{rel}: {len(data)} bytes read "
                             "back although m+1 members are lost")


def try_write(path, size):
    """Writes and fsyncs a new file; returns the errno of the first failing
    step or 0."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as e:
        return e.errno
    err = 0
    try:
        os.write(fd, H.pattern(size, 99))
        os.fsync(fd)
    except OSError as e:
        err = e.errno
    try:
        os.close(fd)
    except OSError as e:
        err = err or e.errno
    return err


class LossTest(H.MountedCase):
    """Up to m members lost before I/O, in each way; then m+1."""

    def run_loss(self, k, m, code, kind):
        n = k + m
        rng = random.Random(f"{k}-{m}-{code}-{kind}")
        v = self.volume(n)
        # noheal: the lost members must stay lost (test_heal.py has the heal)
        mnt = self.mount(v, f"k={k},m={m},code={code},noheal")
        strip = strip_of(mnt, k)
        stripe = k * strip
        files = write_set(mnt, "set", strip, k, seed=1)
        verify_set(self, mnt, files, "healthy:")

        order = list(range(n))
        rng.shuffle(order)
        lost, extra = order[:m], order[m]
        for idx in lost:
            v.lose(idx, kind, files=list(files) + ["probe"], seed=idx)
        verify_set(self, mnt, files, f"members {lost} lost ({kind}):")

        # writes while degraded: new files and an overwrite in place
        files.update(write_set(mnt, "degraded", strip, k, seed=2))
        big = f"set/seq-{10 * stripe + 7}"
        patch = H.pattern(stripe + 3, 3)
        with open(os.path.join(mnt, big), "r+b") as f:
            f.seek(strip // 2)
            f.write(patch)
        files[big] = (files[big][:strip // 2] + patch +
                      files[big][strip // 2 + len(patch):])
        verify_set(self, mnt, files, f"written while {lost} lost ({kind}):")
        self.assert_clean_unmount(v)

        # a lost disk comes back as an empty directory (a missing path is
        # refused at mount, with its name: see test_mount.py)
        for idx in lost:
            if not os.path.isdir(v.members[idx]):
                os.mkdir(v.members[idx], 0o755)
        self.mount(v, "noheal")            # the superblock has k, m, code
        verify_set(self, mnt, files, f"remounted with {lost} lost ({kind}):")
        if kind in ("rmdir", "empty"):
            hl = H.health(mnt)
            self.assertEqual(hl.get("state"), "degraded", hl)

        v.lose(extra, kind, files=list(files), seed=extra)
        def fails(rel):
            # chunkdel removed only the chunks of set/; flip may miss strips
            return kind in ("rmdir", "empty") or (kind == "chunkdel" and
                                                  rel.startswith("set/"))
        verify_set_past_m(self, mnt, files, stripe, must_fail=fails)
        if kind in ("rmdir", "empty"):
            err = try_write(os.path.join(mnt, "set/after-m-plus-1"), 3 * stripe)
            self.assertEqual(err, errno.EIO, "a write with m+1 members lost "
                             f"gave {errno.errorcode.get(err, err)}, not EIO")
            self.assertEqual(H.health(mnt).get("state"), "failed")
        os.stat(mnt)
        self.assert_clean_unmount(v)

    def test_lost_before_any_write(self):
        """Members gone right after the volume is created: every write
        is degraded from the start."""
        k, m = 4, 2
        v = self.volume(k + m)
        mnt = self.mount(v, f"k={k},m={m},code=rs-cauchy")
        v.lose(1, "rmdir")
        v.lose(4, "rmdir")
        strip = strip_of(mnt, k)
        files = write_set(mnt, "set", strip, k, seed=4)
        verify_set(self, mnt, files, "written with members 1, 4 gone:")
        self.assert_clean_unmount(v)
        os.mkdir(v.members[1])
        os.mkdir(v.members[4])
        self.mount(v)
        verify_set(self, mnt, files, "remounted:")
        self.assert_clean_unmount(v)


    def test_one_chunk_missing_on_each_member(self):
        """A chunk deleted on one member, in turn each: the file keeps its
        name, size and bytes (no member is the one that must answer)."""
        k, m = 4, 2
        v = self.volume(k + m)
        mnt = self.mount(v, f"k={k},m={m}")
        files = {f"f{i}-{size}": H.pattern(size, i * 7 + size)
                 for i in range(k + m) for size in (0, 1, 300001)}
        for rel, data in files.items():
            H.write_file(os.path.join(mnt, rel), data)
        for rel in files:
            v.lose(int(rel[1]), "chunkdel", files=[rel])
        H.drop_caches()
        for rel, data in sorted(files.items()):
            path = os.path.join(mnt, rel)
            try:
                size = os.stat(path).st_size
            except OSError as e:
                self.fail(f"{rel} (chunk deleted on member {rel[1]}): stat: {e}")
            self.assertEqual(size, len(data), rel)
            self.assert_exact(path, data, f"chunk deleted on member {rel[1]}:")
        self.assertEqual(sorted(os.listdir(mnt)), sorted(files))
        self.assert_clean_unmount(v)


def _add(k, m, code, kind):
    def test(self):
        self.run_loss(k, m, code, kind)
    test.__doc__ = f"k={k} m={m} {code}: members lost by {kind}"
    setattr(LossTest, f"test_{kind}_{code.replace('-', '_')}_{k}_{m}", test)


for _cfg in LOSS_CONFIGS:
    for _kind in KINDS:
        _add(*_cfg, _kind)


class DuringTest(H.MountedCase):
    """m members removed while a writer or a reader is running."""
    SIZE = 24 << 20
    CHUNK = 256 << 10

    def run_losing(self, v, worker, members):
        """Runs worker(step) in a thread; worker calls step(position) after
        each request.  At a quarter of the file the worker is held until the
        first of `members` is removed (so the loss surely falls inside the
        I/O, with the file open); the others are removed while it runs on.
        Returns the errors the worker met."""
        errors, reached, removed = [], threading.Event(), threading.Event()
        where = [0]

        def step(pos):
            where[0] = pos
            if pos >= self.SIZE // 4 and not reached.is_set():
                reached.set()
                removed.wait(60)

        def body():
            try:
                worker(step)
            except OSError as e:
                errors.append(f"at byte {where[0]}: {e}")
            finally:
                reached.set()
        t = threading.Thread(target=body)
        t.start()
        reached.wait(120)
        self.assertTrue(t.is_alive(), "the I/O ended before the loss")
        v.lose(members[0], "rmdir")
        removed.set()
        for idx in members[1:]:
            v.lose(idx, "rmdir")
        t.join()
        return errors

    def test_members_removed_during_write(self):
        k, m = 4, 2
        v = self.volume(k + m)
        mnt = self.mount(v, f"k={k},m={m},code=rs-cauchy")
        data = H.pattern(self.SIZE, 5)
        path = os.path.join(mnt, "written")
        def writer(step):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                off = 0
                while off < len(data):
                    off += os.pwrite(fd, data[off:off + self.CHUNK], off)
                    step(off)
                os.fsync(fd)
            finally:
                os.close(fd)
        self.assertEqual(self.run_losing(v, writer, [0, 3]), [])
        H.drop_caches()
        self.assert_exact(path, data, "written while members 0, 3 vanished:")
        self.assert_clean_unmount(v)
        os.mkdir(v.members[0])              # replaced disks
        os.mkdir(v.members[3])
        self.mount(v)
        self.assert_exact(path, data, "remounted:")
        self.assert_clean_unmount(v)

    def test_members_removed_during_read(self):
        k, m = 2, 1
        v = self.volume(k + m)
        mnt = self.mount(v, f"k={k},m={m},code=rs-vandermonde")
        data = H.pattern(self.SIZE, 6)
        path = os.path.join(mnt, "read")
        H.write_file(path, data, fsync=True)
        H.drop_caches()
        got = bytearray()

        def reader(step):
            fd = os.open(path, os.O_RDONLY)
            try:
                while True:
                    b = os.pread(fd, self.CHUNK, len(got))
                    if not b:
                        break
                    got.extend(b)
                    step(len(got))
            finally:
                os.close(fd)
        # the member holding position 0 (data) if the layout tells it
        data_member = int(H.layout(path).get("rotation", "1"))
        self.assertEqual(self.run_losing(v, reader, [data_member]), [])
        if bytes(got) != data:
            self.fail(f"read while member {data_member} vanished: " +
                      H.describe_mismatch(bytes(got), data))
        self.assert_clean_unmount(v)


class UnreadableTest(H.MountedCase):
    """Members made unreadable (chmod 000).  Root ignores file modes, so
    the daemon runs as root without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH
    (setpriv): then mode 000 stops it as it would stop any user."""

    def run_unreadable(self, how, what):
        if shutil.which("setpriv") is None:
            self.skipTest("setpriv (util-linux) not found")
        k, m = 4, 2
        v = self.volume(k + m)
        v.wrapper = H.DROP_DAC
        mnt = self.mount(v, f"k={k},m={m},code=rs-cauchy")
        strip = strip_of(mnt, k)
        files = write_set(mnt, "set", strip, k, seed=7)
        verify_set(self, mnt, files, "healthy:")
        for idx in (2, 5):
            v.lose(idx, how, files=list(files))
        try:
            verify_set(self, mnt, files, f"{what} mode 000 on members 2, 5:")
            files.update(write_set(mnt, "degraded", strip, k, seed=8))
            verify_set(self, mnt, files, f"written with {what} mode 000 on "
                       "members 2, 5:")
        finally:
            for idx in (2, 5):
                os.chmod(v.members[idx], 0o755)
        self.assert_clean_unmount(v)

    def test_member_directories_unreadable(self):
        self.run_unreadable("unreadable", "member directory")

    def test_chunk_files_unreadable(self):
        self.run_unreadable("chunkmode", "chunk files")


class BigTest(H.MountedCase):
    """100 MiB, sequential and then random overwrites, 2 of 6 lost."""

    def test_100_mib(self):
        k, m = 4, 2
        size = 100 << 20
        v = self.volume(k + m)
        mnt = self.mount(v, f"k={k},m={m},code=rs-cauchy")
        path = os.path.join(mnt, "big")
        model = bytearray(H.pattern(size, 8))
        H.write_file(path, model)
        rng = random.Random(9)
        with open(path, "r+b") as f:
            for _ in range(200):
                off = rng.randrange(size)
                data = rng.randbytes(rng.randrange(1, 300000))
                data = data[:size - off]
                f.seek(off)
                f.write(data)
                model[off:off + len(data)] = data
        model = bytes(model)
        H.drop_caches()
        self.assert_exact(path, model, "healthy:")
        v.lose(0, "rmdir")
        v.lose(5, "empty")
        H.drop_caches()
        self.assert_exact(path, model, "members 0, 5 lost:")
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
