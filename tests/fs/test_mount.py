# SPDX-License-Identifier: MIT
"""Mounting: creation, remount, members in another order, a member of
another volume, a second daemon on the same volume, and bad command lines
(exit 1 with one clear message, nothing mounted, nothing created), and an
aborted connection that leaves a file open (its buffered writes stored).

usage: test_mount.py ECFS_BINARY [unittest args]"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402


def populate(mnt):
    files = {}
    for i, size in enumerate((0, 1, 5000, 300000, 2 << 20)):
        rel = f"f{i}"
        files[rel] = H.pattern(size, 20 + i)
        H.write_file(os.path.join(mnt, rel), files[rel])
    os.mkdir(os.path.join(mnt, "dir"))
    os.symlink("f1", os.path.join(mnt, "dir", "link"))
    return files


class MountTest(H.MountedCase):
    def check_files(self, mnt, files, when):
        H.drop_caches()
        for rel, data in files.items():
            self.assert_exact(os.path.join(mnt, rel), data, when)
        self.assertEqual(os.readlink(os.path.join(mnt, "dir", "link")), "f1")

    def test_create_remount_and_superblocks(self):
        v = self.volume(5)
        mnt = self.mount(v, "k=3,m=2,code=rs-vandermonde")
        files = populate(mnt)
        self.assertEqual(sorted(os.listdir(mnt)), sorted(list(files) + ["dir"]))
        self.assert_clean_unmount(v)
        for p in v.members:
            self.assertTrue(os.path.isdir(os.path.join(p, ".ecfs")),
                            f"{p} has no .ecfs metadata folder")
            for rel in files:
                self.assertTrue(os.path.isfile(os.path.join(p, rel)),
                                f"no chunk file {rel} on member {p}")
        self.mount(v)
        self.check_files(mnt, files, "remounted:")
        lay = H.layout(os.path.join(mnt, "f4"))
        self.assertEqual((lay.get("code"), lay.get("k"), lay.get("m")),
                         ("rs-vandermonde", "3", "2"), lay)
        self.assert_clean_unmount(v)

    def test_members_in_another_order(self):
        v = self.volume(6)
        mnt = self.mount(v, "k=4,m=2,code=rs-cauchy")
        files = populate(mnt)
        self.assert_clean_unmount(v)
        for order in ([5, 4, 3, 2, 1, 0], [1, 0, 2, 3, 4, 5],
                      [2, 3, 4, 5, 0, 1]):
            with self.subTest(order=order):
                self.mount(v, members=[v.members[i] for i in order])
                self.check_files(mnt, files, f"members given as {order}:")
                lay = H.layout(os.path.join(mnt, "f4"))
                for idx in range(6):
                    entry = lay.get(f"member.{idx}", "")
                    self.assertIn(v.members[idx], entry,
                                  f"member.{idx} of the layout: {lay}")
                self.assert_clean_unmount(v)

    def test_member_of_another_volume_is_refused(self):
        a = self.volume(3)
        self.mount(a, "k=2,m=1")
        populate(a.mnt)
        self.assert_clean_unmount(a)
        b = self.volume(3)
        self.mount(b, "k=2,m=1")
        self.assert_clean_unmount(b)
        foreign = b.members[1]
        members = [a.members[0], foreign, a.members[2]]
        mounted = a.start("", members=members)
        self.assertFalse(mounted, "mounted with a member of another volume")
        self.assertEqual(a.last_exit, 1, a.log())
        self.assertIn(foreign, a.log(), "the refusal does not name the member")
        self.assertFalse(H.is_mounted(a.mnt))
        self.mount(a)                        # the right members still work
        self.assert_clean_unmount(a)

    def test_second_daemon_is_refused(self):
        v = self.volume(3)
        self.mount(v, "k=2,m=1")
        other = os.path.join(v.base, "mnt2")
        os.mkdir(other)
        try:
            r = subprocess.run([H.ECFS, "-f", ":".join(v.members), other],
                               capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            subprocess.run(["fusermount3", "-u", "-z", other])
            self.fail("a second daemon mounted the same volume")
        finally:
            if H.is_mounted(other):
                subprocess.run(["fusermount3", "-u", "-z", other])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertTrue(r.stderr.strip(), "refused without a message")
        self.assertTrue(v.alive())
        self.assert_clean_unmount(v)

    def test_bad_options(self):
        # (case, -o options, members, a word the message must contain)
        cases = [
            ("k=0", "k=0,m=1", 1, "k"),
            ("m=0", "k=3,m=0", 3, "m"),
            ("unknown code", "k=2,m=1,code=no-such-code", 3, "no-such-code"),
            ("k+m != members", "k=2,m=2", 3, "3"),
            ("raid6-pq needs m=2", "k=2,m=1,code=raid6-pq", 3, "raid6-pq"),
            ("strip not a size", "k=2,m=1,strip=abc", 3, "strip"),
            ("strip not a multiple of the code's block", "k=2,m=1,"
             "code=rs-vandermonde,w=16,strip=4097", 3, "strip"),
            # bit-matrix codes align to w x packet (here 7 x 2048 bytes);
            # checked where the volume is created, not only on the command line
            ("strip not a multiple of a bit-matrix code's block",
             "k=6,m=2,code=liberation,strip=4096", 8, "strip"),
            ("liberation needs a prime w", "k=6,m=2,code=liberation,w=8", 8,
             "liberation"),
            ("unknown checksum", "k=2,m=1,checksum=no-such-hash", 3,
             "no-such-hash"),
            ("unknown option", "k=2,m=1,no_such_option=1", 3,
             "no_such_option"),
            ("timeout not a number", "k=2,m=1,timeout=soon", 3, "timeout"),
            ("negative timeout", "k=2,m=1,timeout=-1", 3, "timeout"),
            ("tune.slow_readaround neither on nor off",
             "k=2,m=1,tune.slow_readaround=maybe", 3, "tune.slow_readaround"),
            ("tune.slow_readaround empty", "k=2,m=1,tune.slow_readaround=", 3,
             "tune.slow_readaround"),
            ("tune.hedge neither on nor off", "k=2,m=1,tune.hedge=1", 3, "tune.hedge"),
            ("tune.spin negative", "k=2,m=1,tune.spin=-1", 3, "tune.spin"),
            ("a tuning switch outside tune.", "k=2,m=1,spin=0", 3, "spin"),
            ("write_quorum 0", "k=2,m=1,write_quorum=0", 3, "write_quorum"),
            ("write_quorum k", "k=2,m=1,write_quorum=2", 3, "write_quorum"),
            ("write_quorum n+1", "k=2,m=1,write_quorum=4", 3, "write_quorum"),
            ("write_quorum a word", "k=2,m=1,write_quorum=abc", 3, "write_quorum"),
            ("write_quorum without the heal", "k=2,m=2,write_quorum=3,noheal", 4,
             "write_quorum"),
        ]
        for name, opts, n, word in cases:
            with self.subTest(case=name, options=opts):
                v = self.volume(n)
                mounted = v.start(opts)
                self.assertFalse(mounted, f"-o {opts}: mounted")
                msg = v.output().strip()
                self.assertEqual(v.last_exit, 1, f"-o {opts}: {msg}")
                self.assertTrue(msg, f"-o {opts}: no message")
                self.assertLessEqual(len(msg.splitlines()), 2,
                                     f"-o {opts}: not one clear line:\n{msg}")
                self.assertIn(word, msg)
                for p in v.members:
                    self.assertEqual(os.listdir(p), [], f"-o {opts}: {p} was "
                                     f"written to before the refusal ({msg})")

        def refused(members, mnt, word):
            v = self.volume(3)
            cmd = [H.ECFS, "-f", "-o", "k=2,m=1", ":".join(members(v))]
            cmd += [mnt(v)] if mnt(v) else []
            mounted = v.start(cmd=cmd)
            self.assertFalse(mounted, "mounted")
            msg = v.output().strip()
            self.assertEqual(v.last_exit, 1, msg)
            self.assertTrue(msg, "no message")
            self.assertIn(word(v), msg)
        with self.subTest(case="missing mountpoint"):
            refused(lambda v: v.members, lambda v: None, lambda v: "mount")
        with self.subTest(case="nonexistent mountpoint"):
            refused(lambda v: v.members, lambda v: v.mnt + "-nowhere",
                    lambda v: v.mnt + "-nowhere")
        with self.subTest(case="nonexistent member"):
            refused(lambda v: v.members[:2] + [v.members[2] + "-nowhere"],
                    lambda v: v.mnt, lambda v: v.members[2] + "-nowhere")

    def test_slow_readaround_on_and_off(self):
        """-o tune.slow_readaround=on and =off, -o tune.hedge=on and =off,
        and -o tune.spin all mount, and a file written under one reads back
        under the others."""
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1,tune.slow_readaround=off")
        data = H.pattern(300000, 7)
        H.write_file(os.path.join(mnt, "f"), data, fsync=True)
        self.assert_clean_unmount(v)
        for opt in ("tune.slow_readaround=on", "tune.slow_readaround=off", "tune.hedge=on",
                    "tune.hedge=off", "tune.spin=0"):
            mnt = self.mount(v, opt)
            H.drop_caches()
            self.assert_exact(os.path.join(mnt, "f"), data, f"{opt}:")
            self.assert_clean_unmount(v)

    def test_background_mode(self):
        """Without -f the daemon detaches and the mount stays usable."""
        v = self.volume(3)
        r = subprocess.run([H.ECFS, "-o", "k=2,m=1", ":".join(v.members),
                            v.mnt], capture_output=True, text=True, timeout=30)
        try:
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(H.is_mounted(v.mnt))
            data = H.pattern(100000, 30)
            H.write_file(os.path.join(v.mnt, "f"), data)
            H.drop_caches()
            self.assert_exact(os.path.join(v.mnt, "f"), data)
        finally:
            subprocess.run(["fusermount3", "-u", v.mnt], capture_output=True)
            if H.is_mounted(v.mnt):
                subprocess.run(["fusermount3", "-u", "-z", v.mnt])

    def test_second_mount_refused_and_stale_lock_taken_over(self):
        """A second daemon on the same members is refused, naming the
        first; after the first is SIGKILLed, the next mount takes the
        volume over (the lock is an OFD lock: it dies with its process)."""
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        data = H.pattern(300000, 8)
        H.write_file(os.path.join(mnt, "f"), data, fsync=True)
        other = os.path.join(v.base, "mnt2")
        os.mkdir(other)
        r = subprocess.run([H.ECFS, "-f", ":".join(v.members), other],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"in use by pid {v.proc.pid}", r.stderr)
        self.assertFalse(H.is_mounted(other))
        v.proc.kill()
        v.proc.wait(timeout=20)
        v.proc = None
        subprocess.run(["fusermount3", "-u", "-z", v.mnt], capture_output=True)
        mnt = self.mount(v)
        self.assert_exact(os.path.join(mnt, "f"), data, "after the SIGKILL:")
        self.assert_clean_unmount(v)

    def test_aborted_connection_keeps_buffered_writes(self):
        """An abort through /sys/fs/fuse/connections drops the RELEASE of a
        file still open (as an unmount racing a request can): the daemon
        exits 0 and still stores what it buffered for that file."""
        ctl = "/sys/fs/fuse/connections"
        with open("/proc/self/mounts") as f:
            have_ctl = any(line.split()[2] == "fusectl" for line in f)
        if not have_ctl and subprocess.run(
                ["mount", "-t", "fusectl", "none", ctl],
                capture_output=True).returncode != 0:
            self.skipTest("no fusectl: cannot abort a connection")
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1,strip=65536")
        data = H.pattern(5000, 40)  # well short of a stripe: buffered
        fd = os.open(os.path.join(mnt, "open"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            conn = os.minor(os.stat(mnt).st_dev)
            with open(f"{ctl}/{conn}/abort", "w") as f:
                f.write("1")
            v.proc.wait(timeout=20)
        finally:
            try:
                os.close(fd)
            except OSError:
                pass  # ENOTCONN: the connection is gone
        self.assertEqual(v.proc.returncode, 0, v.log())
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
        for _ in range(50):  # the lazy detach completes asynchronously
            if not H.is_mounted(mnt):
                break
            time.sleep(0.1)
        self.mount(v)
        self.assert_exact(os.path.join(mnt, "open"), data, "after the abort:")
        self.assert_clean_unmount(v)
        self.assertIn("closed 1 open files the kernel did not release", v.log())


if __name__ == "__main__":
    sys.exit(H.main())
