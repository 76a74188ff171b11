#!/usr/bin/env python3
"""The Debian package, built and used as an administrator would: built with
dpkg-buildpackage from a copy of the source tree (the checkout stays
clean), its contents listed by dpkg -c, checked by lintian (no errors),
then installed with dpkg -i and purged with dpkg --purge, leaving no file
behind. Twice: as on this host, not booted by systemd (the group comes
from addgroup, the units are enabled for a later boot, nothing is started),
and in a private mount
namespace whose /run/systemd/system makes the maintainer scripts take
their systemd path, with a systemctl that records what it is asked (there
is no systemd here to start units)."""
import grp
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

SKIP = 77
SOURCE = os.environ.get("PROFD_SOURCE_ROOT") or sys.exit("test setup: $PROFD_SOURCE_ROOT is not set")

# What the package holds (dpkg -c), directories left out.
EXPECTED_FILES = {
    "./lib/systemd/system/profd.service",
    "./lib/systemd/system/profd.socket",
    "./usr/bin/profctl",
    "./usr/sbin/profd",
    "./usr/lib/sysusers.d/profd.conf",
    "./usr/lib/tmpfiles.d/profd.conf",
    "./usr/share/doc/profd/changelog.gz",
    "./usr/share/doc/profd/copyright",
    "./usr/share/doc/profd/profd.conf.example",
    "./usr/share/man/man1/profctl.1.gz",
    "./usr/share/man/man5/profd.conf.5.gz",
    "./usr/share/man/man8/profd.8.gz",
}

# Where a package could leave files. Not /tmp, /var/tmp, /usr/local or
# /var/log (other tests and tools write there meanwhile), nor dpkg's and
# apt's own records.
WATCHED = ["/etc", "/usr", "/var", "/opt", "/srv", "/run/profd"]
UNWATCHED = ("/usr/local", "/var/tmp", "/var/log", "/var/lib/dpkg", "/var/lib/apt", "/var/cache/apt",
             "/var/cache/debconf", "/var/cache/man", "/etc/ld.so.cache")

# Records each call in $SYSTEMCTL_LOG. Work on the file system (--root=:
# deb-systemd-helper's presets, which enable the units) is done by the real
# systemctl; what needs a running systemd is answered as systemd would for
# units that are enabled and not yet running.
SYSTEMCTL_STUB = """#!/bin/sh
echo "$*" >> "$SYSTEMCTL_LOG"
case " $* " in
  *" --root="*) exec %s "$@" ;;
  *" --version "*) echo "systemd 252 (252)" ;;
  *" is-enabled "*) echo enabled ;;
  *" is-active "*) exit 3 ;;
esac
exit 0
"""


def skip(why):
    print(f"SKIP: {why}; this test did NOT run", file=sys.stderr)
    sys.exit(SKIP)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def dpkg(*args, env=None, wrap=()):
    """dpkg, retried while another dpkg/apt holds the lock"""
    for _ in range(60):
        r = subprocess.run(list(wrap) + ["dpkg"] + list(args), capture_output=True, text=True, env=env)
        if r.returncode == 0 or "lock" not in r.stderr:
            break
        time.sleep(2)
    if r.returncode != 0:
        raise AssertionError(f"dpkg {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def file_list():
    files = set()
    for top in WATCHED:
        for root, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in UNWATCHED]
            for n in names + dirs:
                p = os.path.join(root, n)
                if p not in UNWATCHED:
                    files.add(p)
        if os.path.exists(top):
            files.add(top)
    return files


def copy_source(dest):
    """The source tree without build directories or version control."""
    def ignore(d, names):
        if os.path.abspath(d) != os.path.abspath(SOURCE):
            return []
        return [n for n in names if n.startswith(("build", ".git", "obj-")) or n == "subprojects"]
    shutil.copytree(SOURCE, dest, ignore=ignore, symlinks=True)
    # leftovers of a package build in the checkout itself
    for leftover in ("debian/.debhelper", "debian/profd", "debian/tmp", "debian/files",
                     "debian/debhelper-build-stamp", "debian/profd.substvars"):
        p = os.path.join(dest, leftover)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.unlink(p)


def build(work):
    src = os.path.join(work, "profd")
    copy_source(src)
    t0 = time.monotonic()
    # nocheck: the one test the package build runs (the man pages) is in
    # this suite already; parallel: every CPU, as CI has few
    env = dict(os.environ, DEB_BUILD_OPTIONS=f"nocheck parallel={os.cpu_count() or 1}")
    r = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, capture_output=True, text=True, env=env)
    log = r.stdout + r.stderr
    assert r.returncode == 0, f"dpkg-buildpackage exited {r.returncode}:\n{log[-6000:]}"
    debs = [f for f in os.listdir(work) if f.startswith("profd_") and f.endswith(".deb")]
    changes = [f for f in os.listdir(work) if f.endswith(".changes")]
    assert len(debs) == 1 and len(changes) == 1, os.listdir(work)
    print(f"  built {debs[0]} in {time.monotonic() - t0:.0f} s")
    return os.path.join(work, debs[0]), os.path.join(work, changes[0])


def check_contents(deb):
    out = run(["dpkg", "-c", deb]).stdout
    files, modes = set(), {}
    for line in out.splitlines():
        perms, _, _, _, _, path = line.split(None, 5)
        if not perms.startswith("d"):
            files.add(path)
            modes[path] = perms
    assert files == EXPECTED_FILES, (f"missing: {sorted(EXPECTED_FILES - files)}; "
                                     f"unexpected: {sorted(files - EXPECTED_FILES)}")
    assert modes["./usr/sbin/profd"] == "-rwxr-xr-x" and modes["./usr/bin/profctl"] == "-rwxr-xr-x", modes
    # the unit runs the packaged binary
    unit = run(["sh", "-c", f"dpkg-deb --fsys-tarfile {deb} | tar -xOf - ./lib/systemd/system/profd.service"]).stdout
    assert "ExecStart=/usr/sbin/profd\n" in unit, unit
    print(f"  dpkg -c: the {len(files)} expected files")


def check_lintian(changes):
    r = subprocess.run(["lintian", "--pedantic", "--display-info", "--tag-display-limit", "0", changes],
                       capture_output=True, text=True)
    tags = [l for l in r.stdout.splitlines() if l[:2] in ("E:", "W:", "I:", "P:")]
    for t in tags:
        print("  lintian", t)
    errors = [t for t in tags if t.startswith("E:")]
    assert not errors and r.returncode == 0, f"lintian exited {r.returncode}:\n{r.stdout}\n{r.stderr}"


def profd_processes():
    """pids of processes running the installed /usr/sbin/profd"""
    pids = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                continue
            if exe.startswith("/usr/sbin/profd"):
                pids.append(int(pid))
    return pids


def use_installed_profd(work):
    """The installed profd on the package's store, by hand as on a host
    without systemd, on a socket of the test's own; stopped by its pid."""
    sock = os.path.join(work, "profd.sock")
    proc = subprocess.Popen(["/usr/sbin/profd", "--kinds", "none", "--config", "/dev/null", "--socket", sock],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, f"profd exited {proc.returncode}:\n{proc.stdout.read().decode()}"
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(sock)
                break
            except OSError:
                assert time.monotonic() < deadline, "the installed profd did not open its socket"
                time.sleep(0.1)
        st = run(["/usr/bin/profctl", "--socket", sock, "status"]).stdout
        assert "/var/lib/profd/profd.db" in st, st
        assert stat.S_IMODE(os.stat("/var/lib/profd").st_mode) == 0o750
        assert stat.S_IMODE(os.stat("/var/lib/profd/profd.db").st_mode) == 0o600
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    assert proc.returncode == 0, proc.returncode


def install_and_purge(deb, work, with_systemd):
    """dpkg -i then dpkg --purge; returns the systemctl calls recorded."""
    stubs = os.path.join(work, "stubs")
    os.makedirs(stubs, exist_ok=True)
    real = shutil.which("systemctl")
    assert real, "systemctl is not installed (package systemd)"
    with open(os.path.join(stubs, "systemctl"), "w") as f:
        f.write(SYSTEMCTL_STUB % real)
    os.chmod(os.path.join(stubs, "systemctl"), 0o755)
    log = os.path.join(work, "systemctl.log")
    open(log, "w").close()
    env = dict(os.environ, PATH=stubs + ":" + os.environ["PATH"], SYSTEMCTL_LOG=log)
    # systemd's path: /run/systemd/system exists in a mount namespace of
    # dpkg's own (a tmpfs on /run), never on the host, where setup.sh and
    # other tests look for it. A container's policy-rc.d (Docker's denies
    # every start) is replaced there too, by one that allows, as on a host.
    allow = os.path.join(stubs, "policy-rc.d")
    with open(allow, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(allow, 0o755)
    # Without systemd, the host is taken as one without the systemd package
    # too: systemd-sysusers is hidden (a file that is not executable bound
    # over it), so the postinst creates the group with addgroup.
    hidden = os.path.join(stubs, "not-executable")
    open(hidden, "w").close()
    sysusers = shutil.which("systemd-sysusers")
    if with_systemd:
        setup = ("mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p /run/systemd/system && "
                 f"if [ -e /usr/sbin/policy-rc.d ]; then mount --bind {allow} /usr/sbin/policy-rc.d; fi")
    else:
        setup = f"mount --bind {hidden} {sysusers}" if sysusers else "true"
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", setup + ' && exec "$0" "$@"']

    before = file_list()
    had_group = any(g.gr_name == "profd" for g in grp.getgrall())
    dpkg("-i", deb, env=env, wrap=wrap)
    try:
        assert os.access("/usr/sbin/profd", os.X_OK) and os.access("/usr/bin/profctl", os.X_OK)
        grp.getgrnam("profd")  # KeyError: the group was not created
        for link in ("/etc/systemd/system/sockets.target.wants/profd.socket",
                     "/etc/systemd/system/multi-user.target.wants/profd.service"):
            assert os.path.islink(link), f"{link}: the unit was not enabled"
        assert not profd_processes(), f"dpkg -i left profd running: {profd_processes()}"
        if not with_systemd:
            # tmpfiles.d made the store's directory private
            assert stat.S_IMODE(os.stat("/var/lib/profd").st_mode) == 0o750
            use_installed_profd(work)
        installed = file_list()
    finally:
        dpkg("--purge", "profd", env=env, wrap=wrap)
        if not had_group and any(g.gr_name == "profd" for g in grp.getgrall()):
            # the package keeps its group on purge (Debian practice); the
            # test gives the host back as it found it
            run(["groupdel", "profd"])
    after = file_list()
    left = sorted(after - before)
    assert not left, f"dpkg --purge left files behind: {left}"
    gone = sorted(before - after)
    assert not gone, f"installing and purging removed files that were there: {gone}"
    assert not os.path.exists("/var/lib/profd"), "purge kept the store"
    new = sorted(installed - before)
    print(f"  {'with' if with_systemd else 'without'} systemd: dpkg -i added {len(new)} paths, "
          f"dpkg --purge removed them all")
    with open(log) as f:
        return [l.strip() for l in f]


def main():
    if os.geteuid() != 0:
        skip("installing a package needs root (run the suite as root: see README.md)")
    for tool in ("dpkg-buildpackage", "lintian", "dh", "unshare"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed (./setup.sh test installs debhelper, lintian and dpkg-dev)")
    owner = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "profd"], capture_output=True, text=True)
    if "installed" in owner.stdout and "not-installed" not in owner.stdout:
        skip("package profd is installed on this host; the test would purge it")
    for path in ("/usr/sbin/profd", "/usr/bin/profctl", "/var/lib/profd"):
        if os.path.exists(path):
            skip(f"{path} exists (an installation not from the package); the test would overwrite or purge it")
    if profd_processes():
        skip("a /usr/sbin/profd is running")

    work = tempfile.mkdtemp(prefix="profd-package-")
    failed = False
    try:
        deb, changes = build(work)
        check_contents(deb)
        check_lintian(changes)

        calls = install_and_purge(deb, work, with_systemd=False)
        starts = [c for c in calls if " start " in f" {c} " or "daemon-reload" in c]
        assert not starts, f"without systemd the maintainer scripts called systemctl: {starts}"

        calls = install_and_purge(deb, work, with_systemd=True)
        print("  systemctl calls with systemd:", calls)
        assert any("daemon-reload" in c for c in calls), calls
        start = [c for c in calls if c.split()[-3:-2] == ["start"] or " start " in f" {c} "]
        assert start and "profd.service" in start[0] and "profd.socket" in start[0], calls
        assert any(" stop " in f" {c} " and "profd.service" in c for c in calls), calls
        print("ok - the package builds, lists its files, passes lintian, installs and purges cleanly")
    except Exception as e:
        failed = True
        print(f"FAIL - {e}", file=sys.stderr)
    finally:
        for pid in profd_processes():
            os.kill(pid, signal.SIGTERM)
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
