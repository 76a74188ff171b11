#!/usr/bin/env python3
"""End to end, the quality report with the DWARF unwinder (issue 12): a
workload without frame pointers, started before profd and so before its
unwind table could load, reports its first moments as "no table yet" and
the rest as complete stacks.

Needs the unwinder in profd's BPF walker (`profctl status` has "unwind");
without it the test exits 77 (skipped), saying it did NOT run."""
import json
import subprocess
import sys
import time

from harness import binary, Profd, require_root, rfc3339, run_tests, SKIP


def quality(d, *args):
    return json.loads(d.profctl("query", "--quality", "--json", *args).stdout)["quality"]


def test_first_moments_have_no_table_yet():
    # the workload runs before profd starts: profd's unwinder then loads
    # every process already running, in the background, while sampling has
    # begun; until the workload's turn its stacks have no table (and no
    # frame pointers to fall back on)
    w = subprocess.Popen([binary("NOFP_SPIN"), "120"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        start = time.time_ns()
        # short drains, so the first moments of the workload are drains of their own
        with Profd("--kinds", "cpu", "--frequency", "997", "--interval", "250ms") as d:
            unwinder = "unwind" in json.loads(d.profctl("status", "--json").stdout)
            if unwinder:
                check_first_moments(d, w, start)
    finally:
        w.kill()
        w.wait()
    if not unwinder:
        print("SKIP: this profd's BPF walker has no DWARF unwinder (issue 12), so no stack says "
              "'no table yet'; test_quality_unwind did NOT run", file=sys.stderr)
        sys.exit(SKIP)


def check_first_moments(d, w, start):
    pid = w.pid
    # until a drain shows its stacks complete (its table is in: how long
    # that takes depends on how busy the machine is), then a while more
    deadline = time.monotonic() + 150  # a busy host with a full row budget loads late
    while time.monotonic() < deadline:
        time.sleep(1)
        d.profctl("flush")
        if quality(d, "--pid", str(pid), "--since", "1s")["complete"] > 0:
            break
    loaded = time.time_ns()
    assert time.monotonic() < deadline, (
        "the workload's stacks never became complete (its table did not load): "
        f"{quality(d, '--pid', str(pid), '--since', '5s')}, "
        f"unwinder: {json.loads(d.profctl('status', '--json').stdout)['unwind']}")
    time.sleep(3)
    d.profctl("flush")

    first = quality(d, "--pid", str(pid), "--from", rfc3339(start), "--to", rfc3339(loaded))
    after = quality(d, "--pid", str(pid), "--from", rfc3339(loaded + 10**9), "--to", "0s")
    print(f"  first moments: no table yet {first['truncated']['no_table']}/{first['total']}; "
          f"with its table: no table yet {after['truncated']['no_table']}/{after['total']}, "
          f"complete {after['complete']}")
    assert first["truncated"]["no_table"] > 0, f"the first moments are not 'no table yet': {first}"
    assert after["truncated"]["no_table"] == 0 and after["complete"] >= 0.9 * after["total"] > 0, after
    # and the summary line says it
    line = d.profctl("query", "--pid", str(pid), "--from", rfc3339(start), "--to", rfc3339(loaded),
                     "--folded").stderr.strip().splitlines()[-1]
    assert "truncated (no table yet " in line, line


if __name__ == "__main__":
    require_root()
    run_tests([test_first_moments_have_no_table_yet])
