#!/usr/bin/env python3
"""A/B of the off-CPU programs' BPF time with the off-CPU log off
(--timeline-offcpu-rate 0) and on (2000 blocks per CPU and second, so that
none is left out), one build (build/): interleaved rounds, profd --kinds
offcpu at defaults otherwise, under 8 threads that each sleep 1.2 ms in a
loop (about 6,000 kept blocks a second, every one logged when on) for 15 s
after 4 s. Prints the tp_btf programs' ns per run, their runs, and the
blocks logged. Usage: offtime_ab.py [ROUNDS] (root)."""
import json, os, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFD = os.path.join(ROOT, "build", "daemon", "profd")
PROFCTL = os.path.join(ROOT, "build", "client", "profctl")
SLEEPERS = ("import threading, time\n"
            "def f():\n"
            "    end = time.monotonic() + 22\n"
            "    while time.monotonic() < end: time.sleep(0.0012)\n"
            "ts = [threading.Thread(target=f) for _ in range(8)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n")
configs = {"log off": "0", "log on": "2000"}
res = {k: [] for k in configs}
bench.set_bpf_stats(True)
try:
    for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        for label, rate in (list(configs.items()) if r % 2 == 0 else list(configs.items())[::-1]):
            wd = tempfile.mkdtemp(prefix="ab-")
            p = subprocess.Popen([PROFD, "--kinds", "offcpu", "--store", wd + "/s.db", "--socket", wd + "/s.sock",
                                  "--timeline-offcpu-rate", rate], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            try:
                time.sleep(3)
                w = subprocess.Popen([sys.executable, "-c", SLEEPERS])
                time.sleep(4)
                ids = bench.owned_progs(p.pid)
                a = bench.bpf_progs(); time.sleep(15); z = bench.bpf_progs()
                w.wait()
                cnt = ns = 0
                for i in ids:
                    if i in a and i in z and z[i].get("type") == "tracing":
                        cnt += z[i].get("run_cnt", 0) - a[i].get("run_cnt", 0)
                        ns += z[i].get("run_time_ns", 0) - a[i].get("run_time_ns", 0)
                subprocess.run([PROFCTL, "--socket", wd + "/s.sock", "flush"], capture_output=True, timeout=60)
                st = json.loads(subprocess.run([PROFCTL, "--socket", wd + "/s.sock", "status", "--json"],
                                               capture_output=True, text=True, timeout=60).stdout)
                ot = st["timeline"]["offcpu"]
                res[label].append(ns / cnt if cnt else None)
                print(label, r, "runs", cnt, "ns/run", round(ns / cnt) if cnt else None, "logged", ot["logged"],
                      "unlogged", ot["unlogged"], "stored bytes/block",
                      round(ot["bytes"] / ot["blocks"], 2) if ot["blocks"] else None,
                      "load", open("/proc/loadavg").read().split()[0], flush=True)
            finally:
                p.terminate(); p.wait()
                subprocess.run(["rm", "-rf", wd])
finally:
    bench.set_bpf_stats(False)
import statistics
for k, v in res.items():
    v = [x for x in v if x]
    print(k, "median ns/run", round(statistics.median(v)) if v else None, [round(x) for x in v])
