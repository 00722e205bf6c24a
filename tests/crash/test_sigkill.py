# SPDX-License-Identifier: MIT
"""SIGKILL loop: fsx on a mount, the daemon killed at a random moment.

Each round mounts the volume, starts fsx (tests/fs/test_fsx.py's setup,
4 KiB strips so that its 1 MiB file spans 64 stripes) with a new seed on
the same file, and SIGKILLs the daemon after a seeded random delay in the
middle of fsx's operations.  Then: the dead mount is detached
(fusermount3 -uz); the file reads entirely without an error when mounted
again before any fsck (on a copy); ecfs-fsck -y repairs (exit 0 or 1),
ecfs-fsck -n is clean (exit 0), the file reads entirely from all members
and with a seeded m-subset hidden, and fsck -n is still clean.  fsx's own
verdict is not asked for: it dies with the mount.  Rounds: ROUNDS (CI)
or ECFS_SIGKILL_ROUNDS, 40 with ECFS_CRASH_FULL=1.  Exit 77 (skip) without
fsx.

usage: test_sigkill.py ECFS ECFS_FSCK [unittest args]"""

import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "fs"))

import crashlib as C  # noqa: E402
import test_fsx  # noqa: E402

H = C.H
ROUNDS = int(os.environ.get("ECFS_SIGKILL_ROUNDS", "40" if C.FULL else "5"))


def wchan(pid):
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f.read() or "?"
    except OSError as e:
        return str(e)


def abort_connection(conn):
    """Aborts a FUSE connection: whatever still waits on it fails."""
    try:
        with open(f"/sys/fs/fuse/connections/{conn}/abort", "w") as f:
            f.write("1")
    except OSError:
        pass


class SigkillTest(H.MountedCase):

    def fsx(self, v, seed):
        conf = os.path.join(v.base, "fsx.toml")
        with open(conf, "w") as f:
            f.write(test_fsx.CONFIG)
        art = os.path.join(v.base, f"artifacts-{seed}")
        os.mkdir(art)
        return subprocess.Popen(
            [test_fsx.FSX, "-N", "1000000", "-S", str(seed), "-f", conf,
             "-P", art, os.path.join(v.mnt, "fsxfile")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def check_reads(self, members, what):
        """The fsx file reads entirely (no error) on a fresh mount of copies
        of `members`; fsck -n stays clean on the originals."""
        c = C.new_volume(members)
        try:
            if not c.start():
                return [f"{what}: mount failed (exit {c.last_exit}):\n{c.log()}"]
            try:
                names = os.listdir(c.mnt)
                data, err = H.read_all(os.path.join(c.mnt, "fsxfile"))
            finally:
                alive = c.alive()
                rc = C.stop(c)
        finally:
            c.cleanup()
        out = []
        if "fsxfile" not in names:
            out.append(f"{what}: fsxfile is gone (names: {names})")
        elif err:
            out.append(f"{what}: fsxfile read failed with errno {err} after "
                       f"{len(data)} bytes")
        if not alive or rc != 0:
            out.append(f"{what}: daemon exit {rc}")
        return out

    def test_sigkill_loop(self):
        rng = random.Random(2026)
        v = self.volume(C.N_MEMBERS, tmpdir=C.tmpdir())
        self.mount(v, C.OPTS)
        self.assert_clean_unmount(v)
        problems, repaired, hung = [], 0, 0
        for rnd in range(ROUNDS):
            what = f"round {rnd}"
            self.mount(v)
            conn = os.minor(os.stat(v.mnt).st_dev)
            proc = self.fsx(v, seed=rng.randrange(1 << 30))
            try:
                time.sleep(rng.uniform(0.3, 2.5))
                self.assertTrue(v.alive(), "the daemon died by itself:\n"
                                + v.log())
                v.proc.kill()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    # not a crash-consistency matter (and fsx is killed
                    # below), but worth a line: where fsx waits
                    hung += 1
                    H.log(f"{what}: fsx still runs 10 s after the daemon "
                          f"died; it waits in {wchan(proc.pid)}")
                    abort_connection(conn)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            C.stop(v)
            # mounted again without fsck first (on a copy: the mount may
            # recover, and fsck should see the crash state itself)
            problems += self.check_reads(v.members, f"{what} (no fsck)")
            rc, text = C.fsck("-y", members=v.members)
            repaired += rc == 1
            if rc not in (0, 1):
                problems.append(f"{what}: fsck -y exit {rc}:\n{text[-1500:]}")
            rc, text = C.fsck("-n", members=v.members)
            if rc != 0:
                problems.append(f"{what}: fsck -n after -y exit {rc}:\n"
                                f"{text[-1500:]}")
            problems += self.check_reads(v.members, what)
            hide = rng.choice(list(C.itertools.combinations(
                range(C.N_MEMBERS), C.M)))
            tmp = C.new_volume(v.members, hide=hide)
            try:
                problems += self.check_reads(tmp.members,
                                             f"{what} (members {hide} hidden)")
            finally:
                tmp.cleanup()
            rc, text = C.fsck("-n", members=v.members)
            if rc != 0:
                problems.append(f"{what}: fsck -n after the reads exit {rc}")
        C.report(self, "SIGKILL loop", problems, f"{ROUNDS} rounds, fsck repaired "
                 f"something after {repaired}, fsx had to be killed after {hung}")


if __name__ == "__main__":
    if test_fsx.FSX is None:
        print("SKIP: fsx not found (install it with `cargo install fsx`, or "
              "set FSX=/path/to/fsx)", file=sys.stderr)
        sys.exit(H.SKIP)
    sys.exit(C.main())
