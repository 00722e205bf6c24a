# SPDX-License-Identifier: MIT
"""Operations: `ecfs status` (text, --json and its exit status), the
events program of -o events (run within 2 s of a member's loss, rate
limited) and the Prometheus file of -o metrics, on real mounts.

usage: test_status.py ECFS_BINARY [unittest args]"""

import errno
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

# A sample line of the Prometheus text format: name{labels} value.
SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*'
                    r'(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})?'
                    r' [-+]?([0-9.eE+-]+|NaN|Inf)$')
COMMENT = re.compile(r'^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*$')


def status(*args, user=None):
    """(exit status, stdout, stderr) of `ecfs status ARGS`."""
    kw = {"user": user} if user is not None else {}
    p = subprocess.run([H.ECFS, "status", *args], capture_output=True, text=True,
                       timeout=30, **kw)
    return p.returncode, p.stdout, p.stderr


def metrics(path):
    """{(name, frozenset of label pairs): value} of a Prometheus text file,
    every line checked against the format."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            if line.startswith("#"):
                assert COMMENT.match(line), f"not a HELP/TYPE line: {line!r}"
                continue
            assert SAMPLE.match(line), f"not a Prometheus sample: {line!r}"
            name, _, rest = line.partition("{")
            labels, _, value = rest.rpartition("} ")
            pairs = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', labels))
            out[(name, pairs)] = float(value)
    return out


def metric(m, name, **labels):
    for (n, pairs), value in m.items():
        if n == name and set(labels.items()) <= set(pairs):
            return value
    return None


class StatusTest(H.MountedCase):
    def events_dir(self, v):
        """A directory and an events program that writes each run's
        environment into it."""
        return H.events_program(v.base)

    def runs(self, out):
        got = []
        for name in sorted(os.listdir(out)):
            if name.endswith(".tmp"):
                continue
            with open(os.path.join(out, name)) as f:
                env = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
            got.append(env)
        return got

    def wait_for(self, what, fn, timeout):
        deadline = time.monotonic() + timeout
        while True:
            got = fn()
            if got or time.monotonic() > deadline:
                return got
            time.sleep(0.05)

    def test_healthy_volume(self):
        v = self.volume(6)
        mnt = self.mount(v, "k=4,m=2")
        rc, out, err = status(mnt)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("healthy", out)
        self.assertIn("last scrub: never", out)
        rc, out, err = status("--json", mnt)
        self.assertEqual(rc, 0, err)
        st = json.loads(out)
        self.assertEqual(st["state"], "healthy")
        self.assertEqual(st["mountpoint"], mnt)
        self.assertEqual([m["state"] for m in st["members"]], ["up"] * 6, st)
        self.assertEqual([m["path"] for m in st["members"]], v.members)
        for m in st["members"]:
            self.assertEqual((m["read_errors"], m["write_errors"], m["checksum_errors"]),
                             (0, 0, 0), m)
        self.assertEqual((st["damaged"], st["lost"]), ([], []))
        self.assertIsNone(st["scrub"]["last"])
        # any user, on an allow_other mount; and every mount without one named
        rc, out, err = status(mnt, user=H.NOBODY)
        self.assertEqual(rc, 0, err)
        # (other mounts, of other tests, may be listed too)
        rc, out, err = status("--json", user=H.NOBODY)
        self.assertIn(mnt, [s["mountpoint"] for s in json.loads(out)], err)
        # not an ecfs mount, and a bad command line
        self.assertEqual(status(v.base)[0], 3)
        self.assertEqual(status("--frobnicate")[0], 5)
        self.assert_clean_unmount(v)

    def test_member_lost_events_and_metrics(self):
        v = self.volume(3)
        out, prog = self.events_dir(v)
        prom = os.path.join(v.base, "ecfs.prom")
        mnt = self.mount(v, f"k=2,m=1,events={prog},metrics={prom}")
        H.write_file(os.path.join(mnt, "f"), H.pattern(300000, 1))
        self.assertTrue(self.wait_for("metrics", lambda: os.path.exists(prom), 10))
        m = metrics(prom)
        self.assertEqual(metric(m, "ecfs_volume_state", mountpoint=mnt), 0, m)
        self.assertEqual(metric(m, "ecfs_member_state", member="1"), 0, m)
        self.assertIsNotNone(metric(m, "ecfs_member_latency_seconds", member="1"), m)
        self.assertEqual(self.runs(out), [])

        lost_at = time.monotonic()
        v.lose(1, "rmdir")
        runs = self.wait_for("event", lambda: self.runs(out), 2.0)
        self.assertLessEqual(time.monotonic() - lost_at, 2.5, "no event within 2 s")
        self.assertTrue(runs, "the events program did not run within 2 s:\n" + v.log())
        ev = runs[0]
        self.assertEqual(ev.get("ECFS_EVENT"), "member_failed", ev)
        self.assertEqual(ev.get("ECFS_MEMBER"), "1", ev)
        self.assertEqual(ev.get("ECFS_MEMBER_DIR"), v.members[1], ev)
        self.assertIn("removed", ev.get("ECFS_DETAIL", ""), ev)
        self.assertEqual(ev.get("ECFS_MOUNTPOINT"), mnt, ev)

        rc, text, err = status(mnt)
        self.assertEqual(rc, 1, text + err)
        rc, text, err = status("--json", mnt)
        self.assertEqual(rc, 1, err)
        st = json.loads(text)
        self.assertEqual(st["state"], "degraded")
        self.assertEqual([m["state"] for m in st["members"]], ["up", "failed", "up"], st)
        self.assertIn("removed", st["members"][1]["why"])

        def failed_state():
            m = metrics(prom)
            return m if metric(m, "ecfs_volume_state") == 1 else None
        m = self.wait_for("metrics", failed_state, 2.0)
        self.assertTrue(m, "the metrics file does not carry the member's loss")
        self.assertEqual(metric(m, "ecfs_member_state", member="1"), 2, m)
        self.assertEqual(metric(m, "ecfs_members_failed"), 1, m)
        self.assert_clean_unmount(v)
        self.assertFalse(os.path.exists(prom), "the metrics file outlives the mount")

    def test_heal_progress_and_its_events(self):
        v = self.volume(3)
        out, prog = self.events_dir(v)
        mnt = self.mount(v, f"k=2,m=1,heal_rate=2,events={prog}")
        for i in range(6):
            H.write_file(os.path.join(mnt, f"f{i}"), H.pattern(1 << 20, i))
        v.lose(1, "empty")  # a new disk: rebuilt at 2 MB/s, about 3 s

        def rebuilding():
            rc, text, err = status("--json", mnt)
            st = json.loads(text)
            return (rc, st) if "eta_s" in st["heal"] else None
        got = self.wait_for("heal", rebuilding, 10)
        self.assertTrue(got, "status never showed the rebuild's progress:\n" + v.log())
        rc, st = got
        self.assertEqual(rc, 1, st)
        self.assertEqual(st["members"][1]["state"], "healing", st)
        self.assertEqual(st["heal"]["state"], "running", st)
        self.assertGreater(st["heal"]["bytes_total"], 0, st)
        self.assertLessEqual(st["heal"]["bytes"], st["heal"]["bytes_total"], st)
        text = status(mnt)[1]
        self.assertRegex(text, r"heal: member 1 rebuilding, \d+% .*left", text)

        self.wait_healed(mnt)
        self.assertEqual(status(mnt)[0], 0)
        runs = self.wait_for("events", lambda: len(self.runs(out)) >= 3 and self.runs(out), 2)
        self.assertEqual(sorted((r["ECFS_EVENT"], r["ECFS_MEMBER"]) for r in runs or []),
                         [("member_back", "1"), ("member_failed", "1"),
                          ("member_healed", "1")], runs)
        self.assert_clean_unmount(v)

    def test_member_missing_at_mount_is_told(self):
        v = self.volume(3)
        out, prog = self.events_dir(v)
        self.mount(v, "k=2,m=1")
        v.unmount()
        v.hide(2)
        mnt = self.mount(v, f"k=2,m=1,events={prog}")
        runs = self.wait_for("event", lambda: self.runs(out), 2.0)
        self.assertEqual([(r["ECFS_EVENT"], r["ECFS_MEMBER"]) for r in runs],
                         [("member_failed", "2")], runs)
        self.assertEqual(status(mnt)[0], 1)
        self.assert_clean_unmount(v)

    def corrupt_strip(self, v, idx, rel):
        """Flips bytes of stripe 0's strip of rel on member idx."""
        path = v.chunk_path(idx, rel)
        _, strip = H.chunk_offsets(path, 0)
        with open(path, "r+b") as f:
            f.seek(strip + 100)
            b = f.read(16)
            f.seek(strip + 100)
            f.write(bytes(x ^ 0xFF for x in b))

    def holds_data(self, v, idx, rel, k):
        """Whether member idx's chunk of rel holds a data position (a read
        of a healthy volume reads it; docs/FORMAT.md 4.1: offset 48)."""
        with open(v.chunk_path(idx, rel), "rb") as f:
            f.seek(48)
            return int.from_bytes(f.read(4), "little") < k

    def test_checksum_errors_counted_listed_and_rate_limited(self):
        v = self.volume(3)
        out, prog = self.events_dir(v)
        mnt = self.mount(v, f"k=2,m=1,events={prog}")
        files = {f"d{i:02d}": H.pattern(200000, 10 + i) for i in range(24)}
        for rel, data in files.items():
            H.write_file(os.path.join(mnt, rel), data)
        data_files = [rel for rel in files if self.holds_data(v, 0, rel, 2)]
        self.assertGreaterEqual(len(data_files), 4, "the rotation puts no data on member 0")
        first = data_files[0]
        self.corrupt_strip(v, 0, first)
        H.drop_caches()
        self.assert_exact(os.path.join(mnt, first), files[first], "a bad strip:")
        st = json.loads(status("--json", mnt)[1])
        self.assertEqual(st["members"][0]["checksum_errors"], 1, st)
        self.assertEqual(st["members"][1]["checksum_errors"], 0, st)
        self.assertEqual(st["damaged"], ["/" + first], st)
        self.assertEqual(st["state"], "healthy", st)
        # other users learn how many, not which (docs/SECURITY.md)
        rc, text, err = status("--json", mnt, user=H.NOBODY)
        self.assertEqual(rc, 0, err)
        other = json.loads(text)
        self.assertEqual((other["damaged_files"], other["damaged"]), (1, []), other)
        self.assertNotIn(first, text)
        runs = self.wait_for("event", lambda: self.runs(out), 2.0)
        self.assertEqual([r.get("ECFS_EVENT") for r in runs], ["checksum_error"], runs)
        self.assertEqual((runs[0].get("ECFS_MEMBER"), runs[0].get("ECFS_PATH")),
                         ("0", "/" + first))

        # many more on the same member: held back, the program runs no more
        for rel in data_files[1:]:
            self.corrupt_strip(v, 0, rel)
        H.drop_caches()
        for rel, data in files.items():
            self.assert_exact(os.path.join(mnt, rel), data, "bad strips:")
        st = json.loads(status("--json", mnt)[1])
        self.assertEqual(st["members"][0]["checksum_errors"], len(data_files), st)
        self.assertEqual(sorted(st["damaged"]), ["/" + r for r in data_files], st)
        time.sleep(1.0)
        runs = self.runs(out)
        self.assertEqual(len(runs), 1, f"{len(runs)} runs for one member's checksum errors")
        self.assert_clean_unmount(v)

    def test_lost_file_listed(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        H.write_file(os.path.join(mnt, "gone"), H.pattern(200000, 3))
        H.write_file(os.path.join(mnt, "kept"), H.pattern(200000, 4))
        for idx in (0, 1):  # two bad strips of one stripe: more than m
            self.corrupt_strip(v, idx, "gone")
        H.drop_caches()
        _, err = H.read_all(os.path.join(mnt, "gone"))
        self.assertEqual(err, errno.EIO)
        rc, text, err = status("--json", mnt)
        st = json.loads(text)
        self.assertEqual(st["lost"], ["/gone"], st)
        self.assertEqual(st["lost_files"], 1, st)
        self.assertIn("/gone", status(mnt)[1])
        self.assert_clean_unmount(v)

    def test_volume_full_event(self):
        why = H.disks_unusable_reason()
        if why:
            self.skipTest(f"ext4 member disks: {why}")
        v = self.volume(3, member_fs="ext4", member_mib=32)
        out, prog = self.events_dir(v)
        mnt = self.mount(v, f"k=2,m=1,events={prog}")
        piece = H.pattern(1 << 20, 7)
        with self.assertRaises(OSError) as cm:
            with open(os.path.join(mnt, "filler"), "wb") as f:
                for _ in range(256):
                    f.write(piece)
                    f.flush()
        self.assertEqual(cm.exception.errno, errno.ENOSPC)
        runs = self.wait_for("event", lambda: self.runs(out), 2.0)
        self.assertEqual([(r["ECFS_EVENT"], r["ECFS_MEMBER"]) for r in runs],
                         [("volume_full", "")], runs)
        self.assertEqual(status(mnt)[0], 0, "a full volume is not a degraded one")
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
