#!/usr/bin/env python3
"""profd's benchmark harness: the cost of profiling to a workload, measured
against running no profiler and against the peers users would otherwise run,
on the same machine in the same run.

Runs are interleaved (baseline, profd, peer, baseline, ...) because the machine
is shared and noisy; the report gives medians, min-max spreads and ratios to
the baseline, plus the precise figure: BPF nanoseconds per program run from
the kernel's own statistics (kernel.bpf_stats_enabled).

  tests/bench/bench.py [--runs N] [--loops N] [--output docs/performance.md]
  tests/bench/bench.py --quick --output /tmp/perf.md   (what the test suite runs)

Needs root, perf (linux-perf) and, for the peer, offcputime (libbpf-tools)."""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def bpf_progs():
    """id -> {name, run_time_ns, run_cnt} of every loaded BPF program."""
    out = sh(["bpftool", "prog", "show", "-j"], check=True).stdout
    return {p["id"]: p for p in json.loads(out)}


class Profiler:
    """A profiler run in the background while the workload runs."""

    def __init__(self, name, argv, ready, settle=0.0):
        self.name, self.argv, self.ready, self.settle = name, argv, ready, settle
        self.proc = None
        self.prog_ids = set()

    def start(self, workdir):
        before = set(bpf_progs())
        if self.argv is None:
            return
        self.log = open(os.path.join(workdir, self.name.replace(" ", "_") + ".log"), "ab")
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=self.log)
        self.ready(self)
        time.sleep(self.settle)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited early; see {self.log.name}")
        self.prog_ids = set(bpf_progs()) - before

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
            self.proc = None


def wait_for_socket(path, timeout=30):
    def ready(p):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if p.proc.poll() is not None:
                return
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(path)
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"no socket at {path}")
    return ready


def wait_fixed(seconds):
    return lambda p: time.sleep(seconds)


def pipe_workload(loops):
    """perf bench sched pipe pinned to one CPU (unpinned it mostly measures
    cross-CPU wake-up latency on a VM): returns microseconds per operation."""
    cmd = ["taskset", "-c", "1", "perf", "bench", "sched", "pipe", "-l", str(loops)]
    out = sh(cmd, check=True).stdout
    m = re.search(r"([0-9.]+) usecs/op", out)
    if not m:
        raise RuntimeError("cannot parse perf bench output:\n" + out)
    return float(m.group(1)), " ".join(cmd)


def machine_facts():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    pmu = os.path.exists("/sys/bus/event_source/devices/cpu/events/cpu-cycles")
    return (f"{os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB, kernel {platform.release()}, "
            f"{'hardware PMU' if pmu else 'no hardware PMU (sampling uses cpu-clock)'}")


def fmt_spread(values, unit=""):
    return f"{statistics.median(values):.2f}{unit} ({min(values):.2f}-{max(values):.2f})"


def run_offcpu_bench(args, workdir):
    profd = args.profd
    sock = os.path.join(workdir, "profd.sock")
    store = os.path.join(workdir, "profd.db")

    def profd_cfg(name, extra):
        return Profiler(name, [profd, "--config", "/dev/null", "--socket", sock, "--store", store] + extra,
                        wait_for_socket(sock), settle=0.5)

    configs = [Profiler("no profiler", None, None)]
    # both scheduler hooks attached, but no block passes the threshold: the
    # floor that attaching to sched_switch and sched_waking costs
    configs.append(profd_cfg("profd hooks only (wakeup kind)", ["--kinds", "wakeup"]))
    configs.append(profd_cfg("profd offcpu", ["--kinds", "offcpu"]))
    configs.append(profd_cfg("profd defaults (cpu+offcpu+wakeup)", []))
    if shutil.which("offcputime") or os.path.exists("/usr/sbin/offcputime"):
        configs.append(Profiler("libbpf-tools offcputime", ["/usr/sbin/offcputime", "3600"], wait_fixed(2.0)))
    else:
        print("offcputime not found (Debian package libbpf-tools): peer skipped", file=sys.stderr)

    results = {c.name: {"usecs": [], "progs": {}} for c in configs}
    command = None
    # Throughput with BPF statistics off: collecting them adds two clock reads
    # to every program run, which is not what users pay.
    set_bpf_stats(False)
    for r in range(args.runs):
        for c in configs:
            c.start(workdir)
            try:
                usecs, command = pipe_workload(args.loops)
            finally:
                c.stop()
            results[c.name]["usecs"].append(usecs)
            print(f"run {r + 1}/{args.runs} {c.name}: {usecs:.2f} usecs/op", file=sys.stderr)
    # Then one run each with statistics on, for BPF ns per program run.
    set_bpf_stats(True)
    for c in configs[1:]:
        c.start(workdir)
        try:
            before = bpf_progs()
            pipe_workload(args.loops)
            after = bpf_progs()
        finally:
            c.stop()
        for pid in c.prog_ids:
            if pid in after and pid in before:
                name = after[pid].get("name", str(pid))
                cnt = after[pid].get("run_cnt", 0) - before[pid].get("run_cnt", 0)
                ns = after[pid].get("run_time_ns", 0) - before[pid].get("run_time_ns", 0)
                agg = results[c.name]["progs"].setdefault(name, [0, 0])
                agg[0] += cnt
                agg[1] += ns
    return configs, results, command


def set_bpf_stats(on):
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1" if on else "0")


def switch_prog(progs):
    """The program that runs once per context switch."""
    for name in progs:
        if "switch" in name:
            return name
    return None


def render_offcpu(configs, results, command, args):
    base = statistics.median(results["no profiler"]["usecs"])
    lines = [
        "<!-- bench:offcpu:begin -->",
        "## Off-CPU profiling: cost per context switch",
        "",
        f"Measured {datetime.date.today().isoformat()} on {machine_facts()}.",
        "",
        f"Workload: `{command}` (two threads passing a byte back and forth on one CPU:"
        " two context switches and two wake-ups per operation), "
        f"{args.runs} interleaved runs per configuration with `kernel.bpf_stats_enabled=0`,"
        " then one run each with it on for the BPF figures. Command: "
        f"`{' '.join(['tests/bench/bench.py'] + args.argv_for_report)}`.",
        "",
        "| configuration | usecs/op, median (min-max) | slowdown vs none | BPF ns per context switch |",
        "| --- | --- | --- | --- |",
    ]
    for c in configs:
        res = results[c.name]
        med = statistics.median(res["usecs"])
        per_switch = "-"
        sw = switch_prog(res["progs"])
        if sw and res["progs"][sw][0]:
            total_ns = sum(ns for _, ns in res["progs"].values())
            per_switch = f"{total_ns / res['progs'][sw][0]:.0f}"
        lines.append(f"| {c.name} | {fmt_spread(res['usecs'])} | {med / base:.2f}x | {per_switch} |")
    lines += ["", "BPF programs, nanoseconds per run (the run with statistics on):", "",
              "| configuration | program | runs | ns/run |", "| --- | --- | --- | --- |"]
    for c in configs:
        for name, (cnt, ns) in sorted(results[c.name]["progs"].items()):
            if cnt:
                lines.append(f"| {c.name} | {name} | {cnt} | {ns / cnt:.0f} |")
    lines += ["",
              "BPF ns per context switch = the run time of all of a profiler's programs divided by"
              " the runs of its sched_switch program.",
              "<!-- bench:offcpu:end -->"]
    return "\n".join(lines) + "\n"


def write_section(path, section, text):
    begin, end = f"<!-- bench:{section}:begin -->", f"<!-- bench:{section}:end -->"
    old = open(path).read() if os.path.exists(path) else "# profd performance\n\n"
    if begin in old and end in old:
        new = old[:old.index(begin)] + text.rstrip("\n") + old[old.index(end) + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(path, "w") as f:
        f.write(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="interleaved runs per configuration (default 7)")
    ap.add_argument("--loops", type=int, default=200000, help="perf bench sched pipe loops (default 200000)")
    ap.add_argument("--quick", action="store_true", help="a tiny configuration: checks the harness runs")
    ap.add_argument("--profd", default=os.path.join(ROOT, "build", "daemon", "profd"))
    ap.add_argument("--output", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args()
    args.argv_for_report = sys.argv[1:]
    if args.quick:
        args.runs, args.loops = 1, 2000
    if os.geteuid() != 0:
        sys.exit("bench.py: needs root (loads BPF programs)")
    for tool in ("perf", "bpftool", "taskset"):
        if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
            sys.exit(f"bench.py: {tool} not found")

    stats_path = "/proc/sys/kernel/bpf_stats_enabled"
    old_stats = open(stats_path).read().strip()
    workdir = tempfile.mkdtemp(prefix="profd-bench-")
    try:
        configs, results, command = run_offcpu_bench(args, workdir)
        write_section(args.output, "offcpu", render_offcpu(configs, results, command, args))
    finally:
        with open(stats_path, "w") as f:
            f.write(old_stats)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
