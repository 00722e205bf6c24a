# SPDX-License-Identifier: MIT
"""Writes past a slow member (-o write_quorum=N), on real FUSE mounts.

Started by meson as `python3 test_quorum.py ECFS ECFS_FSCK [unittest args]`;
needs a fault-injection build (ECFS_FAULT's delay rule makes one member's
writes slow).  On 4+2 members with write_quorum=5:

- a large sequential write leaves the slow member out once its writes are
  judged slow: the health report marks its write_us slow, the headers of
  the other chunks name it in `missed`, and every byte reads back exact;
  the online heal catches the file up once it is closed, clears the bit,
  and the file then survives any m losses;
- a file renamed before it is caught up is found by a verify pass;
- a file not caught up before the unmount (recorded as a missed change)
  survives N-k = 1 more loss, not 2 (that read fails with EIO, never
  with wrong bytes), and the next mount with the heal rebuilds the member;
- under write_quorum=all the slow member keeps getting every write;
- bad values of the option are refused with a clear message.
"""

import errno
import os
import subprocess
import sys
import time

import ecfs_harness as h

FSCK = None
K, M = 4, 2
N = K + M
QUORUM = 5
SLOW = 3                        # the member whose writes are slow
OPTS = f"k={K},m={M}"
SIZE = 24 * 1024 * 1024 + 1234  # a dozen commits of 8 stripes and a tail
DELAY = f"member={SLOW},op=write,delay=20"
WAIT = 90


def header(v, i, rel):
    """(generation, missed) of the chunk header of rel on member i."""
    with open(v.chunk_path(i, rel), "rb") as f:
        b = f.read(192)
    return (int.from_bytes(b[96:104], "little"), int.from_bytes(b[104:112], "little"))


class QuorumCase(h.MountedCase):

    def write_open(self, path, data):
        """Writes data to a new file and fsyncs it; returns the open fd."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for off in range(0, len(data), 1 << 20):
            os.write(fd, data[off:off + (1 << 20)])
        os.fsync(fd)
        return fd

    def assert_left_out(self, v, mnt, rel):
        """Member SLOW is out of rel's writes: named in the others' headers,
        its write cost marked slow in the health report."""
        rep = h.health(mnt)
        self.assertTrue(rep[f"member.{SLOW}.write_us"].endswith(" slow"), rep)
        self.assertEqual(rep["members_failed"], "0", rep)
        for i in range(N):
            if i != SLOW:
                gen, missed = header(v, i, rel)
                self.assertTrue(missed >> SLOW & 1,
                                f"member {i}'s header of {rel}: missed {missed:#x}")
        self.assertIn("writing past slow members", v.output())

    def assert_caught_up(self, v, rel):
        for i in range(N):
            gen, missed = header(v, i, rel)
            self.assertEqual(missed, 0, f"member {i}'s header of {rel} after the heal")

    def read_with_failed(self, v, rel, data, failed, want_eio=False):
        """Mounts with the members in `failed` failing every call (and no
        heal) and reads rel: exact, or (want_eio) EIO with nothing wrong."""
        rules = ";".join(f"member={i},errno=EIO" for i in failed)
        mnt = self.mount_faulty(v, rules, "noheal")
        path = os.path.join(mnt, rel)
        h.drop_caches()
        if want_eio:
            self.assertEqual(self.assert_exact_or_eio(path, data, f"{failed} failed:"),
                             errno.EIO,
                             f"{rel} read whole with {failed} failed and member {SLOW} stale")
        else:
            self.assert_exact(path, data, f"members {failed} failed:")
        self.assert_clean_unmount(v)

    def wait_for(self, mnt, what, fn):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            rep = h.health(mnt)
            if fn(rep):
                return rep
            time.sleep(0.2)
        self.fail(f"{what}: not within {WAIT} s: {h.health(mnt)}")


class QuorumTest(QuorumCase):

    def test_slow_member_left_out_and_caught_up(self):
        """The slow member is left out, then caught up by the heal once the
        file is closed; the file then survives m losses."""
        v = self.volume(N)
        mnt = self.mount_faulty(v, DELAY, f"{OPTS},write_quorum={QUORUM}")
        data = h.pattern(SIZE, 71)
        path = os.path.join(mnt, "f")
        fd = self.write_open(path, data)
        try:
            self.assert_left_out(v, mnt, "f")
            h.drop_caches()
            self.assert_exact(path, data, "written past a slow member:")
            self.assertEqual(h.health(mnt)["heal_catchup"], "1")
        finally:
            os.close(fd)
        self.wait_for(mnt, "the catch-up", lambda r: r["heal_catchup"] == "0"
                      and "caught up" in v.output())
        self.assertIn(f"/f caught up on members {1 << SLOW:#x}", v.output())
        self.assert_caught_up(v, "f")
        h.drop_caches()
        self.assert_exact(path, data, "caught up:")
        self.assert_clean_unmount(v)
        # the slow member's chunk is whole: any two others may go
        self.read_with_failed(v, "f", data, [i for i in range(N) if i != SLOW][:2])
        self.read_with_failed(v, "f", data, [SLOW, (SLOW + 1) % N])

    def test_renamed_before_caught_up(self):
        """A file renamed before it is caught up is not found under its
        name: a verify pass over the volume finds it and catches it up."""
        v = self.volume(N)
        mnt = self.mount_faulty(v, DELAY, f"{OPTS},write_quorum={QUORUM}")
        data = h.pattern(SIZE // 4, 74)
        fd = self.write_open(os.path.join(mnt, "f"), data)
        self.assert_left_out(v, mnt, "f")
        os.close(fd)
        os.rename(os.path.join(mnt, "f"), os.path.join(mnt, "g"))
        self.wait_for(mnt, "the verify pass", lambda r: r["heal_catchup"] == "0"
                      and "verify pass done" in v.output())
        self.wait_for(mnt, "the heal's end", lambda r: r["heal"] == "idle")
        self.assert_caught_up(v, "g")
        h.drop_caches()
        self.assert_exact(os.path.join(mnt, "g"), data, "renamed, caught up:")
        self.assert_clean_unmount(v)
        self.read_with_failed(v, "g", data, [i for i in range(N) if i != SLOW][:2])

    def test_not_caught_up_before_unmount(self):
        """A file left out of and unmounted at once: N-k = 1 loss is
        survived, 2 are not (EIO, no wrong byte); the next mount rebuilds
        the member from the record the unmount left."""
        v = self.volume(N)
        mnt = self.mount_faulty(v, DELAY, f"{OPTS},write_quorum={QUORUM}")
        data = h.pattern(SIZE, 72)
        fd = self.write_open(os.path.join(mnt, "f"), data)
        self.assert_left_out(v, mnt, "f")
        os.close(fd)
        self.assert_clean_unmount(v)
        out = v.output()
        caught = "/f caught up on" in out    # only if the unmount came late
        if not caught:
            self.assertIn(f"member {SLOW} is not caught up", out)
            others = [i for i in range(N) if i != SLOW]
            self.read_with_failed(v, "f", data, others[:1])
            self.read_with_failed(v, "f", data, others[:2], want_eio=True)
            mnt = self.mount(v)
            self.wait_healed(mnt, timeout=WAIT)
            self.assert_clean_unmount(v)
        self.assert_caught_up(v, "f")
        self.read_with_failed(v, "f", data, [i for i in range(N) if i != SLOW][2:4])
        r = subprocess.run([FSCK, "--no-progress", "-n", ":".join(v.members)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_quorum_all_writes_every_member(self):
        """Under write_quorum=all (the default) a slow member gets every
        write: nobody is named missed, though its write cost shows."""
        v = self.volume(N)
        mnt = self.mount_faulty(v, DELAY, OPTS)
        data = h.pattern(SIZE, 73)
        fd = self.write_open(os.path.join(mnt, "f"), data)
        rep = h.health(mnt)
        os.close(fd)
        costs = [int(rep[f"member.{i}.write_us"].split()[0]) for i in range(N)]
        self.assertGreater(costs[SLOW], 2 * max(c for i, c in enumerate(costs) if i != SLOW),
                           rep)
        self.assertFalse(rep[f"member.{SLOW}.write_us"].endswith("slow"), rep)
        for i in range(N):
            self.assertEqual(header(v, i, "f")[1], 0, f"member {i} under write_quorum=all")
        self.assertNotIn("writing past slow members", v.output())
        self.assert_clean_unmount(v)
        self.read_with_failed(v, "f", data, [i for i in range(N) if i != SLOW][:2])

    def test_bad_values(self):
        """0, k, n+1 and words are refused at mount with a clear message,
        on a new volume and on one that exists (k from its superblock), and
        with noheal (nothing would catch the members up)."""
        v = self.volume(N)
        for opts in (f"{OPTS},write_quorum=0", f"{OPTS},write_quorum={K}",
                     f"{OPTS},write_quorum={N + 1}", f"{OPTS},write_quorum=abc",
                     f"{OPTS},write_quorum=5x", f"{OPTS},write_quorum={QUORUM},noheal"):
            with self.subTest(opts=opts):
                self.assertFalse(v.start(opts), f"mounted with {opts}")
                self.assertNotEqual(v.last_exit, 0)
                self.assertIn("write_quorum=", v.output())
                if opts.endswith(("=0", "=abc", "=5x")):  # not a number of members
                    self.assertIn("give all or a number of members", v.output())
                elif "noheal" not in opts:  # a number outside k+1..n
                    self.assertIn(f"from k+1 = {K + 1} to n = {N}", v.output())
        self.mount(v, OPTS)
        self.assert_clean_unmount(v)
        for q in (K, 1):
            self.assertFalse(v.start(f"write_quorum={q}"), f"mounted with write_quorum={q}")
            self.assertIn(f"write_quorum={q}: give all or a number of members from k+1 = "
                          f"{K + 1} to n = {N}", v.output())
        for q in ("all", str(N), str(QUORUM)):
            self.mount(v, f"write_quorum={q}")
            self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = h.take_fsck_argument()
    sys.exit(h.main())
