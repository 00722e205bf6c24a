# SPDX-License-Identifier: MIT
"""Members on other hosts: 4+2 volumes whose members are sshfs mounts from
six sshd hosts, each in a network namespace of its own on a veth link
(ecfs_harness.Host).  Faults are made on the path, as they happen:

  test_write_read       files written and read back exact, also after a
                        remount; the chunks are on the hosts.
  test_slow_host        one host's link limited by tc tbf (this kernel has
                        no netem; a real link, unlike ECFS_FAULT's delay): reads exact, its latency stands out in
                        user.ecfs.health and stripes are decoded around it.
  test_link_cut_mid_read  a host's link cut while a file is read: no error
                        reaches the reader, the member is failed with a
                        reason, and nothing is written beneath its mount
                        point once sshfs gives up.
  test_sshd_stopped     a host's sshd stopped (SIGSTOP) under -o timeout=3:
                        reads and writes go on, the member is failed; once
                        continued, the volume unmounts cleanly.
  test_sshd_stopped_fsck  ecfs-fsck -y --timeout=1 with a host's sshd
                        stopped before it starts: the member is given up
                        when the volume opens and named, the others are
                        repaired, and the run ends (exit 5).
  test_sshfs_died       a member's sshfs killed (ENOTCONN on every call):
                        failed at once, not after the timeout, and named;
                        also when no I/O touches it (test_sshfs_died_idle).
  test_host_back_stale  a host cut mid-write comes back with its old copy:
                        its chunks are stale and never read as current,
                        and the heal rebuilds them (test_host_back_stale_healed).
  test_hosts_keep_no_other_mount  a volume mounted before the hosts
                        start unmounts cleanly while they run (their sshd
                        shares this mount namespace, holds no copy of it).
  test_no_xattrs        sshfs keeps no xattrs: setting one, or an ACL,
                        fails with EOPNOTSUPP, nothing is listed, ACLs read
                        as the mode, the umask and the permission checks
                        work as without ACLs, ecfs's own attributes still read.

usage: test_remote.py ECFS_BINARY ECFS_FSCK [unittest args]"""

import errno
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

FSCK = None
K, M = 4, 2
N = K + M
OPTS = f"k={K},m={M}"
MIB = 1 << 20


class RemoteTest(H.MountedCase):

    def remote(self, opts=""):
        v = self.volume(N, member_fs="sshfs")
        mnt = self.mount(v, OPTS + ("," + opts if opts else ""))
        return v, mnt

    def write(self, mnt, name, size, seed, fsync=True):
        data = H.pattern(size, seed)
        H.write_file(os.path.join(mnt, name), data, fsync=fsync)
        return data

    def check(self, mnt, files, when):
        H.drop_caches()
        for name, data in files.items():
            self.assert_exact(os.path.join(mnt, name), data, when)

    def assert_failed(self, mnt, idx, not_why=None):
        rep = H.health(mnt)
        state = rep.get(f"member.{idx}", "")
        self.assertTrue(state.startswith("failed "), f"member {idx}: {rep}")
        why = state.partition(": ")[2]
        self.assertTrue(why, f"member {idx} failed without a reason: {state!r}")
        if not_why:
            self.assertNotIn(not_why, why, f"member {idx}: {state!r}")
        self.assertEqual(rep.get("members_failed"), "1", rep)
        return why

    def wait_failed(self, mnt, idx, timeout=30):
        """The member is failed by then (the fault has already been hit)."""
        deadline = time.monotonic() + timeout
        while not H.health(mnt).get(f"member.{idx}", "").startswith("failed"):
            if time.monotonic() > deadline:
                self.fail(f"member {idx} not failed: {H.health(mnt)}")
            time.sleep(0.1)

    def test_write_read(self):
        v, mnt = self.remote()
        files = {"empty": b""}
        open(os.path.join(mnt, "empty"), "wb").close()
        for i, size in enumerate((1, 4095, 4 * 65536 + 7, 3 * MIB + 1)):
            files[f"f{i}"] = self.write(mnt, f"f{i}", size, 10 + i)
        os.mkdir(os.path.join(mnt, "d"))
        files["d/g"] = self.write(mnt, "d/g", 200000, 20)
        self.check(mnt, files, "over sshfs:")
        self.assertEqual(H.health(mnt).get("state"), "healthy")
        self.assert_clean_unmount(v)
        for host in v.hosts:
            self.assertIn("d", os.listdir(host.served), f"{host.served}: no chunks")
        self.mount(v)
        self.check(mnt, files, "after a remount:")
        self.assert_clean_unmount(v)

    def test_hosts_keep_no_other_mount(self):
        """A volume mounted before hosts start still ends at its unmount:
        the hosts' sshd must not hold a copy of that FUSE mount (a mount
        namespace of their own would, until the hosts stop)."""
        local = self.volume(N, member_fs="dir")
        lmnt = self.mount(local, OPTS)
        data = self.write(lmnt, "f", 100000, 7)
        v, mnt = self.remote()
        for host in v.hosts:
            for pid in host.pids():
                self.assertEqual(os.readlink(f"/proc/{pid}/ns/mnt"),
                                 os.readlink("/proc/self/ns/mnt"),
                                 f"host {host.ns}: pid {pid} in a mount namespace of its own")
        self.assert_exact(os.path.join(lmnt, "f"), data)
        self.assert_clean_unmount(local)
        self.assert_clean_unmount(v)

    def test_no_xattrs(self):
        v, mnt = self.remote()
        f = os.path.join(mnt, "f")
        self.write(mnt, "f", 1000, 1)
        for call in (lambda: os.setxattr(f, "user.a", b"1"),
                     lambda: os.setxattr(f, "security.x", b"1"),
                     lambda: os.getxattr(f, "user.a")):
            with self.assertRaises(OSError) as cm:
                call()
            self.assertEqual(cm.exception.errno, errno.EOPNOTSUPP)
        self.assertEqual(os.listxattr(f), [])
        r = subprocess.run(["setfacl", "-m", "u:1234:r", f], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Operation not supported", r.stderr)
        r = subprocess.run(["getfacl", "-n", "-p", f], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout.splitlines()[3:6]),
                         (0, ["user::rw-", "group::r--", "other::r--"]), r.stdout)
        self.assertIn("code=", H.getxattr_text(f, "user.ecfs.layout"))
        closed = os.path.join(mnt, "closed")
        os.mkdir(closed, 0o750)
        os.chmod(closed, 0o750)

        def as_nobody():
            old = os.umask(0o027)
            os.close(os.open(os.path.join(mnt, "mine"), os.O_CREAT | os.O_WRONLY, 0o666))
            os.umask(old)
            try:
                os.listdir(closed)
                denied = False
            except PermissionError:
                denied = True
            return (oct(os.stat(os.path.join(mnt, "mine")).st_mode), os.stat(f).st_size,
                    denied)
        os.chmod(mnt, 0o777)
        self.assertEqual(H.run_as(H.NOBODY, H.NOBODY, as_nobody), ("0o100640", 1000, True))
        self.assert_clean_unmount(v)

    def test_slow_host(self):
        """Member 1's link at 1 Mbit/s (the others run at memory speed):
        the reads are exact and go around it (read twice: the second read
        starts with its latency known).  Eight files: of each, member 1 may
        hold only parity, which reads never need (odds 1/3, from the random
        file id's rotation), of all eight once in 6561 runs."""
        v, mnt = self.remote()
        files = {f"big{i}": self.write(mnt, f"big{i}", MIB, 30 + i) for i in range(8)}
        v.hosts[1].slow("1mbit")
        self.check(mnt, files, "one host slow:")
        self.check(mnt, files, "one host slow, again:")
        rep = H.health(mnt)
        lat = [int(rep[f"member.{i}.latency_us"]) for i in range(N)]
        others = max(lat[:1] + lat[2:])
        self.assertGreater(lat[1], others, f"slow member's latency: {rep}")
        cost = [int(rep[f"member.{i}.read_us"].split()[0]) for i in range(N)]
        self.assertGreater(cost[1], max(cost[:1] + cost[2:]), f"slow member's read cost: {rep}")
        self.assertGreater(int(rep["strips_decoded"]), 0,
                           f"never read around the slow member: {rep}")
        self.assertEqual(rep.get("members_failed"), "0", rep)
        self.assert_clean_unmount(v)

    def test_link_cut_mid_read(self):
        v, mnt = self.remote()
        want = self.write(mnt, "big", 16 * MIB, 40)
        H.drop_caches()
        host = v.hosts[2]
        got = bytearray()
        with open(os.path.join(mnt, "big"), "rb", buffering=0) as f:
            while True:
                b = f.read(MIB)
                if not b:
                    break
                got += b
                if len(got) == 2 * MIB:
                    host.cut()
        if bytes(got) != want:
            self.fail("read across the cut: " + H.describe_mismatch(bytes(got), want))
        self.wait_failed(mnt, 2)
        self.assert_failed(mnt, 2)
        # sshfs gave up (or will): the mount point below must stay empty.
        files = {"big": want, "new": self.write(mnt, "new", MIB + 3, 41)}
        self.check(mnt, files, "host 2 cut:")
        if not host.mounted():
            self.assertEqual(os.listdir(host.path), [], "written beneath the mount point")
        self.assert_clean_unmount(v)

    def test_link_cut_mid_write(self):
        """A host whose link goes down in the middle of a file's write:
        every write and the fsync succeed, the member is failed, and the
        file reads back exact from the others, also after a remount
        without that host."""
        v, mnt = self.remote()
        want = H.pattern(16 * MIB, 42)
        host = v.hosts[4]
        with open(os.path.join(mnt, "big"), "wb", buffering=0) as f:
            for off in range(0, len(want), MIB):
                self.assertEqual(f.write(want[off:off + MIB]), MIB)
                if off == 2 * MIB:
                    host.cut()
            os.fsync(f.fileno())
        self.wait_failed(mnt, 4)
        self.assert_failed(mnt, 4)
        self.check(mnt, {"big": want}, "written across host 4's cut:")
        self.assert_clean_unmount(v)
        self.mount(v)
        self.check(mnt, {"big": want}, "remounted without host 4:")
        self.assert_clean_unmount(v)

    def test_sshd_stopped(self):
        v, mnt = self.remote("timeout=3")
        files = {"old": self.write(mnt, "old", 2 * MIB, 50)}
        host = v.hosts[3]
        host.signal(signal.SIGSTOP)
        try:
            self.check(mnt, files, "sshd 3 stopped:")
            files["new"] = self.write(mnt, "new", 2 * MIB + 5, 51)
            self.check(mnt, files, "written with sshd 3 stopped:")
            self.wait_failed(mnt, 3)
            self.assert_failed(mnt, 3)
        finally:
            host.signal(signal.SIGCONT)
        self.check(mnt, files, "sshd 3 continued:")
        self.assert_clean_unmount(v)

    def test_sshd_stopped_fsck(self):
        v, mnt = self.remote()
        files = {"a": self.write(mnt, "a", MIB + 3, 60),
                 "b": self.write(mnt, "b", 300000, 61)}
        self.assert_clean_unmount(v)
        os.unlink(v.chunk_path(1, "a"))
        host = v.hosts[3]
        host.signal(signal.SIGSTOP)
        try:
            # well above the timeout and the run, far below "forever"
            r = subprocess.run([FSCK, "--no-progress", "--timeout=1", "-y", ":".join(v.members)],
                               capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            self.fail("ecfs-fsck waited on the stopped host")
        finally:
            host.signal(signal.SIGCONT)
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        # given up when the volume is opened, or in the run: named either way
        self.assertIn(f"member: volume: member 3 ({v.members[3]}): no answer", r.stdout)
        self.assertIn("chunk-missing: /a: member 1", r.stdout)
        self.assertTrue(os.path.exists(v.chunk_path(1, "a")))
        mnt = self.mount(v, OPTS)
        self.check(mnt, files, "after ecfs-fsck, sshd 3 continued:")
        self.assert_clean_unmount(v)

    def test_sshfs_died(self):
        """sshfs killed: every call on the member fails with ENOTCONN.  The
        first write after it (its create asks every member) fails the
        member for that error; the timeout is so long (600 s) that nothing
        else can explain it.  The log names the member and the error."""
        v, mnt = self.remote("timeout=600")
        files = {"f": self.write(mnt, "f", 3 * MIB, 60)}
        v.hosts[4].kill_sshfs()
        files["g"] = self.write(mnt, "g", MIB, 61)
        why = self.assert_failed(mnt, 4)
        self.assertIn(os.strerror(errno.ENOTCONN), why)
        self.check(mnt, files, "sshfs 4 dead:")
        files["h"] = self.write(mnt, "h", MIB + 1, 62)
        self.check(mnt, files, "written with sshfs 4 dead:")
        named = [ln for ln in v.output().splitlines()
                 if v.members[4] in ln and os.strerror(errno.ENOTCONN) in ln]
        self.assertTrue(named, "the log does not name the member and its error:\n"
                        + v.output())
        self.assert_clean_unmount(v)

    def test_sshfs_died_idle(self):
        """sshfs killed while nothing is read or written: the daemon's own
        look at the member roots (once a second) fails it for ENOTCONN, not
        as a removed directory and not after the timeout."""
        v, mnt = self.remote("timeout=600")
        files = {"f": self.write(mnt, "f", 2 * MIB, 63)}
        v.hosts[0].kill_sshfs()
        self.wait_failed(mnt, 0, timeout=60)
        why = self.assert_failed(mnt, 0)
        self.assertIn(os.strerror(errno.ENOTCONN), why)
        self.check(mnt, files, "sshfs 0 dead:")
        self.assert_clean_unmount(v)

    def stale_host(self):
        """Host 5 drops while a file is written (the write goes on without
        it) and another is overwritten; it comes back with its old copy
        after a remount.  Returns the volume, mounted, and the files."""
        v, mnt = self.remote()
        files = {"a": self.write(mnt, "a", MIB, 70)}
        host = v.hosts[5]
        want = H.pattern(8 * MIB, 71)
        fd = os.open(os.path.join(mnt, "b"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for off in range(0, len(want), MIB):
                if off == 2 * MIB:
                    threading.Timer(0.05, host.cut).start()
                os.pwrite(fd, want[off:off + MIB], off)
            os.fsync(fd)
        finally:
            os.close(fd)
        files["b"] = want
        files["a"] = self.write(mnt, "a", MIB, 72)   # overwritten while it is away
        self.check(mnt, files, "host 5 dropped:")
        self.wait_failed(mnt, 5)
        self.assert_clean_unmount(v)
        host.unmount()
        host.uncut()
        host.mount()                       # back, with what it had
        self.mount(v)
        return v, mnt, files

    def test_host_back_stale(self):
        """Its stale chunks are never read as current."""
        v, mnt, files = self.stale_host()
        self.check(mnt, files, "host 5 back, stale:")
        self.assert_clean_unmount(v)

    def test_host_back_stale_healed(self):
        """The mount marks the host that came back healing (the others
        recorded it as failed): it answers no lookup, and the heal rebuilds
        its stale chunks, after which it serves with two other hosts gone.
        The heal's records go with it."""
        v, mnt, files = self.stale_host()
        self.assertIn(f"member 5 ({v.members[5]}) is back with an older copy", v.output())
        self.check(mnt, files, "host 5 back, stale:")
        self.wait_healed(mnt, timeout=30)
        self.check(mnt, files, "host 5 healed:")
        self.assert_clean_unmount(v)
        for i in range(N):
            missed = os.path.join(v.members[i], ".ecfs", "missed")
            left = [e for e in os.listdir(missed) if e.startswith("5.")] \
                if os.path.isdir(missed) else []
            self.assertEqual(left, [], f"member {i} still records member 5 as failed")
        v.hide(0)
        v.hide(1)
        self.mount(v)
        self.assertNotIn("is back with an older copy", v.output())
        self.check(mnt, files, "hosts 0 and 1 gone, 5 healed:")
        self.assert_clean_unmount(v)

if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main(needs_remote=True))
