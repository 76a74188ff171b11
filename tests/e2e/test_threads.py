#!/usr/bin/env python3
"""End to end, --root thread: a workload whose threads have distinct names
(pthread_setname_np: tn-alpha busy 60%, tn-beta 20%, two tn-pool threads
20% each) runs under profd; `profctl query --root thread --folded` roots
every stack at its thread's name, as `perf script | stackcollapse-perf.pl`
does, with each name's share of the samples equal to the CPU time its
threads measured themselves (the pool's two threads under one root). The
SVG flame graph has the names as its root frames, and the pprof profile
labels each sample with its group, as go tool pprof reads back."""
import json
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

from harness import Profd, binary, require_root, run_tests

FREQUENCY = 499
SECONDS = 6
# share points between profd's split and the threads' own CPU time: at 499
# Hz the workload gets ~1000 samples even on a loaded 2-CPU host (its
# threads then get less CPU than their duty asks; the shares are compared
# to what they got), so sampling noise is ~1.5 points: 6 is four of them
TOLERANCE = 0.06


def run_workload(d):
    """Runs the workload, flushes while its threads still live (profd reads
    their names as it stores the drain), then lets it end."""
    w = subprocess.Popen([binary("NAMED_THREADS"), str(SECONDS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        truth = json.loads(w.stdout.readline())
        d.profctl("flush")
    finally:
        w.stdin.close()
        assert w.wait(60) == 0
    return truth


def roots(folded_text):
    out = {}
    for line in folded_text.splitlines():
        stack, _, value = line.rpartition(" ")
        root = stack.split(";")[0]
        out[root] = out.get(root, 0) + int(value)
    return out


def test_root_thread_splits_by_thread_name():
    with Profd("--frequency", str(FREQUENCY), "--kinds", "cpu") as d:
        truth = run_workload(d)
        pid = str(truth["pid"])
        folded = d.profctl("query", "--pid", pid, "--since", "5m", "--root", "thread", "--folded").stdout
        got = roots(folded)
        expected_cpu = {}
        for t in truth["threads"]:
            expected_cpu[t["name"]] = expected_cpu.get(t["name"], 0) + t["cpu_ns"]
        print("  samples per root:", got)
        print("  CPU ms per name (the threads' own):", {k: v // 10**6 for k, v in expected_cpu.items()})
        # every stack is rooted at a thread name; the main thread waits, so
        # it may show up (as the process's name) with a few samples at most
        names = set(expected_cpu)
        assert names <= set(got), f"missing roots: {names - set(got)}; got {got}"
        others = {k: v for k, v in got.items() if k not in names}
        total = sum(got.values())
        # samples account for the CPU time (half of it at least: the
        # first and last drains' edges, samples of other kinds of time)
        expect = sum(expected_cpu.values()) / 1e9 * FREQUENCY
        assert total >= 0.5 * expect, f"only {total} samples of the workload, {expect:.0f} expected"
        assert sum(others.values()) <= 0.02 * total, f"stacks rooted elsewhere: {others}"
        # every line is a stack under its root: the root is followed by frames
        assert all(";" in line for line in folded.splitlines()), folded[:2000]
        cpu_total = sum(expected_cpu.values())
        named_total = sum(got[n] for n in names)
        for n in sorted(names):
            share, truth_share = got[n] / named_total, expected_cpu[n] / cpu_total
            print(f"  {n}: {share:.3f} of the samples, {truth_share:.3f} of the CPU time")
            assert abs(share - truth_share) <= TOLERANCE, (n, share, truth_share)
        # the hot function is under each thread's root
        for n in names:
            assert any(line.startswith(n + ";") and "burn_until" in line for line in folded.splitlines()), n

        # SVG: the names are the root row's frames
        work = tempfile.mkdtemp(prefix="profd-threads-")
        try:
            svg = os.path.join(work, "t.svg")
            d.profctl("query", "--pid", pid, "--since", "5m", "--root", "thread", "--format", "svg",
                      "--output", svg)
            ns = {"svg": "http://www.w3.org/2000/svg"}
            frames = ET.parse(svg).getroot().find("svg:g[@id='frames']", ns).findall("svg:g", ns)
            titles = {g.find("svg:title", ns).text.split("\n")[0].split(" (")[0] for g in frames}
            assert names <= titles, f"SVG frames {sorted(titles)[:20]} lack {names - titles}"

            # pprof: each sample labelled group=<thread name>
            pb = os.path.join(work, "t.pb.gz")
            d.profctl("query", "--pid", pid, "--since", "5m", "--root", "thread", "--format", "pprof",
                      "--output", pb)
            go = shutil.which("go")
            assert go, "go is not installed (golang-go, in setup.sh's TEST_PACKAGES)"
            home = os.path.join(work, "gohome")
            env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "cache"), GOPATH=os.path.join(home, "go"),
                       GOTOOLCHAIN="local", GOPROXY="off", GOFLAGS="", GOTELEMETRY="off")
            r = subprocess.run([go, "tool", "pprof", "-symbolize=none", "-tags", pb], capture_output=True,
                               text=True, env=env, timeout=120)
            assert r.returncode == 0, r.stderr
            for n in names:
                assert n in r.stdout, f"pprof -tags lacks {n}:\n{r.stdout}"
        finally:
            shutil.rmtree(work, ignore_errors=True)
        assert d.stop() == 0


def test_root_thread_survives_a_restart():
    """names come from the store, not from profd's memory"""
    with Profd("--frequency", str(FREQUENCY), "--kinds", "cpu") as d:
        truth = run_workload(d)
        assert d.stop() == 0
        again = Profd("--kinds", "none", store=d.store, workdir=d.dir)
        again.start()
        try:
            got = roots(again.profctl("query", "--pid", str(truth["pid"]), "--since", "5m", "--root", "thread",
                                      "--folded").stdout)
            assert {"tn-alpha", "tn-beta", "tn-pool"} <= set(got), got
            assert again.stop() == 0
        finally:
            if again.proc and again.proc.poll() is None:
                again.stop()


if __name__ == "__main__":
    require_root()
    run_tests([
        test_root_thread_splits_by_thread_name,
        test_root_thread_survives_a_restart,
    ])
