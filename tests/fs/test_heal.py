# SPDX-License-Identifier: MIT
"""The daemon's online heal and self-healing reads, on real FUSE mounts.

Started by meson as `python3 test_heal.py ECFS ECFS_FSCK [unittest args]`.

- A member replaced by an empty directory while a writer and a reader run
  is rebuilt while mounted: the health xattr shows the heal and then its
  end, every byte (the writer's too) reads back exact, ecfs-fsck -n finds
  the unmounted volume clean, and every file reads exact with the m other
  members hidden (so the rebuilt member holds real data).
- A member that became unreachable (mode 000 for a daemon without
  CAP_DAC_OVERRIDE) and came back is rebuilt the same way, including what
  was written while it was away.
- A member away for a whole mount in which files changed comes back at
  the next mount marked healing and is rebuilt; one away while nothing
  changed is back at once.
- A read that meets a corrupt strip rewrites it: strips_healed moves and
  ecfs-fsck -n finds the volume clean afterwards.
"""

import os
import random
import shutil
import subprocess
import sys
import threading
import time
import zlib

import ecfs_harness as h

FSCK = None
K, M = 4, 2
STRIP = 4096
OPTS = f"k={K},m={M},strip={STRIP}"
FILES = {
    "empty": 0,
    "one": 1,
    "odd": 4095,
    "stripe": K * STRIP,
    "mid": 100000,
    "dir/a": 70000,
    "dir/sub/b": (1 << 20) + 17,
    "dir/sub/c": 5000,
    "big": 6 << 20,
}
HEAL_TIMEOUT = 60


def seed_of(rel):
    return zlib.crc32(rel.encode())


class HealCase(h.MountedCase):

    def populate(self, mnt):
        data = {}
        for rel, size in FILES.items():
            os.makedirs(os.path.dirname(os.path.join(mnt, rel)), exist_ok=True)
            data[rel] = h.pattern(size, seed_of(rel))
            h.write_file(os.path.join(mnt, rel), data[rel])
        os.symlink("dir/a", os.path.join(mnt, "link"))
        os.setxattr(os.path.join(mnt, "mid"), "user.color", b"blue")
        os.chmod(os.path.join(mnt, "odd"), 0o640)
        return data

    def fsck(self, v, *args, members=None):
        cmd = [FSCK, "--no-progress", *args,
               ":".join(members if members is not None else v.members)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def wait_healed(self, v, mnt, completed):
        """Polls the health xattr until `completed` heals are done, nothing
        is failed and the heal is idle; returns the heal lines seen."""
        seen = set()
        deadline = time.monotonic() + HEAL_TIMEOUT
        while time.monotonic() < deadline:
            rep = h.health(mnt)
            seen.add(rep.get("heal", "").split(" files=")[0])
            if (int(rep.get("heals_completed", 0)) >= completed
                    and rep.get("heal") == "idle"
                    and rep.get("members_failed") == "0"):
                return seen
            time.sleep(0.1)
        self.fail(f"no heal within {HEAL_TIMEOUT} s: {h.health(mnt)}\n{v.log()}")

    def change_while_away(self, mnt, data, seed):
        """A new file, an overwrite and a tree removed (populate's "gone")."""
        data["away"] = h.pattern(300000, seed)
        h.write_file(os.path.join(mnt, "away"), data["away"])
        data["mid"] = data["mid"][:5000] + b"changed" + data["mid"][5007:]
        with open(os.path.join(mnt, "mid"), "r+b") as f:
            f.seek(5000)
            f.write(b"changed")
        shutil.rmtree(os.path.join(mnt, "gone"))

    def check_all(self, root, data, msg):
        h.drop_caches()
        for rel, want in data.items():
            self.assert_exact(os.path.join(root, rel), want, msg)

    def check_clean_and_hidden(self, v, data, rebuilt):
        """fsck -n clean, then every file exact with m members other than
        the rebuilt one hidden (renamed away), mounted read-only."""
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, "fsck after the heal:\n" + r.stdout + r.stderr)
        others = [i for i in range(K + M) if i != rebuilt]
        for hide in (others[:M], others[-M:]):
            for i in hide:
                os.rename(v.members[i], v.members[i] + ".away")
            try:
                mnt = self.mount(v, "ro")
                self.assertEqual(h.health(mnt)["members_failed"], str(M))
                self.check_all(mnt, data, f"with members {hide} hidden:")
                self.assert_clean_unmount(v)
            finally:
                for i in hide:
                    os.rename(v.members[i] + ".away", v.members[i])


class OnlineHealTest(HealCase):

    def test_replace_during_io(self):
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = self.populate(mnt)
        stop = threading.Event()
        errors = []
        written = {}

        def writer():
            # Appends to (and overwrites in) one open file and makes new
            # ones, throughout.
            rng = random.Random(1)
            path = os.path.join(mnt, "w-append")
            got = b""
            n = 0
            with open(path, "wb", buffering=0) as f:
                while not stop.is_set():
                    piece = rng.randbytes(rng.randrange(1, 40000))
                    f.write(piece)
                    got += piece
                    # and an overwrite in place (a journaled commit)
                    at = rng.randrange(0, len(got))
                    patch = rng.randbytes(min(rng.randrange(1, 20000), len(got) - at))
                    os.pwrite(f.fileno(), patch, at)
                    got = got[:at] + patch + got[at + len(patch):]
                    name = f"w-new-{n}"
                    blob = h.pattern(rng.randrange(0, 50000), n)
                    h.write_file(os.path.join(mnt, name), blob)
                    written[name] = blob
                    n += 1
                    time.sleep(0.02)
            written["w-append"] = got

        def reader():
            while not stop.is_set():
                for rel in ("mid", "dir/sub/b", "big"):
                    got, err = h.read_all(os.path.join(mnt, rel))
                    if err or got != data[rel]:
                        errors.append(f"{rel}: err {err}, {len(got)} bytes")
                        return

        threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.3)
            # A new disk in place of the old one: the old directory moves
            # aside (rm -rf would race with the daemon writing into it).
            os.rename(v.members[1], v.members[1] + ".old")
            os.mkdir(v.members[1], 0o755)
            seen = self.wait_healed(v, mnt, 1)
            time.sleep(0.3)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        self.assertEqual(errors, [])
        self.assertTrue(any(s.startswith("member 1") for s in seen),
                        f"the heal never showed in the health xattr: {seen}")
        self.assertIn("w-append", written)
        data.update(written)
        self.check_all(mnt, data, "after the heal:")
        self.assertEqual(os.readlink(os.path.join(mnt, "link")), "dir/a")
        self.assert_clean_unmount(v)
        self.assertTrue(os.path.isfile(os.path.join(v.members[1], ".ecfs", "superblock")))
        self.check_clean_and_hidden(v, data, 1)

    def test_member_returns(self):
        v = self.volume(K + M)
        v.wrapper = h.DROP_DAC
        mnt = self.mount(v, OPTS + ",heal_rate=20")
        data = self.populate(mnt)
        os.makedirs(os.path.join(mnt, "gone", "sub"))
        h.write_file(os.path.join(mnt, "gone", "sub", "f"), b"bye" * 1000)
        os.chmod(v.members[2], 0)
        try:
            # Touch the member until the daemon sees it is gone.
            deadline = time.monotonic() + 10
            n = 0
            while h.health(mnt)["members_failed"] != "1" and time.monotonic() < deadline:
                h.write_file(os.path.join(mnt, f"probe-{n}"), b"x" * 100)
                data[f"probe-{n}"] = b"x" * 100
                n += 1
            self.assertEqual(h.health(mnt)["members_failed"], "1")
            # Written while it is away: it must catch up on these.
            self.change_while_away(mnt, data, 7)
            os.mkdir(os.path.join(mnt, "newdir"))
        finally:
            os.chmod(v.members[2], 0o755)
        self.wait_healed(v, mnt, 1)
        self.check_all(mnt, data, "after the member came back:")
        # removed while it was away: gone from it too (set aside whole)
        self.assertNotIn("gone", os.listdir(mnt))
        self.assertFalse(os.path.exists(os.path.join(v.members[2], "gone")))
        self.assert_clean_unmount(v)
        self.check_clean_and_hidden(v, data, 2)

    def test_member_back_at_next_mount(self):
        """A member away for a whole mount: if nothing was written meanwhile
        it is back at once; if something was, the others recorded it failed
        (.ecfs/missed), so the next mount marks it healing (no lookup
        reaches it) and the heal rebuilds what it missed."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = self.populate(mnt)
        os.makedirs(os.path.join(mnt, "gone", "sub"))
        h.write_file(os.path.join(mnt, "gone", "sub", "f"), b"bye" * 1000)
        self.assert_clean_unmount(v)
        away = v.members[1] + ".away"
        os.rename(v.members[1], away)
        mnt = self.mount(v)
        self.check_all(mnt, data, "member 1 away, read only:")
        # the heal looks at the failed members once a second: the mount's
        # own opens (its intent log) must not count as changes missed
        time.sleep(1.5)
        self.assert_clean_unmount(v)
        os.rename(away, v.members[1])
        mnt = self.mount(v)
        self.assertEqual(h.health(mnt)["state"], "healthy", "nothing was missed")
        self.assert_clean_unmount(v)

        os.rename(v.members[1], away)
        mnt = self.mount(v)
        self.change_while_away(mnt, data, 8)
        self.assert_clean_unmount(v)
        os.rename(away, v.members[1])
        mnt = self.mount(v, "heal_rate=1")
        rep = h.health(mnt)
        self.assertEqual(rep["member.1"].split()[0], "healing", rep)
        self.assertIn("member 1 (" + v.members[1] + ") is back with an older copy", v.output())
        # (a listing may still show it: the limits in ecfs(8))
        self.assertFalse(os.path.lexists(os.path.join(mnt, "gone", "sub", "f")),
                         "a lookup reached the stale member")
        self.check_all(mnt, data, "member 1 back, stale:")
        self.wait_healed(v, mnt, 1)
        self.assertFalse(os.path.exists(os.path.join(v.members[1], "gone")))
        self.assert_clean_unmount(v)
        for i, m in enumerate(v.members):
            left = [e for e in os.listdir(os.path.join(m, ".ecfs", "missed"))
                    if e.startswith("1.")]
            self.assertEqual(left, [], f"member {i} still records member 1 failed")
        mnt = self.mount(v)
        self.assertEqual(h.health(mnt)["state"], "healthy")
        self.assert_clean_unmount(v)
        self.check_clean_and_hidden(v, data, 1)

    def test_unmount_mid_heal_resumes(self):
        """A heal cut short by an unmount is taken up at the next mount."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS + ",heal_rate=1")
        data = self.populate(mnt)
        os.rename(v.members[3], v.members[3] + ".old")
        os.mkdir(v.members[3], 0o755)
        deadline = time.monotonic() + 20
        while "rebuilding" not in h.health(mnt).get("heal", ""):
            self.assertLess(time.monotonic(), deadline, h.health(mnt))
            time.sleep(0.05)
        self.assertEqual(h.health(mnt)["member.3"].split()[0], "healing")
        self.assertEqual(h.health(mnt)["state"], "degraded")
        self.assert_clean_unmount(v)
        self.assertTrue(os.path.exists(os.path.join(v.members[3], ".ecfs", "heal")))
        mnt = self.mount(v)
        self.wait_healed(v, mnt, 1)
        self.assertFalse(os.path.exists(os.path.join(v.members[3], ".ecfs", "heal")))
        self.check_all(mnt, data, "after the resumed heal:")
        self.assert_clean_unmount(v)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, "fsck after the heal:\n" + r.stdout + r.stderr)


class HealHangTest(HealCase):
    """A member that stops answering while the heal works on it (ECFS_FAULT
    hang, builds with -Dfault_injection) is given up after -o timeout: the
    heal thread goes on, the volume keeps serving from the others and the
    unmount does not wait for the stuck call."""

    def test_replacement_hangs_when_formatted(self):
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = self.populate(mnt)
        self.assert_clean_unmount(v)
        shutil.rmtree(v.members[3])
        os.mkdir(v.members[3], 0o755)
        mnt = self.mount_faulty(v, "member=3,op=write,hang", "timeout=1")
        # the heal takes the empty member at once; its superblock write hangs
        self.check_member_3_given_up(v, mnt, data, "superblock")

    def check_member_3_given_up(self, v, mnt, data, not_made):
        """The heal gives member 3 up in its revive, the volume serves and
        takes writes without it, unmounts cleanly, and member 3 has no
        .ecfs/not_made."""
        deadline = time.monotonic() + 30
        while "no answer while probed for the online heal" not in v.output():
            self.assertLess(time.monotonic(), deadline, v.log())
            time.sleep(0.1)
        rep = h.health(mnt)
        self.assertEqual(rep["member.3"].split()[0], "failed", rep)
        self.assertEqual(rep["heal"], "idle", rep)
        self.check_all(mnt, data, "with member 3 given up:")
        h.write_file(os.path.join(mnt, "after"), b"x" * 70000)
        self.assert_clean_unmount(v)
        self.assertFalse(os.path.exists(os.path.join(v.members[3], ".ecfs", not_made)))

    def test_returning_member_hangs_when_locked(self):
        """Member 3's directory is away at the mount and comes back whole:
        the heal takes it back, and the first change it makes there, the
        lock, hangs.  That call is given up after the timeout as any other
        (before, it held the volume's lock, and with it every operation
        that takes it), and the volume keeps serving."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = self.populate(mnt)
        self.assert_clean_unmount(v)
        away = v.members[3] + "-away"
        os.rename(v.members[3], away)
        mnt = self.mount_faulty(v, "member=3,op=meta,hang", "timeout=1")
        os.rename(away, v.members[3])
        self.check_member_3_given_up(v, mnt, data, "heal")

    def test_other_member_hangs_mid_heal(self):
        """Member 1's reads hang part-way through the rebuild of member 3:
        member 1 is given up, the heal goes on from the k others and
        completes, and the volume unmounts cleanly."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = {}
        for i in range(100):
            rel = f"f/{i:03d}"
            os.makedirs(os.path.join(mnt, "f"), exist_ok=True)
            data[rel] = h.pattern(20000 + i, i)
            h.write_file(os.path.join(mnt, rel), data[rel])
        self.assert_clean_unmount(v)
        shutil.rmtree(v.members[3])
        os.mkdir(v.members[3], 0o755)
        # past the mount's reads of member 1 (its intent log: 64), well
        # within the rebuild's (several for each of the 100 files)
        mnt = self.mount_faulty(v, "member=1,op=read,after=150,hang", "timeout=1")
        deadline = time.monotonic() + HEAL_TIMEOUT
        while True:
            rep = h.health(mnt)
            if int(rep.get("heals_completed", 0)) >= 1 and rep.get("heal") == "idle":
                break
            self.assertLess(time.monotonic(), deadline, f"{rep}\n{v.log()}")
            time.sleep(0.1)
        out = v.output()
        back = out.find("member 3 (" + v.members[3] + ") is back in service")
        lost = out.find("member 1 (" + v.members[1] + ") failed: no answer")
        self.assertTrue(0 <= back < lost, out)
        self.assertEqual(rep["member.1"].split()[0], "failed", rep)
        self.assertEqual(rep["member.3"].split()[0], "up", rep)
        self.check_all(mnt, data, "member 3 healed, member 1 given up:")
        self.assert_clean_unmount(v)
        # member 3 holds the data: readable with members 1 and 0 away
        v.hide(0)
        v.hide(1)
        try:
            mnt = self.mount(v, "ro")
            self.check_all(mnt, data, "members 0 and 1 hidden:")
            self.assert_clean_unmount(v)
        finally:
            v.unhide(0)
            v.unhide(1)


class SelfHealingReadTest(HealCase):

    def test_flipped_strip_is_rewritten(self):
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = self.populate(mnt)
        rel = "dir/sub/b"
        rot = int(h.layout(os.path.join(mnt, rel))["rotation"])
        # Position 0 (a data strip), stripe 3.
        member = rot % (K + M)
        off = h.chunk_offsets(v.chunk_path(member, rel), 3)[1] + 100
        with open(v.chunk_path(member, rel), "r+b") as f:
            f.seek(off)
            old = f.read(16)
            f.seek(off)
            f.write(bytes(b ^ 0xFF for b in old))
        before = int(h.health(mnt)["strips_healed"])
        self.check_all(mnt, {rel: data[rel]}, "reading around the bad strip:")
        rep = h.health(mnt)
        self.assertGreater(int(rep["strips_healed"]), before, rep)
        self.assertEqual(rep["members_failed"], "0")
        self.assert_clean_unmount(v)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, "the bad strip was not rewritten:\n"
                         + r.stdout + r.stderr)

    def test_failed_member_not_written(self):
        """More corruption than the code can see around is not 'healed':
        a stripe with fewer than k good strips reads EIO and nothing is
        written to the members."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = self.populate(mnt)
        rel = "mid"
        rot = int(h.layout(os.path.join(mnt, rel))["rotation"])
        for pos in range(M + 1):
            path = v.chunk_path((rot + pos) % (K + M), rel)
            off = h.chunk_offsets(path, 0)[1] + 50  # stripe 0's strip
            with open(path, "r+b") as f:
                f.seek(off)
                f.write(b"\xAA" * 32)
        snapshot = {}
        for i in range(K + M):
            with open(v.chunk_path(i, rel), "rb") as f:
                snapshot[i] = f.read()
        h.drop_caches()
        err = self.assert_exact_or_eio(os.path.join(mnt, rel), data[rel])
        self.assertNotEqual(err, 0, "read more than m bad strips without error")
        self.assertEqual(h.health(mnt)["strips_healed"], "0")
        for i in range(K + M):
            with open(v.chunk_path(i, rel), "rb") as f:
                self.assertEqual(f.read(), snapshot[i], f"member {i} was written")
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = h.take_fsck_argument()
    sys.exit(h.main())
