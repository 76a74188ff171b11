#!/usr/bin/env python3
"""End to end, the quality report with the DWARF unwinder (issue 12): a
workload without frame pointers, started after profd but before its unwind
tables could load, reports its first moments as "no table yet" and the rest
as complete stacks.

Needs the unwinder in profd's BPF walker (`profctl status` has "unwind");
without it the test exits 77 (skipped), saying it did NOT run."""
import json
import sqlite3
import subprocess
import sys
import time

from harness import SKIP, Profd, binary, require_root, run_tests


def rfc3339(ns):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + f".{ns % 10**9:09d}Z"


def inside(drain):
    """A window that overlaps this drain only (drains touch end to start)."""
    return ["--from", rfc3339(drain[0] + 1), "--to", rfc3339(drain[1] - 1)]


def quality(d, *args):
    return json.loads(d.profctl("query", "--quality", "--json", *args).stdout)["quality"]


def drains_of(store, pid):
    """(start_ns, end_ns) of every drain with a cpu sample of pid, oldest first."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return db.execute("SELECT DISTINCT d.start_ns, d.end_ns FROM drains d JOIN samples s ON s.drain_id = d.id "
                          "JOIN processes p ON p.id = s.process_id WHERE p.pid = ? AND s.kind = 0 "
                          "ORDER BY d.start_ns", (pid,)).fetchall()


def test_first_moments_have_no_table_yet():
    # short drains, so the first moments of the workload are a drain of their own
    with Profd("--kinds", "cpu", "--frequency", "997", "--interval", "250ms") as d:
        unwinder = "unwind" in json.loads(d.profctl("status", "--json").stdout)
        if unwinder:
            check_first_moments(d)
    if not unwinder:
        print("SKIP: this profd's BPF walker has no DWARF unwinder (issue 12), so no stack says "
              "'no table yet'; test_quality_unwind did NOT run", file=sys.stderr)
        sys.exit(SKIP)


def wait_unwinder_idle(d, timeout=45):
    """Waits until the unwinder has built the tables of the programs running
    when it started (its count of tables built stops growing for 2 s, or 45
    s passed: a busy host keeps starting programs), so a new process is not
    queued behind them and gets its tables at once."""
    deadline, last, steady = time.monotonic() + timeout, -1, 0
    while time.monotonic() < deadline and steady < 4:
        n = json.loads(d.profctl("status", "--json").stdout)["unwind"]["tables_built"]
        steady = steady + 1 if n == last and n > 0 else 0
        last = n
        time.sleep(0.5)


def check_first_moments(d):
    wait_unwinder_idle(d)
    # runs until a drain shows its stacks complete (its table is in: how
    # long that takes depends on how busy the machine is), then a while more
    w = subprocess.Popen([binary("NOFP_SPIN"), "60"], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 50
        while time.monotonic() < deadline:
            time.sleep(1)
            d.profctl("flush")
            if quality(d, "--pid", str(w.pid), "--since", "1s")["complete"] > 0:
                break
        loaded = time.time_ns()
        assert time.monotonic() < deadline, "the workload's stacks never became complete: table not loaded"
        time.sleep(3)
    finally:
        w.kill()
        w.wait()
    d.profctl("flush")
    pid = w.pid

    whole = quality(d, "--pid", str(pid), "--since", "5m")
    print(f"  whole run: {whole['complete']}/{whole['total']} complete, truncated {whole['truncated']}")
    assert whole["truncated"]["no_table"] > 0, f"no 'no table yet' stacks at all: {whole}"

    drains = drains_of(d.store, pid)
    assert len(drains) >= 4, drains
    # the first moments: before profd heard of the process, its walk had no
    # table (and no frame pointers to fall back on)
    first = quality(d, "--pid", str(pid), *inside(drains[0]))
    after = quality(d, "--pid", str(pid), "--from", rfc3339(loaded + 10**9), "--to", "0s")
    print(f"  first drain: no table yet {first['truncated']['no_table']}/{first['total']}; "
          f"with its table: no table yet {after['truncated']['no_table']}/{after['total']}, "
          f"complete {after['complete']}")
    assert first["truncated"]["no_table"] > 0, f"the first moments are not 'no table yet': {first}"
    assert after["truncated"]["no_table"] == 0 and after["complete"] >= 0.9 * after["total"] > 0, after
    # and the summary line says it
    line = d.profctl("query", "--pid", str(pid), *inside(drains[0]), "--folded").stderr.strip().splitlines()[-1]
    assert "truncated (no table yet " in line, line


if __name__ == "__main__":
    require_root()
    run_tests([test_first_moments_have_no_table_yet])
