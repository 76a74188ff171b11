#!/usr/bin/env python3
"""End to end, profd keeps its data private by itself: started by hand under
a shell's umask (022) on a store whose directory does not exist yet, it
creates the directory 0750 and the store, WAL and SHM 0600, and the
debuginfod cache directory 0750; user nobody's sqlite3 cannot open the
store. A store (or directory) others can write, or another user owns, is
refused at start with a message naming it; one others can only read is
tightened, and the log says so (its directory too, unless it holds the
socket, which clients must reach)."""
import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
import time

from harness import Profd, binary, require_root, run_tests


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def nobody_sqlite(store):
    """user nobody's sqlite3 reading the store: the CompletedProcess.
    immutable=1: nobody needs no -shm of its own, so only the permissions
    to open the file decide."""
    return subprocess.run(["runuser", "-u", "nobody", "--", "sqlite3", "-readonly",
                           f"file:{store}?mode=ro&immutable=1",
                           "SELECT count(*) FROM drains"],
                          capture_output=True, text=True, timeout=30)


def run_profd(workdir, store, timeout=20):
    """profd on store until it exits by itself (a refusal): (result, seconds)"""
    t0 = time.monotonic()
    r = subprocess.run([binary("PROFD"), "--config", "/dev/null", "--kinds", "none",
                        "--socket", os.path.join(workdir, "s.sock"), "--store", store],
                       capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - t0


@contextlib.contextmanager
def new_store():
    """(base, store): a fresh store made by profd itself (serve-only) in
    base/state, base a temporary directory removed afterwards."""
    base = tempfile.mkdtemp(prefix="profd-private-")
    try:
        store = os.path.join(base, "state", "profd.db")
        with Profd("--kinds", "none", store=store, workdir=tempfile.mkdtemp(dir=base)) as d:
            assert d.stop() == 0
        yield base, store
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_new_store_under_umask_022_is_private():
    base = tempfile.mkdtemp(prefix="profd-private-")
    # the test's own directory lets nobody through: only profd's modes guard
    os.chmod(base, 0o755)
    old = os.umask(0o022)
    try:
        state = os.path.join(base, "var", "lib", "profd")
        store = os.path.join(state, "profd.db")
        cache = os.path.join(base, "cache", "debuginfod")
        assert not os.path.exists(os.path.dirname(state))
        # debuginfod on a closed loopback port: only its cache directory matters here
        with Profd("--interval", "1h", "--debuginfod-urls", "http://127.0.0.1:9/",
                   "--debuginfod-cache", cache, store=store,
                   workdir=tempfile.mkdtemp(dir=base)) as d:
            d.profctl("flush")
            modes = {p: mode(p) for p in (state, store, store + "-wal", store + "-shm", cache)}
            print("  modes while running:", {os.path.relpath(p, base): oct(m) for p, m in modes.items()})
            assert modes[state] == 0o750, oct(modes[state])
            for f in (store, store + "-wal", store + "-shm"):
                assert modes[f] == 0o600, (f, oct(modes[f]))
            assert modes[cache] == 0o750, oct(modes[cache])
            # the missing parents are the system's kind: 0755
            assert mode(os.path.join(base, "var", "lib")) == 0o755
            r = nobody_sqlite(store)
            assert r.returncode != 0 and "unable to open" in r.stderr, (r.returncode, r.stdout, r.stderr)
            print(f"  nobody's sqlite3: exit {r.returncode}: {r.stderr.strip()}")
            assert d.stop() == 0

        # even with the directory open to others, the file's own mode stops nobody
        os.chmod(state, 0o751)
        r = nobody_sqlite(store)
        assert r.returncode != 0 and "unable to open" in r.stderr, (r.returncode, r.stdout, r.stderr)
        # and the check is real: a copy others may read is read by nobody
        copy = os.path.join(state, "copy.db")
        shutil.copy(store, copy)
        os.chmod(copy, 0o644)
        r = nobody_sqlite(copy)
        assert r.returncode == 0 and int(r.stdout) >= 1, (r.returncode, r.stdout, r.stderr)
    finally:
        os.umask(old)
        shutil.rmtree(base, ignore_errors=True)


def test_store_others_can_write_is_refused():
    with new_store() as (base, store):
        state = os.path.dirname(store)
        cases = [
            (store, lambda: os.chmod(store, 0o666), lambda: os.chmod(store, 0o600), "writable"),
            (store + "-wal", lambda: open(store + "-wal", "w").close() or os.chmod(store + "-wal", 0o622),
             lambda: os.unlink(store + "-wal"), "writable"),
            (state, lambda: os.chmod(state, 0o1777), lambda: os.chmod(state, 0o750), "writable"),
            (store, lambda: os.chown(store, 65534, -1), lambda: os.chown(store, 0, -1), "owned by another user"),
        ]
        for path, spoil, repair, words in cases:
            spoil()
            before = mode(path)
            r, took = run_profd(base, store)
            print(f"  {os.path.relpath(path, base)} ({oct(before)}): exit {r.returncode} in {took:.1f} s")
            assert r.returncode != 0 and took < 10, (path, r.returncode, r.stderr)
            assert f"Refusing to use {path}:" in r.stderr and words in r.stderr, r.stderr
            assert mode(path) == before, f"{path} was changed on refusal"
            repair()
        # repaired, it starts again
        with Profd("--kinds", "none", store=store, workdir=tempfile.mkdtemp(dir=base)) as d:
            assert d.stop() == 0


def test_store_others_can_only_read_is_tightened():
    with new_store() as (base, store):
        state = os.path.dirname(store)
        os.chmod(state, 0o755)
        os.chmod(store, 0o644)
        with Profd("--kinds", "none", store=store, workdir=tempfile.mkdtemp(dir=base)) as d:
            assert mode(state) == 0o750, oct(mode(state))
            assert mode(store) == 0o600, oct(mode(store))
            assert d.stop() == 0
            log = d.read_log()
        assert f"{state} was mode 0755, readable by others; changed it to 0750." in log, log
        assert f"{store} was mode 0644, readable by others; changed it to 0600." in log, log

        # a store directory that holds the socket too stays listable:
        # clients must reach the socket (the files are private themselves)
        os.chmod(state, 0o755)
        with Profd("--kinds", "none", store=store, workdir=state) as d:
            assert mode(state) == 0o755, oct(mode(state))
            assert mode(store) == 0o600, oct(mode(store))
            d.profctl("status")
            assert d.stop() == 0
            d.dir = tempfile.mkdtemp(dir=base)  # cleanup removes its dir: not the store's


if __name__ == "__main__":
    require_root()
    if not shutil.which("sqlite3") or not shutil.which("runuser"):
        raise SystemExit("test setup: sqlite3 and runuser are needed (./setup.sh test installs them)")
    run_tests([
        test_new_store_under_umask_022_is_private,
        test_store_others_can_write_is_refused,
        test_store_others_can_only_read_is_tightened,
    ])
