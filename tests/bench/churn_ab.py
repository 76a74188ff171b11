#!/usr/bin/env python3
"""Issue 43's daemon CPU on a build host, side by side on a fixed workload.

  tests/bench/churn_ab.py --rounds 1 before=/tmp/before after=build

Each named build's profd runs at defaults (`profd --config /dev/null
--socket S --store F`, a private directory each, then any --daemon-args
of its name) at the same time, so all see the same processes. After the first drain, a fixed workload runs once:
ROUNDS times this tree's HEAD (a `git archive`, configured as bench.py's
build host does) built from clean with ninja and its unit tests run
(`meson test --suite unit`). Then, after one more drain interval, each
profd gets SIGTERM, writes what it still holds and exits; its whole life's
CPU (user+system of every thread, from wait4: what /proc/PID/stat held at
exit) and peak RSS (ru_maxrss, the kernel's VmHWM) are read as it is
reaped, and what its store holds from its drains table; VmRSS is read
every second during the workload (median, p99, max), and every 5 ms for
the parts of its highest value (anonymous, file pages, shared memory: the
peak VmHWM records, which lasts milliseconds). A span's CPU share
on a loaded machine is set by the scheduler as much as by the daemon's
demand (a starved daemon writes its backlog later), so the figure here is
the whole life's CPU for the same input, per sample and per key stored.

With --seconds, the workload's rounds go on until that long has passed
(issue 43's hour: `--seconds 3600`), and the span's own figures are added
for each daemon: its CPU as % of a core over the workload (and each of its
threads', user and system, by thread name), its BPF programs' run time
(kernel.bpf_stats_enabled, turned on for the run) as % of a core, the
store's growth per hour (file and WAL), and what `profctl status` says of
the unwinder and of drops at the end.

With --perf, `perf record -F 199 -e cpu-clock -g` follows each daemon from
its first drain to its exit (perf.data in --keep's directory). One JSON
object on stdout. Root (profd loads BPF)."""
import argparse
import datetime
import json
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


# What profctl status says just before the SIGTERM (the drains still
# queued are written after it).
STATUS_FIELDS = ("samples", "samples_seen", "drains", "drains_early", "symbol_cache_bytes", "symbol_mapped_bytes",
                 "symbol_peak_bytes", "heap_trims", "heap_trim_ms", "rss_bytes", "kallsyms_reads", "kallsyms_kept",
                 "runtime_names", "snapshots")


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().strip()


def stored(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        n, samples, keys = db.execute("SELECT count(*), coalesce(sum(samples), 0), coalesce(sum(keys), 0) "
                                      "FROM drains").fetchone()
        stacks = db.execute("SELECT count(*) FROM stacks").fetchone()[0]
        return {"drains": n, "samples": samples, "keys": keys, "stacks": stacks}
    finally:
        db.close()


def vmrss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


PEAK_POLL_S = 0.005


def rss_parts_kib(pid):
    """VmRSS and its parts (RssAnon, RssFile, RssShmem), KiB; None when gone."""
    parts = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "RssAnon:", "RssFile:", "RssShmem:")):
                    parts[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        return None
    return parts if "VmRSS" in parts else None


class PeakWatch(threading.Thread):
    """Reads each pid's RSS parts every PEAK_POLL_S and keeps them at its
    highest VmRSS: VmHWM says how high the peak was, not of what (anonymous
    memory, or pages of mapped files), and a peak often lasts a few
    milliseconds, between two of the workload's once-a-second reads."""

    def __init__(self, pids):
        super().__init__(daemon=True)
        self.peaks = {pid: None for pid in pids}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(PEAK_POLL_S):
            for pid, peak in self.peaks.items():
                parts = rss_parts_kib(pid)
                if parts and (peak is None or parts["VmRSS"] > peak["VmRSS"]):
                    self.peaks[pid] = parts

    def summary(self, pid):
        peak = self.peaks.get(pid)
        if not peak:
            return None
        names = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "RssShmem": "shmem"}
        return {names[k]: round(v / 1024, 1) for k, v in peak.items()}


def workload(src, rounds, pids, seconds=0):
    """Builds src from clean and runs its unit tests, rounds times, reading
    each pid's VmRSS every second meanwhile; the wall-clock seconds, the
    execs it took (from the fork counter) and the RSS series (KiB)."""
    b = os.path.join(src, "build")
    forks0 = forks()
    t0 = time.monotonic()
    series = {pid: [] for pid in pids}
    done = 0
    while done < rounds or time.monotonic() - t0 < seconds:
        done += 1
        for cmd in (["ninja", "-C", b, "clean"], ["ninja", "-C", b, "-j2"],
                    ["meson", "test", "-C", b, "--suite", "unit", "--num-processes", "2"]):
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while p.poll() is None:
                for pid in pids:
                    v = vmrss_kib(pid)
                    if v is not None:
                        series[pid].append(v)
                try:
                    p.wait(1)
                except subprocess.TimeoutExpired:
                    pass
    return time.monotonic() - t0, forks() - forks0, series, done


def rss_summary(kib):
    """Median, 99th percentile and max of a VmRSS series, MiB."""
    if not kib:
        return None
    v = sorted(kib)
    return {"median": round(v[len(v) // 2] / 1024, 1), "p99": round(v[min(len(v) - 1, len(v) * 99 // 100)] / 1024, 1),
            "max": round(v[-1] / 1024, 1), "n": len(v)}


def forks():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("processes "):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1, help="builds and unit-test runs of the tree (default 1)")
    ap.add_argument("--seconds", type=int, default=0,
                    help="go on with rounds until this many seconds passed (default: --rounds only)")
    ap.add_argument("--perf", action="store_true", help="perf record each daemon (cpu-clock, 199 Hz, -g)")
    ap.add_argument("--keep", help="keep the daemons' directories (logs, stores, perf.data) under this one")
    ap.add_argument("--daemon-args", action="append", default=[], metavar="NAME=ARGS",
                    help="more options for NAME's profd, after the defaults (e.g. after='--offcpu-sample 20ms')")
    ap.add_argument("builds", nargs="+", metavar="NAME=BUILD_DIR",
                    help="a build directory with daemon/profd, named")
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.builds)
    extra = {n: shlex.split(a) for n, a in (x.split("=", 1) for x in args.daemon_args)}
    workdir = args.keep or tempfile.mkdtemp(prefix="profd-churn-ab-")
    os.makedirs(workdir, exist_ok=True)
    src = bench.build_tree(workdir)
    daemons, perfs = {}, {}
    try:
        for name, build in builds.items():
            d = os.path.join(workdir, name)
            os.makedirs(d, exist_ok=True)
            sock, store = os.path.join(d, "profd.sock"), os.path.join(d, "profd.db")
            log = open(os.path.join(d, "profd.log"), "w")
            p = subprocess.Popen([os.path.join(build, "daemon", "profd"), "--config", "/dev/null",
                                  "--socket", sock, "--store", store] + extra.get(name, []), stdout=log, stderr=log)
            daemons[name] = {"p": p, "dir": d, "store": store}
        for name, dm in daemons.items():
            deadline = time.monotonic() + 60
            while not os.path.exists(os.path.join(dm["dir"], "profd.sock")) and time.monotonic() < deadline:
                if dm["p"].poll() is not None:
                    raise RuntimeError(f"{name}: profd exited ({dm['p'].returncode})")
                time.sleep(0.1)
        time.sleep(11)  # past the first drain
        if args.perf:
            for name, dm in daemons.items():
                perfs[name] = subprocess.Popen(["perf", "record", "-q", "-F", "199", "-e", "cpu-clock", "-g",
                                                "-p", str(dm["p"].pid), "-o",
                                                os.path.join(dm["dir"], "perf.data")],
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
        load_start = loadavg()
        stats_were = open(bench.STATS).read().strip()
        bench.set_bpf_stats(True)
        for dm in daemons.values():
            dm["progs"] = bench.owned_progs(dm["p"].pid)
            dm["cpu0"], dm["store0"] = bench.proc_cpu_s(dm["p"].pid), bench.store_bytes(dm["store"])
            dm["threads0"] = bench.threads_cpu_s(dm["p"].pid)
        progs0 = bench.bpf_progs()
        watch = PeakWatch([dm["p"].pid for dm in daemons.values()])
        watch.start()
        seconds, execs, rss, rounds = workload(src, args.rounds, [dm["p"].pid for dm in daemons.values()],
                                               args.seconds)
        watch.stop.set()
        progs1 = bench.bpf_progs()
        for dm in daemons.values():
            cpu1, store1 = bench.proc_cpu_s(dm["p"].pid), bench.store_bytes(dm["store"])
            threads1 = bench.threads_cpu_s(dm["p"].pid)
            bpf = bench.prog_delta(progs0, progs1, dm["progs"])
            bpf_ns = sum(v[1] for v in bpf.values())
            dm["span"] = {
                "daemon_cpu_pct": round(100 * (cpu1 - dm["cpu0"]) / seconds, 2),
                "bpf_cpu_pct": round(100 * bpf_ns / 1e9 / seconds, 2),
                "bpf_ns_per_run": {k: round(v[1] / v[0]) for k, v in bpf.items() if v[0]},
                "bpf_runs": {k: v[0] for k, v in bpf.items()},
                "store_mib_per_h": round((store1 - dm["store0"]) / 2**20 * 3600 / seconds, 1),
                "store_mib_end": round(store1 / 2**20, 1),
                # each thread's share of a core over the span, user and system
                "threads_cpu_pct": {
                    comm: {"user": round(100 * (u - dm["threads0"].get(comm, [0, 0])[0]) / seconds, 2),
                           "sys": round(100 * (k - dm["threads0"].get(comm, [0, 0])[1]) / seconds, 2)}
                    for comm, (u, k) in sorted(threads1.items())},
            }
        with open(bench.STATS, "w") as f:
            f.write(stats_were)
        load_end = loadavg()
        time.sleep(11)  # the workload's last drain
        results = {}
        for name, dm in daemons.items():
            r = bench.sh([os.path.join(builds[name], "client", "profctl"), "--socket",
                          os.path.join(dm["dir"], "profd.sock"), "status", "--json"])
            try:
                status = json.loads(r.stdout)
            except ValueError:
                status = {}
            dm["status"] = {k: status.get(k) for k in STATUS_FIELDS}
            dm["status"].update({k: status.get(k) for k in ("unwind", "drops", "offcpu") if k in status})
        for name, dm in daemons.items():
            dm["p"].send_signal(signal.SIGTERM)
        for name, dm in daemons.items():
            t0 = time.monotonic()
            _, status, ru = os.wait4(dm["p"].pid, 0)
            dm["p"].returncode = os.waitstatus_to_exitcode(status)
            cpu = ru.ru_utime + ru.ru_stime
            st = stored(dm["store"])
            results[name] = {
                "exit": dm["p"].returncode, "exit_wait_s": round(time.monotonic() - t0, 1),
                "cpu_s": round(cpu, 2), "user_s": round(ru.ru_utime, 2), "sys_s": round(ru.ru_stime, 2),
                "vmhwm_mib": round(ru.ru_maxrss / 1024, 1), **st, "span": dm["span"],
                "status_before_exit": dm["status"],
                "vmrss_every_1s_mib": rss_summary(rss[dm["p"].pid]),
                "rss_peak_parts_mib": watch.summary(dm["p"].pid),
                "cpu_ms_per_1k_samples": round(cpu * 1e6 / st["samples"], 1) if st["samples"] else None,
                "cpu_ms_per_1k_keys": round(cpu * 1e6 / st["keys"], 1) if st["keys"] else None,
            }
        for p in perfs.values():
            try:
                p.wait(120)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGINT)
                p.wait()
        print(json.dumps({"started": started, "rounds": rounds, "workload_s": round(seconds),
                          "execs": execs, "load_start": load_start, "load_end": load_end,
                          "results": results}), flush=True)
    finally:
        for dm in daemons.values():
            if dm["p"].returncode is None and dm["p"].poll() is None:
                dm["p"].terminate()
                dm["p"].wait(120)
        for p in perfs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                p.wait()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
