# SPDX-License-Identifier: MIT
"""The online scrub (`ecfs scrub`, src/fs/scrub.c) on real mounts: it finds
and repairs strips damaged behind the daemon's back, its counts and result
show in `ecfs status` and a scrub_done event runs; a paused run survives a
remount and resumes where it was; --percent checks the least recently
verified share; only root controls it.

Started by meson as `python3 test_scrub.py ECFS ECFS_FSCK [unittest args]`."""

import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

FSCK = None


def ecfs(*args, user=None):
    """(exit status, stdout, stderr) of `ecfs ARGS`."""
    kw = {"user": user} if user is not None else {}
    p = subprocess.run([H.ECFS, *args], capture_output=True, text=True, timeout=30, **kw)
    return p.returncode, p.stdout, p.stderr


def scrub_status(mnt):
    rc, out, err = ecfs("scrub", "status", "--json", mnt)
    assert rc == 0, err
    return json.loads(out)


def verified(v):
    """{path: time} of the files .ecfs/scrub on member 0 records."""
    out = {}
    with open(os.path.join(v.members[0], ".ecfs", "scrub"), encoding="utf-8") as f:
        for line in f.read().splitlines():
            if line.startswith("file="):
                _id, at, path = line[5:].split(" ", 2)
                out[path] = int(at)
    return out


class ScrubTest(H.MountedCase):
    def wait_for(self, fn, timeout, what, v):
        deadline = time.monotonic() + timeout
        while True:
            got = fn()
            if got:
                return got
            if time.monotonic() > deadline:
                self.fail(f"{what} within {timeout} s:\n" + v.log())
            time.sleep(0.05)

    def wait_done(self, v, mnt, last=None, timeout=30):
        """Waits until the scrub is idle with a last run other than last."""
        def done():
            st = scrub_status(mnt)
            return st if st["state"] == "idle" and st["last"] not in (None, last) else None
        return self.wait_for(done, timeout, "the scrub did not end", v)

    def files(self, mnt, names, size=200000):
        data = {}
        for i, name in enumerate(names):
            data[name] = H.pattern(size, i + 7 * len(name))
            H.write_file(os.path.join(mnt, name), data[name], fsync=True)
        return data

    def test_finds_and_repairs_damage_on_two_members(self):
        v = self.volume(4)
        out, prog = H.events_program(v.base)
        prom = os.path.join(v.base, "ecfs.prom")
        mnt = self.mount(v, f"k=2,m=2,events={prog},metrics={prom}")
        data = self.files(mnt, [f"f{i}" for i in range(4)])
        self.assertEqual(scrub_status(mnt)["state"], "idle")
        self.assertIsNone(scrub_status(mnt)["last"])
        rng = random.Random(5)
        for mb, name in ((0, "f0"), (1, "f0"), (1, "f2")):
            H.flip_bytes(v.chunk_path(mb, name), rng, count=4)

        rc, _, err = ecfs("scrub", "start", mnt)
        self.assertEqual(rc, 0, err)
        st = self.wait_done(v, mnt)
        self.assertEqual(st["result"], "repaired", st)
        self.assertEqual(st["last_files"], 4, st)
        self.assertGreaterEqual(st["last_errors"], 3, st)
        self.assertEqual(st["last_repaired"], st["last_errors"], st)
        rc, text, err = ecfs("status", mnt)
        self.assertRegex(text, r"last scrub: .*, repaired \(4 files checked, \d+ errors found",
                         text)
        rc, text, _ = ecfs("status", "--json", mnt)
        self.assertEqual(json.loads(text)["scrub"]["result"], "repaired")

        def event():
            for name in os.listdir(out):
                if not name.endswith(".tmp"):
                    with open(os.path.join(out, name)) as f:
                        if "ECFS_EVENT=scrub_done" in f.read():
                            return True
            return False
        self.wait_for(event, 5, "no scrub_done event", v)

        def scrubbed_metrics():
            with open(prom, encoding="utf-8") as f:
                text = f.read()
            return text if "ecfs_scrub_last_errors{" in text else None
        text = self.wait_for(scrubbed_metrics, 8, "the metrics do not carry the scrub", v)
        self.assertRegex(text, r'ecfs_scrub_last_repaired\{mountpoint="[^"]*"\} [1-9]')
        # a second run finds the volume clean
        rc, _, err = ecfs("scrub", "start", "--deep", mnt)
        self.assertEqual(rc, 0, err)
        st = self.wait_for(lambda: scrub_status(mnt)["result"] == "clean" and scrub_status(mnt),
                           30, "the second scrub did not end clean", v)
        self.assertEqual((st["last_errors"], st["last_repaired"]), (0, 0), st)
        for name, want in data.items():
            H.drop_file_cache(os.path.join(mnt, name))
            self.assertEqual(H.read_all(os.path.join(mnt, name)), (want, 0), name)
        self.assert_clean_unmount(v)
        r = subprocess.run([FSCK, "--no-progress", "-n", ":".join(v.members)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_pause_survives_a_remount_and_resume_goes_on(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1,scrub_rate=1")
        self.files(mnt, [f"f{i:02d}" for i in range(12)], size=256 * 1024)
        rc, _, err = ecfs("scrub", "start", mnt)
        self.assertEqual(rc, 0, err)
        self.wait_for(lambda: scrub_status(mnt).get("files", 0) >= 3, 20,
                      "the scrub did not get going", v)
        rc, _, err = ecfs("scrub", "pause", mnt)
        self.assertEqual(rc, 0, err)
        self.assertEqual(ecfs("scrub", "pause", mnt)[0], 1)  # nothing to pause
        time.sleep(1.5)  # the file in hand ends
        paused = scrub_status(mnt)
        self.assertEqual(paused["state"], "paused", paused)
        self.assertLess(paused["files"], 12, paused)
        time.sleep(1.5)
        self.assertEqual(scrub_status(mnt)["files"], paused["files"], "a paused scrub went on")
        before = verified(v)
        self.assertEqual(len(before), paused["files"], before)
        self.assert_clean_unmount(v)

        mnt = self.mount(v, "k=2,m=1,scrub_rate=0")
        time.sleep(1.5)
        st = scrub_status(mnt)
        self.assertEqual((st["state"], st["files"]), ("paused", paused["files"]), st)
        rc, _, err = ecfs("scrub", "resume", mnt)
        self.assertEqual(rc, 0, err)
        st = self.wait_done(v, mnt)
        self.assertEqual(st["last_files"], 12, st)
        after = verified(v)
        self.assertEqual(len(after), 12, after)
        for path, at in before.items():
            self.assertEqual(after[path], at, f"{path} was scrubbed again after the resume")
        self.assert_clean_unmount(v)

    def test_percent_takes_the_least_recently_verified(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1,scrub_rate=0")
        self.files(mnt, [f"old{i}" for i in range(5)], size=50000)
        self.assertEqual(ecfs("scrub", "start", mnt)[0], 0)
        first = self.wait_done(v, mnt)
        old = verified(v)
        self.assertEqual(sorted(old), [f"/old{i}" for i in range(5)])
        self.files(mnt, [f"new{i}" for i in range(5)], size=50000)
        rc, _, err = ecfs("scrub", "start", "--percent=50", mnt)
        self.assertEqual(rc, 0, err)
        st = self.wait_for(lambda: scrub_status(mnt)["last"] != first["last"] and
                           scrub_status(mnt)["state"] == "idle" and scrub_status(mnt),
                           30, "the partial scrub did not end", v)
        self.assertEqual(st["last_files"], 5, st)
        now = verified(v)
        self.assertEqual(sorted(now), sorted(list(old) + [f"/new{i}" for i in range(5)]))
        for path, at in old.items():
            self.assertEqual(now[path], at, f"{path} was verified recently, yet scrubbed")
        # then the older half's turn
        self.assertEqual(ecfs("scrub", "start", "--percent=50", mnt)[0], 0)
        self.wait_for(lambda: all(verified(v)[p] > now[p] for p in old), 30,
                      "the next partial scrub did not take the older files", v)
        self.wait_for(lambda: scrub_status(mnt)["state"] == "idle", 10, "it did not end", v)
        # every file was verified within the day: --older-than=1 reads none
        self.assertEqual(ecfs("scrub", "start", "--older-than=1", mnt)[0], 0)
        st = self.wait_for(lambda: scrub_status(mnt)["state"] == "idle" and
                           scrub_status(mnt)["last_files"] == 0 and scrub_status(mnt),
                           10, "--older-than=1 did not leave every file alone", v)
        self.assertEqual(st["result"], "clean", st)
        self.assert_clean_unmount(v)

    def test_only_root_controls_the_scrub(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        self.files(mnt, ["a"], size=1000)
        # a root anyone may write: the kernel lets the xattr through, the
        # daemon refuses it
        os.chmod(mnt, 0o777)
        rc, _, err = ecfs("scrub", "start", mnt, user=H.NOBODY)
        self.assertEqual(rc, 1, err)
        self.assertIn("only root", err)
        time.sleep(1.2)
        self.assertIsNone(scrub_status(mnt)["last"])
        self.assertEqual(scrub_status(mnt)["state"], "idle")
        self.assertEqual(ecfs("scrub", "start", "--percent=0", mnt)[0], 5)
        self.assertEqual(ecfs("scrub", "frob", mnt)[0], 5)
        self.assertEqual(ecfs("scrub", "start", v.base)[0], 3)
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main())
