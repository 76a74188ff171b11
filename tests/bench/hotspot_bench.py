#!/usr/bin/env python3
"""Issue 42's benchmark: what walking and naming HotSpot frames costs. Not a
timed test.

  tests/bench/hotspot_bench.py                           as root, after a build: rewrites the
                                                         "hotspot" section of docs/performance.md
  tests/bench/hotspot_bench.py --baseline-build OLD      side by side with the build before the
                                                         change (OLD/daemon/profd), interleaved
  tests/bench/hotspot_bench.py --quick --output F        a tiny configuration (the bench suite runs it)

The Java workloads are tests/data/hotspot/hs (Deep, Service, Churn),
compiled with javac into a temporary directory and run by Debian's JDK 17
(--java-home) with the JVM's default flags. Three measurements, each for
the profd of --build and, when given, of --baseline-build (same workloads,
alternating):

1. BPF time per on-CPU sample: profd --kinds cpu while one CPU-bound process
   per CPU runs either hs.Deep (--depth Java calls deep, compiled by C2 by
   the time the span starts) or the native tests/workloads unwind_deep (-O2,
   no frame pointers) at a depth that gives the same number of user frames
   per stack as profd answers the JVM's (calibrated first with --build,
   as python_bench.py does: one run of each). The figure is the kernel's
   own statistics (kernel.bpf_stats_enabled=1, put back as it was),
   run_time_ns over run_cnt of profd's perf_event programs between two
   snapshots --warmup seconds after the workload started. Reported with
   each workload's mean user frames per sample, the share of its samples
   with a Java frame (build_id "hotspot..." or module "[hotspot...]": 0
   before the walker) and the share whose Java frames are all named. The
   issue's target: a JVM sample at most 2x a native one of the same depth.
2. profd's own CPU (utime+stime, % of one core) and RSS (VmRSS every 5 s,
   VmHWM) at defaults (every kind): --daemon-seconds with no workload of
   ours, then as long with three JVMs of hs.Service (two request threads
   each, on- and off-CPU, many methods), and every status counter whose
   name says hotspot or java.
3. Code cache churn: profd at defaults while one JVM of hs.Churn defines a
   class again and again in loaders of its own, has it compiled and
   unloads it (the JVM's own counts of classes loaded and unloaded are
   reported): profd's CPU and RSS over --churn-seconds, VmHWM, and the
   churning JVM's samples with Java frames and with all of them named.

Needs root (profd loads BPF), bpftool, the JDK and the build's unwind_deep.
Reuses bench.py's helpers. Processes are stopped by their pid, never by
name."""
import argparse
import datetime
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402

ROOT = bench.ROOT
SECTION = "hotspot"
SOURCES = os.path.join(ROOT, "tests", "data", "hotspot", "hs")
# How the writer stores a Java frame (daemon/unwind/runtime-names.h): named,
# build_id "hotspot-" and 16 hex digits; unnamed, module "[hotspot...]".
JAVA_BUILD_ID_PREFIX = "hotspot"
JAVA_MODULE_PREFIX = "[hotspot"
SERVICE_JVMS = 3  # the "three JVMs running"


def log(msg):
    print(f"hotspot_bench: {msg}", file=sys.stderr, flush=True)


class Build:
    """One profd build under test."""

    def __init__(self, label, build):
        self.label = label
        self.profd = os.path.join(build, "daemon", "profd")
        self.profctl = os.path.join(build, "client", "profctl")
        for p in (self.profd, self.profctl):
            if not os.access(p, os.X_OK):
                sys.exit(f"hotspot_bench: {p} not found: build {build} first")


def start_profd(b, workdir, name, extra):
    d = tempfile.mkdtemp(prefix=name + "-", dir=workdir)
    sock, store = os.path.join(d, "profd.sock"), os.path.join(d, "profd.db")
    p = bench.Profiler(f"{b.label} {name}", [b.profd, "--config", "/dev/null", "--socket", sock, "--store", store]
                       + extra, bench.ready_socket(sock))
    p.start(d)
    return p, sock, store


def start_workers(argvs, stdout=subprocess.DEVNULL):
    """Each in a session of its own, so stopping one by its pid stops only it."""
    return [subprocess.Popen(a, stdout=stdout, stderr=subprocess.DEVNULL, start_new_session=True) for a in argvs]


def stop_workers(procs):
    for q in procs:
        if q.poll() is None:
            q.send_signal(signal.SIGTERM)
    for q in procs:
        try:
            q.wait(30)
        except subprocess.TimeoutExpired:
            q.kill()
            q.wait()


def profctl_json(b, sock, *argv):
    return json.loads(bench.sh([b.profctl, "--socket", sock] + list(argv), check=True).stdout)


def rfc3339(t):
    d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{d.microsecond:06d}Z"


def flush(b, sock):
    """Ends profd's current drain now; returns the wall-clock time after it."""
    bench.sh([b.profctl, "--socket", sock, "flush"], check=True)
    return time.time()


def workload_stacks(b, sock, pids, span=None):
    """[(value, user frames)] of profd's on-CPU stacks of these processes:
    of their whole life, or of the drains within span (a pair of times
    just after the flushes that began and ended it)."""
    window = (["--from", rfc3339(span[0] + 0.5), "--to", rfc3339(span[1] - 0.5)] if span else ["--since", "30m"])
    flush(b, sock)
    out = []
    for pid in pids:
        doc = profctl_json(b, sock, "query", "--json", "--pid", str(pid), "--kind", "cpu", *window)
        out += [(st["value"], [f for f in st["frames"] if not f.get("kernel")]) for st in doc["stacks"]]
    return out


def is_java(f):
    return (f.get("build_id") or "").startswith(JAVA_BUILD_ID_PREFIX) or \
        (f.get("module") or "").startswith(JAVA_MODULE_PREFIX)


def stack_figures(stacks):
    """Samples, mean user frames per sample, and the shares of samples with
    a Java frame, and with every Java frame named."""
    n = sum(v for v, _ in stacks)
    if not n:
        return {"samples": 0, "user_depth": None, "java_share": None, "named_share": None}
    java = [(v, [f for f in fr if is_java(f)]) for v, fr in stacks]
    return {"samples": n, "user_depth": sum(v * len(fr) for v, fr in stacks) / n,
            "java_share": sum(v for v, j in java if j) / n,
            "named_share": sum(v for v, j in java if j and all(f.get("resolved", True) for f in j)) / n}


def java_argv(args, cls, *rest):
    return [args.java, "-cp", args.classes, cls] + [str(r) for r in rest]


def deep_argv(args, kind, seconds, depth):
    if kind == "java":
        return java_argv(args, "hs.Deep", f"{seconds:g}", depth)
    return [args.unwind_deep, f"{seconds:g}", str(depth)]


def status_hotspot(st, path=""):
    """Every status counter under a key that says hotspot or java, flattened."""
    out = {}
    if isinstance(st, dict):
        for k, v in st.items():
            p = f"{path}.{k}" if path else k
            if "hotspot" in k.lower() or "java" in k.lower():
                out.update({p: v} if not isinstance(v, dict) else {f"{p}.{a}": x for a, x in flat(v).items()})
            else:
                out.update(status_hotspot(v, p))
    return out


def flat(d, path=""):
    out = {}
    for k, v in d.items():
        p = f"{path}.{k}" if path else k
        out.update(flat(v, p) if isinstance(v, dict) else {p: v})
    return out


# ---------------------------------------------------------------- 1. BPF per sample

def sampling_run(args, workdir, b, kind, depth):
    """One run: profd --kinds cpu, the workload on every CPU; BPF ns per
    sample over the steady span, and what profd stored of the workload."""
    p, sock, _ = start_profd(b, workdir, f"sample-{kind}", ["--kinds", "cpu"])
    procs = []
    try:
        for attempt in range(4):
            bench.set_bpf_stats(True)
            procs = start_workers([deep_argv(args, kind, args.warmup + args.seconds + 5, depth)
                                   for _ in range(os.cpu_count())])
            time.sleep(args.warmup)
            b0, t0 = bench.bpf_progs(), time.monotonic()
            w0 = flush(b, sock)
            time.sleep(args.seconds)
            b1, t1 = bench.bpf_progs(), time.monotonic()
            w1 = flush(b, sock)
            alive = all(q.poll() is None for q in procs)
            pids = [q.pid for q in procs]
            stop_workers(procs)
            # the switch is the whole machine's: another user may turn it off
            if open(bench.STATS).read().strip() == "1":
                break
            log(f"{p.name}: kernel.bpf_stats_enabled was turned off during the run: again")
        if not alive:
            raise RuntimeError(f"{kind} workload ended before the span did: see {' '.join(deep_argv(args, kind, 1, depth))}")
        figures = stack_figures(workload_stacks(b, sock, pids, (w0, w1)))
    finally:
        stop_workers(procs)
        p.stop()
    span = bench.prog_delta(b0, b1, p.prog_ids)
    runs = sum(x[0] for x in span.values() if x[2] == "perf_event")
    r = {"ns_per_sample": bench.per_sample(span), "progs": span, "wall_s": t1 - t0, "depth_arg": depth,
         "load": float(bench.loadavg()), "workload_share": figures["samples"] / runs if runs else None, **figures}
    log(f"{p.name} depth {depth}: {json.dumps({k: v for k, v in r.items() if k != 'progs'})}")
    return r


def calibrate(args, workdir, b):
    """unwind_deep's depth that gives as many user frames per stack as the
    JVM's, both as profd answers them: one run of each (the native one at a
    first guess) tells the Java stacks' depth and how many frames
    unwind_deep has besides its recursion (deep_recurse x (DEPTH + 1))."""
    guess = args.depth
    jv = sampling_run(args, workdir, b, "java", args.depth)
    nat = sampling_run(args, workdir, b, "native", guess)
    if not jv["user_depth"] or not nat["user_depth"]:
        raise RuntimeError("calibration: profd stored no sample of a workload")
    fixed = nat["user_depth"] - (guess + 1)
    depth = max(1, round(jv["user_depth"] - fixed - 1))
    log(f"native depth {depth}: Java stacks have {jv['user_depth']:.1f} user frames, unwind_deep "
        f"{fixed:.1f} besides its recursion")
    return depth, {"java": jv, "native": nat, "fixed_frames": fixed}


def suite_sampling(args, workdir, builds):
    out = {b.label: {"java": [], "native": []} for b in builds}
    native_depth, calibration = args.native_depth, None
    if native_depth is None:
        native_depth, calibration = calibrate(args, workdir, builds[0])
    for r in range(args.rounds):
        for b in builds:
            out[b.label]["java"].append(sampling_run(args, workdir, b, "java", args.depth))
            out[b.label]["native"].append(sampling_run(args, workdir, b, "native", native_depth))
        log(f"sampling round {r + 1}/{args.rounds} done")
    return {"results": out, "native_depth": native_depth, "java_depth": args.depth, "calibration": calibration}


# ---------------------------------------------------------------- 2. daemon, 3. churn

def daemon_span(p, seconds):
    c0, t0, rss = bench.proc_cpu_s(p.pid), time.monotonic(), []
    while time.monotonic() - t0 < seconds:
        time.sleep(min(5, seconds))
        rss.append(bench.proc_status_kb(p.pid, "VmRSS"))
    c1, t1 = bench.proc_cpu_s(p.pid), time.monotonic()
    return {"cpu_pct": 100 * (c1 - c0) / (t1 - t0), "rss_kb": rss, "seconds": t1 - t0,
            "load": float(bench.loadavg())}


def suite_daemon(args, workdir, builds):
    out = {}
    for b in builds:
        p, sock, _ = start_profd(b, workdir, "daemon", args.interval_args)
        procs = []
        try:
            time.sleep(args.first_drain_s)  # past the first drain
            idle = daemon_span(p, args.daemon_seconds)
            procs = start_workers([java_argv(args, "hs.Service", args.daemon_seconds + args.warmup + 30)
                                   for _ in range(SERVICE_JVMS)])
            time.sleep(args.warmup)
            busy = daemon_span(p, args.daemon_seconds)
            alive = sum(q.poll() is None for q in procs)
            pids = [q.pid for q in procs]
            st = profctl_json(b, sock, "status", "--json")
            stop_workers(procs)
            figures = stack_figures(workload_stacks(b, sock, pids))
            hwm = bench.proc_status_kb(p.pid, "VmHWM")
        finally:
            stop_workers(procs)
            p.stop(signal.SIGTERM)
        out[b.label] = {"idle": idle, "jvms": busy, "vmhwm_kb": hwm, "alive": alive,
                        "status_hotspot": status_hotspot(st), "workload": figures}
        log(f"daemon {b.label}: {json.dumps(out[b.label])[:400]}")
    return {"results": out, "jvms": SERVICE_JVMS, "seconds": args.daemon_seconds}


def suite_churn(args, workdir, builds):
    out = {}
    for b in builds:
        p, sock, _ = start_profd(b, workdir, "churn", args.interval_args)
        procs = []
        try:
            time.sleep(args.first_drain_s)
            out_path = os.path.join(workdir, f"churn-{len(out)}.json")
            with open(out_path, "w") as f:
                procs = start_workers([java_argv(args, "hs.Churn", args.churn_seconds)], stdout=f)
                span = daemon_span(p, args.churn_seconds)
                procs[0].wait(args.churn_seconds + 120)
            with open(out_path) as f:
                lines = f.read().splitlines()
            jvm = json.loads(lines[-1]) if lines else None
            st = profctl_json(b, sock, "status", "--json")
            figures = stack_figures(workload_stacks(b, sock, [procs[0].pid]))
            hwm = bench.proc_status_kb(p.pid, "VmHWM")
        finally:
            stop_workers(procs)
            p.stop(signal.SIGTERM)
        out[b.label] = {"churn": span, "vmhwm_kb": hwm, "jvm": jvm, "status_hotspot": status_hotspot(st),
                        "workload": figures}
        log(f"churn {b.label}: {json.dumps(out[b.label])[:400]}")
    return {"results": out, "seconds": args.churn_seconds}


# ---------------------------------------------------------------- report

def pct(share):
    return f"{100 * share:.1f}%" if share is not None else "-"


def median_of(runs, key):
    v = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(v) if v else None


def spread_of(runs, key, f="{:.0f}"):
    v = [r[key] for r in runs if r.get(key) is not None]
    if not v:
        return "-"
    return bench.spread(v, f) if len(v) > 1 else f.format(v[0])


def render(args, builds, sampling, daemon, churn):
    L = [f"`{args.command}`: {args.rounds} rounds; Java is `{args.java}` ({args.java_version}) running hs.Deep "
         f"{args.depth} Java calls deep with the JVM's default flags, native is `unwind_deep` (-O2, no frame "
         f"pointers) {sampling['native_depth']} calls deep (the same user frames per stack as profd answers "
         "the JVM's, see the table); one process per CPU, profd `--kinds cpu`, statistics over "
         f"{args.seconds:g} s starting {args.warmup:g} s after the workload (C2 has compiled hs.Deep by then). "
         "BPF ns per sample: run_time_ns over run_cnt of profd's perf_event programs "
         "(`kernel.bpf_stats_enabled=1`); median (min-max) over the rounds. The span is whole drains: workload "
         "share is the samples profd stored for the workload in it over the sampler's runs, and the stack "
         "figures are of those samples. With Java frames: the share of its samples with at least one Java "
         "frame, named or not (0 before the walker); all of them named: the share whose Java frames all have "
         "a name.", "",
         "| profd | workload | BPF ns per on-CPU sample | Java / native | user frames per sample | "
         "with Java frames | all of them named | workload share | load |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for b in builds:
        e = sampling["results"][b.label]
        jv, nat = median_of(e["java"], "ns_per_sample"), median_of(e["native"], "ns_per_sample")
        for kind in ("java", "native"):
            runs = e[kind]
            ratio = f"{jv / nat:.2f}x" if kind == "java" and jv and nat else ""
            L.append(f"| {b.label} | {kind} | {spread_of(runs, 'ns_per_sample')} | {ratio} | "
                     f"{spread_of(runs, 'user_depth', '{:.1f}')} | {pct(median_of(runs, 'java_share'))} | "
                     f"{pct(median_of(runs, 'named_share'))} | {pct(median_of(runs, 'workload_share'))} | "
                     f"{spread_of(runs, 'load', '{:.2f}')} |")
    L += ["", "Target (issue 42): a JVM sample at most 2x a native sample of the same depth. A build "
          "without the walker stops at the first JIT frame: its Java samples are short and cheap, so compare "
          "user frames per sample before the time.", "",
          f"profd at defaults (every kind), {daemon['seconds']:g} s with no workload of ours, then "
          f"{daemon['seconds']:g} s with {daemon['jvms']} JVMs of hs.Service (two request threads each: "
          "parse, transform, render, a regex; a 20 ms sleep every 300 requests) started "
          f"{args.warmup:g} s before: profd's CPU (utime+stime over the span, % of one core) and RSS "
          "(VmRSS every 5 s; VmHWM at the end).", "",
          "| profd | CPU, no workload | CPU, 3 JVMs | RSS median / max (MiB), no workload | "
          "RSS median / max (MiB), 3 JVMs | peak RSS (MiB) | with Java frames | all named | load |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for b in builds:
        e = daemon["results"][b.label]
        L.append(f"| {b.label} | {e['idle']['cpu_pct']:.3f}% | {e['jvms']['cpu_pct']:.3f}% | "
                 f"{bench.median_max(e['idle']['rss_kb'], 1024)} | {bench.median_max(e['jvms']['rss_kb'], 1024)} | "
                 f"{e['vmhwm_kb'] / 1024:.1f} | {pct(e['workload']['java_share'])} | "
                 f"{pct(e['workload']['named_share'])} | {e['idle']['load']:.2f}, {e['jvms']['load']:.2f} |")
    for b in builds:
        sh = daemon["results"][b.label]["status_hotspot"]
        if sh:
            L += ["", f"`profctl status` HotSpot counters with the JVMs ({b.label}): " +
                  ", ".join(f"`{k}` {v}" for k, v in sorted(sh.items()))]
    L += ["", f"Code cache churn: profd at defaults while one JVM of hs.Churn runs {churn['seconds']:g} s: a class "
          "defined again and again in loaders of its own, called until the JIT compiles it, unloaded by a full "
          "GC every 200 classes (the JVM's own counts). profd's CPU over the span, RSS (VmRSS every 5 s) and "
          "VmHWM at the end; the churning JVM's samples with Java frames and with all of them named.", "",
          "| profd | classes defined | unloaded | CPU | RSS median / max (MiB) | peak RSS (MiB) | "
          "with Java frames | all named | load |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for b in builds:
        e = churn["results"][b.label]
        jvm = e["jvm"] or {}
        L.append(f"| {b.label} | {jvm.get('classes', '-')} | {jvm.get('unloaded', '-')} | "
                 f"{e['churn']['cpu_pct']:.3f}% | {bench.median_max(e['churn']['rss_kb'], 1024)} | "
                 f"{e['vmhwm_kb'] / 1024:.1f} | {pct(e['workload']['java_share'])} | "
                 f"{pct(e['workload']['named_share'])} | {e['churn']['load']:.2f} |")
    for b in builds:
        sh = churn["results"][b.label]["status_hotspot"]
        if sh:
            L += ["", f"`profctl status` HotSpot counters after the churn ({b.label}): " +
                  ", ".join(f"`{k}` {v}" for k, v in sorted(sh.items()))]
    return bench.section(SECTION, "HotSpot frames (issue 42): BPF time per sample, daemon, code cache churn", L)


def compile_workloads(args, workdir):
    out = os.path.join(workdir, "classes")
    src = sorted(glob.glob(os.path.join(SOURCES, "*.java")))
    r = bench.sh([args.javac, "-d", out] + src)
    if r.returncode != 0:
        sys.exit(f"hotspot_bench: javac failed:\n{r.stderr}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build under test (default build/)")
    ap.add_argument("--baseline-build", help="the build before the change, measured side by side")
    ap.add_argument("--java-home", default="/usr/lib/jvm/java-17-openjdk-amd64",
                    help="the JDK (default Debian's OpenJDK 17)")
    ap.add_argument("--depth", type=int, default=30, help="Java calls deep (default 30)")
    ap.add_argument("--native-depth", type=int, help="unwind_deep's depth (default: the Java stacks' user depth)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the per-sample measurement (default 3)")
    ap.add_argument("--seconds", type=float, default=20, help="per-sample span (default 20)")
    ap.add_argument("--warmup", type=float, default=8, help="seconds between a workload's start and a span's")
    ap.add_argument("--daemon-seconds", type=float, default=120, help="each daemon span (default 120)")
    ap.add_argument("--churn-seconds", type=float, default=60, help="the churning JVM's run (default 60)")
    ap.add_argument("--output", default=os.path.join(ROOT, "docs", "performance.md"))
    ap.add_argument("--quick", action="store_true", help="a tiny configuration: checks the bench runs")
    args = ap.parse_args()
    args.command = " ".join(["tests/bench/hotspot_bench.py"] + sys.argv[1:])
    # profd's default drain interval (10 s), and a wait past its first drain
    args.interval_args, args.first_drain_s = [], 11
    if args.quick:
        args.rounds, args.seconds, args.warmup = 1, 2, 3
        args.daemon_seconds, args.churn_seconds = 5, 5
        # drains every 2 s: the same path, without 11 s waits for the first
        args.interval_args, args.first_drain_s = ["--interval", "2s"], 3
    if os.geteuid() != 0:
        if args.quick:
            print("SKIP: hotspot_bench loads BPF programs and needs root; it did NOT run", file=sys.stderr)
            sys.exit(77)
        sys.exit("hotspot_bench: needs root (profd loads BPF programs)")
    if not bench.tool("bpftool"):
        sys.exit("hotspot_bench: bpftool not found")
    args.java = os.path.join(args.java_home, "bin", "java")
    args.javac = os.path.join(args.java_home, "bin", "javac")
    for t in (args.java, args.javac):
        if not os.access(t, os.X_OK):
            sys.exit(f"hotspot_bench: {t} not found (openjdk-17-jdk-headless)")
    builds = [Build("this build", args.build)]
    if args.baseline_build:
        builds.append(Build("baseline", args.baseline_build))
    args.unwind_deep = os.path.join(args.build, "tests", "workloads", "unwind_deep")
    if not os.access(args.unwind_deep, os.X_OK):
        sys.exit(f"hotspot_bench: {args.unwind_deep} not found")
    args.java_version = bench.sh([args.java, "-version"], check=True).stderr.splitlines()[0].strip()

    old_stats = open(bench.STATS).read().strip()
    workdir = tempfile.mkdtemp(prefix="profd-hotspot-bench-")
    try:
        os.chmod(workdir, 0o755)
        args.classes = compile_workloads(args, workdir)
        start = {"when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                 "load": open("/proc/loadavg").read().strip()}
        sampling = suite_sampling(args, workdir, builds)
        bench.set_bpf_stats(old_stats == "1")
        daemon = suite_daemon(args, workdir, builds)
        churn = suite_churn(args, workdir, builds)
    finally:
        with open(bench.STATS, "w") as f:
            f.write(old_stats)
        subprocess.run(["rm", "-rf", workdir])
    text = render(args, builds, sampling, daemon, churn)
    text = text.replace("\n\n", f"\n\nRun {start['when']} UTC, load average at start `{start['load']}`.\n\n", 1)
    bench.write_section(args.output, SECTION, text)
    json_path = os.path.splitext(args.output)[0] + ".json"
    saved = json.load(open(json_path)) if os.path.exists(json_path) else {}
    saved.setdefault("results", {})[SECTION] = {"sampling": sampling, "daemon": daemon, "churn": churn,
                                                "meta": {**start, "command": args.command}}
    with open(json_path, "w") as f:
        json.dump(saved, f, indent=1, sort_keys=True)
    print(text)
    log(f"wrote {args.output} and {json_path}")
    if args.quick:
        # what the suite checks: every measurement has its figure
        runs = [r for e in sampling["results"].values() for k in ("java", "native") for r in e[k]]
        bad = [r for r in runs if not r["ns_per_sample"] or not r["samples"]]
        bad += [label for label, e in daemon["results"].items() if not e["workload"]["samples"]]
        bad += [label for label, e in churn["results"].items() if not e["workload"]["samples"] or not e["jvm"]]
        if bad:
            sys.exit(f"hotspot_bench: measurements without figures: {bad}")
        print("ok - every measurement has its figure")


if __name__ == "__main__":
    main()
