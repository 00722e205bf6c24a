# SPDX-License-Identifier: MIT
"""A symlinked metadata directory on a member (docs/SECURITY.md, "Metadata
paths").

Started by meson as `python3 test_metadata_links.py ECFS [unittest args]`.

A k=4, m=2 volume is written and unmounted; on one member `.ecfs/intent`
(then `.ecfs/journal`, then `.ecfs` itself) is replaced by a symlink to a
directory outside every member that holds a copy of what was there, so a
daemon that followed the link would find it usable.  The next mount keeps
the daemon up with that member failed for a reason that names the path;
writes, overwrites (through the journal), renames, mkdir and unlink
(through the intent log) leave the outside directory byte-identical, and
every file reads back exact, also after a remount.
"""

import os
import shutil
import sys

import ecfs_harness as h

K, M = 4, 2
OPTS = f"k={K},m={M},strip=4096"
STRIPE = K * 4096
BAD = 1  # the member whose metadata directory is a link
FILES = {"small": 3000, "stripe": STRIPE, "big": 5 * STRIPE + 77, "d/inner": 40000}


class MetadataLinkTest(h.MountedCase):

    def build(self):
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = {}
        for i, (rel, size) in enumerate(FILES.items()):
            os.makedirs(os.path.dirname(os.path.join(mnt, rel)), exist_ok=True)
            data[rel] = h.pattern(size, i + 1)
            h.write_file(os.path.join(mnt, rel), data[rel], fsync=True)
        # an overwrite now, so that the journal folder exists on the members
        data["big"] = self.overwrite(mnt, "big", data["big"], STRIPE + 5, 7)
        self.assert_clean_unmount(v)
        return v, data

    def overwrite(self, mnt, rel, old, off, seed):
        patch = h.pattern(9000, seed)
        fd = os.open(os.path.join(mnt, rel), os.O_RDWR)
        try:
            self.assertEqual(os.pwrite(fd, patch, off), len(patch))
            os.fsync(fd)
        finally:
            os.close(fd)
        return old[:off] + patch + old[off + len(patch):]

    def link_out(self, v, rel):
        """Replaces member BAD's .ecfs/<rel> (.ecfs for "") by a symlink to
        a copy of it outside every member; returns that copy's path."""
        outside = os.path.join(v.base, "outside")
        place = os.path.join(v.members[BAD], ".ecfs", rel) if rel else \
            os.path.join(v.members[BAD], ".ecfs")
        if os.path.isdir(place):
            shutil.copytree(place, outside, symlinks=True)
            shutil.rmtree(place)
        else:
            os.mkdir(outside)
        os.symlink(outside, place)
        return outside, place

    def work(self, mnt, data):
        """Writes, overwrites, renames, mkdir, unlink through the mount."""
        data["big"] = self.overwrite(mnt, "big", data["big"], 100, 11)
        data["stripe"] = self.overwrite(mnt, "stripe", data["stripe"], 0, 12)
        data["new"] = h.pattern(25000, 13)
        h.write_file(os.path.join(mnt, "new"), data["new"], fsync=True)
        os.rename(os.path.join(mnt, "small"), os.path.join(mnt, "d", "moved"))
        data["d/moved"] = data.pop("small")
        os.mkdir(os.path.join(mnt, "e"))
        os.rename(os.path.join(mnt, "d"), os.path.join(mnt, "e", "d"))
        data = {("e/" + k if k.startswith("d/") else k): b for k, b in data.items()}
        h.write_file(os.path.join(mnt, "gone"), b"x" * 5000)
        os.unlink(os.path.join(mnt, "gone"))
        os.sync()
        return data

    def check(self, rel, shown):
        v, data = self.build()
        outside, place = self.link_out(v, rel)
        before = h.tree_snapshot(outside)
        mnt = self.mount(v)
        rep = h.health(mnt)
        data = self.work(mnt, data)
        for r, want in data.items():
            self.assert_exact(os.path.join(mnt, r), want)
        self.assert_clean_unmount(v)
        self.assertEqual(h.tree_snapshot(outside), before, "written outside the members")
        why = rep.get(f"member.{BAD}", "")
        self.assertTrue(why.startswith("failed"), rep)
        self.assertIn(shown, why)
        self.assertIn("symlink", why)
        self.assertTrue(os.path.islink(place))
        mnt = self.mount(v)
        for r, want in data.items():
            self.assert_exact(os.path.join(mnt, r), want, "(remounted)")
        self.assert_clean_unmount(v)
        self.assertEqual(h.tree_snapshot(outside), before, "written outside the members")

    def test_intent_is_a_link(self):
        self.check("intent", ".ecfs/intent")

    def test_journal_is_a_link(self):
        self.check("journal", ".ecfs/journal")

    def test_ecfs_is_a_link(self):
        self.check("", ".ecfs is a symlink")


if __name__ == "__main__":
    sys.exit(h.main())
