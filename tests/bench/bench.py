#!/usr/bin/env python3
"""profd's benchmark harness: what profiling costs a workload, what profd
itself costs, how accurate it is and how fast it answers, measured against
running no profiler and against the peers users would otherwise run, on the
same machine in the same run.

  tests/bench/bench.py --all                 as root: every suite, rewrites docs/performance.md
  tests/bench/bench.py --suite cost,bpf      some suites (cost bpf daemon accuracy answers unwind kmem)
  tests/bench/bench.py --quick --output F    a tiny configuration (what the test suite runs)

Cost runs are interleaved (no profiler, profd, peers, no profiler, ...) because
the machine is shared and noisy; the report gives medians, min-max spreads,
ratios to the no-profiler runs, and the precise figure: BPF nanoseconds per
program run from the kernel's own statistics (kernel.bpf_stats_enabled, put
back as it was afterwards). Every result carries /proc/loadavg at the time.

Each suite rewrites its own section of the output (between
<!-- bench:NAME:begin/end --> markers) and its raw figures in the JSON file
next to it (performance.json); the targets table is rebuilt from all of them.
Text outside the markers (analysis, other people's sections) is kept.

Needs root, perf (linux-perf), stress-ng, bpftool, and for the peers
offcputime (libbpf-tools), profile-bpfcc (bpfcc-tools; built against Debian's
linux-headers, see BCC_SOURCE below) or bpftrace as its stand-in."""
import argparse
import datetime
import fcntl
import glob
import json
import math
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
# in the order --all runs them: the longest (daemon) last
SUITES = ("cost", "bpf", "accuracy", "unwind", "answers", "kmem", "daemon")
DAEMON_MODES = ("idle", "busy", "build")
# bcc compiles its programs against kernel headers; this kernel ships none, and
# Debian splits its headers into an arch part and a common part that bcc wants
# in one tree: the newest installed pair (apt-get install
# linux-headers-6.12.117+deb12-amd64, which pulls in -common) is merged (as
# symlinks) into a temporary directory. bcc's profile only needs the
# kernel's general headers (perf_event, ptrace): another 6.x series serves.
BCC_HEADERS_GLOB = "/usr/src/linux-headers-*-amd64"
STATS = "/proc/sys/kernel/bpf_stats_enabled"


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def cpu_times():
    """(steal, total) jiffies over all CPUs: a VM's vCPUs lose time to the host (steal)."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return f[7], sum(f[:8])


def loadavg():
    return open("/proc/loadavg").read().split()[0]


def bpf_progs():
    """id -> bpftool's description (name, type, run_time_ns, run_cnt) of every loaded program."""
    out = sh(["bpftool", "prog", "show", "-j"], check=True).stdout
    return {p["id"]: p for p in json.loads(out)}


def owned_progs(pid):
    """Ids of the BPF programs that process pid (or its children) holds open:
    not those that others load on the same machine meanwhile."""
    ids, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            for fd in os.listdir(f"/proc/{p}/fdinfo"):
                try:
                    for line in open(f"/proc/{p}/fdinfo/{fd}"):
                        if line.startswith("prog_id:"):
                            ids.add(int(line.split()[1]))
                except OSError:
                    pass
            for t in os.listdir(f"/proc/{p}/task"):
                try:
                    todo += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
                except OSError:
                    pass
        except OSError:
            pass
    return ids


def set_bpf_stats(on):
    with open(STATS, "w") as f:
        f.write("1" if on else "0")


def tool(name):
    for d in ("", "/usr/sbin/", "/sbin/", "/usr/bin/"):
        p = shutil.which(name) if not d else d + name
        if p and os.path.exists(p):
            return p
    return None


# ---------------------------------------------------------------- profilers

class Profiler:
    """A profiler run in the background while a workload runs. argv None: no profiler."""

    def __init__(self, name, argv, ready=None, env=None, note=""):
        self.name, self.argv, self.ready, self.env, self.note = name, argv, ready, env, note
        self.proc = None
        self.prog_ids = set()
        self.pid = None

    def start(self, workdir):
        if self.argv is None:
            return
        before = set(bpf_progs())
        # stdout and stderr apart: a tool's warnings written to the same file
        # could land in the middle of a line of its output
        base = os.path.join(workdir, re.sub(r"\W+", "_", self.name))
        self.log = open(base + ".log", "ab")
        self.err = open(base + ".err", "ab")
        env = dict(os.environ, **(self.env or {}))
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=self.err, env=env,
                                     start_new_session=True, preexec_fn=default_signals)
        self.pid = self.proc.pid
        if self.ready:
            self.ready(self, before)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited early ({self.proc.returncode}); see {self.log.name} and .err")
        self.prog_ids = owned_progs(self.pid)
        if not self.prog_ids:
            # not visible through its descriptors: what appeared meanwhile
            # (other users of the machine may load programs too: say so)
            self.prog_ids = set(bpf_progs()) - before
            print(f"{self.name}: holds no BPF program descriptor; measuring every program loaded since its "
                  f"start ({len(self.prog_ids)}), which may include others'", file=sys.stderr)

    def stop(self, sig=signal.SIGINT, timeout=300):
        if not self.proc:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.err.close()
        self.proc = None

    def log_text(self):
        return open(self.log.name, errors="replace").read()

    def err_text(self):
        return open(self.err.name, errors="replace").read()


def default_signals():
    """In the child: SIGINT and SIGTERM back to their defaults. A shell runs
    background commands with SIGINT ignored, the ignoring is inherited, and
    peers stopped with SIGINT (bcc, offcputime, perf) would then never print
    what they collected."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def ready_socket(path, timeout=60):
    def ready(p, before):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and p.proc.poll() is None:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(path)
                time.sleep(0.3)
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"no socket at {path}")
    return ready


def ready_new_progs(kinds, timeout=180, settle=0.5):
    """Ready once the profiler holds a BPF program of one of these types
    (bcc compiles first: tens of seconds here) and the count stopped
    growing. Only its own: on a shared machine others load programs of the
    same types meanwhile (profd's sampler under tests), and taking theirs
    for the peer's measured the wrong programs."""
    def ready(p, before):
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline and p.proc.poll() is None:
            mine = owned_progs(p.pid)
            new = [q for i, q in bpf_progs().items() if i in mine and i not in before and q.get("type") in kinds]
            if new and len(new) == seen:
                time.sleep(settle)
                return
            seen = len(new)
            time.sleep(0.5)
        raise RuntimeError(f"{p.name}: no BPF program of type {kinds} appeared")
    return ready


def ready_fixed(seconds):
    return lambda p, before: time.sleep(seconds)


def bcc_headers():
    """Debian's (common, arch) header trees of the newest kernel installed
    with both, or None."""
    def version(path):
        v = path[len("/usr/src/linux-headers-"):-len("-amd64")]
        return [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.split(r"[.+-]", v)]
    for arch in sorted(glob.glob(BCC_HEADERS_GLOB), key=version, reverse=True):
        common = arch[:-len("-amd64")] + "-common"
        if os.path.isdir(common) and "-cloud-" not in arch and "-rt-" not in arch:
            return common, arch
    return None


def bcc_env(workdir):
    """BCC_KERNEL_SOURCE for profile-bpfcc: Debian's two header trees merged."""
    trees = bcc_headers()
    if not trees:
        return None
    k = os.path.join(workdir, "ksrc")
    if not os.path.isdir(k):
        os.mkdir(k)
        for d in trees:
            subprocess.run(["cp", "-asf", d + "/.", k + "/"], check=True)
    return {"BCC_KERNEL_SOURCE": k}


def profilers(args, workdir, which):
    """The configurations by key; `which` lists the keys wanted, in order."""
    sock = os.path.join(workdir, "profd.sock")

    def profd(name, extra):
        store = os.path.join(workdir, "profd.db")
        return Profiler(name, [args.profd, "--config", "/dev/null", "--socket", sock, "--store", store] + extra,
                        ready_socket(sock))

    out = []
    for key in which:
        if key == "none":
            out.append(Profiler("no profiler", None))
        elif key == "profd-cpu":
            out.append(profd("profd on-CPU only (--kinds cpu)", ["--kinds", "cpu"]))
        elif key == "profd-hooks":
            # both scheduler hooks attached, but no block passes the threshold:
            # the floor that attaching to sched_switch and sched_waking costs
            out.append(profd("profd hooks only (--kinds wakeup)", ["--kinds", "wakeup"]))
        elif key == "profd-offcpu":
            out.append(profd("profd off-CPU only (--kinds offcpu)", ["--kinds", "offcpu"]))
        elif key == "profd":
            out.append(profd("profd defaults (cpu+offcpu+wakeup)", []))
        elif key == "perf":
            out.append(Profiler("perf record -F 49 -a -g",
                                ["perf", "record", "-F", "49", "-a", "-g", "-q", "-o", os.path.join(workdir, "perf.data")],
                                ready_fixed(1.5)))
        elif key == "offcputime":
            if tool("offcputime"):
                out.append(Profiler("libbpf-tools offcputime", [tool("offcputime"), "3600"],
                                    ready_new_progs({"tracing", "raw_tracepoint"})))
            else:
                print("offcputime (libbpf-tools) not found: peer skipped", file=sys.stderr)
        elif key == "bcc":
            env = bcc_env(workdir)
            if tool("profile-bpfcc") and env:
                out.append(Profiler("bcc profile-bpfcc -F 49", [tool("profile-bpfcc"), "-F", "49", "-f"],
                                    ready_new_progs({"perf_event"}), env=env))
            elif tool("bpftrace"):
                why = ("profile-bpfcc not found (bpfcc-tools)" if not tool("profile-bpfcc") else
                       f"no kernel headers for bcc ({BCC_HEADERS_GLOB} and its -common; "
                       "apt-get install linux-headers-6.12.117+deb12-amd64)")
                print(f"bcc: {why}: bpftrace stands in", file=sys.stderr)
                out.append(Profiler("bpftrace profile:hz:49 (stand-in for bcc profile)",
                                    [tool("bpftrace"), "-e", "profile:hz:49 { @[kstack, ustack, comm] = count(); }"],
                                    ready_new_progs({"perf_event"})))
        else:
            raise ValueError(key)
    return out


# ---------------------------------------------------------------- workloads

def pipe_workload(args):
    """perf bench sched pipe pinned to one CPU (unpinned it mostly measures
    cross-CPU wake-up latency on a VM): microseconds per operation."""
    cmd = ["taskset", "-c", "1", "perf", "bench", "sched", "pipe", "-l", str(args.loops)]
    out = sh(cmd, check=True).stdout
    m = re.search(r"([0-9.]+) usecs/op", out)
    if not m:
        raise RuntimeError("cannot parse perf bench output:\n" + out)
    return float(m.group(1)), " ".join(cmd)


def stress_workload(args, workdir):
    """stress-ng --cpu on every CPU: bogo operations per second (real time)."""
    y = os.path.join(workdir, "stress.yaml")
    cmd = ["stress-ng", "--cpu", str(os.cpu_count()), "--cpu-method", "int64", "--timeout",
           f"{args.stress_seconds}s", "--metrics-brief", "--yaml", y]
    sh(cmd, check=True)
    m = re.search(r"bogo-ops-per-second-real-time:\s*([0-9.]+)", open(y).read())
    if not m:
        raise RuntimeError("cannot parse stress-ng yaml:\n" + open(y).read())
    return float(m.group(1)), " ".join(c if c != y else "FILE.yaml" for c in cmd)


def run_workload(name, args, workdir):
    return pipe_workload(args) if name == "pipe" else stress_workload(args, workdir)


# ---------------------------------------------------------------- helpers

def machine_facts():
    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    pmu = os.path.exists("/sys/bus/event_source/devices/cpu/events/cpu-cycles")
    clk = open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip()
    return {"cpus": os.cpu_count(), "cpu": cpu, "mem_gib": round(mem), "kernel": platform.release(),
            "pmu": pmu, "clocksource": clk}


def facts_text(f):
    return (f"{f['cpus']} CPUs ({f['cpu']}), {f['mem_gib']} GiB, kernel {f['kernel']}, "
            f"{'hardware PMU' if f['pmu'] else 'no hardware PMU (on-CPU sampling uses cpu-clock)'}, "
            f"clocksource {f['clocksource']}")


def spread(values, fmt="{:.2f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def write_section(path, section, text):
    begin, end = f"<!-- bench:{section}:begin -->", f"<!-- bench:{section}:end -->"
    old = open(path).read() if os.path.exists(path) else "# profd performance\n\n"
    if begin in old and end in old:
        new = old[:old.index(begin)] + text.rstrip("\n") + old[old.index(end) + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(path, "w") as f:
        f.write(new)


def section(name, title, lines):
    return "\n".join([f"<!-- bench:{name}:begin -->", f"## {title}", ""] + lines +
                     [f"<!-- bench:{name}:end -->"]) + "\n"


def prog_delta(before, after, ids):
    """name -> [runs, ns, type] over the programs `ids` between two snapshots."""
    out = {}
    for i in ids:
        if i in after:
            a, b = after[i], before.get(i, {})
            agg = out.setdefault(a.get("name", str(i)), [0, 0, a.get("type")])
            agg[0] += a.get("run_cnt", 0) - b.get("run_cnt", 0)
            agg[1] += a.get("run_time_ns", 0) - b.get("run_time_ns", 0)
    return out


# ---------------------------------------------------------------- suite: cost

COST_CONFIGS = ["none", "profd-cpu", "profd", "perf", "offcputime", "bcc"]
PIPE_ONLY = ["profd-hooks", "profd-offcpu"]  # where the off-CPU cost comes from


def suite_cost(args, workdir, results):
    """Throughput of stress-ng --cpu and of perf bench sched pipe under each
    configuration, interleaved, with BPF statistics off (collecting them adds
    two clock reads to every program run, which is not what users pay)."""
    keys = COST_CONFIGS + PIPE_ONLY
    if args.configs:
        keys = args.configs.split(",")
    if args.quick:
        keys = ["none", "profd-cpu", "profd-offcpu", "profd"]
    configs = profilers(args, workdir, keys)
    wanted = args.workloads.split(",")
    workloads = {c.name: [w for w in (["pipe"] if any(c.name == p.name for p in profilers(args, workdir, PIPE_ONLY))
                                      else ["stress", "pipe"]) if w in wanted] for c in configs}
    res = {c.name: {"pipe": [], "stress": [], "load": [], "pipe_ratio": [], "stress_ratio": []} for c in configs}
    commands = {}
    base = configs[0]
    assert base.argv is None
    set_bpf_stats(False)

    def measure(c):
        c.start(workdir)
        try:
            for w in workloads[c.name]:
                v, commands[w] = run_workload(w, args, workdir)
                res[c.name][w].append(v)
        finally:
            c.stop()
        res[c.name]["load"].append(float(loadavg()))
        print(f"cost run {r + 1}/{args.runs} {c.name}: " +
              ", ".join(f"{w} {res[c.name][w][-1]:.2f}" for w in workloads[c.name]) +
              f" (load {loadavg()})", file=sys.stderr)

    # baseline, profiled, baseline, profiled, ...: every profiled run is
    # paired with the baseline run just before it
    for r in range(args.runs):
        for c in configs[1:]:
            measure(base)
            measure(c)
            for w in workloads[c.name]:
                b = res[base.name][w][-1]
                x = res[c.name][w][-1]
                # slowdown for pipe (time per op), throughput share for stress
                res[c.name][w + "_ratio"].append(x / b)
    results["cost"] = {"configs": [c.name for c in configs], "runs": args.runs, "results": res,
                       "commands": commands, "notes": {c.name: c.note for c in configs if c.note}}


def render_cost(r):
    base = r["results"]["no profiler"]
    lines = [f"Commands: `{r['commands'].get('stress', '')}` (bogo ops/s, higher is better) and "
             f"`{r['commands'].get('pipe', '')}` (usecs per operation: two context switches and two "
             "wake-ups on one CPU; lower is better), with `kernel.bpf_stats_enabled=0`. "
             f"{r['runs']} rounds; in each, every profiler configuration is started, measured and stopped "
             "right after a run with no profiler (no profiler, profd, no profiler, peer, ...). "
             "\"paired\" is the median (min-max) of each run's ratio to the no-profiler run just before it; "
             "\"of medians\" divides the medians.",
             "",
             "| configuration | stress-ng bogo ops/s, median (min-max) | throughput vs none: paired; of medians | "
             "pipe usecs/op, median (min-max) | pipe slowdown vs none: paired; of medians | load average during runs |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name in r["configs"]:
        x = r["results"][name]
        s = spread(x["stress"], "{:.0f}") if x["stress"] else "-"
        sr = (f"{spread(x['stress_ratio'], '{:.3f}')}; {statistics.median(x['stress']) / statistics.median(base['stress']):.3f}"
              if x.get("stress_ratio") else "1" if x["stress"] else "-")
        p = spread(x["pipe"]) if x["pipe"] else "-"
        pr = (f"{spread(x['pipe_ratio'])}; {statistics.median(x['pipe']) / statistics.median(base['pipe']):.2f}"
              if x.get("pipe_ratio") else "1" if x["pipe"] else "-")
        lines.append(f"| {name} | {s} | {sr} | {p} | {pr} | {spread(x['load'])} |")
    for name, note in r.get("notes", {}).items():
        lines += ["", f"{name}: {note}"]
    return section("cost", "Cost to the workload: throughput", lines)


# ---------------------------------------------------------------- suite: bpf

def suite_bpf(args, workdir, results):
    """One run per configuration and workload with kernel.bpf_stats_enabled=1:
    BPF ns per program run, per sample and per context switch, and BPF time
    as a share of one core over the run."""
    keys = ["profd-cpu", "profd-hooks", "profd-offcpu", "profd", "offcputime", "bcc"]
    if args.configs:
        keys = [k for k in args.configs.split(",") if k != "none"]
    if args.quick:
        keys = ["profd-cpu", "profd-offcpu"]
    configs = profilers(args, workdir, keys)
    out = {}
    set_bpf_stats(True)
    try:
        # rounds interleave the configurations; the figures are totals over
        # all rounds (a run is a few hundred samples), and per-round values
        # give the spread
        for r in range(args.bpf_runs):
            for c in configs:
                c.start(workdir)
                try:
                    for w in [w for w in ("stress", "pipe") if w in args.workloads.split(",")]:
                        # the switch is the whole machine's: another user's
                        # harness ending meanwhile turns it off, and the run
                        # then counts nothing (rounds of zeros): on again
                        # before each run, and a run that found it off done
                        # again (a few times at most)
                        for attempt in range(4):
                            set_bpf_stats(True)
                            before = bpf_progs()
                            t0 = time.monotonic()
                            v, cmd = run_workload(w, args, workdir)
                            wall = time.monotonic() - t0
                            after = bpf_progs()
                            if open(STATS).read().strip() == "1":
                                break
                            print(f"{c.name}, {w}: kernel.bpf_stats_enabled was turned off during the run "
                                  "(by another user of the machine?): running it again", file=sys.stderr)
                        e = out.setdefault(c.name, {}).setdefault(w, {"progs": {}, "wall_s": 0.0, "rounds": [],
                                                                        "load": [], "command": cmd})
                        d = prog_delta(before, after, c.prog_ids)
                        for n, (cnt, ns, typ) in d.items():
                            agg = e["progs"].setdefault(n, [0, 0, typ])
                            agg[0] += cnt
                            agg[1] += ns
                        e["wall_s"] += wall
                        e["rounds"].append({"progs": d, "wall_s": wall})
                        e["load"].append(float(loadavg()))
                finally:
                    c.stop()
                print(f"bpf stats round {r + 1}/{args.bpf_runs} {c.name}: "
                      f"{json.dumps({w: x['rounds'][-1] for w, x in out[c.name].items()})[:300]}", file=sys.stderr)
        side = side_by_side(args, workdir, keys)
    finally:
        set_bpf_stats(False)
    results["bpf"] = {"configs": [c.name for c in configs], "results": out, "runs": args.bpf_runs,
                      "side_by_side": side}


def side_by_side(args, workdir, keys):
    """profd at its defaults and bcc's profile loaded together, under one
    stress-ng run per round: per sample, each one's perf_event programs over
    the same samples of the same minutes. Runs far apart (above) differ by
    more than the two do: the machine's speed drifts by tens of percent
    between minutes. Which one starts first alternates."""
    if args.side_runs <= 0 or "profd" not in keys or "bcc" not in keys:
        return None
    rounds = []
    for r in range(args.side_runs):
        pair = profilers(args, workdir, ["profd", "bcc"])
        if len(pair) < 2 or not pair[1].argv or "profile-bpfcc" not in pair[1].argv[0]:
            print("side by side: no bcc profile-bpfcc here: skipped", file=sys.stderr)
            return None
        order = pair if r % 2 == 0 else pair[::-1]
        try:
            for p in order:
                p.start(workdir)
            set_bpf_stats(True)
            before = bpf_progs()
            run_workload("stress", args, workdir)
            after = bpf_progs()
            row = {"load": float(loadavg())}
            for key, p in zip(("profd", "bcc"), pair):
                row[key] = per_sample(prog_delta(before, after, p.prog_ids))
            rounds.append(row)
        finally:
            for p in order:
                p.stop()
        print(f"side by side round {r + 1}/{args.side_runs}: {row}", file=sys.stderr)
    return {"rounds": rounds, "command": "stress-ng --cpu %d --cpu-method int64 --timeout %ds" % (
        os.cpu_count(), args.stress_seconds)}


def per_sample(progs):
    """BPF ns per on-CPU sample: every program's time over the runs of the perf_event program(s)."""
    runs = sum(p[0] for p in progs.values() if p[2] == "perf_event")
    ns = sum(p[1] for p in progs.values() if p[2] == "perf_event")
    return ns / runs if runs else None


def per_switch(progs):
    """BPF ns per context switch: all of a profiler's tracing programs (profd's
    sched_exit_tp program, profd_switch_done, included) over the runs of its
    sched_switch program (profd_switch, offcputime's sched_switch: the name
    ends there; profd_switch_done runs at every __schedule, switch or not)."""
    sw = [p for n, p in progs.items() if n.endswith("switch")]
    if not sw or not sw[0][0]:
        return None
    return sum(p[1] for p in progs.values() if p[2] != "perf_event") / sw[0][0]


def core_pct(entry):
    return 100.0 * sum(p[1] for p in entry["progs"].values()) / (entry["wall_s"] * 1e9)


def render_bpf(r):
    lines = [f"{r.get('runs', 1)} interleaved rounds of one run per configuration and workload with "
             "`kernel.bpf_stats_enabled=1` "
             "(run_time_ns and run_cnt from `bpftool prog show -j`, before and after the workload). "
             "Per sample: the perf_event program's time over its runs. Per context switch: the time of "
             "all of a profiler's scheduler programs (sched_switch, sched_waking and, for profd, "
             "sched_exit_tp, where a kept block's user stack is walked) over the runs of its "
             "sched_switch program. % of a core: all of its programs' time over the workload's wall time.",
             "",
             "| configuration | BPF ns per on-CPU sample (stress-ng) | BPF % of a core, stress-ng | "
             "BPF ns per context switch (pipe) | BPF % of a core, pipe |",
             "| --- | --- | --- | --- | --- |"]
    for name in r["configs"]:
        e = r["results"].get(name, {})
        s, p = e.get("stress"), e.get("pipe")
        ps = per_sample(s["progs"]) if s else None
        pw = per_switch(p["progs"]) if p else None

        def rng(e, f):
            v = [f(x["progs"]) for x in e.get("rounds", [])]
            v = [x for x in v if x]
            return f" ({min(v):.0f}-{max(v):.0f})" if len(v) > 1 else ""
        lines.append(f"| {name} | {f'{ps:.0f}' + rng(s, per_sample) if ps else '-'} | "
                     f"{f'{core_pct(s):.3f}%' if s else '-'} | "
                     f"{f'{pw:.0f}' + rng(p, per_switch) if pw else '-'} | {f'{core_pct(p):.2f}%' if p else '-'} |")
    lines += ["", "Figures are totals over the rounds; in brackets the lowest and highest round.",
              "", "Per program:", "", "| configuration | workload | program | type | runs | ns/run | load |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for name in r["configs"]:
        for w, e in sorted(r["results"].get(name, {}).items()):
            for pn, (cnt, ns, typ) in sorted(e["progs"].items()):
                if cnt:
                    load = e["load"] if isinstance(e["load"], str) else spread(e["load"])
                    lines.append(f"| {name} | {w} | {pn} | {typ} | {cnt} | {ns / cnt:.0f} | {load} |")
    side = r.get("side_by_side")
    if side and side["rounds"]:
        rows = [x for x in side["rounds"] if x.get("profd") and x.get("bcc")]
        ratios = sorted(x["profd"] / x["bcc"] for x in rows)
        lines += ["", f"Side by side: profd at its defaults and bcc's `profile-bpfcc -F 49` loaded together, "
                  f"{len(rows)} rounds of `{side['command']}` (which one starts first alternates); BPF ns "
                  "per on-CPU sample of each over the same minutes:", "",
                  "| round | load | profd ns per sample | bcc ns per sample | profd / bcc |",
                  "| --- | --- | --- | --- | --- |"]
        for i, x in enumerate(rows):
            lines.append(f"| {i + 1} | {x['load']:.2f} | {x['profd']:.0f} | {x['bcc']:.0f} | "
                         f"{x['profd'] / x['bcc']:.2f} |")
        if ratios:
            mid = ratios[len(ratios) // 2] if len(ratios) % 2 else (ratios[len(ratios) // 2 - 1] +
                                                                   ratios[len(ratios) // 2]) / 2
            lines += ["", f"profd / bcc: median {mid:.2f}, {min(ratios):.2f}-{max(ratios):.2f}; "
                      f"profd cheaper in {sum(1 for x in ratios if x <= 1)} of {len(ratios)} rounds."]
    return section("bpf", "Cost to the workload: BPF time per sample and per context switch", lines)


# ---------------------------------------------------------------- suite: kmem

KMEM_CPUS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MIB_F = float(1 << 20)


def kmem_group(name):
    """Which budget a map of profd's counts against."""
    if name.startswith(("counts_", "frames", "samples_log")):
        return "aggregation"
    if name.startswith("unwind_"):
        return "unwind"
    return "other"


def kmem_map_entries(map_id):
    """Entries in a hash map now (bpftool dumps it: a few MiB of JSON)."""
    p = sh(["bpftool", "map", "dump", "id", str(map_id), "-j"])
    try:
        return len(json.loads(p.stdout))
    except ValueError:
        return None


def suite_kmem(args, workdir, results):
    """Locked kernel memory of profd's BPF maps: measured (bytes_memlock of
    every map profd holds, bpftool) at defaults on this host while it runs
    under the machine's own load, the peak fill of each stack node class,
    the drops; and the aggregation maps' size per CPU count from the
    collector's sizing (build/tests/bench/kmem-plan), before and after
    stacks were stored by depth."""
    out = {}
    plan_tool = os.path.join(args.build, "tests", "bench", "kmem-plan")
    rows = sh([plan_tool] + [str(c) for c in KMEM_CPUS], check=True).stdout.splitlines()
    out["plan"] = [json.loads(l) for l in rows]
    here = json.loads(sh([plan_tool, str(os.sysconf("SC_NPROCESSORS_CONF"))], check=True).stdout)
    out["plan_here"] = here
    sock = os.path.join(workdir, "profd.sock")
    secs = 3 if args.quick else args.kmem_seconds
    p = profilers(args, workdir, ["profd"])[0]
    p.start(workdir)
    try:
        st0 = profd_status(args, sock)
        all_maps = json.loads(sh(["bpftool", "map", "show", "-j"], check=True).stdout)
        mine = owned_maps(p.pid)
        maps = {m["name"]: {k: m.get(k) for k in ("id", "type", "max_entries", "bytes_memlock")}
                for m in all_maps if m["id"] in mine}
        peak = {n: 0 for n in maps if n.startswith("frames")}
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            for n in peak:
                e = kmem_map_entries(maps[n]["id"])
                if e is not None:
                    peak[n] = max(peak[n], e)
            time.sleep(1)
        st1 = profd_status(args, sock)
    finally:
        p.stop(signal.SIGTERM)
    groups = {}
    for n, m in maps.items():
        groups[kmem_group(n)] = groups.get(kmem_group(n), 0) + (m["bytes_memlock"] or 0)
    out["maps"] = maps
    out["groups"] = groups
    out["total"] = sum(groups.values())
    out["node_peak"] = peak
    out["seconds"] = secs
    out["drains"] = st1.get("drains", 0) - st0.get("drains", 0)
    out["drops"] = {k: st1["drops"].get(k, 0) - st0["drops"].get(k, 0) for k in ("map_full", "stack_map_full")}
    out["stacks"] = st1.get("stacks", 0) - st0.get("stacks", 0)
    out["unwind"] = {k: (st1.get("unwind") or {}).get(k) for k in ("rows_used", "rows_capacity", "files", "files_unused",
                                                                    "tables_evicted")}
    out["unwind"]["budget_full"] = ((st1.get("unwind") or {}).get("failures") or {}).get("budget_full")
    out["cpus"] = os.sysconf("SC_NPROCESSORS_CONF")
    results["kmem"] = out


def render_kmem(r):
    g, here = r["groups"], r["plan_here"]
    lines = [f"profd at defaults (`--config /dev/null`) on this {r['cpus']}-CPU host for {r['seconds']:.0f} s "
             f"({r['drains']} drains) under the machine's own load; `bytes_memlock` of every BPF map it holds "
             "(`bpftool map show -j`):", "",
             "| maps | MiB locked |", "| --- | --- |",
             f"| aggregation: `counts_0/1`, `frames8/16/32_0/1` | {g.get('aggregation', 0) / MIB_F:.2f} |",
             f"| unwind tables: `unwind_rows`, `unwind_maps`, `unwind_procs` | {g.get('unwind', 0) / MIB_F:.2f} |",
             f"| the rest (`seen`, `events`, scratch, counters, ...) | {g.get('other', 0) / MIB_F:.2f} |",
             f"| all of profd's maps | {r['total'] / MIB_F:.2f} |", "",
             f"The collector's sizing (kmem-plan) gives {here['bytes'] / MIB_F:.2f} MiB for the aggregation maps of "
             f"{r['cpus']} CPUs: {here['keys']} keys and {here['stacks']} stack nodes "
             f"({', '.join(str(n) for n in here['nodes'])} of 8, 16, 32 frames) a generation; before stacks were "
             f"stored by depth, {here['before_bytes'] / MIB_F:.2f} MiB ({here['before_keys']} keys, "
             f"{here['before_stacks']} stacks of 1 KiB).", "",
             "| map | entries | MiB | peak entries in use |", "| --- | --- | --- | --- |"]
    for n in sorted(r["maps"]):
        m = r["maps"][n]
        if kmem_group(n) == "aggregation" or (m["bytes_memlock"] or 0) > (1 << 20):
            pk = r["node_peak"].get(n)
            lines.append(f"| `{n}` | {m['max_entries']} | {(m['bytes_memlock'] or 0) / MIB_F:.2f} | "
                         f"{'' if pk is None else pk} |")
    u = r["unwind"]
    lines += ["", f"During the run: {r['stacks']} stacks stored, drops `map_full` {r['drops']['map_full']}, "
              f"`stack_map_full` {r['drops']['stack_map_full']}; unwind rows {u['rows_used']} of "
              f"{u['rows_capacity']} ({u['files']} files, {u['files_unused']} unused), {u['tables_evicted']} "
              f"tables evicted, `budget_full` {u['budget_full']}.", "",
              "Aggregation maps per CPU count (49 Hz, 10 s, every kind, `kernel_memory` 64M), from the "
              "collector's sizing (`build/tests/bench/kmem-plan`, which reproduces the kernel's figures: "
              "tests/unit/test-kstacks.c):", "",
              "| CPUs | keys | stack nodes | MiB | capped by kernel_memory | before: keys, stacks | before: MiB |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for p in r["plan"]:
        lines.append(f"| {p['cpus']} | {p['keys']} | {p['stacks']} | {p['bytes'] / MIB_F:.1f} | "
                     f"{'yes (asked ' + format(p['demand_bytes'] / MIB_F, '.0f') + ')' if p['capped'] else 'no'} | "
                     f"{p['before_keys']}, {p['before_stacks']} | {p['before_bytes'] / MIB_F:.1f} |")
    return section("kmem", "Kernel memory", lines)


# ---------------------------------------------------------------- suite: daemon

def proc_cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def threads_cpu_s(pid):
    """User and system seconds of each of pid's threads by name (threads of
    one name summed): {comm: [user, sys]}; {} once pid is gone."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue  # ended meanwhile
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        u = out.setdefault(comm, [0.0, 0.0])
        u[0] += int(fields[11]) / tick
        u[1] += int(fields[12]) / tick
    return out


def proc_status_kb(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def store_bytes(path):
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def build_tree(workdir):
    """A copy of this tree's HEAD, configured in its own build directory, for
    the build-host workload. Returns the directory."""
    src = os.path.join(workdir, "build-host-src")
    os.mkdir(src)
    archive = subprocess.Popen(["git", "-C", ROOT, "archive", "--format=tar", "HEAD"], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", src], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise RuntimeError("git archive HEAD failed")
    sh(["meson", "setup", "-Dbuildtype=debugoptimized", os.path.join(src, "build"), src], check=True)
    return src


def start_build_loop(src):
    """What a build host does: build this tree from clean and run its unit
    tests, again and again (about 70 new processes a second here, compilers,
    linkers, test programs with DWARF, each rebuild a new file). Its own
    process group, stopped by stop_group."""
    b = os.path.join(src, "build")
    return subprocess.Popen(["sh", "-c", f"while :; do ninja -C {b} clean; ninja -C {b}; "
                             f"meson test -C {b} --suite unit; done"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def stop_group(p):
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    p.wait()


def suite_daemon(args, workdir, results):
    """profd at defaults for --daemon-seconds, idle, under stress-ng on every
    CPU, and on a host running builds and tests: its CPU time (user+system, %
    of one core), RSS (sampled every 5 s, and VmHWM), store growth, and its BPF
    programs' time (which runs in other tasks' context and is not in its CPU
    time)."""
    out = {}
    src = build_tree(workdir) if "build" in args.daemon_modes else None
    for mode in args.daemon_modes:
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
        d = os.path.join(workdir, "daemon-" + mode)
        os.mkdir(d)
        sock, store = os.path.join(d, "profd.sock"), os.path.join(d, "profd.db")
        p = Profiler(f"profd defaults ({mode})",
                     [args.profd, "--config", "/dev/null", "--socket", sock, "--store", store], ready_socket(sock))
        stress = builds = None
        set_bpf_stats(True)
        try:
            p.start(d)
            if mode == "build":
                # the loop runs a while before the span: the span is a host
                # in the middle of its builds, not one starting them
                builds = start_build_loop(src)
            # the first drain creates the schema and first process rows: growth
            # is counted from the end of the first interval
            time.sleep(min(11, args.daemon_seconds / 4))
            if mode == "busy":
                stress = subprocess.Popen(["stress-ng", "--cpu", str(os.cpu_count()), "--cpu-method", "int64",
                                           "--timeout", f"{args.daemon_seconds + 5}s"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1)
            c0, s0, b0, t0 = proc_cpu_s(p.pid), store_bytes(store), bpf_progs(), time.monotonic()
            loads, rss_kb, cache, tracked = [], [], [], []
            while time.monotonic() - t0 < args.daemon_seconds:
                time.sleep(min(5, args.daemon_seconds))
                loads.append(float(loadavg()))
                rss_kb.append(proc_status_kb(p.pid, "VmRSS"))
                if mode != "build":
                    continue  # a status call costs the daemon ~2 ms: not in the idle and busy CPU figures
                js = sh([args.profctl, "--socket", sock, "status", "--json"]).stdout
                try:
                    j = json.loads(js)
                    cache.append(j.get("symbol_cache_bytes", 0))
                    tracked.append(j.get("processes_tracked", 0))
                except ValueError:
                    pass
            c1, s1, b1, t1 = proc_cpu_s(p.pid), store_bytes(store), bpf_progs(), time.monotonic()
            hwm = proc_status_kb(p.pid, "VmHWM")
            rss = proc_status_kb(p.pid, "VmRSS")
            # the daemon's own account: how much of its memory is symbols,
            # how many processes it saw
            status = sh([args.profctl, "--socket", sock, "status"]).stdout
        finally:
            set_bpf_stats(False)
            if stress:
                stress.terminate()
                stress.wait()
            if builds:
                stop_group(builds)
            p.stop(signal.SIGTERM)
        span = t1 - t0
        progs = prog_delta(b0, b1, p.prog_ids)
        out[mode] = {"when": when, "seconds": span, "cpu_pct": 100 * (c1 - c0) / span, "vmhwm_kb": hwm, "vmrss_kb": rss,
                     "store_start": s0, "store_end": s1, "store_per_hour": (s1 - s0) * 3600 / span,
                     "bpf_pct": 100 * sum(x[1] for x in progs.values()) / (span * 1e9),
                     "execs_per_s": progs.get("profd_exec", [0])[0] / span,
                     "status": [l for l in status.splitlines() if l.startswith(("memory:", "stored:", "store:"))],
                     "progs": progs, "load": loads, "rss_samples_kb": rss_kb,
                     "symbol_cache_samples": cache, "tracked_samples": tracked}
        print(f"daemon {mode}: {json.dumps(out[mode])[:400]}", file=sys.stderr)
    results["daemon"] = {"results": out, "seconds": args.daemon_seconds,
                         "command": f"{args.profd} --config /dev/null --socket S --store F"}


def median_max(xs, scale):
    """'median / max' of xs divided by scale, or '-' when there are none."""
    if not xs:
        return "-"
    return f"{statistics.median(xs) / scale:.1f} / {max(xs) / scale:.1f}"


def render_daemon(r):
    lines = [f"`{r['command']}` (defaults: 49 Hz, 10 s interval, cpu+offcpu+wakeup) for "
             f"{r['seconds']:.0f} s after its first interval, on this machine as it was (\"idle\": no "
             "workload of ours, but other work on the host, see the load average), with "
             "`stress-ng --cpu N --cpu-method int64` on every CPU (\"busy\"), and on a host running builds "
             "and tests (\"build\": this tree's HEAD built from clean and its unit tests run, in a loop "
             "started with the daemon). CPU: the daemon's user+system "
             "time from /proc/PID/stat over the span, as % of one core. Peak RSS: VmHWM at the end. "
             "RSS: VmRSS every 5 s over the span. Symbol cache: the daemon's estimate of the heap its "
             "symbols hold (`symbol_cache_bytes`, bounded by `symbol_cache`). "
             "Store growth: size of the store and its WAL at the end minus at the start, scaled to an hour. "
             "BPF % of a core: the daemon's programs, which run in the context of the profiled tasks and so "
             "are not in its CPU time (statistics on during these runs).",
             "",
             "| host | measured (UTC) | span (s) | daemon CPU, % of one core | peak RSS (MiB) "
             "| RSS median / max (MiB) | symbol cache median / max (MiB) | processes tracked median / max "
             "| store growth per hour (MiB) | BPF programs, % of a core | execs/s on the host "
             "| load average (min-max) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for mode in DAEMON_MODES:
        e = r["results"].get(mode)
        if e:
            lines.append(f"| {mode} | {e.get('when', '-')} | {e['seconds']:.0f} | {e['cpu_pct']:.3f}% | "
                         f"{e['vmhwm_kb'] / 1024:.1f} | {median_max(e.get('rss_samples_kb'), 1024)} | "
                         f"{median_max(e.get('symbol_cache_samples'), 2**20)} | "
                         f"{median_max(e.get('tracked_samples'), 1).replace('.0', '')} | "
                         f"{e['store_per_hour'] / 2**20:.1f} | {e['bpf_pct']:.3f}% | {e.get('execs_per_s', 0):.1f} | "
                         f"{min(e['load']):.2f}-{max(e['load']):.2f} |")
    for mode in DAEMON_MODES:
        e = r["results"].get(mode)
        if e and e.get("status"):
            lines += ["", f"`profctl status` at the end ({mode}): " + "; ".join(f"`{l}`" for l in e["status"])]
    return section("daemon", "profd's own cost", lines)


# ---------------------------------------------------------------- suite: accuracy

def held_stdout():
    """A pipe whose buffer is already full: the workload's final printf blocks
    in write() with the process still alive, so that peers which name user
    frames only when they stop (bcc, offcputime read /proc/PID/maps then) can
    still do it. Returns (read_fd, write_fd)."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
    try:
        while True:
            os.write(w, b"\0" * 4096)
    except BlockingIOError:
        pass
    fcntl.fcntl(w, fcntl.F_SETFL, 0)
    fcntl.fcntl(r, fcntl.F_SETFL, os.O_NONBLOCK)
    return r, w


def workload_done(pid):
    """The workload's last thread is blocked writing its result."""
    try:
        if len(os.listdir(f"/proc/{pid}/task")) != 1:
            return False
        wchan = open(f"/proc/{pid}/wchan").read()
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        return state == "S" and ("pipe" in wchan or wchan in ("", "0"))
    except OSError:
        return True


def profd_query(args, sock, pid, kind):
    subprocess.run([args.profctl, "--socket", sock, "flush"], check=True, capture_output=True)
    out = sh([args.profctl, "--socket", sock, "query", "--json", "--pid", str(pid), "--since", "30m",
              "--kind", kind], check=True).stdout
    doc = json.loads(out)
    # [(weight, user frame names root first, all frame names)]
    return [(st["value"], [f["name"] for f in st["frames"] if not f.get("kernel")],
             [f["name"] for f in st["frames"]]) for st in doc["stacks"]]


def perf_stacks(data, pid):
    """perf script's samples of pid: [(1, user names root first, all names)]."""
    out = sh(["perf", "script", "-i", data, "--pid", str(pid), "-F", "pid,ip,sym,dso"]).stdout
    stacks = []
    for block in out.split("\n\n"):
        rows = [l for l in block.splitlines() if l.strip()]
        if not rows:
            continue
        frames = []
        for l in rows[1:]:
            m = re.match(r"\s*[0-9a-f]+\s+(\S+?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)", l)
            if m:
                frames.append((m.group(1), "kernel" in m.group(2)))
        frames.reverse()
        stacks.append((1, [n for n, k in frames if not k], [n for n, k in frames]))
    return stacks


def bcc_folded(text, comm):
    """profile-bpfcc -f lines 'comm;user...;-;kernel... N' (user part root first)."""
    stacks = []
    for line in text.splitlines():
        m = re.match(r"(.*) (\d+)$", line)
        if not m:
            continue
        parts = m.group(1).split(";")
        if parts[0] != comm:
            continue
        frames = parts[1:]
        user = frames[:frames.index("-")] if "-" in frames else [f for f in frames]
        stacks.append((int(m.group(2)), user, [f for f in frames if f != "-"]))
    return stacks


def offcputime_blocks(text, comm):
    """libbpf-tools offcputime output: blocks of frames (innermost first), a
    '-  comm (tid)' line, then microseconds."""
    stacks = []
    for block in text.split("\n\n"):
        rows = [l.strip() for l in block.splitlines() if l.strip()]
        if len(rows) < 2 or not rows[-1].isdigit():
            continue
        m = re.match(r"-\s+(.*) \((\d+)\)$", rows[-2])
        if not m or m.group(1) != comm:
            continue
        frames = [r for r in rows[:-2]]
        frames.reverse()
        # no kernel/user marker: kernel frames come first (innermost); user
        # names are those that are not kernel symbols, approximated as below
        stacks.append((int(rows[-1]) * 1000, frames, frames))
    return stacks


def share_table(stacks, truth_shares, tool_name):
    total = sum(w for w, _, _ in stacks)
    rows = []
    for f, truth in truth_shares.items():
        got = sum(w for w, _, names in stacks if f in names)
        share = got / total if total else 0.0
        se = math.sqrt(truth * (1 - truth) / total) if total else float("inf")
        rows.append({"tool": tool_name, "function": f, "truth": truth, "measured": share, "samples": total,
                     "two_se": 2 * se, "within": abs(share - truth) <= 2 * se})
    main = sum(w for w, user, _ in stacks if "main" in user)
    return rows, (main / total if total else 0.0)


def suite_accuracy(args, workdir, results):
    cpu_split = os.path.join(args.build, "tests", "workloads", "cpu_split")
    offcpu_truth = os.path.join(args.build, "tests", "workloads", "offcpu_truth")
    secs = args.accuracy_seconds
    out = {"cpu": [], "offcpu": [], "main": {}, "seconds": secs}
    sock = os.path.join(workdir, "profd.sock")

    # on-CPU: profd (defaults), perf record, bcc profile
    for key in ["profd", "perf", "bcc"] if not args.quick else ["profd"]:
        for p in profilers(args, workdir, [key]):
            for f in glob.glob(os.path.join(workdir, "profd.db*")):
                os.unlink(f)
            truth, pid = run_truth(args, p, cpu_split, secs, workdir, sock, key, "cpu")
            stacks = truth.pop("_stacks")
            out.setdefault("warnings", {})[p.name + " (cpu_split)"] = truth.pop("_warnings")
            shares = {f: v / truth["total_ns"] for f, v in truth["functions"].items()}
            rows, main = share_table(stacks, shares, p.name)
            out["cpu"] += rows
            out["main"][p.name + " (cpu_split)"] = main
            print(f"accuracy cpu {p.name}: {rows} main {main:.3f}", file=sys.stderr)

    # off-CPU: profd (defaults), offcputime
    for key in ["profd", "offcputime"] if not args.quick else ["profd"]:
        for p in profilers(args, workdir, [key]):
            for f in glob.glob(os.path.join(workdir, "profd.db*")):
                os.unlink(f)
            truth, pid = run_truth(args, p, offcpu_truth, secs, workdir, sock, key, "offcpu")
            stacks = truth.pop("_stacks")
            out.setdefault("warnings", {})[p.name + " (offcpu_truth)"] = truth.pop("_warnings")
            for f, ns in truth["functions"].items():
                got = sum(w for w, _, names in stacks if f in names)
                out["offcpu"].append({"tool": p.name, "function": f, "truth_ns": ns, "measured_ns": got,
                                      "error": (got - ns) / ns if ns else 0.0})
            total = sum(w for w, _, _ in stacks)
            out["main"][p.name + " (offcpu_truth, by blocked time)"] = \
                sum(w for w, user, _ in stacks if "main" in user or any(n.endswith("_main") for n in user)) / total \
                if total else 0.0
            print(f"accuracy offcpu {p.name}: {out['offcpu'][-3:]}", file=sys.stderr)
    results["accuracy"] = out


def run_truth(args, p, binary, secs, workdir, sock, key, kind):
    """Runs the workload under p; collects the stacks the tool saw for it."""
    r, w = held_stdout()
    p.start(workdir)
    stacks = None
    try:
        wl = subprocess.Popen([binary, str(secs)], stdout=w)
        os.close(w)
        time.sleep(secs)
        deadline = time.monotonic() + 30 + secs
        while not workload_done(wl.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if key == "profd":
            stacks = profd_query(args, sock, wl.pid, kind)
    finally:
        p.stop()
    comm = os.path.basename(binary)[:15]
    if key == "perf":
        stacks = perf_stacks(os.path.join(workdir, "perf.data"), wl.pid)
    text = p.log_text() if p.argv else ""
    err = p.err_text() if p.argv else ""
    counts = {}
    for line in (text + err).splitlines():
        if "WARNING" in line or "lost" in line.lower() or "Missed" in line or "failed" in line:
            counts[line.strip()] = counts.get(line.strip(), 0) + 1
    warnings = [f"{line} (x{n})" if n > 1 else line for line, n in counts.items()]
    if args.keep_logs and p.argv:
        shutil.copy(p.log.name, os.path.join(args.keep_logs, f"accuracy-{key}-{kind}.log"))
        shutil.copy(p.err.name, os.path.join(args.keep_logs, f"accuracy-{key}-{kind}.err"))
    if key == "bcc":
        stacks = bcc_folded(p.log_text(), comm)
    elif key == "offcputime":
        stacks = offcputime_blocks(p.log_text(), comm)
    data = b""
    while True:
        try:
            chunk = os.read(r, 65536)
        except BlockingIOError:
            if wl.poll() is not None:
                break
            time.sleep(0.02)
            continue
        if not chunk:
            break
        data += chunk
    os.close(r)
    wl.wait()
    truth = json.loads(data.replace(b"\0", b"").decode().strip().splitlines()[-1])
    if p.argv:
        open(p.log.name, "w").close()
        open(p.err.name, "w").close()
    if not stacks:
        warnings.append(f"no stack of the workload ({comm}, pid {wl.pid}) in the tool's output "
                        f"({len(text)} bytes, ends: {text[-200:]!r})")
    truth["_stacks"] = stacks or []
    truth["_warnings"] = warnings
    return truth, wl.pid


def render_accuracy(r):
    lines = [f"Ground-truth workloads (tests/workloads), {r['seconds']} s each, run while the profiler runs; "
             "each workload measures its own truth (CPU time per function with CLOCK_THREAD_CPUTIME_ID; "
             "blocked time per function with CLOCK_MONOTONIC around the blocking call). The finished workload "
             "is kept alive (its result write blocks on a full pipe) until the profiler has stopped, so that "
             "tools which name user frames only at exit can. Share of a function: samples with it on the stack "
             "over all samples of the workload's process; the tolerance is two binomial standard errors "
             "(2 sqrt(p(1-p)/n)), what a perfect sampler meets 95% of the time.",
             "",
             "On-CPU, `cpu_split` (1:2:3 split), 49 Hz:",
             "",
             "| profiler | function | truth | measured | error | 2 SE | samples | within 2 SE |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for x in r["cpu"]:
        lines.append(f"| {x['tool']} | {x['function']} | {100 * x['truth']:.1f}% | {100 * x['measured']:.1f}% | "
                     f"{100 * (x['measured'] - x['truth']):+.1f} pp | {100 * x['two_se']:.1f} pp | {x['samples']} | "
                     f"{'yes' if x['within'] else 'no'} |")
    lines += ["", "Off-CPU, `offcpu_truth` (blocked time per function):", "",
              "| profiler | function | truth (ms) | measured (ms) | error |", "| --- | --- | --- | --- | --- |"]
    for x in r["offcpu"]:
        lines.append(f"| {x['tool']} | {x['function']} | {x['truth_ns'] / 1e6:.1f} | {x['measured_ns'] / 1e6:.1f} | "
                     f"{100 * x['error']:+.2f}% |")
    lines += ["", "Samples (on-CPU) or blocked time (off-CPU) whose user stack reaches `main` "
              "(or a thread's start function, `*_main`, for offcpu_truth's threads):", "",
              "| profiler (workload) | reaches main |", "| --- | --- |"]
    for k, v in r["main"].items():
        lines.append(f"| {k} | {100 * v:.1f}% |")
    w = {k: v for k, v in r.get("warnings", {}).items() if v}
    if w:
        lines += ["", "What the tools said about data they lost:", ""]
        lines += [f"- {k}: `{'; '.join(v)[:300]}`" for k, v in w.items()]
    return section("accuracy", "Accuracy against ground truth", lines)


# ---------------------------------------------------------------- suite: answers

def suite_answers(args, workdir, results):
    """Query latency (engineer C2's tests/bench/query_bench.py, which rewrites
    its own "Queries" section of the same file) and the symbolization rate
    (ninja's bench-symbolize target)."""
    out = {}
    qb = os.path.join(HERE, "query_bench.py")
    if os.path.exists(qb) and not args.quick:
        j = os.path.join(workdir, "queries.json")
        cmd = [sys.executable, qb, "--build", args.build, "--output", args.output, "--json", j]
        p = sh(cmd, timeout=3600)
        out["query_bench"] = {"rc": p.returncode, "command": " ".join(["tests/bench/query_bench.py"] + cmd[2:-2]),
                              "stderr": p.stderr[-1500:],
                              "figures": json.load(open(j)) if os.path.exists(j) else None}
    else:
        out["query_bench"] = None
    if not args.quick:
        p = sh(["ninja", "-C", args.build, "bench-symbolize"], timeout=1800)
        out["symbolize"] = {"rc": p.returncode, "stdout": p.stdout[-8000:],
                            "command": f"ninja -C {args.build} bench-symbolize"}
    results["answers"] = out


def render_answers(r):
    lines = []
    q = r.get("query_bench")
    if q is None:
        lines += ["Query latency: tests/bench/query_bench.py was not found when this ran.", ""]
    else:
        lines += [f"Query latency: `{q['command']}` (exit {q['rc']}) rewrote the \"Queries\" section below "
                  "with its figures.", ""]
        if q["rc"]:
            lines += ["```", q["stderr"].strip(), "```", ""]
    s = r.get("symbolize")
    if s:
        lines += [f"Symbolization rate: `{s['command']}` (exit {s['rc']}), its output:", "", "```",
                  "\n".join(l for l in s["stdout"].splitlines() if not l.startswith("[")).strip()[-4000:], "```"]
    return section("answers", "Answers: query latency and symbolization rate (this run)", lines)


# ---------------------------------------------------------------- suite: unwind

# profd's unwind tables in the kernel (bpf/maps.bpf.h); bpftool shows map
# names cut to 15 characters, these are shorter
UNWIND_MAPS = ("unwind_rows", "unwind_maps", "unwind_procs")
# Debian binaries that block reading stdin when started: each a distinct
# file (and libraries) for the growth of the tables
BLOCKING_BINARIES = [["/usr/bin/cat"], ["/usr/bin/sort"], ["/usr/bin/xz", "-c"], ["/usr/bin/gzip", "-c"],
                     ["/usr/bin/bzip2", "-c"], ["/usr/bin/zstd", "-c"], ["/usr/bin/sha256sum"],
                     ["/usr/bin/perl", "-e", "<STDIN>"], ["/usr/bin/python3", "-c", "import sys; sys.stdin.read()"],
                     ["/usr/bin/sqlite3"], ["/usr/bin/node", "-e", "process.stdin.resume()"],
                     ["/usr/bin/gdb", "-q", "-nx"]]


def owned_maps(pid):
    """Ids of the BPF maps process pid holds open."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            for line in open(f"/proc/{pid}/fdinfo/{fd}"):
                if line.startswith("map_id:"):
                    ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def profd_status(args, sock):
    return json.loads(sh([args.profctl, "--socket", sock, "status", "--json"], check=True).stdout)


def unwind_settled(args, sock, timeout=30, quiet=2.0):
    """profd's status once its unwinder built no table for `quiet` seconds
    (the tables of every process it was asked about are built), or after
    `timeout` (a busy host starts processes all the time)."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        st = profd_status(args, sock)
        u = (st.get("unwind") or {}).get("tables_built")
        if u != last:
            last, since = u, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return st
        time.sleep(0.25)
    return st


def unwind_kernel_maps(pid):
    maps = json.loads(sh(["bpftool", "map", "show", "-j"], check=True).stdout)
    mine = owned_maps(pid)
    return {m["name"]: {k: m.get(k) for k in ("bytes_memlock", "max_entries", "bytes_value", "type")}
            for m in maps if m["id"] in mine and m.get("name") in UNWIND_MAPS}


def rusage_run(argv, **kw):
    """Runs argv to its end; (returncode, user+system CPU seconds of it and
    its children that it waited for)."""
    p = subprocess.Popen(argv, **kw)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_utime + ru.ru_stime


def suite_unwind(args, workdir, results):
    """profd's unwinder: kernel memory of its tables for every process on the
    host and how it grows with distinct binaries; the same workload under
    perf record --call-graph dwarf (bytes per sample, CPU to record and to
    unwind) and under profd (complete stacks)."""
    out = {}
    sock = os.path.join(workdir, "profd.sock")
    wl = os.path.join(args.build, "tests", "workloads", "unwind_cpu_nofp")
    secs = 2 if args.quick else args.accuracy_seconds

    p = profilers(args, workdir, ["profd"])[0]
    p.start(workdir)
    held = []
    try:
        st = unwind_settled(args, sock)
        out["host"] = {"unwind": st.get("unwind"), "maps": unwind_kernel_maps(p.pid),
                       "processes": sum(1 for d in os.listdir("/proc") if d.isdigit())}
        print(f"unwind host: {json.dumps(out['host'])[:400]}", file=sys.stderr)
        growth = []
        for argv in BLOCKING_BINARIES[:3] if args.quick else BLOCKING_BINARIES:
            if not os.path.exists(argv[0]):
                continue
            held.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
            st = unwind_settled(args, sock, quiet=1.0)
            growth.append({"binary": os.path.basename(argv[0]), "unwind": st.get("unwind")})
            print(f"unwind growth +{growth[-1]['binary']}: {json.dumps(growth[-1]['unwind'])[:300]}", file=sys.stderr)
        out["growth"] = growth
        out["maps_after"] = unwind_kernel_maps(p.pid)

        # profd on the ground-truth workload (no frame pointers): complete stacks
        r, w = os.pipe()
        wp = subprocess.Popen([wl, str(secs)], stdin=r, stdout=subprocess.PIPE, text=True)
        os.close(r)
        truth = json.loads(wp.stdout.readline())
        stacks = profd_query(args, sock, truth["pid"], "cpu")
        os.close(w)
        wp.wait()
        n = sum(x[0] for x in stacks)
        chains = {("main", "run", "phase_" + c, "leaf_" + c) for c in "abc"}
        exact = sum(x[0] for x in stacks if "main" in x[1] and tuple(x[1][x[1].index("main"):]) in chains)
        out["profd"] = {"samples": n, "exact": exact, "seconds": secs}
    finally:
        for h in held:
            h.stdin.close()
            h.kill()
            h.wait()
        p.stop()

    # perf record --call-graph dwarf, attached to the same workload at
    # profd's default frequency: what it stores and what it costs
    data = os.path.join(workdir, "perf-dwarf.data")
    r, w = os.pipe()
    wp = subprocess.Popen([wl, str(secs)], stdin=r, stdout=subprocess.PIPE, text=True)
    os.close(r)
    rc, rec_cpu = rusage_run(["perf", "record", "-q", "-F", "49", "--call-graph", "dwarf", "-o", data,
                              "-p", str(wp.pid), "--", "sleep", str(secs)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wp.stdout.readline()
    os.close(w)
    wp.wait()
    size = os.path.getsize(data)
    script = os.path.join(workdir, "perf-dwarf.txt")
    with open(script, "w") as f:
        _, unwind_cpu = rusage_run(["perf", "script", "-i", data, "-F", "ip,sym"], stdout=f,
                                   stderr=subprocess.DEVNULL)
    blocks = [b for b in open(script).read().split("\n\n") if b.strip()]
    reach = sum(1 for b in blocks if re.search(r"\smain\b", b))
    out["perf_dwarf"] = {"bytes": size, "samples": len(blocks), "record_cpu_s": rec_cpu,
                         "script_cpu_s": unwind_cpu, "reach_main": reach, "seconds": secs,
                         "command": f"perf record -F 49 --call-graph dwarf -p PID; perf script -F ip,sym"}
    print(f"unwind perf dwarf: {out['perf_dwarf']}", file=sys.stderr)
    results["unwind"] = out


def render_unwind(r):
    h = r.get("host", {})
    lines = ["Kernel memory of profd's unwind tables (`bpftool map show -j`, bytes_memlock of its "
             "maps) and its `profctl status --json` \"unwind\" object, at defaults, after the tables of "
             f"every process on the host ({h.get('processes', '?')} in /proc) were built:", "",
             "| map | type | entries | value bytes | kernel bytes |", "| --- | --- | --- | --- | --- |"]
    for n, m in sorted(h.get("maps", {}).items()):
        lines.append(f"| {n} | {m.get('type')} | {m.get('max_entries')} | {m.get('bytes_value')} | "
                     f"{m.get('bytes_memlock')} |")
    lines += ["", f"`unwind` status: `{json.dumps(h.get('unwind'), sort_keys=True)}`", "",
              "Growth: one more Debian binary started (blocked reading its stdin) at a time; the "
              "host's other processes come and go meanwhile (processes, files):", "",
              "| + binary | processes | files with a table | rows used | kernel bytes of rows and mappings | "
              "tables built, total build ms |", "| --- | --- | --- | --- | --- | --- |"]
    for g in r.get("growth", []):
        u = g["unwind"] or {}
        lines.append(f"| {g['binary']} | {u.get('processes')} | {u.get('files')} | {u.get('rows_used')} | "
                     f"{u.get('kernel_bytes')} | {u.get('tables_built')}, {u.get('build_ms')} |")
    pr, pf = r.get("profd", {}), r.get("perf_dwarf", {})
    if pr:
        lines += ["", f"`unwind_cpu_nofp` (-O2 -fomit-frame-pointer, main;run;phase;leaf), {pr['seconds']} s:", "",
                  "| tool | samples | stacks reaching main | bytes per sample stored | CPU |",
                  "| --- | --- | --- | --- | --- |",
                  f"| profd defaults | {pr['samples']} | {100.0 * pr['exact'] / max(pr['samples'], 1):.1f}% "
                  "(exact chain) | stacks in kernel maps, deduplicated | BPF time: see the bpf suite |"]
    if pf:
        n = max(pf["samples"], 1)
        lines.append(f"| perf record -F 49 --call-graph dwarf | {pf['samples']} | "
                     f"{100.0 * pf['reach_main'] / n:.1f}% | {pf['bytes'] / n:.0f} ({pf['bytes']} in all) | "
                     f"record {pf['record_cpu_s']:.2f} s, unwinding (perf script) {pf['script_cpu_s']:.2f} s "
                     f"= {1000 * pf['script_cpu_s'] / n:.2f} ms per sample |")
    return section("unwind", "Unwinder: table memory, and perf --call-graph dwarf on the same workload", lines)


# ---------------------------------------------------------------- summary

def render_summary(all_results, meta):
    L = []
    b = all_results.get("bpf", {}).get("results", {})
    c = all_results.get("cost", {}).get("results", {})

    def find(d, prefix):
        for k in d:
            if k.startswith(prefix):
                return k
        return None

    def bpf_fig(name, w, f):
        e = b.get(name, {}).get(w) if name else None
        return f(e["progs"]) if e else None

    rows = []
    pc, bc = find(b, "profd on-CPU only"), find(b, "bcc") or find(b, "bpftrace")
    x, y = bpf_fig(pc, "stress", per_sample), bpf_fig(bc, "stress", per_sample)
    if x and y:
        z = bpf_fig(find(b, "profd defaults"), "stress", per_sample)
        rows.append(("on-CPU BPF time per sample <= 1/2 of bcc profile's (49 Hz) (issue 8)",
                     f"profd on-CPU only {x:.0f} ns{f' (at defaults {z:.0f} ns)' if z else ''} vs {bc} {y:.0f} ns: "
                     f"{x / y:.2f}x", "met" if x <= y / 2 else f"missed: {x / y:.2f}x instead of 0.5x"))
    pd, oc = find(b, "profd defaults"), find(b, "libbpf-tools offcputime")
    x, y = bpf_fig(pd, "pipe", per_switch), bpf_fig(oc, "pipe", per_switch)
    if x and y:
        rows.append(("off-CPU BPF time per context switch <= 1/2 of offcputime's (issue 8)",
                     f"profd defaults {x:.0f} ns vs offcputime {y:.0f} ns: {x / y:.2f}x",
                     "met" if x <= y / 2 else "missed"))
    # issue 12: the same costs with the DWARF unwinder walking every user stack
    x, y = bpf_fig(find(b, "profd defaults"), "stress", per_sample), bpf_fig(bc, "stress", per_sample)
    side = [r["profd"] / r["bcc"] for r in (all_results.get("bpf", {}).get("side_by_side") or {}).get("rounds", [])
            if r.get("profd") and r.get("bcc")]
    if x and y:
        text, ratio = f"profd defaults {x:.0f} ns vs {bc} {y:.0f} ns in runs of their own: {x / y:.2f}x", x / y
        if side:
            # the two in the same minutes: the figure that compares them
            ratio = statistics.median(side)
            text += (f"; side by side, {len(side)} rounds: median {ratio:.2f}x ({min(side):.2f}-{max(side):.2f}, "
                     f"profd cheaper in {sum(1 for v in side if v <= 1)})")
        rows.append(("on-CPU BPF time per sample, complete stacks (stress-ng, no frame pointers) <= bcc profile's "
                     "(issue 12)", text, "met" if ratio <= 1 else f"missed: {ratio:.2f}x"))
    x = bpf_fig(pd, "pipe", per_switch)
    if x:
        rows.append(("off-CPU BPF time per context switch <= 1.9 us (issue 12)", f"profd defaults {x:.0f} ns",
                     "met" if x <= 1900 else "missed"))
    if c.get("no profiler") and find(c, "profd defaults"):
        pdx = c[find(c, "profd defaults")]
        if pdx.get("pipe_ratio"):
            r = statistics.median(pdx["pipe_ratio"])
            oct = find(c, "libbpf-tools")
            extra = f" (offcputime {statistics.median(c[oct]['pipe_ratio']):.2f}x)" if oct else ""
            for limit, issue in ((1.25, 8), (1.35, 12)):
                rows.append((f"`perf bench sched pipe` <= {limit}x slower at defaults (issue {issue})",
                             f"{r:.2f}x, median of paired ratios (range {min(pdx['pipe_ratio']):.2f}-"
                             f"{max(pdx['pipe_ratio']):.2f}){extra}",
                             "met" if r <= limit else f"missed by {r - limit:.2f}x"))
        if pdx.get("stress_ratio"):
            s = statistics.median(pdx["stress_ratio"])
            lo, hi = min(pdx["stress_ratio"]), max(pdx["stress_ratio"])
            rows.append(("CPU-bound throughput indistinguishable from no profiler (issue 8)",
                         f"{s:.3f}x of no profiler, paired (range {lo:.3f}-{hi:.3f})",
                         "met" if lo <= 1 <= hi or abs(s - 1) < 0.01 else "missed"))
    d = all_results.get("daemon", {}).get("results", {}).get("busy")
    if d:
        rows.append(("daemon < 0.5% of one core at defaults, busy host (issue 8)", f"{d['cpu_pct']:.3f}% over {d['seconds']:.0f} s",
                     "met" if d["cpu_pct"] < 0.5 else "missed"))
        rows.append(("daemon < 30 MB RSS at defaults, busy host (issue 8)", f"peak {d['vmhwm_kb'] / 1024:.1f} MiB",
                     "met" if d["vmhwm_kb"] < 30 * 1e6 / 1024 else "missed"))
    b = all_results.get("daemon", {}).get("results", {}).get("build")
    if b and b.get("rss_samples_kb"):
        med = statistics.median(b["rss_samples_kb"]) / 1024
        rows.append(("daemon RSS <= 30 MiB at defaults on a host running builds and tests (issue 14)",
                     f"median {med:.1f} MiB, max {max(b['rss_samples_kb']) / 1024:.1f}, peak (VmHWM) "
                     f"{b['vmhwm_kb'] / 1024:.1f}, over {b['seconds']:.0f} s",
                     "met" if max(b["rss_samples_kb"]) <= 30 * 1024 else
                     f"met at the median; the max over by {max(b['rss_samples_kb']) / 1024 - 30:.1f} MiB"
                     if med <= 30 else
                     f"missed: median {med - 30:+.1f} MiB, max {max(b['rss_samples_kb']) / 1024 - 30:+.1f} MiB"))
    a = all_results.get("accuracy")
    if a:
        pr = [x for x in a["cpu"] if x["tool"].startswith("profd")]
        if pr:
            rows.append(("every hot function's share within 2 binomial SE (issue 8)",
                         "; ".join(f"{x['function']} {100 * (x['measured'] - x['truth']):+.1f} pp (2 SE {100 * x['two_se']:.1f})"
                                   for x in pr), "met" if all(x["within"] for x in pr) else "missed"))
        po = [x for x in a["offcpu"] if x["tool"].startswith("profd")]
        if po:
            rows.append(("blocked time per function within 2% (issue 8)",
                         "; ".join(f"{x['function']} {100 * x['error']:+.2f}%" for x in po),
                         "met" if all(abs(x["error"]) <= 0.02 for x in po) else "missed"))
    L += ["Generated by the harness from the latest run of each suite (dates below).", "",
          "| target | measured | status |", "| --- | --- | --- |"]
    L += [f"| {t} | {m} | {s} |" for t, m, s in rows]
    L += ["", "| suite | last run (UTC) | /proc/loadavg at start | steal during it | command |",
          "| --- | --- | --- | --- | --- |"]
    for s in SUITES:
        m = meta.get(s)
        if m:
            L.append(f"| {s} | {m['when']} | {m['load']} | {m.get('steal_pct', '?')}% | `{m['command']}` |")
    return section("summary", "Targets and where they stand", L)


RENDER = {"cost": render_cost, "bpf": render_bpf, "daemon": render_daemon, "accuracy": render_accuracy,
          "unwind": render_unwind, "answers": render_answers, "kmem": render_kmem}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="run every suite")
    ap.add_argument("--suite", default="", help="comma-separated: " + ",".join(SUITES))
    ap.add_argument("--quick", action="store_true", help="a tiny configuration: checks the harness runs")
    ap.add_argument("--runs", type=int, default=7, help="interleaved rounds in the cost suite (default 7)")
    ap.add_argument("--bpf-runs", type=int, default=3, help="rounds in the bpf suite (default 3)")
    ap.add_argument("--side-runs", type=int, default=8,
                    help="bpf suite: rounds of profd and bcc profile side by side (default 8; 0: none)")
    ap.add_argument("--loops", type=int, default=200000, help="perf bench sched pipe loops (default 200000)")
    ap.add_argument("--stress-seconds", type=int, default=5, help="stress-ng run length (default 5)")
    ap.add_argument("--daemon-seconds", type=float, default=600, help="profd's own cost runs (default 600)")
    ap.add_argument("--daemon-modes", default="idle,busy",
                    help="daemon suite: idle, busy (default: both) and build (a build-and-test loop of this "
                    "tree's HEAD); a mode not run keeps its last result")
    ap.add_argument("--accuracy-seconds", type=float, default=20, help="ground-truth workload length (default 20)")
    ap.add_argument("--kmem-seconds", type=float, default=60, help="kmem suite: how long profd runs (default 60)")
    ap.add_argument("--configs", default="", help="cost/bpf suites: only these configurations, comma-separated "
                    "(none profd-cpu profd-hooks profd-offcpu profd perf offcputime bcc)")
    ap.add_argument("--workloads", default="stress,pipe", help="cost/bpf suites: stress, pipe or both (default)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="meson build directory (default build/)")
    ap.add_argument("--profd", help="default: BUILD/daemon/profd")
    ap.add_argument("--profctl", help="default: BUILD/client/profctl")
    ap.add_argument("--output", default=os.path.join(ROOT, "docs", "performance.md"))
    ap.add_argument("--keep-logs", help="copy the profilers' output (accuracy suite) into this directory")
    args = ap.parse_args()
    args.profd = args.profd or os.path.join(args.build, "daemon", "profd")
    args.profctl = args.profctl or os.path.join(os.path.dirname(os.path.dirname(args.profd)), "client", "profctl")
    if args.build == os.path.join(ROOT, "build") and not os.path.exists(args.build) and args.profd:
        args.build = os.path.dirname(os.path.dirname(args.profd))
    args.daemon_modes = [m for m in args.daemon_modes.split(",") if m]
    if not args.daemon_modes or any(m not in DAEMON_MODES for m in args.daemon_modes):
        ap.error("--daemon-modes takes a comma-separated list of " + ", ".join(DAEMON_MODES))
    suites = list(SUITES) if args.all else [s for s in args.suite.split(",") if s]
    if args.quick:
        args.runs, args.bpf_runs, args.loops, args.stress_seconds = 1, 1, 2000, 1
        args.daemon_seconds, args.accuracy_seconds = 3, 1
        suites = suites or ["cost", "bpf"]
    if not suites:
        ap.error("give --all, --suite or --quick")
    for s in suites:
        if s not in SUITES:
            ap.error(f"unknown suite {s}")
    if os.geteuid() != 0:
        sys.exit("bench.py: needs root (loads BPF programs)")
    for t in ("perf", "bpftool", "taskset", "stress-ng"):
        if not tool(t):
            sys.exit(f"bench.py: {t} not found")

    json_path = os.path.splitext(args.output)[0] + ".json"
    saved = json.load(open(json_path)) if os.path.exists(json_path) else {}
    saved.setdefault("results", {})
    saved.setdefault("meta", {})
    old_stats = open(STATS).read().strip()
    workdir = tempfile.mkdtemp(prefix="profd-bench-")
    command = " ".join(["tests/bench/bench.py"] + sys.argv[1:])
    try:
        for s in suites:
            results = {}
            start = {"when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                     "load": open("/proc/loadavg").read().strip(), "command": command}
            st0 = cpu_times()
            globals()["suite_" + s](args, workdir, results)
            st1 = cpu_times()
            start["steal_pct"] = round(100 * (st1[0] - st0[0]) / max(1, st1[1] - st0[1]), 1)
            if s == "daemon" and "daemon" in saved["results"]:
                # the modes not run this time keep their last figures (each
                # carries when it was measured)
                old = saved["results"]["daemon"].get("results", {})
                results[s]["results"] = {**{m: e for m, e in old.items() if m not in args.daemon_modes},
                                         **results[s]["results"]}
            saved["results"][s] = results[s]
            saved["meta"][s] = start
            saved["machine"] = machine_facts()
            with open(json_path, "w") as f:
                json.dump(saved, f, indent=1, sort_keys=True)
            text = RENDER[s](results[s])
            text = text.replace("\n\n", f"\n\nRun {start['when']} UTC, load average at start "
                                f"`{start['load']}`, CPU time stolen by the host during the suite "
                                f"{start['steal_pct']}%, command `{command}`.\n\n", 1)
            write_section(args.output, s, text)
        write_section(args.output, "machine",
                      section("machine", "Machine", [f"{facts_text(saved['machine'])}."]))
        write_section(args.output, "summary", render_summary(saved["results"], saved["meta"]))
    finally:
        with open(STATS, "w") as f:
            f.write(old_stats)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"wrote {args.output} and {json_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
