# SPDX-License-Identifier: MIT
"""ecfs-fsck on real volumes.

Started by meson as `python3 test_fsck.py ECFS ECFS_FSCK [unittest args]`.
Each case builds a volume by mounting it and writing files of several
sizes, unmounts, damages the members the way disks and people do, and then
checks the fsck(8) contract: `-n` reports the damage (exit 4), `-y` repairs
it (exit 1), a second check is clean (exit 0), and every file reads back
byte-exact from every subset of k members (the other m are renamed away and
the volume is mounted degraded).  Damage beyond m must be reported with the
file and byte range, exit 4, and leave the members byte-identical.
"""

import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "fs"))
import ecfs_harness as h  # noqa: E402

FSCK = None
K, M = 4, 2
OPTS = f"k={K},m={M},strip=4096"
STRIPE = K * 4096
# Sizes around the stripe (16 KiB) and record-group (64 stripes) edges.
FILES = {
    "empty": 0,
    "one": 1,
    "odd": 4095,
    "stripe": STRIPE,
    "mid": 100000,
    "dir/a": 70000,
    "dir/sub/b": (1 << 20) + 17,
    "dir/sub/c": 5000,
}


def seed_of(rel):
    return zlib.crc32(rel.encode())


def member_hashes(v, members=None):
    """sha256 of every entry on the members (the metadata folder aside)."""
    out = {}
    for i in members if members is not None else range(len(v.members)):
        root = v.members[i]
        for dirpath, dirs, files in os.walk(root):
            if dirpath == root and ".ecfs" in dirs:
                dirs.remove(".ecfs")
            for name in files + dirs:
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                key = (i, os.path.relpath(p, root))
                if os.path.islink(p):
                    out[key] = ("link", os.readlink(p))
                elif os.path.isfile(p):
                    with open(p, "rb") as f:
                        out[key] = (st.st_mode, hashlib.sha256(f.read()).hexdigest())
                else:
                    out[key] = (st.st_mode,)
    return out


class FsckCase(h.MountedCase):

    def build(self, n=K + M, opts=OPTS):
        v = self.volume(n)
        mnt = self.mount(v, opts)
        data = {}
        for rel, size in FILES.items():
            os.makedirs(os.path.dirname(os.path.join(mnt, rel)), exist_ok=True)
            data[rel] = h.pattern(size, seed_of(rel))
            h.write_file(os.path.join(mnt, rel), data[rel])
        os.symlink("dir/a", os.path.join(mnt, "link"))
        os.setxattr(os.path.join(mnt, "mid"), "user.color", b"blue")
        os.chmod(os.path.join(mnt, "odd"), 0o640)
        self.assert_clean_unmount(v)
        return v, data

    def build_with_hard_link(self):
        """build(), plus "hard": a second name of dir/a."""
        v, data = self.build()
        mnt = self.mount(v)
        os.link(os.path.join(mnt, "dir/a"), os.path.join(mnt, "hard"))
        data["hard"] = data["dir/a"]
        self.assert_clean_unmount(v)
        return v, data

    def fsck(self, v, *args, members=None):
        cmd = [FSCK, "--no-progress", *args,
               ":".join(members if members is not None else v.members)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def fsck_json(self, v, *args):
        r = self.fsck(v, "--json", *args)
        try:
            rep = json.loads(r.stdout)
        except ValueError:
            self.fail(f"not JSON: {r.stdout!r} {r.stderr!r}")
        self.assertEqual(rep["exit"], r.returncode)
        return r.returncode, rep

    def cycle(self, v, kinds):
        """-n reports (exit 4, every expected kind), -y repairs (exit 1),
        -n is clean again (exit 0)."""
        rc, rep = self.fsck_json(v, "-n")
        got = {p["kind"] for p in rep["problems"]}
        self.assertEqual(rc, 4, json.dumps(rep, indent=1))
        self.assertTrue(set(kinds) <= got, f"expected {kinds}, got {got}")
        self.assertTrue(all(p["status"] == "repairable" for p in rep["problems"]),
                        json.dumps(rep["problems"], indent=1))
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("clean", r.stdout)
        return rep

    def read_back(self, v, data, subsets=None):
        """Every file byte-exact, with its metadata, from each subset of k
        members (the other members renamed away)."""
        n = len(v.members)
        combos = list(itertools.combinations(range(n), n - K))
        if subsets is not None:
            combos = combos[::max(1, len(combos) // subsets)]
        for hidden in combos:
            moved = []
            try:
                for i in hidden:
                    v.hide(i)
                    moved.append(i)
                mnt = self.mount(v)
                for rel, want in data.items():
                    self.assert_exact(os.path.join(mnt, rel), want,
                                      f"(members {hidden} hidden)")
                self.assertEqual(os.readlink(os.path.join(mnt, "link")), "dir/a")
                self.assertEqual(os.getxattr(os.path.join(mnt, "mid"), "user.color"),
                                 b"blue")
                self.assertEqual(os.stat(os.path.join(mnt, "odd")).st_mode & 0o777, 0o640)
                self.assertEqual(os.stat(os.path.join(mnt, "stripe")).st_mode & 0o777,
                                 0o644)
                self.assert_clean_unmount(v)
            finally:
                v.unmount()
                for i in moved:
                    v.unhide(i)

    def assert_healthy(self, v):
        mnt = self.mount(v)
        self.assertEqual(h.health(mnt).get("state"), "healthy")
        self.assert_clean_unmount(v)


class CleanTest(FsckCase):
    def test_clean_volume(self):
        v, data = self.build()
        rc, rep = self.fsck_json(v, "-n")
        self.assertEqual(rc, 0)
        self.assertEqual(rep["problems"], [])
        self.assertEqual(rep["summary"]["files"], len(FILES))
        self.assertEqual(rep["volume"]["k"], K)
        r = self.fsck(v, "-y", "--deep")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Members in any order are placed by their superblocks.
        r = self.fsck(v, "-n", members=list(reversed(v.members)))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.fsck(v, "-q")
        self.assertEqual((r.returncode, r.stdout), (0, ""))


class MemberTest(FsckCase):
    def test_replaced_member(self):
        v, data = self.build_with_hard_link()
        v.lose(2, "empty")
        rep = self.cycle(v, {"member"})
        self.assertIn(2, [p["member"] for p in rep["problems"] if p["kind"] == "member"])
        # The rebuilt member keeps the hard link as one inode.
        self.assertEqual(os.stat(v.chunk_path(2, "hard")).st_ino,
                         os.stat(v.chunk_path(2, "dir/a")).st_ino)
        self.assert_healthy(v)
        self.read_back(v, data)

    def test_two_members_replaced(self):
        v, data = self.build()
        v.lose(0, "empty")
        # A disk whose mount point is gone is not written by ecfs-fsck (it
        # did not mount): on disks, a new one stands in for it.
        v.lose(5, "rmdir" if v.disks[5] is None else "empty")
        self.cycle(v, {"member"})
        self.assert_healthy(v)
        self.read_back(v, data, subsets=5)


def chunk_position(v, i, rel):
    """The position (0..n-1, data first) of member i's chunk of rel."""
    with open(v.chunk_path(i, rel), "rb") as f:
        return int.from_bytes(f.read(52)[48:52], "little")


class RebuildTest(FsckCase):
    def test_rebuild_replaced_member(self):
        """--rebuild restores a replaced member and a deleted chunk from k
        strips per stripe, and falls back to every strip where one it read
        is bad."""
        v, data = self.build_with_hard_link()
        v.lose(2, "empty")
        v.lose(1, "chunkdel", files=["one"])
        # A bad strip on a member --rebuild reads for "mid": the first
        # positions are read first, and member 2 holds none of them now.
        src = next(i for i in range(K + M)
                   if i != 2 and chunk_position(v, i, "mid") < 2)
        with open(v.chunk_path(src, "mid"), "r+b") as f:
            f.seek(h.chunk_offsets(v.chunk_path(src, "mid"), 0)[1] + 10)  # in strip 0
            f.write(b"\xde\xad\xbe\xef")
        # No hedged reads: on a loaded machine a hedge could read around
        # src and never meet its bad strip.
        rc, rep = self.fsck_json(v, "--rebuild", "--tune=hedge=off")
        self.assertEqual(rc, 1, json.dumps(rep, indent=1))
        self.assertEqual(rep["mode"], "rebuild")
        found = {(p["kind"], p["path"], p["member"]) for p in rep["problems"]}
        self.assertIn(("member", None, 2), found)
        self.assertIn(("chunk-missing", "/one", 1), found)
        self.assertIn(("strip", "/mid", src), found)
        self.assertTrue(all(p["status"] == "repaired" for p in rep["problems"]),
                        json.dumps(rep["problems"], indent=1))
        self.assertEqual(os.stat(v.chunk_path(2, "hard")).st_ino,
                         os.stat(v.chunk_path(2, "dir/a")).st_ino)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assert_healthy(v)
        self.read_back(v, data, subsets=5)

    def test_rebuild_keeps_directory_times(self):
        """A directory --rebuild makes again on a replaced member carries
        the volume's times, also after its entries are made in it."""
        v, data = self.build()
        mnt = self.mount(v)
        past = (1000000000, 1000000000)
        for rel in ("dir/sub", "dir"):
            os.utime(os.path.join(mnt, rel), past)
        self.assert_clean_unmount(v)
        v.lose(2, "empty")
        rc, rep = self.fsck_json(v, "--rebuild")
        self.assertEqual(rc, 1, json.dumps(rep, indent=1))
        for rel in ("dir", "dir/sub"):
            for i in range(K + M):
                self.assertEqual(os.stat(v.chunk_path(i, rel)).st_mtime, past[1],
                                 f"{rel} on member {i}")

    def test_rebuild_bad_strips_across_a_run(self):
        """A run of 64 stripes is read and judged in pieces per member:
        bad strips of two of the k members --rebuild reads, in the first
        and the second piece of one run, are found, and the lost member
        and the bad strips are rebuilt exact from the other strips."""
        v, data = self.build()
        rel = "dir/sub/b"  # stripes 1-64 are one record group: one run
        v.lose(2, "empty")
        good = sorted((chunk_position(v, i, rel), i) for i in range(K + M) if i != 2)
        a, b = good[0][1], good[1][1]  # read first (data positions)
        for i, stripes in ((a, (5, 50)), (b, (40,))):
            path = v.chunk_path(i, rel)
            with open(path, "r+b") as f:
                for s in stripes:
                    f.seek(h.chunk_offsets(path, s)[1] + 100)
                    f.write(b"\xde\xad\xbe\xef")
        rc, rep = self.fsck_json(v, "--rebuild", "--tune=hedge=off")
        self.assertEqual(rc, 1, json.dumps(rep, indent=1))
        bad = {p["member"]: p["detail"] for p in rep["problems"]
               if p["kind"] == "strip" and p["path"] == "/" + rel}
        self.assertEqual(set(bad), {a, b}, json.dumps(rep["problems"], indent=1))
        self.assertIn("2 bad strip(s) in stripes 5-50", bad[a])
        self.assertIn("1 bad strip(s) in stripes 40-40", bad[b])
        self.assertTrue(all(p["status"] == "repaired" for p in rep["problems"]),
                        json.dumps(rep["problems"], indent=1))
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.read_back(v, data, subsets=3)

    def test_rebuild_is_no_scrub(self):
        """Chunks that look current are not read: a bad strip in one is
        left for the next check, a deleted chunk is rebuilt."""
        v, data = self.build()
        v.lose(1, "chunkdel", files=["one"])
        with open(v.chunk_path(4, "dir/sub/c"), "r+b") as f:
            f.seek(h.chunk_offsets(v.chunk_path(4, "dir/sub/c"), 0)[1] + 10)  # in strip 0
            f.write(b"\xde\xad\xbe\xef")
        rc, rep = self.fsck_json(v, "--rebuild")
        self.assertEqual(rc, 1, json.dumps(rep, indent=1))
        self.assertEqual({(p["kind"], p["path"], p["member"]) for p in rep["problems"]},
                         {("chunk-missing", "/one", 1)})
        rc, rep = self.fsck_json(v, "-n")
        self.assertEqual(rc, 4, json.dumps(rep, indent=1))
        self.assertEqual({(p["kind"], p["path"], p["member"]) for p in rep["problems"]},
                         {("strip", "/dir/sub/c", 4)})
        r = self.fsck(v, "--rebuild")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("nothing to rebuild", r.stdout)
        self.cycle(v, {"strip"})
        self.read_back(v, data, subsets=2)

    def test_rebuild_beyond_m(self):
        """A file with more than m chunks lost: reported, exit 4, the
        survivors untouched; the rest is rebuilt, and only the replaced
        member is written to."""
        v, data = self.build()
        v.lose(5, "empty")
        v.lose(3, "chunkdel", files=["mid"])
        v.lose(4, "chunkdel", files=["mid"])
        before = member_hashes(v, range(5))
        rc, rep = self.fsck_json(v, "--rebuild")
        self.assertEqual(rc, 4 | 1, json.dumps(rep, indent=1))
        lost = [p for p in rep["problems"] if p["kind"] == "unrecoverable"]
        self.assertEqual([(p["path"], p["offset"], p["length"]) for p in lost],
                         [("/mid", 0, FILES["mid"])])
        self.assertEqual(before, member_hashes(v, range(5)))
        del data["mid"]
        mnt = self.mount(v)
        for rel, want in data.items():
            self.assert_exact(os.path.join(mnt, rel), want)
        self.assert_clean_unmount(v)

    def test_rebuild_usage(self):
        for args in (["-n", "--rebuild", "a:b"], ["--rebuild", "--deep", "a:b"]):
            r = subprocess.run([FSCK] + args, capture_output=True, text=True)
            self.assertEqual(r.returncode, 16, args)
        r = subprocess.run([FSCK, "--help"], capture_output=True, text=True)
        self.assertIn("--rebuild", r.stdout)


class ManyFilesTest(FsckCase):
    def test_mixed_over_many_files(self):
        """120 files; each loses up to m of its chunks, strips or headers
        (a seeded mix); all of it is repaired and reads back."""
        import random
        rng = random.Random(2026)
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = {}
        for d in range(6):
            os.mkdir(os.path.join(mnt, f"d{d}"))
        for i in range(120):
            rel = f"d{i % 6}/f{i}"
            data[rel] = h.pattern(rng.choice([0, 1, 4096, STRIPE, rng.randrange(1, 200000)]),
                                  i)
            h.write_file(os.path.join(mnt, rel), data[rel])
        os.symlink("d0/f0", os.path.join(mnt, "link"))
        os.setxattr(os.path.join(mnt, "d1"), "user.k", b"v")
        self.assert_clean_unmount(v)
        damaged = 0
        for rel, want in data.items():
            for mb in rng.sample(range(K + M), rng.randint(0, M)):
                how = rng.choice(["chunkdel", "flip", "header"])
                if how == "header":
                    with open(v.chunk_path(mb, rel), "r+b") as f:
                        f.seek(rng.randrange(0, h.CHUNK_HEADER_SIZE - 8))
                        f.write(os.urandom(8))
                else:
                    v.lose(mb, how, files=[rel], seed=damaged)
                damaged += 1
        self.assertGreater(damaged, 100)
        rc, rep = self.fsck_json(v, "-n")
        self.assertEqual(rc, 4)
        self.assertFalse([p for p in rep["problems"] if p["status"] != "repairable"])
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        r = self.fsck(v, "-n", "--deep")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for hidden in [(0, 1), (2, 5), (3, 4)]:
            moved = []
            try:
                for i in hidden:
                    v.hide(i)
                    moved.append(i)
                mnt = self.mount(v)
                for rel, want in data.items():
                    self.assert_exact(os.path.join(mnt, rel), want, f"(hidden {hidden})")
                self.assertEqual(os.getxattr(os.path.join(mnt, "d1"), "user.k"), b"v")
                self.assert_clean_unmount(v)
            finally:
                v.unmount()
                for i in moved:
                    v.unhide(i)


class DegradedTest(FsckCase):
    def test_writes_while_a_member_was_away(self):
        """Member 3 misses an overwrite, a new file, a new directory, a
        chmod and an unlink: its chunk is stale, entries are missing and
        one is extra; fsck brings it back in line."""
        v, data = self.build()
        v.hide(3)
        try:
            mnt = self.mount(v)
            new = h.pattern(40000, 7)
            with open(os.path.join(mnt, "mid"), "r+b") as f:
                f.seek(5000)
                f.write(new[:30000])
            data["mid"] = data["mid"][:5000] + new[:30000] + data["mid"][35000:]
            os.mkdir(os.path.join(mnt, "newdir"))
            h.write_file(os.path.join(mnt, "newdir/new"), new)
            data["newdir/new"] = new
            os.unlink(os.path.join(mnt, "dir/sub/c"))
            del data["dir/sub/c"]
            self.assert_clean_unmount(v)
        finally:
            v.unmount()
            v.unhide(3)
        rep = self.cycle(v, {"chunk-stale", "missing", "extra"})
        paths = {(p["kind"], p["path"], p["member"]) for p in rep["problems"]}
        self.assertIn(("chunk-stale", "/mid", 3), paths)
        self.assertIn(("missing", "/newdir", 3), paths)
        self.assertIn(("extra", "/dir/sub/c", 3), paths)
        self.read_back(v, data)


class DamageTest(FsckCase):
    def test_mixed_damage(self):
        v, data = self.build()
        mem = v.members
        v.lose(1, "chunkdel", files=["one"])
        v.lose(4, "flip", files=["dir/sub/b", "mid"], seed=3)
        v.lose(0, "flip", files=["mid"], seed=4)
        # A corrupt chunk header: its magic overwritten.
        with open(v.chunk_path(2, "dir/a"), "r+b") as f:
            f.write(b"GARBAGE!")
        # A directory (and the chunks in it) missing on one member.
        subprocess.run(["rm", "-rf", os.path.join(mem[3], "dir/sub")], check=True)
        # Metadata that differs on one member's copy.
        os.chmod(v.chunk_path(0, "stripe"), 0o600)
        os.setxattr(v.chunk_path(1, "mid"), "user.color", b"red")
        os.unlink(v.chunk_path(5, "link"))
        os.symlink("elsewhere", v.chunk_path(5, "link"))
        rep = self.cycle(v, {"chunk-missing", "strip", "chunk-header", "missing",
                             "metadata"})
        paths = {(p["kind"], p["path"], p["member"]) for p in rep["problems"]}
        self.assertIn(("chunk-missing", "/one", 1), paths)
        self.assertIn(("chunk-header", "/dir/a", 2), paths)
        self.assertIn(("missing", "/dir/sub", 3), paths)
        self.assertIn(("metadata", "/stripe", 0), paths)
        self.assertIn(("metadata", "/mid", 1), paths)
        self.assertIn(("metadata", "/link", 5), paths)
        # The children of the missing directory are not reported one by one.
        self.assertNotIn(("chunk-missing", "/dir/sub/c", 3), paths)
        self.read_back(v, data)

    def test_deep_parity(self):
        """Parity bytes changed and their record checksum recomputed (sha256
        volume: the sum is computable here) pass every checksum; only
        --deep, which re-encodes the stripe, sees them."""
        v, data = self.build(opts=OPTS + ",checksum=sha256")
        for i in range(len(v.members)):
            with open(v.chunk_path(i, "dir/a"), "rb") as f:
                hdr = f.read(64)
            if int.from_bytes(hdr[48:52], "little") == K:
                break
        roff, toff, _, soff = h.chunk_places(v.chunk_path(i, "dir/a"), 0)
        with open(v.chunk_path(i, "dir/a"), "r+b") as f:
            f.seek(roff)
            rec = bytearray(f.read(64))
            f.seek(soff)
            strip = bytearray(f.read(4096))  # dir/a fills its first stripe
            strip[10] ^= 0x55
            version = int.from_bytes(hdr[8:12], "little")
            rec[32:64], tags = h.sha256_strip_sum(hdr[16:48], bytes(rec[:32]), bytes(strip),
                                                  version)
            f.seek(soff)
            f.write(strip)
            f.seek(toff)
            f.write(tags)
            f.seek(roff)
            f.write(rec)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, "the checksum should not see it\n" + r.stdout)
        rc, rep = self.fsck_json(v, "-n", "--deep")
        self.assertEqual(rc, 4)
        self.assertIn(("parity", "/dir/a", 0, STRIPE),
                      {(p["kind"], p["path"], p.get("offset"), p.get("length"))
                       for p in rep["problems"]})
        r = self.fsck(v, "-y", "--deep")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        r = self.fsck(v, "-n", "--deep")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.read_back(v, data, subsets=3)

    def test_header_generation_too_low(self):
        """Headers whose generation no longer reserves the records' (sum
        recomputed: SHA-256 of the bytes before it) are raised above them."""
        v, data = self.build()
        for i in range(len(v.members)):
            with open(v.chunk_path(i, "mid"), "r+b") as f:
                hdr = bytearray(f.read(h.CHUNK_HEADER_SIZE))
                hdr[96:104] = (1).to_bytes(8, "little")
                hdr[-32:] = hashlib.sha256(hdr[:-32]).digest()
                f.seek(0)
                f.write(hdr)
        rep = self.cycle(v, {"generation"})
        self.assertEqual({(p["kind"], p["path"]) for p in rep["problems"]},
                         {("generation", "/mid")})
        with open(v.chunk_path(0, "mid"), "rb") as f:
            self.assertGreater(int.from_bytes(f.read(104)[96:104], "little"), 65536)
        self.read_back(v, data, subsets=2)

    def test_extra_entry(self):
        v, data = self.build()
        # A leftover on one member only, as an unlink while it was away leaves.
        os.link(v.chunk_path(0, "one"), v.chunk_path(0, "ghost"))
        rep = self.cycle(v, {"extra"})
        self.assertIn(("extra", "/ghost", 0),
                      {(p["kind"], p["path"], p["member"]) for p in rep["problems"]})
        self.assertFalse(os.path.exists(v.chunk_path(0, "ghost")))
        self.assertTrue(os.listdir(os.path.join(v.members[0], ".ecfs", "lost+found")))


class AclTest(FsckCase):
    def test_acl_differs_on_one_member(self):
        """An ACL that one member holds differently (changed, removed,
        added) is reported as such and restored from the majority, with
        the mode that goes with it."""
        v, data = self.build()
        mnt = self.mount(v)
        acls = {"mid": ["-m", "u:1234:rw,g:4321:r"],
                "dir": ["-m", "u:1234:rwx,d:u:1234:rx"],
                "dir/sub/c": ["-m", "u:65534:r"]}
        for rel, args in acls.items():
            subprocess.run(["setfacl", *args, os.path.join(mnt, rel)], check=True)
        self.assert_clean_unmount(v)

        def member_acl(i, rel):
            r = subprocess.run(["getfacl", "-n", "-p", v.chunk_path(i, rel)],
                               capture_output=True, text=True, check=True)
            lines = r.stdout.splitlines()[1:]        # the file name apart
            return lines, os.lstat(v.chunk_path(i, rel)).st_mode
        want = {rel: member_acl(0, rel) for rel in list(acls) + ["odd"]}
        subprocess.run(["setfacl", "-m", "u:1234:rwx,m::rwx",
                        v.chunk_path(2, "mid")], check=True)        # changed
        subprocess.run(["setfacl", "-b", v.chunk_path(3, "dir")], check=True)  # removed
        subprocess.run(["setfacl", "-k", v.chunk_path(1, "dir")], check=True)  # default gone
        subprocess.run(["setfacl", "-m", "u:7:r", v.chunk_path(4, "odd")], check=True)  # added
        rep = self.cycle(v, {"metadata"})
        acl_problems = {(p["path"], p["member"]) for p in rep["problems"]
                        if "ACL differs" in p["detail"]}
        self.assertEqual(acl_problems, {("/mid", 2), ("/dir", 3), ("/dir", 1),
                                        ("/odd", 4)}, json.dumps(rep["problems"], indent=1))
        for rel, acl in want.items():
            for i in range(len(v.members)):
                self.assertEqual(member_acl(i, rel), acl, f"{rel} on member {i}")
        self.read_back(v, data, subsets=2)


class BeyondTest(FsckCase):
    def test_more_than_m(self):
        v, data = self.build()
        # Stripe 0 of dir/sub/b damaged on three members.
        for i in (0, 1, 2):
            with open(v.chunk_path(i, "dir/sub/b"), "r+b") as f:
                f.seek(h.chunk_offsets(v.chunk_path(i, "dir/sub/b"), 0)[1] + 100)
                f.write(b"\xde\xad\xbe\xef")
        # "mid" lost on three members.
        v.lose(3, "chunkdel", files=["mid"])
        v.lose(4, "chunkdel", files=["mid"])
        v.lose(5, "chunkdel", files=["mid"])
        before = member_hashes(v)
        rc, rep = self.fsck_json(v, "-n")
        self.assertEqual(rc, 4)
        lost = [p for p in rep["problems"] if p["kind"] == "unrecoverable"]
        ranges = {(p["path"], p["offset"], p["length"]) for p in lost}
        self.assertIn(("/dir/sub/b", 0, STRIPE), ranges)
        self.assertIn(("/mid", 0, FILES["mid"]), ranges)
        self.assertTrue(all(p["status"] == "unrepairable" for p in lost))
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertIn("/dir/sub/b: bytes 0-16383", r.stdout)
        self.assertEqual(before, member_hashes(v), "repair changed a member")
        # Everything else still reads; the lost ranges fail with EIO only.
        mnt = self.mount(v)
        for rel, want in data.items():
            if rel in ("mid", "dir/sub/b"):
                self.assertEqual(self.assert_exact_or_eio(os.path.join(mnt, rel), want),
                                 __import__("errno").EIO)
            else:
                self.assert_exact(os.path.join(mnt, rel), want)
        self.assert_clean_unmount(v)


class InputTest(FsckCase):
    def superblock(self, v, i):
        return os.path.join(v.members[i], ".ecfs", "superblock")

    def test_garbage_superblock(self):
        v, data = self.build()
        with open(self.superblock(v, 1), "wb") as f:
            f.write(os.urandom(300))
        rep = self.cycle(v, {"member"})
        self.assertIn(1, [p["member"] for p in rep["problems"]])
        self.read_back(v, data, subsets=2)

    def test_truncated_superblock(self):
        v, data = self.build()
        open(self.superblock(v, 4), "wb").close()
        self.cycle(v, {"member"})
        self.assert_healthy(v)

    def test_superblock_defaults_differ(self):
        v, data = self.build()
        with open(self.superblock(v, 4), "rb") as f:
            text = f.read()
        self.assertIn(b"strip_size=4096", text)
        with open(self.superblock(v, 4), "wb") as f:
            f.write(text.replace(b"strip_size=4096", b"strip_size=8192"))
        # one member's differing superblock fails that member (never
        # followed); -y gives it the majority's back
        rep = self.cycle(v, {"member"})
        self.assertEqual({p["member"] for p in rep["problems"]}, {4})
        with open(self.superblock(v, 4), "rb") as f:
            self.assertEqual(f.read(), text)

    def test_foreign_and_future_superblocks(self):
        v, _ = self.build()
        w, _ = self.build()
        with open(self.superblock(w, 0), "rb") as f:
            foreign = f.read()
        with open(self.superblock(v, 0), "rb") as f:
            own = f.read()
        with open(self.superblock(v, 0), "wb") as f:
            f.write(foreign)
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 8, r.stdout + r.stderr)
        self.assertIn("another volume", r.stderr)
        with open(self.superblock(v, 0), "wb") as f:
            f.write(re.sub(rb"format=\d+", b"format=99", own))
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 8, r.stdout + r.stderr)
        self.assertIn("99", r.stderr)

    def test_member_is_a_file(self):
        v, _ = self.build()
        before = member_hashes(v, [0, 1, 2, 4, 5])
        v.lose(3, "file")
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertIn(v.members[3], r.stdout)
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertEqual(before, member_hashes(v, [0, 1, 2, 4, 5]))

    def test_headers_garbage_everywhere(self):
        v, _ = self.build()
        for i in range(len(v.members)):
            with open(v.chunk_path(i, "dir/a"), "r+b") as f:
                f.write(os.urandom(4096))
            with open(v.chunk_path(i, "odd"), "r+b") as f:
                f.truncate(100)
        rc, rep = self.fsck_json(v, "-y")
        self.assertEqual(rc, 4)
        bad = {p["path"] for p in rep["problems"] if p["status"] == "unrepairable"}
        self.assertEqual(bad, {"/dir/a", "/odd"})

    def test_unreadable_entries(self):
        """A chunk and a directory that fsck may not read (run without
        CAP_DAC_OVERRIDE): named with the reason, nothing else disturbed."""
        if not shutil.which("setpriv"):
            self.skipTest("setpriv not installed")
        v, _ = self.build()
        dirp = os.path.join(v.members[3], "dir")
        os.chmod(v.chunk_path(1, "one"), 0)
        os.chmod(dirp, 0)
        try:
            r = subprocess.run(h.DROP_DAC + [FSCK, "--no-progress", "-n", ":".join(v.members)],
                               capture_output=True, text=True, timeout=120)
        finally:
            os.chmod(v.chunk_path(1, "one"), 0o644)
            os.chmod(dirp, 0o755)
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertIn("unreadable: /one: member 1", r.stdout)
        self.assertIn("unreadable: /dir: member 3", r.stdout)
        self.assertIn("Permission denied", r.stdout)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_progress(self):
        v, _ = self.build()
        r = self.fsck(v, "--progress")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"files {len(FILES)}/{len(FILES)}", r.stderr)
        r = self.fsck(v)
        self.assertNotIn("files ", r.stderr)

    def test_usage(self):
        for args in ([], ["-n", "-y", "a:b"], ["--bogus", "a:b"], ["a:b", "c:d"]):
            r = subprocess.run([FSCK] + args, capture_output=True, text=True)
            self.assertEqual(r.returncode, 16, args)
        r = subprocess.run([FSCK, "-V"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("ecfs-fsck", r.stdout)
        r = subprocess.run([FSCK, "--help"], capture_output=True, text=True)
        self.assertIn("--deep", r.stdout)

    def test_refused_while_mounted(self):
        v, _ = self.build()
        v.lose(2, "chunkdel", files=["one"])
        self.mount(v)
        try:
            r = self.fsck(v, "-y")
            self.assertEqual(r.returncode, 8, r.stdout + r.stderr)
            self.assertIn("refusing to repair a mounted volume", r.stderr)
            self.assertIn(f"pid {v.proc.pid}", r.stderr)
            self.assertFalse(os.path.exists(v.chunk_path(2, "one")))
        finally:
            self.assert_clean_unmount(v)


class TimeoutTest(FsckCase):
    """--timeout: a member that stops answering (ECFS_FAULT hang, builds
    with -Dfault_injection) is given up after the timeout, named once, its
    strips taken for erasures and nothing more written to it; the run goes
    on with the others and says it is incomplete (exit 4, with 1 if it
    repaired anything)."""

    # a hung member must not hold the run for longer than the timeout and
    # the rest of the run: well above both, far below "forever"
    BOUND = 90

    def fsck_faulty(self, v, rules, *args, timeout="1"):
        env = dict(os.environ, ECFS_FAULT=rules)
        cmd = [FSCK, "--no-progress", f"--timeout={timeout}", *args, ":".join(v.members)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                               timeout=self.BOUND)
        except subprocess.TimeoutExpired:
            self.fail(f"ecfs-fsck with {rules} did not end within {self.BOUND} s")
        if "ECFS_FAULT and ECFS_RECORD are ignored" in r.stderr:
            self.skipTest("this build has no fault injection")
        return r

    def assert_given_up(self, v, r, j):
        out = r.stdout + r.stderr
        self.assertEqual(r.stderr.count(f"member {j} ({v.members[j]}) failed: no answer"), 1,
                         out)
        self.assertIn(f"member: volume: member {j} ({v.members[j]}): no answer within 1 s, "
                      "treated as failed", r.stdout)
        self.assertIn("[unrepairable]", r.stdout)

    def test_member_hangs_in_the_walk(self):
        """Member 3's reads hang from the start (the namespace walk);
        member 1's missing chunk and directory entry are still repaired, and
        member 3 is left as it was."""
        v, data = self.build()
        v.lose(1, "chunkdel", files=["mid"])
        shutil.rmtree(os.path.join(v.members[1], "dir", "sub"))
        before = member_hashes(v, [3])
        # the reads of the intent log come first (its open, then each slot):
        # the hang takes the first read after them, the walk's lstat of /
        log = os.path.join(v.members[3], ".ecfs", "intent", "log")
        after = 1 + os.path.getsize(log) // 16384
        r = self.fsck_faulty(v, f"member=3,op=read,after={after},hang", "-y")
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        # given up before the walk judged anything
        self.assertTrue(r.stdout.startswith(f"member: volume: member 3 ({v.members[3]})"),
                        r.stdout)
        self.assert_given_up(v, r, 3)
        self.assertIn("chunk-missing: /mid: member 1", r.stdout)
        self.assertIn("missing: /dir/sub: member 1", r.stdout)
        self.assertNotIn("member 3 (", r.stdout.replace(
            f"member: volume: member 3 ({v.members[3]})", ""))
        self.assertTrue(os.path.exists(v.chunk_path(1, "mid")))
        self.assertTrue(os.path.exists(v.chunk_path(1, "dir/sub/b")))
        self.assertEqual(member_hashes(v, [3]), before)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.read_back(v, data, subsets=2)

    def test_member_hangs_in_a_check(self):
        """-n: the JSON report has the member failed and the problem."""
        v, _ = self.build()
        env = dict(os.environ, ECFS_FAULT="member=2,op=read,hang")
        cmd = [FSCK, "--no-progress", "--timeout=1", "--json", "-n", ":".join(v.members)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                               timeout=self.BOUND)
        except subprocess.TimeoutExpired:
            self.fail("ecfs-fsck -n with a hung member did not end")
        if "ECFS_FAULT and ECFS_RECORD are ignored" in r.stderr:
            self.skipTest("this build has no fault injection")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        rep = json.loads(r.stdout)
        self.assertEqual(rep["members"][2]["state"], "failed")
        given_up = [p for p in rep["problems"] if p["kind"] == "member"]
        self.assertEqual(len(given_up), 1, rep["problems"])
        self.assertEqual(given_up[0]["member"], 2)
        self.assertEqual(given_up[0]["status"], "unrepairable")
        # nothing else is blamed on it, file by file
        self.assertEqual([p for p in rep["problems"] if p["member"] == 2], given_up)

    def test_member_hangs_in_the_repair(self):
        """Member 2's writes hang: the first repair that writes to it (its
        own bad strips) gives it up; member 1's chunk is rebuilt all the
        same, and nothing reaches member 2."""
        v, data = self.build()
        with open(v.chunk_path(2, "dir/sub/b"), "r+b") as f:
            f.seek(8192)
            f.write(os.urandom(4096))
        v.lose(1, "chunkdel", files=["dir/a"])
        before = member_hashes(v, [2])
        r = self.fsck_faulty(v, "member=2,op=write,hang", "-y")
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        self.assert_given_up(v, r, 2)
        self.assertIn("chunk-missing: /dir/a: member 1", r.stdout)
        self.assertTrue(os.path.exists(v.chunk_path(1, "dir/a")))
        self.assertEqual(member_hashes(v, [2]), before)
        # the damage on member 2 is still there for the next run
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("strip: /dir/sub/b: member 2", r.stdout)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.read_back(v, data, subsets=2)

    # the member timeout far above the bound (2 s): a run that waited for
    # it would take over a minute; one that gives the member up at its
    # bound, a few seconds and the run (generous: the machine is loaded)
    LONG = 60
    FEW_BOUNDS = 25

    def fsck_hung(self, v, rules, *args):
        start = time.monotonic()
        r = self.fsck_faulty(v, rules, *args, timeout=str(self.LONG))
        took = time.monotonic() - start
        self.assertLess(took, self.FEW_BOUNDS,
                        f"ecfs-fsck {' '.join(args)} took {took:.1f} s with a hung member "
                        f"(--timeout={self.LONG}): " + r.stdout + r.stderr)
        return r

    def test_check_gives_up_at_the_bound(self):
        """-n with --timeout far above the bound: member 2's reads hang
        from the start; it is given up after its bound, named once, and
        the run ends in a few seconds (exit 4)."""
        v, _ = self.build()
        r = self.fsck_hung(v, "member=2,op=read,hang", "--json", "-n")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        rep = json.loads(r.stdout)
        self.assertEqual(rep["members"][2]["state"], "failed")
        given_up = [p for p in rep["problems"] if p["member"] == 2]
        self.assertEqual(len(given_up), 1, rep["problems"])
        self.assertEqual(given_up[0]["kind"], "member")
        self.assertEqual(given_up[0]["status"], "unrepairable")
        self.assertIn("no answer within 2 s, treated as failed", given_up[0]["detail"])

    def test_repair_gives_up_at_the_bound(self):
        """-y with --timeout far above the bound: member 3's reads hang
        once the walk begins; it is given up after its bound, member 1 is
        repaired all the same, and the run ends in a few seconds (exit 5)."""
        v, _ = self.build()
        v.lose(1, "chunkdel", files=["mid"])
        before = member_hashes(v, [3])
        log = os.path.join(v.members[3], ".ecfs", "intent", "log")
        after = 1 + os.path.getsize(log) // 16384
        r = self.fsck_hung(v, f"member=3,op=read,after={after},hang", "-y")
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        self.assertEqual(r.stderr.count(f"member 3 ({v.members[3]}) failed: no answer"), 1,
                         r.stdout + r.stderr)
        self.assertIn(f"member: volume: member 3 ({v.members[3]}): no answer within 2 s, "
                      "treated as failed", r.stdout)
        self.assertIn("chunk-missing: /mid: member 1", r.stdout)
        self.assertTrue(os.path.exists(v.chunk_path(1, "mid")))
        self.assertEqual(member_hashes(v, [3]), before)
        # (what it repaired reads back: test_member_hangs_in_the_walk)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_timeout_usage(self):
        v, _ = self.build()
        for bad in ("abc", "-1", "0.001", "1e9", ""):
            r = subprocess.run([FSCK, f"--timeout={bad}", "-n", ":".join(v.members)],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 16, bad)
            self.assertIn(f"--timeout={bad}: give seconds, from 0.01 to 86400 (0 = never)",
                          r.stderr)
        for good in ("0", "2.5"):
            r = self.fsck(v, f"--timeout={good}", "-n")
            self.assertEqual(r.returncode, 0, good + r.stdout + r.stderr)
        r = subprocess.run([FSCK, "--help"], capture_output=True, text=True)
        self.assertIn("--timeout=SECONDS", r.stdout)


class SlowMemberTest(FsckCase):
    def test_rebuild_reads_around_a_slow_member(self):
        """--rebuild reads k good chunks per stripe: when one of their
        members is much slower than the others (ECFS_FAULT delay on its
        reads), the k are taken from the others once that shows.  Its reads
        are counted by a second rule that hangs it after as many reads as
        the walk, the chunk headers and a few runs of strips take: a
        rebuild that kept reading it would give it up (exit 5)."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        data = {}
        for i in range(3):
            rel = f"big{i}"
            data[rel] = h.pattern(16 << 20, i)  # 16 runs of strips per member
            h.write_file(os.path.join(mnt, rel), data[rel])
        self.assert_clean_unmount(v)
        v.lose(5, "empty")
        slow = 1
        # reads of member 1 besides the strips: the intent log (its open and
        # each slot), then per file an lstat, the chunk's open and header
        log = os.path.join(v.members[slow], ".ecfs", "intent", "log")
        other = 1 + os.path.getsize(log) // 16384 + 1 + 3 * len(data)
        # each run it is read in costs three reads (strips, records, and
        # in format 3 the tags); the files hold 48 runs: read around after
        # a few runs, it stays far below that
        after = other + 3 * 12
        env = dict(os.environ, ECFS_FAULT=f"member={slow},op=read,delay=20;"
                                          f"member={slow},op=read,after={after},hang")
        cmd = [FSCK, "--no-progress", "--timeout=2", "--json", "--rebuild", ":".join(v.members)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        except subprocess.TimeoutExpired:
            self.fail("ecfs-fsck --rebuild did not end")
        if "ECFS_FAULT and ECFS_RECORD are ignored" in r.stderr:
            self.skipTest("this build has no fault injection")
        rep = json.loads(r.stdout)
        self.assertEqual(r.returncode, 1, r.stderr + json.dumps(rep["problems"], indent=1))
        self.assertNotIn(slow, [p["member"] for p in rep["problems"]])
        self.assertEqual(rep["members"][slow]["state"], "ok")
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for hide in (0, slow):  # the rebuilt member 5 serves in both
            v.hide(hide)
            try:
                mnt = self.mount(v, "ro")
                for rel, want in data.items():
                    self.assert_exact(os.path.join(mnt, rel), want)
                self.assert_clean_unmount(v)
            finally:
                v.unhide(hide)

    def test_rebuild_goes_on_without_a_late_member(self):
        """--rebuild reads k good chunks per run; when one of them is late
        (its member's reads take 300 ms each, ECFS_FAULT delay), a spare
        good chunk is asked and the run goes on with the first k answers,
        as the daemon's hedged reads do.  The summary counts those runs
        (reads_hedged), and what was rebuilt is exact."""
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        want = h.pattern(3 << 20, 7)
        h.write_file(os.path.join(mnt, "f"), want)
        self.assert_clean_unmount(v)
        with open(v.chunk_path(0, "f"), "rb") as f:
            rotation = int.from_bytes(f.read(56)[52:56], "little")  # FORMAT.md 4.1
        late, lost = (rotation + 1) % (K + M), (rotation + K + 1) % (K + M)
        v.lose(lost, "empty")
        env = dict(os.environ, ECFS_FAULT=f"member={late},op=read,delay=300")
        cmd = [FSCK, "--no-progress", "--timeout=30", "--json", "--rebuild", ":".join(v.members)]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        if "ECFS_FAULT and ECFS_RECORD are ignored" in r.stderr:
            self.skipTest("this build has no fault injection")
        rep = json.loads(r.stdout)
        self.assertEqual(r.returncode, 1, r.stderr + json.dumps(rep["problems"], indent=1))
        self.assertGreaterEqual(rep["summary"]["reads_hedged"], 1, rep["summary"])
        self.assertEqual(rep["members"][late]["state"], "ok")
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        v.hide(late)
        try:
            mnt = self.mount(v, "ro")
            self.assert_exact(os.path.join(mnt, "f"), want)
            self.assert_clean_unmount(v)
        finally:
            v.unhide(late)


class MetadataLinkTest(FsckCase):
    """A member's .ecfs/intent, .ecfs/journal or .ecfs replaced by a symlink
    to a copy outside every member: -n reports it naming the path, -y
    replaces the link by a real directory, and neither writes outside."""

    def check(self, rel, shown):
        v, data = self.build()
        mnt = self.mount(v)  # an overwrite: the journal folder exists
        fd = os.open(os.path.join(mnt, "mid"), os.O_RDWR)
        os.pwrite(fd, data["mid"][:5000], 0)
        os.close(fd)
        self.assert_clean_unmount(v)
        outside = os.path.join(v.base, "outside")
        place = os.path.join(v.members[1], ".ecfs", *([rel] if rel else []))
        shutil.copytree(place, outside, symlinks=True)
        shutil.rmtree(place)
        os.symlink(outside, place)
        before = h.tree_snapshot(outside)
        rc, rep = self.fsck_json(v, "-n")
        self.assertEqual(rc, 4, json.dumps(rep, indent=1))
        named = [p for p in rep["problems"] if p["member"] == 1 and shown in p["detail"]]
        self.assertTrue(named, json.dumps(rep["problems"], indent=1))
        self.assertEqual(h.tree_snapshot(outside), before, "written outside the members")
        self.cycle(v, {"member"})
        self.assertEqual(h.tree_snapshot(outside), before, "written outside the members")
        self.assertFalse(os.path.islink(place))
        self.assert_healthy(v)
        self.read_back(v, data, subsets=2)
        self.assertEqual(h.tree_snapshot(outside), before, "written outside the members")

    def test_intent_is_a_link(self):
        self.check("intent", ".ecfs/intent is a symlink")

    def test_journal_is_a_link(self):
        self.check("journal", ".ecfs/journal is a symlink")

    def test_ecfs_is_a_link(self):
        self.check("", ".ecfs is a symlink")


if __name__ == "__main__":
    FSCK = h.take_fsck_argument()
    sys.exit(h.main())
