#!/usr/bin/env python3
"""End to end: the unwind tables' memory budget (unwind_memory) under
pressure, as on a host running builds, where compilers with million-row
tables come and go. profd runs with a budget of 3.5 MiB (458,752 8-byte
values of unwind_rows, two compact-table slots each; the tables of the
processes running here take more than half):

- clang maps libclang-cpp and libLLVM, 1,000,498 and 948,864 rows, whose
  compact tables are planned from their FDEs at about 507,700 and 479,400
  values (a slot per row the FDEs allow, room for 2,048 rules), each more
  than the whole budget. Each is found too large once and not built
  (`tables_no_room`), and no unused table is evicted for it, since
  evicting cannot make room (`tables_evicted` unchanged). A second clang
  does not try them again: their room cannot be set aside (`budget_full`
  counts its mappings). Before, every such build evicted every unused
  table first, and a build host rebuilt them all, over and over
  (docs/performance.md, "The unwind budget on a build host").
- Copies of Debian's python3.11 (64,575 rows: a table of 64,961 slots,
  32,481 values, planned at about 36,900; distinct files) run one after
  the other, each until its table is built, and exit. 14 of them are
  more than the budget. When the free values run out, the next copy's
  table still gets its room, by evicting unused tables, and only some of
  them (not every unused table)."""
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import Profd, require_root, run_tests, wait_unwinder_loaded

BUDGET = "3584K"
CLANG = shutil.which("clang")
CLANG_ARGV = [CLANG, "-x", "c", "-fsyntax-only", "-"]  # waits on its stdin
PYTHON = "/usr/bin/python3.11"
# a table is built within this (libclang-cpp's million rows take 0.3-1.2 s
# here, many times that under AddressSanitizer on a busy machine)
BUILD_TIMEOUT = 240
# the unwinder finds exited processes every 3 s (SWEEP_NS): their tables
# become unused then
SWEEP_WAIT = 4.0
MAX_COPIES = 16
COPY_VALUES = 36900  # planned: the room a copy's build sets aside

_profd = None


def unwind(d):
    return json.loads(d.profctl("status", "--json").stdout)["unwind"]


def fmt(u):
    keys = ("files", "files_unused", "rows_used", "rows_capacity", "tables_built", "tables_evicted",
            "tables_no_room", "tables_queued")
    return ", ".join(f"{k} {u.get(k)}" for k in keys) + f", budget_full {u['failures']['budget_full']}"


def wait_for(d, what, pred, timeout=BUILD_TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        u = unwind(d)
        if pred(u):
            return u
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {fmt(u)}")
        time.sleep(0.2)


def wait_quiet(d, quiet=1.0, timeout=BUILD_TIMEOUT):
    """Until no large table is queued (or being built) and no table has
    been built, dropped or evicted for `quiet` s."""
    def key(u):
        return (u["tables_built"], u["tables_no_room"], u["tables_evicted"], u["tables_queued"])
    last, since, deadline = None, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        u = unwind(d)
        if key(u) != last:
            last, since = key(u), time.monotonic()
        elif u["tables_queued"] == 0 and time.monotonic() - since >= quiet:
            return u
        time.sleep(0.2)
    raise AssertionError(f"the unwinder still busy after {timeout} s: {fmt(u)}")


class Held:
    """A program started with stdin a pipe, which it waits on; ended by
    closing the pipe (and by its pid if it lingers)."""

    def __init__(self, *argv):
        self.p = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)

    def end(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def profd():
    global _profd
    if _profd is None:
        # 997 Hz: a program blocked on its stdin soon after start is
        # sampled in its libraries at once, which has them loaded
        # -v: the log says which table was built or found no room
        _profd = Profd("--unwind-memory", BUDGET, "--frequency", "997", "-v")
        _profd.start()
        wait_unwinder_loaded(_profd)
    return _profd


def hold(d, argv, what, pred):
    """Runs argv with stdin held until the unwinder's status meets pred and
    it is quiet; then ends it. Returns that status."""
    h = Held(*argv)
    try:
        wait_for(d, what, pred)
        return wait_quiet(d)
    finally:
        h.end()


def copy_outcome(d, copy):
    """What profd's log says of copy's table: "built", "no room" or None
    (not yet). By the copy's own path, so that the host's programs
    starting meanwhile, whose tables are counted in the same status
    fields, do not answer for it."""
    log = d.read_log()
    if re.search(r"No room for the \d+ unwind values of " + re.escape(copy) + " ", log):
        return "no room"
    if f"Built the unwind table of {copy}:" in log:
        return "built"
    return None


def run_copy(d, tmp, src, name, *args):
    """Runs a new copy of program src (a file profd has never seen) until
    its table is built or dropped. Returns the status then and the
    outcome (copy_outcome)."""
    copy = os.path.join(tmp, name)
    shutil.copy(src, copy)
    u = hold(d, [copy, *args], f"{name}'s table", lambda v: copy_outcome(d, copy) is not None)
    return u, copy_outcome(d, copy)


def test_table_larger_than_the_budget_is_tried_once_and_evicts_nothing():
    assert CLANG, "clang is not installed (setup.sh installs it)"
    d = profd()
    tmp = tempfile.mkdtemp(prefix="profd-test-budget-")
    try:
        # unused tables that no process will map again: the old way
        # evicted them all for clang's libraries, which fit nowhere
        for i in range(3):
            _, outcome = run_copy(d, tmp, "/usr/bin/cat", f"cat-copy-{i}")
            assert outcome == "built", f"cat-copy-{i}'s table: {outcome}"
        time.sleep(SWEEP_WAIT)
        u0 = unwind(d)
        print(f"  before: {fmt(u0)}")
        u1 = hold(d, CLANG_ARGV, "libclang-cpp's and libLLVM's tables to find no room",
                  lambda u: u["tables_no_room"] >= u0["tables_no_room"] + 2)
        print(f"  first clang: {fmt(u1)}")
        assert u1["tables_evicted"] == u0["tables_evicted"], \
            f"{u1['tables_evicted'] - u0['tables_evicted']} unused tables evicted for tables that could not fit"

        time.sleep(SWEEP_WAIT)
        u2 = unwind(d)
        # its big libraries' mappings are counted budget_full at its load,
        # the tables not built again
        u3 = hold(d, CLANG_ARGV, "the second clang's libraries to be counted budget_full",
                  lambda u: u["failures"]["budget_full"] >= u2["failures"]["budget_full"] + 2)
        print(f"  second clang: {fmt(u3)}")
        assert u3["tables_no_room"] == u1["tables_no_room"], \
            f"the second clang had {u3['tables_no_room'] - u1['tables_no_room']} tables tried again and found no room"
        assert u3["tables_evicted"] == u0["tables_evicted"], \
            f"{u3['tables_evicted'] - u0['tables_evicted']} unused tables evicted for tables that could not fit"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_table_gets_room_by_evicting_some_unused_tables():
    d = profd()
    tmp = tempfile.mkdtemp(prefix="profd-test-budget-")
    try:
        time.sleep(SWEEP_WAIT)  # the earlier tests' programs' tables unused
        u = wait_quiet(d)
        print(f"  before: {fmt(u)}")
        for i in range(MAX_COPIES):
            before = u
            u, outcome = run_copy(d, tmp, PYTHON, f"python-copy-{i}", "-c", "import sys; sys.stdin.read()")
            print(f"  copy {i}: {fmt(u)}")
            assert outcome == "built", f"copy {i}'s table found no room, with {before['files_unused']} unused files"
            if u["tables_evicted"] > before["tables_evicted"]:
                evicted = u["tables_evicted"] - before["tables_evicted"]
                assert evicted < before["files_unused"], \
                    f"copy {i}'s table evicted {evicted} tables, all {before['files_unused']} unused ones"
                return
            if u["rows_capacity"] - u["rows_used"] < 2 * COPY_VALUES:
                time.sleep(SWEEP_WAIT)  # the copies' tables unused before room runs out
                u = unwind(d)
        raise AssertionError(f"{MAX_COPIES} copies of python3.11 fitted in {BUDGET}: no eviction to see")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    require_root()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM"))
    tests = [test_table_larger_than_the_budget_is_tried_once_and_evicts_nothing,
             test_table_gets_room_by_evicting_some_unused_tables]
    try:
        run_tests(tests)
    except SystemExit as e:
        if e.code and _profd is not None:
            print("--- profd log (last 3000 characters) ---\n" + _profd.read_log()[-3000:], file=sys.stderr)
        raise
    finally:
        if _profd is not None:
            _profd.cleanup()
