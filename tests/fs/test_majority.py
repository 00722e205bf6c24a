# SPDX-License-Identifier: MIT
"""What one member says is not the volume's word, on real FUSE mounts.

Started by meson as `python3 test_majority.py ECFS ECFS_FSCK [unittest args]`.

- A member whose superblock differs from the one the other members carry
  (here the first member's checksum key) is failed, with the reason, and
  never followed: the volume mounts, reads exact and takes writes without
  it, and the online heal does not take it back.
- A flood of records in one member's .ecfs/missed/ naming every other
  member as having missed changes marks no more than m members healing:
  the volume stays readable and writable, and the records not believed
  are logged as refused, once.
"""

import os
import re
import sys
import time

import ecfs_harness as h

FSCK = None
K, M = 4, 2
OPTS = f"k={K},m={M},strip=4096"
FILES = {"one": 1, "odd": 4095, "mid": 100000, "dir/a": 70000, "big": 3 << 20}


class MajorityCase(h.MountedCase):

    def populated(self):
        """A new volume holding FILES, unmounted: the volume and the data."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = {}
        for i, (rel, size) in enumerate(FILES.items()):
            os.makedirs(os.path.dirname(os.path.join(mnt, rel)), exist_ok=True)
            data[rel] = h.pattern(size, 70 + i)
            h.write_file(os.path.join(mnt, rel), data[rel])
        self.assert_clean_unmount(v)
        return v, data

    def check_all(self, mnt, data, when):
        h.drop_caches()
        for rel, want in data.items():
            self.assert_exact(os.path.join(mnt, rel), want, when)

    def write_more(self, mnt, data):
        data["new"] = h.pattern(200000, 9)
        h.write_file(os.path.join(mnt, "new"), data["new"])


class SuperblockTest(MajorityCase):

    def test_member_with_another_key_is_failed(self):
        v, data = self.populated()
        sb = os.path.join(v.members[0], ".ecfs", "superblock")
        with open(sb) as f:
            text = f.read()
        forged = re.sub(r"checksum_key=[0-9a-f]+", "checksum_key=" + "ab" * 32, text)
        self.assertNotEqual(forged, text)
        with open(sb, "w") as f:
            f.write(forged)
        mnt = self.mount(v)
        rep = h.health(mnt)
        self.assertTrue(rep["member.0"].startswith("failed"), rep)
        self.assertIn("checksum key", rep["member.0"])
        self.assertIn("not followed", v.output())
        self.check_all(mnt, data, "member 0's key forged:")
        self.write_more(mnt, data)
        self.check_all(mnt, data, "member 0's key forged, written:")
        # the online heal looks at it (once a second) and leaves it
        for _ in range(100):
            rep = h.health(mnt)
            if "not taken back" in rep["member.0"]:
                break
            time.sleep(0.1)
        self.assertIn("not taken back", rep["member.0"], v.log())
        self.assertEqual(rep["members_failed"], "1")
        self.assert_clean_unmount(v)
        with open(sb) as f:
            self.assertEqual(f.read(), forged, "the daemon rewrote the member's superblock")


class MissedFloodTest(MajorityCase):

    def test_flood_of_missed_records(self):
        v, data = self.populated()
        missed = os.path.join(v.members[0], ".ecfs", "missed")
        os.makedirs(missed, exist_ok=True)
        seq = int(time.time() * 1e6) + 10 ** 12      # after any heal
        for i in range(1, K + M):
            for s in range(300):
                open(os.path.join(missed, f"{i}.{seq + s}"), "w").close()
        mnt = self.mount(v, "heal_rate=1")
        rep = h.health(mnt)
        healing = [i for i in range(K + M)
                   if rep.get(f"member.{i}", "").startswith("healing")]
        self.assertLessEqual(len(healing), M, rep)
        self.assertNotIn(0, healing, rep)
        out = v.output()
        claim = f"member 0 ({v.members[0]}) records members"
        self.assertEqual(out.count(claim), 1, out)
        self.assertIn("refused", out[out.index(claim):].splitlines()[0])
        self.check_all(mnt, data, "after the flood:")
        self.write_more(mnt, data)
        self.check_all(mnt, data, "after the flood, written:")
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = h.take_fsck_argument()
    sys.exit(h.main())
