#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Debian package as a new user meets it: built with
`dpkg-buildpackage -us -uc -b` from a copy of the source tree (no build
directories, no .git), checked by lintian (no E: line), installed with
`dpkg -i`, a volume of three temporary member directories mounted
through an fstab line (`mount -T FSTAB -a -t fuse.ecfs`, which runs
mount.fuse3, which runs the installed /usr/bin/ecfs), a file written and
read back, `ecfs status` on it, unmounted, and the same again through
mount.fuse3 run directly (which hands on the options of fstab ecfs must
drop) at once, as systemctl restart does (the new daemon waits if the
old one is still closing the volume); the scrub units checked with systemd-analyze verify; the
package is removed at the end, also on failure.

Exits 77, saying why, where it cannot run: not root (dpkg -i), no
/dev/fuse, a tool missing (scripts/install-deps.sh installs them all),
or a package named ecfs already installed (the test would replace and
remove it).  The package build is most of its time (about 30 s of the
45 on 2 idle cores: it leaves the tests out).

usage: test_package.py SOURCE_ROOT"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.abspath(sys.argv[1])
TOOLS = ["dpkg-buildpackage", "dh", "lintian", "dpkg", "mount", "umount",
         "mount.fuse3"]
# What fstab may say beside ecfs's own options: mount(8) keeps defaults,
# _netdev, nofail and x-* to itself and hands rw, dev, suid, exec, atime
# on; ecfs drops what mount.fuse3 hands on that libfuse does not know.
FSTAB_OPTS = "defaults,k=2,m=1,allow_other,_netdev,nofail,noatime,x-systemd.device-timeout=10s"
UNITS = ["/lib/systemd/system/ecfs-scrub@.service", "/lib/systemd/system/ecfs-scrub@.timer"]


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def skip_reason():
    """None if the test can run here, else why not."""
    if os.geteuid() != 0:
        return "not root: dpkg -i and mount need it"
    for tool in TOOLS:
        if shutil.which(tool) is None:
            return f"{tool} not found (scripts/install-deps.sh installs it)"
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as e:
        return f"/dev/fuse unusable: {e.strerror}"
    if installed():
        return "a package named ecfs is installed: the test would replace and remove it"
    return None


def installed():
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", "ecfs"],
                       capture_output=True, text=True)
    return p.returncode == 0 and "installed" in p.stdout.split()


def run(cmd, **kw):
    """Runs cmd, its output shown; fails the test on a non-zero exit."""
    log("+", " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.stdout.strip():
        log(p.stdout.rstrip())
    if p.stderr.strip():
        log(p.stderr.rstrip())
    if p.returncode != 0:
        raise AssertionError(f"{cmd[0]} exited with {p.returncode}")
    return p


def copy_source(dest):
    """The source tree without build directories or .git, as a release
    tarball would hold it."""
    def ignore(path, names):
        top = os.path.samefile(path, SOURCE)
        return [n for n in names
                if n in (".git", "__pycache__") or
                (top and (n.startswith(("build", "obj-")) or n in ("subprojects",)))]
    shutil.copytree(SOURCE, dest, ignore=ignore, symlinks=True)


def build(tmp):
    """Builds the package in tmp; returns the path of ecfs_*.deb."""
    src = os.path.join(tmp, "ecfs")
    copy_source(src)
    env = dict(os.environ, DEB_BUILD_OPTIONS=f"nocheck parallel={os.cpu_count() or 1}")
    start = time.monotonic()
    run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, env=env)
    log(f"package built in {time.monotonic() - start:.0f} s")
    debs = glob.glob(os.path.join(tmp, "ecfs_*.deb"))
    assert len(debs) == 1, f"expected one ecfs_*.deb, found {debs}"
    return debs[0]


def check_lintian(deb):
    p = subprocess.run(["lintian", "--tag-display-limit", "0", deb],
                       capture_output=True, text=True)
    log(p.stdout.rstrip())
    errors = [line for line in p.stdout.splitlines() if line.startswith("E:")]
    assert not errors, "lintian reports errors:\n" + "\n".join(errors)


def check_contents():
    for path in ["/usr/bin/ecfs", "/usr/bin/ecfs-fsck", "/usr/share/man/man8/ecfs.8.gz",
                 "/usr/share/man/man8/ecfs-fsck.8.gz"] + UNITS:
        assert os.path.exists(path), f"the package installs no {path}"
    with open(UNITS[0], encoding="utf-8") as f:
        assert "ExecStart=/usr/bin/ecfs scrub start %f" in f.read(), "the scrub service's command"
    p = run(["dpkg-query", "-W", "-f", "${Depends}", "ecfs"])
    for dep in ["fuse3", "libfuse3-3", "libglib2.0-0"]:
        assert dep in p.stdout, f"the package does not depend on {dep}: {p.stdout}"


def check_units(tmp, mnt):
    """The scrub units for mnt, as systemd-analyze reads them (where it
    is installed: containers may lack systemd)."""
    if shutil.which("systemd-analyze") is None:
        log("systemd-analyze not found: the units are not verified")
        return
    inst = run(["systemd-escape", "--path", mnt]).stdout.strip()
    units = os.path.join(tmp, "units")
    os.mkdir(units)
    names = []
    for unit in UNITS:
        name = os.path.basename(unit).replace("@.", f"@{inst}.")
        shutil.copy(unit, os.path.join(units, name))
        names.append(os.path.join(units, name))
    p = run(["systemd-analyze", "verify", "--man=no"] + names)
    assert not p.stderr.strip(), "systemd-analyze finds fault with the units"


def daemon_exe(mnt):
    """The program of the process serving mnt (by its command line)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            if mnt.encode() in args and os.path.basename(args[0]) == b"ecfs":
                return os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
    return None


def is_mounted(mnt):
    with open("/proc/self/mounts", encoding="utf-8") as f:
        return any(line.split()[1] == mnt for line in f)


def mount_through_fstab(tmp):
    """Mounts the volume of the fstab line; returns (members, mountpoint)."""
    members = ":".join(os.path.join(tmp, f"d{i}") for i in range(3))
    mnt = os.path.join(tmp, "mnt")
    for d in members.split(":") + [mnt]:
        os.mkdir(d)
    fstab = os.path.join(tmp, "fstab")
    with open(fstab, "w", encoding="utf-8") as f:
        f.write("# ecfs test: a volume of three member directories\n")
        f.write(f"{members}  {mnt}  fuse.ecfs  {FSTAB_OPTS}  0 0\n")
    run(["mount", "-T", fstab, "-a", "-t", "fuse.ecfs"])
    return members, mnt


def use_volume(mnt):
    assert is_mounted(mnt), f"mount -a mounted nothing on {mnt}"
    exe = daemon_exe(mnt)
    assert exe == "/usr/bin/ecfs", f"the mount is served by {exe}, not the package's"
    data = os.urandom(300000)
    with open(os.path.join(mnt, "file"), "wb") as f:
        f.write(data)
    with open(os.path.join(mnt, "file"), "rb") as f:
        assert f.read() == data, "the file reads back different"
    p = run(["ecfs", "status", mnt])
    assert "healthy" in p.stdout, "ecfs status does not say healthy"


def unmount(mnt, lazy=False):
    if mnt and is_mounted(mnt):
        subprocess.run(["umount"] + (["-l"] if lazy else []) + [mnt])


def main():
    why = skip_reason()
    if why:
        print(f"skip: {why}", flush=True)
        return 77
    tmp = tempfile.mkdtemp(prefix="ecfs-pkg-")
    mnt = None
    try:
        deb = build(tmp)
        check_lintian(deb)
        run(["dpkg", "-i", deb])
        check_contents()
        members, mnt = mount_through_fstab(tmp)
        check_units(tmp, mnt)
        use_volume(mnt)
        run(["umount", mnt])
        assert not is_mounted(mnt), "still mounted after umount"
        # mount.fuse3 run directly hands every option on, the ones of
        # fstab too; mounted again at once, as systemctl restart does
        run(["mount.fuse3", members, mnt, "-t", "fuse.ecfs", "-o", FSTAB_OPTS])
        use_volume(mnt)
        run(["umount", mnt])
        log("ok: built, lintian clean, installed, mounted through fstab and "
            "mount.fuse3, used, unmounted")
        return 0
    finally:
        unmount(mnt, lazy=True)
        if installed():
            subprocess.run(["dpkg", "-r", "ecfs"])
        # the daemon may still be closing the volume it was unmounted from
        for _ in range(50):
            if not mnt or daemon_exe(mnt) is None:
                break
            time.sleep(0.1)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        log(f"FAIL: {e}")
        sys.exit(1)
