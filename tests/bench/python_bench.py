#!/usr/bin/env python3
"""Issue 41's benchmark: what naming CPython frames costs. Not a timed test.

  tests/bench/python_bench.py                            as root, after a build: rewrites the
                                                         "python" section of docs/performance.md
  tests/bench/python_bench.py --baseline-build OLD       side by side with the build before the
                                                         change (OLD/daemon/profd), interleaved
  tests/bench/python_bench.py --quick --output F         a tiny configuration (the bench suite runs it)

Three measurements, each for the profd of --build and, when given, of
--baseline-build (same workloads, same minutes, alternating):

1. BPF time per on-CPU sample: profd --kinds cpu while one CPU-bound process
   per CPU runs either a Python script --depth Python calls deep (Debian's
   /usr/bin/python3 by default: no frame pointers in the interpreter loop, so
   its native part is walked with DWARF tables too) or the native
   tests/workloads unwind_deep (-O2, no frame pointers) at a depth that gives
   the same number of user frames per stack (by default calibrated first:
   one run of each tells the Python stacks' mean user depth as profd answers
   them, and how many frames unwind_deep has besides its recursion). The figure is
   the kernel's own statistics (kernel.bpf_stats_enabled=1, put back as it
   was), run_time_ns over run_cnt of profd's perf_event programs between two
   snapshots --warmup seconds after the workload started (unwind tables built,
   code objects named). Every CPU runs the workload, so almost every sample is
   one of its processes: the share is reported (samples profd stored for the
   workload in the span, whole drains that a flush begins and ends, over the
   sampler's runs in it), with each workload's mean
   user frames per sample, the share of its samples that carry a Python
   frame (build_id "python-..." or module "[python]": 0 before the walker)
   and the share whose Python frames are all named.
2. profd's own CPU (utime+stime, % of one core) and RSS (VmRSS every 5 s,
   VmHWM) at defaults (every kind), first --daemon-seconds with no workload of
   ours, then as long with --processes Python processes of a service-like
   script (json, re, a chain of calls, short sleeps: on- and off-CPU, many
   code objects), and every status counter whose name says "python".
3. Bytes per sample in the store: profd --kinds cpu with the workloads of 1,
   the store's pages in use (page_count - freelist_count, read with SQLite
   from a read-only connection) and profd's stored sample count
   (`profctl status --json` "samples") after the first drain and at the end:
   the growth over the samples stored.

Needs root (profd loads BPF), bpftool and the build's unwind_deep. Reuses
bench.py's helpers (programs, statistics switch, sections). Processes are
stopped by their pid, never by name."""
import argparse
import datetime
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402

ROOT = bench.ROOT
SECTION = "python"
PY_BUILD_ID_PREFIX = "python-"  # common/protocol.h, STORE_PYTHON_BUILD_ID_PREFIX
PY_MODULE = "[python]"          # common/protocol.h, STORE_PYTHON_MODULE: an unnamed Python frame

# CPU-bound, DEPTH Python frames deep under <module>: recurse x (DEPTH - 1), then leaf
DEEP_SCRIPT = """\
import sys
import time


def leaf(deadline):
    x = 1
    while time.process_time() < deadline:
        for _ in range(20000):
            x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
    return x


def recurse(n, deadline):
    if n > 1:
        return recurse(n - 1, deadline) + 1
    return leaf(deadline)


seconds, depth = float(sys.argv[1]), int(sys.argv[2])
sys.setrecursionlimit(depth + 100)
recurse(depth, time.process_time() + seconds)
"""

# What a Python service does: parse, transform, render, match; now and then
# waits. Many distinct code objects (its own and the standard library's).
SERVICE_SCRIPT = """\
import json
import re
import sys
import time

DOC = json.dumps({"user": {"name": "ada", "roles": ["admin", "dev"], "id": 12}, "items": list(range(40))})
WORD = re.compile(r"[a-z]+")


class Handler:
    def parse(self, text):
        return json.loads(text)

    def transform(self, doc, i):
        doc["i"] = i
        doc["items"] = [x * 2 for x in doc["items"]]
        return doc

    def render(self, doc):
        return json.dumps(doc, sort_keys=True)

    def handle(self, i):
        return len(WORD.findall(self.render(self.transform(self.parse(DOC), i))))


def serve(deadline):
    h, i = Handler(), 0
    while time.monotonic() < deadline:
        h.handle(i)
        i += 1
        if i % 300 == 0:
            time.sleep(0.02)


serve(time.monotonic() + float(sys.argv[1]))
"""


def log(msg):
    print(f"python_bench: {msg}", file=sys.stderr, flush=True)


class Build:
    """One profd build under test."""

    def __init__(self, label, build):
        self.label = label
        self.profd = os.path.join(build, "daemon", "profd")
        self.profctl = os.path.join(build, "client", "profctl")
        for p in (self.profd, self.profctl):
            if not os.access(p, os.X_OK):
                sys.exit(f"python_bench: {p} not found: build {build} first")


def start_profd(b, workdir, name, extra):
    d = tempfile.mkdtemp(prefix=name + "-", dir=workdir)
    sock, store = os.path.join(d, "profd.sock"), os.path.join(d, "profd.db")
    p = bench.Profiler(f"{b.label} {name}", [b.profd, "--config", "/dev/null", "--socket", sock, "--store", store]
                       + extra, bench.ready_socket(sock))
    p.start(d)
    return p, sock, store


def start_workers(argvs):
    """Each in a session of its own, so stopping one by its pid stops only it."""
    return [subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            for a in argvs]


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
    just after the flushes that began and ended it: a query takes every
    drain that overlaps its window)."""
    window = (["--from", rfc3339(span[0] + 0.5), "--to", rfc3339(span[1] - 0.5)] if span else ["--since", "30m"])
    flush(b, sock)
    out = []
    for pid in pids:
        doc = profctl_json(b, sock, "query", "--json", "--pid", str(pid), "--kind", "cpu", *window)
        out += [(st["value"], [f for f in st["frames"] if not f.get("kernel")]) for st in doc["stacks"]]
    return out


def is_python(f):
    """named (build_id "python-...") or not (module "[python]"): common/protocol.h"""
    return (f.get("build_id") or "").startswith(PY_BUILD_ID_PREFIX) or f.get("module") == PY_MODULE


def stack_figures(stacks):
    """Samples, mean user frames per sample, and the shares of samples with
    a Python frame, and with every Python frame named."""
    n = sum(v for v, _ in stacks)
    if not n:
        return {"samples": 0, "user_depth": None, "python_share": None, "named_share": None}
    py = [(v, [f for f in fr if is_python(f)]) for v, fr in stacks]
    return {"samples": n, "user_depth": sum(v * len(fr) for v, fr in stacks) / n,
            "python_share": sum(v for v, p in py if p) / n,
            "named_share": sum(v for v, p in py if p and all(f.get("resolved", True) for f in p)) / n}


def deep_argv(args, kind, seconds, depth):
    if kind == "python":
        return [args.python, args.deep_script, f"{seconds:g}", str(depth)]
    return [args.unwind_deep, f"{seconds:g}", str(depth)]


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
            # the span is whole drains: what profd stored in it is what its
            # programs did (each snapshot just before a flush, so the
            # flushes' own latency shifts both ends alike)
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
    Python workload, both as profd answers them: one run of each (the
    native one at a first guess) tells the Python stacks' depth and how
    many frames unwind_deep has besides its recursion (deep_recurse x
    (DEPTH + 1))."""
    guess = args.depth
    py = sampling_run(args, workdir, b, "python", args.depth)
    nat = sampling_run(args, workdir, b, "native", guess)
    if not py["user_depth"] or not nat["user_depth"]:
        raise RuntimeError("calibration: profd stored no sample of a workload")
    fixed = nat["user_depth"] - (guess + 1)
    depth = max(1, round(py["user_depth"] - fixed - 1))
    log(f"native depth {depth}: Python stacks have {py['user_depth']:.1f} user frames, unwind_deep "
        f"{fixed:.1f} besides its recursion")
    return depth, {"python": py, "native": nat, "fixed_frames": fixed}


def suite_sampling(args, workdir, builds):
    out = {b.label: {"python": [], "native": []} for b in builds}
    native_depth, calibration = args.native_depth, None
    if native_depth is None:
        native_depth, calibration = calibrate(args, workdir, builds[0])
    for r in range(args.rounds):
        for b in builds:
            out[b.label]["python"].append(sampling_run(args, workdir, b, "python", args.depth))
            out[b.label]["native"].append(sampling_run(args, workdir, b, "native", native_depth))
        log(f"sampling round {r + 1}/{args.rounds} done")
    return {"results": out, "native_depth": native_depth, "python_depth": args.depth, "calibration": calibration}


# ---------------------------------------------------------------- 2. daemon

def status_python(st, path=""):
    """Every status counter under a key that says python, flattened."""
    out = {}
    if isinstance(st, dict):
        for k, v in st.items():
            p = f"{path}.{k}" if path else k
            if "python" in k.lower():
                out.update({p: v} if not isinstance(v, dict) else {f"{p}.{a}": x for a, x in flat(v).items()})
            else:
                out.update(status_python(v, p))
    return out


def flat(d, path=""):
    out = {}
    for k, v in d.items():
        p = f"{path}.{k}" if path else k
        out.update(flat(v, p) if isinstance(v, dict) else {p: v})
    return out


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
            time.sleep(min(args.first_drain_s, args.daemon_seconds))  # past the first drain
            idle = daemon_span(p, args.daemon_seconds)
            procs = start_workers([[args.python, args.service_script, str(args.daemon_seconds + args.warmup + 30)]
                                   for _ in range(args.processes)])
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
        out[b.label] = {"idle": idle, "python": busy, "vmhwm_kb": hwm, "alive": alive,
                        "status_python": status_python(st), "workload": figures}
        log(f"daemon {b.label}: {json.dumps(out[b.label])[:400]}")
    return {"results": out, "processes": args.processes, "seconds": args.daemon_seconds}


# ---------------------------------------------------------------- 3. store

def store_in_use(path):
    """Bytes of the store's pages in use, read while profd runs (WAL mode:
    a reader sees the last committed drain)."""
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        page = c.execute("PRAGMA page_size").fetchone()[0]
        count = c.execute("PRAGMA page_count").fetchone()[0]
        free = c.execute("PRAGMA freelist_count").fetchone()[0]
        return (count - free) * page
    finally:
        c.close()


def store_run(args, workdir, b, kind, depth):
    p, sock, store = start_profd(b, workdir, f"store-{kind}", ["--kinds", "cpu"] + args.interval_args)
    procs = []
    try:
        procs = start_workers([deep_argv(args, kind, args.store_seconds + 30, depth) for _ in range(os.cpu_count())])
        time.sleep(args.first_drain_s)  # the first drain: schema, mappings, the first sight of every stack
        w0 = flush(b, sock)
        s0, n0 = store_in_use(store), profctl_json(b, sock, "status", "--json")["samples"]
        time.sleep(args.store_seconds)
        w1 = flush(b, sock)
        s1, n1 = store_in_use(store), profctl_json(b, sock, "status", "--json")["samples"]
        pids = [q.pid for q in procs]
        stop_workers(procs)
        figures = stack_figures(workload_stacks(b, sock, pids, (w0, w1)))
    finally:
        stop_workers(procs)
        p.stop()
    r = {"bytes": s1 - s0, "samples": n1 - n0, "bytes_per_sample": (s1 - s0) / (n1 - n0) if n1 > n0 else None,
         "depth_arg": depth, "workload": figures, "load": float(bench.loadavg())}
    log(f"store {b.label} {kind}: {json.dumps(r)}")
    return r


def suite_store(args, workdir, builds, native_depth):
    return {"results": {b.label: {k: store_run(args, workdir, b, k, args.depth if k == "python" else native_depth)
                                  for k in ("python", "native")} for b in builds},
            "seconds": args.store_seconds}


# ---------------------------------------------------------------- report

def fmt(v, f="{:.0f}"):
    return f.format(v) if v is not None else "-"


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


def render(args, builds, sampling, daemon, store):
    L = [f"`{args.command}`: {args.rounds} rounds; Python is `{args.python}` ({args.python_version}) running a "
         f"script {args.depth} Python calls deep, native is `unwind_deep` (-O2, no frame pointers) "
         f"{sampling['native_depth']} calls deep (the same user frames per stack, see the table); one process "
         f"per CPU, profd `--kinds cpu`, statistics over {args.seconds:g} s starting {args.warmup:g} s after the "
         "workload. BPF ns per sample: run_time_ns over run_cnt of profd's perf_event programs "
         "(`kernel.bpf_stats_enabled=1`); median (min-max) over the rounds. The span is whole drains (a flush "
         "begins and ends it): workload share is the samples profd stored for the workload in it over the "
         "sampler's runs, and the stack figures are of those samples. With Python frames: the share of its "
         "samples with at least one Python frame, named or not (0 before the walker); all of them named: "
         "the share whose Python frames all have a name.", "",
         "| profd | workload | BPF ns per on-CPU sample | Python / native | user frames per sample | "
         "with Python frames | all of them named | workload share | load |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for b in builds:
        e = sampling["results"][b.label]
        py, nat = median_of(e["python"], "ns_per_sample"), median_of(e["native"], "ns_per_sample")
        for kind in ("python", "native"):
            runs = e[kind]
            ratio = f"{py / nat:.2f}x" if kind == "python" and py and nat else ""
            share, named = median_of(runs, "python_share"), median_of(runs, "named_share")
            wshare = median_of(runs, "workload_share")
            L.append(f"| {b.label} | {kind} | {spread_of(runs, 'ns_per_sample')} | {ratio} | "
                     f"{spread_of(runs, 'user_depth', '{:.1f}')} | {pct(share)} | {pct(named)} | {pct(wshare)} | "
                     f"{spread_of(runs, 'load', '{:.2f}')} |")
    L += ["", "Target (issue 41): a Python sample at most 1.5x a native sample of the same depth.", "",
          f"profd at defaults (every kind), {daemon['seconds']:g} s with no workload of ours, then "
          f"{daemon['seconds']:g} s with {daemon['processes']} Python processes of a service-like script "
          "(json, re, a chain of method calls, a 20 ms sleep every 300 requests) started "
          f"{args.warmup:g} s before: profd's CPU (utime+stime over the span, % of one core) and RSS "
          "(VmRSS every 5 s; VmHWM at the end).", "",
          "| profd | CPU, no workload | CPU, Python processes | RSS median / max (MiB), no workload | "
          "RSS median / max (MiB), Python processes | peak RSS (MiB) | Python frames in their samples | load |",
          "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for b in builds:
        e = daemon["results"][b.label]
        share = e["workload"]["python_share"]
        L.append(f"| {b.label} | {e['idle']['cpu_pct']:.3f}% | {e['python']['cpu_pct']:.3f}% | "
                 f"{bench.median_max(e['idle']['rss_kb'], 1024)} | {bench.median_max(e['python']['rss_kb'], 1024)} | "
                 f"{e['vmhwm_kb'] / 1024:.1f} | {pct(share)} | "
                 f"{e['idle']['load']:.2f}, {e['python']['load']:.2f} |")
    for b in builds:
        sp = daemon["results"][b.label]["status_python"]
        if sp:
            L += ["", f"`profctl status` Python counters at the end ({b.label}): " +
                  ", ".join(f"`{k}` {v}" for k, v in sorted(sp.items()))]
    L += ["", f"Bytes per sample in the store: profd `--kinds cpu` with the workloads above (one process per "
          f"CPU) for {store['seconds']:g} s after its first drain; the store's pages in use (SQLite "
          "page_count - freelist_count) grown over the samples stored meanwhile (`profctl status` "
          "\"samples\", every process of the host).", "",
          "| profd | workload | bytes | samples | bytes per sample | user frames per sample | Python frames |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    for b in builds:
        for kind in ("python", "native"):
            e = store["results"][b.label][kind]
            share = e["workload"]["python_share"]
            L.append(f"| {b.label} | {kind} | {e['bytes']} | {e['samples']} | {fmt(e['bytes_per_sample'], '{:.1f}')} | "
                     f"{fmt(e['workload']['user_depth'], '{:.1f}')} | "
                     f"{pct(share)} |")
    return bench.section(SECTION, "Python frames (issue 41): BPF time per sample, daemon, store", L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build under test (default build/)")
    ap.add_argument("--baseline-build", help="the build before the change, measured side by side")
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter (default Debian's /usr/bin/python3)")
    ap.add_argument("--depth", type=int, default=30, help="Python calls deep (default 30)")
    ap.add_argument("--native-depth", type=int, help="unwind_deep's depth (default: the Python stacks' user depth)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the per-sample measurement (default 3)")
    ap.add_argument("--seconds", type=float, default=20, help="per-sample span (default 20)")
    ap.add_argument("--warmup", type=float, default=5, help="seconds between a workload's start and a span's")
    ap.add_argument("--processes", type=int, default=10, help="Python processes in the daemon run (default 10)")
    ap.add_argument("--daemon-seconds", type=float, default=120, help="each daemon span (default 120)")
    ap.add_argument("--store-seconds", type=float, default=60, help="store growth span (default 60)")
    ap.add_argument("--output", default=os.path.join(ROOT, "docs", "performance.md"))
    ap.add_argument("--quick", action="store_true", help="a tiny configuration: checks the bench runs")
    args = ap.parse_args()
    args.command = " ".join(["tests/bench/python_bench.py"] + sys.argv[1:])
    # profd's default drain interval (10 s), and a wait past its first drain
    args.interval_args, args.first_drain_s = [], 11
    if args.quick:
        args.rounds, args.seconds, args.warmup, args.processes = 1, 2, 2, 2
        args.daemon_seconds, args.store_seconds = 5, 5
        # drains every 2 s: the same path, without 11 s waits for the first
        args.interval_args, args.first_drain_s = ["--interval", "2s"], 3
    if os.geteuid() != 0:
        if args.quick:
            print("SKIP: python_bench loads BPF programs and needs root; it did NOT run", file=sys.stderr)
            sys.exit(77)
        sys.exit("python_bench: needs root (profd loads BPF programs)")
    if not bench.tool("bpftool"):
        sys.exit("python_bench: bpftool not found")
    builds = [Build("this build", args.build)]
    if args.baseline_build:
        builds.append(Build("baseline", args.baseline_build))
    args.unwind_deep = os.path.join(args.build, "tests", "workloads", "unwind_deep")
    if not os.access(args.unwind_deep, os.X_OK):
        sys.exit(f"python_bench: {args.unwind_deep} not found")
    args.python_version = bench.sh([args.python, "--version"], check=True).stdout.strip()

    old_stats = open(bench.STATS).read().strip()
    workdir = tempfile.mkdtemp(prefix="profd-python-bench-")
    try:
        args.deep_script = os.path.join(workdir, "deep.py")
        args.service_script = os.path.join(workdir, "service.py")
        with open(args.deep_script, "w") as f:
            f.write(DEEP_SCRIPT)
        with open(args.service_script, "w") as f:
            f.write(SERVICE_SCRIPT)
        os.chmod(workdir, 0o755)
        start = {"when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                 "load": open("/proc/loadavg").read().strip()}
        sampling = suite_sampling(args, workdir, builds)
        bench.set_bpf_stats(old_stats == "1")
        daemon = suite_daemon(args, workdir, builds)
        store = suite_store(args, workdir, builds, sampling["native_depth"])
    finally:
        with open(bench.STATS, "w") as f:
            f.write(old_stats)
        subprocess.run(["rm", "-rf", workdir])
    text = render(args, builds, sampling, daemon, store)
    text = text.replace("\n\n", f"\n\nRun {start['when']} UTC, load average at start `{start['load']}`.\n\n", 1)
    bench.write_section(args.output, SECTION, text)
    json_path = os.path.splitext(args.output)[0] + ".json"
    saved = json.load(open(json_path)) if os.path.exists(json_path) else {}
    saved.setdefault("results", {})[SECTION] = {"sampling": sampling, "daemon": daemon, "store": store,
                                                "meta": {**start, "command": args.command}}
    with open(json_path, "w") as f:
        json.dump(saved, f, indent=1, sort_keys=True)
    print(text)
    log(f"wrote {args.output} and {json_path}")
    if args.quick:
        # what the suite checks: every measurement has its figure
        runs = [r for e in sampling["results"].values() for k in ("python", "native") for r in e[k]]
        bad = [r for r in runs if not r["ns_per_sample"] or not r["samples"]]
        bad += [k for e in store["results"].values() for k, r in e.items() if not r["workload"]["samples"]]
        bad += [label for label, e in daemon["results"].items() if not e["workload"]["samples"]]
        if bad:
            sys.exit(f"python_bench: measurements without figures: {bad}")
        print("ok - every measurement has its figure")


if __name__ == "__main__":
    main()
