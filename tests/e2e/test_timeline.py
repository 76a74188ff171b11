#!/usr/bin/env python3
"""End to end, the timeline of on-CPU samples (issue 44): a workload burns
CPU in 300 ms bursts between idle sleeps, at wall-clock times it records;
the timeline profd stores places its samples inside those bursts, each
sample once, with nothing lost silently (the stored blocks read with the
daemon's own codec, tests/tools/timeline-dump.c, from the store file after
a flush), and a query's window to the nanosecond over one burst is
answered from it."""
import json
import subprocess

from harness import binary, function_shares, Profd, require_root, rfc3339, run_tests


FREQ = 199                      # Hz: a period of 5 ms, ~60 samples a burst
PERIOD_NS = 1e9 / FREQ
BURSTS, BURST_MS = 10, 300


def timeline(store):
    """The stored timeline: (time_ns, pid, tid, stack_id) per sample."""
    out = subprocess.run([binary("TIMELINE_DUMP"), store], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"timeline-dump exited {out.returncode}:\n{out.stderr}"
    return [tuple(int(x) for x in line.split()) for line in out.stdout.splitlines()]


def test_timeline_places_burst_samples_in_the_bursts():
    # an interval of 2 s: the bursts and idle times (8 s) cross several
    # drains, so blocks end and start inside bursts
    with Profd("--frequency", str(FREQ), "--interval", "2s") as d:
        w = subprocess.run([binary("BURSTS"), str(BURSTS), str(BURST_MS)], capture_output=True, text=True,
                           timeout=120)
        assert w.returncode == 0, f"bursts exited {w.returncode}"
        truth = json.loads(w.stdout)
        d.profctl("flush")
        status = json.loads(d.profctl("status", "--json").stdout)
        tl = status["timeline"]
        print(f"  status timeline: {tl}")
        assert tl["blocks"] > 0 and tl["bytes"] > 0 and tl["samples"] > 0, tl
        assert tl["oldest_ns"] is not None and tl["oldest_ns"] <= truth["bursts"][0][0], tl
        text = [l for l in d.profctl("status").stdout.splitlines() if l.startswith("timeline:")]
        print(f"  {text}")
        assert len(text) == 1 and " samples untimed" in text[0], text

        samples = [s for s in timeline(d.store) if s[1] == truth["pid"]]
        bursts = truth["bursts"]
        inside = [s for s in samples if any(b0 - PERIOD_NS <= s[0] <= b1 + PERIOD_NS for b0, b1 in bursts)]
        wall_s = sum(b1 - b0 for b0, b1 in bursts) / 1e9
        cpu_s = truth["cpu_ns"] / 1e9
        print(f"  {len(samples)} timed samples of the workload for {cpu_s:.2f} s of CPU in {wall_s:.2f} s of "
              f"bursts at {FREQ} Hz (~{cpu_s * FREQ:.0f}); {len(inside)} inside the bursts "
              f"({100.0 * len(inside) / max(len(samples), 1):.1f}%)")
        # as many samples as the CPU time it had (a loaded machine gives it
        # less than its wall time), and enough for 95% to mean something
        assert len(samples) >= 0.85 * cpu_s * FREQ, f"only {len(samples)} timed samples of the workload"
        assert len(samples) >= 60, f"only {len(samples)} timed samples: the machine gave it too little CPU"
        assert len(inside) >= 0.95 * len(samples), \
            f"only {len(inside)} of {len(samples)} samples inside the bursts (+-{PERIOD_NS / 1e6:.1f} ms)"
        # every burst is seen
        for b0, b1 in bursts:
            n = sum(1 for s in samples if b0 - PERIOD_NS <= s[0] <= b1 + PERIOD_NS)
            assert n > 0, f"burst {b0}-{b1}: no sample"

        # the timeline and the aggregates agree: each logged sample is once
        # in each, and those not logged are counted untimed, not lost
        result = d.query_json("--pid", str(truth["pid"]), "--since", "5m")
        _, in_stack, total = function_shares(result)
        print(f"  aggregates: {total} samples, burst_spin in {in_stack.get('burst_spin', 0)}; "
              f"untimed {tl['untimed']}")
        if tl["untimed"] == 0:
            assert total == len(samples), f"aggregates {total} samples, timeline {len(samples)}"
        else:
            assert total - tl["untimed"] <= len(samples) <= total, (total, len(samples), tl["untimed"])
        assert in_stack.get("burst_spin", 0) >= 0.95 * total, f"burst_spin in too few stacks: {in_stack}"
        # the stacks the timeline names are the aggregates' stacks of the
        # workload's thread
        assert {s[2] for s in samples} == {truth["pid"]}, "the timeline names another thread"

        # a window to the nanosecond over one burst is answered from the
        # timeline: the burst's samples, by their own time, naming burst_spin
        b0, b1 = bursts[4]
        window = d.query_json("--pid", str(truth["pid"]), "--from", rfc3339(b0), "--to", rfc3339(b1))
        _, in_stack, total = function_shares(window)
        want = sum(1 for s in samples if b0 <= s[0] <= b1)
        print(f"  window over burst 5 ({(b1 - b0) / 1e6:.0f} ms): {total} samples (the timeline has {want}), "
              f"burst_spin in {in_stack.get('burst_spin', 0)}; timeline {window.get('timeline')}")
        assert window.get("timeline") is True, f"not answered from the timeline: {window.get('timeline')}"
        assert total == want, f"the window has {total} samples, the timeline {want} in it"
        assert total > 0 and in_stack.get("burst_spin", 0) >= 0.95 * total, in_stack
        # the same window --by-drains: the drains it touches, whole, as the
        # fleet answers (more samples than the burst's, said not timed)
        whole = d.query_json("--pid", str(truth["pid"]), "--from", rfc3339(b0), "--to", rfc3339(b1), "--by-drains")
        print(f"  the same window --by-drains: {whole['total']} samples; timeline {whole.get('timeline')}")
        assert whole.get("timeline") is False, whole.get("timeline")
        assert whole["total"] > total, (whole["total"], total)
        # the idle time after it: (almost) nothing of the workload
        idle = d.query_json("--pid", str(truth["pid"]), "--from", rfc3339(int(b1 + 2 * PERIOD_NS)),
                            "--to", rfc3339(int(bursts[5][0] - 2 * PERIOD_NS)))
        print(f"  window over the idle time after it: {idle['total']} samples")
        assert idle.get("timeline") is True and idle["total"] <= 2, idle["total"]
        # a window the timeline does not reach back to: by drains, and said
        before = d.query_json("--pid", str(truth["pid"]), "--since", "1h")
        assert before.get("timeline") is False, before.get("timeline")
        assert before["total"] == len(samples), (before["total"], len(samples))


if __name__ == "__main__":
    require_root()
    run_tests([test_timeline_places_burst_samples_in_the_bursts])
