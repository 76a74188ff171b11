#!/usr/bin/env python3
"""Issue 44's "daemon CPU with the timeline on, side by side with it off":
two profd at their defaults (49 Hz, 10 s drains, cpu+offcpu+wakeup), one
with the timeline on and one with --no-timeline, running at the same time
on the same workload, so that whatever else loads the machine falls on both
alike: a busy host (stress-ng on every CPU) and a build host (the build
loop of bench.py: this tree built from clean and its unit tests, again and
again). Each round starts both afresh (the order swapped every round), lets
them run WARM s (start, unwind tables, first symbols: not the steady
cost), then measures WINDOWS windows of SPAN s: each daemon's CPU
(utime+stime from /proc/PID/stat, % of one core) and its BPF programs'
CPU (run_time_ns from bpf_stats, which runs in other tasks' context and is
not in the daemon's time; % of one core, and the sampler's ns a sample),
and what each stored. Root. With --write, rewrites the section
bench:timeline-onoff of docs/performance.md.

Usage: timeline_onoff.py [--rounds N] [--windows N] [--span S] [--warm S] [--modes busy,build] [--write]"""
import argparse
import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARMS = ("on", "off")


def status(profctl, sock):
    r = bench.sh([profctl, "--socket", sock, "status", "--json"])
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {}


def wait_socket(path, p, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"profd opened no socket at {path}")


def bpf_delta(a, z, ids):
    """(all programs' ns, the sampler's runs, the sampler's ns) between two
    bpftool snapshots, for the programs ids."""
    ns = cnt_s = ns_s = 0
    for i in ids:
        if i not in a or i not in z:
            continue
        d = z[i].get("run_time_ns", 0) - a[i].get("run_time_ns", 0)
        ns += d
        if z[i].get("type") == "perf_event":
            cnt_s += z[i].get("run_cnt", 0) - a[i].get("run_cnt", 0)
            ns_s += d
    return ns, cnt_s, ns_s


class Daemon:
    """One profd of a round, on its own socket and store."""

    def __init__(self, args, arm, workdir):
        self.arm, self.args = arm, args
        self.dir = tempfile.mkdtemp(prefix=f"onoff-{arm}-", dir=workdir)
        self.sock, self.store = os.path.join(self.dir, "profd.sock"), os.path.join(self.dir, "profd.db")
        argv = [args.profd, "--config", "/dev/null", "--socket", self.sock, "--store", self.store]
        if arm == "off":
            argv.append("--no-timeline")
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ids = set()

    def snapshot(self, progs):
        return bench.proc_cpu_s(self.p.pid), progs, bench.store_bytes(self.store), time.monotonic()

    def stop(self):
        self.p.terminate()
        self.p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def one_round(args, order, mode, workdir):
    """Both daemons at once; returns a result per arm and window."""
    daemons, stress, out = [], None, []
    try:
        for arm in order:
            daemons.append(Daemon(args, arm, workdir))
        for d in daemons:
            wait_socket(d.sock, d.p)
        if mode == "busy":
            stress = subprocess.Popen(["stress-ng", "--cpu", str(os.cpu_count()), "--cpu-method", "int64",
                                       "--timeout", f"{args.warm + args.windows * args.span + 10}s"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(args.warm)
        for d in daemons:
            d.ids = bench.owned_progs(d.p.pid)
        progs = bench.bpf_progs()
        snaps = {d.arm: d.snapshot(progs) for d in daemons}
        for w in range(args.windows):
            l0 = float(bench.loadavg())
            time.sleep(args.span)
            progs = bench.bpf_progs()
            l1 = float(bench.loadavg())
            for d in daemons:
                c0, b0, s0, t0 = snaps[d.arm]
                c1, b1, s1, t1 = snaps[d.arm] = d.snapshot(progs)
                span = t1 - t0
                ns, cnt, ns_s = bpf_delta(b0, b1, d.ids)
                r = {"arm": d.arm, "mode": mode, "window": w, "span": span, "daemon_pct": 100 * (c1 - c0) / span,
                     "bpf_pct": 100 * ns / (span * 1e9), "sample_ns": ns_s / cnt if cnt else None,
                     "samples": cnt, "store_kib": (s1 - s0) / 1024, "load": (l0, l1)}
                print(json.dumps(r), flush=True)
                out.append(r)
        for d in daemons:
            tl = status(args.profctl, d.sock).get("timeline", {})
            for r in out:
                if r["arm"] == d.arm:
                    r["timeline_bytes"] = tl.get("bytes", 0) + tl.get("offcpu", {}).get("bytes", 0)
                    r["timeline_on"] = tl.get("on")
    finally:
        if stress:
            stress.terminate()
            stress.wait()
        for d in daemons:
            d.stop()
    return out


def med(rs, key):
    v = [r[key] for r in rs if r[key] is not None]
    return statistics.median(v) if v else float("nan")


def render(args, results, facts, started, ended, loads):
    cmd = "tests/bench/timeline_onoff.py " + " ".join(
        [f"--rounds {args.rounds}", f"--windows {args.windows}", f"--span {args.span:g}",
         f"--warm {args.warm:g}", f"--modes {','.join(args.modes)}"])
    lines = [f"Measured {started}-{ended} UTC on {bench.facts_text(facts)}; load average (1 min) "
             f"{min(loads):.2f}-{max(loads):.2f} during the windows (the machine is shared with other builds and "
             f"tests). Command: `{cmd} --write`.",
             "",
             f"Two profd at their defaults (49 Hz, 10 s drains, cpu+offcpu+wakeup) at the same time on the same "
             f"workload, one with the timeline on, one with `--no-timeline`, each on its own fresh store; "
             f"{args.rounds} rounds (both restarted, the start order swapped), {args.warm:g} s to start, then "
             f"{args.windows} windows of {args.span:g} s (3 drains each). Daemon: its utime+stime "
             f"(/proc/PID/stat), % of one core. BPF: its programs' `run_time_ns` (bpf_stats), % of one core, and "
             f"the sampler's ns a sample. Store: the file's growth a window; timeline: both timelines' blob "
             f"bytes at the round's end (status).",
             "",
             "| workload | timeline | daemon % of a core, per window | median | BPF % of a core, median | "
             "sampler ns a sample, median | store growth KiB a window, median | timeline bytes, median |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for mode in args.modes:
        for arm in ARMS:
            rs = [r for r in results if r["mode"] == mode and r["arm"] == arm]
            if not rs:
                continue
            per = ", ".join("%.2f" % r["daemon_pct"] for r in rs)
            lines.append(f"| {mode} | {arm} | {per} | {med(rs, 'daemon_pct'):.2f} | {med(rs, 'bpf_pct'):.3f} | "
                         f"{med(rs, 'sample_ns'):.0f} | {med(rs, 'store_kib'):.0f} | "
                         f"{med(rs, 'timeline_bytes'):.0f} |")
    lines += ["", "Off against on, window by window (the same seconds):", "",
              "| workload | daemon CPU off / on, per window | median | BPF CPU off / on, per window | median |",
              "| --- | --- | --- | --- | --- |"]
    for mode in args.modes:
        on = {(r["window"], i // args.windows): r for i, r in
              enumerate(r for r in results if r["mode"] == mode and r["arm"] == "on")}
        off = {(r["window"], i // args.windows): r for i, r in
               enumerate(r for r in results if r["mode"] == mode and r["arm"] == "off")}
        keys = sorted(set(on) & set(off), key=lambda k: (k[1], k[0]))
        d = [off[k]["daemon_pct"] / on[k]["daemon_pct"] for k in keys if on[k]["daemon_pct"] > 0]
        b_ = [off[k]["bpf_pct"] / on[k]["bpf_pct"] for k in keys if on[k]["bpf_pct"] > 0]
        if d and b_:
            lines.append(f"| {mode} | {', '.join('%.2f' % x for x in d)} | {statistics.median(d):.2f} | "
                         f"{', '.join('%.2f' % x for x in b_)} | {statistics.median(b_):.2f} |")
    return bench.section("timeline-onoff", "Daemon CPU with the timeline on and off (issue 44)", lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="rounds (both daemons afresh) per workload")
    ap.add_argument("--windows", type=int, default=3, help="windows measured a round")
    ap.add_argument("--span", type=float, default=30, help="seconds a window (3 drains)")
    ap.add_argument("--warm", type=float, default=40, help="seconds before the first window")
    ap.add_argument("--modes", type=lambda s: s.split(","), default=["busy", "build"])
    ap.add_argument("--profd", default=os.path.join(ROOT, "build", "daemon", "profd"))
    ap.add_argument("--profctl", default=os.path.join(ROOT, "build", "client", "profctl"))
    ap.add_argument("--write", action="store_true", help="write docs/performance.md's section")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("timeline_onoff.py: needs root")
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    workdir = tempfile.mkdtemp(prefix="timeline-onoff-")
    results, loads = [], []
    with open(bench.STATS) as f:
        stats_before = f.read().strip() == "1"  # other benchmarks on the machine may have it on
    bench.set_bpf_stats(True)
    try:
        for mode in args.modes:
            builds = None
            if mode == "build":
                builds = bench.start_build_loop(bench.build_tree(workdir))
                time.sleep(10)  # the loop in the middle of its builds, not starting them
            try:
                for i in range(args.rounds):
                    for r in one_round(args, ARMS if i % 2 == 0 else ARMS[::-1], mode, workdir):
                        loads.extend(r["load"])
                        results.append(r)
            finally:
                if builds:
                    bench.stop_group(builds)
    finally:
        bench.set_bpf_stats(stats_before)
        shutil.rmtree(workdir, ignore_errors=True)
    ended = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M")
    text = render(args, results, bench.machine_facts(), started, ended, loads)
    print(text)
    if args.write:
        bench.write_section(os.path.join(ROOT, "docs", "performance.md"), "timeline-onoff", text)


if __name__ == "__main__":
    main()
