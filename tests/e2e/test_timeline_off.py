#!/usr/bin/env python3
"""End to end, the timeline turned off (setting timeline, issue 44): one
store, first with the timeline on (a few bursts: timeline rows), then profd
again with --no-timeline while CPU bursts and 200 ms sleeps run at known
times. With it off no timeline row is stored (of either kind) and nothing
is logged, short or unlogged; the aggregates are whole (the sampler's log
still sums the samples: every sample the sampler saw is stored, the
bursts' CPU time is there in burst_spin, every sleep's blocked time is
there); a window over a burst or a
sleep of the second run, though the old rows start before it, is answered
by whole drains and says so ("timeline": false); profctl heatmap of it is
refused naming the setting, while a window the old rows cover still draws;
status says the timeline is off."""
import json
import sqlite3
import subprocess
import tempfile
import time

from harness import binary, function_shares, Profd, require_root, rfc3339, run_tests

FREQ = 199                      # Hz: ~60 samples in a 300 ms burst
BURSTS, BURST_MS = 4, 300
SLEEPS, SLEEP_MS = 8, 200
SLACK_NS = 5_000_000            # a loaded machine runs a woken sleeper a little late



def rows(store, table, since_ns=0):
    """The rows of a timeline table (timeline_blocks or offcpu_timeline)
    that end at since_ns or later, read from the store file itself."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return db.execute(f"SELECT count(*) FROM {table} WHERE end_ns >= ?", (since_ns,)).fetchone()[0]


def test_timeline_off_keeps_the_aggregates_and_no_times():
    work = tempfile.mkdtemp(prefix="profd-test-")
    store = f"{work}/profd.db"
    common = ("--frequency", str(FREQ), "--interval", "1s")

    # the timeline on first: rows from before, which a later window must
    # not be answered from
    with Profd(*common, store=store) as d:
        w = subprocess.run([binary("BURSTS"), "2", str(BURST_MS)], capture_output=True, text=True, timeout=60)
        assert w.returncode == 0, f"bursts exited {w.returncode}"
        before = json.loads(w.stdout)
        d.profctl("flush")
        d.stop()
    on_rows = rows(store, "timeline_blocks")
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        stored_before = db.execute("SELECT coalesce(sum(samples), 0) FROM drains").fetchone()[0]
    print(f"  timeline on: {on_rows} timeline rows")
    assert on_rows > 0, "the timeline stored nothing while on"
    off_start = time.time_ns()

    with Profd(*common, "--no-timeline", store=store, workdir=work) as d:
        bursts = subprocess.Popen([binary("BURSTS"), str(BURSTS), str(BURST_MS)], stdout=subprocess.PIPE, text=True)
        sleeps = subprocess.Popen([binary("SLEEPS"), str(SLEEPS), str(SLEEP_MS)], stdout=subprocess.PIPE, text=True)
        b_out, _ = bursts.communicate(timeout=60)
        s_out, _ = sleeps.communicate(timeout=60)
        assert bursts.returncode == 0 and sleeps.returncode == 0, (bursts.returncode, sleeps.returncode)
        burst, sleep = json.loads(b_out), json.loads(s_out)
        d.profctl("flush")

        # status: off, nothing logged with a time, nothing counted as left out
        status = json.loads(d.profctl("status", "--json").stdout)
        tl = status["timeline"]
        print(f"  status timeline: {tl}")
        assert tl["on"] is False, tl
        assert tl["untimed"] == 0, tl
        ot = tl["offcpu"]
        assert ot["logged"] == 0 and ot["short"] == 0 and ot["unlogged"] == 0, ot
        text = [l for l in d.profctl("status").stdout.splitlines() if l.startswith("timeline:")]
        print(f"  {text}")
        assert len(text) == 1 and text[0].startswith("timeline:  off (setting timeline)"), text

        # the store: no row of either timeline since the restart
        assert rows(store, "timeline_blocks", off_start) == 0, "a timeline row was stored while off"
        assert rows(store, "offcpu_timeline", off_start) == 0, "an off-CPU timeline row was stored while off"
        assert rows(store, "timeline_blocks") == on_rows, "the rows from before are gone"

        # the aggregates are whole: every sample the sampler saw is stored
        # (the books balance, within the few samples between a drain's flip
        # and its reading of the counters: test_faults), none dropped
        seen = status["samples_seen"] - status["idle_samples"]
        stored = status["samples"] - stored_before
        print(f"  {seen} samples seen since the restart, {stored} stored; map_full {status['drops']['map_full']}")
        assert status["drops"]["map_full"] == 0, status["drops"]
        assert abs(seen - stored) <= 0.02 * seen + 20, (seen, stored)
        # the bursts' CPU time in burst_spin (a loaded machine may give the
        # workload little CPU: a sampling tolerance, as many as it had)
        cpu = d.query_json("--pid", str(burst["pid"]), "--since", "5m")
        _, in_stack, total = function_shares(cpu)
        want = burst["cpu_ns"] / 1e9 * FREQ
        print(f"  cpu: {total} samples for {want / FREQ:.2f} s of CPU at {FREQ} Hz (~{want:.0f}), "
              f"burst_spin in {in_stack.get('burst_spin', 0)}")
        assert want - 3 * want ** 0.5 - 3 <= total <= want + 3 * want ** 0.5 + 3, (total, want)
        # (a first sample may come before the process's unwind table: one
        # short stack of a few dozen; stack quality is test_oncpu's)
        assert in_stack.get("burst_spin", 0) >= 0.9 * total, in_stack

        # and the sleeps' blocked time, whole (its stacks' quality on a
        # loaded machine, whose unwinder may not have the tables yet, is
        # test_offcpu's)
        pid, blocks = sleep["pid"], sleep["blocks"]
        off = d.query_json("--kind", "offcpu", "--state", "S", "--pid", str(pid), "--since", "5m")
        _, off_stack, off_total = function_shares(off)
        true_ns = sum(b1 - b0 for b0, b1 in blocks)
        print(f"  offcpu: {off_total / 1e6:.1f} ms sleeping (the sleeps took {true_ns / 1e6:.1f} ms), "
              f"block_wait in {off_stack.get('block_wait', 0) / 1e6:.1f} ms")
        assert 0.95 * true_ns <= off_total <= true_ns + SLEEPS * SLACK_NS + 10_000_000, (off_total, true_ns)
        assert off_stack.get("main", 0) >= 0.95 * off_total, off_stack

        # a window over one burst: the old rows start before it, but its
        # drains have none: whole drains, said
        b0, b1 = burst["bursts"][2]
        window = d.query_json("--pid", str(burst["pid"]), "--from", rfc3339(b0), "--to", rfc3339(b1))
        whole = d.query_json("--pid", str(burst["pid"]), "--from", rfc3339(b0), "--to", rfc3339(b1),
                             "--by-drains")
        print(f"  window over burst 3 ({(b1 - b0) / 1e6:.0f} ms): {window['total']} samples, by drains "
              f"{whole['total']}; timeline {window.get('timeline')}")
        assert window.get("timeline") is False, window.get("timeline")
        assert window["total"] == whole["total"] > 0, (window["total"], whole["total"])
        # and one over a sleep, of kind offcpu
        s0, s1 = blocks[5]
        swin = d.query_json("--kind", "offcpu", "--state", "S", "--pid", str(pid), "--from", rfc3339(s0),
                            "--to", rfc3339(s1))
        print(f"  window over sleep 6: {swin['total'] / 1e6:.1f} ms; timeline {swin.get('timeline')}")
        assert swin.get("timeline") is False, swin.get("timeline")
        assert swin["total"] >= 0.95 * (s1 - s0), swin["total"]
        # the off-CPU rows from before start before it too
        assert rows(store, "offcpu_timeline") > 0, "no off-CPU timeline row from before"

        # the heatmap of it is refused, naming the setting
        for kind in ("cpu", "offcpu"):
            r = d.profctl("heatmap", "--kind", kind, "--from", rfc3339(b0 - 10**9), "--to", rfc3339(b1),
                          "--json", check=False)
            print(f"  heatmap --kind {kind}: exit {r.returncode}: {r.stderr.strip()[:160]}")
            assert r.returncode != 0, r.stdout[:200]
            assert "timeline is off" in r.stderr and "timeline = off" in r.stderr, r.stderr
        # while a window the old rows cover still draws
        a0, a1 = before["bursts"][1]
        r = d.profctl("heatmap", "--from", rfc3339(a0), "--to", rfc3339(a1), "--json")
        drawn = json.loads(r.stdout)
        print(f"  heatmap of a burst from before: {drawn.get('total')} samples")
        assert drawn.get("total", 0) > 0, r.stdout[:300]


if __name__ == "__main__":
    require_root()
    run_tests([test_timeline_off_keeps_the_aggregates_and_no_times])
