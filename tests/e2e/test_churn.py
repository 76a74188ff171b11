#!/usr/bin/env python3
"""End to end, process churn (issue 43): hundreds of short-lived processes a
second for a bounded time, as a build host runs them. The store grows less
than a bound derived from issue 43's goal, scaled to the test's duration and
exec rate, and the short-lived processes are still named in query answers.
A new process's maps are read once, by the event loop's snapshot, and the
unwinder publishes from that read.
The kernel's record of announced processes (the `seen` map) holds the live
ones, not every process the churn made."""
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time

from harness import Profd, require_root, run_tests

KIB = 1024
MIB = 1024 * 1024

# Issue 43's goal: a build host running ~40 execs a second stores at most
# 20 MiB an hour, that is 145.6 bytes an exec. The bound is that per exec
# the test made, times BOUND_FACTOR. Measured on 2026-12-02, churn less
# background, per exec: 19 to 114 bytes. On 2026-12-03 (main at 726b44c
# and after) 223-300 bytes, because nearly every churnling is now stored:
# under this churn almost each one waits 1 ms or more for a CPU, and that
# wait is kept under its `[preempted]` frame (1,288 of 1,412 churnlings
# stored had one; docs/performance.md, "Preempted waits"), so each
# costs a process row with its two index entries and its count (about
# 115 bytes) and a sample block or two (about 65). That is over the goal
# by itself: the per-process rows of the raw window are what issue 43's
# store goal still needs decided (docs/performance.md, "On churn"). The
# factor is 2.5 since then (2 before, failed at 292 and 300 bytes in CI):
# the bound still fails when a short-lived process comes to cost rows or
# stacks per instance again, not on today's per-process rows. A warm-up
# churn first takes the program's own stacks and names, stored once, out
# of the figure. What made a build host's store grow (a compiler's stacks,
# new in most of its samples) is measured by the benchmark, not here
# (docs/performance.md, Store size, "On churn"). On main before 2026-12-02
# the test failed by its [unknown] check: 549 locations in no known
# mapping in 8 s.
GOAL_BYTES_PER_HOUR = 20 * MIB
GOAL_EXECS_PER_S = 40
GOAL_BYTES_PER_EXEC = GOAL_BYTES_PER_HOUR / (GOAL_EXECS_PER_S * 3600)
BOUND_FACTOR = 2.5
CHURN_S = 8
WARMUP_S = 3
# children alive at once: keeps the rate in the hundreds a second on 2
# CPUs without starving profd
MAX_LIVE = 16
# each child: a shell loop of about a millisecond of CPU, so some are
# sampled on the CPU and all of them block or wait to run now and then
CHILD_SCRIPT = "i=0; while [ $i -lt 300 ]; do i=$((i+1)); done"


def used_bytes(path):
    """The store's pages in use (what max_store_size bounds): through a
    read-only connection, which sees what the WAL holds too."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        q = lambda sql: db.execute(sql).fetchone()[0]
        return (q("PRAGMA page_count") - q("PRAGMA freelist_count")) * q("PRAGMA page_size")
    finally:
        db.close()


def churnlings_stored(store):
    """Churnling processes in the store."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return db.execute("SELECT count(*) FROM processes WHERE comm = 'churnling'").fetchone()[0]
    finally:
        db.close()


def churn(exe, seconds):
    """Runs copies of a shell named churnling, at most MAX_LIVE at once, for
    seconds. Returns (execs, pids of the first hundred)."""
    live, execs, pids = [], 0, []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        live = [p for p in live if p.poll() is None]
        if len(live) >= MAX_LIVE:
            time.sleep(0.0005)
            continue
        p = subprocess.Popen([exe, "-c", CHILD_SCRIPT], stdin=subprocess.DEVNULL, close_fds=False)
        live.append(p)
        execs += 1
        if len(pids) < 100:
            pids.append(p.pid)
    for p in live:
        p.wait()
    return execs, pids


def seen_entries(pid):
    """The `seen` map of the profd with this pid (the map of that name among
    the maps its fds hold, fdinfo's map_id), dumped by bpftool: {tgid:
    start_ns} of the processes it announced and still remembers."""
    ids = set()
    fdinfo = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                ids.update(int(line.split()[1]) for line in f if line.startswith("map_id:"))
        except OSError:
            continue
    shown = json.loads(subprocess.run(["bpftool", "map", "show", "-j"], capture_output=True, text=True,
                                      check=True).stdout)
    seen = [m["id"] for m in shown if m["id"] in ids and m.get("name") == "seen"]
    assert len(seen) == 1, f"profd's seen map not found among its maps {sorted(ids)}"
    dump = json.loads(subprocess.run(["bpftool", "map", "dump", "id", str(seen[0]), "-j"], capture_output=True,
                                     text=True, check=True).stdout)
    return {e["formatted"]["key"]: e["formatted"]["value"]["start_ns"] for e in dump}


# A process whose leader exits first: its other thread runs on, then ends.
LEADER_FIRST = """
import ctypes, os, sys, threading, time
def run():
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        time.sleep(0.01)
threading.Thread(target=run).start()
print(os.getpid(), flush=True)
ctypes.CDLL(None).pthread_exit(None)
"""


def test_announced_processes_are_forgotten_when_they_end():
    """Every process is announced (its exec), and its entry in `seen` goes
    when its leader is freed: after a churn of about a thousand processes,
    the map holds about what it held before (a preallocated LRU hash kept
    every one of them, up to pid_max). A process whose leader exited first
    keeps its entry while its other thread runs."""
    work = tempfile.mkdtemp(prefix="profd-seen-")
    exe = os.path.join(work, "churnling")
    shutil.copy(shutil.which("dash") or "/bin/sh", exe)
    try:
        with Profd("--interval", "2s") as d:
            d.profctl("flush")
            before = seen_entries(d.proc.pid)
            execs, _ = churn(exe, 3)
            # a freed task's entry goes in an RCU callback: moments later
            time.sleep(1)
            after = seen_entries(d.proc.pid)
            print(f"  seen: {len(before)} entries before {execs} execs, {len(after)} after")
            assert execs >= 300, f"only {execs} execs: not a churn"
            assert len(after) <= len(before) + MAX_LIVE + 32, \
                f"{len(after)} processes still in seen after {execs} execs ({len(before)} before)"

            p = subprocess.Popen(["/usr/bin/python3", "-c", LEADER_FIRST, "3"], stdout=subprocess.PIPE, text=True)
            try:
                pid = int(p.stdout.readline())
                time.sleep(1)
                with open(f"/proc/{pid}/status") as f:
                    state = [line for line in f if line.startswith("State:")][0]
                assert "Z" in state, f"the leader has not exited: {state}"
                assert pid in seen_entries(d.proc.pid), "a process whose leader exited was forgotten while it ran"
            finally:
                p.wait()
            time.sleep(1)
            assert pid not in seen_entries(d.proc.pid), "a process that ended is still in seen"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_store_grows_within_the_goal_on_churn_and_processes_stay_named():
    work = tempfile.mkdtemp(prefix="profd-churn-")
    # a shell under a name of its own: comm and exe say which processes
    # are the test's
    exe = os.path.join(work, "churnling")
    shutil.copy(shutil.which("dash") or "/bin/sh", exe)
    try:
        with Profd("--interval", "2s") as d:
            # the program's stacks, locations and names are stored at
            # their first sight, not per exec
            churn(exe, WARMUP_S)
            # what the rest of the host adds meanwhile (other builds and
            # tests on a shared machine): measured over as long a span
            # just before, and taken off
            d.profctl("flush")
            b0 = used_bytes(d.store)
            time.sleep(CHURN_S)
            d.profctl("flush")
            b1 = used_bytes(d.store)
            # the warm-up's, not counted with the churn's
            stored0 = churnlings_stored(d.store)
            u0 = json.loads(d.profctl("status", "--json").stdout)["unwind"]
            t0 = time.monotonic()
            execs, pids = churn(exe, CHURN_S)
            took = time.monotonic() - t0
            d.profctl("flush")
            u1 = json.loads(d.profctl("status", "--json").stdout)["unwind"]
            b2 = used_bytes(d.store)
            background = b1 - b0
            grown = b2 - b1 - background
            bound = GOAL_BYTES_PER_EXEC * execs * BOUND_FACTOR
            stored = churnlings_stored(d.store) - stored0
            db = sqlite3.connect(f"file:{d.store}?mode=ro", uri=True)
            try:
                # frames in no known mapping (processes gone before their
                # maps were read) are one location, not one per address
                # ASLR gave each process
                unknown = db.execute("SELECT count(*) FROM locations l JOIN mappings m ON m.id = l.mapping_id "
                                     "WHERE m.path = '[unknown]'").fetchone()[0]
                # those with on-CPU samples: each is a root of the cpu answer
                on_cpu = db.execute("SELECT count(DISTINCT b.process_id) FROM sample_blocks b JOIN processes p "
                                    "ON p.id = b.process_id WHERE p.comm = 'churnling' AND b.kind = 0").fetchone()[0]
            finally:
                db.close()
            print(f"  {execs} execs in {took:.1f} s ({execs / took:.0f}/s), {stored} of them stored; "
                  f"store grew {(b2 - b1) / KIB:.0f} KiB, {background / KIB:.0f} KiB without the churn before: "
                  f"{grown / KIB:.0f} KiB ({grown / max(execs, 1):.0f} bytes an exec; "
                  f"bound {bound / KIB:.0f} KiB: {GOAL_BYTES_PER_EXEC:.1f} bytes an exec x {BOUND_FACTOR})")
            print(f"  [unknown] locations: {unknown}")
            # one read of a new process's maps (issue 43): the unwinder
            # publishes from the event loop's snapshot, not reading them
            # again (follow-ups and misses still read them)
            loads = u1["loads"] - u0["loads"]
            given = u1["maps_given"] - u0["maps_given"]
            print(f"  unwinder loads {loads}: {given} from the snapshot's maps, "
                  f"{u1['maps_read'] - u0['maps_read']} read themselves")
            # (a churnling gone before the event loop read it has no load)
            assert loads >= 100, f"only {loads} unwinder loads for {execs} execs"
            assert given >= loads * 0.6, f"only {given} of {loads} loads took the snapshot's maps"
            assert unknown <= 1, f"{unknown} locations in no known mapping: their addresses are stored"
            assert execs >= 100 * CHURN_S, f"only {execs} execs in {took:.1f} s: not a churn"
            assert stored >= execs // 20, f"only {stored} of {execs} churnling processes stored"
            assert grown < bound, \
                f"the store grew {grown} bytes for {execs} execs ({grown / execs:.0f} an exec), over " \
                f"{bound:.0f} ({GOAL_BYTES_PER_EXEC:.1f} an exec, issue 43's goal, x {BOUND_FACTOR})"

            # named: by comm (each instance its own root, comm-pid) and by exe
            folded = d.profctl("query", "--comm", "churnling", "--since", "2m", "--root", "process",
                               "--folded").stdout
            roots = {line.split(";", 1)[0] for line in folded.splitlines() if line}
            named = {r for r in roots if r.startswith("churnling-")}
            print(f"  {len(named)} churnling processes in the cpu answer by comm, {on_cpu} stored with cpu samples")
            assert on_cpu >= 10, f"only {on_cpu} churnlings sampled on the CPU"
            assert len(named) == on_cpu and named == roots, \
                f"{len(named)} churnlings named of {on_cpu} with cpu samples; other roots: {sorted(roots - named)[:5]}"
            first = {f"churnling-{p}" for p in pids}
            print(f"  {len(first & named)} of the first hundred pids among them")
            by_exe = d.query_json("--exe", exe, "--since", "2m")
            assert by_exe["total"] > 0, f"no samples by --exe {exe}"
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    require_root()
    run_tests([test_store_grows_within_the_goal_on_churn_and_processes_stay_named,
               test_announced_processes_are_forgotten_when_they_end])
