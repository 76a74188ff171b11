#!/usr/bin/env python3
"""profd's memory at defaults, two (or more) builds side by side.

  tests/bench/memory_side_by_side.py --seconds 90 main=/path/to/main/build new=build

Each build's profd runs at defaults (`profd --config /dev/null --socket S
--store F`, in a private temporary directory) at the same time as the
others, so all see the same processes: first "idle" (no workload of ours),
then, with new daemons, "busy" (`stress-ng --cpu N --cpu-method int64` and
a shell loop starting short-lived processes ten times a second). With
--no-debug-files, as on a host without -dbg packages (debug_dirs set to an
empty directory). After the
first drain (11 s) VmRSS is read every 5 s for --seconds; at the end VmRSS,
VmHWM, RssAnon, RssFile and the memory fields of `profctl status --json`.
One JSON line per mode on stdout, with the load average at its start and
end. Needs root (profd loads BPF) and stress-ng. Docs: docs/performance.md,
"Daemon memory: symbols (issue 14)"."""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import tempfile
import time

STATUS_FIELDS = ("rss_bytes", "symbol_cache_bytes", "symbol_mapped_bytes", "symbol_peak_bytes",
                 "processes_tracked", "heap_trims", "heap_trim_ms", "drains")


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(value.split()[0])
    return out


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().strip()


def run_mode(mode, builds, seconds, workdir, config="/dev/null"):
    daemons, extra = {}, []
    try:
        for name, build in builds.items():
            d = tempfile.mkdtemp(prefix=f"{name}-{mode}-", dir=workdir)
            sock, store = os.path.join(d, "profd.sock"), os.path.join(d, "profd.db")
            log = open(os.path.join(d, "profd.log"), "w")
            p = subprocess.Popen([os.path.join(build, "daemon", "profd"), "--config", config,
                                  "--socket", sock, "--store", store], stdout=log, stderr=log)
            daemons[name] = (p, build, sock)
        for p, _, sock in daemons.values():
            deadline = time.monotonic() + 30
            while not os.path.exists(sock) and time.monotonic() < deadline and p.poll() is None:
                time.sleep(0.1)
        time.sleep(11)  # past the first drain
        if mode == "busy":
            extra.append(subprocess.Popen(["stress-ng", "--cpu", str(os.cpu_count()), "--cpu-method", "int64",
                                           "--timeout", f"{seconds + 5}s"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            extra.append(subprocess.Popen(["sh", "-c", "while :; do ls / >/dev/null; sh -c true; date >/dev/null; "
                                           "sleep 0.1; done"]))
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
        load_start = loadavg()
        series = {name: [] for name in daemons}
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            time.sleep(5)
            for name, (p, _, _) in daemons.items():
                series[name].append(proc_status(p.pid)["VmRSS"])
        results = {}
        for name, (p, build, sock) in daemons.items():
            st = subprocess.run([os.path.join(build, "client", "profctl"), "--socket", sock, "status", "--json"],
                                capture_output=True, text=True, timeout=30)
            status = json.loads(st.stdout) if st.returncode == 0 else {}
            results[name] = {"end_kib": proc_status(p.pid), "vmrss_every_5s_kib": series[name],
                             "status": {k: status.get(k) for k in STATUS_FIELDS}}
        return {"mode": mode, "when": when, "seconds": seconds, "load_start": load_start,
                "load_end": loadavg(), "results": results}
    finally:
        for e in extra:
            e.terminate()
            e.wait()
        for p, _, _ in daemons.values():
            if p.poll() is None:
                p.terminate()
                p.wait(60)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=90, help="how long each mode is measured (default 90)")
    ap.add_argument("--modes", default="idle,busy", help="idle, busy or both (default idle,busy)")
    ap.add_argument("--no-debug-files", action="store_true",
                    help="as on a host without -dbg packages: debug_dirs set to an empty directory "
                         "(the packages stay installed)")
    ap.add_argument("builds", nargs="+", metavar="NAME=BUILD_DIR", help="a build directory, named")
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.builds)
    workdir = tempfile.mkdtemp(prefix="profd-memory-")
    config = "/dev/null"
    if args.no_debug_files:
        empty = os.path.join(workdir, "no-debug-files")
        os.mkdir(empty)
        config = os.path.join(workdir, "profd.conf")
        with open(config, "w") as f:
            f.write(f"debug_dirs = {empty}\n")
    try:
        for mode in args.modes.split(","):
            result = run_mode(mode, builds, args.seconds, workdir, config)
            result["debug_files"] = "none" if args.no_debug_files else "installed"
            print(json.dumps(result), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
