# SPDX-License-Identifier: MIT
"""fsx (the file system exerciser, `cargo install fsx`) on a mounted volume:
random reads, writes, truncates, mmap reads and writes, fallocate, fsync,
close/reopen, each read checked against fsx's own model of the file.
100,000 operations on a healthy volume, and 100,000 during which m members
are lost (after 30,000 operations): removed (rm -rf) when they are
directories; when they are ext4 disks (ECFS_TEST_MEMBER_FS=ext4) the disks
die, answering EIO to every call from then on; when they are on sshfs
(ECFS_TEST_MEMBER_FS=sshfs) their hosts' links are cut.  Small strips (4 KiB) so that the
1 MiB test file spans many stripes and most operations cross strip and
stripe boundaries.  Exit 77 (skip) if fsx is not installed.

usage: test_fsx.py ECFS_BINARY [unittest args: FsxTest.test_healthy, ...]
environment: FSX (path of fsx), FSX_OPS (operation count, default 100000)"""

import collections
import os
import re
import shutil
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

OPS = int(os.environ.get("FSX_OPS", "100000"))
CONFIG = """\
flen = 1048576
[opsize]
max = 65536
[weights]
close_open = 1
read = 10
write = 10
mapread = 5
mapwrite = 5
invalidate = 1
truncate = 2
fsync = 1
fdatasync = 1
posix_fallocate = 1
punch_hole = 0
sendfile = 1
copy_file_range = 1
posix_fadvise = 1
"""
OP_LINE = re.compile(r"\]\s+(\d+)\s")


def find_fsx():
    cands = [os.environ.get("FSX"), shutil.which("fsx")]
    for home in (os.environ.get("CARGO_HOME"),
                 os.path.expanduser("~/.cargo"), "/root/.cargo",
                 "/usr/local/cargo"):
        if home:
            cands.append(os.path.join(home, "bin", "fsx"))
    for c in cands:
        if c and os.access(c, os.X_OK):
            return c
    return None


FSX = find_fsx()


def member_tmpdir():
    """Members on tmpfs (/dev/shm) unless ECFS_TEST_TMPDIR says otherwise:
    fsx's msync and fsync calls become member fsyncs, which on a disk made
    the run three times slower (and the budget is minutes)."""
    if os.environ.get("ECFS_TEST_TMPDIR"):
        return None
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


class FsxTest(H.MountedCase):
    def run_fsx(self, v, seed, at_op=None, action=None):
        """Runs fsx to completion; calls action() once fsx reports operation
        at_op.  Returns (exit status, last lines of its output)."""
        conf = os.path.join(v.base, "fsx.toml")
        with open(conf, "w") as f:
            f.write(CONFIG)
        art = os.path.join(v.base, "artifacts")
        os.mkdir(art)
        cmd = [FSX, "-v", "-N", str(OPS), "-S", str(seed), "-f", conf,
               "-P", art, os.path.join(v.mnt, "fsxfile")]
        # fsx's verdict (miscompare offset, good and bad bytes) comes
        # before its LOG DUMP of the last operations: keep both
        tail, verdict = collections.deque(maxlen=30), []
        fired = threading.Event()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                errors="replace")
        try:
            for line in proc.stdout:
                tail.append(line.rstrip())
                if "[INFO" not in line and len(verdict) < 40 and not (
                        verdict and "LOG DUMP" in verdict[-1]):
                    verdict.append(line.rstrip())
                if at_op is not None and not fired.is_set():
                    mo = OP_LINE.search(line)
                    if mo and int(mo.group(1)) >= at_op:
                        fired.set()
                        action()
            rc = proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        if at_op is not None:
            self.assertTrue(fired.is_set(), "fsx ended before the removal")
        return rc, "\n".join(verdict + ["..."] + list(tail))

    def check(self, rc, out):
        self.assertEqual(rc, 0, f"fsx failed (exit {rc}):\n{out}")
        self.assertIn("All operations completed A-OK", out)

    def test_healthy(self):
        v = self.volume(6, tmpdir=member_tmpdir())
        self.mount(v, "k=4,m=2,code=rs-cauchy,strip=4096")
        rc, out = self.run_fsx(v, seed=1)
        self.check(rc, out)
        self.assert_clean_unmount(v)

    def test_degraded(self):
        """Two of six members lost at operation 30,000: removed (rm -rf),
        disks that die, or hosts cut off."""
        v = self.volume(6, tmpdir=member_tmpdir())
        self.mount(v, "k=4,m=2,code=rs-vandermonde,strip=4096")
        how = ("dead" if v.disks[0] is not None else
               "cut" if v.hosts[0] is not None else "rmdir")

        def remove():
            v.lose(1, how)
            v.lose(4, how)
        rc, out = self.run_fsx(v, seed=2, at_op=min(30000, OPS // 3),
                               action=remove)
        self.check(rc, out)
        h = H.health(v.mnt)
        self.assertEqual(h.get("state"), "degraded", h)
        self.assertEqual(h.get("members_failed"), "2", h)
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    if FSX is None:
        print("SKIP: fsx not found (install it with `cargo install fsx`, or "
              "set FSX=/path/to/fsx)", file=sys.stderr)
        sys.exit(H.SKIP)
    sys.exit(H.main())
