# SPDX-License-Identifier: MIT
"""What one user's load may cost the others, on real FUSE mounts.

Started by meson as `python3 test_bounds.py ECFS [unittest args]`.

- Each open file holds a descriptor on every member, but not for long
  when idle: when the pool of descriptors is full (the daemon's open-file
  limit less some headroom), an idle file's are closed and reopened at its
  next use.  So one user holding many more open files than the limit
  divided by the number of members can read and write each of them, and
  another user's reads meanwhile meet no error.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

LIMIT = 256        # the daemon's open-file limit, soft and hard
HOLD = 200         # files one user keeps open: more than LIMIT / (n + 1)
HOLDER = 65534     # nobody
READER = 65533
SIZE = 5000        # two stripes and a bit of k=2 with 4 KiB strips


def content(i):
    return H.pattern(SIZE, 1000 + i)


def read_through(fd):
    """The file's bytes from the daemon, not the kernel's page cache."""
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    return os.pread(fd, SIZE, 0)


def hold_files(top, ready_w, go_r, done_w):
    """In a child as HOLDER: opens and writes HOLD files, keeps them open,
    says so on ready_w, waits for go_r, then reads back and rewrites each
    through its descriptor; the verdict goes to done_w."""
    fds = []
    try:
        for i in range(HOLD):
            fd = os.open(os.path.join(top, f"f{i}"), os.O_CREAT | os.O_RDWR, 0o600)
            fds.append(fd)
            os.pwrite(fd, content(i), 0)
        os.write(ready_w, b"r")
        os.read(go_r, 1)
        for i, fd in enumerate(fds):
            got = read_through(fd)
            if got != content(i):
                raise AssertionError(f"f{i}: read back {H.describe_mismatch(got, content(i))}")
            os.pwrite(fd, b"again", 10)
            want = content(i)[:10] + b"again" + content(i)[15:]
            if read_through(fd) != want:
                raise AssertionError(f"f{i}: the rewrite did not read back")
        verdict = b"ok"
    except BaseException as e:  # reported to the parent
        verdict = f"{type(e).__name__}: {e} (after {len(fds)} opens)".encode()
        os.write(ready_w, b"r")
        os.read(go_r, 1)  # the files stay open while the other user reads
    for fd in fds:
        os.close(fd)
    os.write(done_w, verdict)


def read_others(mnt, names):
    """As READER: every byte of the files named."""
    return {n: H.read_all(os.path.join(mnt, n)) for n in names}


class OpenFilesTest(H.MountedCase):
    def test_many_open_files_of_one_user_spare_the_others(self):
        v = self.volume(3)
        v.wrapper = ["prlimit", f"--nofile={LIMIT}:{LIMIT}", "--"]
        mnt = self.mount(v, "k=2,m=1,strip=4K")
        others = {f"other{i}": H.pattern(20000, i) for i in range(5)}
        for name, data in others.items():
            H.write_file(os.path.join(mnt, name), data)
            os.chmod(os.path.join(mnt, name), 0o644)
        top = os.path.join(mnt, "held")
        os.mkdir(top, 0o700)
        os.chown(top, HOLDER, HOLDER)

        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        done_r, done_w = os.pipe()
        pid = H.start_as(HOLDER, HOLDER, hold_files, top, ready_w, go_r, done_w)
        os.close(ready_w)
        os.close(go_r)
        os.close(done_w)
        try:
            self.assertEqual(os.read(ready_r, 1), b"r", "the holder died")
            # the holder's files are open now, all of them
            got = H.run_as(READER, READER, read_others, mnt, list(others))
            for name, data in others.items():
                body, err = got[name]
                self.assertEqual(err, 0, f"{name}: {os.strerror(err)} for another user")
                self.assertTrue(body == data, f"{name}: " + H.describe_mismatch(body, data))
        finally:
            os.write(go_w, b"g")
            os.close(go_w)
            verdict = b""
            while True:
                chunk = os.read(done_r, 4096)
                if not chunk:
                    break
                verdict += chunk
            os.waitpid(pid, 0)
            os.close(ready_r)
            os.close(done_r)
        self.assertEqual(verdict.decode(), "ok", v.log())
        # and after the closes, every file reads back through a fresh open
        for i in range(HOLD):
            want = content(i)[:10] + b"again" + content(i)[15:]
            self.assert_exact(os.path.join(top, f"f{i}"), want)
        self.assertNotIn("is not the one this open file had", v.output())
        self.assert_clean_unmount(v)

    def test_parked_chunks_are_reopened_by_identity(self):
        v = self.volume(3)
        v.wrapper = ["prlimit", f"--nofile={LIMIT}:{LIMIT}", "--"]
        mnt = self.mount(v, "k=2,m=1,strip=4K")
        fds = []
        try:
            for i in range(HOLD // 2):
                fd = os.open(os.path.join(mnt, f"f{i}"), os.O_CREAT | os.O_RDWR, 0o600)
                fds.append(fd)
                os.pwrite(fd, content(i), 0)
            # f0 and f1 are parked by now (the least recently used)
            os.rename(os.path.join(mnt, "f0"), os.path.join(mnt, "renamed"))
            chunk = v.chunk_path(0, "f1")
            with open(chunk, "rb") as f:
                copy = f.read()
            os.unlink(chunk)
            with open(chunk, "wb") as f:  # the same bytes, another inode
                f.write(copy)
            for i, fd in enumerate(fds):
                self.assertEqual(read_through(fd), content(i), f"f{i}")
        finally:
            for fd in fds:
                os.close(fd)
        self.assertIn("f1: the chunk on member 0", v.output())
        self.assertIn("is not the one this open file had", v.output())
        self.assertNotIn("f0: the chunk", v.output())
        self.assert_exact(os.path.join(mnt, "renamed"), content(0))
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
