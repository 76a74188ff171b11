#!/usr/bin/env python3
"""End to end, a capture's pins against retention (issue 44): profd keeps
every level of its store for one minute (the shortest retention it takes)
and samples at 49 Hz. A workload runs throughout; a real stress-ng spike
starts after a few seconds, and a cpu:pid= trigger armed through profctl
on its worker fires a capture, which raises the rate to capture_frequency
for capture_duration and pins from capture_before before the trigger to
capture_duration after it. Once the minute has passed: the drains and the
timeline before and after the pinned range are deleted by retention, those
of the range survive raw and whole, and a millisecond window inside it is
still answered from the timeline with the workload's samples."""
import json
import os
import shutil
import sqlite3
import subprocess
import time

from harness import Profd, binary, require_root, run_tests
from test_capture import ask, rfc3339, wait_for

BEFORE_S, DURATION_S = 5, 3
BASE_HZ, RAISED_HZ = 49, 499
THRESHOLD = 50
RETENTION_S = 60  # the shortest retention profd takes (conf.c)
# What a capture pins, as retention reads it (daemon/store/retention.c,
# DRAIN_PINNED, TIMELINE_PINNED): the raw drains overlapping its range, and
# their timeline blocks (a block's first samples may lie a little before
# its drain's start: counted by time, the drain after the range's end once
# looked pinned)
PINNED_DRAINS = "SELECT count(*) FROM drains WHERE resolution_ns = 0 AND end_ns >= ? AND start_ns <= ?"
PINNED_TIMELINE = ("SELECT count(*) FROM timeline_blocks t JOIN drains d ON d.id = t.drain_id "
                   "WHERE d.end_ns >= ? AND d.start_ns <= ?")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def store_rows(store, sql, *args):
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def test_a_capture_on_a_stress_ng_spike_keeps_its_minutes_through_retention():
    stress_ng = shutil.which("stress-ng")
    assert stress_ng, "stress-ng is not installed (setup.sh installs it)"
    work = spike = None
    with Profd("--interval", "1s", "--kinds", "cpu", "--frequency", str(BASE_HZ),
               "--retention-raw", "1m", "--retention-1m", "1m", "--retention", "1m", "--timeline-retention", "1m",
               "--capture-before", f"{BEFORE_S}s", "--capture-duration", f"{DURATION_S}s",
               "--capture-frequency", str(RAISED_HZ)) as d:
        try:
            work = subprocess.Popen([binary("CPU_SPLIT"), "120"], stdout=subprocess.DEVNULL,
                                    preexec_fn=lambda: os.nice(10))
            time.sleep(12)  # the neighbours: drains well before what the capture will pin
            spike = subprocess.Popen([stress_ng, "--cpu", "1", "--timeout", "30s", "--quiet"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            worker = wait_for("stress-ng's worker", lambda: (children(spike.pid) or [None])[0], timeout=10)
            cond = f"cpu:pid={worker}>{THRESHOLD}"
            r = d.profctl("capture", "start", cond, "--json")
            assert json.loads(r.stdout)["trigger"]["condition"] == cond, r.stdout
            # it fires on the spike, and the rate rises
            cap = wait_for("the capture", lambda: (ask(d, "capture", "list")["captures"] or [None])[0], timeout=15)
            st = ask(d, "status")
            raised = st["sampling_hz"]
            assert cap["cause"] == cond and cap["value_percent"] > THRESHOLD, cap
            # 499 Hz asked; at 1 s drains profd caps it so that a raised
            # drain lasts 100 ms at least (490 Hz)
            assert 9 * BASE_HZ <= cap["frequency_hz"] <= RAISED_HZ, cap
            assert raised == cap["frequency_hz"] or time.time_ns() > cap["trigger_ns"] + DURATION_S * 10**9, st
            print(f"  capture {cap['id']} {cap['cause']} at {cap['value_percent']:.1f}%, "
                  f"sampling at {raised} Hz just after")
            frm, to = cap["from_ns"], cap["to_ns"]
            assert to - frm == (BEFORE_S + DURATION_S) * 10**9, cap
            # wait for the end of the pinned range, stored
            wait_for("the drains after the capture", lambda: time.time_ns() > to + 2 * 10**9, timeout=30)
            d.profctl("flush")
            before = store_rows(d.store, "SELECT count(*) FROM drains WHERE end_ns < ?", frm - 10**9)[0][0]
            pinned = store_rows(d.store, PINNED_DRAINS, frm, to)[0][0]
            timed = store_rows(d.store, PINNED_TIMELINE, frm, to)[0][0]
            assert before >= 5, f"only {before} drains before what the capture pins"
            assert pinned >= BEFORE_S + DURATION_S - 1, f"{pinned} drains in what the capture pins"
            assert timed >= pinned - 1, f"{timed} timeline blocks for {pinned} pinned drains"
            window = ["--pid", str(work.pid), "--from", rfc3339(frm + 10**9), "--to", rfc3339(frm + 10**9 + 500 * 10**6)]
            q0 = ask(d, "query", *window)
            assert q0["total"] > 0 and q0.get("timeline") is True, {k: q0.get(k) for k in ("total", "timeline")}

            # retention: everything older than a minute goes, but the pins
            deadline_ns = to + (RETENTION_S + 3) * 10**9

            def neighbours_gone():
                if time.time_ns() < deadline_ns:
                    return False
                left = store_rows(d.store, "SELECT count(*) FROM drains WHERE end_ns < ? OR "
                                  "(start_ns > ? AND end_ns < ?)", frm - 10**9, to + 10**9,
                                  time.time_ns() - (RETENTION_S + 2) * 10**9)[0][0]
                return left == 0
            wait_for("retention to delete the drains around the capture", neighbours_gone,
                     timeout=(deadline_ns - time.time_ns()) / 1e9 + 60, step=1)
            st = ask(d, "status")
            kept = store_rows(d.store, PINNED_DRAINS, frm, to)[0][0]
            kept_timed = store_rows(d.store, PINNED_TIMELINE, frm, to)[0][0]
            old_timed = store_rows(d.store, "SELECT count(*) FROM timeline_blocks WHERE end_ns < ?",
                                   frm - 10**9)[0][0]
            print(f"  before the range: {before} drains, deleted; pinned: {pinned} drains and {timed} timeline "
                  f"blocks, {kept} and {kept_timed} after {RETENTION_S} s; retention deleted "
                  f"{st['retention']['deleted_drains']} drains, merged {st['retention']['merged_drains']}")
            assert kept == pinned and kept_timed == timed, (pinned, kept, timed, kept_timed)
            assert old_timed == 0, f"{old_timed} timeline blocks before the range survived their retention"
            assert st["retention"]["deleted_drains"] + st["retention"]["merged_drains"] >= before
            q1 = ask(d, "query", *window)
            assert q1["total"] == q0["total"] and q1.get("timeline") is True, (q0["total"], q1["total"])
            assert d.stop() == 0
        finally:
            for p in (work, spike):
                if p and p.poll() is None:
                    p.kill()
                    p.wait()


if __name__ == "__main__":
    require_root()
    run_tests([test_a_capture_on_a_stress_ng_spike_keeps_its_minutes_through_retention])
