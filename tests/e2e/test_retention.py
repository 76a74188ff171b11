#!/usr/bin/env python3
"""End to end, retention soak with an accelerated clock: the real profd
profiles the whole machine with its wall clock running 60 times as fast
(profd --test-clock-rate, a test-only option), so a second is a minute and
the retention levels (raw 2 min, 1-minute buckets to 10 min, 10-minute
buckets to 30 min) turn over within a minute or two. The store's size must
reach a plateau, a workload's samples must keep their totals through every
level when queried by the real profctl over the old window they ran in,
and vanish once older than the retention; a maximum store size caps the
file by deleting the oldest data first."""
import json
import os
import sqlite3
import subprocess
import tempfile
import time
from datetime import datetime, timezone

from harness import Profd, binary, require_root, run_tests

RATE = 60            # one real second is a minute of profd's clock
START_AGO = 4 * 3600 # profd's clock starts this far back, so it stays behind the real one
MINUTE_NS = 60 * 10**9
# Real seconds: the soak's length, when the plateau is reached (everything
# older than the 30-minute retention deleted: from about 35 s), and where
# its last part starts, compared with the part before.
SOAK_S, PLATEAU_S, LAST_S = 80, 40, 60


def status(d):
    return json.loads(d.profctl("status", "--json").stdout)


def rfc3339(ns):
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def levels_of(store, exe):
    """The resolutions of the drains rows holding the samples of exe's
    processes (by pid, or once merged by retention in their group: pid -1,
    docs/schema.md)."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        rows = db.execute("SELECT DISTINCT d.resolution_ns FROM samples s JOIN drains d ON d.id = s.drain_id "
                          "JOIN processes p ON p.id = s.process_id WHERE p.exe = ?", (exe,)).fetchall()
    finally:
        db.close()
    return {r[0] for r in rows}


# What retention bounds by age alone: the samples and their drains. The
# stacks, locations, functions and processes they name grow with whatever
# else the host starts (profd profiles the whole host: a ClickHouse server
# started by a test running beside this one added 1.3 MB of them in the
# last third of a CI run) and go once nothing names them.
TIME_BOUNDED = ("sample_blocks", "drains", "drops", "stack_refs", "process_refs")


def data_bytes(store, tables=None):
    """Bytes of the store's pages in use, as a reader sees it (the write-ahead
    log included, free pages not); with tables, only theirs and their
    indexes'."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        if tables:
            marks = ",".join("?" * len(tables))
            return db.execute("SELECT coalesce(sum(d.pgsize), 0) FROM dbstat d JOIN sqlite_schema s "
                              f"ON s.name = d.name WHERE s.tbl_name IN ({marks})", tables).fetchone()[0]
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
    finally:
        db.close()
    return (pages - free) * size


def stacks_of(d, exe, frm, to):
    """(total, {folded stack: value}) of exe's samples in [frm, to]: by
    executable, which a short-lived process keeps past the raw window, where
    retention merges it into its group (by pid it is not found there)."""
    res = json.loads(d.profctl("query", "--json", "--exe", exe, "--from", rfc3339(frm),
                               "--to", rfc3339(to)).stdout)
    stacks = {}
    for st in res["stacks"]:
        key = ";".join(f["name"] for f in st["frames"])
        stacks[key] = stacks.get(key, 0) + st["value"]
    return res["total"], stacks


def test_store_plateaus_and_old_windows_keep_their_totals():
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    conf.write("interval = 100ms\nkinds = cpu\nfrequency = 97\n"
               "retention_raw = 2m\nretention_1m = 10m\nretention = 30m\n")
    conf.close()
    try:
        with Profd("--test-clock-rate", str(RATE), "--test-clock-start-ago", str(START_AGO),
                   config=conf.name) as d:
            time.sleep(1)
            # a known workload, early on: 2 s here, 2 minutes for profd
            t_before = status(d)["last_drain_ns"]
            out = subprocess.run([binary("CPU_SPLIT"), "2"], capture_output=True, text=True, timeout=60,
                                 check=True).stdout
            truth = json.loads(out)
            pid = truth["pid"]
            exe = os.path.realpath(binary("CPU_SPLIT"))
            d.profctl("flush")
            t_after = status(d)["last_drain_ns"]
            # the window it ran in, with a minute either side
            frm, to = t_before - MINUTE_NS, t_after + MINUTE_NS
            total, stacks = stacks_of(d, exe, frm, to)
            print(f"  workload pid {pid}: {total} samples in {len(stacks)} stacks, levels {levels_of(d.store, exe)}")
            # 97 Hz over the CPU time it used (a loaded machine gives it less than 2 s)
            assert total >= 0.6 * 97 * truth["total_ns"] / 1e9 and total >= 10, (total, truth)

            seen = {}
            sizes = []   # (real seconds since start, store data bytes, drains rows, samples bytes)
            t0 = time.monotonic()
            while time.monotonic() - t0 < SOAK_S:
                time.sleep(1)
                el = time.monotonic() - t0
                s = status(d)
                sizes.append((el, data_bytes(d.store), s["drains"], data_bytes(d.store, TIME_BOUNDED)))
                lv = levels_of(d.store, exe)
                key = "gone" if not lv else ",".join(str(x // 10**9) + "s" for x in sorted(lv))
                if key in seen:
                    continue
                got_total, got_stacks = stacks_of(d, exe, frm, to)
                seen[key] = got_total
                print(f"  {el:5.1f} s (profd: {s['uptime_s'] // 60} min): workload at level {key}: "
                      f"{got_total} samples; store data {sizes[-1][1]} bytes, {s['drains']} drains rows")
                if key == "gone":
                    assert got_total == 0, got_total
                else:
                    # merged, its samples are all there, stack by stack
                    assert got_total == total, (key, got_total, total)
                    # (and retention's counters: folded_stacks says whether
                    # a merge folded rare stacks into [folded])
                    assert got_stacks == stacks, (key, {k: (stacks.get(k), got_stacks.get(k))
                                                        for k in set(stacks) ^ set(got_stacks) |
                                                        {k for k in stacks if stacks[k] != got_stacks.get(k)}},
                                                  s["retention"])
            assert "60s" in seen, f"never saw the workload in 1-minute buckets: {seen}"
            assert "600s" in seen, f"never saw the workload in 10-minute buckets: {seen}"
            assert "gone" in seen, f"the workload's samples were never deleted: {seen}"

            r = status(d)["retention"]
            print(f"  retention: {r}")
            # about 50 profd-minutes past the retention: five 10-minute rows
            # (at least three however late retention's steps run)
            assert r["merged_drains"] > 100 and r["deleted_drains"] >= 3, r
            assert r["deleted_stacks"] > 0 and r["deleted_processes"] > 0, r

            # a plateau: once everything older than 30 profd-minutes is deleted
            # (from about 35 s on), the rows stay bounded and the file stops
            # growing: the samples' last 20 profd-minutes are no larger than
            # the 20 before allow; the whole store's, with room for what the
            # rest of the host brought meanwhile
            steady = [x for x in sizes if x[0] >= PLATEAU_S]
            assert max(x[2] for x in steady) <= 60, [x[2] for x in steady]
            middle = [x[1] for x in sizes if PLATEAU_S <= x[0] < LAST_S]
            last = [x[1] for x in sizes if x[0] >= LAST_S]
            middle_samples = [x[3] for x in sizes if PLATEAU_S <= x[0] < LAST_S]
            last_samples = [x[3] for x in sizes if x[0] >= LAST_S]
            print(f"  store data: {max(middle)} bytes at most in {PLATEAU_S}-{LAST_S} s, {max(last)} after; samples and "
                  f"drains {max(middle_samples)} and {max(last_samples)}; file {os.stat(d.store).st_size} "
                  "bytes at the end")
            assert max(last_samples) <= 1.3 * max(middle_samples) + (64 << 10), \
                (max(middle_samples), max(last_samples))
            assert max(last) <= 1.3 * max(middle) + (2 << 20), (max(middle), max(last))
            # and the file follows: free pages go back to the file system
            assert os.stat(d.store).st_size <= max(last) + (2 << 20), os.stat(d.store).st_size
    finally:
        os.unlink(conf.name)


def test_max_store_size_deletes_oldest_first():
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    # real time, long retention: only the size limit deletes
    conf.write("interval = 200ms\nkinds = cpu\nfrequency = 997\nmax_store_size = 2M\n")
    conf.close()
    try:
        started_ns = time.time_ns()
        with Profd(config=conf.name) as d:
            # thousands of distinct stacks per second fill 2 MiB quickly
            w = subprocess.Popen([binary("MANY_STACKS"), "40", "2"], stdout=subprocess.DEVNULL)
            time.sleep(0.5)
            assert w.poll() is None, f"many_stacks exited at once with status {w.returncode}"
            sizes = []
            t0 = time.monotonic()
            try:
                while time.monotonic() - t0 < 40:
                    time.sleep(1)
                    s = status(d)
                    sizes.append(os.stat(d.store).st_size)
                    if s["retention"]["deleted_for_size"] > 0 and time.monotonic() - t0 > 20:
                        break
            finally:
                w.kill()
                w.wait()
            # every drain taken so far is stored before the checks (a loaded
            # machine puts the writer seconds behind the flips)
            d.profctl("flush")
            s = status(d)
            r = s["retention"]
            print(f"  store file sizes: {sizes}; retention {r}")
            assert r["max_store_size"] == 2 << 20
            assert r["deleted_for_size"] > 0, r
            assert r["deleted_drains"] == 0, r
            # the file never grew far past the maximum (one drain's worth)
            assert max(sizes) <= 3 << 20, sizes
            # the newest data is still there, and queryable
            assert s["drains"] > 0, s
            res = json.loads(d.profctl("query", "--json", "--since", "5s").stdout)
            assert res["total"] > 0, f"nothing stored in the last 5 s: {res.get('total')}"
            # the oldest went first: the first drains (from profd's start) are gone
            db = sqlite3.connect(f"file:{d.store}?mode=ro", uri=True, timeout=10)
            try:
                first = db.execute("SELECT min(start_ns) FROM drains").fetchone()[0]
            finally:
                db.close()
            assert first is not None and first > started_ns + 2 * 10**9, (first, started_ns)
    finally:
        os.unlink(conf.name)


if __name__ == "__main__":
    require_root()
    run_tests([test_store_plateaus_and_old_windows_keep_their_totals,
               test_max_store_size_deletes_oldest_first])
