# SPDX-License-Identifier: MIT
"""Shared machinery of the crash-consistency tests (tests/crash).

A *workload* is a short sequence of file operations (writes, truncates,
fsyncs, renames) on a k=4,m=2 volume with 4 KiB strips, starting from a
fixed initial state.  The Recorder runs it on a mount and keeps every
state the files went through (a *version*: the whole tree as the
application saw it after one operation) and what was promised durable
(an fsync or a directory fsync that returned).  After a crash, check_tree()
reads the remounted tree and accepts it only if:

  * the set of names is the set of some version not older than the last
    directory fsync, and every name made durable is there;
  * every file reads entirely, without an error;
  * its size is the size of an allowed version, and each stripe-sized
    range of it holds the bytes of one allowed version (old or new),
    where "allowed" starts at the file's last fsync.  Bytes past the end
    of the version a range matches read as zeros (a first write cut off
    before it landed reads as the hole it was), and so do bytes a
    truncate between that version and the one the size comes from cut
    off (a truncate-then-extend never shows the old bytes again).

The test programs take `ECFS ECFS_FSCK [unittest args]` (meson passes
both); volumes live on /dev/shm when it is writable, as member fsyncs are
the tests' inner loop.  ECFS_CRASH_FULL=1 (scripts/crash-full.sh) turns
the bounded CI samples into the full sets.
"""

import errno
import itertools
import os
import random
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "fs"))
import ecfs_harness as H  # noqa: E402

K, M = 4, 2
N_MEMBERS = K + M
STRIP = 4096
STRIPE = K * STRIP
OPTS = f"k={K},m={M},code=rs-cauchy,strip={STRIP}"
FULL = os.environ.get("ECFS_CRASH_FULL") == "1"
# The write-quorum variant (ECFS_CRASH_QUORUM=Q, meson's *-quorum tests): the
# workload runs under -o write_quorum=Q with member SLOW_MEMBER judged slow
# for writes from the start (ECFS_FAULT's slow rule), so every file it
# writes leaves that member out, marked in the others' headers, as a failed
# member is.  Until the heal catches them up such files survive Q-k lost
# members, not m: the checks hide that many.
QUORUM = int(os.environ.get("ECFS_CRASH_QUORUM") or 0)
SLOW_MEMBER = 5
HIDE = QUORUM - K if QUORUM else M
# The small-write log variant (ECFS_CRASH_SMALL_LOG=1, meson's *-smalllog
# tests): the workload runs under -o tune.small_log=on, so its overwrites
# smaller than a stripe go through the log (docs/CRASH.md, "The small-write
# log"); the checks mount without it (a replay does not depend on it).
SMALL_LOG = os.environ.get("ECFS_CRASH_SMALL_LOG") == "1"
FSCK = None            # path of ecfs-fsck, set by main()
WRITES_RE = re.compile(r"member writes: (\d+)")


def tmpdir():
    if os.environ.get("ECFS_TEST_TMPDIR"):
        return os.environ["ECFS_TEST_TMPDIR"]
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def main():
    """Entry point: argv is PROG ECFS ECFS_FSCK [unittest args]."""
    global FSCK
    if len(sys.argv) < 3:
        print(f"usage: {sys.argv[0]} ECFS ECFS_FSCK [unittest args]",
              file=sys.stderr)
        return 2
    FSCK = os.path.abspath(sys.argv[2])
    if FULL:
        # the full sets run for long; meson's own timeout is the limit
        os.environ["ECFS_TEST_WATCHDOG"] = "0"
    return H.main([sys.argv[0], sys.argv[1]] + sys.argv[3:])


# ---------------------------------------------------------------- workloads

class Crashed(Exception):
    """A file operation failed because the daemon is gone."""


class Recorder:
    """Runs a workload's operations on a mount (or only models them, with
    mnt=None) and keeps the versions and the durability promises.

    versions[i] is {name: bytes} after operation i (versions[0]: the
    initial state).  events lists (kind, version index, mark, names):
    'fsync' makes `names` durable at that version, 'dirsync' the name set
    and every name whose content was synced; `mark` is what mark_fn()
    returned when the call came back (the member-operation count, for the
    power-loss test).  started[i] is mark_fn() before operation i began."""

    def __init__(self, mnt, initial, mark_fn=None, alive_fn=None):
        self.mnt = mnt
        self.mark_fn = mark_fn or (lambda: 0)
        self.alive_fn = alive_fn or (lambda: True)
        self.versions = [dict(initial)]
        self.started = [0]
        self.events = []
        self.fds = {}
        self.synced = set(initial)     # names whose content is on disk
        self.error = None              # an error while the daemon lived

    # -- plumbing ------------------------------------------------------------
    def cur(self):
        return self.versions[-1]

    def _path(self, name):
        return os.path.join(self.mnt, name)

    def _do(self, new_state, call):
        """Appends the new version, then runs the system call."""
        self.started.append(self.mark_fn())
        self.versions.append(new_state)
        if self.mnt is None:
            return None
        try:
            return call()
        except OSError as e:
            self._failed(e)

    def _failed(self, e):
        # The daemon killed itself (abort_after) or was killed: the mount
        # answers ENOTCONN.  Anything else while it still lives is a bug.
        for _ in range(50):
            if not self.alive_fn():
                raise Crashed(e)
            time.sleep(0.02)
        self.error = f"{e} while the daemon is alive"
        raise Crashed(e)

    def _fd(self, name):
        if name not in self.fds:
            path = self._path(name)
            try:
                self.fds[name] = os.open(path, os.O_RDWR)
            except OSError as e:
                self._failed(e)
        return self.fds[name]

    # -- operations ------------------------------------------------------------
    def create(self, name):
        st = dict(self.cur())
        st[name] = b""
        self.synced.discard(name)

        def call():
            self.fds[name] = os.open(self._path(name),
                                     os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._do(st, call)

    def write(self, name, off, data):
        st = dict(self.cur())
        old = st[name]
        if len(old) < off:
            old = old + bytes(off - len(old))
        st[name] = old[:off] + data + old[off + len(data):]
        self.synced.discard(name)
        fd = self._fd(name) if self.mnt else None

        def call():
            done = 0
            while done < len(data):
                done += os.pwrite(fd, data[done:], off + done)
        self._do(st, call)

    def truncate(self, name, size):
        st = dict(self.cur())
        old = st[name]
        st[name] = old[:size] + bytes(max(0, size - len(old)))
        self.synced.discard(name)
        fd = self._fd(name) if self.mnt else None
        self._do(st, lambda: os.ftruncate(fd, size))

    def fallocate(self, name, off, length):
        """fallocate mode 0: room set aside, the size raised to off+length."""
        st = dict(self.cur())
        old = st[name]
        st[name] = old + bytes(max(0, off + length - len(old)))
        self.synced.discard(name)
        fd = self._fd(name) if self.mnt else None
        self._do(st, lambda: H.fallocate(fd, 0, off, length))

    def rename(self, src, dst):
        st = dict(self.cur())
        st[dst] = st.pop(src)
        if src in self.synced:
            self.synced.add(dst)
        else:
            self.synced.discard(dst)
        self.synced.discard(src)
        self._do(st, lambda: os.rename(self._path(src), self._path(dst)))
        if src in self.fds:
            self.fds[dst] = self.fds.pop(src)

    def unlink(self, name):
        st = dict(self.cur())
        del st[name]
        self.synced.discard(name)
        if name in self.fds:
            self.close(name)
        self._do(st, lambda: os.unlink(self._path(name)))

    def fsync(self, name):
        if self.mnt is not None:
            fd = self._fd(name)
            try:
                os.fsync(fd)
            except OSError as e:
                self._failed(e)
        self.synced.add(name)
        self.events.append(("fsync", len(self.versions) - 1, self.mark_fn(),
                            (name,)))

    def fsync_dir(self):
        if self.mnt is not None:
            try:
                fd = os.open(self.mnt, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as e:
                self._failed(e)
        self.events.append(("dirsync", len(self.versions) - 1,
                            self.mark_fn(), tuple(sorted(self.synced))))

    def close(self, name):
        fd = self.fds.pop(name, None)
        if fd is not None and self.mnt is not None:
            try:
                os.close(fd)
            except OSError as e:
                self._failed(e)

    def close_all(self):
        for name in list(self.fds):
            self.close(name)

    def abandon(self):
        """After a crash: drop the descriptors (closing them fails)."""
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds.clear()

    # -- what a crash may show ---------------------------------------------------
    def promises(self, upto_mark=None):
        """(durable {name: version}, name-set floor) from the events whose
        call returned (with a mark <= upto_mark, if given)."""
        durable, ns = {}, 0
        for kind, ver, mark, names in self.events:
            if upto_mark is not None and mark > upto_mark:
                continue
            for n in names:
                durable[n] = max(durable.get(n, 0), ver)
            if kind == "dirsync":
                ns = max(ns, ver)
        return durable, ns


class Workload:
    """name, the initial files {name: bytes}, and run(recorder); laid_out:
    the initial files (zeros) are given their size by ftruncate, with no
    stripe written, as a layout by fallocate leaves them."""

    def __init__(self, name, initial, run, laid_out=False):
        self.name, self.initial, self.run = name, initial, run
        self.laid_out = laid_out


def wl_seqwrite(w):
    """A new file of five stripes and a bit, in 12 KiB writes."""
    data = H.pattern(5 * STRIPE + 1000, 11)
    w.create("f")
    for i, off in enumerate(range(0, len(data), 12288)):
        w.write("f", off, data[off:off + 12288])
        if i == 3:
            w.fsync("f")
    w.fsync("f")
    w.close_all()


def wl_overwrite(w):
    """Two overwrites in the middle of an eight-stripe file, each fsync'd."""
    w.write("f", STRIPE + STRIPE // 2, H.pattern(STRIPE * 5 // 2, 21))
    w.fsync("f")
    w.write("f", 5 * STRIPE + 100, H.pattern(9000, 22))
    w.fsync("f")
    w.close_all()


def wl_append(w):
    """Appends to a file whose last stripe is partial."""
    size = len(w.cur()["f"])
    w.write("f", size, H.pattern(10000, 31))
    w.fsync("f")
    w.write("f", size + 10000, H.pattern(20000, 32))
    w.close_all()


def wl_truncate(w):
    """Truncate down, up (the gap must read as zeros), down again."""
    w.truncate("f", 2 * STRIPE + 1234)
    w.fsync("f")
    w.truncate("f", 5 * STRIPE)
    w.write("f", 4 * STRIPE, H.pattern(3000, 41))
    w.fsync("f")
    w.truncate("f", STRIPE + 10)
    w.close_all()


def wl_rename(w):
    """The atomic-replace pattern: write a temporary file, fsync it, rename
    it over an existing file, fsync the directory; then unlink a file."""
    w.create("t")
    w.write("t", 0, H.pattern(2 * STRIPE + 500, 51))
    w.write("t", 2 * STRIPE + 500, H.pattern(STRIPE + 77, 52))
    w.fsync("t")
    w.close("t")
    w.rename("t", "b")
    w.fsync_dir()
    w.unlink("a")
    w.fsync_dir()


def wl_random(w):
    """Small writes at random places (some extend the file), an fsync after
    every fourth."""
    rng = random.Random(61)
    for i in range(16):
        size = len(w.cur()["f"])
        off = rng.randrange(0, size + 3000)
        w.write("f", off, rng.randbytes(rng.randrange(1, 6000)))
        if i % 4 == 3:
            w.fsync("f")
    w.close_all()


def wl_laidout(w):
    """Whole stripes, then part of two, written into a file laid out
    first (first writes below its size), then a stripe written again (an
    overwrite), each step fsync'd; in the first step the file is also
    made longer by fallocate (room set aside on the members) and written
    there."""
    w.write("f", 0, H.pattern(2 * STRIPE, 71))
    w.fallocate("f", 6 * STRIPE, 2 * STRIPE)
    w.write("f", 2 * STRIPE, H.pattern(2 * STRIPE, 72))
    w.write("f", 6 * STRIPE + 500, H.pattern(STRIPE, 75))
    w.fsync("f")
    w.write("f", 4 * STRIPE + 100, H.pattern(STRIPE, 73))
    w.write("f", STRIPE, H.pattern(STRIPE, 74))
    w.fsync("f")
    w.close_all()


WORKLOADS = {
    "seqwrite": Workload("seqwrite", {}, wl_seqwrite),
    "overwrite": Workload("overwrite", {"f": H.pattern(8 * STRIPE, 20)},
                          wl_overwrite),
    "append": Workload("append", {"f": H.pattern(3 * STRIPE + 5000, 30)},
                       wl_append),
    "truncate": Workload("truncate", {"f": H.pattern(6 * STRIPE + 300, 40)},
                         wl_truncate),
    "rename": Workload("rename", {"a": H.pattern(3 * STRIPE + 7, 50),
                                  "b": H.pattern(2 * STRIPE + 99, 53)},
                       wl_rename),
    "random": Workload("random", {"f": H.pattern(8 * STRIPE, 60)}, wl_random),
    "laidout": Workload("laidout", {"f": bytes(6 * STRIPE)}, wl_laidout,
                        laid_out=True),
}


# Crash states that the daemon does not survive yet, each with the reason;
# they run only with ECFS_SLOW=1 or ECFS_CRASH_FULL=1 until the fix lands
# (then the entry goes).  Key: (test kind, workload).
PENDING = {}


def skip_pending(case, kind, name):
    why = PENDING.get((kind, name))
    if why and not FULL and os.environ.get("ECFS_SLOW") != "1":
        case.skipTest(f"{why}; runs with ECFS_SLOW=1")


def model(wl):
    """The recorder of a workload run without a mount (all its versions)."""
    rec = Recorder(None, wl.initial)
    wl.run(rec)
    return rec


# ---------------------------------------------------------------- checking

def _allowed(rec, name, durable):
    lo = durable.get(name, 0)
    return [v for v in range(lo, len(rec.versions)) if name in rec.versions[v]]


def check_file(rec, name, data, durable):
    """Problems (strings) of one file's bytes against its allowed versions."""
    allowed = _allowed(rec, name, durable)
    if not allowed:
        return [f"{name}: exists, but no allowed version has it"]
    hist = {v: rec.versions[v][name] for v in allowed}
    size = len(data)
    sized = [w for w in allowed if len(hist[w]) == size]
    if not sized:
        sizes = sorted({len(h) for h in hist.values()})
        return [f"{name}: size {size} is no allowed version's size {sizes}"]
    # cut[v]: the bytes of version v that can show at this size: up to the
    # shortest version between v and one that has this size
    cuts = {}
    for v in allowed:
        cuts[v] = set()
        for w in sized:
            lo, hi = min(v, w), max(v, w)
            cuts[v].add(min(len(hist[u]) for u in allowed if lo <= u <= hi))
    out = []
    for a in range(0, size, STRIPE):
        b = min(a + STRIPE, size)
        got = data[a:b]
        ok = False
        for v in allowed:
            for cut in cuts[v]:
                exp = hist[v][a:max(a, min(b, cut))]
                if got == exp + bytes(b - a - len(exp)):
                    ok = True
                    break
            if ok:
                break
        if not ok:
            newest = hist[allowed[-1]]
            exp = newest[a:b] + bytes(max(0, b - a - len(newest[a:b])))
            out.append(f"{name}: bytes [{a}, {b}) of {size} match no allowed "
                       f"version {allowed[0]}..{allowed[-1]} (vs the newest: "
                       f"{H.describe_mismatch(got, exp)})")
            if len(out) >= 3:
                break
    return out


def check_tree(rec, mnt, durable, ns):
    """Problems of a mounted tree after a crash, for the promises
    (durable, ns) of Recorder.promises()."""
    # Every check is on a fresh mount: nothing of these files is cached.
    # (No drop_caches: it is slow, and empties the whole machine's cache.)
    try:
        names = set(os.listdir(mnt))
    except OSError as e:
        return [f"listing the root failed: {e}"]
    out = []
    sets = [set(v) for v in rec.versions[ns:]]
    if names not in sets:
        out.append(f"names {sorted(names)} are no allowed version's "
                   f"(from version {ns}: {[sorted(s) for s in sets[:6]]}...)")
    for name, ver in durable.items():
        if all(name in v for v in rec.versions[ver:]) and name not in names:
            out.append(f"{name}: fsync'd at version {ver} but missing")
    for name in sorted(names):
        data, err = H.read_all(os.path.join(mnt, name))
        if err:
            out.append(f"{name}: read failed with "
                       f"{errno.errorcode.get(err, err)} after {len(data)} bytes")
            continue
        out.extend(check_file(rec, name, data, durable))
    return out


# ---------------------------------------------------------------- volumes

def new_volume(members_from=None, hide=()):
    """A fresh volume in the temp dir; its members copied from the member
    directories members_from (cp -a: modes, xattrs, hard links), with the
    members in `hide` left out (missing: a lost disk)."""
    v = H.Volume(N_MEMBERS, tmpdir=tmpdir())
    if members_from is not None:
        for i in range(N_MEMBERS):
            if i in hide or not os.path.isdir(members_from[i]):
                v.lose(i, "rmdir")
            else:
                v.fill_member(i, members_from[i])
    return v


def start_env(v, env, **kw):
    """v.start() with extra environment variables for the daemon."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return v.start(**kw)
    finally:
        for k, val in saved.items():
            if val is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = val


def start_run(v, env=None):
    """Starts the daemon for a workload run (start_env with env): under
    the write-quorum variant with its option and its slow member."""
    env = dict(env or {})
    opts = ["tune.small_log=" + ("on" if SMALL_LOG else "off")]
    if QUORUM:
        rules = [env.get("ECFS_FAULT"), f"member={SLOW_MEMBER},op=write,slow"]
        env["ECFS_FAULT"] = ";".join(r for r in rules if r)
        opts.append(f"write_quorum={QUORUM}")
    return start_env(v, env, opts=",".join(opts))


def left_out(v):
    """Under the write-quorum variant, fails unless the run's log says a
    file was written past the slow member (the path under test); under
    the small-write log variant, unless some member holds a log."""
    if QUORUM and "writing past slow members" not in v.output():
        raise AssertionError("the workload never left the slow member out:\n"
                             + v.log())
    if SMALL_LOG and not any(os.path.isdir(os.path.join(m, ".ecfs", "log"))
                             for m in v.members):
        raise AssertionError("the workload wrote nothing through the small-write log")


def stop(v):
    """Unmounts, also a mount whose daemon is dead (fusermount3 -uz at
    once: a clean unmount of a dead connection may wait for users).
    Returns the daemon's exit status (negative: the signal)."""
    if v.proc is not None and v.proc.poll() is not None:
        subprocess.run(["fusermount3", "-u", "-z", v.mnt], capture_output=True)
    return v.unmount()


def fsck(*args, members):
    r = subprocess.run([FSCK, "--no-progress", *args, ":".join(members)],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def make_template(wl, opts=OPTS):
    """A volume holding the workload's initial files, unmounted."""
    v = new_volume()
    v.mount(opts)
    for name, data in wl.initial.items():
        if wl.laid_out:
            with open(os.path.join(v.mnt, name), "wb") as f:
                os.ftruncate(f.fileno(), len(data))
                os.fsync(f.fileno())
        else:
            H.write_file(os.path.join(v.mnt, name), data, fsync=True)
    rc = v.unmount()
    if rc != 0:
        raise AssertionError(f"template volume: daemon exit {rc}\n{v.log()}")
    return v


def member_writes(v):
    """W from the daemon's last "member writes: W" line (fault builds)."""
    found = WRITES_RE.findall(v.output())
    return int(found[-1]) if found else None


def hidden_sets(rng, count):
    """`count` seeded HIDE-subsets of the members to hide (all if FULL):
    m of them, Q-k under the write-quorum variant."""
    combos = list(itertools.combinations(range(N_MEMBERS), HIDE))
    if FULL or count >= len(combos):
        return combos
    return rng.sample(combos, count)


def verify_state(make_state, rng, subsets, what):
    """The checks of one crash state.  make_state() builds the state afresh
    each time it is called and returns (volume, recorder, durable, ns), or
    None if there is no crash state to check.  (A state is never copied
    once made: a copy has other inode numbers than the members the daemon
    wrote, and the daemon may rely on them, e.g. for intents.)
      1. all members, mounted without fsck first, check; fsck -y (exit 0
         or 1), fsck -n (exit 0), mount, check;
      2. each of `subsets` m-subsets (all with FULL) hidden, on a new
         state each: mounted without fsck, check.
    Returns (problems each prefixed with `what`, whether there was a state)."""
    out = []

    def mounted_check(v, rec, durable, ns, label):
        if not v.start():
            out.append(f"{what}{label}: the mount failed "
                       f"(exit {v.last_exit}):\n{v.log(1500)}")
            return
        try:
            probs = check_tree(rec, v.mnt, durable, ns)
        finally:
            alive = v.alive()
            rc = stop(v)
        out.extend(f"{what}{label}: {p}" for p in probs)
        if not alive or rc != 0:
            out.append(f"{what}{label}: daemon exit {rc}:\n{v.log(1500)}")

    st = make_state()
    if st is None:
        return out, False
    v, rec, durable, ns = st
    try:
        mounted_check(v, rec, durable, ns, " (remount, no fsck)")
        rc, text = fsck("-y", members=v.members)
        if rc not in (0, 1):
            out.append(f"{what}: fsck -y exit {rc}:\n{text[-1500:]}")
        rc, text = fsck("-n", members=v.members)
        if rc != 0:
            out.append(f"{what}: fsck -n after -y exit {rc}:\n{text[-1500:]}")
        mounted_check(v, rec, durable, ns, " (after fsck)")
    finally:
        v.cleanup()
    for hide in hidden_sets(rng, subsets):
        st = make_state()
        if st is None:
            continue
        v, rec, durable, ns = st
        try:
            for i in hide:
                v.lose(i, "rmdir")
            mounted_check(v, rec, durable, ns, f" (members {hide} hidden)")
        finally:
            v.cleanup()
    return out, True


def report(case, title, problems, summary):
    H.log(f"{title}: {summary}")
    if problems:
        # which crash points or states failed, in order, once each
        where = list(dict.fromkeys(p.split(":")[0].split(" (")[0]
                                   for p in problems))
        summary += f"; failing: {' '.join(where[:40])}"
        summary += " ..." if len(where) > 40 else ""
        shown = "\n".join(problems[:25])
        more = f"\n... and {len(problems) - 25} more" if len(problems) > 25 else ""
        case.fail(f"{title}: {len(problems)} problems ({summary}):\n"
                  f"{shown}{more}")
