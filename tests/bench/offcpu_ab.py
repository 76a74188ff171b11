#!/usr/bin/env python3
"""The off-CPU programs' BPF time per run, builds side by side.

  tests/bench/offcpu_ab.py [--rounds N] [--pairs P] NAME=BUILD_DIR ...

Each round runs each build's profd alone (`--config /dev/null --kinds
offcpu,wakeup`, a private directory), the order reversed every other
round, under tests/workloads/pipe_wakes (P pairs of a writer that sleeps
1.2 ms then writes to a pipe and a reader blocked in read(), 12 calls
deep, no frame pointers: every round two kept blocks, one woken by the
writer's write and one by a timer). After 3 s of the workload, the
scheduler programs' run counts and run times (kernel.bpf_stats_enabled,
turned on for the run) are read over --seconds. Prints one line per
round, then the median ns per run of each program per build; --json
prints one JSON object instead. A build is a build directory (its
daemon/profd). The workload is this tree's build/ (or $PROFD_BUILD_ROOT)
pipe_wakes. Root (profd loads BPF). The A/Bs of docs/performance.md,
"The off-CPU walks with caches of their own", are made with it."""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wait_socket(p, path, timeout=60):
    """Until profd (the process p) accepts connections on path."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(path)
                return
            except OSError:
                time.sleep(0.05)
    raise RuntimeError(f"profd did not listen on {path}")


def one_round(name, build, workload, args):
    """The tracing programs' (runs, ns a run) of build's profd under the workload."""
    wd = tempfile.mkdtemp(prefix="offcpu-ab-")
    sock = os.path.join(wd, "profd.sock")
    p = subprocess.Popen([os.path.join(build, "daemon", "profd"), "--config", "/dev/null",
                          "--kinds", "offcpu,wakeup", "--store", os.path.join(wd, "store.db"),
                          "--socket", sock],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(wd, "profd.log"), "w"))
    w = None
    try:
        wait_socket(p, sock)
        w = subprocess.Popen([workload, str(args.pairs), str(args.seconds + 5)])
        time.sleep(3)
        ids = bench.owned_progs(p.pid)
        before = bench.bpf_progs()
        time.sleep(args.seconds)
        after = bench.bpf_progs()
        w.wait(timeout=60)
        w = None
        progs = {}
        for i in ids:
            a, z = before.get(i), after.get(i)
            if not a or not z or z.get("type") != "tracing":
                continue
            runs = z.get("run_cnt", 0) - a.get("run_cnt", 0)
            ns = z.get("run_time_ns", 0) - a.get("run_time_ns", 0)
            if runs:
                progs[z.get("name")] = {"runs": runs, "ns_per_run": ns / runs}
        return progs
    finally:
        if w:
            w.kill()
            w.wait()
        p.terminate()
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        subprocess.run(["rm", "-rf", wd])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="Each NAME=BUILD_DIR is a build directory with daemon/profd.")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of every build (default 2)")
    ap.add_argument("--seconds", type=int, default=12, help="seconds of BPF stats a round (default 12)")
    ap.add_argument("--pairs", type=int, default=4, help="writer and reader pairs (default 4)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ap.add_argument("builds", nargs="+", metavar="NAME=BUILD_DIR")
    args = ap.parse_args()
    builds = []
    for b in args.builds:
        name, sep, path = b.partition("=")
        if not sep or not os.path.isfile(os.path.join(path, "daemon", "profd")):
            ap.error(f"{b}: not NAME=BUILD_DIR with daemon/profd")
        builds.append((name, path))
    workload = os.path.join(os.environ.get("PROFD_BUILD_ROOT", os.path.join(ROOT, "build")),
                            "tests", "workloads", "pipe_wakes")
    if not os.access(workload, os.X_OK):
        ap.error(f"{workload}: not built (meson compile -C build)")
    if os.geteuid() != 0:
        ap.error("run as root: profd loads BPF programs")

    res = {name: {} for name, _ in builds}
    bench.set_bpf_stats(True)
    try:
        for r in range(args.rounds):
            for name, path in (builds if r % 2 == 0 else builds[::-1]):
                progs = one_round(name, path, workload, args)
                for prog, v in progs.items():
                    res[name].setdefault(prog, []).append(v)
                if not args.json:
                    print(name, "round", r + 1, "; ".join(f"{k} {v['runs']} runs {v['ns_per_run']:.0f} ns"
                                                         for k, v in sorted(progs.items())),
                          "load", bench.loadavg().split()[0], flush=True)
    finally:
        bench.set_bpf_stats(False)
    medians = {name: {prog: round(statistics.median(x["ns_per_run"] for x in v))
                      for prog, v in sorted(progs.items())} for name, progs in res.items()}
    if args.json:
        print(json.dumps({"rounds": args.rounds, "seconds": args.seconds, "pairs": args.pairs,
                          "median_ns_per_run": medians, "runs": res}))
    else:
        for name, m in medians.items():
            print(name, "median ns a run:", ", ".join(f"{k} {v}" for k, v in m.items()))


if __name__ == "__main__":
    main()
